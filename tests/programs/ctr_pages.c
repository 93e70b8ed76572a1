/* Known counter values for record --counters: touch_pages(n) maps n fresh
 * pages and writes one byte to each (n page faults, and a few more at
 * most: its stack), spin(ms) runs until its thread has used ms ms of CPU
 * time (task-clock), and two threads each touch their own number of pages
 * (64 and 128) and spin 20 ms.  Prints what it did; exits with status 3,
 * so that a test sees the status passed through.
 * Usage: ctr_pages [PAGES [SPIN_MS]]   (defaults 100, 50) */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long page_size;

/* not traced: called in a loop by spin */
__attribute__((no_instrument_function)) static long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* n fresh pages, one write each: n minor faults (no huge pages). */
COUNTED long touch_pages(long n)
{
	volatile char *p =
	    mmap(NULL, (size_t)(n * page_size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long i, sum = 0;

	if (p == MAP_FAILED)
		return -1;
#ifdef MADV_NOHUGEPAGE
	madvise((void *)p, (size_t)(n * page_size), MADV_NOHUGEPAGE);
#endif
	for (i = 0; i < n; i++)
		p[i * page_size] = (char)i;
	for (i = 0; i < n; i++)
		sum += p[i * page_size];
	munmap((void *)p, (size_t)(n * page_size));
	return sum;
}

/* Busy until the thread has used ms ms of CPU time since the call. */
COUNTED long long spin(long ms)
{
	long long start = thread_cpu_ns(), now;
	volatile unsigned long x = 0;

	do {
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
		now = thread_cpu_ns();
	} while (now - start < ms * 1000000LL);
	return now - start;
}

struct job {
	long pages;
	long long spun;
};

COUNTED void *worker(void *arg)
{
	struct job *j = arg;

	touch_pages(j->pages);
	j->spun = spin(20);
	return NULL;
}

int main(int argc, char **argv)
{
	long pages = argc > 1 ? atol(argv[1]) : 100, ms = argc > 2 ? atol(argv[2]) : 50;
	struct job jobs[2] = { { 64, 0 }, { 128, 0 } };
	pthread_t t[2];
	long long spun;
	int i;

	page_size = sysconf(_SC_PAGESIZE);
	touch_pages(pages);
	spun = spin(ms);
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, &jobs[i]))
			return 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("ctr_pages: touched %ld pages, spun %lld ns; threads %ld and %ld pages\n", pages, spun, jobs[0].pages,
	       jobs[1].pages);
	return 3;
}
