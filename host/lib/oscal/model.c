/* The paper's modelling procedure (section 4.2; oscal.h): clusters split
 * until each one's spread is under the threshold, then each cluster
 * fitted constant or linear by least squares.
 *
 * Exactly (what docs/oscal.md says):
 * - The points are sorted by x (then time) when the entry has a
 *   parameter, by time (then x) otherwise; a cluster is a run of them.
 * - A cluster's fit: the constant (the mean time) and, with a parameter
 *   and two x values at least, the least-squares line; the line is kept
 *   only when its mean absolute error is below the constant's by more
 *   than OSCAL_LINEAR_GAIN (5 %) of it.  Its spread: the sample sd of
 *   its residuals from that fit over its mean time, or over the floor
 *   when the mean is below it (times the clock cannot tell apart are not
 *   clusters).
 * - While there are fewer than OSCAL_CLUSTERS_MAX clusters, the cluster
 *   with the largest spread above the threshold that can be split is
 *   split: with a parameter at the break between two distinct x values
 *   where the least-squares lines of the two parts leave the least sum
 *   of squared residuals together (the lowest x on ties); without one at
 *   the largest gap between consecutive times (the first on ties).  A
 *   cluster of one x (or of equal times) cannot be split.  Nothing is
 *   merged back.
 * - The model: with a parameter, one cluster gives its fit (constant or
 *   linear, over the cluster's x range), several give a piecewise model
 *   of their fits, a piece per cluster over its x range.  Without one,
 *   the constant of all points (the clusters only describe the times).
 * - r² = 1 - SSres / SStot over all points (NaN for a constant);
 *   mean_abs_ns and mean_rel: mean |model - time| and mean |model -
 *   time| / max(time, 1 ns), each point with its cluster's fit.
 * The result depends on the points' values only, not their order. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/oscal/oscal.h"
#include "host/lib/oscal/oscal_impl.h"

/* One cluster while the procedure runs: points [lo, hi) of the sorted
 * copy, its best fit and that fit's spread. */
struct clu {
	size_t lo, hi;
	double m, q;   /* the kept fit: m * x + q (m = 0: constant) */
	double mae;    /* its mean absolute error */
	double ssr;    /* its sum of squared residuals */
	double spread; /* sd of its residuals / mean time */
};

static int cmp_by_x(const void *a, const void *b)
{
	const struct oscal_point *p = a, *q = b;

	if (p->x != q->x)
		return p->x < q->x ? -1 : 1;
	return p->ns < q->ns ? -1 : p->ns > q->ns;
}

static int cmp_by_ns(const void *a, const void *b)
{
	const struct oscal_point *p = a, *q = b;

	if (p->ns != q->ns)
		return p->ns < q->ns ? -1 : 1;
	return p->x < q->x ? -1 : p->x > q->x;
}

/* Fits points p[lo, hi) constant and, when linear is allowed and they
 * have two x values at least, linear; keeps the linear fit only when its
 * mean absolute error is below the constant's by more than
 * OSCAL_LINEAR_GAIN (relative). */
