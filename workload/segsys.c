/* The segments of threads and the kernel: sharing between threads (one
 * atomic counter, false sharing of a cache line, a read-mostly table, a
 * mutex handed back and forth), system calls, page faults, sleeping and
 * yielding the CPU. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "work.h"

/* Operations between two looks at the clock. */
#define BATCH 256
/* The read-mostly table: 4 KiB of counters. */
#define TABLE_N 512
/* page-faults: the region mapped, touched and unmapped each time (under
 * 2 MiB: never a huge page). */
#define FAULT_REGION (1024u * 1024u)
/* sys-mmap: the region mapped and unmapped, never touched. */
#define MMAP_REGION (64u * 1024u)
/* What one read or write system call moves. */
#define IO_BYTES 64

static atomic_ulong shared_counter;

static struct {
	_Alignas(64) atomic_ulong v[8];
} false_line;

static atomic_ulong table[TABLE_N];

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned owner; /* the thread that took the token last, + 1 */
	unsigned long passes;
} token = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

static int fd_null = -1, fd_zero = -1;

static uint64_t atomic_shared(struct work_thread *t, void *st, uint64_t deadline)
{
	do {
		for (int i = 0; i < BATCH * 4; i++)
			atomic_fetch_add(&shared_counter, 1);
	} while (work_now() < deadline);
	return atomic_load_explicit(&shared_counter, memory_order_relaxed);
}

/* Plain loads and stores (relaxed: no locked instruction) of each
 * thread's own word, all in one cache line. */
static uint64_t false_sharing(struct work_thread *t, void *st, uint64_t deadline)
{
	atomic_ulong *mine = &false_line.v[t->id % 8];

	do {
		for (int i = 0; i < BATCH * 4; i++)
			atomic_store_explicit(mine, atomic_load_explicit(mine, memory_order_relaxed) + 1,
			                      memory_order_relaxed);
	} while (work_now() < deadline);
	return atomic_load_explicit(mine, memory_order_relaxed);
}

/* Reads of the whole table, with one store in it every 16 passes: the
 * line written moves to the writer and back to the readers. */
static uint64_t true_sharing(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t sum = 0, pass = 0;

	do {
		for (int i = 0; i < TABLE_N; i++)
			sum += atomic_load_explicit(&table[i], memory_order_relaxed);
		if (++pass % 16 == 0)
			atomic_store_explicit(&table[work_rand(t) % TABLE_N], sum, memory_order_relaxed);
	} while (work_now() < deadline);
	return sum;
}

/* A token under a mutex, handed between the threads: a thread takes it
 * when another had it last, else waits for that on the condition
 * variable (at most a millisecond: alone, the segment mostly waits). */
static uint64_t mutex_pingpong(struct work_thread *t, void *st, uint64_t deadline)
{
	unsigned me = t->id + 1;
	unsigned long passes = 0;

	do {
		pthread_mutex_lock(&token.lock);
		if (token.owner == me) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_nsec -= 1000000000;
				ts.tv_sec++;
			}
			pthread_cond_timedwait(&token.cond, &token.lock, &ts);
		}
		if (token.owner != me) {
			token.owner = me;
			passes = ++token.passes;
			pthread_cond_broadcast(&token.cond);
		}
		pthread_mutex_unlock(&token.lock);
	} while (work_now() < deadline);
	return passes;
}

static int setup_files(unsigned nthreads)
{
	if (fd_null < 0)
		fd_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd_zero < 0)
		fd_zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	return fd_null >= 0 && fd_zero >= 0 ? 0 : -errno;
}

static uint64_t sys_getppid(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t sum = 0;

	do {
		for (int i = 0; i < BATCH; i++)
			sum += (uint64_t)getppid();
	} while (work_now() < deadline);
	return sum;
}

static uint64_t sys_write(struct work_thread *t, void *st, uint64_t deadline)
{
	char buf[IO_BYTES];
	uint64_t n = 0;

	memset(buf, 'w', sizeof(buf));
	do {
		for (int i = 0; i < BATCH; i++)
			n += (uint64_t)write(fd_null, buf, sizeof(buf));
	} while (work_now() < deadline);
	return n;
}

static uint64_t sys_read(struct work_thread *t, void *st, uint64_t deadline)
{
	char buf[IO_BYTES];
	uint64_t n = 0;

	do {
		for (int i = 0; i < BATCH; i++)
			n += (uint64_t)read(fd_zero, buf, sizeof(buf));
	} while (work_now() < deadline);
	return n + (uint64_t)buf[0];
}

static uint64_t sys_mmap(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t n = 0;

	do {
		for (int i = 0; i < BATCH / 4; i++) {
			void *p = mmap(NULL, MMAP_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p != MAP_FAILED) {
				munmap(p, MMAP_REGION);
				n++;
			}
		}
	} while (work_now() < deadline);
	return n;
}

/* Fresh pages touched: one minor fault each (and the zeroing of a page). */
static uint64_t page_faults(struct work_thread *t, void *st, uint64_t deadline)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t n = 0;

	do {
		volatile char *p = mmap(NULL, FAULT_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			break;
#ifdef MADV_NOHUGEPAGE
		madvise((void *)p, FAULT_REGION, MADV_NOHUGEPAGE);
#endif
		for (uint64_t off = 0; off < FAULT_REGION && work_now() < deadline; off += (uint64_t)page * 16) {
			for (uint64_t k = off; k < off + (uint64_t)page * 16 && k < FAULT_REGION; k += (uint64_t)page) {
				p[k] = 1;
				n++;
			}
		}
		munmap((void *)p, FAULT_REGION);
	} while (work_now() < deadline);
	return n;
}

static uint64_t sleep_idle(struct work_thread *t, void *st, uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	return 0;
}

static uint64_t yield_cpu(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t n = 0;

	do {
		/* another thread may run a whole slice before this one is back */
		for (int i = 0; i < 4; i++)
			n += (uint64_t)sched_yield() + 1;
	} while (work_now() < deadline);
	return n;
}

const struct work_seg work_sys_segs[] = {
	{ "atomic-shared", "atomic increments of one counter shared by the threads", NULL, NULL, atomic_shared },
	{ "false-sharing", "each thread increments its own word, all in one cache line", NULL, NULL, false_sharing },
	{ "true-sharing", "the threads read a shared 4 KiB table that they write rarely", NULL, NULL, true_sharing },
	{ "mutex-pingpong", "a token handed between the threads under a mutex (waits when alone)", NULL, NULL,
	  mutex_pingpong },
	{ "sys-getppid", "getppid system calls (the cheapest way into the kernel and out)", NULL, NULL, sys_getppid },
	{ "sys-write", "64-byte writes to /dev/null", setup_files, NULL, sys_write },
	{ "sys-read", "64-byte reads of /dev/zero", setup_files, NULL, sys_read },
	{ "sys-mmap", "mmap and munmap of 64 KiB, never touched", NULL, NULL, sys_mmap },
	{ "page-faults", "fresh pages touched: a minor fault and a zeroed page each", NULL, NULL, page_faults },
	{ "sleep", "asleep until the slice ends (idle)", NULL, NULL, sleep_idle },
	{ "yield", "sched_yield in a loop", NULL, NULL, yield_cpu },
};
const unsigned work_sys_nsegs = sizeof(work_sys_segs) / sizeof(work_sys_segs[0]);
