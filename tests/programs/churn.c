/* Thread churn: 300 short threads, one after another, each calling work()
 * three times.  Then the program counts the layerprof rings still mapped in
 * it and fails (exit 1) if the ended threads' rings were kept: a program
 * that starts threads all day must not pile them up. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "prog.h"

#define THREADS 300

static volatile unsigned sink;

COUNTED void work(unsigned i)
{
	sink += i;
	BARRIER();
}

COUNTED void *thread_fn(void *arg)
{
	for (unsigned i = 0; i < 3; i++)
		work(i);
	return arg;
}

static unsigned rings_mapped(void)
{
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "layerprof-") && strstr(line, "/r."))
			n++;
	fclose(f);
	return n;
}

int main(void)
{
	unsigned n;

	for (unsigned i = 0; i < THREADS; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, thread_fn, NULL))
			return 2;
		pthread_join(t, NULL);
	}
	n = rings_mapped();
	printf("churn: %d threads, %u rings mapped\n", THREADS, n);
	return n > 2 ? 1 : 0;
}
