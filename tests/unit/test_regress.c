/* Unit test of the energy model's fit (host/lib/energy/regress.c, GSL):
 * known coefficients are recovered and unrelated events eliminated;
 * constant and collinear candidates are dropped with their reasons; a
 * simple regression matches the textbook formulas (coefficients, standard
 * errors, t, p, R^2, F, and the cross-validation's folds computed here
 * independently); bad data is refused with its message. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "host/lib/energy/emodel.h"
#include "tests/unit/check.h"

#define NMAX 200
#define KMAX 8

static uint64_t rng_state;

static uint64_t splitmix64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(double lo, double hi)
{
	return lo + (hi - lo) * ((double)(splitmix64() >> 11) * 0x1p-53);
}

static double normal(double sd)
{
	double u = uniform(0x1p-53, 1), v = uniform(0, 1);

	return sd * sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* A data set: x[n][k] row-major, y[n], names. */
static double x[NMAX * KMAX], y[NMAX];
static char names[KMAX][EMODEL_NAME_MAX];

static struct emodel_data data(uint32_t n, uint32_t k)
{
	struct emodel_data d = { n, k, x, y, names };
	uint32_t j;

	for (j = 0; j < k; j++)
		snprintf(names[j], sizeof(names[j]), "x%u", j + 1);
	return d;
}

static const struct emodel_term *find(const struct emodel_term *t, uint32_t n, const char *name)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

static int near(double got, double want, double rel)
{
	if (fabs(got - want) <= rel * fabs(want))
		return 1;
	printf("  got %.17g, want %.17g (within %g)\n", got, want, rel);
	return 0;
}

#define CHECK_NEAR(got, want, rel) CHECK(near((got), (want), (rel)))

/* y = 3 + 2e-9 x1 + 5e-8 x2 + noise (sd 0.01 W); x3, x4 unrelated;
 * optionally x5 constant, x6 = 3 x1 + x2, x7 = x2. */
static void make_known(uint32_t n, uint32_t k)
{
	uint32_t i;

	rng_state = 20;
	for (i = 0; i < n; i++) {
		double *r = &x[i * k];

		r[0] = uniform(0, 2e9);
		r[1] = uniform(0, 4e7);
		r[2] = uniform(0, 1e6);
		r[3] = uniform(0, 1e3);
		if (k > 4) {
			r[4] = 7;
			r[5] = 3 * r[0] + r[1];
			r[6] = r[1];
		}
		y[i] = 3 + 2e-9 * r[0] + 5e-8 * r[1] + normal(0.01);
	}
}

static void check_known(const struct emodel *m)
{
	const struct emodel_term *t;
	uint32_t i;

	CHECK_STR(m->c0.name, "const");
	CHECK_NEAR(m->c0.coef, 3, 0.02);
	if (!CHECK_EQ_U64(m->nterms, 2))
		return;
	CHECK_STR(m->terms[0].name, "x1");
	CHECK_NEAR(m->terms[0].coef, 2e-9, 0.02);
	CHECK_STR(m->terms[1].name, "x2");
	CHECK_NEAR(m->terms[1].coef, 5e-8, 0.02);
	for (i = 0; i < m->nterms; i++)
		CHECK(m->terms[i].p <= 0.05 && m->terms[i].se > 0 && m->terms[i].t > 0);
	t = find(m->dropped, m->ndropped, "x3");
	CHECK(t && !strncmp(t->why, "insignificant (p=", 17) && t->p > 0.05 && !isnan(t->coef));
	t = find(m->dropped, m->ndropped, "x4");
	CHECK(t && !strncmp(t->why, "insignificant (p=", 17) && t->p > 0.05 && !isnan(t->coef));
	CHECK(m->fit.r2 > 0.999 && m->fit.adj_r2 > 0.999 && m->fit.adj_r2 < m->fit.r2);
	CHECK(m->fit.f > 1000 && m->fit.f_p < 1e-30);
	CHECK_NEAR(m->fit.rmse, 0.01, 0.3);
	CHECK_EQ_U64(m->fit.n, 60);
	CHECK(m->fit.alpha == 0.05);
	CHECK_EQ_U64(m->cv.folds, 5);
	CHECK(m->cv.mean_abs_pct > 0 && m->cv.mean_abs_pct < 0.5);
	CHECK(m->cv.max_abs_pct >= m->cv.mean_abs_pct && m->cv.max_abs_pct < 2);
	printf("known: const %.6g (se %.2g), x1 %.6g, x2 %.6g; dropped %u; R2 %.6f F %.4g p %.3g; CV %.3f%% max "
	       "%.3f%%\n",
	       m->c0.coef, m->c0.se, m->terms[0].coef, m->terms[1].coef, m->ndropped, m->fit.r2, m->fit.f, m->fit.f_p,
	       m->cv.mean_abs_pct, m->cv.max_abs_pct);
}

