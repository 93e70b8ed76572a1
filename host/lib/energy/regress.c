/* Fitting the energy model (emodel_fit, see emodel.h) with GSL: screening
 * of the candidates (constant, collinear), ordinary least squares with
 * backward elimination by p-value, the F test of what remains, and k-fold
 * cross-validation of the whole procedure.  docs/energy.md ("How the model
 * is fitted") states the method; this file is its only implementation.
 * Built only with GSL (host/CMakeLists.txt leaves it out otherwise). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_vector.h>

#include "host/lib/energy/emodel.h"

/* A candidate whose values differ by no more than this fraction of their
 * magnitude is constant (exact equality, less the rounding of rates). */
#define REGRESS_CONST_TOL 1e-12
/* A candidate is collinear with the earlier ones when the part of its
 * standardised values that they do not explain has a norm below this
 * fraction of the whole: the standardised design would have a condition
 * number above ~1e7, and its coefficients would mean nothing. */
#define REGRESS_COLLINEAR_TOL 1e-7
/* Of the earlier candidates a collinear one is a combination of, those
 * whose standardised weight is at least this fraction of the largest are
 * named in its reason. */
#define REGRESS_NAME_TOL 1e-3
/* Observations at most (a bound on what is allocated: n x k doubles). */
#define REGRESS_OBS_MAX (1u << 20)

/* One run of the procedure on some rows of the data (all of them, or one
 * fold's training rows). */
struct fitrun {
	const struct emodel_data *d;
	const uint32_t *rows;            /* borrowed: the observations used */
	uint32_t n;                      /* how many */
	double mean[EMODEL_TERMS_MAX];   /* of each candidate over the rows */
	double sd[EMODEL_TERMS_MAX];     /* its sample standard deviation */
	uint32_t cols[EMODEL_TERMS_MAX]; /* candidates in the model, in their order */
	uint32_t q;
	char *err;
	size_t errlen;
};

/* What one least squares fit gives, in original units: [0] is the
 * constant, [1 + i] the candidate cols[i]. */
struct ols {
	double coef[EMODEL_TERMS_MAX + 1], se[EMODEL_TERMS_MAX + 1];
	double t[EMODEL_TERMS_MAX + 1], p[EMODEL_TERMS_MAX + 1];
	double sse; /* sum of squared residuals, W^2 */
};

static double x_at(const struct fitrun *f, uint32_t r, uint32_t col)
{
	return f->d->x[(size_t)f->rows[r] * f->d->k + col];
}

static double y_at(const struct fitrun *f, uint32_t r)
{
	return f->d->y[f->rows[r]];
}

static bool is_constant(double lo, double hi)
{
	return hi - lo <= REGRESS_CONST_TOL * fmax(fabs(lo), fabs(hi));
}

static int no_memory(struct fitrun *f)
{
	snprintf(f->err, f->errlen, "cannot fit the energy model: out of memory");
	return -ENOMEM;
}

/* t and its two-sided p-value for a coefficient and its standard error
 * with dof degrees of freedom; an exact fit (se 0) is infinitely sure. */
static void t_test(double coef, double se, double dof, double *t, double *p)
{
	if (se > 0) {
		*t = coef / se;
		*p = fmin(1.0, 2 * gsl_cdf_tdist_Q(fabs(*t), dof));
	} else if (coef != 0 && se == 0) {
		*t = copysign(INFINITY, coef);
		*p = 0;
	} else {
		*t = NAN;
		*p = NAN;
	}
}

/* Least squares of y on the constant and the candidates cols[0..q), on
 * standardised columns ((x - mean) / sd: the design is well conditioned
 * whatever the rates' magnitudes); the coefficients and their covariance
 * are turned back into original units:
 *   coef_i = b_i / sd_i,  c0 = b_0 - sum b_i mean_i / sd_i,
 *   var(coef_i) = C_ii / sd_i^2,  var(c0) = g' C g with g = (1, -mean_i / sd_i). */
