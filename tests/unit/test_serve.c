/* Unit test of the web UI server's model: a synthetic trace of known
 * nesting, read in one pass; the call tree, the flame graph, the timeline's
 * chunk index (open calls at chunk boundaries), exact and aggregate windows,
 * the answers of the API, and the index file (the same answers from it;
 * damage and staleness make the model read the trace again).  Also the
 * interned names, and the timeline of a live session fed chunk by chunk. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/encoder.h"
#include "host/lib/live/save.h"
#include "host/lib/serve/api.h"
#include "host/lib/serve/index.h"
#include "host/lib/serve/model.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

#define MAIN 0x401000u
#define FA 0x402000u
#define FB 0x403000u
#define LOOPS 3000u /* a -> b pairs under main: several chunks */
#define BASE_NS 1000000u
#define CHUNK_TARGET 1024u

static char dir[256];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void flush(int fd, struct encoder *e)
{
	const uint8_t *p;
	size_t n = encoder_take(e, &p);

	if (n && chunk_write_fd(fd, LP_CHUNK_EVENTS, p, (uint32_t)n))
		die("chunk_write_fd");
}

/* main { LOOPS x (a { b }) }, with 7 events lost in the middle; then an
 * END chunk. */
static void write_trace(void)
{
	struct encoder *e = malloc(sizeof(*e));
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	static const char meta[] = "layerprof=test\ncommand=synthetic\n";
	static const char end[] = "events=1\n";
	char path[512];
	uint64_t t = BASE_NS;
	uint32_t i;
	int fd;

	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || !e)
		die("open");
	trace_header_put(hdr);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    chunk_write_fd(fd, LP_CHUNK_META, meta, sizeof(meta) - 1))
		die("write");
	encoder_init(e, 1, 10, 10);
	encoder_set_target(e, CHUNK_TARGET);
	encoder_entry(e, t, MAIN);
	for (i = 0; i < LOOPS; i++) {
		encoder_entry(e, t += 100, FA);
		encoder_entry(e, t += 10, FB);
		encoder_exit(e, t += 30, FB);
		encoder_exit(e, t += 10, FA);
		if (i == LOOPS / 2)
			encoder_lost(e, t += 1, 7);
		if (encoder_full(e))
			flush(fd, e);
	}
	encoder_exit(e, t += 100, MAIN);
	flush(fd, e);
	if (chunk_write_fd(fd, LP_CHUNK_END, end, sizeof(end) - 1))
		die("write");
	close(fd);
	free(e);
}

/* ------------------------------------------------------------ answers */

struct args {
	const char *keys[4], *vals[4];
};

static const char *arg_get(void *ctx, const char *key)
{
	const struct args *a = ctx;
	int i;

	for (i = 0; i < 4 && a->keys[i]; i++)
		if (!strcmp(a->keys[i], key))
			return a->vals[i];
	return NULL;
}

/* The answer to GET /api/<what>?k=v...; the caller frees it. */
static char *answer(struct servemodel *m, const char *what, int *status, const char *k0, const char *v0, const char *k1,
                    const char *v1)
{
	struct args a = { { k0, k1 }, { v0, v1 } };
	struct serve_query q = { arg_get, &a };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		die("open_memstream");
	*status = serveapi_get(m, what, &q, f);
	fclose(f);
	return buf;
}

static const struct calltree_node *child_named(const struct calltree_stream *t, uint32_t parent, uint64_t addr)
{
	uint32_t c;

	for (c = t->nodes[parent].first_child; c; c = t->nodes[c].next_sibling)
		if (t->nodes[c].addr == addr)
			return &t->nodes[c];
	return NULL;
}

