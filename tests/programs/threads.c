/* Threads: four workers with different, exact leaf counts, and one detached
 * thread that keeps working after main has called pthread_exit. */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NR_WORKERS 4
#define LEAF_STEP 100 /* worker i calls leaf LEAF_STEP * (i + 1) times */
#define LATE_CALLS 7
#define LATE_NAP_NS 20000000L /* 20 ms: stay alive alone for a while */

static volatile unsigned long sink;

COUNTED void leaf(unsigned long i)
{
	sink += i;
}

COUNTED void worker(unsigned long calls)
{
	for (unsigned long i = 0; i < calls; i++)
		leaf(i);
}

COUNTED void *thread_main(void *arg)
{
	worker((unsigned long)(size_t)arg);
	return NULL;
}

COUNTED void late_work(int i)
{
	sink += (unsigned long)i;
}

/* Joining the main thread (legal once it has called pthread_exit) makes
 * "runs after main is gone" a fact rather than a race. */
COUNTED void *late_thread(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;
	struct timespec nap = { 0, LATE_NAP_NS };

	free(arg);
	pthread_join(main_thread, NULL);
	nanosleep(&nap, NULL);
	for (int i = 0; i < LATE_CALLS; i++)
		late_work(i);
	return NULL;
}

int main(void)
{
	pthread_t tids[NR_WORKERS], late;
	pthread_attr_t attr;
	pthread_t *self = malloc(sizeof(*self));

	if (!self)
		return 1;
	for (size_t i = 0; i < NR_WORKERS; i++) {
		if (pthread_create(&tids[i], NULL, thread_main, (void *)(LEAF_STEP * (i + 1)))) {
			fprintf(stderr, "threads: cannot create worker %zu\n", i);
			return 1;
		}
	}
	for (size_t i = 0; i < NR_WORKERS; i++)
		pthread_join(tids[i], NULL);

	*self = pthread_self();
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&late, &attr, late_thread, self)) {
		fprintf(stderr, "threads: cannot create late thread\n");
		return 1;
	}
	pthread_attr_destroy(&attr);
	printf("threads: main leaves, late thread carries on\n");
	fflush(stdout);
	/* the process ends with status 0 when late_thread returns */
	pthread_exit(NULL);
}
