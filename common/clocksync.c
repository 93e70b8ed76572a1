/* Raw counter to CLOCK_MONOTONIC conversion by interpolation between
 * sampled pairs (see clocksync.h). */
#include <errno.h>
#include <time.h>

#include "layerprof/format.h"
#include "lp_arch.h"
#include "common/clocksync.h"
#include "common/varint.h"

uint64_t clocksync_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clocksync_raw_now(uint32_t kind)
{
	if (kind != LP_CLOCK_MONOTONIC && kind == LP_ARCH_COUNTER)
		return lp_arch_counter();
	return clocksync_monotonic_ns();
}

void clocksync_init(struct clocksync *cs, uint32_t kind)
{
	cs->kind = kind;
	cs->count = 0;
	cs->first = 0;
	cs->hint = 0;
	cs->exported = 0;
	cs->seg_raw0 = cs->seg_raw1 = 0;
}

static struct clocksync_point *point(struct clocksync *cs, uint32_t i)
{
	return &cs->pts[(cs->first + i) % CLOCKSYNC_POINTS];
}

/* Appends p when it is newer than the last point (dropping the oldest
 * when full). */
static void point_add(struct clocksync *cs, struct clocksync_point p)
{
	if (cs->count && p.raw <= point(cs, cs->count - 1)->raw)
		return;
	if (cs->count == CLOCKSYNC_POINTS) {
		cs->first = (cs->first + 1) % CLOCKSYNC_POINTS;
		cs->count--;
		if (cs->hint)
			cs->hint--;
		if (cs->exported)
			cs->exported--;
	}
	*point(cs, cs->count++) = p;
	cs->seg_raw1 = 0; /* an extrapolated segment may now be an interpolated one */
}

void clocksync_sample(struct clocksync *cs, int force)
{
	struct clocksync_point p = { 0, 0 };
	uint64_t a, b, width = 0;

	if (cs->kind == LP_CLOCK_MONOTONIC)
		return;
	/* the pair is as exact as the window around the clock read is narrow:
	 * a preemption inside it would shift every event converted near it, so
	 * the narrowest of a few windows is kept */
	for (int i = 0; i < CLOCKSYNC_TRIES; i++) {
		uint64_t ns;

		a = clocksync_raw_now(cs->kind);
		ns = clocksync_monotonic_ns();
		b = clocksync_raw_now(cs->kind);
		if (!i || b - a < width) {
			width = b - a;
			p.raw = a + width / 2;
			p.ns = ns;
		}
	}
	if (cs->count && !force && p.ns - point(cs, cs->count - 1)->ns < CLOCKSYNC_MIN_GAP_NS)
		return;
	point_add(cs, p);
}

static uint64_t interpolate(const struct clocksync_point *a, const struct clocksync_point *b, uint64_t raw)
{
	uint64_t draw = b->raw - a->raw, dns = b->ns - a->ns;

	if (!draw)
		return a->ns;
	if (raw >= a->raw) {
#ifdef __SIZEOF_INT128__
		return a->ns + (uint64_t)((unsigned __int128)(raw - a->raw) * dns / draw);
#else
		return a->ns + (uint64_t)((long double)(raw - a->raw) * dns / draw);
#endif
	}
#ifdef __SIZEOF_INT128__
	{
		uint64_t back = (uint64_t)((unsigned __int128)(a->raw - raw) * dns / draw);
		return back < a->ns ? a->ns - back : 0;
	}
#else
	{
		uint64_t back = (uint64_t)((long double)(a->raw - raw) * dns / draw);
		return back < a->ns ? a->ns - back : 0;
	}
#endif
}

/* Caches segment [a, b) when both spans are below 2^32 (ticks and ns), so
 * that the fast path stays exact (see clocksync_ns). */