static void test_pass(struct servemodel *m)
{
	const struct calltree_stream *t = calltree_stream(&m->tree, 0);
	const struct calltree_node *nmain, *na, *nb;
	const struct timeline_stream *ts;
	uint32_t i, open_main = 0;

	CHECK_EQ_U64(m->info.nthreads, 1);
	CHECK_EQ_U64(m->info.events, 2 + 4 * LOOPS + 1);
	CHECK_EQ_U64(m->info.lost, 7);
	CHECK(m->info.complete);
	if (!CHECK(t != NULL))
		return;
	nmain = child_named(t, 0, MAIN);
	if (!CHECK(nmain != NULL))
		return;
	na = child_named(t, (uint32_t)(nmain - t->nodes), FA);
	if (!CHECK(na != NULL))
		return;
	nb = child_named(t, (uint32_t)(na - t->nodes), FB);
	if (!CHECK(nb != NULL))
		return;
	CHECK_EQ_U64(nmain->calls, 1);
	CHECK_EQ_U64(na->calls, LOOPS);
	CHECK_EQ_U64(nb->calls, LOOPS);
	CHECK_EQ_U64(nb->total_ns, 30ull * LOOPS);
	CHECK_EQ_U64(na->self_ns, 20ull * LOOPS);
	CHECK_EQ_U64(t->n, 4);
	/* the flame graph: all -> main -> a -> b, totals as the tree's */
	CHECK_EQ_U64(m->flame.paths.n, 4);
	CHECK_EQ_U64(m->flame.nodes[0].total_ns, nmain->total_ns);
	/* the chunk index: several chunks, main open at the later ones */
	ts = m->tl.streams[0];
	if (!CHECK(ts != NULL) || !CHECK(ts->nchunks > 3))
		return;
	CHECK_EQ_U64(ts->chunks[0].depth, 0);
	for (i = 1; i < ts->nchunks; i++) {
		const struct timeline_chunk *c = &ts->chunks[i];

		CHECK(c->first_ns >= ts->chunks[i - 1].last_ns);
		if (c->depth >= 1 && c->nsnap >= 1 && m->tl.snap_frames[c->snap].addr == MAIN &&
		    m->tl.snap_frames[c->snap].entry_ns == BASE_NS)
			open_main++;
	}
	CHECK_EQ_U64(open_main, ts->nchunks - 1);
	CHECK_EQ_U64(ts->nlost, 1);
	CHECK(ts->level[0] != NULL && ts->level[1] != NULL && ts->level[2] != NULL);
}

static void test_answers(struct servemodel *m)
{
	char *s, t0[32], t1[32];
	int st;

	s = answer(m, "summary", &st, NULL, NULL, NULL, NULL);
	CHECK_EQ_U64(st, 200);
	CHECK(strstr(s, "\"lost_events\":7") != NULL);
	CHECK(strstr(s, "\"command\":\"synthetic\"") != NULL);
	free(s);
	s = answer(m, "profile", &st, "sort", "calls", NULL, NULL);
	CHECK_EQ_U64(st, 200);
	CHECK(strstr(s, "\"calls\":3000") != NULL);
	free(s);
	s = answer(m, "profile", &st, "sort", "nonsense", NULL, NULL);
	CHECK_EQ_U64(st, 400);
	free(s);
	s = answer(m, "tree", &st, "thread", "0", "node", "0");
	CHECK_EQ_U64(st, 200);
	CHECK(strstr(s, "\"calls\":1,") != NULL);
	free(s);
	s = answer(m, "tree", &st, "thread", "0", "node", "99");
	CHECK_EQ_U64(st, 404);
	free(s);
	s = answer(m, "tree", &st, "thread", "7", "node", "0");
	CHECK_EQ_U64(st, 404);
	free(s);
	s = answer(m, "nothing", &st, NULL, NULL, NULL, NULL);
	CHECK_EQ_U64(st, 404);
	free(s);
	/* a window of 2 us in the middle, decoded: main runs through it, open
	 * on both sides; b's calls there are whole */
	snprintf(t0, sizeof(t0), "%u", 150u * (LOOPS / 2));
	snprintf(t1, sizeof(t1), "%u", 150u * (LOOPS / 2) + 2000);
	{
		struct args a = { { "thread", "t0", "t1", "px" }, { "0", t0, t1, "2000" } };
		struct serve_query q = { arg_get, &a };
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		st = serveapi_get(m, "timeline", &q, f);
		fclose(f);
		CHECK_EQ_U64(st, 200);
		CHECK(strstr(buf, "\"mode\":\"exact\"") != NULL);
		/* main: depth 0 from 0 (the trace's start), still running (flag 4) */
		CHECK(strstr(buf, "[0,0,") != NULL);
		CHECK(strstr(buf, ",1,4,1000]") != NULL);
		/* a b call of 30 ns, whole (flags 0), at depth 2 */
		CHECK(strstr(buf, "[2,") != NULL);
		free(buf);
	}
	/* the same thread from the grid when the window holds too many events */
	m->tl.decode_max = 10;
	{
		struct args a = { { "thread", "px" }, { "0", "50" } };
		struct serve_query q = { arg_get, &a };
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		st = serveapi_get(m, "timeline", &q, f);
		fclose(f);
		CHECK_EQ_U64(st, 200);
		CHECK(strstr(buf, "\"mode\":\"aggregate\"") != NULL);
		/* main fills depth 0; the losses are marked */
		CHECK(strstr(buf, "[0,0,") != NULL);
		CHECK(strstr(buf, ",7]]") != NULL);
		free(buf);
	}
	m->tl.decode_max = TIMELINE_DECODE_EVENTS_MAX;
}

