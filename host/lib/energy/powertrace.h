/* Power samples in a trace (record --power): the LP_CHUNK_POWER chunks
 * read during a walk, and the energy they give over a span. */
#ifndef LP_ENERGY_POWERTRACE_H
#define LP_ENERGY_POWERTRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/energy/power.h"
#include "host/lib/trace/walk.h"

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

/* Zeroes pt. */
void powertrace_init(struct powertrace *pt);
/* Sets ops->ctx and chunk_begin (the others stay as they were) to collect
 * the samples of w's POWER chunks into pt. */
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
