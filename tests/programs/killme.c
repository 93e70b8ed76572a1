/* A program that never ends by itself: it prints its pid, calls ready once,
 * then calls tick every millisecond until the test kills it (SIGKILL).
 * A safety limit ends it with status 1 if nobody does.
 * Usage: killme [MAX_TICKS]   (default 60000, about a minute) */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_TICKS 60000UL
#define TICK_NS 1000000L /* 1 ms */

static volatile unsigned long ticks;

COUNTED void ready(void)
{
	ticks = 0;
}

COUNTED void tick(void)
{
	ticks++;
}

int main(int argc, char **argv)
{
	unsigned long max_ticks = argc > 1 ? strtoul(argv[1], NULL, 10) : DEFAULT_MAX_TICKS;
	struct timespec nap = { 0, TICK_NS };

	printf("%ld\n", (long)getpid());
	fflush(stdout);
	ready();
	while (ticks < max_ticks) {
		tick();
		nanosleep(&nap, NULL);
	}
	fprintf(stderr, "killme: nobody killed me after %lu ticks\n", max_ticks);
	return 1;
}