/* The answers the page asks for, for comparing two models. */
static char *all_answers(struct servemodel *m)
{
	static const char *const what[][3] = {
		{ "profile", "sort", "name" }, { "tree", "node", "0" },    { "tree", "node", "1" },
		{ "tree", "node", "2" },       { "flame", "min", "0" },    { "timeline", "px", "300" },
		{ "search", "q", "0x40" },     { "syscalls", NULL, NULL },
	};
	char *all = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&all, &len);

	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		int st;
		char *s = answer(m, what[i][0], &st, "thread", "0", what[i][1], what[i][2]);

		fprintf(f, "%s %d %s\n", what[i][0], st, s);
		free(s);
	}
	fclose(f);
	return all;
}

static void test_index(void)
{
	struct servemodel a, b;
	char err[512], path[512], *x, *y;
	struct stat st;
	int r, fd;

	r = servemodel_load(&a, dir, 0, err, sizeof(err));
	if (!CHECK_EQ_U64(r, 0))
		return;
	CHECK(!a.from_index);
	snprintf(path, sizeof(path), "%s/%s", dir, SERVEINDEX_FILE);
	CHECK(!stat(path, &st));
	r = servemodel_load(&b, dir, 0, err, sizeof(err));
	if (CHECK_EQ_U64(r, 0) && CHECK(b.from_index)) {
		x = all_answers(&a);
		y = all_answers(&b);
		CHECK_STR(y, x);
		free(x);
		free(y);
		test_answers(&b);
	}
	servemodel_release(&b);
	servemodel_release(&a);

	/* a flipped byte: the checksum fails, the trace is read again */
	fd = open(path, O_RDWR);
	if (fd >= 0) {
		uint8_t c;

		if (pread(fd, &c, 1, 100) == 1) {
			c ^= 0x10;
			if (pwrite(fd, &c, 1, 100) != 1)
				die("pwrite");
		}
		close(fd);
	}
	r = servemodel_load(&b, dir, SERVEMODEL_NO_INDEX, err, sizeof(err));
	CHECK_EQ_U64(r, 0);
	CHECK(!b.from_index);
	servemodel_release(&b);
	r = servemodel_load(&b, dir, 0, err, sizeof(err));
	CHECK_EQ_U64(r, 0);
	CHECK(!b.from_index);
	CHECK(strstr(b.index_note, "damaged") != NULL);
	test_pass(&b);
	servemodel_release(&b);
	/* that read wrote a good index again; a newer data file makes it stale */
	r = servemodel_load(&b, dir, 0, err, sizeof(err));
	CHECK(r == 0 && b.from_index);
	servemodel_release(&b);
	snprintf(path, sizeof(path), "%s/data", dir);
	{
		struct timespec ts[2] = { { 0, UTIME_NOW }, { 12345, 0 } };

		utimensat(AT_FDCWD, path, ts, 0);
	}
	r = servemodel_load(&b, dir, 0, err, sizeof(err));
	CHECK(r == 0 && !b.from_index);
	CHECK(strstr(b.index_note, "older trace") != NULL);
	servemodel_release(&b);
}

