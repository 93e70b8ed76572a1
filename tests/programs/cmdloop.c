/* A program to attach to while it runs, built without instrumentation:
 * it reads one number N a line from standard input and calls f() N times
 * (f calls g() once), on the main thread, or, with an argument T (1 to
 * 16), on each of T worker threads started before anything is read.  It
 * prints "ready T" once its threads run, "done N" after each command and,
 * at the end of its input, "bye C" (f's calls in all); it exits 0.
 * serve_one reads and runs one command: it is under way while the
 * program waits, so a tracer that attaches then sees it return without
 * having seen it enter, and one that leaves then sees it enter only. */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS_MAX 16

static volatile long sink;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;
static unsigned long round_no;    /* commands handed to the workers */
static unsigned long rounds_done; /* worker rounds finished, all workers */
static long round_calls;
static int quitting;

COUNTED void g(void)
{
	sink++;
	BARRIER();
}

COUNTED void f(void)
{
	g();
	BARRIER();
}

static void calls(long n)
{
	for (long i = 0; i < n; i++)
		f();
}

COUNTED void *worker(void *arg)
{
	unsigned long seen = 0;

	for (;;) {
		long n;

		pthread_mutex_lock(&lock);
		while (round_no == seen && !quitting)
			pthread_cond_wait(&go, &lock);
		if (round_no == seen) {
			pthread_mutex_unlock(&lock);
			return arg;
		}
		seen = round_no;
		n = round_calls;
		pthread_mutex_unlock(&lock);
		calls(n);
		pthread_mutex_lock(&lock);
		rounds_done++;
		pthread_cond_broadcast(&finished);
		pthread_mutex_unlock(&lock);
	}
}

/* One command: 0 at the end of the input, else 1 with *total grown by
 * the calls made. */
COUNTED int serve_one(int workers, long *total)
{
	char line[64], *end;
	long n;

	if (!fgets(line, sizeof(line), stdin))
		return 0;
	n = strtol(line, &end, 10);
	if (end == line || n < 0)
		n = 0;
	if (!workers) {
		calls(n);
		*total += n;
	} else {
		pthread_mutex_lock(&lock);
		round_calls = n;
		round_no++;
		pthread_cond_broadcast(&go);
		while (rounds_done < round_no * (unsigned long)workers)
			pthread_cond_wait(&finished, &lock);
		pthread_mutex_unlock(&lock);
		*total += n * workers;
	}
	printf("done %ld\n", n);
	fflush(stdout);
	return 1;
}

int main(int argc, char **argv)
{
	pthread_t tids[WORKERS_MAX];
	int workers = argc > 1 ? atoi(argv[1]) : 0;
	long total = 0;

	if (workers < 0 || workers > WORKERS_MAX) {
		fprintf(stderr, "cmdloop: 0 to %d workers\n", WORKERS_MAX);
		return 2;
	}
	for (int i = 0; i < workers; i++)
		if (pthread_create(&tids[i], NULL, worker, NULL)) {
			fprintf(stderr, "cmdloop: cannot start a thread\n");
			return 1;
		}
	printf("ready %d\n", workers);
	fflush(stdout);
	while (serve_one(workers, &total))
		;
	pthread_mutex_lock(&lock);
	quitting = 1;
	pthread_cond_broadcast(&go);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < workers; i++)
		pthread_join(tids[i], NULL);
	printf("bye %ld\n", total);
	return 0;
}
