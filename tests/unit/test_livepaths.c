/* Unit test of the live view's call-path tree: paths merged over threads,
 * inclusive and self time, frames inherited across a fork, the node limit
 * and what it folds, calls repeated and paths found again.  No symbols:
 * functions are named by address. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/filter.h"
#include "host/lib/live/paths.h"
#include "host/lib/trace/walk.h"
#include "tests/unit/check.h"

static const struct livepaths_row *find(const struct livepaths_rows *rows, const char *path)
{
	size_t i;

	for (i = 0; i < rows->n; i++)
		if (!strcmp(rows->row[i].path, path))
			return &rows->row[i];
	return NULL;
}

/* Whether the rows have path with these calls and total time. */
static bool row_is(const struct livepaths_rows *rows, const char *path, uint64_t calls, uint64_t total_ns)
{
	const struct livepaths_row *r = find(rows, path);

	return r && r->calls == calls && r->total_ns == total_ns;
}

/* Two threads of one image run a > b; the first also a > c. */
static void test_merge(struct walk *w)
{
	struct walk_stream s0 = { .image = 1, .index = 0 }, s1 = { .image = 1, .index = 1 };
	struct livepaths p;
	struct livepaths_rows rows;
	const struct livepaths_row *r;

	livepaths_init(&p, 0);
	livepaths_entry(&p, &s0, 0, 0xa, 0);
	livepaths_entry(&p, &s0, 1, 0xb, 0);
	livepaths_exit(&p, &s0, 1, 10, 0);
	livepaths_entry(&p, &s1, 0, 0xa, 0);
	livepaths_entry(&p, &s0, 1, 0xc, 0);
	livepaths_exit(&p, &s0, 1, 5, 0);
	livepaths_entry(&p, &s1, 1, 0xb, 0);
	livepaths_exit(&p, &s1, 1, 7, 0);
	livepaths_exit(&p, &s0, 0, 20, 0);
	livepaths_exit(&p, &s1, 0, 8, 0);
	CHECK_EQ_U64(p.n, 3);
	CHECK_EQ_U64(p.folded, 0);
	CHECK(!livepaths_collect(&p, w, &rows));
	CHECK_EQ_U64(rows.n, 3);
	r = find(&rows, "0xa");
	CHECK(r && r->calls == 2 && r->total_ns == 28 && r->self_ns == 6 && r->depth == 0);
	r = find(&rows, "0xa > 0xb");
	CHECK(r && r->calls == 2 && r->total_ns == 17 && r->self_ns == 17 && r->depth == 1);
	r = find(&rows, "0xa > 0xc");
	CHECK(r && r->calls == 1 && r->total_ns == 5 && r->self_ns == 5);
	/* hottest first: most self time */
	CHECK(rows.n == 3 && !strcmp(rows.row[0].path, "0xa > 0xb") && !strcmp(rows.row[1].path, "0xa") &&
	      !strcmp(rows.row[2].path, "0xa > 0xc"));
	livepaths_rows_release(&rows);
	livepaths_release(&p);
}

/* The same function in two images (a forked child's) is one path by name;
 * frames inherited from the parent give the path but count no call. */
static void test_images_and_fork(struct walk *w)
{
	struct walk_stream parent = { .image = 1, .index = 0 }, child = { .image = 2, .index = 1 };
	struct livepaths p;
	struct livepaths_rows rows;
	const struct livepaths_row *r;

	livepaths_init(&p, 0);
	livepaths_entry(&p, &parent, 0, 0xa, 0);
	livepaths_entry(&p, &child, 0, 0xa, FILTER_INHERITED);
	livepaths_entry(&p, &child, 1, 0xb, 0);
	livepaths_exit(&p, &child, 1, 4, 0);
	livepaths_exit(&p, &child, 0, 9, FILTER_INHERITED);
	livepaths_exit(&p, &parent, 0, 30, 0);
	CHECK_EQ_U64(p.n, 3); /* (1, a), (2, a), (2, a > b) */
	CHECK(!livepaths_collect(&p, w, &rows));
	CHECK_EQ_U64(rows.n, 2);
	r = find(&rows, "0xa");
	CHECK(r && r->calls == 1 && r->total_ns == 30);
	r = find(&rows, "0xa > 0xb");
	CHECK(r && r->calls == 1 && r->total_ns == 4);
	livepaths_rows_release(&rows);
	livepaths_release(&p);
}

