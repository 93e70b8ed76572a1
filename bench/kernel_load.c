/* Workloads for bench/kernel: a known number of kernel events, made by a
 * loop that calls no instrumented function (built -O2
 * -finstrument-functions, the program has a handful of function events; the
 * trace is almost all kernel records).
 *
 *   kernel_load pingpong N   two threads pass one byte back and forth through
 *                            two pipes N times, both on the CPU main started
 *                            on (so the run does not depend on where the
 *                            scheduler puts them): each round trip is 2
 *                            sched_switch from one thread to the other, 2
 *                            sched_waking and 2 sched_wakeup
 *   kernel_load syscalls N   N getppid calls: no tracepoint of the default
 *                            set is hit, only the timer tick's events
 *   kernel_load faults N     N fresh anonymous pages written once each (64 MiB
 *                            mapped at a time, MADV_NOHUGEPAGE): N
 *                            exceptions:page_fault_user
 *
 * Prints loop_ns=T (the loop's own time, CLOCK_MONOTONIC) on stderr. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline, noipa, used))
#define CHUNK_PAGES 16384L

static long rounds;
static int ping[2], pong[2];

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NOINL void *ponger(void *arg)
{
	char c;

	(void)arg;
	for (long i = 0; i < rounds; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			abort();
	return NULL;
}

NOINL int pingpong(long n)
{
	pthread_t t;
	char c = 'x';
	cpu_set_t one;

	rounds = n;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	if (sched_setaffinity(0, sizeof(one), &one)) /* the thread made below inherits it */
		return 1;
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, ponger, NULL))
		return 1;
	for (long i = 0; i < n; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			abort();
	return pthread_join(t, NULL) != 0;
}

NOINL int syscalls(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += syscall(SYS_getppid);
	return sum == 0;
}

NOINL int faults(long n)
{
	long page = sysconf(_SC_PAGESIZE);

	while (n > 0) {
		long pages = n < CHUNK_PAGES ? n : CHUNK_PAGES;
		size_t len = (size_t)pages * (size_t)page;
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || madvise((void *)p, len, MADV_NOHUGEPAGE))
			return 1;
		for (long i = 0; i < pages; i++)
			p[i * page] = 1;
		munmap((void *)p, len);
		n -= pages;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n;
	long long t0;
	int r;

	if (argc != 3 || (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: kernel_load pingpong|syscalls|faults N\n");
		return 2;
	}
	t0 = now_ns();
	if (!strcmp(argv[1], "pingpong"))
		r = pingpong(n);
	else if (!strcmp(argv[1], "syscalls"))
		r = syscalls(n);
	else if (!strcmp(argv[1], "faults"))
		r = faults(n);
	else {
		fprintf(stderr, "kernel_load: unknown workload '%s'\n", argv[1]);
		return 2;
	}
	fprintf(stderr, "loop_ns=%lld\n", now_ns() - t0);
	return r;
}
