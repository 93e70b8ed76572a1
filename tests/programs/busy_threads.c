/* Benchmark workload with threads: T threads each call tiny_a and tiny_b
 * N times, to measure the tracer's per-call cost when threads run at once.
 * Usage: busy_threads [N [T]]   (defaults: N = 3000000, T = 4) */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_CALLS 3000000UL
#define DEFAULT_THREADS 4UL
#define MAX_THREADS 256UL

static unsigned long calls_per_thread;

COUNTED unsigned long tiny_a(unsigned long x)
{
	return x + 1;
}

COUNTED unsigned long tiny_b(unsigned long x)
{
	return x ^ 0x5a5aUL;
}

COUNTED void *busy_thread(void *arg)
{
	unsigned long acc = (unsigned long)(size_t)arg;

	for (unsigned long i = 0; i < calls_per_thread; i++) {
		acc = tiny_a(acc);
		acc = tiny_b(acc);
	}
	return (void *)(size_t)acc;
}

int main(int argc, char **argv)
{
	unsigned long nr_threads = DEFAULT_THREADS;
	pthread_t tids[MAX_THREADS];
	unsigned long acc = 0;

	calls_per_thread = argc > 1 ? strtoul(argv[1], NULL, 10) : DEFAULT_CALLS;
	if (argc > 2)
		nr_threads = strtoul(argv[2], NULL, 10);
	if (nr_threads < 1 || nr_threads > MAX_THREADS) {
		fprintf(stderr, "busy_threads: thread count must be 1..%lu\n", MAX_THREADS);
		return 2;
	}
	for (unsigned long i = 0; i < nr_threads; i++) {
		if (pthread_create(&tids[i], NULL, busy_thread, (void *)(size_t)i)) {
			fprintf(stderr, "busy_threads: cannot create thread %lu\n", i);
			return 1;
		}
	}
	for (unsigned long i = 0; i < nr_threads; i++) {
		void *ret;

		pthread_join(tids[i], &ret);
		acc += (unsigned long)(size_t)ret;
	}
	printf("busy_threads: %lu threads x %lu calls each, acc %lu\n", nr_threads, calls_per_thread, acc);
	return 0;
}
