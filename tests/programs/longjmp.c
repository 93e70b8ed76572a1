/* longjmp: dive recurses ten levels and jumps back into runner, skipping ten
 * exits.  after_jump must then hang under runner, not under a stale dive.
 * The whole round runs three times. */
#include "prog.h"

#include <setjmp.h>
#include <stdio.h>

#define DIVE_DEPTH 10
#define ROUNDS 3

static jmp_buf landing;
static volatile int sink;

COUNTED void dive(int depth)
{
	if (depth <= 0)
		return; /* bad depth (and gcc wants a path that returns) */
	if (depth == 1)
		longjmp(landing, 1);
	dive(depth - 1);
	BARRIER(); /* not reached */
}

COUNTED void after_jump(void)
{
	sink++;
}

COUNTED void runner(int depth)
{
	if (setjmp(landing) == 0) {
		dive(depth);
		return; /* not reached */
	}
	after_jump();
}

int main(void)
{
	volatile int depth = DIVE_DEPTH;

	for (int i = 0; i < ROUNDS; i++)
		runner(depth);
	printf("longjmp: %d rounds done\n", ROUNDS);
	return 0;
}
