/* A program that never ends and leaks, for test_live_memory.py:
 *   leakloop N S PERIOD_MS [ITERATIONS] [double-free]
 * Each iteration:
 *   leaky():  N x malloc(S), kept forever (the leak)
 *   keep():   one malloc(48) kept in a ring of RING slots; the block it
 *             replaces (allocated RING iterations before) is freed
 *   churn():  malloc(32), freed at once
 * then prints "iter K" (K from 1) and waits PERIOD_MS, or with PERIOD_MS 0
 * waits for SIGUSR1 before each iteration (so a test knows exactly how many
 * ran; SIGUSR2 there runs churn() alone and prints "poke", which is no
 * iteration: a heap operation that starts the listing of an attached
 * program).  ITERATIONS 0 (the default) runs forever; otherwise the program
 * exits 0 after that many.  With "double-free", iteration 3 frees the
 * block of churn twice (a keep-alive test: glibc aborts otherwise).
 * Prints its pid first. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 4

void *volatile sink;
static void **leaked;
static size_t nleaked, capleaked;
static void *ring[RING];

/* Keeps a leaked block reachable (so it is a leak by growth, not lost);
 * the list is realloc'd here, apart from leaky's own allocations. */
__attribute__((noinline)) void remember(void *p)
{
	if (nleaked == capleaked) {
		size_t cap = capleaked ? 2 * capleaked : 1024;
		void **v = realloc(leaked, cap * sizeof(*v));

		if (!v)
			exit(3);
		leaked = v;
		capleaked = cap;
	}
	leaked[nleaked++] = p;
}

__attribute__((noinline)) void leaky(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(size);

		if (!p)
			exit(3);
		memset(p, 1, size);
		remember(p);
	}
}

__attribute__((noinline)) void keep(unsigned long k)
{
	void *p = malloc(48);

	free(ring[k % RING]);
	ring[k % RING] = p;
}

__attribute__((noinline)) void churn(int double_free)
{
	void *p = malloc(32);

	sink = p;
	free(p);
	if (double_free)
		free(p);
}

int main(int argc, char **argv)
{
	int n, period_ms, bad;
	size_t size;
	unsigned long iterations = 0, k;
	sigset_t usr1;
	int sig;

	if (argc < 4) {
		fprintf(stderr, "usage: leakloop N S PERIOD_MS [ITERATIONS] [double-free]\n");
		return 2;
	}
	n = atoi(argv[1]);
	size = (size_t)atol(argv[2]);
	period_ms = atoi(argv[3]);
	if (argc > 4)
		iterations = strtoul(argv[4], NULL, 10);
	bad = argc > 5 && !strcmp(argv[5], "double-free");
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigaddset(&usr1, SIGUSR2);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (k = 1; !iterations || k <= iterations; k++) {
		while (period_ms == 0 && !sigwait(&usr1, &sig) && sig == SIGUSR2) {
			churn(0);
			printf("poke\n");
			fflush(stdout);
		}
		leaky(n, size);
		keep(k);
		churn(bad && k == 3);
		printf("iter %lu\n", k);
		fflush(stdout);
		if (period_ms > 0) {
			struct timespec ts = { period_ms / 1000, (long)(period_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	return 0;
}
