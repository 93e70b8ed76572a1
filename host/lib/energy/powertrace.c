/* Power samples in a trace: the LP_CHUNK_POWER payload written by record
 * --power, read back during a walk, and integrated over a span. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/varint.h"
#include "host/lib/energy/powerimpl.h"
#include "host/lib/energy/powertrace.h"
#include "layerprof/format.h"

size_t powertrace_encode(uint32_t src, const struct power_sample *s, uint32_t n, uint8_t *buf)
{
	uint64_t prev = 0;
	size_t len = 0;

	len += varint_put(buf + len, src);
	len += varint_put(buf + len, n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ns = s[i].ns > prev ? s[i].ns : prev;
		double uw = s[i].watts * 1e6;

		len += varint_put(buf + len, ns - prev);
		len += varint_put(buf + len, isfinite(uw) && uw > 0 ? (uint64_t)llround(uw) : 0);
		prev = ns;
	}
	return len;
}

void powertrace_init(struct powertrace *pt)
{
	memset(pt, 0, sizeof(*pt));
}

/* One POWER chunk's samples, appended to its source's; a chunk that does
 * not parse leaves them as they were and is counted. */
static int powertrace_chunk(void *ctx, const struct walk_chunk *c)
{
	struct powertrace *pt = ctx;
	const uint8_t *p = c->payload, *end = c->payload + c->len;
	uint64_t src, count, ns = 0;
	uint32_t keep;

	if (c->type != LP_CHUNK_POWER)
		return 0;
	/* each sample takes two bytes at least */
	if (varint_get(&p, end, &src) || varint_get(&p, end, &count) || src >= POWERTRACE_SOURCES_MAX ||
	    count > (uint64_t)(end - p) / 2) {
		pt->bad_chunks++;
		return 0;
	}
	keep = pt->n[src];
	for (uint64_t i = 0; i < count; i++) {
		struct power_sample s;
		uint64_t delta, uw;

		if (varint_get(&p, end, &delta) || varint_get(&p, end, &uw) || delta > UINT64_MAX - ns) {
			pt->n[src] = keep;
			pt->bad_chunks++;
			return 0;
		}
		ns += delta;
		s.ns = ns;
		s.watts = (double)uw * 1e-6;
		if (power_samples_push(&pt->samples[src], &pt->n[src], &pt->cap[src], &pt->dropped, &s)) {
			pt->n[src] = keep;
			return -ENOMEM;
		}
	}
	if (p != end) {
		pt->n[src] = keep;
		pt->bad_chunks++;
	}
	return 0;
}

void powertrace_walk_ops(struct powertrace *pt, struct walk_ops *ops)
{
	ops->ctx = pt;
	ops->chunk_begin = powertrace_chunk;
}

static int powertrace_cmp(const void *a, const void *b)
{
	const struct power_sample *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

bool powertrace_finish(struct powertrace *pt, const struct walk *w)
{
	char list[POWERTRACE_SOURCES_MAX * POWER_NAME_MAX];
	bool any = false;

	pt->nsources = 0;
	if (walk_meta(w, "power.sources", list, sizeof(list))) {
		for (const char *p = list; *p && pt->nsources < POWERTRACE_SOURCES_MAX;) {
			size_t n = strcspn(p, ",");

			snprintf(pt->names[pt->nsources++], POWER_NAME_MAX, "%.*s", (int)n, p);
			p += n + (p[n] == ',');
		}
	}
	for (uint32_t i = 0; i < POWERTRACE_SOURCES_MAX; i++) {
		bool sorted = true;

		if (!pt->n[i])
			continue;
		any = true;
		if (i >= pt->nsources) {
			for (uint32_t k = pt->nsources; k < i; k++)
				snprintf(pt->names[k], POWER_NAME_MAX, "source %u", k);
			snprintf(pt->names[i], POWER_NAME_MAX, "source %u", i);
			pt->nsources = i + 1;
		}
		for (uint32_t k = 1; k < pt->n[i] && sorted; k++)
			sorted = pt->samples[i][k - 1].ns <= pt->samples[i][k].ns;
		if (!sorted)
			qsort(pt->samples[i], pt->n[i], sizeof(pt->samples[i][0]), powertrace_cmp);
	}
	return any;
}

double powertrace_joules(const struct powertrace *pt, uint32_t src, uint64_t t0_ns, uint64_t t1_ns)
{
	if (src >= POWERTRACE_SOURCES_MAX || !pt->n[src])
		return -1;
	return power_integrate(pt->samples[src], pt->n[src], t0_ns, t1_ns);
}

void powertrace_release(struct powertrace *pt)
{
	for (uint32_t i = 0; i < POWERTRACE_SOURCES_MAX; i++)
		free(pt->samples[i]);
	powertrace_init(pt);
}
