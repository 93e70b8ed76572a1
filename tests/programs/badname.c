/* A function whose symbol is not valid UTF-8: the asm label gives odd() the
 * name "odd\xff\xfename", bytes a demangler passes through unchanged, so
 * every writer of names sees them. */
#include "prog.h"

#include <stdio.h>

COUNTED int odd(int x) __asm__("odd\xff\xfename");

COUNTED int odd(int x)
{
	BARRIER();
	return x + 1;
}

int main(void)
{
	volatile int arg = 1;
	int i, r = 0;

	for (i = 0; i < 3; i++)
		r += odd(arg);
	printf("%d\n", r);
	return r == 6 ? 0 : 1;
}
