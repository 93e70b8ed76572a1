/* The sync tracer's benchmark load: PAIRS lock/unlock pairs of one mutex.
 * "uncontended": one thread; "contended": two threads share the pairs,
 * each taking the mutex in turn as fast as it can.  Times its own loop
 * (CLOCK_MONOTONIC), so that start-up is not counted, and prints
 * "ns_per_pair N".  "clocks": what one read of each event clock costs
 * here ("ns_clock_gettime N", "ns_rdtsc N" on x86-64). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared;
static long pairs;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *loop(void *arg)
{
	long n = (long)arg;

	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&lock);
		shared++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void clocks(long n)
{
	volatile unsigned long sink = 0;
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		sink += (unsigned long)now_ns();
	printf("ns_clock_gettime %.2f\n", (now_ns() - t0) / (double)n);
#if defined(__x86_64__)
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		unsigned lo, hi;

		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		sink += lo;
	}
	printf("ns_rdtsc %.2f\n", (now_ns() - t0) / (double)n);
#endif
	(void)sink;
}

int main(int argc, char **argv)
{
	int contended = argc > 1 && !strcmp(argv[1], "contended");
	double t0, t1;

	pairs = argc > 2 ? atol(argv[2]) : 1000000;
	if (argc > 1 && !strcmp(argv[1], "clocks")) {
		clocks(pairs);
		return 0;
	}
	t0 = now_ns();
	if (contended) {
		pthread_t t;

		pthread_create(&t, NULL, loop, (void *)(pairs / 2));
		loop((void *)(pairs - pairs / 2));
		pthread_join(t, NULL);
	} else {
		loop((void *)pairs);
	}
	t1 = now_ns();
	printf("ns_per_pair %.2f\n", (t1 - t0) / (double)pairs);
	return shared == (unsigned long)pairs ? 0 : 1;
}
