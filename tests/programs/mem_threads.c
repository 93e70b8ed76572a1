/* Memory tracer: threads that allocate and free each other's blocks.
 * Two "maker" threads each run make(): 100 x malloc(72), nothing freed.
 * After both are joined, two "taker" threads each run take(): taker k frees
 * the 100 blocks of maker 1-k (100 FREE each).  main itself allocates
 * nothing.  Four threads besides main, each in its own stream; every block
 * freed once, by a thread other than the one that made it.  Then a fifth
 * thread calls pthread_getattr_np on itself before anything else: glibc
 * allocates in there (a cpu set, realloc and free) while it holds the
 * thread's own lock, so the tracer must not need that lock when it sets
 * the thread up.  Exit 0. */
#include "prog.h"

#include <pthread.h>
#include <stdlib.h>

#define PER_THREAD 100
#define BLOCK_SIZE 72

static void *blocks[2][PER_THREAD];

COUNTED void make(int k)
{
	for (int i = 0; i < PER_THREAD; i++)
		blocks[k][i] = malloc(BLOCK_SIZE);
	BARRIER();
}

COUNTED void take(int k)
{
	for (int i = 0; i < PER_THREAD; i++)
		free(blocks[1 - k][i]);
	BARRIER();
}

static void *maker(void *arg)
{
	make((int)(long)arg);
	return NULL;
}

static void *taker(void *arg)
{
	take((int)(long)arg);
	return NULL;
}

static void *inspector(void *arg)
{
	pthread_attr_t attr;

	if (pthread_getattr_np(pthread_self(), &attr))
		return arg;
	pthread_attr_destroy(&attr);
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	for (long k = 0; k < 2; k++)
		if (pthread_create(&t[k], NULL, maker, (void *)k))
			return 1;
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	for (long k = 0; k < 2; k++)
		if (pthread_create(&t[k], NULL, taker, (void *)k))
			return 1;
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	{
		void *bad = NULL;

		if (pthread_create(&t[0], NULL, inspector, (void *)1) || pthread_join(t[0], &bad) || bad)
			return 1;
	}
	return 0;
}
