/* bench/libcalls' workload: N rounds of library calls through the PLT, by
 * kind: `labs` (a library function --libcalls keeps no arguments of),
 * `memcmp` (its arguments and result: words only) and `strlen` (its string
 * too, read through the kernel).  argv[1]: which; argv[2]: N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "labs";
	long n = argc > 2 ? atol(argv[2]) : 100000;
	static char a[16] = "0123456789", b[16] = "0123456789";
	int kind = which[0] == 'l' ? 0 : which[0] == 'm' ? 1 : 2;
	long s = 0;

	/* the kind is chosen once: the loop makes no other library call */
	for (long i = 0; i < n; i++) {
		if (kind == 0)
			s += labs(i - n / 2);
		else if (kind == 1)
			s += memcmp(a, b, (size_t)(i & 7));
		else
			s += (long)strlen(a + (i & 7));
	}
	sink = s;
	printf("%ld\n", s);
	return 0;
}
