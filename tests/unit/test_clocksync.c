/* Unit test of the raw counter to ns conversion: exact interpolation over
 * hand-placed points, extrapolation at both ends, the segment hint, the
 * ring of points, the CLOCK chunk export and its import by another drain. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clocksync.h"
#include "common/varint.h"
#include "layerprof/format.h"
#include "lp_arch.h"
#include "tests/unit/check.h"

static struct clocksync cs;

/* Places points by hand, as clocksync_sample would keep them (which also
 * forgets the cached segment). */
static void add_point(struct clocksync *c, uint64_t raw, uint64_t ns)
{
	struct clocksync_point *p = &c->pts[(c->first + c->count) % CLOCKSYNC_POINTS];

	p->raw = raw;
	p->ns = ns;
	c->count++;
	c->seg_raw1 = 0;
}

/* The definition: a.ns + (raw - a.raw) * (b.ns - a.ns) / (b.raw - a.raw),
 * rounded down, for values small enough not to overflow. */
static uint64_t expect_between(uint64_t araw, uint64_t ans, uint64_t braw, uint64_t bns, uint64_t raw)
{
	return ans + (raw - araw) * (bns - ans) / (braw - araw);
}

/* Every conversion is the exact interpolation (floor of the quotient),
 * including those of the cached fast path. */
#define CHECK_NEAR(got, exact) CHECK_EQ_U64((got), (exact))

static void test_few_points(void)
{
	clocksync_init(&cs, LP_CLOCK_MONOTONIC);
	/* CLOCK_MONOTONIC needs no conversion */
	CHECK_EQ_U64(clocksync_ns(&cs, 12345), 12345);
	CHECK_EQ_U64(clocksync_ns(&cs, UINT64_MAX), UINT64_MAX);

	clocksync_init(&cs, LP_CLOCK_TSC);
	CHECK_EQ_U64(clocksync_ns(&cs, 12345), 0); /* nothing known yet */
	add_point(&cs, 1000, 5000);
	CHECK_EQ_U64(clocksync_ns(&cs, 1), 5000); /* one point: its time */
	CHECK_EQ_U64(clocksync_ns(&cs, 99999), 5000);
	add_point(&cs, 2000, 7000);
	CHECK_EQ_U64(clocksync_ns(&cs, 1000), 5000);
	CHECK_EQ_U64(clocksync_ns(&cs, 1500), 6000);
	CHECK_EQ_U64(clocksync_ns(&cs, 2000), 7000);
	CHECK_EQ_U64(clocksync_ns(&cs, 3000), 9000);
	CHECK_EQ_U64(clocksync_ns(&cs, 500), 4000);
	CHECK_EQ_U64(clocksync_ns(&cs, 0), 3000);
}

