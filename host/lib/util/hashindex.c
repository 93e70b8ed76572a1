/* Open-addressing index from hashes to item numbers (see hashindex.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/util/hashindex.h"

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

int hashindex_reserve(struct hashindex *x)
{
	uint32_t cap, i;
	uint32_t *val;
	uint64_t *hash;

	if ((x->n + 1) * 2 <= x->cap)
		return 0;
	cap = x->cap ? 2 * x->cap : 256;
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

uint32_t hashindex_slot(const struct hashindex *x, uint64_t hash, hashindex_eq eq, const void *ctx, const void *key)
{
	uint32_t s = (uint32_t)hash & (x->cap - 1);

	while (x->val[s] && !(x->hash[s] == hash && eq(ctx, x->val[s] - 1, key)))
		s = (s + 1) & (x->cap - 1);
	return s;
}

int64_t hashindex_get(const struct hashindex *x, uint64_t hash, hashindex_eq eq, const void *ctx, const void *key)
{
	uint32_t s;

	if (!x->cap)
		return -1;
	s = hashindex_slot(x, hash, eq, ctx, key);
	return x->val[s] ? (int64_t)x->val[s] - 1 : -1;
}

void hashindex_put(struct hashindex *x, uint32_t slot, uint64_t hash, uint32_t item)
{
	x->val[slot] = item + 1;
	x->hash[slot] = hash;
	x->n++;
}

void hashindex_release(struct hashindex *x)
{
	free(x->val);
	free(x->hash);
	x->val = NULL;
	x->hash = NULL;
	x->cap = x->n = 0;
}

void hashindex_clear(struct hashindex *x)
{
	if (x->cap)
		memset(x->val, 0, (size_t)x->cap * sizeof(*x->val));
	x->n = 0;
}
