/* The body of libreuse_a.so and libreuse_b.so (reuse_a.c, reuse_b.c): the
 * same code under names of the same length, so that both objects have the
 * same layout and the second, loaded after the first was unloaded, lands
 * at the same addresses (dlreuse.c).  REUSE(x) makes a name. */
#include "prog.h"

#define REUSE_HELPER_CALLS 3

COUNTED int REUSE(helper)(int x)
{
	BARRIER();
	return x * 3;
}

COUNTED int REUSE(run)(int round)
{
	int sum = 0;

	for (int i = 0; i < REUSE_HELPER_CALLS; i++)
		sum += REUSE(helper)(round + i);
	return sum;
}