static void test_segments(void)
{
	clocksync_init(&cs, LP_CLOCK_TSC);
	/* slopes 2, 1/2, 2 */
	add_point(&cs, 1000, 5000);
	add_point(&cs, 2000, 7000);
	add_point(&cs, 4000, 8000);
	add_point(&cs, 10000, 20000);

	/* exact at every point */
	CHECK_EQ_U64(clocksync_ns(&cs, 1000), 5000);
	CHECK_EQ_U64(clocksync_ns(&cs, 2000), 7000);
	CHECK_EQ_U64(clocksync_ns(&cs, 4000), 8000);
	CHECK_EQ_U64(clocksync_ns(&cs, 10000), 20000);
	/* between points, rounded down */
	CHECK_EQ_U64(clocksync_ns(&cs, 1001), 5002);
	CHECK_EQ_U64(clocksync_ns(&cs, 2001), 7000);
	CHECK_EQ_U64(clocksync_ns(&cs, 2002), 7001);
	CHECK_EQ_U64(clocksync_ns(&cs, 3000), 7500);
	CHECK_EQ_U64(clocksync_ns(&cs, 7000), 14000);
	CHECK_EQ_U64(clocksync_ns(&cs, 9999), 19998);

	/* the hint follows the segment of the last conversion */
	CHECK_EQ_U64(clocksync_ns(&cs, 3000), 7500);
	CHECK_EQ_U64(cs.hint, 1);
	CHECK_EQ_U64(clocksync_ns(&cs, 3999), 7999);
	CHECK_EQ_U64(cs.hint, 1);
	CHECK_EQ_U64(clocksync_ns(&cs, 1500), 6000);
	CHECK_EQ_U64(cs.hint, 0);
	CHECK_EQ_U64(clocksync_ns(&cs, 5000), 10000);
	CHECK_EQ_U64(cs.hint, 2);
	/* a point starts the next segment, not the previous one */
	CHECK_EQ_U64(clocksync_ns(&cs, 4000), 8000);
	CHECK_EQ_U64(cs.hint, 2);
	CHECK_EQ_U64(clocksync_ns(&cs, 2000), 7000);
	CHECK_EQ_U64(cs.hint, 1);
	/* a stale or wild hint never changes the result */
	cs.hint = 2;
	CHECK_EQ_U64(clocksync_ns(&cs, 1500), 6000);
	cs.hint = 3;
	CHECK_EQ_U64(clocksync_ns(&cs, 3000), 7500);
	cs.hint = 1000;
	CHECK_EQ_U64(clocksync_ns(&cs, 7000), 14000);

	/* after the last point: the last segment's slope */
	CHECK_EQ_U64(clocksync_ns(&cs, 13000), 26000);
	CHECK_EQ_U64(cs.hint, 2);
	/* before the first point: the first segment's slope, down to 0 */
	CHECK_EQ_U64(clocksync_ns(&cs, 500), 4000);
	CHECK_EQ_U64(clocksync_ns(&cs, 0), 3000);
	clocksync_init(&cs, LP_CLOCK_TSC);
	add_point(&cs, 1000, 100);
	add_point(&cs, 2000, 1100);
	CHECK_EQ_U64(clocksync_ns(&cs, 950), 50);
	CHECK_EQ_U64(clocksync_ns(&cs, 900), 0);
	CHECK_EQ_U64(clocksync_ns(&cs, 0), 0);
}

/* Counter values of a real machine: large, with products past 64 bits. */
static void test_large_values(void)
{
	const uint64_t raw0 = UINT64_C(1) << 62, ns0 = UINT64_C(1) << 60;
	const uint64_t draw = 3 * (UINT64_C(1) << 40), dns = UINT64_C(1) << 40;

	clocksync_init(&cs, LP_CLOCK_TSC);
	add_point(&cs, raw0, ns0);
	add_point(&cs, raw0 + draw, ns0 + dns);
	add_point(&cs, raw0 + 2 * draw, ns0 + 2 * dns);
	/* (raw - raw0) * dns needs more than 64 bits here */
	CHECK_EQ_U64(clocksync_ns(&cs, raw0 + 3 * (UINT64_C(1) << 39) + 3), ns0 + (UINT64_C(1) << 39) + 1);
	CHECK_EQ_U64(clocksync_ns(&cs, raw0 + draw + 3 * (UINT64_C(1) << 39) + 5), ns0 + dns + (UINT64_C(1) << 39) + 1);
	CHECK_EQ_U64(clocksync_ns(&cs, raw0 + 4 * draw), ns0 + 4 * dns);
	CHECK_EQ_U64(clocksync_ns(&cs, raw0 - draw), ns0 - dns);
}

/* A 3 GHz counter sampled every millisecond, with a little skew: every
 * tick of a segment converted in order, as the drain does. */