static void cache_segment(struct clocksync *cs, const struct clocksync_point *a, const struct clocksync_point *b)
{
	uint64_t draw = b->raw - a->raw, dns = b->ns - a->ns;

	if (!draw || draw >= (UINT64_C(1) << 32) || dns >= (UINT64_C(1) << 32)) {
		cs->seg_raw1 = 0;
		return;
	}
	cs->seg_raw0 = a->raw;
	cs->seg_raw1 = b->raw;
	cs->seg_ns0 = a->ns;
	cs->seg_draw = draw;
	cs->seg_dns = dns;
	cs->seg_mult = (dns << 32) / draw;
	cs->seg_frac = 0;
#ifdef __SIZEOF_INT128__
	if (dns < draw) {
		unsigned __int128 num = (unsigned __int128)dns << 64;

		cs->seg_frac = (uint64_t)(num / draw) + (num % draw != 0);
	}
#endif
}

uint64_t clocksync_ns_slow(struct clocksync *cs, uint64_t raw)
{
	uint32_t lo, hi, h = cs->hint;

	if (cs->kind == LP_CLOCK_MONOTONIC)
		return raw;
	if (cs->count < 2)
		return cs->count ? point(cs, 0)->ns : 0;
	/* most events fall in the segment the previous one did */
	if (h + 1 < cs->count && point(cs, h)->raw <= raw && raw < point(cs, h + 1)->raw) {
		cache_segment(cs, point(cs, h), point(cs, h + 1));
		return interpolate(point(cs, h), point(cs, h + 1), raw);
	}
	if (raw < point(cs, 0)->raw)
		return interpolate(point(cs, 0), point(cs, 1), raw);
	if (raw >= point(cs, cs->count - 1)->raw) {
		cs->hint = cs->count - 2;
		return interpolate(point(cs, cs->count - 2), point(cs, cs->count - 1), raw);
	}
	lo = 0;
	hi = cs->count - 1; /* pts[lo].raw <= raw < pts[hi].raw */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (point(cs, mid)->raw <= raw)
			lo = mid;
		else
			hi = mid;
	}
	cs->hint = lo;
	cache_segment(cs, point(cs, lo), point(cs, lo + 1));
	return interpolate(point(cs, lo), point(cs, lo + 1), raw);
}

uint64_t clocksync_span_to_raw(struct clocksync *cs, uint64_t ns)
{
	const struct clocksync_point *a, *b;
	uint64_t draw, dns;

	if (cs->kind == LP_CLOCK_MONOTONIC || !ns)
		return ns;
	if (cs->count < 2) {
		struct timespec pause = { 0, 2000000 };

		nanosleep(&pause, NULL);
		clocksync_sample(cs, 1);
		if (cs->count < 2)
			return ns;
	}
	a = point(cs, 0);
	b = point(cs, cs->count - 1);
	draw = b->raw - a->raw;
	dns = b->ns - a->ns;
	if (!dns)
		return ns;
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)ns * draw + dns / 2) / dns);
#else
	return (uint64_t)((long double)ns * draw / dns + 0.5);
#endif
}

size_t clocksync_export(struct clocksync *cs, uint8_t *buf, size_t size)
{
	size_t len = 0;
	uint32_t i, n = cs->count - cs->exported;

	if (size < VARINT_MAX)
		return 0;
	if (n > (size - VARINT_MAX) / (2 * VARINT_MAX))
		n = (uint32_t)((size - VARINT_MAX) / (2 * VARINT_MAX));
	len += varint_put(buf, n);
	for (i = 0; i < n; i++) {
		const struct clocksync_point *p = point(cs, cs->exported + i);

		len += varint_put(buf + len, p->raw);
		len += varint_put(buf + len, p->ns);
	}
	cs->exported += n;
	return len;
}

int clocksync_import(struct clocksync *cs, const uint8_t *payload, size_t len)
{
	const uint8_t *p = payload, *end = payload + len;
	struct clocksync_point pt;
	uint64_t n, i;

	if (varint_get(&p, end, &n))
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		if (varint_get(&p, end, &pt.raw) || varint_get(&p, end, &pt.ns))
			return -EBADMSG;
		if (cs->kind != LP_CLOCK_MONOTONIC)
			point_add(cs, pt);
	}
	cs->exported = cs->count;
	return 0;
}