static int ols_fit(struct fitrun *f, const uint32_t *cols, uint32_t q, struct ols *o)
{
	gsl_multifit_linear_workspace *w = NULL;
	gsl_matrix *X = NULL, *C = NULL;
	gsl_vector *y = NULL, *b = NULL;
	double g[EMODEL_TERMS_MAX + 1], var, dof = (double)f->n - q - 1;
	uint32_t r, i, j;
	int rc = 0;

	X = gsl_matrix_alloc(f->n, q + 1);
	C = gsl_matrix_alloc(q + 1, q + 1);
	y = gsl_vector_alloc(f->n);
	b = gsl_vector_alloc(q + 1);
	w = gsl_multifit_linear_alloc(f->n, q + 1);
	if (!X || !C || !y || !b || !w) {
		rc = no_memory(f);
		goto out;
	}
	for (r = 0; r < f->n; r++) {
		gsl_matrix_set(X, r, 0, 1.0);
		for (i = 0; i < q; i++)
			gsl_matrix_set(X, r, i + 1, (x_at(f, r, cols[i]) - f->mean[cols[i]]) / f->sd[cols[i]]);
		gsl_vector_set(y, r, y_at(f, r));
	}
	if (gsl_multifit_linear(X, y, b, C, &o->sse, w)) {
		snprintf(f->err, f->errlen, "cannot fit the energy model: the least squares solver failed");
		rc = -EINVAL;
		goto out;
	}
	g[0] = 1;
	o->coef[0] = gsl_vector_get(b, 0);
	for (i = 0; i < q; i++) {
		double sd = f->sd[cols[i]];

		o->coef[i + 1] = gsl_vector_get(b, i + 1) / sd;
		o->se[i + 1] = sqrt(gsl_matrix_get(C, i + 1, i + 1)) / sd;
		g[i + 1] = -f->mean[cols[i]] / sd;
		o->coef[0] += g[i + 1] * gsl_vector_get(b, i + 1);
	}
	var = 0;
	for (i = 0; i <= q; i++)
		for (j = 0; j <= q; j++)
			var += g[i] * gsl_matrix_get(C, i, j) * g[j];
	o->se[0] = sqrt(fmax(var, 0));
	for (i = 0; i <= q; i++)
		t_test(o->coef[i], o->se[i], dof, &o->t[i], &o->p[i]);
out:
	gsl_multifit_linear_free(w);
	gsl_vector_free(b);
	gsl_vector_free(y);
	gsl_matrix_free(C);
	gsl_matrix_free(X);
	return rc;
}

static void drop(struct emodel *m, const char *name, const char *why)
{
	struct emodel_term *t = &m->dropped[m->ndropped++];

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->coef = t->se = t->t = t->p = NAN;
	snprintf(t->why, sizeof(t->why), "%s", why);
}

/* The reason of a collinear candidate z: "collinear with a, b", naming the
 * kept candidates it is (nearly) a combination of, from the least squares
 * of its standardised values on theirs. */
static int collinear_why(struct fitrun *f, const double *z, const double *kept, char *why, size_t size)
{
	gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(f->n, f->q);
	gsl_matrix *X = gsl_matrix_alloc(f->n, f->q), *C = gsl_matrix_alloc(f->q, f->q);
	gsl_vector *b = gsl_vector_alloc(f->q);
	gsl_vector_const_view zv = gsl_vector_const_view_array(z, f->n);
	double chisq, top = 0;
	bool named = false;
	size_t len;
	uint32_t r, i;
	int rc = 0;

	if (!w || !X || !C || !b) {
		rc = no_memory(f);
		goto out;
	}
	for (r = 0; r < f->n; r++)
		for (i = 0; i < f->q; i++)
			gsl_matrix_set(X, r, i, kept[(size_t)i * f->n + r]);
	len = (size_t)snprintf(why, size, "collinear with");
	if (gsl_multifit_linear(X, &zv.vector, b, C, &chisq, w))
		goto out; /* named with nothing: cannot happen on kept columns */
	for (i = 0; i < f->q; i++)
		top = fmax(top, fabs(gsl_vector_get(b, i)));
	for (i = 0; i < f->q && len < size; i++)
		if (fabs(gsl_vector_get(b, i)) >= REGRESS_NAME_TOL * top) {
			len +=
			    (size_t)snprintf(why + len, size - len, "%s %s", named ? "," : "", f->d->names[f->cols[i]]);
			named = true;
		}
out:
	gsl_vector_free(b);
	gsl_matrix_free(C);
	gsl_matrix_free(X);
	gsl_multifit_linear_free(w);
	return rc;
}