static void test_names(void)
{
	struct names n;
	uint32_t a, b, i;
	char buf[32];

	names_init(&n);
	a = names_intern(&n, "alpha");
	b = names_intern(&n, "Beta::gamma");
	CHECK_EQ_U64(names_intern(&n, "alpha"), a);
	CHECK(a != b);
	CHECK_STR(names_get(&n, b), "Beta::gamma");
	CHECK_STR(names_get(&n, 999), "");
	CHECK(names_match(&n, b, "a::g"));
	CHECK(!names_match(&n, a, "beta"));
	for (i = 0; i < 5000; i++) {
		snprintf(buf, sizeof(buf), "f%u", i);
		names_intern(&n, buf);
	}
	CHECK_EQ_U64(names_intern(&n, "f4321"), 2 + 4321);
	CHECK_STR(names_get(&n, a), "alpha");
	CHECK_EQ_U64(names_len(&n, a), 5);
	CHECK_EQ_U64(names_len(&n, b), 11);
	CHECK_EQ_U64(names_len(&n, 2 + 4321), 5);
	CHECK_EQ_U64(names_len(&n, 2 + 4999), 5); /* the last one */
	CHECK_EQ_U64(names_len(&n, 999999), 0);
	names_release(&n);
	/* a bounded table: names past the bound are refused, known ones found */
	names_init_max(&n, 3);
	CHECK_EQ_U64(names_intern(&n, ""), 0);
	CHECK_EQ_U64(names_len(&n, 0), 0);
	CHECK_EQ_U64(names_intern(&n, "b"), 1);
	CHECK_EQ_U64(names_intern(&n, "c"), 2);
	CHECK_EQ_U64(names_intern(&n, "d"), NAMES_NONE);
	CHECK_EQ_U64(names_intern(&n, "b"), 1);
	CHECK_EQ_U64(n.n, 3);
	names_release(&n);
	/* a zeroed table holds names too */
	memset(&n, 0, sizeof(n));
	CHECK_EQ_U64(names_intern(&n, "x"), 0);
	CHECK_STR(names_get(&n, 0), "x");
	names_release(&n);
}

/* ------------------------------------------------------------ a live session */

/* A window of the live model's thread 0, [t0, t1) ns from its start;
 * decode_max set for it.  The caller frees the answer. */
static char *live_window(struct servemodel *m, uint64_t t0, uint64_t t1, uint64_t decode_max)
{
	char a0[32], a1[32], *s;
	struct args a = { { "thread", "t0", "t1", "px" }, { "0", a0, a1, "2000" } };
	struct serve_query q = { arg_get, &a };
	size_t len = 0;
	FILE *f = NULL;
	int st;

	snprintf(a0, sizeof(a0), "%llu", (unsigned long long)t0);
	snprintf(a1, sizeof(a1), "%llu", (unsigned long long)t1);
	m->tl.decode_max = decode_max;
	s = NULL;
	f = open_memstream(&s, &len);
	if (!f)
		die("open_memstream");
	st = serveapi_get(m, "timeline", &q, f);
	fclose(f);
	m->tl.decode_max = TIMELINE_DECODE_EVENTS_MAX;
	CHECK_EQ_U64(st, 200);
	return s;
}

/* One received chunk as a live session takes it: saved (or kept), then fed. */
static void live_chunk(struct livesave *sv, struct walk *w, uint8_t type, const void *payload, size_t len)
{
	uint8_t *c = malloc(LP_CHUNK_HEADER_SIZE + len);

	if (!c)
		die("malloc");
	chunk_header_put(c, type, payload, (uint32_t)len);
	memcpy(c + LP_CHUNK_HEADER_SIZE, payload, len);
	livesave_chunk(sv, c, LP_CHUNK_HEADER_SIZE + len);
	CHECK_EQ_U64(walk_feed(w, type, payload, len), 0);
	free(c);
}

static bool has(const char *s, const char *fmt, unsigned long long v)
{
	char want[64];

	snprintf(want, sizeof(want), fmt, v);
	return strstr(s, want) != NULL;
}

/* The synthetic program fed as a live session in chunks: half way, main
 * runs on (drawn open to the newest event, exact from the saved trace or
 * from the grid); with an index of 4 chunks, the oldest windows come from
 * the grid; after the end, main has ended. */