static void test_cached_rate(void)
{
	const uint64_t raw0 = UINT64_C(1000000000000), ns0 = UINT64_C(500000000000);
	uint64_t raw;
	int ok = 1;

	clocksync_init(&cs, LP_CLOCK_TSC);
	add_point(&cs, raw0, ns0);
	add_point(&cs, raw0 + 3000007, ns0 + 1000000);
	add_point(&cs, raw0 + 6000011, ns0 + 2000000);
	for (raw = raw0; raw < raw0 + 6000011 && ok; raw += 7) {
		uint64_t exact = raw < raw0 + 3000007 ? expect_between(raw0, ns0, raw0 + 3000007, ns0 + 1000000, raw)
		                                      : expect_between(raw0 + 3000007, ns0 + 1000000, raw0 + 6000011,
		                                                       ns0 + 2000000, raw);

		ok &= CHECK_NEAR(clocksync_ns(&cs, raw), exact);
	}
	/* this rate is not exact in 32.32: the fast path corrects it */
	CHECK(ok);
}

/* Points that wrap around the end of the ring, many segments. */
static void test_ring(void)
{
	uint64_t raws[CLOCKSYNC_POINTS], nss[CLOCKSYNC_POINTS], raw = 1000000, ns = 5000000;
	uint32_t i, j, seg;
	int ok = 1;

	clocksync_init(&cs, LP_CLOCK_TSC);
	cs.first = CLOCKSYNC_POINTS - 7;
	srand(1);
	for (i = 0; i < CLOCKSYNC_POINTS; i++) {
		raws[i] = raw;
		nss[i] = ns;
		add_point(&cs, raw, ns);
		raw += 1 + (uint64_t)(rand() % 3000);
		ns += (uint64_t)(rand() % 1000000);
	}
	CHECK_EQ_U64(cs.count, CLOCKSYNC_POINTS);
	/* the points themselves are exact whichever path converts them */
	for (i = 0; i < CLOCKSYNC_POINTS && ok; i++)
		ok &= CHECK_EQ_U64(clocksync_ns(&cs, raws[i]), nss[i]);
	/* random order: the hint is often wrong */
	for (j = 0; j < 100000 && ok; j++) {
		seg = (uint32_t)rand() % (CLOCKSYNC_POINTS - 1);
		raw = raws[seg] + (uint64_t)rand() % (raws[seg + 1] - raws[seg]);
		ok &= CHECK_NEAR(clocksync_ns(&cs, raw),
		                 expect_between(raws[seg], nss[seg], raws[seg + 1], nss[seg + 1], raw));
		if (!ok)
			printf("  segment %u\n", seg);
	}
	/* in order: the hint is almost always right */
	for (seg = 0; seg + 1 < CLOCKSYNC_POINTS && ok; seg++)
		for (raw = raws[seg]; raw < raws[seg + 1] && ok; raw += 1 + (raws[seg + 1] - raws[seg]) / 4)
			ok &= CHECK_NEAR(clocksync_ns(&cs, raw),
			                 expect_between(raws[seg], nss[seg], raws[seg + 1], nss[seg + 1], raw));
}

/* Reads a CLOCK chunk payload back: the count, then that many pairs. */
static size_t import(const uint8_t *buf, size_t len, struct clocksync_point *out, size_t max)
{
	const uint8_t *p = buf, *end = buf + len;
	uint64_t n = 0, i;

	if (!CHECK_EQ_U64(varint_get(&p, end, &n), 0) || !CHECK(n <= max))
		return 0;
	for (i = 0; i < n; i++)
		if (!CHECK_EQ_U64(varint_get(&p, end, &out[i].raw), 0) ||
		    !CHECK_EQ_U64(varint_get(&p, end, &out[i].ns), 0))
			return 0;
	CHECK(p == end);
	return (size_t)n;
}