static void clu_fit(const struct oscal_point *p, struct clu *c, bool linear, double floor_ns)
{
	size_t i, k = c->hi - c->lo;
	double mx = 0, my = 0, sxx = 0, sxy = 0, mae_c = 0, mae_l = 0, ssr = 0, m, q, sd;

	for (i = c->lo; i < c->hi; i++) {
		mx += p[i].x;
		my += p[i].ns;
	}
	mx /= (double)k;
	my /= (double)k;
	for (i = c->lo; i < c->hi; i++)
		mae_c += fabs(p[i].ns - my);
	mae_c /= (double)k;
	c->m = 0;
	c->q = my;
	c->mae = mae_c;
	if (linear && p[c->lo].x != p[c->hi - 1].x && mae_c > 0) {
		for (i = c->lo; i < c->hi; i++) {
			sxx += (p[i].x - mx) * (p[i].x - mx);
			sxy += (p[i].x - mx) * (p[i].ns - my);
		}
		m = sxy / sxx;
		q = my - m * mx;
		for (i = c->lo; i < c->hi; i++)
			mae_l += fabs(p[i].ns - (m * p[i].x + q));
		mae_l /= (double)k;
		if (mae_l < mae_c * (1 - OSCAL_LINEAR_GAIN)) {
			c->m = m;
			c->q = q;
			c->mae = mae_l;
		}
	}
	for (i = c->lo; i < c->hi; i++) {
		double r = p[i].ns - (c->m * p[i].x + c->q);

		ssr += r * r;
	}
	c->ssr = ssr;
	sd = k > 1 ? sqrt(ssr / (double)(k - 1)) : 0;
	if (my > 0 || floor_ns > 0)
		c->spread = sd / fmax(my, floor_ns);
	else
		c->spread = sd > 0 ? INFINITY : 0;
}

/* Sums of one prefix of a cluster's points, x and times shifted by the
 * cluster's means (fewer digits lost in the differences), kept at each
 * x value's first point: points [lo, at). */
struct sums {
	double x, y, xx, xy, yy;
	size_t at;
};

/* The least-squares residual sum of squares of the points between two
 * prefixes holding cnt points; linear when the points have two x values. */
static double seg_ssr(const struct sums *a, const struct sums *b, size_t cnt, bool two_x)
{
	double n = (double)cnt, sx = b->x - a->x, sy = b->y - a->y;
	double cxx = (b->xx - a->xx) - sx * sx / n;
	double cxy = (b->xy - a->xy) - sx * sy / n;
	double cyy = (b->yy - a->yy) - sy * sy / n;
	double r = cyy;

	if (two_x && cxx > 0)
		r -= cxy * cxy / cxx;
	return r > 0 ? r : 0;
}

/* The break of cluster c along x (p sorted by x): the first point of the
 * right part, where the two parts' least-squares residuals together are
 * least (the lowest such break on ties); 0 when c has one x value.  pre
 * has room for one more than c's x values. */
static size_t split_x(const struct oscal_point *p, const struct clu *c, struct sums *pre)
{
	struct sums run = { .at = c->lo };
	size_t i, k = c->hi - c->lo, g = 0, b, best = 0;
	double mx = 0, my = 0, best_ssr = INFINITY, s;

	for (i = c->lo; i < c->hi; i++) {
		mx += p[i].x;
		my += p[i].ns;
	}
	mx /= (double)k;
	my /= (double)k;
	pre[0] = run;
	for (i = c->lo; i < c->hi; i++) {
		double x = p[i].x - mx, y = p[i].ns - my;

		if (i > c->lo && p[i].x != p[i - 1].x) {
			run.at = i;
			pre[++g] = run;
		}
		run.x += x;
		run.y += y;
		run.xx += x * x;
		run.xy += x * y;
		run.yy += y * y;
	}
	run.at = c->hi;
	pre[++g] = run; /* g: c's x values */
	for (b = 1; b < g; b++) {
		s = seg_ssr(&pre[0], &pre[b], pre[b].at - c->lo, b > 1) +
		    seg_ssr(&pre[b], &pre[g], c->hi - pre[b].at, g - b > 1);
		if (s < best_ssr) {
			best_ssr = s;
			best = pre[b].at;
		}
	}
	return best;
}

/* The break of cluster c by time (p sorted by time): after the largest
 * gap between consecutive times (the first on ties); 0 when all its
 * times are equal. */
static size_t split_ns(const struct oscal_point *p, const struct clu *c)
{
	size_t i, best = 0;
	double gap = 0;

	for (i = c->lo + 1; i < c->hi; i++)
		if (p[i].ns - p[i - 1].ns > gap) {
			gap = p[i].ns - p[i - 1].ns;
			best = i;
		}
	return best;
}

