/* Trend of a short series of samples taken at equal intervals: the
 * Mann-Kendall test for a monotonic rise and the least-squares slope.
 * Used to tell heap sites whose live bytes keep growing. */
#ifndef LP_TREND_H
#define LP_TREND_H

#include <stddef.h>
#include <stdint.h>

/* Longest series trend_analyse takes (the test is O(n^2)). */
#define TREND_SAMPLES_MAX 256u

struct trend {
	size_t n;
	int64_t s;       /* Mann-Kendall S: rising pairs minus falling pairs */
	double var_s;    /* its variance under "no trend", corrected for ties */
	double z;        /* continuity-corrected normal score */
	double p_rising; /* one-sided p-value of "no trend" against a rise */
	double slope;    /* least-squares slope: per unit of t, or per sample */
};

/* Analyses samples x[0..n-1] (n <= TREND_SAMPLES_MAX; more are ignored)
 * taken at times t[0..n-1] (increasing), or at 0, 1, ... when t is NULL
 * (the slope is per unit of t; the test only uses the order).  With fewer
 * than 3 samples p_rising is 1 and slope 0; all equal, p_rising is 1. */
void trend_analyse(const uint64_t *x, const double *t, size_t n, struct trend *out);

#endif