static void test_export(void)
{
	struct clocksync_point got[16];
	uint8_t buf[4096];
	size_t len, n, i;

	clocksync_init(&cs, LP_CLOCK_TSC);
	cs.first = CLOCKSYNC_POINTS - 2; /* the export wraps around too */
	for (i = 0; i < 5; i++)
		add_point(&cs, 1000 * (i + 1), (UINT64_C(1) << 60) + 333 * i);
	len = clocksync_export(&cs, buf, sizeof(buf));
	n = import(buf, len, got, 16);
	if (CHECK_EQ_U64(n, 5))
		for (i = 0; i < n; i++) {
			CHECK_EQ_U64(got[i].raw, 1000 * (i + 1));
			CHECK_EQ_U64(got[i].ns, (UINT64_C(1) << 60) + 333 * i);
		}
	CHECK_EQ_U64(cs.exported, 5);
	/* only what is new */
	len = clocksync_export(&cs, buf, sizeof(buf));
	CHECK_EQ_U64(len, 1);
	CHECK_EQ_U64(import(buf, len, got, 16), 0);
	add_point(&cs, 6000, 6);
	add_point(&cs, 7000, 7);
	len = clocksync_export(&cs, buf, sizeof(buf));
	n = import(buf, len, got, 16);
	if (CHECK_EQ_U64(n, 2)) {
		CHECK_EQ_U64(got[0].raw, 6000);
		CHECK_EQ_U64(got[0].ns, 6);
		CHECK_EQ_U64(got[1].raw, 7000);
		CHECK_EQ_U64(got[1].ns, 7);
	}
	/* a small buffer takes what fits, the rest comes next time */
	for (i = 0; i < 3; i++)
		add_point(&cs, 8000 + i, 8 + i);
	CHECK_EQ_U64(clocksync_export(&cs, buf, VARINT_MAX - 1), 0);
	len = clocksync_export(&cs, buf, VARINT_MAX + 2 * 2 * VARINT_MAX);
	n = import(buf, len, got, 16);
	if (CHECK_EQ_U64(n, 2)) {
		CHECK_EQ_U64(got[0].raw, 8000);
		CHECK_EQ_U64(got[1].raw, 8001);
	}
	len = clocksync_export(&cs, buf, sizeof(buf));
	n = import(buf, len, got, 16);
	if (CHECK_EQ_U64(n, 1))
		CHECK_EQ_U64(got[0].raw, 8002);
	CHECK_EQ_U64(cs.exported, cs.count);
}

/* A killed drain's exported points, imported by the drain that takes
 * over, convert its raw values as they did; newer points go after them,
 * older or equal ones are skipped, and none is exported again. */
static void test_import(void)
{
	static struct clocksync from;
	uint8_t buf[4096], bad[2] = { 3, 0x80 };
	size_t len;

	clocksync_init(&from, LP_CLOCK_TSC);
	add_point(&from, 1000, 100);
	add_point(&from, 3000, 1100);
	add_point(&from, 5000, 1600);
	len = clocksync_export(&from, buf, sizeof(buf));
	clocksync_init(&cs, LP_CLOCK_TSC);
	if (!CHECK_EQ_U64(clocksync_import(&cs, buf, len), 0) || !CHECK_EQ_U64(cs.count, 3))
		return;
	CHECK_EQ_U64(clocksync_ns(&cs, 2000), 600);
	CHECK_EQ_U64(clocksync_ns(&cs, 4000), 1350);
	CHECK_EQ_U64(cs.exported, 3);
	CHECK_EQ_U64(clocksync_export(&cs, buf, sizeof(buf)), 1); /* a count of 0 */
	/* the same points again with one newer: only the newer is added */
	add_point(&from, 7000, 2600);
	from.exported = 0;
	len = clocksync_export(&from, buf, sizeof(buf));
	CHECK_EQ_U64(clocksync_import(&cs, buf, len), 0);
	CHECK_EQ_U64(cs.count, 4);
	CHECK_EQ_U64(clocksync_ns(&cs, 6000), 2100);
	/* cut short: what came before the damage stays */
	CHECK_EQ_U64(clocksync_import(&cs, bad, sizeof(bad)), (uint64_t)-EBADMSG);
	CHECK_EQ_U64(cs.count, 4);
}

