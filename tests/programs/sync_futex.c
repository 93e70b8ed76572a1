/* Sync tracer: a raw futex, used through syscall(SYS_futex) as a library
 * that does not call pthread functions would.  The waiter waits on the
 * futex word 4 times (FUTEX_WAIT_PRIVATE); each time the waker, once it
 * has seen the waiter asleep in the futex call (/proc: state S, in the
 * futex system call), changes the word and wakes it (FUTEX_WAKE_PRIVATE,
 * one thread woken).  Then the waiter waits once more with a 10 ms
 * timeout that nobody ends (ETIMEDOUT).  On the word: FUTEX_WAIT 5 (1
 * timed out), FUTEX_WAKE 4; pthread: create 2, thread 2, join 2.  Prints
 * "rounds=4 woken=4 timeout=ETIMEDOUT" and exits 0. */
#include "prog.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 4
#define TIMEOUT_MS 10

static atomic_int word;
static atomic_int waiter_tid;
static int woken, timeout_err;

static long futex(atomic_int *uaddr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

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
			in_futex = strtol(buf, NULL, 10) == SYS_futex && buf[0] >= '0' && buf[0] <= '9';
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

COUNTED void *waiter(void *arg)
{
	struct timespec ts = { 0, TIMEOUT_MS * 1000000L };

	atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
	for (int i = 0; i < ROUNDS; i++)
		futex(&word, FUTEX_WAIT_PRIVATE, i, NULL); /* the waker sees it asleep first: blocks */
	if (futex(&word, FUTEX_WAIT_PRIVATE, ROUNDS, &ts) == -1)
		timeout_err = errno;
	return arg;
}

COUNTED void *waker(void *arg)
{
	int tid;

	while (!(tid = atomic_load(&waiter_tid)))
		sleep_ms(1);
	for (int i = 0; i < ROUNDS; i++) {
		while (!asleep_in_futex(tid))
			sleep_ms(1);
		atomic_store(&word, i + 1);
		woken += (int)futex(&word, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
	return arg;
}

int main(void)
{
	pthread_t a, b;

	pthread_create(&a, NULL, waiter, NULL);
	pthread_create(&b, NULL, waker, NULL);
	pthread_join(b, NULL);
	pthread_join(a, NULL);
	printf("rounds=%d woken=%d timeout=%s\n", ROUNDS, woken,
	       timeout_err == ETIMEDOUT ? "ETIMEDOUT" : strerror(timeout_err));
	return 0;
}
