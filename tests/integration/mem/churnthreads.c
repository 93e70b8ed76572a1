/* Threads that allocate and release without pause, for test_live_memory.py:
 *   churnthreads T R
 * Prints its pid, then starts T threads; each keeps a ring of R blocks
 * (thread t's of 24 + 8 t bytes, from churn_ring), replacing the oldest on
 * every step (16 steps, then 50 us of sleep), and also allocates and releases one block
 * at once (churn_pair) each step.  On SIGUSR1 every thread finishes its step
 * and parks, and the program prints "parked"; after that the heap holds
 * exactly T x R blocks from churn_ring (and nothing from churn_pair) until
 * SIGTERM ends the program. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define THREADS_MAX 16
#define RING_MAX 4096

static atomic_int stop;
static atomic_int parked;
static int ring_len;
void *volatile sink;

__attribute__((noinline)) void *churn_ring(size_t size)
{
	return malloc(size);
}

__attribute__((noinline)) void churn_pair(size_t size)
{
	void *p = malloc(size);

	sink = p;
	free(p);
}

static void *worker(void *arg)
{
	long t = (long)arg;
	size_t size = 24 + 8 * (size_t)t;
	void **ring = calloc(RING_MAX, sizeof(*ring));
	unsigned long k;

	if (!ring)
		exit(3);
	for (k = 0; k < (unsigned long)ring_len; k++)
		if (!(ring[k] = churn_ring(size)))
			exit(3);
	for (k = 0; !atomic_load(&stop); k++) {
		void *p = churn_ring(size);

		if (!p)
			exit(3);
		free(ring[k % (unsigned long)ring_len]);
		ring[k % (unsigned long)ring_len] = p;
		churn_pair(size + 4);
		if (k % 16 == 15) {
			/* paced, so that the recorder keeps up (nothing lost) */
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
	atomic_fetch_add(&parked, 1);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS_MAX];
	sigset_t usr1;
	int n, sig;
	long t;

	if (argc < 3) {
		fprintf(stderr, "usage: churnthreads T R\n");
		return 2;
	}
	n = atoi(argv[1]);
	ring_len = atoi(argv[2]);
	if (n < 1 || n > THREADS_MAX || ring_len < 1 || ring_len > RING_MAX) {
		fprintf(stderr, "churnthreads: T in 1..%d, R in 1..%d\n", THREADS_MAX, RING_MAX);
		return 2;
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (t = 0; t < n; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)t))
			return 3;
	sigwait(&usr1, &sig);
	atomic_store(&stop, 1);
	while (atomic_load(&parked) < n)
		usleep(1000);
	printf("parked\n");
	fflush(stdout);
	for (;;)
		pause();
}
