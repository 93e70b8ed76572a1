/* An open-addressing index from 64-bit hashes to item numbers, for tables
 * whose items live in the caller's own array (heap sites, stacks,
 * processes, call tree nodes, a profile's functions).  The hash of each
 * entry is kept, so growing never calls back.  Not thread-safe.
 *
 * The probe is inline: a caller on a hot path that passes its own static
 * eq function gets the comparison inlined, not a call per probe. */
#ifndef LP_HASHINDEX_H
#define LP_HASHINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zero-initialise; hashindex_release frees.  Entries are in val: slot s
 * holds item val[s] - 1, or nothing when val[s] is 0.  An entry with hash
 * h sits at h mod cap or in the first free slot after it (wrapping), so
 * walking val from 0 to cap gives an order that depends only on the
 * hashes, the order of the puts and the growths. */
struct hashindex {
	uint32_t cap, n; /* cap: a power of two (or 0); n: entries */
	uint32_t *val;   /* item + 1; 0: empty */
	uint64_t *hash;
};

/* Whether item (of the caller's ctx) equals key. */
typedef bool (*hashindex_eq)(const void *ctx, uint32_t item, const void *key);

uint64_t hashindex_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hashindex_u64(uint64_t x);

/* Fibonacci hashing: the top `bits` (1..64) bits of x times 2^64 / phi.
 * One multiplication, for keys that differ in any of their bits (code
 * addresses, ids); an index up to 2^bits slots uses all of them. */
static inline uint64_t hashindex_fibonacci(uint64_t x, unsigned bits)
{
	return (x * 0x9e3779b97f4a7c15ull) >> (64 - bits);
}

/* Whether one more entry fits without growing (the index stays at most
 * half full). */
static inline bool hashindex_has_room(const struct hashindex *x)
{
	return (x->n + 1) * 2 <= x->cap;
}

/* Doubles the slots (256 the first time), putting the entries back in slot
 * order.  Returns 0 or -ENOMEM (the index is unchanged). */
int hashindex_grow(struct hashindex *x);

/* Makes room for one more entry.  Returns 0 or -ENOMEM. */
static inline int hashindex_reserve(struct hashindex *x)
{
	return hashindex_has_room(x) ? 0 : hashindex_grow(x);
}

/* The slot of the entry equal to key, or of the empty slot where it would
 * go: check x->val[slot].  Needs a free slot (hashindex_reserve). */
static inline uint32_t hashindex_slot(const struct hashindex *x, uint64_t hash, hashindex_eq eq, const void *ctx,
                                      const void *key)
{
	uint32_t mask = x->cap - 1, s = (uint32_t)hash & mask;

	while (x->val[s] && !(x->hash[s] == hash && eq(ctx, x->val[s] - 1, key)))
		s = (s + 1) & mask;
	return s;
}

/* The item equal to key, or -1. */
static inline int64_t hashindex_get(const struct hashindex *x, uint64_t hash, hashindex_eq eq, const void *ctx,
                                    const void *key)
{
	uint32_t s;

	if (!x->cap)
		return -1;
	s = hashindex_slot(x, hash, eq, ctx, key);
	return x->val[s] ? (int64_t)x->val[s] - 1 : -1;
}

/* Fills the empty slot found by hashindex_slot. */
static inline void hashindex_put(struct hashindex *x, uint32_t slot, uint64_t hash, uint32_t item)
{
	x->val[slot] = item + 1;
	x->hash[slot] = hash;
	x->n++;
}

/* Removes every entry and keeps the slots, for filling again (items
 * renumbered, a table reused, a cache that starts again when full). */
void hashindex_clear(struct hashindex *x);
void hashindex_release(struct hashindex *x);

#endif
