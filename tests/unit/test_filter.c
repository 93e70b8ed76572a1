/* Unit test of the filter stage: what a recording sink receives for given
 * entry/exit/longjmp streams, with and without filters. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "tests/unit/check.h"

/* One call the sink received. */
struct rec {
	bool entry;
	uint64_t ns, addr, entry_ns;
	uint32_t depth;
	unsigned flags;
};

struct recorder {
	struct rec *recs;
	size_t n, cap;
	/* what sink.lost said: events in all, how often, when last */
	uint64_t lost, lost_ns;
	unsigned lost_reports;
};

static void rec_push(struct recorder *r, const struct rec *x)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct rec *n = realloc(r->recs, cap * sizeof(*n));

		if (!n) {
			perror("realloc");
			exit(2);
		}
		r->recs = n;
		r->cap = cap;
	}
	r->recs[r->n++] = *x;
}

static void sink_entry(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct rec x = { true, ns, addr, 0, depth, flags };

	rec_push(ctx, &x);
}

static void sink_exit(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns, unsigned flags)
{
	struct rec x = { false, ns, addr, entry_ns, depth, flags };

	rec_push(ctx, &x);
}

static void sink_lost(void *ctx, uint64_t ns, uint64_t events)
{
	struct recorder *r = ctx;

	r->lost += events;
	r->lost_ns = ns;
	r->lost_reports++;
}

/* The records as text, one token each:
 *   +a@10/0     entry of a at 10, depth 0
 *   -a@20/0<10  exit of a at 20, depth 0, entered at 10
 * followed by "i" for FILTER_INHERITED and "u" for FILTER_UNFINISHED.
 * Addresses are small numbers printed in hex, so tests name them 0xa... */
static const char *rec_text(const struct recorder *r)
{
	static char buf[8192];
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < r->n && n < sizeof(buf) - 64; i++) {
		const struct rec *x = &r->recs[i];

		if (x->entry)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s+%llx@%llu/%u", n ? " " : "",
			                      (unsigned long long)x->addr, (unsigned long long)x->ns, x->depth);
		else
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s-%llx@%llu/%u<%llu", n ? " " : "",
			                      (unsigned long long)x->addr, (unsigned long long)x->ns, x->depth,
			                      (unsigned long long)x->entry_ns);
		if (x->flags & FILTER_INHERITED)
			buf[n++] = 'i';
		if (x->flags & FILTER_UNFINISHED)
			buf[n++] = 'u';
		buf[n] = 0;
	}
	return buf;
}

/* A stream with its sink and spec; the tests below each fill one. */
struct case_ {
	struct filter_spec spec;
	struct recorder rec;
	struct filter_stream fs;
};

static void case_init(struct case_ *c, const struct filter_spec *spec)
{
	struct filter_sink sink = { NULL, sink_entry, sink_exit, sink_lost };

	memset(c, 0, sizeof(*c));
	if (spec)
		c->spec = *spec;
	sink.ctx = &c->rec;
	if (filter_stream_init(&c->fs, &c->spec, &sink, 1)) {
		perror("filter_stream_init");
		exit(2);
	}
}

static void case_release(struct case_ *c)
{
	filter_stream_release(&c->fs);
	free(c->rec.recs);
}

/* Short names for the stream: E(c, 10, 0xa) enters a at 10. */
static void E(struct case_ *c, uint64_t ns, uint64_t addr)
{
	filter_entry(&c->fs, ns, addr);
}

static void X(struct case_ *c, uint64_t ns, uint64_t addr)
{
	filter_exit(&c->fs, ns, addr);
}

static void test_nesting(void)
{
	struct case_ c;

	case_init(&c, NULL);
	CHECK(filter_spec_is_empty(&c.spec));
	E(&c, 1, 0xa);
	E(&c, 2, 0xb);
	X(&c, 3, 0xb);
	E(&c, 4, 0xc);
	E(&c, 5, 0xd);
	X(&c, 6, 0xd);
	X(&c, 7, 0xc);
	X(&c, 8, 0xa);
	E(&c, 9, 0xe);
	X(&c, 10, 0xe);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 +b@2/1 -b@3/1<2 +c@4/1 +d@5/2 -d@6/2<5 -c@7/1<4 -a@8/0<1 "
	                            "+e@9/0 -e@10/0<9");
	CHECK_EQ_U64(c.fs.unmatched, 0);
	CHECK_EQ_U64(c.fs.depth, 0);
	case_release(&c);

	/* recursion: the exit closes the innermost frame of the function */
	case_init(&c, NULL);
	E(&c, 1, 0xa);
	E(&c, 2, 0xa);
	X(&c, 3, 0xa);
	X(&c, 4, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 +a@2/1 -a@3/1<2 -a@4/0<1");
	case_release(&c);
}

