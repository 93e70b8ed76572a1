/* Per-thread counter totals held against an outside counter attached
 * while the program runs: two worker threads start, say they are ready
 * and block until the go (one byte on standard input); main prints
 * "ctr_threads: ready" once both wait.  After the go each worker calls
 * work(): touch_pages of its own number of fresh pages (64 and 128, one
 * write each: that many minor faults) and spin() of its own CPU time (20
 * and 40 ms), then returns.  Main joins them, prints what they did and
 * exits with status 4.  Before the go nothing of the program's runs in
 * the workers, so a counter attached then sees work() and the threads'
 * ends only.
 * Usage: ctr_threads   (then write one byte to its standard input) */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long page_size;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int waiting, go;

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
	long pages, ms;
	long long spun;
};

COUNTED void work(struct job *j)
{
	touch_pages(j->pages);
	j->spun = spin(j->ms);
}

COUNTED void *worker(void *arg)
{
	pthread_mutex_lock(&lock);
	waiting++;
	pthread_cond_broadcast(&changed);
	while (!go)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	work(arg);
	return NULL;
}

int main(void)
{
	struct job jobs[2] = { { 64, 20, 0 }, { 128, 40, 0 } };
	pthread_t t[2];
	char c;
	int i;

	page_size = sysconf(_SC_PAGESIZE);
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, &jobs[i]))
			return 1;
	pthread_mutex_lock(&lock);
	while (waiting < 2)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	printf("ctr_threads: ready\n");
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	pthread_mutex_lock(&lock);
	go = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("ctr_threads: threads %ld and %ld pages, %ld and %ld ms\n", jobs[0].pages, jobs[1].pages, jobs[0].ms,
	       jobs[1].ms);
	return 4;
}
