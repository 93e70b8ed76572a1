/* A table of pointers indexed by a small number (a walk stream's index),
 * grown to hold it, the new slots NULL: the walk's consumers keep their
 * per-thread state this way. */
#ifndef LP_SLOTS_H
#define LP_SLOTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS_SPARE 64u /* slots added beyond the one asked for */

/* The table slots (*n slots of elem bytes each, a pointer type) grown to
 * hold slot i: the new table (the old one is gone), *n its size; NULL when
 * memory is short (slots and *n unchanged). */
static inline void *slots_grow(void *slots, size_t elem, uint32_t *n, uint32_t i)
{
	uint32_t cap = i + SLOTS_SPARE;
	unsigned char *g = realloc(slots, (size_t)cap * elem);

	if (!g)
		return NULL;
	memset(g + (size_t)*n * elem, 0, (size_t)(cap - *n) * elem);
	*n = cap;
	return g;
}

#endif