/* The machine's own counter, when it has one: a value read between two
 * samples converts to a time between theirs. */
static void test_live(void)
{
#ifdef LP_ARCH_COUNTER
	struct timespec pause = { 0, 200000 };
	uint64_t raw, ns;
	uint32_t i;

	if (LP_ARCH_COUNTER == LP_CLOCK_MONOTONIC) {
		printf("skipped live clock test: events use CLOCK_MONOTONIC on this architecture\n");
		return;
	}
	clocksync_init(&cs, LP_ARCH_COUNTER);
	clocksync_sample(&cs, 1);
	nanosleep(&pause, NULL);
	raw = clocksync_raw_now(cs.kind);
	nanosleep(&pause, NULL);
	clocksync_sample(&cs, 1);
	if (!CHECK_EQ_U64(cs.count, 2))
		return;
	ns = clocksync_ns(&cs, raw);
	CHECK(cs.pts[0].raw < raw && raw < cs.pts[1].raw);
	CHECK(cs.pts[0].ns <= ns && ns <= cs.pts[1].ns);

	/* a full ring drops its oldest point and keeps the export position */
	CHECK_EQ_U64(clocksync_export(&cs, (uint8_t[64]){ 0 }, 64) > 0, 1);
	/* a coarse counter (an emulator's) may not move between two samples:
	 * such a sample is not kept, so allow many more tries than points */
	for (i = 0; cs.count < CLOCKSYNC_POINTS && i < 1000 * CLOCKSYNC_POINTS; i++)
		clocksync_sample(&cs, 1);
	if (!CHECK_EQ_U64(cs.count, CLOCKSYNC_POINTS))
		return;
	raw = cs.pts[(cs.first + 2) % CLOCKSYNC_POINTS].raw;
	clocksync_sample(&cs, 1);
	if (cs.count == CLOCKSYNC_POINTS && cs.first == 1) {
		CHECK_EQ_U64(cs.exported, 1);
		CHECK_EQ_U64(cs.pts[(cs.first + 1) % CLOCKSYNC_POINTS].raw, raw);
	}
#else
	printf("skipped live clock test: this architecture has no raw counter\n");
#endif
}

/* The cached segment's quotient, both ways (one 128-bit product for a
 * counter faster than 1 GHz, else the 32.32 rate and its correction),
 * against the division, at random rates and at the ends of each segment,
 * where the one-product form is closest to being off by one. */
static void test_quotient(void)
{
#ifdef __SIZEOF_INT128__
	uint64_t state = 88172645463325252ull;
	int ok = 1, i, j;

	for (i = 0; i < 20000 && ok; i++) {
		uint64_t draw, dns, d;

		state ^= state << 13, state ^= state >> 7, state ^= state << 17;
		draw = 1 + (state & 0xffffffffu);
		dns = (state >> 32) % (i & 1 ? draw : 0xffffffffu);
		clocksync_init(&cs, LP_CLOCK_TSC);
		add_point(&cs, 1000, 1000);
		add_point(&cs, 1000 + draw, 1000 + dns);
		for (j = 0; j < 8 && ok; j++) {
			state ^= state << 13, state ^= state >> 7, state ^= state << 17;
			d = j == 0 ? draw - 1 : j == 1 ? 0 : state % draw;
			ok &= CHECK_EQ_U64(clocksync_ns(&cs, 1000 + d),
			                   1000 + (uint64_t)((unsigned __int128)d * dns / draw));
		}
		if (!ok)
			printf("  draw %llu dns %llu\n", (unsigned long long)draw, (unsigned long long)dns);
	}
#endif
}

int main(void)
{
	test_few_points();
	test_segments();
	test_large_values();
	test_cached_rate();
	test_ring();
	test_quotient();
	test_export();
	test_import();
	test_live();
	return check_summary();
}
