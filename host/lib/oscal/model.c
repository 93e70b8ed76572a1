/* The paper's modelling procedure (section 4.2; oscal.h): clusters split
 * until each one's spread is under the threshold, then each cluster
 * fitted constant or linear by least squares. */
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
static void clu_fit(const struct oscal_point *p, struct clu *c, bool linear)
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
	if (my > 0)
		c->spread = sd / my;
	else
		c->spread = sd > 0 ? INFINITY : 0;
}

/* Sums of one prefix of a cluster's points, x and times shifted by the
 * cluster's means (fewer digits lost in the differences). */
struct sums {
	double x, y, xx, xy, yy;
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
 * least (the lowest such break on ties); 0 when c has one x value. */
static size_t split_x(const struct oscal_point *p, const struct clu *c, struct sums *pre)
{
	size_t i, k = c->hi - c->lo, best = 0;
	double mx = 0, my = 0, best_ssr = INFINITY, s;

	for (i = c->lo; i < c->hi; i++) {
		mx += p[i].x;
		my += p[i].ns;
	}
	mx /= (double)k;
	my /= (double)k;
	memset(&pre[0], 0, sizeof(pre[0]));
	for (i = 0; i < k; i++) {
		double x = p[c->lo + i].x - mx, y = p[c->lo + i].ns - my;

		pre[i + 1].x = pre[i].x + x;
		pre[i + 1].y = pre[i].y + y;
		pre[i + 1].xx = pre[i].xx + x * x;
		pre[i + 1].xy = pre[i].xy + x * y;
		pre[i + 1].yy = pre[i].yy + y * y;
	}
	for (i = 1; i < k; i++) {
		size_t at = c->lo + i;

		if (p[at - 1].x == p[at].x)
			continue;
		s = seg_ssr(&pre[0], &pre[i], i, p[c->lo].x != p[at - 1].x) +
		    seg_ssr(&pre[i], &pre[k], k - i, p[at].x != p[c->hi - 1].x);
		if (s < best_ssr) {
			best_ssr = s;
			best = at;
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

int oscal_fit(const struct oscal_point *p_in, size_t n, bool has_param, double threshold, struct oscal_cluster *c,
              uint32_t *nc, struct oscal_model *m)
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
	if (has_param)
		pre = malloc((n + 1) * sizeof(*pre));
	if (!p || (has_param && !pre)) {
		free(p);
		free(pre);
		return -ENOMEM;
	}
	memcpy(p, p_in, n * sizeof(*p));
	qsort(p, n, sizeof(*p), has_param ? cmp_by_x : cmp_by_ns);
	cl[0].lo = 0;
	cl[0].hi = n;
	clu_fit(p, &cl[0], has_param);
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
		clu_fit(p, &cl[worst], has_param);
		clu_fit(p, &cl[worst + 1], has_param);
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
			clu_fit(p, &all, false);
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
