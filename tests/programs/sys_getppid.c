/* The syscall benchmark's loop: N getppid calls (argv[1], default 500000).
 * With a second argument "-t" it prints the loop's own time on stderr
 * ("loop_ns=..."), so that a benchmark can leave the tracer's start and
 * end out. */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

COUNTED long spin(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += getppid();
	return sum;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 500000;
	struct timespec a, b;
	long sum;

	clock_gettime(CLOCK_MONOTONIC, &a);
	sum = spin(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (argc > 2 && !strcmp(argv[2], "-t"))
		fprintf(stderr, "loop_ns=%lld\n",
		        (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return sum > 0 ? 0 : 1;
}
