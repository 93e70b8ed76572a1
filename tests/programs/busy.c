/* Benchmark workload: as many calls as possible to two tiny functions, so the
 * cost measured is the tracer's per-call cost and little else.
 * Usage: busy [N]   (calls of each function; default 3000000) */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_CALLS 3000000UL

COUNTED unsigned long tiny_a(unsigned long x)
{
	return x + 1;
}

COUNTED unsigned long tiny_b(unsigned long x)
{
	return x ^ 0x5a5aUL;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : DEFAULT_CALLS;
	unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++) {
		acc = tiny_a(acc);
		acc = tiny_b(acc);
	}
	printf("busy: %lu calls each, acc %lu\n", n, acc);
	return 0;
}
