/* What the calibration library's files share and no user needs: the
 * sample standard deviation, the median, ordering of doubles. */
#ifndef LP_OSCAL_IMPL_H
#define LP_OSCAL_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/* A time (or an x) beyond this (ns: about 11 days) is no measurement:
 * refused in the suite's lines and in files. */
#define OSCAL_NS_MAX 1e15

/* qsort's comparison of two doubles, ascending. */
int oscal_cmp_f64(const void *a, const void *b);
/* The sample standard deviation (n - 1 divisor) of v[0..n) around mean;
 * 0 when n < 2. */
double oscal_sd(const double *v, size_t n, double mean);
/* The median of sorted s[0..n) (the mean of the two middle values when n
 * is even); 0 when n == 0. */
double oscal_median_sorted(const double *s, size_t n);

/* Room for one more element in *arr of n elements of size bytes: the
 * capacity is implied by n (16, then powers of two), so that arrays the
 * reader made can be grown by the feeder.  Returns 0 or -ENOMEM (*arr
 * unchanged). */
int oscal_grow(void **arr, size_t n, size_t size);
/* Whether s is an entry name: [a-z0-9_-], not empty. */
bool oscal_name_ok(const char *s);
/* The capacity oscal_grow keeps for n elements. */
size_t oscal_cap(size_t n);

#endif
