/* Memory tracer: three threads churn a shared pool of blocks and free
 * everything.  Each worker allocates argv[1] blocks (default 333333) of 40
 * bytes in churn_alloc and swaps each into a pseudo-random slot of a pool
 * of 1536 shared by all three, freeing in churn_free the block it took out
 * (one another thread allocated, mostly); once all three are done, each
 * frees its third of what is left in the pool, in pool_drain.  So about
 * two million heap operations, every block freed exactly once, many by
 * another thread, their addresses handed from thread to thread by the
 * allocator.  main allocates nothing itself, and its last heap operations
 * (the C library's, when it starts the threads) come long before the
 * workers' last.  Exit 0. */
#include "prog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define WORKERS 3
#define POOL 1536
#define BLOCK_SIZE 40

static _Atomic(void *) pool[POOL];
static unsigned long per_thread = 333333;

COUNTED void *churn_alloc(void)
{
	void *p = malloc(BLOCK_SIZE);

	BARRIER();
	return p;
}

COUNTED void churn_free(void *p)
{
	free(p);
	BARRIER();
}

static pthread_barrier_t done;

COUNTED void pool_drain(int k)
{
	for (int i = k; i < POOL; i += WORKERS)
		free(atomic_exchange(&pool[i], NULL));
	BARRIER();
}

static void *worker(void *arg)
{
	uint32_t x = 2463534242u + 977u * (uint32_t)(uintptr_t)arg;

	for (unsigned long i = 0; i < per_thread; i++) {
		void *p = churn_alloc(), *old;

		if (!p)
			abort();
		*(volatile char *)p = 1;
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		old = atomic_exchange(&pool[x % POOL], p);
		if (old)
			churn_free(old);
	}
	pthread_barrier_wait(&done);
	pool_drain((int)(uintptr_t)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[WORKERS];

	if (argc > 1)
		per_thread = strtoul(argv[1], NULL, 10);
	if (pthread_barrier_init(&done, NULL, WORKERS))
		return 1;
	for (long k = 0; k < WORKERS; k++)
		if (pthread_create(&t[k], NULL, worker, (void *)k))
			return 1;
	for (int k = 0; k < WORKERS; k++)
		pthread_join(t[k], NULL);
	return 0;
}
