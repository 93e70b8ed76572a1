/* Unit test of util/hashindex's later functions: hashindex_clear forgets
 * every entry, keeps the memory, and the index fills again as new. */
#include <stdbool.h>
#include <stdint.h>

#include "host/lib/util/hashindex.h"
#include "tests/unit/check.h"

#define ITEMS 1000u

/* The items are the keys themselves. */
static bool same(const void *ctx, uint32_t item, const void *key)
{
	(void)ctx;
	return item == *(const uint32_t *)key;
}

/* Puts key when new; returns whether it was new, false when memory ran out. */
static bool put(struct hashindex *x, uint32_t key)
{
	uint32_t slot;

	if (hashindex_reserve(x))
		return false;
	slot = hashindex_slot(x, hashindex_u64(key), same, NULL, &key);
	if (x->val[slot])
		return false;
	hashindex_put(x, slot, hashindex_u64(key), key);
	return true;
}

static void test_clear(void)
{
	struct hashindex x = { 0 };
	uint32_t i, cap, bad = 0;
	const uint32_t *val;

	hashindex_clear(&x); /* an empty index, no memory */
	CHECK(x.cap == 0 && x.n == 0 && !x.val);
	for (i = 0; i < ITEMS; i++)
		bad += !put(&x, i * 3);
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(x.n, ITEMS);
	cap = x.cap;
	val = x.val;
	hashindex_clear(&x);
	CHECK_EQ_U64(x.n, 0);
	CHECK_EQ_U64(x.cap, cap); /* the memory kept */
	CHECK(x.val == val);
	for (i = 0, bad = 0; i < cap; i++)
		bad += x.val[i] != 0;
	CHECK_EQ_U64(bad, 0);
	for (i = 0, bad = 0; i < ITEMS; i++) {
		uint32_t k = i * 3;

		bad += hashindex_get(&x, hashindex_u64(k), same, NULL, &k) != -1;
	}
	CHECK_EQ_U64(bad, 0); /* nothing found */
	/* filled again: the same keys are new, and found */
	for (i = 0, bad = 0; i < ITEMS; i++)
		bad += !put(&x, i * 3);
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(x.n, ITEMS);
	CHECK_EQ_U64(x.cap, cap); /* no growth: it had the room */
	for (i = 0, bad = 0; i < ITEMS; i++) {
		uint32_t k = i * 3;

		bad += hashindex_get(&x, hashindex_u64(k), same, NULL, &k) != (int64_t)k;
		k++;
		bad += hashindex_get(&x, hashindex_u64(k), same, NULL, &k) != -1;
	}
	CHECK_EQ_U64(bad, 0);
	hashindex_release(&x);
}

int main(void)
{
	test_clear();
	return check_summary();
}
