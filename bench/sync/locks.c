/* The sync tracer's benchmark load: PAIRS lock/unlock pairs of one mutex.
 * "uncontended": one thread; "contended": two threads share the pairs,
 * each taking the mutex in turn as fast as it can.  Times its own loop
 * (CLOCK_MONOTONIC), so that start-up is not counted, and prints
 * "ns_per_pair N", and the process's CPU time over the loop,
 * "cpu_ns_per_pair N" (the same without the time it waited or other
 * processes ran).  "clocks": what one read of each event clock costs
 * here, in CPU time ("ns_clock_gettime N"; on x86-64 "ns_rdtsc N" and, with the lfence
 * the runtime puts before it after an acquisition, "ns_rdtsc_ordered N"),
 * and what the two reads of a traced pair add to an uncontended pair of a
 * bare lock word, in CPU time ("pair_monotonic N", "pair_counter N"). */
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

/* The CPU time of the process (all its threads): what the loop costs
 * without the time other processes had the CPU. */
static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

#if defined(__x86_64__)
static inline unsigned long rdtsc(void)
{
	unsigned lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return lo;
}

/* As the runtime reads it after an acquisition (lp_clock_now_ordered). */
static inline unsigned long rdtsc_ordered(void)
{
	unsigned lo, hi;

	__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return lo;
}
#endif

/* The CPU time one uncontended pair of a bare lock word takes with the
 * event clock read as a traced pair reads it (ordered after the
 * acquisition, unordered before the release), less the pair alone. */
static void pair_clocks(long n)
{
	static int word;
	volatile unsigned long sink = 0;
	double c0, bare, mono;

	c0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		int e = 0;

		__atomic_compare_exchange_n(&word, &e, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		__atomic_store_n(&word, 0, __ATOMIC_RELEASE);
	}
	bare = cpu_ns() - c0;
	c0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		int e = 0;

		__atomic_compare_exchange_n(&word, &e, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		sink += (unsigned long)now_ns();
		sink += (unsigned long)now_ns();
		__atomic_store_n(&word, 0, __ATOMIC_RELEASE);
	}
	mono = cpu_ns() - c0;
	printf("pair_monotonic %.2f\n", (mono - bare) / (double)n);
#if defined(__x86_64__)
	c0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		int e = 0;

		__atomic_compare_exchange_n(&word, &e, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		sink += rdtsc_ordered();
		sink += rdtsc();
		__atomic_store_n(&word, 0, __ATOMIC_RELEASE);
	}
	printf("pair_counter %.2f\n", (cpu_ns() - c0 - bare) / (double)n);
#endif
	(void)sink;
}

static void clocks(long n)
{
	volatile unsigned long sink = 0;
	double t0 = cpu_ns();

	for (long i = 0; i < n; i++)
		sink += (unsigned long)now_ns();
	printf("ns_clock_gettime %.2f\n", (cpu_ns() - t0) / (double)n);
#if defined(__x86_64__)
	t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		sink += rdtsc();
	printf("ns_rdtsc %.2f\n", (cpu_ns() - t0) / (double)n);
	t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		sink += rdtsc_ordered();
	printf("ns_rdtsc_ordered %.2f\n", (cpu_ns() - t0) / (double)n);
#endif
	(void)sink;
	pair_clocks(n);
}

int main(int argc, char **argv)
{
	int contended = argc > 1 && !strcmp(argv[1], "contended");
	double t0, t1, c0, c1;

	pairs = argc > 2 ? atol(argv[2]) : 1000000;
	if (argc > 1 && !strcmp(argv[1], "clocks")) {
		clocks(pairs);
		return 0;
	}
	c0 = cpu_ns();
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
	c1 = cpu_ns();
	printf("ns_per_pair %.2f\n", (t1 - t0) / (double)pairs);
	printf("cpu_ns_per_pair %.2f\n", (c1 - c0) / (double)pairs);
	return shared == (unsigned long)pairs ? 0 : 1;
}
