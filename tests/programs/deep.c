/* Deep recursion: down(n) recurses n levels (default 1000000) on a thread
 * with a stack big enough for it, whatever `ulimit -s` says; main joins it.
 * Usage: deep [LEVELS] */
#include "prog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_LEVELS 1000000L
/* generous per level: instrumented frames at -O0 take about 48 bytes */
#define STACK_PER_LEVEL 256

COUNTED long down(long n)
{
	long r;

	if (n <= 1)
		return 1;
	r = down(n - 1) + 1;
	BARRIER(); /* not a tail call: the recursion stays a recursion */
	return r;
}

static void *run(void *arg)
{
	long *levels = arg;

	*levels = down(*levels);
	return NULL;
}

int main(int argc, char **argv)
{
	long levels = argc > 1 ? atol(argv[1]) : DEFAULT_LEVELS, want = levels;
	pthread_attr_t attr;
	pthread_t t;

	if (levels < 1) {
		fprintf(stderr, "usage: deep [LEVELS]\n");
		return 2;
	}
	pthread_attr_init(&attr);
	if (pthread_attr_setstacksize(&attr, (size_t)levels * STACK_PER_LEVEL + (1 << 20)) ||
	    pthread_create(&t, &attr, run, &levels)) {
		fprintf(stderr, "deep: cannot start a thread with a stack for %ld levels\n", levels);
		return 1;
	}
	pthread_join(t, NULL);
	printf("deep: %ld levels\n", levels);
	return levels == want ? 0 : 1;
}
