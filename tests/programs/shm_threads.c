/* Threads that all live at the same time: T threads each call work() N
 * times and blocks() once, which allocates M blocks of 48 bytes and frees
 * them; then every thread waits for all the others (a barrier) before it
 * ends, so that each one's ring exists while the others start.  Prints
 * "shm_threads: T threads, N calls, M blocks" and exits 0.
 * Usage: shm_threads T N M   (T at most 256) */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 256
#define BLOCK_SIZE 48

static unsigned long calls, nblocks;
static pthread_barrier_t all_started;
static volatile unsigned long sink;

COUNTED void work(unsigned long i)
{
	sink += i;
	BARRIER();
}

COUNTED void blocks(void)
{
	for (unsigned long i = 0; i < nblocks; i++) {
		char *p = malloc(BLOCK_SIZE);

		if (p)
			p[0] = (char)i;
		sink += p ? (unsigned long)p[0] : 0;
		free(p);
	}
	BARRIER();
}

COUNTED void *worker(void *arg)
{
	for (unsigned long i = 0; i < calls; i++)
		work(i);
	blocks();
	pthread_barrier_wait(&all_started);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t tids[MAX_THREADS];
	unsigned long n;

	if (argc != 4 || (n = strtoul(argv[1], NULL, 10)) < 1 || n > MAX_THREADS) {
		fprintf(stderr, "usage: shm_threads T N M   (T: 1 to %d)\n", MAX_THREADS);
		return 2;
	}
	calls = strtoul(argv[2], NULL, 10);
	nblocks = strtoul(argv[3], NULL, 10);
	pthread_barrier_init(&all_started, NULL, (unsigned)n);
	for (unsigned long i = 0; i < n; i++) {
		if (pthread_create(&tids[i], NULL, worker, NULL)) {
			fprintf(stderr, "shm_threads: cannot create thread %lu\n", i);
			return 1;
		}
	}
	for (unsigned long i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	pthread_barrier_destroy(&all_started);
	printf("shm_threads: %lu threads, %lu calls, %lu blocks\n", n, calls, nblocks);
	return 0;
}
