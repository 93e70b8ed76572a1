/* Unit test of analysis/pathmerge: paths merged by key under their
 * parent, children in order of arrival or newest first, the node limit,
 * and a reset that starts over. */
#include <stdbool.h>
#include <stdio.h>

#include "host/lib/analysis/pathmerge.h"
#include "tests/unit/check.h"

/* The keys of parent's children in link order, as "k,k,k" (static). */
static const char *children(const struct pathmerge *m, uint32_t parent)
{
	static char out[256];
	size_t len = 0;
	uint32_t c;

	out[0] = '\0';
	for (c = m->nodes[parent].first_child; c && len < sizeof(out) - 32; c = m->nodes[c].next_sibling)
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%llu", len ? "," : "",
		                        (unsigned long long)m->nodes[c].key);
	return out;
}

static void test_merge(unsigned flags, const char *want_root)
{
	struct pathmerge m;
	bool added;
	uint32_t a, b, a2, b2, c;

	if (!CHECK(pathmerge_init(&m, 1u << 20, flags) == 0))
		return;
	CHECK_EQ_U64(m.n, 1);
	a = pathmerge_child(&m, 0, 7, &added);
	CHECK(a == 1 && added);
	b = pathmerge_child(&m, a, 9, &added);
	CHECK(b == 2 && added);
	/* the same path again is the same node */
	a2 = pathmerge_child(&m, 0, 7, &added);
	CHECK(a2 == a && !added);
	b2 = pathmerge_child(&m, a2, 9, &added);
	CHECK(b2 == b && !added);
	/* the same key under another parent is another node */
	c = pathmerge_child(&m, 0, 9, &added);
	CHECK(c == 3 && added);
	CHECK(pathmerge_child(&m, c, 7, &added) == 4 && added);
	CHECK(pathmerge_child(&m, 0, 1ull << 40, &added) == 5 && added);
	CHECK_EQ_U64(m.n, 6);
	CHECK_STR(children(&m, 0), want_root);
	CHECK_EQ_U64(m.nodes[0].nchildren, 3);
	CHECK_EQ_U64(m.nodes[b].parent, a);
	CHECK_EQ_U64(m.nodes[4].parent, c);
	CHECK_STR(children(&m, a), "9");
	/* many children of one parent: every one found again */
	for (c = 0; c < 5000; c++)
		pathmerge_child(&m, b, 100 + c, &added);
	CHECK_EQ_U64(m.n, 5006);
	for (c = 0; c < 5000; c++)
		if (pathmerge_child(&m, b, 100 + c, &added) != 6 + c || added)
			break;
	CHECK_EQ_U64(c, 5000);
	/* a reset starts over from the root */
	CHECK(pathmerge_reset(&m) == 0);
	CHECK_EQ_U64(m.n, 1);
	CHECK_EQ_U64(m.nodes[0].first_child, 0);
	CHECK(pathmerge_child(&m, 0, 9, &added) == 1 && added);
	CHECK(pathmerge_child(&m, 0, 7, &added) == 2 && added);
	CHECK(pathmerge_child(&m, 0, 9, &added) == 1 && !added);
	pathmerge_release(&m);
	pathmerge_release(&m); /* a released tree is zeroed */
}

static void test_limit(void)
{
	struct pathmerge m;
	bool added = true;
	uint32_t i;

	if (!CHECK(pathmerge_init(&m, 2048, 0) == 0))
		return;
	for (i = 1; i < 2048; i++)
		if (pathmerge_child(&m, 0, i, &added) != i)
			break;
	CHECK_EQ_U64(i, 2048);
	CHECK_EQ_U64(pathmerge_child(&m, 0, 5000, &added), 0);
	CHECK(!added);
	CHECK_EQ_U64(pathmerge_child(&m, 0, 17, &added), 17); /* still found */
	CHECK_EQ_U64(m.n, 2048);
	pathmerge_release(&m);
}

int main(void)
{
	test_merge(0, "7,9,1099511627776");
	test_merge(PATHMERGE_NEWEST_FIRST, "1099511627776,9,7");
	test_limit();
	return check_summary();
}
