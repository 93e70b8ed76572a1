/* bench/dynamic's workload: N rounds of three small functions at -O2,
 * each a real call (noinline, noipa), 3N calls in all. */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, noipa))

static volatile unsigned sink;

KEEP unsigned step_a(unsigned x) { return x * 2654435761u; }
KEEP unsigned step_b(unsigned x) { return x ^ (x >> 13); }
KEEP unsigned step_c(unsigned x) { return x + 0x9e3779b9u; }

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	unsigned x = 1;

	for (long i = 0; i < n; i++)
		x = step_c(step_b(step_a(x)));
	sink = x;
	printf("%u\n", x);
	return 0;
}
