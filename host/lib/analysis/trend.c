/* Mann-Kendall trend test and least-squares slope (see trend.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/trend.h"

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void trend_analyse(const uint64_t *x, const double *t, size_t n, struct trend *out)
{
	uint64_t sorted[TREND_SAMPLES_MAX];
	double mean_t, mean_x = 0, sxy = 0, stt = 0, ties = 0;
	size_t i, j;

	memset(out, 0, sizeof(*out));
	out->p_rising = 1;
	if (n > TREND_SAMPLES_MAX)
		n = TREND_SAMPLES_MAX;
	out->n = n;
	if (n < 3)
		return;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			out->s += (x[j] > x[i]) - (x[j] < x[i]);
	/* ties: each group of t equal values takes t(t-1)(2t+5) off */
	memcpy(sorted, x, n * sizeof(*x));
	qsort(sorted, n, sizeof(*sorted), u64_cmp);
	for (i = 0; i < n; i = j) {
		double g;

		for (j = i + 1; j < n && sorted[j] == sorted[i]; j++)
			;
		g = (double)(j - i);
		ties += g * (g - 1) * (2 * g + 5);
	}
	out->var_s = ((double)n * (double)(n - 1) * (double)(2 * n + 5) - ties) / 18.0;
	if (out->var_s > 0) {
		if (out->s > 0)
			out->z = (double)(out->s - 1) / sqrt(out->var_s);
		else if (out->s < 0)
			out->z = (double)(out->s + 1) / sqrt(out->var_s);
		out->p_rising = 0.5 * erfc(out->z / sqrt(2.0));
	}
	mean_t = 0;
	for (i = 0; i < n; i++) {
		mean_t += t ? t[i] : (double)i;
		mean_x += (double)x[i];
	}
	mean_t /= (double)n;
	mean_x /= (double)n;
	for (i = 0; i < n; i++) {
		double dt = (t ? t[i] : (double)i) - mean_t;

		sxy += dt * ((double)x[i] - mean_x);
		stt += dt * dt;
	}
	out->slope = stt > 0 ? sxy / stt : 0;
}
