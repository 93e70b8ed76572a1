/* Mutual recursion: is_even and is_odd call only each other, never themselves,
 * so a tree that mixes up their frames shows a self edge that is not there. */
#include "prog.h"

#include <stdio.h>

COUNTED int is_odd(unsigned n);

COUNTED int is_even(unsigned n)
{
	int r;

	if (n == 0)
		return 1;
	r = is_odd(n - 1);
	BARRIER();
	return r;
}

COUNTED int is_odd(unsigned n)
{
	int r;

	if (n == 0)
		return 0;
	r = is_even(n - 1);
	BARRIER();
	return r;
}

int main(void)
{
	volatile unsigned even_arg = 20, odd_arg = 7;
	/* is_even(20): is_even 20,18..0 (11 calls), is_odd 19..1 (10 calls) */
	int e = is_even(even_arg);
	/* is_odd(7): is_odd 7,5,3,1 (4 calls), is_even 6,4,2,0 (4 calls) */
	int o = is_odd(odd_arg);

	printf("is_even(20) = %d, is_odd(7) = %d\n", e, o);
	return e == 1 && o == 1 ? 0 : 1;
}
