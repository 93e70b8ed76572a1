/* Two calibrations compared (oscal.h): the ratio K of their models per
 * entry, per group and over all, the paper's Table 5. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/oscal/oscal.h"
#include "host/lib/oscal/oscal_impl.h"

/* K of one entry: at each x of a's series that b measured too (or at
 * each of a's x when they share none), b's model over a's; false when no
 * x gives a ratio (a's model is 0 there). */
static bool entry_k(const struct oscal_entry *a, const struct oscal_entry *b, struct oscal_k *k)
{
	uint32_t i, j, shared = 0;
	double sum = 0;

	k->kmin = INFINITY;
	k->kmax = -INFINITY;
	k->points = 0;
	for (i = 0; i < a->nseries; i++)
		for (j = 0; j < b->nseries; j++)
			if (a->series[i].x == b->series[j].x)
				shared++;
	for (i = 0; i < a->nseries; i++) {
		double x = a->series[i].x, ta, tb, r;
		bool in_b = false;

		for (j = 0; j < b->nseries; j++)
			in_b |= b->series[j].x == x;
		if (shared && !in_b)
			continue;
		ta = oscal_model_eval(&a->model, x);
		tb = oscal_model_eval(&b->model, x);
		if (!(ta > 0) || !(tb >= 0))
			continue;
		r = tb / ta;
		sum += r;
		k->kmin = r < k->kmin ? r : k->kmin;
		k->kmax = r > k->kmax ? r : k->kmax;
		k->points++;
	}
	if (!k->points)
		return false;
	k->k = sum / k->points;
	return true;
}

/* Mean, min, max and sample sd of the rows' k selected by group (NULL:
 * all). */
static uint32_t summarise(const struct oscal_compare *c, const char *group, double *mean, double *kmin, double *kmax,
                          double *sd)
{
	uint32_t i, n = 0;
	double sum = 0, ss = 0;

	*kmin = *kmax = *mean = *sd = 0;
	for (i = 0; i < c->nrows; i++) {
		double k = c->rows[i].k;

		if (group && strcmp(c->rows[i].a->group, group))
			continue;
		if (!n || k < *kmin)
			*kmin = k;
		if (!n || k > *kmax)
			*kmax = k;
		sum += k;
		n++;
	}
	if (!n)
		return 0;
	*mean = sum / n;
	for (i = 0; i < c->nrows; i++)
		if (!group || !strcmp(c->rows[i].a->group, group))
			ss += (c->rows[i].k - *mean) * (c->rows[i].k - *mean);
	*sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
	return n;
}

int oscal_compare(const struct oscal_cal *a, const struct oscal_cal *b, struct oscal_compare *out)
{
	uint32_t i, g;

	memset(out, 0, sizeof(*out));
	if (a->nentries) {
		out->rows = calloc(a->nentries, sizeof(*out->rows));
		if (!out->rows)
			return -ENOMEM;
	}
	for (i = 0; i < a->nentries; i++) {
		const struct oscal_entry *ea = &a->entries[i];
		const struct oscal_entry *eb = oscal_cal_find(b, ea->name);
		struct oscal_k *k = &out->rows[out->nrows];

		if (!eb) {
			out->only_a++;
			continue;
		}
		if (ea->model.form == OSCAL_NONE || eb->model.form == OSCAL_NONE) {
			out->unmodelled++;
			continue;
		}
		k->a = ea;
		k->b = eb;
		if (!entry_k(ea, eb, k)) {
			out->unmodelled++;
			continue;
		}
		out->nrows++;
	}
	for (i = 0; i < b->nentries; i++)
		if (!oscal_cal_find(a, b->entries[i].name))
			out->only_b++;
	summarise(out, NULL, &out->k, &out->kmin, &out->kmax, &out->sd);
	out->sd_rel = out->k > 0 ? out->sd / out->k : 0;
	for (i = 0; i < out->nrows; i++) {
		const char *group = out->rows[i].a->group;

		for (g = 0; g < out->ngroups; g++)
			if (!strcmp(out->groups[g].group, group))
				break;
		if (g < out->ngroups || out->ngroups >= sizeof(out->groups) / sizeof(out->groups[0]))
			continue;
		snprintf(out->groups[g].group, sizeof(out->groups[g].group), "%s", group);
		out->groups[g].n = summarise(out, group, &out->groups[g].k, &out->groups[g].kmin, &out->groups[g].kmax,
		                             &out->groups[g].sd);
		out->ngroups++;
	}
	return 0;
}

void oscal_compare_release(struct oscal_compare *c)
{
	if (!c)
		return;
	free(c->rows);
	c->rows = NULL;
	c->nrows = 0;
}
