/* Sync tracer: a lock inside a heap block.  counter_new mallocs a struct
 * counter (a count, then its mutex at offset 8 on LP64 and ILP32 with
 * 8-byte longs alike: offsetof is printed) and initialises the mutex; two
 * workers add 50 each to the count under the mutex; main frees the block.
 * mutex-lock 100, mutex-unlock 100, create 2, thread 2, join 2; heap:
 * one malloc from counter_new, freed by main.  Prints "total=100
 * offset=N" (N: the mutex's offset in the block) and exits 0. */
#include "prog.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 2
#define ADDS 50

struct counter {
	long long total;
	pthread_mutex_t lock;
};

COUNTED struct counter *counter_new(void)
{
	struct counter *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	c->total = 0;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

COUNTED void *adder(void *arg)
{
	struct counter *c = arg;

	for (int i = 0; i < ADDS; i++) {
		pthread_mutex_lock(&c->lock);
		c->total++;
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

int main(void)
{
	struct counter *c = counter_new();
	pthread_t t[WORKERS];

	if (!c)
		return 1;
	for (int k = 0; k < WORKERS; k++)
		pthread_create(&t[k], NULL, adder, c);
	for (int k = 0; k < WORKERS; k++)
		pthread_join(t[k], NULL);
	printf("total=%lld offset=%zu\n", c->total, offsetof(struct counter, lock));
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}
