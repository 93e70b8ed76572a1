/* An open-addressing index from 64-bit hashes to item numbers, for tables
 * whose items live in the caller's own array (heap sites, stacks,
 * processes).  The hash of each entry is kept, so growing never calls
 * back.  Not thread-safe. */
#ifndef LP_HASHINDEX_H
#define LP_HASHINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zero-initialise; hashindex_release frees. */
struct hashindex {
	uint32_t cap, n;
	uint32_t *val; /* item + 1; 0: empty */
	uint64_t *hash;
};

/* Whether item (of the caller's ctx) equals key. */
typedef bool (*hashindex_eq)(const void *ctx, uint32_t item, const void *key);

uint64_t hashindex_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hashindex_u64(uint64_t x);

/* Makes room for one more entry (the index stays at most half full).
 * Returns 0 or -ENOMEM. */
int hashindex_reserve(struct hashindex *x);
/* The slot of the entry equal to key, or of the empty slot where it would
 * go: check x->val[slot].  Needs a free slot (hashindex_reserve). */
uint32_t hashindex_slot(const struct hashindex *x, uint64_t hash, hashindex_eq eq, const void *ctx, const void *key);
/* The item equal to key, or -1. */
int64_t hashindex_get(const struct hashindex *x, uint64_t hash, hashindex_eq eq, const void *ctx, const void *key);
/* Fills the empty slot found by hashindex_slot. */
void hashindex_put(struct hashindex *x, uint32_t slot, uint64_t hash, uint32_t item);
void hashindex_release(struct hashindex *x);
/* Forgets every entry and keeps the memory, for a cache that starts again
 * when full. */
void hashindex_clear(struct hashindex *x);

#endif
