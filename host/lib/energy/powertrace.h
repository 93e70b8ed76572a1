/* Power samples in a trace (record --power): the LP_CHUNK_POWER chunks
 * read during a walk, and the energy they give over a span. */
#ifndef LP_ENERGY_POWERTRACE_H
#define LP_ENERGY_POWERTRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/energy/power.h"
#include "host/lib/trace/walk.h"
#include "layerprof/format.h"

/* Sources one trace may hold. */
#define POWERTRACE_SOURCES_MAX 8u

struct powertrace {
	uint32_t nsources; /* from META power.sources */
	char names[POWERTRACE_SOURCES_MAX][POWER_NAME_MAX];
	struct power_sample *samples[POWERTRACE_SOURCES_MAX]; /* by time; owned */
	uint32_t n[POWERTRACE_SOURCES_MAX], cap[POWERTRACE_SOURCES_MAX];
	uint64_t bad_chunks; /* POWER chunks that did not parse (left out) */
	uint64_t dropped;    /* samples past POWER_SAMPLES_MAX per source */
};

/* Samples one LP_CHUNK_POWER chunk holds, at most (docs/format.md). */
#define POWERTRACE_CHUNK_SAMPLES LP_POWER_CHUNK_SAMPLES
/* Room powertrace_encode needs for n samples. */
#define POWERTRACE_CHUNK_BYTES(n) ((size_t)(2 + 2 * (size_t)(n)) * 10u)

/* The LP_CHUNK_POWER payload of n samples (by time; at most
 * POWERTRACE_CHUNK_SAMPLES) of the trace's source src into buf (room for
 * POWERTRACE_CHUNK_BYTES(n)): varint src, varint n, n x (varint ns from
 * the previous sample, the first from 0; varint µW, rounded).  Returns
 * its length. */
size_t powertrace_encode(uint32_t src, const struct power_sample *s, uint32_t n, uint8_t *buf);

/* Zeroes pt. */
void powertrace_init(struct powertrace *pt);
/* Sets ops->ctx and chunk_begin (the others stay as they were) to collect
 * the samples of w's POWER chunks into pt.  walk_run hands every chunk to
 * chunk_begin; walk_run_by_time only those with events: use walk_run (or
 * a pass of its own) for the power samples. */
void powertrace_walk_ops(struct powertrace *pt, struct walk_ops *ops);
/* After the pass: the names from the walk's META.  true when the trace has
 * samples of at least one source. */
bool powertrace_finish(struct powertrace *pt, const struct walk *w);
/* Energy (J) of source src over [t0_ns, t1_ns]: its samples integrated as
 * power_meter does (trapezoids, the ends held).  -1 when it has no sample. */
double powertrace_joules(const struct powertrace *pt, uint32_t src, uint64_t t0_ns, uint64_t t1_ns);
/* Accepts a zeroed or released one. */
void powertrace_release(struct powertrace *pt);

#endif
