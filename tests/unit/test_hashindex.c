/* Unit test of util/hashindex: items found by hash and key, the index
 * growing past many items (kept at most half full), colliding hashes told
 * apart by the caller's key, and release. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "host/lib/util/hashindex.h"
#include "tests/unit/check.h"

#define ITEMS 20000u

static uint64_t keys[ITEMS + 1]; /* + 1: add() is asked for item ITEMS, which must be found */

static bool key_eq(const void *ctx, uint32_t item, const void *key)
{
	const uint64_t *k = ctx;

	return k[item] == *(const uint64_t *)key;
}

/* Adds key as item n when new; returns the item that holds it. */
static uint32_t add(struct hashindex *x, uint64_t hash, uint64_t key, uint32_t n)
{
	uint32_t slot;

	if (hashindex_reserve(x))
		return UINT32_MAX;
	slot = hashindex_slot(x, hash, key_eq, keys, &key);
	if (x->val[slot])
		return x->val[slot] - 1;
	keys[n] = key;
	hashindex_put(x, slot, hash, n);
	return n;
}

static void test_grow(void)
{
	struct hashindex x = { 0 };
	uint32_t i, bad = 0;
	uint64_t k;

	CHECK_EQ_U64(hashindex_get(&x, 1, key_eq, keys, &(uint64_t){ 1 }), (uint64_t)-1); /* empty, no table */
	for (i = 0; i < ITEMS; i++)
		bad += add(&x, hashindex_u64(i * 7919ull), i * 7919ull, i) != i;
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(x.n, ITEMS);
	CHECK(x.n * 2 <= x.cap);
	CHECK_EQ_U64(x.cap & (x.cap - 1), 0); /* a power of two */
	for (i = 0, bad = 0; i < ITEMS; i++) {
		k = i * 7919ull;
		bad += hashindex_get(&x, hashindex_u64(k), key_eq, keys, &k) != i;
		bad += add(&x, hashindex_u64(k), k, ITEMS) != i; /* found, not added */
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(x.n, ITEMS);
	k = 7919ull * ITEMS;
	CHECK_EQ_U64(hashindex_get(&x, hashindex_u64(k), key_eq, keys, &k), (uint64_t)-1);
	hashindex_release(&x);
	CHECK(x.cap == 0 && x.n == 0 && !x.val && !x.hash);
	hashindex_release(&x);
}

/* Every key with the same hash: the key decides. */
static void test_collisions(void)
{
	struct hashindex x = { 0 };
	uint32_t i, bad = 0;
	uint64_t k;

	for (i = 0; i < 300; i++)
		bad += add(&x, 42, 1000 + i, i) != i;
	for (i = 0; i < 300; i++) {
		k = 1000 + i;
		bad += hashindex_get(&x, 42, key_eq, keys, &k) != i;
	}
	CHECK_EQ_U64(bad, 0);
	k = 999;
	CHECK_EQ_U64(hashindex_get(&x, 42, key_eq, keys, &k), (uint64_t)-1);
	k = 1000;
	CHECK_EQ_U64(hashindex_get(&x, 43, key_eq, keys, &k), (uint64_t)-1); /* the hash must match too */
	hashindex_release(&x);
}

static void test_hashes(void)
{
	CHECK(hashindex_bytes("abc", 3, 0) == hashindex_bytes("abc", 3, 0));
	CHECK(hashindex_bytes("abc", 3, 0) != hashindex_bytes("abd", 3, 0));
	CHECK(hashindex_bytes("abc", 3, 0) != hashindex_bytes("abc", 3, 1));
	CHECK(hashindex_bytes("abc", 2, 0) == hashindex_bytes("abd", 2, 0));
	CHECK(hashindex_u64(1) != hashindex_u64(2));
	CHECK_EQ_U64(hashindex_u64(0), 0);
}

int main(void)
{
	test_grow();
	test_collisions();
	test_hashes();
	return check_summary();
}
