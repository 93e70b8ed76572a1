/* Open-addressing index from hashes to item numbers (see hashindex.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/util/hashindex.h"

#define HASHINDEX_FIRST_CAP 256u

uint64_t hashindex_bytes(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

uint64_t hashindex_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

int hashindex_grow(struct hashindex *x)
{
	uint32_t cap = x->cap ? 2 * x->cap : HASHINDEX_FIRST_CAP, i;
	uint32_t *val;
	uint64_t *hash;

	val = calloc(cap, sizeof(*val));
	hash = calloc(cap, sizeof(*hash));
	if (!val || !hash) {
		free(val);
		free(hash);
		return -ENOMEM;
	}
	for (i = 0; i < x->cap; i++) {
		uint32_t s;

		if (!x->val[i])
			continue;
		s = (uint32_t)x->hash[i] & (cap - 1);
		while (val[s])
			s = (s + 1) & (cap - 1);
		val[s] = x->val[i];
		hash[s] = x->hash[i];
	}
	free(x->val);
	free(x->hash);
	x->val = val;
	x->hash = hash;
	x->cap = cap;
	return 0;
}

void hashindex_clear(struct hashindex *x)
{
	if (x->cap)
		memset(x->val, 0, x->cap * sizeof(*x->val));
	x->n = 0;
}

void hashindex_release(struct hashindex *x)
{
	free(x->val);
	free(x->hash);
	x->val = NULL;
	x->hash = NULL;
	x->cap = x->n = 0;
}
