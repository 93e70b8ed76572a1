/* Sync tracer: two threads take one mutex.  The holder takes it 3 times and
 * keeps it 20 ms each time; the taker, started once the holder has it the
 * first time, takes it 10 times.  The holder's first hold lasts until the
 * taker sleeps in the lock (/proc: in the futex system call, state S), so
 * the taker's first lock is contended and its wait spans the holder's first
 * unlock, however the threads are scheduled.  mutex-lock 13, mutex-unlock
 * 13, create 2, thread 2, join 2.  Prints "count=13" and exits 0. */
#include "prog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HOLDS 3
#define TAKES 10
#define HOLD_MS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held, taker_tid;
static int count;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* Whether thread tid sleeps in the futex system call now. */
static int asleep_in_futex(int tid)
{
	char path[64], buf[512];
	FILE *f;
	char *p;
	int in_futex = 0, sleeping = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			in_futex = buf[0] >= '0' && buf[0] <= '9' && strtol(buf, NULL, 10) == SYS_futex;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ')
			sleeping = p[2] == 'S';
		fclose(f);
	}
	return in_futex && sleeping;
}

COUNTED void *holder(void *arg)
{
	for (int i = 0; i < HOLDS; i++) {
		pthread_mutex_lock(&lock);
		count++;
		atomic_store(&held, 1);
		/* the first time, until the taker waits for the lock (at most
		 * 10 s: a tracer that hides the futex call only loses the
		 * guarantee, not the run) */
		for (int ms = 0; i == 0 && ms < 10000; ms++) {
			int tid = atomic_load(&taker_tid);

			if (tid && asleep_in_futex(tid))
				break;
			sleep_ms(1);
		}
		sleep_ms(HOLD_MS);
		pthread_mutex_unlock(&lock);
		sleep_ms(2);
	}
	return arg;
}

COUNTED void *taker(void *arg)
{
	atomic_store(&taker_tid, (int)syscall(SYS_gettid));
	for (int i = 0; i < TAKES; i++) {
		pthread_mutex_lock(&lock);
		count++;
		pthread_mutex_unlock(&lock);
	}
	return arg;
}

int main(void)
{
	pthread_t h, t;

	pthread_create(&h, NULL, holder, NULL);
	while (!atomic_load(&held))
		sleep_ms(1);
	pthread_create(&t, NULL, taker, NULL);
	pthread_join(t, NULL);
	pthread_join(h, NULL);
	printf("count=%d\n", count);
	return 0;
}
