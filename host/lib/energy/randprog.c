/* Random programs for training (see randprog.h): splitmix64 from the seed,
 * so that the programs do not depend on the C library's rand. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "host/lib/energy/randprog.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n): n is small, the bias of the modulo negligible. */
static uint32_t below(struct randprog_gen *g, uint32_t n)
{
	return (uint32_t)(splitmix64(&g->state) % n);
}

int randprog_init(struct randprog_gen *g, uint64_t seed, uint32_t nnames, uint32_t cpus, int idle)
{
	if (!nnames || nnames > RANDPROG_POOL_MAX || !cpus || idle >= (int)nnames)
		return -EINVAL;
	g->state = seed;
	g->nnames = nnames;
	g->cpus = cpus;
	g->idle = idle;
	return 0;
}

static bool drawn(const struct randprog *p, uint32_t seg)
{
	for (uint32_t i = 0; i < p->nsegs; i++)
		if (p->seg[i] == seg)
			return true;
	return false;
}

void randprog_next(struct randprog_gen *g, struct randprog *p)
{
	uint32_t n = 1 + below(g, RANDPROG_SEGS_MAX), i;

	if (n > g->nnames)
		n = g->nnames;
	p->nsegs = 0;
	while (p->nsegs < n) {
		uint32_t seg = below(g, g->nnames);

		if (drawn(p, seg))
			continue;
		p->seg[p->nsegs] = seg;
		p->weight[p->nsegs] = 1 + below(g, RANDPROG_WEIGHT_MAX);
		p->nsegs++;
	}
	/* one program in four mostly idles: its last segment becomes the
	 * idle one, weighted up to twice the others */
	if (g->idle >= 0 && below(g, 4) == 0 && !drawn(p, (uint32_t)g->idle)) {
		i = p->nsegs < RANDPROG_SEGS_MAX ? p->nsegs++ : p->nsegs - 1;
		p->seg[i] = (uint32_t)g->idle;
		p->weight[i] = 1 + below(g, 2 * RANDPROG_WEIGHT_MAX);
	}
	/* one in eight oversubscribes the machine: cpus + 1 to 2 x cpus */
	if (below(g, 8) == 0)
		p->threads = g->cpus + 1 + below(g, g->cpus);
	else
		p->threads = 1 + below(g, g->cpus);
}

int randprog_mix(const struct randprog *p, const char *const *names, char *buf, size_t size)
{
	size_t len = 0;

	if (size)
		buf[0] = '\0';
	for (uint32_t i = 0; i < p->nsegs; i++) {
		int w = snprintf(buf + len, size - len, "%s%s:%u", i ? "," : "", names[p->seg[i]], p->weight[i]);

		if (w < 0 || (size_t)w >= size - len)
			return -ENAMETOOLONG;
		len += (size_t)w;
	}
	return (int)len;
}
