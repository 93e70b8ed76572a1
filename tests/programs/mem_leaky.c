/* Memory tracer: a known leak.  Expected heap operations of this program's
 * own functions (libc's own allocations, e.g. for stdio, come on top):
 *   leaky():  100 x malloc(48), never freed (the leak)
 *   tidy():   50 x malloc(24), each freed by tidy() at once: 50 FREE
 * Exit status 0.  Counts do not depend on timing or optimisation level. */
#include "prog.h"

#include <stdlib.h>
#include <string.h>

#define LEAKED 100
#define LEAK_SIZE 48
#define TIDY 50
#define TIDY_SIZE 24

void *volatile kept[LEAKED];

COUNTED void leaky(int i)
{
	char *p = malloc(LEAK_SIZE);

	if (p)
		memset(p, i, LEAK_SIZE);
	kept[i] = p;
	BARRIER();
}

COUNTED void tidy(int i)
{
	char *volatile p = malloc(TIDY_SIZE);

	if (p)
		p[0] = (char)i;
	BARRIER();
	free(p);
	BARRIER(); /* not a tail call: the call site stays in tidy */
}

int main(void)
{
	for (int i = 0; i < LEAKED; i++)
		leaky(i);
	for (int i = 0; i < TIDY; i++)
		tidy(i);
	return 0;
}
