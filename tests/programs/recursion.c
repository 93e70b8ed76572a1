/* Plain recursion with a known call count: fib(15) enters fib 1973 times,
 * because calls(n) = 1 + calls(n-1) + calls(n-2) = 2 * F(n+1) - 1. */
#include "prog.h"

#include <stdio.h>

#define FIB_ARG 15

COUNTED int fib(int n)
{
	int r;

	if (n < 2)
		return n;
	r = fib(n - 1);
	BARRIER(); /* neither call may become a loop: see prog.h */
	r += fib(n - 2);
	BARRIER();
	return r;
}

int main(void)
{
	/* volatile: the argument must not be known when fib is compiled in */
	volatile int arg = FIB_ARG;
	int r = fib(arg);

	printf("fib(%d) = %d\n", FIB_ARG, r);
	return r == 610 ? 0 : 1;
}
