/* Sync tracer: a producer and a consumer over one condition variable.  The
 * consumer takes the mutex once and waits on the condition for each of 5
 * items; the producer, deliberately slow, makes an item 10 ms after the
 * consumer has said it waits (so every wait lasts 10 ms at least), under
 * the mutex, and signals.  mutex-lock 6, mutex-unlock 6, cond-wait 5
 * (object the condition, second object the mutex), cond-signal 5.  Prints
 * "consumed=5" and exits 0. */
#include "prog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define ITEMS 5
#define SLOW_MS 10

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static atomic_int waiting;
static int items, consumed;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

COUNTED void *producer(void *arg)
{
	for (int i = 0; i < ITEMS; i++) {
		/* the consumer holds the mutex from here until it waits */
		while (!atomic_exchange(&waiting, 0))
			sleep_ms(1);
		sleep_ms(SLOW_MS);
		pthread_mutex_lock(&lock);
		items++;
		pthread_cond_signal(&ready);
		pthread_mutex_unlock(&lock);
	}
	return arg;
}

COUNTED void *consumer(void *arg)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < ITEMS; i++) {
		while (!items) {
			atomic_store(&waiting, 1);
			pthread_cond_wait(&ready, &lock);
		}
		items--;
		consumed++;
	}
	pthread_mutex_unlock(&lock);
	return arg;
}

int main(void)
{
	pthread_t p, c;

	pthread_create(&c, NULL, consumer, NULL);
	pthread_create(&p, NULL, producer, NULL);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("consumed=%d\n", consumed);
	return 0;
}