/* Keeps in f->cols the candidates that vary and are not collinear with
 * earlier kept ones (modified Gram-Schmidt, twice, on the standardised
 * columns: a QR of the design); the others go to m->dropped with why. */
static int screen(struct fitrun *f, struct emodel *m)
{
	const struct emodel_data *d = f->d;
	double *kept = NULL, *basis = NULL, *z = NULL, *v;
	char why[sizeof(m->dropped[0].why)];
	uint32_t j, r, i, pass;
	int rc = 0;

	kept = malloc(sizeof(double) * f->n * (d->k ? d->k : 1));
	basis = malloc(sizeof(double) * f->n * (d->k ? d->k : 1));
	z = malloc(sizeof(double) * f->n);
	if (!kept || !basis || !z) {
		rc = no_memory(f);
		goto out;
	}
	f->q = 0;
	for (j = 0; j < d->k; j++) {
		double lo = INFINITY, hi = -INFINITY, sum = 0, ss = 0, norm = 0, rest = 0;

		for (r = 0; r < f->n; r++) {
			lo = fmin(lo, x_at(f, r, j));
			hi = fmax(hi, x_at(f, r, j));
			sum += x_at(f, r, j);
		}
		f->mean[j] = sum / f->n;
		for (r = 0; r < f->n; r++)
			ss += (x_at(f, r, j) - f->mean[j]) * (x_at(f, r, j) - f->mean[j]);
		f->sd[j] = sqrt(ss / (f->n - 1));
		if (is_constant(lo, hi) || !(f->sd[j] > 0)) {
			drop(m, d->names[j], "constant in the training data");
			continue;
		}
		for (r = 0; r < f->n; r++) {
			z[r] = (x_at(f, r, j) - f->mean[j]) / f->sd[j];
			norm += z[r] * z[r];
		}
		v = basis + (size_t)f->q * f->n;
		memcpy(v, z, sizeof(double) * f->n);
		for (pass = 0; pass < 2; pass++)
			for (i = 0; i < f->q; i++) {
				const double *b = basis + (size_t)i * f->n;
				double dot = 0;

				for (r = 0; r < f->n; r++)
					dot += b[r] * v[r];
				for (r = 0; r < f->n; r++)
					v[r] -= dot * b[r];
			}
		for (r = 0; r < f->n; r++)
			rest += v[r] * v[r];
		if (sqrt(rest) < REGRESS_COLLINEAR_TOL * sqrt(norm)) {
			rc = collinear_why(f, z, kept, why, sizeof(why));
			if (rc)
				goto out;
			drop(m, d->names[j], why);
			continue;
		}
		for (r = 0; r < f->n; r++)
			v[r] /= sqrt(rest);
		memcpy(kept + (size_t)f->q * f->n, z, sizeof(double) * f->n);
		f->cols[f->q++] = j;
	}
out:
	free(z);
	free(basis);
	free(kept);
	return rc;
}

/* The whole procedure on f's rows: screening, backward elimination, the
 * final fit and its statistics into m (c0, terms, dropped, fit). */