static void test_live(bool save)
{
	static const char meta[] = "layerprof=test\ncommand=synthetic\n";
	struct encoder *e = malloc(sizeof(*e));
	struct servemodel m;
	struct walk w;
	struct profile prof;
	struct sysstats sys;
	struct walk_ops ops = { 0 };
	struct livesave sv;
	char err[256], saved[300];
	uint64_t t = BASE_NS, span;
	uint32_t i, chunks = 0;
	char *s;

	if (!e || walk_open(&w, NULL, NULL, err, sizeof(err)))
		die("walk_open");
	profile_init(&prof);
	sysstats_init(&sys, &w, 0);
	livesave_init(&sv);
	CHECK_EQ_U64(servemodel_attach(&m, &w, &prof, &sys, &ops), 0);
	walk_begin(&w, &ops);
	servemodel_follow_save(&m, &sv);
	m.tl.chunks_max = 4;
	snprintf(saved, sizeof(saved), "%s-live", dir);
	if (save)
		CHECK_EQ_U64(livesave_open(&sv, saved), 0);
	live_chunk(&sv, &w, LP_CHUNK_META, meta, sizeof(meta) - 1);
	encoder_init(e, 1, 10, 10);
	encoder_set_target(e, CHUNK_TARGET);
	encoder_entry(e, t, MAIN);
	for (i = 0; i < LOOPS; i++) {
		encoder_entry(e, t += 100, FA);
		encoder_entry(e, t += 10, FB);
		encoder_exit(e, t += 30, FB);
		encoder_exit(e, t += 10, FA);
		if (encoder_full(e) || i == LOOPS / 2) {
			const uint8_t *p;
			size_t n = encoder_take(e, &p);

			live_chunk(&sv, &w, LP_CHUNK_EVENTS, p, n);
			chunks++;
		}
		if (i != LOOPS / 2)
			continue;
		/* half way: main is open, up to the newest event */
		CHECK(chunks > 8);
		span = w.last_ns - BASE_NS;
		CHECK_EQ_U64(span, t - BASE_NS);
		s = live_window(&m, span - 2000, span + 1, TIMELINE_DECODE_EVENTS_MAX);
		CHECK(strstr(s, save ? "\"mode\":\"exact\"" : "\"mode\":\"aggregate\"") != NULL);
		CHECK(strstr(s, "\"running\":true") != NULL);
		CHECK(has(s, "[0,0,%llu,", span));
		CHECK(strstr(s, ",1,4,1000]") != NULL);
		CHECK(strstr(s, "[2,") != NULL);
		free(s);
		/* the whole thread: from the grid (the index holds the newest
		 * chunks only), main open */
		s = live_window(&m, 0, span + 1, TIMELINE_DECODE_EVENTS_MAX);
		CHECK(strstr(s, "\"mode\":\"aggregate\"") != NULL);
		CHECK(has(s, "[0,0,%llu,", span));
		CHECK(strstr(s, ",1,4,1000]") != NULL);
		CHECK(strstr(s, "[1,") != NULL);
		free(s);
		CHECK(m.tl.nchunks_all <= 4);
	}
	encoder_exit(e, t += 100, MAIN);
	{
		const uint8_t *p;
		size_t n = encoder_take(e, &p);

		live_chunk(&sv, &w, LP_CHUNK_EVENTS, p, n);
	}
	walk_end(&w);
	span = t - BASE_NS;
	s = live_window(&m, span - 2000, span + 1, TIMELINE_DECODE_EVENTS_MAX);
	CHECK(strstr(s, save ? "\"mode\":\"exact\"" : "\"mode\":\"aggregate\"") != NULL);
	CHECK(strstr(s, "\"running\":false") != NULL);
	/* main whole when decoded; the grid's runs of it reach the end */
	CHECK(save ? has(s, "[0,0,%llu,0,1,0,1000]", span) : has(s, ",%llu,0,0,2,", span / 64 * 64 + 64));
	CHECK(strstr(s, ",4,") == NULL); /* nothing open */
	free(s);
	if (save) {
		char path[600];

		livesave_close(&sv, false, 0);
		snprintf(path, sizeof(path), "%s/data", saved);
		unlink(path);
		rmdir(saved);
	}
	servemodel_release(&m);
	livesave_release(&sv);
	sysstats_release(&sys);
	profile_release(&prof);
	walk_release(&w);
	free(e);
}

int main(void)
{
	struct servemodel m;
	char err[512];
	int r;

	snprintf(dir, sizeof(dir), "/tmp/lp-test-serve-%ld", (long)getpid());
	if (mkdir(dir, 0700))
		die("mkdir");
	write_trace();
	test_names();
	r = servemodel_load(&m, dir, SERVEMODEL_NO_INDEX, err, sizeof(err));
	if (CHECK_EQ_U64(r, 0)) {
		test_pass(&m);
		test_answers(&m);
	}
	servemodel_release(&m);
	test_index();
	test_live(true);
	test_live(false);
	{
		char path[512];

		snprintf(path, sizeof(path), "%s/data", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", dir, SERVEINDEX_FILE);
		unlink(path);
		rmdir(dir);
	}
	return check_summary();
}
