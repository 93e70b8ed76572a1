/* Sync tracer: two threads take one mutex.  The holder takes it 3 times and
 * keeps it 20 ms each time; the taker, started once the holder has it the
 * first time, takes it 10 times (so its first lock waits for the holder's
 * first 20 ms).  mutex-lock 13, mutex-unlock 13, create 2, thread 2, join 2.
 * Prints "count=13" and exits 0. */
#include "prog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define HOLDS 3
#define TAKES 10
#define HOLD_MS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held;
static int count;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

COUNTED void *holder(void *arg)
{
	for (int i = 0; i < HOLDS; i++) {
		pthread_mutex_lock(&lock);
		count++;
		atomic_store(&held, 1);
		sleep_ms(HOLD_MS);
		pthread_mutex_unlock(&lock);
		sleep_ms(2);
	}
	return arg;
}

COUNTED void *taker(void *arg)
{
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