static void cluster_out(const struct oscal_point *p, const struct clu *c, bool has_param, struct oscal_cluster *o)
{
	size_t i, k = c->hi - c->lo;
	double sum = 0, lo = INFINITY, hi = -INFINITY, ss = 0;

	memset(o, 0, sizeof(*o));
	for (i = c->lo; i < c->hi; i++) {
		sum += p[i].ns;
		lo = p[i].ns < lo ? p[i].ns : lo;
		hi = p[i].ns > hi ? p[i].ns : hi;
	}
	o->mean = sum / (double)k;
	for (i = c->lo; i < c->hi; i++)
		ss += (p[i].ns - o->mean) * (p[i].ns - o->mean);
	o->sd = k > 1 ? sqrt(ss / (double)(k - 1)) : 0;
	o->lo = lo;
	o->hi = hi;
	o->n = k;
	if (has_param) {
		o->x0 = p[c->lo].x;
		o->x1 = p[c->hi - 1].x;
	}
}

/* r², the mean absolute and relative errors of the model over the
 * points, each evaluated with the fit of its cluster.  The relative
 * error divides by the time, at least 1 ns (a time of 0 is possible
 * after the overhead's subtraction). */
static void model_errors(const struct oscal_point *p, size_t n, const struct clu *cl, uint32_t ncl,
                         struct oscal_model *m)
{
	double mean = 0, sst = 0, ssr = 0, abs_sum = 0, rel_sum = 0;
	size_t i;
	uint32_t j;

	for (i = 0; i < n; i++)
		mean += p[i].ns;
	mean /= (double)n;
	for (j = 0; j < ncl; j++)
		for (i = cl[j].lo; i < cl[j].hi; i++) {
			double f = m->pieces[m->npieces > 1 ? j : 0].m * p[i].x + m->pieces[m->npieces > 1 ? j : 0].q;
			double r = p[i].ns - f;

			ssr += r * r;
			sst += (p[i].ns - mean) * (p[i].ns - mean);
			abs_sum += fabs(r);
			rel_sum += fabs(r) / (p[i].ns > 1 ? p[i].ns : 1);
		}
	m->points = n;
	m->mean_abs_ns = abs_sum / (double)n;
	m->mean_rel = rel_sum / (double)n;
	if (m->form == OSCAL_CONSTANT)
		m->r2 = NAN;
	else if (sst > 0)
		m->r2 = 1 - ssr / sst;
	else
		m->r2 = ssr > 0 ? NAN : 1;
}

int oscal_fit(const struct oscal_point *p_in, size_t n, bool has_param, double threshold, double floor_ns,
              struct oscal_cluster *c, uint32_t *nc, struct oscal_model *m)
{
	struct oscal_point *p;
	struct sums *pre = NULL;
	struct clu cl[OSCAL_CLUSTERS_MAX];
	uint32_t ncl = 1, j, worst;
	size_t at;

