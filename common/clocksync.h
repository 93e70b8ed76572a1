/* Conversion of the runtime's raw counter (TSC, CNTVCT) to CLOCK_MONOTONIC
 * ns: the drain samples (raw, ns) pairs as it goes and converts each event
 * by interpolating between the pairs that bracket it. */
#ifndef LP_CLOCKSYNC_H
#define LP_CLOCKSYNC_H

#include <stddef.h>
#include <stdint.h>

#include "layerprof/format.h"

#define CLOCKSYNC_POINTS 4096u
#define CLOCKSYNC_MIN_GAP_NS 1000000u
#define CLOCKSYNC_TRIES 5

struct clocksync_point {
	uint64_t raw, ns;
};

struct clocksync {
	uint32_t kind;  /* enum lp_clock_kind */
	uint32_t count; /* points held, oldest at `first` */
	uint32_t first;
	uint32_t hint;     /* logical index of the segment used last */
	uint32_t exported; /* points already handed to clocksync_export */
	/* the segment the last conversion used: ns = ns0 + (raw - raw0) *
	 * mult >> 32, corrected to the exact quotient with draw and dns; no
	 * division per event */
	uint64_t seg_raw0, seg_raw1, seg_ns0, seg_mult, seg_draw, seg_dns;
	/* with 128-bit products and a counter faster than 1 GHz (dns < draw):
	 * ceil(dns * 2^64 / draw), whose product's high half is the exact
	 * quotient at once; 0: use mult and the correction */
	uint64_t seg_frac;
	struct clocksync_point pts[CLOCKSYNC_POINTS];
};

void clocksync_init(struct clocksync *cs, uint32_t kind);
/* Takes a sample now; keeps it if the last kept one is at least
 * CLOCKSYNC_MIN_GAP_NS old or `force` is set.  Every event read before this
 * call is converted exactly (by interpolation) from then on. */
void clocksync_sample(struct clocksync *cs, int force);
/* The conversion outside the cached segment (see clocksync_ns). */
uint64_t clocksync_ns_slow(struct clocksync *cs, uint64_t raw);

/* (d * mult) >> 32 without overflow for any 64-bit operands */
static inline uint64_t clocksync_mul_shift32(uint64_t d, uint64_t mult)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)d * mult) >> 32);
#else
	uint64_t dl = d & 0xffffffffu, dh = d >> 32, ml = mult & 0xffffffffu, mh = mult >> 32;

	return dh * mh * (UINT64_C(1) << 32) + dh * ml + dl * mh + ((dl * ml) >> 32);
#endif
}

/* Converts a raw value: exact interpolation between the points around it.
 * Values after the newest point extrapolate from the last two points;
 * values before the oldest from the first two.  Called once per event by
 * the drain: the common case is inline and has no division. */
/* floor(d * dns / draw) for d < draw < 2^32 and dns < 2^32, without a
 * division: with frac (see struct clocksync) one multiplication, exact
 * because d * (frac - dns * 2^64 / draw) / 2^64 < 2^-32 <= 1 / draw, less
 * than the distance from d * dns / draw up to the next integer. */
static inline uint64_t clocksync_seg_quotient(uint64_t d, uint64_t mult, uint64_t draw, uint64_t dns, uint64_t frac)
{
	uint64_t q;

#ifdef __SIZEOF_INT128__
	if (frac)
		return (uint64_t)(((unsigned __int128)d * frac) >> 64);
#else
	(void)frac;
#endif
	/* mult is rounded down, so q is the exact quotient or one below: one
	 * multiplication tells which (both sides stay below 2^64 because d,
	 * draw and dns are below 2^32) */
	q = clocksync_mul_shift32(d, mult);
	if ((q + 1) * draw <= d * dns)
		q++;
	return q;
}

static inline uint64_t clocksync_ns(struct clocksync *cs, uint64_t raw)
{
	if (cs->kind == LP_CLOCK_MONOTONIC)
		return raw;
	if (raw >= cs->seg_raw0 && raw < cs->seg_raw1) {
		uint64_t d = raw - cs->seg_raw0;

		return cs->seg_ns0 + clocksync_seg_quotient(d, cs->seg_mult, cs->seg_draw, cs->seg_dns, cs->seg_frac);
	}
	return clocksync_ns_slow(cs, raw);
}
/* A duration in ns as a raw clock span, by the rate between the oldest and
 * newest points (samples a second point if there is only one). */
uint64_t clocksync_span_to_raw(struct clocksync *cs, uint64_t ns);
/* Current CLOCK_MONOTONIC in ns. */
uint64_t clocksync_monotonic_ns(void);
/* Current raw value of `kind` on this machine. */
uint64_t clocksync_raw_now(uint32_t kind);
/* Writes the points taken since the last call as a CLOCK chunk payload
 * (varint count, then varint raw/ns pairs) into buf; returns its length. */
size_t clocksync_export(struct clocksync *cs, uint8_t *buf, size_t size);
/* Adds the points of a CLOCK chunk payload written by another drain of the
 * same clock (a killed recorder's, so that what it left is converted as
 * it would have converted it); points not newer than the last held are
 * skipped, and none is exported again.  Call before the first sample.
 * Returns 0, or -EBADMSG for a payload that does not parse (the points
 * before the damage are kept). */
int clocksync_import(struct clocksync *cs, const uint8_t *payload, size_t len);

#endif