static int procedure(struct fitrun *f, double alpha, struct emodel *m)
{
	double lo = INFINITY, hi = -INFINITY, ybar = 0, sst = 0, dof;
	struct ols o;
	uint32_t r, i, worst;
	char why[sizeof(m->dropped[0].why)];
	int rc;

	for (r = 0; r < f->n; r++) {
		lo = fmin(lo, y_at(f, r));
		hi = fmax(hi, y_at(f, r));
		ybar += y_at(f, r);
	}
	ybar /= f->n;
	if (is_constant(lo, hi)) {
		snprintf(f->err, f->errlen, "the measured power does not vary (%g W in every program): nothing to fit",
		         lo);
		return -EINVAL;
	}
	for (r = 0; r < f->n; r++)
		sst += (y_at(f, r) - ybar) * (y_at(f, r) - ybar);
	m->nterms = m->ndropped = 0;
	rc = screen(f, m);
	if (rc)
		return rc;
	for (;;) {
		rc = ols_fit(f, f->cols, f->q, &o);
		if (rc)
			return rc;
		worst = 0;
		for (i = 1; i <= f->q; i++)
			if (o.p[i] > alpha && (!worst || o.p[i] > o.p[worst]))
				worst = i;
		if (!worst)
			break;
		snprintf(why, sizeof(why), "insignificant (p=%.2g)", o.p[worst]);
		drop(m, f->d->names[f->cols[worst - 1]], why);
		m->dropped[m->ndropped - 1].coef = o.coef[worst];
		m->dropped[m->ndropped - 1].se = o.se[worst];
		m->dropped[m->ndropped - 1].t = o.t[worst];
		m->dropped[m->ndropped - 1].p = o.p[worst];
		memmove(&f->cols[worst - 1], &f->cols[worst], sizeof(f->cols[0]) * (f->q - worst));
		f->q--;
	}

	snprintf(m->c0.name, sizeof(m->c0.name), "const");
	m->c0.coef = o.coef[0];
	m->c0.se = o.se[0];
	m->c0.t = o.t[0];
	m->c0.p = o.p[0];
	m->c0.why[0] = '\0';
	for (i = 0; i < f->q; i++) {
		struct emodel_term *t = &m->terms[i];

		memset(t, 0, sizeof(*t));
		snprintf(t->name, sizeof(t->name), "%s", f->d->names[f->cols[i]]);
		t->coef = o.coef[i + 1];
		t->se = o.se[i + 1];
		t->t = o.t[i + 1];
		t->p = o.p[i + 1];
	}
	m->nterms = f->q;
	dof = (double)f->n - f->q - 1;
	m->fit.n = f->n;
	m->fit.alpha = alpha;
	m->fit.r2 = 1 - o.sse / sst;
	m->fit.adj_r2 = 1 - (o.sse / dof) / (sst / (f->n - 1));
	m->fit.rmse = sqrt(o.sse / f->n);
	if (!f->q) {
		m->fit.f = m->fit.f_p = NAN; /* no term to test */
	} else if (o.sse > 0) {
		m->fit.f = ((sst - o.sse) / f->q) / (o.sse / dof);
		m->fit.f_p = gsl_cdf_fdist_Q(m->fit.f, f->q, dof);
	} else {
		m->fit.f = INFINITY;
		m->fit.f_p = 0;
	}
	return 0;
}

/* The model's prediction for observation i (W). */
static double predict(const struct emodel *m, const struct fitrun *f, uint32_t i)
{
	double w = m->c0.coef;
	uint32_t t;

	for (t = 0; t < m->nterms; t++)
		w += m->terms[t].coef * f->d->x[(size_t)i * f->d->k + f->cols[t]];
	return w;
}

/* Refuses data the procedure cannot use, with the reason. */
static int check_data(const struct emodel_data *d, double alpha, uint32_t folds, char *err, size_t errlen)
{
	uint32_t i, j, train;

	if (d->k > EMODEL_TERMS_MAX) {
		snprintf(err, errlen, "%u candidate events are more than the %u a model may have", d->k,
		         EMODEL_TERMS_MAX);
		return -EINVAL;
	}
	if (!(alpha > 0 && alpha <= 1)) {
		snprintf(err, errlen, "the significance level %g is not in (0, 1]", alpha);
		return -EINVAL;
	}
	for (j = 0; j < d->k; j++) {
		if (!d->names[j][0] || strnlen(d->names[j], EMODEL_NAME_MAX) == EMODEL_NAME_MAX ||
		    !strcmp(d->names[j], "const")) {
			snprintf(err, errlen, "candidate %u has no usable event name", j + 1);
			return -EINVAL;
		}
		for (i = 0; i < j; i++)
			if (!strcmp(d->names[i], d->names[j])) {
				snprintf(err, errlen, "event '%s' is a candidate twice", d->names[j]);
				return -EINVAL;
			}
	}
	if (d->n > REGRESS_OBS_MAX) {
		snprintf(err, errlen, "%u observations are more than the %u the fit takes", d->n, REGRESS_OBS_MAX);
		return -EINVAL;
	}
	if (d->n < d->k + 2) {
		snprintf(err, errlen,
		         "%u observations are too few for %u candidate events: at least %u are needed (one per event, "
		         "one for the constant, one to judge the fit)",
		         d->n, d->k, d->k + 2);
		return -EINVAL;
	}
	for (i = 0; i < d->n; i++) {
		for (j = 0; j < d->k; j++)
			if (!isfinite(d->x[(size_t)i * d->k + j])) {
				snprintf(err, errlen, "observation %u has no finite rate of %s", i + 1, d->names[j]);
				return -EINVAL;
			}
		if (!isfinite(d->y[i]) || (folds && d->y[i] <= 0)) {
			snprintf(err, errlen, "observation %u has no positive power (%g W)", i + 1, d->y[i]);
			return -EINVAL;
		}
	}
	if (folds == 1 || folds > d->n) {
		snprintf(err, errlen, "cannot cross-validate with %u folds of %u observations (2 to %u folds)", folds,
		         d->n, d->n);
		return -EINVAL;
	}
	/* the smallest training set leaves out ceil(n / folds) observations */
	train = folds ? d->n - (d->n + folds - 1) / folds : d->n;
	if (folds && train < d->k + 2) {
		snprintf(
		    err, errlen,
		    "%u observations are too few for %u-fold cross-validation of %u candidate events: a fold trains "
		    "on %u, at least %u are needed",
		    d->n, folds, d->k, train, d->k + 2);
		return -EINVAL;
	}
	return 0;
}

