/* A program that works only when told: it prints its pid, then for each
 * line read on stdin calls step once and prints "step N" (flushed), so that
 * a test knows exactly how many calls it has made at any moment.  At the
 * end of stdin it calls finish and exits with the status given (default 0).
 * Usage: stepper [STATUS] */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long steps;

COUNTED void step(void)
{
	steps++;
	BARRIER();
}

COUNTED void finish(void)
{
	BARRIER();
}

int main(int argc, char **argv)
{
	int status = argc > 1 ? atoi(argv[1]) : 0;
	char line[256];

	printf("%ld\n", (long)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		step();
		printf("step %lu\n", steps);
		fflush(stdout);
	}
	finish();
	printf("done %lu\n", steps);
	return status;
}
