/* Statistics of one series of times (oscal.h): mean, sample sd, nearest
 * rank percentiles, the 30-bin histogram and the outlier rule. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/oscal/oscal.h"
#include "host/lib/oscal/oscal_impl.h"

/* The outlier rule's factor on the MAD and the MAD's floors: 5 % of the
 * median, and 1 ns (the suite's resolution: samples are integers) so that
 * a series of equal times does not make every other time an outlier. */
#define OUTLIER_MADS 10.0
#define MAD_FLOOR_REL 0.05
#define MAD_FLOOR_NS 1.0

int oscal_cmp_f64(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double oscal_sd(const double *v, size_t n, double mean)
{
	double ss = 0;
	size_t i;

	if (n < 2)
		return 0;
	for (i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	return sqrt(ss / (double)(n - 1));
}

double oscal_median_sorted(const double *s, size_t n)
{
	if (!n)
		return 0;
	if (n % 2)
		return s[n / 2];
	return (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Nearest rank: the smallest value with at least pct % of the values at
 * or below it. */
static double rank(const double *s, size_t n, double pct)
{
	double r = ceil(pct / 100.0 * (double)n);
	size_t i = r < 1 ? 0 : (size_t)r - 1;

	return s[i < n ? i : n - 1];
}

/* The limit over sorted s[0..n). */
static double limit_sorted(const double *s, size_t n, double *scratch)
{
	double med = oscal_median_sorted(s, n), mad, floor_ns;
	size_t i;

	for (i = 0; i < n; i++)
		scratch[i] = fabs(s[i] - med);
	qsort(scratch, n, sizeof(*scratch), oscal_cmp_f64);
	mad = oscal_median_sorted(scratch, n);
	floor_ns = MAD_FLOOR_REL * fabs(med);
	if (floor_ns < MAD_FLOOR_NS)
		floor_ns = MAD_FLOOR_NS;
	if (mad < floor_ns)
		mad = floor_ns;
	return med + OUTLIER_MADS * mad;
}

double oscal_outlier_limit(const double *v, size_t n)
{
	double *s, lim;

	if (!n)
		return INFINITY;
	s = malloc(2 * n * sizeof(*s));
	if (!s)
		return INFINITY; /* no limit known: nothing is left out */
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), oscal_cmp_f64);
	lim = limit_sorted(s, n, s + n);
	free(s);
	return lim;
}

int oscal_stats_compute(const double *v, size_t n, struct oscal_stats *st)
{
	double *s, sum = 0, lim, width;
	size_t i, b;

	memset(st, 0, sizeof(*st));
	if (!n)
		return 0;
	s = malloc(2 * n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), oscal_cmp_f64);
	for (i = 0; i < n; i++)
		sum += s[i];
	st->n = n;
	st->mean = sum / (double)n;
	st->sd = oscal_sd(s, n, st->mean);
	st->min = s[0];
	st->max = s[n - 1];
	st->p50 = rank(s, n, 50);
	st->p90 = rank(s, n, 90);
	st->p99 = rank(s, n, 99);
	lim = limit_sorted(s, n, s + n);
	for (i = 0; i < n; i++)
		st->outliers += s[i] > lim;
	st->hist_lo = st->min;
	st->hist_hi = st->max;
	width = (st->max - st->min) / OSCAL_BINS;
	for (i = 0; i < n; i++) {
		/* bin b holds [lo + b w, lo + (b + 1) w); the last also holds max */
		b = width > 0 ? (size_t)((s[i] - st->min) / width) : 0;
		if (b >= OSCAL_BINS)
			b = OSCAL_BINS - 1;
		st->hist[b]++;
	}
	free(s);
	return 0;
}
