/* Unit test of util/hashindex: items found by hash and key, the index
 * growing past many items (kept at most half full), colliding hashes told
 * apart by the caller's key, the slot order (linear probing, growth in slot
 * order), clearing for reuse, the hash functions, and release. */
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

/* Where entries sit: at hash mod cap, else the next free slot (wrapping);
 * growing puts them back in slot order.  Callers that walk val (a
 * profile's functions) depend on this. */
static void test_slot_order(void)
{
	struct hashindex x = { 0 };
	uint32_t i;

	CHECK(!hashindex_has_room(&x)); /* no slots yet */
	/* home slots 255, 255, 0, 255: the last wraps past 0 and 1 */
	CHECK_EQ_U64(add(&x, 255, 10, 0), 0);
	CHECK_EQ_U64(x.cap, 256);
	CHECK_EQ_U64(add(&x, 511, 11, 1), 1);
	CHECK_EQ_U64(add(&x, 256, 12, 2), 2);
	CHECK_EQ_U64(add(&x, 767, 13, 3), 3);
	CHECK_EQ_U64(x.val[255], 1);
	CHECK_EQ_U64(x.val[0], 2);
	CHECK_EQ_U64(x.val[1], 3);
	CHECK_EQ_U64(x.val[2], 4);
	CHECK_EQ_U64(x.val[3], 0);
	/* doubled: the entries of slots 0, 1, 2 and 255 go back in that
	 * order, each at hash mod 512 or after: item 3 (767) takes 255 before
	 * item 0 (255) comes to it, which goes on past item 2 (256) to 257 */
	CHECK_EQ_U64(hashindex_grow(&x), 0);
	CHECK_EQ_U64(x.cap, 512);
	CHECK_EQ_U64(x.n, 4);
	CHECK_EQ_U64(x.val[511], 1 + 1);
	CHECK_EQ_U64(x.val[256], 1 + 2);
	CHECK_EQ_U64(x.val[255], 1 + 3);
	CHECK_EQ_U64(x.val[257], 1 + 0);
	CHECK_EQ_U64(x.val[0] | x.val[1] | x.val[2] | x.val[258], 0);
	hashindex_release(&x);
	/* room: at most half full, so 128 entries fit 256 slots */
	for (i = 0; i < 128; i++)
		add(&x, hashindex_u64(i), i, i);
	CHECK_EQ_U64(x.cap, 256);
	CHECK(!hashindex_has_room(&x));
	CHECK_EQ_U64(hashindex_reserve(&x), 0);
	CHECK_EQ_U64(x.cap, 512);
	CHECK(hashindex_has_room(&x));
	hashindex_release(&x);
}

/* A cleared index finds nothing, keeps its slots and fills again. */
static void test_clear(void)
{
	struct hashindex x = { 0 };
	uint32_t i, cap, bad = 0;
	uint64_t k;

	hashindex_clear(&x); /* nothing to clear */
	CHECK(x.cap == 0 && x.n == 0);
	for (i = 0; i < 1000; i++)
		add(&x, hashindex_u64(i), i, i);
	cap = x.cap;
	hashindex_clear(&x);
	CHECK_EQ_U64(x.n, 0);
	CHECK_EQ_U64(x.cap, cap);
	for (i = 0; i < cap; i++)
		bad += x.val[i] != 0;
	CHECK_EQ_U64(bad, 0);
	k = 5;
	CHECK_EQ_U64(hashindex_get(&x, hashindex_u64(k), key_eq, keys, &k), (uint64_t)-1);
	/* the same keys again, as other items (renumbered in reverse) */
	for (i = 0; i < 1000; i++)
		bad += add(&x, hashindex_u64(999 - i), 999 - i, i) != i;
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(x.cap, cap);
	k = 999;
	CHECK_EQ_U64(hashindex_get(&x, hashindex_u64(k), key_eq, keys, &k), 0);
	k = 0;
	CHECK_EQ_U64(hashindex_get(&x, hashindex_u64(k), key_eq, keys, &k), 999);
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
	/* Fibonacci hashing: the top bits of x * 0x9e3779b97f4a7c15 */
	CHECK_EQ_U64(hashindex_fibonacci(1, 24), 0x9e3779);
	CHECK_EQ_U64(hashindex_fibonacci(1, 32), 0x9e3779b9);
	CHECK_EQ_U64(hashindex_fibonacci(1, 64), 0x9e3779b97f4a7c15ull);
	CHECK_EQ_U64(hashindex_fibonacci(2, 32), 0x3c6ef372); /* 2 * ... wraps past 2^64 */
	CHECK_EQ_U64(hashindex_fibonacci(0, 32), 0);
	CHECK_EQ_U64(hashindex_fibonacci(0x401000, 24), (0x401000 * 0x9e3779b97f4a7c15ull) >> 40);
	CHECK(hashindex_fibonacci(0x401000, 32) != hashindex_fibonacci(0x401010, 32)); /* aligned addresses differ */
}

#define CLEAR_ITEMS 1000u

/* The items are the keys themselves. */
static bool key_is_item(const void *ctx, uint32_t item, const void *key)
{
	(void)ctx;
	return item == *(const uint32_t *)key;
}

/* Puts key when new; returns whether it was new, false when memory ran out. */
static bool put_key(struct hashindex *x, uint32_t key)
{
	uint32_t slot;

	if (hashindex_reserve(x))
		return false;
	slot = hashindex_slot(x, hashindex_u64(key), key_is_item, NULL, &key);
	if (x->val[slot])
		return false;
	hashindex_put(x, slot, hashindex_u64(key), key);
	return true;
}

static void test_clear_refill(void)
{
	struct hashindex x = { 0 };
	uint32_t i, cap, bad = 0;
	const uint32_t *val;

	hashindex_clear(&x); /* an empty index, no memory */
	CHECK(x.cap == 0 && x.n == 0 && !x.val);
	for (i = 0; i < CLEAR_ITEMS; i++)
		bad += !put_key(&x, i * 3);
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(x.n, CLEAR_ITEMS);
	cap = x.cap;
	val = x.val;
	hashindex_clear(&x);
	CHECK_EQ_U64(x.n, 0);
	CHECK_EQ_U64(x.cap, cap); /* the memory kept */
	CHECK(x.val == val);
	for (i = 0, bad = 0; i < cap; i++)
		bad += x.val[i] != 0;
	CHECK_EQ_U64(bad, 0);
	for (i = 0, bad = 0; i < CLEAR_ITEMS; i++) {
		uint32_t k = i * 3;

		bad += hashindex_get(&x, hashindex_u64(k), key_is_item, NULL, &k) != -1;
	}
	CHECK_EQ_U64(bad, 0); /* nothing found */
	/* filled again: the same keys are new, and found */
	for (i = 0, bad = 0; i < CLEAR_ITEMS; i++)
		bad += !put_key(&x, i * 3);
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(x.n, CLEAR_ITEMS);
	CHECK_EQ_U64(x.cap, cap); /* no growth: it had the room */
	for (i = 0, bad = 0; i < CLEAR_ITEMS; i++) {
		uint32_t k = i * 3;

		bad += hashindex_get(&x, hashindex_u64(k), key_is_item, NULL, &k) != (int64_t)k;
		k++;
		bad += hashindex_get(&x, hashindex_u64(k), key_is_item, NULL, &k) != -1;
	}
	CHECK_EQ_U64(bad, 0);
	hashindex_release(&x);
}

int main(void)
{
	test_grow();
	test_collisions();
	test_slot_order();
	test_clear();
	test_clear_refill();
	test_hashes();
	return check_summary();
}