static void test_known(void)
{
	static struct emodel m;
	struct emodel_data d;
	char err[256] = "";

	make_known(60, 4);
	d = data(60, 4);
	emodel_init(&m);
	snprintf(m.source, sizeof(m.source), "cmd:meter");
	if (!CHECK_EQ_U64(emodel_fit(&m, &d, 0.05, 5, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	check_known(&m);
	CHECK_EQ_U64(m.ndropped, 2);
	CHECK_STR(m.source, "cmd:meter"); /* the rest of m is left as it was */
}

static void test_screening(void)
{
	static struct emodel m;
	struct emodel_data d;
	char err[256] = "";

	make_known(60, 7);
	d = data(60, 7);
	emodel_init(&m);
	if (!CHECK_EQ_U64(emodel_fit(&m, &d, 0.05, 5, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	check_known(&m);
	if (!CHECK_EQ_U64(m.ndropped, 5))
		return;
	/* screening first, in the candidates' order; then the elimination */
	CHECK_STR(m.dropped[0].name, "x5");
	CHECK_STR(m.dropped[0].why, "constant in the training data");
	CHECK(isnan(m.dropped[0].coef) && isnan(m.dropped[0].p));
	CHECK_STR(m.dropped[1].name, "x6");
	CHECK_STR(m.dropped[1].why, "collinear with x1, x2");
	CHECK_STR(m.dropped[2].name, "x7");
	CHECK_STR(m.dropped[2].why, "collinear with x2");
	CHECK(!strncmp(m.dropped[3].why, "insignificant", 13) && !strncmp(m.dropped[4].why, "insignificant", 13));
}

/* Rates of large magnitude and little spread (a machine always busy):
 * standardising keeps the fit exact where the raw design is near
 * singular with the constant. */
static void test_conditioning(void)
{
	static struct emodel m;
	struct emodel_data d;
	char err[256] = "";
	uint32_t i;

	rng_state = 7;
	for (i = 0; i < 40; i++) {
		x[i * 2] = 5e9 + uniform(0, 1e7);
		x[i * 2 + 1] = 1e12 + uniform(0, 1e8);
		y[i] = 3 + 2e-8 * x[i * 2] + 1e-9 * x[i * 2 + 1] + normal(0.0005);
	}
	d = data(40, 2);
	emodel_init(&m);
	if (!CHECK_EQ_U64(emodel_fit(&m, &d, 0.05, 0, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	if (!CHECK_EQ_U64(m.nterms, 2))
		return;
	CHECK_NEAR(m.terms[0].coef, 2e-8, 0.02);
	CHECK_NEAR(m.terms[1].coef, 1e-9, 0.02);
	/* extrapolated from 1100 W away: known to its standard error */
	CHECK(m.c0.se > 0.1 && fabs(m.c0.coef - 3) < 4 * m.c0.se);
	CHECK_EQ_U64(m.cv.folds, 0);
	CHECK(isnan(m.cv.mean_abs_pct));
}

/* The textbook formulas of y = a + b x. */
struct simple {
	double a, b, se_a, se_b, sse, sst;
};

static struct simple simple_fit(const double *xs, const double *ys, uint32_t n)
{
	struct simple s = { 0 };
	double mx = 0, my = 0, sxx = 0, sxy = 0, s2;
	uint32_t i;

	for (i = 0; i < n; i++) {
		mx += xs[i];
		my += ys[i];
	}
	mx /= n;
	my /= n;
	for (i = 0; i < n; i++) {
		sxx += (xs[i] - mx) * (xs[i] - mx);
		sxy += (xs[i] - mx) * (ys[i] - my);
		s.sst += (ys[i] - my) * (ys[i] - my);
	}
	s.b = sxy / sxx;
	s.a = my - s.b * mx;
	for (i = 0; i < n; i++)
		s.sse += (ys[i] - s.a - s.b * xs[i]) * (ys[i] - s.a - s.b * xs[i]);
	s2 = s.sse / (n - 2);
	s.se_b = sqrt(s2 / sxx);
	s.se_a = sqrt(s2 * (1.0 / n + mx * mx / sxx));
	return s;
}

static void test_simple(void)
{
	static struct emodel m;
	struct emodel_data d;
	struct simple s;
	double xs[NMAX], ys[NMAX], sum = 0, worst = 0, f;
	char err[256] = "";
	uint32_t i, k, n = 23, folds = 4, nt;

	rng_state = 99;
	for (i = 0; i < n; i++) {
		x[i] = uniform(1e6, 3e6);
		y[i] = 2 + 1e-6 * x[i] + normal(0.2);
	}
	d = data(n, 1);
	emodel_init(&m);
	/* alpha 1: nothing is eliminated, in the folds either */
	if (!CHECK_EQ_U64(emodel_fit(&m, &d, 1, folds, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	s = simple_fit(x, y, n);
	if (!CHECK_EQ_U64(m.nterms, 1))
		return;
	CHECK_NEAR(m.terms[0].coef, s.b, 1e-9);
	CHECK_NEAR(m.terms[0].se, s.se_b, 1e-9);
	CHECK_NEAR(m.terms[0].t, s.b / s.se_b, 1e-9);
	CHECK_NEAR(m.terms[0].p, 2 * gsl_cdf_tdist_Q(fabs(s.b / s.se_b), n - 2), 1e-6);
	CHECK_NEAR(m.c0.coef, s.a, 1e-9);
	CHECK_NEAR(m.c0.se, s.se_a, 1e-9);
	CHECK_NEAR(m.c0.t, s.a / s.se_a, 1e-9);
	CHECK_NEAR(m.c0.p, 2 * gsl_cdf_tdist_Q(fabs(s.a / s.se_a), n - 2), 1e-6);
	CHECK_NEAR(m.fit.r2, 1 - s.sse / s.sst, 1e-9);
	CHECK_NEAR(m.fit.adj_r2, 1 - (s.sse / (n - 2)) / (s.sst / (n - 1)), 1e-9);
	f = (s.sst - s.sse) / (s.sse / (n - 2));
	CHECK_NEAR(m.fit.f, f, 1e-9);
	CHECK_NEAR(m.fit.f_p, gsl_cdf_fdist_Q(f, 1, n - 2), 1e-6);
	CHECK_NEAR(m.fit.rmse, sqrt(s.sse / n), 1e-9);
	/* in simple regression F = t^2 */
	CHECK_NEAR(m.fit.f, m.terms[0].t * m.terms[0].t, 1e-9);

	/* the folds: observation i held out in fold i % folds */
	for (k = 0; k < folds; k++) {
		for (i = nt = 0; i < n; i++)
			if (i % folds != k) {
				xs[nt] = x[i];
				ys[nt++] = y[i];
			}
		s = simple_fit(xs, ys, nt);
		for (i = k; i < n; i += folds) {
			double pct = fabs(s.a + s.b * x[i] - y[i]) / y[i] * 100;

			sum += pct;
			worst = fmax(worst, pct);
		}
	}
	CHECK_EQ_U64(m.cv.folds, folds);
	CHECK_NEAR(m.cv.mean_abs_pct, sum / n, 1e-9);
	CHECK_NEAR(m.cv.max_abs_pct, worst, 1e-9);
}

/* Everything insignificant: the constant alone, its mean. */
static void test_constant_only(void)
{
	static struct emodel m;
	struct emodel_data d;
	char err[256] = "";
	double mean = 0;
	uint32_t i;

	rng_state = 5;
	for (i = 0; i < 30; i++) {
		x[i] = uniform(0, 1);
		y[i] = 10 + normal(0.1);
		mean += y[i];
	}
	d = data(30, 1);
	emodel_init(&m);
	/* a tiny alpha: the unrelated x1 goes whatever its p */
	if (!CHECK_EQ_U64(emodel_fit(&m, &d, 1e-12, 3, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	CHECK_EQ_U64(m.nterms, 0);
	CHECK_EQ_U64(m.ndropped, 1);
	CHECK_NEAR(m.c0.coef, mean / 30, 1e-12);
	CHECK_NEAR(m.fit.r2, 0, 1e-12);
	CHECK(isnan(m.fit.f) && isnan(m.fit.f_p));
}

static void bad(struct emodel_data *d, double alpha, uint32_t folds, int want, const char *msg)
{
	static struct emodel m;
	char err[256] = "";

	emodel_init(&m);
	m.c0.coef = 42;
	CHECK_EQ_U64(emodel_fit(&m, d, alpha, folds, err, sizeof(err)), want);
	CHECK_STR(err, msg);
	CHECK(m.c0.coef == 42); /* m is left as it was */
}

static void test_bad(void)
{
	struct emodel_data d;

	make_known(60, 4);
	d = data(5, 4);
	bad(&d, 0.05, 0, -EINVAL,
	    "5 observations are too few for 4 candidate events: at least 6 are needed (one per event, one for the "
	    "constant, one to judge the fit)");
	d = data(7, 4);
	bad(&d, 0.05, 5, -EINVAL,
	    "7 observations are too few for 5-fold cross-validation of 4 candidate events: a fold trains on 5, at "
	    "least 6 are needed");
	d = data(60, 4);
	bad(&d, 0.05, 1, -EINVAL, "cannot cross-validate with 1 folds of 60 observations (2 to 60 folds)");
	bad(&d, 0, 5, -EINVAL, "the significance level 0 is not in (0, 1]");
	snprintf(names[2], sizeof(names[2]), "x1");
	bad(&d, 0.05, 5, -EINVAL, "event 'x1' is a candidate twice");
	d = data(60, 4);
	x[4 * 3 + 2] = NAN;
	bad(&d, 0.05, 5, -EINVAL, "observation 4 has no finite rate of x3");
	make_known(60, 4);
	y[9] = 0;
	bad(&d, 0.05, 5, -EINVAL, "observation 10 has no positive power (0 W)");
	for (uint32_t i = 0; i < 60; i++)
		y[i] = 4.25;
	bad(&d, 0.05, 5, -EINVAL, "the measured power does not vary (4.25 W in every program): nothing to fit");
}

int main(void)
{
	test_known();
	test_screening();
	test_conditioning();
	test_simple();
	test_constant_only();
	test_bad();
	return check_summary();
}