	*nc = 0;
	memset(m, 0, sizeof(*m));
	m->r2 = NAN;
	if (!n)
		return -EINVAL;
	p = malloc(n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(p, p_in, n * sizeof(*p));
	qsort(p, n, sizeof(*p), has_param ? cmp_by_x : cmp_by_ns);
	if (has_param) {
		/* the break search's sums: one per x value */
		size_t d = 1, i;

		for (i = 1; i < n; i++)
			d += p[i].x != p[i - 1].x;
		pre = malloc((d + 1) * sizeof(*pre));
		if (!pre) {
			free(p);
			return -ENOMEM;
		}
	}
	cl[0].lo = 0;
	cl[0].hi = n;
	clu_fit(p, &cl[0], has_param, floor_ns);
	while (ncl < OSCAL_CLUSTERS_MAX) {
		/* the splittable cluster with the largest spread above the threshold */
		worst = ncl;
		at = 0;
		for (j = 0; j < ncl; j++) {
			size_t b;

			if (!(cl[j].spread > threshold) || (worst < ncl && cl[j].spread <= cl[worst].spread))
				continue;
			b = has_param ? split_x(p, &cl[j], pre) : split_ns(p, &cl[j]);
			if (b) {
				worst = j;
				at = b;
			}
		}
		if (worst == ncl)
			break;
		memmove(&cl[worst + 2], &cl[worst + 1], (ncl - worst - 1) * sizeof(cl[0]));
		cl[worst + 1].lo = at;
		cl[worst + 1].hi = cl[worst].hi;
		cl[worst].hi = at;
		clu_fit(p, &cl[worst], has_param, floor_ns);
		clu_fit(p, &cl[worst + 1], has_param, floor_ns);
		ncl++;
	}
	for (j = 0; j < ncl; j++)
		cluster_out(p, &cl[j], has_param, &c[j]);
	*nc = ncl;

	if (!has_param || ncl == 1) {
		/* one model over all points: a cluster by time is a hidden state,
		 * not a parameter, so the model stays the constant of all */
		struct clu all = { .lo = 0, .hi = n };

		if (has_param)
			all = cl[0];
		else
			clu_fit(p, &all, false, floor_ns);
		m->form = all.m != 0 ? OSCAL_LINEAR : OSCAL_CONSTANT;
		m->npieces = 1;
		m->pieces[0].x0 = p[0].x;
		m->pieces[0].x1 = p[n - 1].x;
		if (!has_param)
			m->pieces[0].x0 = m->pieces[0].x1 = 0;
		m->pieces[0].m = all.m;
		m->pieces[0].q = all.q;
		model_errors(p, n, &all, 1, m);
	} else {
		m->form = OSCAL_PIECEWISE;
		m->npieces = ncl;
		for (j = 0; j < ncl; j++) {
			m->pieces[j].x0 = p[cl[j].lo].x;
			m->pieces[j].x1 = p[cl[j].hi - 1].x;
			m->pieces[j].m = cl[j].m;
			m->pieces[j].q = cl[j].q;
		}
		model_errors(p, n, cl, ncl, m);
	}
	free(p);
	free(pre);
	return 0;
}

static double piece_at(const struct oscal_piece *pc, double x)
{
	return pc->m * x + pc->q;
}

/* Below the first piece its line, above the last piece its line, inside
 * a piece's [x0, x1] that piece's line, and between two pieces' ranges
 * the straight line from the one's end to the next one's start (no jump
 * inside a gap nothing was measured in); never below 0. */
double oscal_model_eval(const struct oscal_model *m, double x)
{
	const struct oscal_piece *pc = m->pieces;
	uint32_t i, n = m->npieces;
	double t;

	if (m->form == OSCAL_NONE || !n || n > OSCAL_PIECES_MAX)
		return NAN;
	if (x <= pc[0].x1 || n == 1)
		t = piece_at(&pc[0], x);
	else if (x >= pc[n - 1].x0)
		t = piece_at(&pc[n - 1], x);
	else {
		t = NAN;
		for (i = 1; i < n; i++) {
			if (x <= pc[i - 1].x1) {
				t = piece_at(&pc[i - 1], x);
				break;
			}
			if (x < pc[i].x0) {
				/* between two pieces' measured ranges: the straight line
				 * from the one's end to the other's start */
				double a = piece_at(&pc[i - 1], pc[i - 1].x1), b = piece_at(&pc[i], pc[i].x0);
				double w = (x - pc[i - 1].x1) / (pc[i].x0 - pc[i - 1].x1);

				t = a + (b - a) * w;
				break;
			}
			if (x <= pc[i].x1) {
				t = piece_at(&pc[i], x);
				break;
			}
		}
	}
	/* a line extended below its range may go below 0: no time is */
	return t > 0 ? t : 0;
}

const char *oscal_form_name(enum oscal_form f)
{
	switch (f) {
	case OSCAL_CONSTANT:
		return "constant";
	case OSCAL_LINEAR:
		return "linear";
	case OSCAL_PIECEWISE:
		return "piecewise";
	case OSCAL_NONE:
		break;
	}
	return "none";
}
