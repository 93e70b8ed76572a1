/* Wakeups across threads with exact counts, for the kernel-event layer: a
 * reader thread's `reader` makes M (default 20) blocking reads of 1 byte from
 * a pipe; the main thread's `writer` writes M bytes, one at a time, and before
 * each write `wait_reader` waits until the reader sleeps in read(2)
 * (/proc/self/task/TID/stat shows state S and .../syscall the read system
 * call, which the kernel shows only for a task that is off the CPU), so every
 * read blocks.  Both threads run on one CPU (the one main starts on), so the
 * reader's wakeup is done by the writer itself, not queued to another CPU.
 * Expected, inside reader: M switch-outs of the reader in state S, each in
 * read(2); inside writer: M sched:sched_wakeup of the reader, each in
 * write(2) of the writer (common_pid = the writer).  The writer never sleeps:
 * it yields the CPU (sched_yield) while the reader is runnable, and main waits
 * for the reader's end in the same way before joining it.
 * Usage: kern_pipe [M] */
#include "prog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define READS 20
#define PROC_BUF 512

static int reads = READS;
static atomic_int reader_tid;
static int reader_bad;
static int stat_fd = -1, syscall_fd = -1;

COUNTED int reader(int fd)
{
	int bad = 0;
	char c;

	for (int i = 0; i < reads; i++)
		if (read(fd, &c, 1) != 1)
			bad++;
	return bad;
}

COUNTED void *reader_main(void *arg)
{
	atomic_store(&reader_tid, (int)syscall(SYS_gettid));
	reader_bad = reader(*(int *)arg);
	return NULL;
}

/* true when the reader sleeps interruptibly inside read(2); not instrumented,
 * as the number of polls depends on timing */
__attribute__((no_instrument_function)) static bool reader_sleeps_in_read(void)
{
	char buf[PROC_BUF];
	const char *paren;
	ssize_t len;
	long nr;
	char *end;

	len = pread(stat_fd, buf, sizeof(buf) - 1, 0);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	/* "tid (comm) S ...": the name may hold ')' itself */
	paren = strrchr(buf, ')');
	if (!paren || paren[1] != ' ' || paren[2] != 'S')
		return false;
	/* "0 0x3 ...": the number of the call the task is blocked in, or
	 * "running" while the task is on a CPU */
	len = pread(syscall_fd, buf, sizeof(buf) - 1, 0);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	nr = strtol(buf, &end, 10);
	return end != buf && *end == ' ' && nr == SYS_read;
}

COUNTED void wait_reader(void)
{
	while (!reader_sleeps_in_read())
		sched_yield();
}

COUNTED int writer(int fd)
{
	int bad = 0;

	for (int i = 0; i < reads; i++) {
		wait_reader();
		if (write(fd, "x", 1) != 1)
			bad++;
	}
	return bad;
}

/* Runs both threads on the CPU main is on now: no migration, so no switch */
__attribute__((no_instrument_function)) static int pin_here(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

__attribute__((no_instrument_function)) static int open_proc(int tid, const char *file)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, file);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int main(int argc, char **argv)
{
	int fd[2], bad, err;
	pthread_t t;

	if (argc > 1)
		reads = atoi(argv[1]);
	if (reads < 0 || pin_here() || pipe(fd))
		return 2;
	if (pthread_create(&t, NULL, reader_main, &fd[0]))
		return 2;
	while (!atomic_load(&reader_tid))
		sched_yield();
	/* the reader waits in its first read, so its files are there */
	if (reads) {
		stat_fd = open_proc(atomic_load(&reader_tid), "stat");
		syscall_fd = open_proc(atomic_load(&reader_tid), "syscall");
		if (stat_fd < 0 || syscall_fd < 0)
			return 2;
	}
	bad = writer(fd[1]);
	/* join a thread that has ended: main never sleeps in the join */
	while ((err = pthread_tryjoin_np(t, NULL)) == EBUSY)
		sched_yield();
	return bad || err || reader_bad ? 1 : 0;
}