/* With room for two paths, the third and everything under it is folded. */
static void test_limit(struct walk *w)
{
	struct walk_stream s = { .image = 1, .index = 0 };
	struct livepaths p;
	struct livepaths_rows rows;
	int i;

	livepaths_init(&p, 2);
	livepaths_entry(&p, &s, 0, 0xa, 0);
	for (i = 0; i < 3; i++) {
		livepaths_entry(&p, &s, 1, 0xb, 0);
		livepaths_exit(&p, &s, 1, 1, 0);
		livepaths_entry(&p, &s, 1, 0xc, 0);
		livepaths_entry(&p, &s, 2, 0xd, 0);
		livepaths_exit(&p, &s, 2, 1, 0);
		livepaths_exit(&p, &s, 1, 2, 0);
	}
	livepaths_exit(&p, &s, 0, 100, 0);
	CHECK_EQ_U64(p.n, 2);
	CHECK_EQ_U64(p.folded, 6); /* c and c > d, three times */
	CHECK(!livepaths_collect(&p, w, &rows));
	CHECK_EQ_U64(rows.n, 2);
	CHECK(find(&rows, "0xa") && find(&rows, "0xa")->self_ns == 97); /* c's time stays in a */
	livepaths_rows_release(&rows);
	livepaths_release(&p);
}

/* Calls repeated in a loop, the same function under another parent, and
 * more paths than the first index holds, each found again: every path
 * counted on its own node. */
static void test_repeats(struct walk *w)
{
	struct walk_stream s = { .image = 1, .index = 0 };
	struct livepaths p;
	struct livepaths_rows rows;
	uint32_t i, round, bad = 0;
	char name[64];

	livepaths_init(&p, 0);
	livepaths_entry(&p, &s, 0, 0xa, 0);
	for (i = 0; i < 4; i++) { /* a > b, a > c, a > b, a > b */
		livepaths_entry(&p, &s, 1, i == 1 ? 0xc : 0xb, 0);
		livepaths_exit(&p, &s, 1, 1, 0);
	}
	livepaths_exit(&p, &s, 0, 10, 0);
	/* e > b right after a > b (that came after a > b) at the same
	 * depth: another path */
	livepaths_entry(&p, &s, 0, 0xe, 0);
	for (i = 0; i < 2; i++) {
		livepaths_entry(&p, &s, 1, 0xb, 0);
		livepaths_exit(&p, &s, 1, 3, 0);
	}
	livepaths_exit(&p, &s, 0, 10, 0);
	CHECK_EQ_U64(p.n, 5);
	/* 1000 paths under f, twice */
	livepaths_entry(&p, &s, 0, 0xf, 0);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 1000; i++) {
			livepaths_entry(&p, &s, 1, 0x1000 + 16 * i, 0);
			livepaths_exit(&p, &s, 1, 1, 0);
		}
	}
	livepaths_exit(&p, &s, 0, 5000, 0);
	CHECK_EQ_U64(p.n, 1006);
	CHECK(!p.folded && !livepaths_collect(&p, w, &rows) && rows.n == 1006);
	CHECK(row_is(&rows, "0xa > 0xb", 3, 3));
	CHECK(row_is(&rows, "0xa > 0xc", 1, 1));
	CHECK(row_is(&rows, "0xe > 0xb", 2, 6));
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "0xf > 0x%x", 0x1000 + 16 * i);
		bad += !row_is(&rows, name, 2, 2) || find(&rows, name)->depth != 1;
	}
	CHECK_EQ_U64(bad, 0);
	livepaths_rows_release(&rows);
	livepaths_release(&p);
}

/* A path deeper than LIVEPATHS_NAME_MAX keeps its callee end. */
static void test_long_path(struct walk *w)
{
	struct walk_stream s = { .image = 1, .index = 0 };
	struct livepaths p;
	struct livepaths_rows rows;
	size_t i, deepest = 0;
	uint32_t d;

	livepaths_init(&p, 0);
	for (d = 0; d < 2000; d++)
		livepaths_entry(&p, &s, d, 0x1000 + d, 0);
	CHECK(!livepaths_collect(&p, w, &rows));
	CHECK_EQ_U64(rows.n, 2000);
	for (i = 0; i < rows.n; i++) {
		CHECK(strlen(rows.row[i].path) < LIVEPATHS_NAME_MAX);
		if (rows.row[i].depth > rows.row[deepest].depth)
			deepest = i;
	}
	CHECK(!strncmp(rows.row[deepest].path, "... > ", 6));
	CHECK(strstr(rows.row[deepest].path, "0x17cf") != NULL); /* the last callee */
	livepaths_rows_release(&rows);
	livepaths_release(&p);
}

int main(void)
{
	struct walk w = { 0 };
	char err[256];

	if (walk_open(&w, NULL, NULL, err, sizeof(err))) {
		printf("FAIL cannot open a walk: %s\n", err);
		return 1;
	}
	test_merge(&w);
	test_images_and_fork(&w);
	test_limit(&w);
	test_repeats(&w);
	test_long_path(&w);
	walk_release(&w);
	return check_summary();
}