/* Cross-validation: each fold's model made by the whole procedure from the
 * other folds' observations, judged on its own (observation i is in fold
 * i % folds). */
static int cross_validate(struct emodel *m, const struct emodel_data *d, double alpha, uint32_t folds, struct fitrun *f,
                          uint32_t *rows, char *err, size_t errlen)
{
	struct emodel *part = malloc(sizeof(*part));
	char sub[256] = "";
	double sum = 0, worst = 0;
	uint32_t k, i, n;
	int rc = 0;

	if (!part) {
		snprintf(err, errlen, "cannot fit the energy model: out of memory");
		return -ENOMEM;
	}
	for (k = 0; k < folds; k++) {
		for (i = n = 0; i < d->n; i++)
			if (i % folds != k)
				rows[n++] = i;
		memset(f, 0, sizeof(*f));
		f->d = d;
		f->rows = rows;
		f->n = n;
		f->err = sub;
		f->errlen = sizeof(sub);
		rc = procedure(f, alpha, part);
		if (rc) {
			snprintf(err, errlen, "cross-validation, fold %u of %u: %s", k + 1, folds, sub);
			goto out;
		}
		for (i = k; i < d->n; i += folds) {
			double pct = fabs(predict(part, f, i) - d->y[i]) / d->y[i] * 100;

			sum += pct;
			worst = fmax(worst, pct);
		}
	}
	m->cv.folds = folds;
	m->cv.mean_abs_pct = sum / d->n;
	m->cv.max_abs_pct = worst;
out:
	free(part);
	return rc;
}

int emodel_fit(struct emodel *m, const struct emodel_data *d, double alpha, uint32_t folds, char *err, size_t errlen)
{
	gsl_error_handler_t *old = gsl_set_error_handler_off(); /* GSL aborts by default */
	struct emodel *full = NULL;
	struct fitrun *f = NULL;
	uint32_t *rows = NULL, i;
	int rc;

	rc = check_data(d, alpha, folds, err, errlen);
	if (rc)
		goto out;
	full = malloc(sizeof(*full));
	f = malloc(sizeof(*f));
	rows = malloc(sizeof(*rows) * d->n);
	if (!full || !f || !rows) {
		snprintf(err, errlen, "cannot fit the energy model: out of memory");
		rc = -ENOMEM;
		goto out;
	}
	*full = *m;
	for (i = 0; i < d->n; i++)
		rows[i] = i;
	memset(f, 0, sizeof(*f));
	f->d = d;
	f->rows = rows;
	f->n = d->n;
	f->err = err;
	f->errlen = errlen;
	rc = procedure(f, alpha, full);
	if (rc)
		goto out;
	full->cv.folds = 0;
	full->cv.mean_abs_pct = full->cv.max_abs_pct = NAN;
	if (folds) {
		rc = cross_validate(full, d, alpha, folds, f, rows, err, errlen);
		if (rc)
			goto out;
	}
	*m = *full;
out:
	free(rows);
	free(f);
	free(full);
	gsl_set_error_handler(old);
	return rc;
}
