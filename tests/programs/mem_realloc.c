/* Memory tracer: realloc chains and the other C allocation functions.
 *   chain():  malloc(16), then 10 x realloc doubling it (to 32 ... 16384,
 *             each REALLOC's old pointer the block before), then free: 1
 *             MALLOC(16), 10 REALLOC, 1 FREE of the last block
 *   edges():  realloc(NULL, 100) (REALLOC, old 0); reallocarray(NULL, 10, 8)
 *             (REALLOC of 80); each freed (2 FREE); then malloc(8) and
 *             realloc of it to 0, which releases it (REALLOC, pointer 0,
 *             size 0): 1 MALLOC(8), 1 REALLOC
 *   family(): calloc(10, 12) (CALLOC 120), posix_memalign 64/100, aligned_alloc
 *             32/64, memalign 16/48, valloc(100) (4 ALIGNED), all 5 freed
 * Exit status 0. */
#include "prog.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define CHAIN_START 16
#define CHAIN_STEPS 10

COUNTED int chain(void)
{
	size_t size = CHAIN_START;
	char *p = malloc(size);

	if (!p)
		return 1;
	memset(p, 7, size);
	for (int i = 0; i < CHAIN_STEPS; i++) {
		char *q = realloc(p, size * 2);

		if (!q) {
			free(p);
			return 1;
		}
		p = q;
		memset(p + size, 7, size);
		size *= 2;
	}
	free(p);
	return 0;
}

static void *volatile null; /* the compiler turns realloc(NULL, n) into malloc(n) */

COUNTED int edges(void)
{
	char *a = realloc(null, 100);
	char *b = reallocarray(null, 10, 8);
	char *volatile c = malloc(8);
	void *volatile r;

	BARRIER();
	free(a);
	free(b);
	r = realloc(c, 0);
	BARRIER();
	return !a || !b || r;
}

COUNTED int family(void)
{
	void *volatile v[5] = { 0 };
	void *pm = NULL;
	int bad = 0;

	v[0] = calloc(10, 12);
	bad |= posix_memalign(&pm, 64, 100);
	v[1] = pm;
	v[2] = aligned_alloc(32, 64);
	v[3] = memalign(16, 48);
	v[4] = valloc(100);
	BARRIER();
	for (int i = 0; i < 5; i++) {
		bad |= !v[i];
		free(v[i]);
	}
	return bad;
}

int main(void)
{
	return chain() | edges() | family();
}