static void test_repair(void)
{
	struct case_ c;

	/* the exit of a with b and c still open: their exits were lost */
	case_init(&c, NULL);
	E(&c, 1, 0xa);
	E(&c, 2, 0xb);
	E(&c, 3, 0xc);
	X(&c, 9, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 +b@2/1 +c@3/2 -c@9/2<3u -b@9/1<2u -a@9/0<1");
	CHECK_EQ_U64(c.fs.unmatched, 0);
	case_release(&c);

	/* an exit that matches nothing is left out and counted */
	case_init(&c, NULL);
	X(&c, 1, 0xf);
	E(&c, 2, 0xa);
	E(&c, 3, 0xb);
	X(&c, 4, 0xf);
	X(&c, 5, 0xb);
	X(&c, 6, 0xa);
	X(&c, 7, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@2/0 +b@3/1 -b@5/1<3 -a@6/0<2");
	CHECK_EQ_U64(c.fs.unmatched, 3);
	case_release(&c);

	/* longjmp from depth 5 back to depth 1 */
	case_init(&c, NULL);
	E(&c, 1, 0xa);
	E(&c, 2, 0xb);
	E(&c, 3, 0xc);
	E(&c, 4, 0xd);
	E(&c, 5, 0xe);
	filter_longjmp(&c.fs, 10, 1);
	CHECK_EQ_U64(c.fs.depth, 1);
	E(&c, 11, 0xf);
	X(&c, 12, 0xf);
	X(&c, 13, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 +b@2/1 +c@3/2 +d@4/3 +e@5/4 -e@10/4<5u -d@10/3<4u -c@10/2<3u -b@10/1<2u "
	                            "+f@11/1 -f@12/1<11 -a@13/0<1");
	case_release(&c);

	/* longjmp to a depth at or above the current one changes nothing */
	case_init(&c, NULL);
	E(&c, 1, 0xa);
	filter_longjmp(&c.fs, 2, 1);
	filter_longjmp(&c.fs, 3, 7);
	X(&c, 4, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 -a@4/0<1");
	case_release(&c);

	/* the end of the stream closes what is open, never before the last event */
	case_init(&c, NULL);
	E(&c, 1, 0xa);
	E(&c, 2, 0xb);
	E(&c, 3, 0xc);
	X(&c, 4, 0xc);
	filter_finish(&c.fs, 20);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 +b@2/1 +c@3/2 -c@4/2<3 -b@20/1<2u -a@20/0<1u");
	CHECK_EQ_U64(c.fs.depth, 0);
	case_release(&c);
	case_init(&c, NULL);
	E(&c, 5, 0xa);
	E(&c, 8, 0xb);
	filter_finish(&c.fs, 6);
	CHECK_STR(rec_text(&c.rec), "+a@5/0 +b@8/1 -b@8/1<8u -a@8/0<5u");
	case_release(&c);

	/* a forked child starts inside its parent's frames */
	case_init(&c, NULL);
	filter_inherit(&c.fs, 100, 0xa);
	filter_inherit(&c.fs, 100, 0xb);
	E(&c, 101, 0xc);
	X(&c, 102, 0xc);
	X(&c, 103, 0xb);
	filter_finish(&c.fs, 110);
	CHECK_STR(rec_text(&c.rec), "+a@100/0i +b@100/1i +c@101/2 -c@102/2<101 -b@103/1<100i -a@110/0<100iu");
	case_release(&c);
}

static uint64_t class_only, class_exclude, class_both;

/* One function for --only, one for --exclude, one matching both. */
static unsigned classify(void *ctx, uint32_t image, uint64_t addr)
{
	unsigned *calls = ctx;

	++*calls;
	if (image != 1)
		return 0;
	if (addr == class_only)
		return FILTER_ONLY;
	if (addr == class_exclude)
		return FILTER_EXCLUDE;
	if (addr == class_both)
		return FILTER_ONLY | FILTER_EXCLUDE;
	return 0;
}

static void test_only(void)
{
	struct filter_spec spec = { classify, NULL, true, 0, 0, 0 };
	unsigned calls = 0;
	struct case_ c;

	spec.ctx = &calls;
	class_only = 0xf;
	class_exclude = class_both = 0;
	case_init(&c, &spec);
	CHECK(!filter_spec_is_empty(&c.spec));
	E(&c, 1, 0x1); /* main */
	E(&c, 2, 0xa);
	X(&c, 3, 0xa);
	E(&c, 4, 0xf);
	E(&c, 5, 0xb);
	E(&c, 6, 0xc);
	X(&c, 7, 0xc);
	X(&c, 8, 0xb);
	E(&c, 9, 0xd);
	X(&c, 10, 0xd);
	X(&c, 11, 0xf);
	E(&c, 12, 0xe);
	E(&c, 13, 0xf); /* f again, deeper: depths still start at 0 */
	E(&c, 14, 0xf); /* and recursive */
	X(&c, 15, 0xf);
	X(&c, 16, 0xf);
	E(&c, 17, 0xb);
	X(&c, 18, 0xb);
	X(&c, 19, 0xe);
	X(&c, 20, 0x1);
	CHECK_STR(rec_text(&c.rec), "+f@4/0 +b@5/1 +c@6/2 -c@7/2<6 -b@8/1<5 +d@9/1 -d@10/1<9 -f@11/0<4 "
	                            "+f@13/0 +f@14/1 -f@15/1<14 -f@16/0<13");
	CHECK_EQ_U64(calls, 10);
	case_release(&c);
}

static void test_exclude(void)
{
	struct filter_spec spec = { classify, NULL, false, 0, 0, 0 };
	unsigned calls = 0;
	struct case_ c;

	spec.ctx = &calls;
	class_exclude = 0xe;
	class_only = 0xf;
	class_both = 0;
	/* without --only, an ONLY class changes nothing */
	case_init(&c, &spec);
	E(&c, 1, 0x1);
	E(&c, 2, 0xa);
	X(&c, 3, 0xa);
	E(&c, 4, 0xe);
	E(&c, 5, 0xb);
	E(&c, 6, 0xf); /* even a --only function vanishes inside it */
	X(&c, 7, 0xf);
	E(&c, 8, 0xe); /* as does the excluded function itself, again */
	X(&c, 9, 0xe);
	X(&c, 10, 0xb);
	X(&c, 11, 0xe);
	E(&c, 12, 0xc);
	X(&c, 13, 0xc);
	X(&c, 14, 0x1);
	CHECK_STR(rec_text(&c.rec), "+1@1/0 +a@2/1 -a@3/1<2 +c@12/1 -c@13/1<12 -1@14/0<1");
	/* every entry is classified, below the excluded frame too (where the
	 * answer changes nothing), so that unmatched patterns can be told */
	CHECK_EQ_U64(calls, 7);
	case_release(&c);

	/* excluded inside --only, and a function matching both is excluded */
	spec.has_only = true;
	class_both = 0xb;
	calls = 0;
	case_init(&c, &spec);
	E(&c, 1, 0xf);
	E(&c, 2, 0xa);
	E(&c, 3, 0xe);
	E(&c, 4, 0xc);
	X(&c, 5, 0xc);
	X(&c, 6, 0xe);
	X(&c, 7, 0xa);
	E(&c, 8, 0xb);
	E(&c, 9, 0xf);
	X(&c, 10, 0xf);
	X(&c, 11, 0xb);
	X(&c, 12, 0xf);
	CHECK_STR(rec_text(&c.rec), "+f@1/0 +a@2/1 -a@7/1<2 -f@12/0<1");
	case_release(&c);

	/* an excluded frame closed by a repaired exit ends the exclusion */
	spec.has_only = false;
	class_both = 0;
	case_init(&c, &spec);
	E(&c, 1, 0x1);
	E(&c, 2, 0xe);
	E(&c, 3, 0xb);
	X(&c, 4, 0x1);
	E(&c, 5, 0xc);
	X(&c, 6, 0xc);
	CHECK_STR(rec_text(&c.rec), "+1@1/0 -1@4/0<1 +c@5/0 -c@6/0<5");
	CHECK_EQ_U64(c.fs.excluded_at, UINT32_MAX);
	case_release(&c);
}

static void test_depth(void)
{
	struct filter_spec spec = { NULL, NULL, false, 2, 0, 0 };
	struct case_ c;

	case_init(&c, &spec);
	CHECK(!filter_spec_is_empty(&c.spec));
	E(&c, 1, 0xa);
	E(&c, 2, 0xb);
	E(&c, 3, 0xc);
	E(&c, 4, 0xd);
	X(&c, 5, 0xd);
	X(&c, 6, 0xc);
	E(&c, 7, 0xe);
	X(&c, 8, 0xe);
	X(&c, 9, 0xb);
	E(&c, 10, 0xf);
	E(&c, 11, 0xc);
	X(&c, 12, 0xc);
	X(&c, 13, 0xf);
	X(&c, 14, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 +b@2/1 -b@9/1<2 +f@10/1 -f@13/1<10 -a@14/0<1");
	case_release(&c);

	/* with --only, the depth counts from the --only function */
	{
		struct filter_spec only = { classify, NULL, true, 2, 0, 0 };
		unsigned calls = 0;

		only.ctx = &calls;
		class_only = 0xf;
		class_exclude = class_both = 0;
		case_init(&c, &only);
		E(&c, 1, 0xa);
		E(&c, 2, 0xf);
		E(&c, 3, 0xb);
		E(&c, 4, 0xc);
		X(&c, 5, 0xc);
		X(&c, 6, 0xb);
		X(&c, 7, 0xf);
		X(&c, 8, 0xa);
		CHECK_STR(rec_text(&c.rec), "+f@2/0 +b@3/1 -b@6/1<3 -f@7/0<2");
		case_release(&c);
	}
}

/* A tree of calls with durations: the root 0x1 lasts 1000 ns and holds
 * short and long children; min_ns 100 keeps the long ones and the
 * frames that lead to them. */
static void test_min_time(void)
{
	struct filter_spec spec = { NULL, NULL, false, 0, 100, 0 };
	struct case_ c;

	case_init(&c, &spec);
	CHECK(!filter_spec_is_empty(&c.spec));
	E(&c, 0, 0x1);   /* r: 0..1000 */
	E(&c, 10, 0x51); /* short: 10..12 */
	X(&c, 12, 0x51);
	E(&c, 20, 0xa1); /* long: 20..300 */
	E(&c, 30, 0x52); /* short: 30..31 */
	X(&c, 31, 0x52);
	E(&c, 40, 0xa2); /* long: 40..200 */
	E(&c, 50, 0x53); /* short: 50..51 */
	X(&c, 51, 0x53);
	X(&c, 200, 0xa2);
	X(&c, 300, 0xa1);
	E(&c, 400, 0x54); /* short: 400..402, with a short child */
	E(&c, 401, 0x55);
	X(&c, 401, 0x55);
	X(&c, 402, 0x54);
	E(&c, 500, 0xb1); /* exactly min_ns: 500..600 */
	E(&c, 510, 0x56); /* short child of a long call */
	X(&c, 512, 0x56);
	X(&c, 600, 0xb1);
	E(&c, 700, 0x57); /* 99 ns: just too short */
	X(&c, 799, 0x57);
	E(&c, 800, 0xc1); /* a long call three levels down */
	E(&c, 801, 0xc2);
	E(&c, 802, 0xc3);
	X(&c, 950, 0xc3);
	X(&c, 951, 0xc2);
	X(&c, 952, 0xc1);
	X(&c, 1000, 0x1);
	CHECK_STR(rec_text(&c.rec), "+1@0/0 +a1@20/1 +a2@40/2 -a2@200/2<40 -a1@300/1<20 +b1@500/1 -b1@600/1<500 "
	                            "+c1@800/1 +c2@801/2 +c3@802/3 -c3@950/3<802 -c2@951/2<801 -c1@952/1<800 "
	                            "-1@1000/0<0");
	case_release(&c);

	/* a whole short tree leaves nothing; a long leaf alone is emitted */
	case_init(&c, &spec);
	E(&c, 0, 0xa);
	E(&c, 10, 0xb);
	X(&c, 20, 0xb);
	X(&c, 99, 0xa);
	E(&c, 100, 0xc);
	X(&c, 300, 0xc);
	CHECK_STR(rec_text(&c.rec), "+c@100/0 -c@300/0<100");
	case_release(&c);

	/* a long parent whose children are all short */
	case_init(&c, &spec);
	E(&c, 0, 0xa);
	E(&c, 10, 0xb);
	X(&c, 20, 0xb);
	X(&c, 500, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@0/0 -a@500/0<0");
	case_release(&c);

	/* frames closed by longjmp count their time up to the jump */
	case_init(&c, &spec);
	E(&c, 0, 0xa);
	E(&c, 10, 0xb);
	E(&c, 20, 0xc);
	filter_longjmp(&c.fs, 200, 1);
	X(&c, 210, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@0/0 +b@10/1 +c@20/2 -c@200/2<20u -b@200/1<10u -a@210/0<0");
	case_release(&c);

	/* min_ns with max_depth: a long call below the limit shows its
	 * visible ancestors only */
	spec.max_depth = 2;
	case_init(&c, &spec);
	E(&c, 0, 0xa);
	E(&c, 10, 0xb);
	E(&c, 20, 0xc);
	X(&c, 500, 0xc);
	X(&c, 510, 0xb);
	X(&c, 520, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@0/0 +b@10/1 -b@510/1<10 -a@520/0<0");
	case_release(&c);
}

/* Entries at 2i, exits in reverse at 2n + 2(n - 1 - i): frame i lasts from
 * 2i to 4n - 2 - 2i.  Function i is addrs[i % 3]. */
static void deep(struct case_ *c, uint32_t n, bool same)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		E(c, 2 * (uint64_t)i, same ? 0xa : 0xa + i % 3);
	for (i = n; i-- > 0;)
		X(c, 2 * (uint64_t)n + 2 * (uint64_t)(n - 1 - i), same ? 0xa : 0xa + i % 3);
}

/* Checks a deep() run: the first `kept` frames come out properly paired. */
static void check_deep(const struct case_ *c, uint32_t n, uint32_t kept, bool same)
{
	const struct rec *r = c->rec.recs;
	uint32_t i;
	int ok = 1;

	if (!CHECK_EQ_U64(c->rec.n, 2 * (uint64_t)kept))
		return;
	for (i = 0; i < kept && ok; i++) {
		uint64_t addr = same ? 0xa : 0xa + i % 3;
		const struct rec *en = &r[i], *ex = &r[2 * kept - 1 - i];

		ok &= CHECK(en->entry);
		ok &= CHECK_EQ_U64(en->depth, i);
		ok &= CHECK_EQ_U64(en->ns, 2 * (uint64_t)i);
		ok &= CHECK_EQ_U64(en->addr, addr);
		ok &= CHECK(!ex->entry);
		ok &= CHECK_EQ_U64(ex->depth, i);
		ok &= CHECK_EQ_U64(ex->addr, addr);
		ok &= CHECK_EQ_U64(ex->entry_ns, 2 * (uint64_t)i);
		ok &= CHECK_EQ_U64(ex->ns, 4 * (uint64_t)n - 2 - 2 * (uint64_t)i);
		ok &= CHECK_EQ_U64(ex->flags, 0);
		if (!ok)
			printf("  frame %u of %u\n", i, n);
	}
	CHECK_EQ_U64(c->fs.depth, 0);
	CHECK_EQ_U64(c->fs.overflow, 0);
	CHECK_EQ_U64(c->fs.unmatched, 0);
}

static void test_deep(void)
{
	struct filter_spec bounded = { 0 };
	struct case_ c;
	uint32_t i;

	/* past the first allocation of 64 frames */
	case_init(&c, NULL);
	deep(&c, 200, false);
	check_deep(&c, 200, 200, false);
	case_release(&c);

	/* recursion 100000 deep is tracked whole by default */
	case_init(&c, NULL);
	deep(&c, 100000, true);
	check_deep(&c, 100000, 100000, true);
	CHECK_EQ_U64(c.rec.lost, 0);
	CHECK_EQ_U64(c.fs.deep_calls, 0);
	case_release(&c);

	/* with a bound of 16384 frames, deeper calls are not tracked, and
	 * their exits do not close the tracked ones; they are counted, and
	 * said as lost events once the stack is back within the bound */
	bounded.stack_max = 16384;
	case_init(&c, &bounded);
	deep(&c, 20000, true);
	check_deep(&c, 20000, 16384, true);
	CHECK_EQ_U64(c.fs.deep_calls, 20000 - 16384);
	CHECK_EQ_U64(c.rec.lost, 2 * (20000 - 16384));
	CHECK_EQ_U64(c.rec.lost_reports, 1);
	/* said at the exit of the outermost untracked frame (frame 16384) */
	CHECK_EQ_U64(c.rec.lost_ns, 4 * 20000 - 2 - 2 * 16384);
	case_release(&c);
	case_init(&c, &bounded);
	deep(&c, 20000, false);
	check_deep(&c, 20000, 16384, false);
	CHECK_EQ_U64(c.rec.lost, 2 * (20000 - 16384));
	/* the stream goes on normally afterwards */
	c.rec.n = 0;
	E(&c, 100000, 0xb);
	X(&c, 100001, 0xb);
	CHECK_STR(rec_text(&c.rec), "+b@100000/0 -b@100001/0<100000");
	case_release(&c);

	/* a small bound, exactly: d and e are past it */
	bounded.stack_max = 3;
	case_init(&c, &bounded);
	E(&c, 1, 0xa);
	E(&c, 2, 0xb);
	E(&c, 3, 0xc);
	E(&c, 4, 0xd);
	E(&c, 5, 0xe);
	X(&c, 6, 0xe);
	CHECK_EQ_U64(c.rec.lost_reports, 0);
	X(&c, 7, 0xd);
	X(&c, 8, 0xc);
	X(&c, 9, 0xb);
	X(&c, 10, 0xa);
	CHECK_STR(rec_text(&c.rec), "+a@1/0 +b@2/1 +c@3/2 -c@8/2<3 -b@9/1<2 -a@10/0<1");
	CHECK_EQ_U64(c.rec.lost, 4);
	CHECK_EQ_U64(c.rec.lost_reports, 1);
	CHECK_EQ_U64(c.rec.lost_ns, 7);
	CHECK_EQ_U64(c.fs.deep_calls, 2);
	case_release(&c);

	/* finishing a stream with untracked frames says them, then closes
	 * the tracked ones */
	case_init(&c, &bounded);
	for (i = 0; i < 3 + 10; i++)
		E(&c, i, 0xa);
	filter_finish(&c.fs, 1u << 20);
	CHECK_EQ_U64(c.rec.n, 2 * 3);
	CHECK_EQ_U64(c.fs.depth, 0);
	CHECK_EQ_U64(c.fs.overflow, 0);
	CHECK_EQ_U64(c.rec.recs[c.rec.n - 1].flags, FILTER_UNFINISHED);
	CHECK_EQ_U64(c.rec.recs[c.rec.n - 1].ns, 1u << 20);
	CHECK_EQ_U64(c.rec.lost, 10);
	CHECK_EQ_U64(c.rec.lost_ns, 1u << 20);
	CHECK_EQ_U64(c.fs.deep_calls, 10);
	case_release(&c);

	/* a longjmp that stays past the tracked frames ends only untracked
	 * ones: the remaining exits still pair with the right frames */
	bounded.stack_max = 16384;
	case_init(&c, &bounded);
	for (i = 0; i < 20000; i++)
		E(&c, i, 0xa);
	filter_longjmp(&c.fs, 30000, 18000);
	CHECK_EQ_U64(c.fs.overflow, 18000 - 16384);
	CHECK_EQ_U64(c.rec.n, 16384);
	CHECK_EQ_U64(c.rec.lost_reports, 0);
	for (i = 0; i < 18000; i++)
		X(&c, 40000 + i, 0xa);
	CHECK_EQ_U64(c.fs.unmatched, 0);
	CHECK_EQ_U64(c.fs.depth, 0);
	CHECK_EQ_U64(c.rec.n, 2 * 16384);
	/* the outermost frame, entered at 0, exits last, at the last exit */
	CHECK_EQ_U64(c.rec.recs[c.rec.n - 1].ns, 40000 + 17999);
	CHECK_EQ_U64(c.rec.recs[c.rec.n - 1].flags, 0);
	/* 3616 entries and the 1616 exits of the untracked frames left */
	CHECK_EQ_U64(c.rec.lost, (20000 - 16384) + (18000 - 16384));
	case_release(&c);

	/* a longjmp back into the tracked frames says the untracked ones */
	case_init(&c, &bounded);
	for (i = 0; i < 20000; i++)
		E(&c, i, 0xa);
	filter_longjmp(&c.fs, 30000, 2);
	CHECK_EQ_U64(c.rec.lost, 20000 - 16384);
	CHECK_EQ_U64(c.rec.lost_ns, 30000);
	CHECK_EQ_U64(c.fs.depth, 2);
	case_release(&c);
}

int main(void)
{
	test_nesting();
	test_repair();
	test_only();
	test_exclude();
	test_depth();
	test_min_time();
	test_deep();
	return check_summary();
}
