/* A threaded matrix multiply, one of the co-running programs of `layerprof
 * tune`'s case study (paper 003, section 6.1): `mm THREADS [N]` computes
 * C = A x B for N x N matrices (default 512) with THREADS threads taking
 * bands of rows in turn; A and B are shared by every thread.  Prints a
 * checksum of C (exact: the values are small integers held in doubles, so
 * no order of summation changes it). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MM_N_DEFAULT 512
#define MM_THREADS_MAX 256
#define MM_BAND 8 /* rows a thread takes at a time */

static double *a, *b, *c;
static long n;
static atomic_long next_row;

static void *worker(void *arg)
{
	long r0;

	while ((r0 = atomic_fetch_add(&next_row, MM_BAND)) < n) {
		long r1 = r0 + MM_BAND < n ? r0 + MM_BAND : n;

		for (long i = r0; i < r1; i++)
			for (long j = 0; j < n; j++) {
				double s = 0;

				for (long k = 0; k < n; k++)
					s += a[i * n + k] * b[k * n + j];
				c[i * n + j] = s;
			}
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t th[MM_THREADS_MAX];
	long threads = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	double sum = 0;

	n = argc > 2 ? strtol(argv[2], NULL, 10) : MM_N_DEFAULT;
	if (argc < 2 || argc > 3 || threads < 1 || threads > MM_THREADS_MAX || n < 1 || n > 8192) {
		fprintf(stderr, "usage: mm THREADS [N]  (THREADS 1 to %d, N 1 to 8192)\n", MM_THREADS_MAX);
		return 2;
	}
	a = malloc((size_t)(n * n) * sizeof(*a));
	b = malloc((size_t)(n * n) * sizeof(*b));
	c = malloc((size_t)(n * n) * sizeof(*c));
	if (!a || !b || !c) {
		fprintf(stderr, "mm: out of memory\n");
		return 1;
	}
	for (long i = 0; i < n * n; i++) {
		a[i] = (double)(i % 7);
		b[i] = (double)((i * 3) % 11);
	}
	for (long t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, worker, NULL)) {
			fprintf(stderr, "mm: cannot create thread %ld\n", t);
			return 1;
		}
	for (long t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	for (long i = 0; i < n * n; i++)
		sum += c[i] * (double)(i % 5 + 1);
	printf("mm: threads %ld n %ld checksum %.0f\n", threads, n, sum);
	free(a);
	free(b);
	free(c);
	return 0;
}
