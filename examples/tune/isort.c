/* A threaded insertion sort, the other co-running program of `layerprof
 * tune`'s case study (paper 003, section 6.1): `isort THREADS [N]` sorts N
 * numbers (default 120000) held as ISORT_ARRAYS arrays; each thread takes
 * whole arrays in turn and sorts its own array with insertion sort, with
 * no data shared between threads (so, as in the paper, more threads help
 * only while there are free CPUs).  The work does not depend on THREADS.
 * Prints a checksum that depends on the order (the arrays are sorted). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ISORT_N_DEFAULT 120000
#define ISORT_THREADS_MAX 256
#define ISORT_ARRAYS 12 /* divisible by 1, 2, 3, 4 and 6 threads */

static uint32_t *arrays[ISORT_ARRAYS];
static long len;
static atomic_int next_array;

static void *worker(void *arg)
{
	int k;

	while ((k = atomic_fetch_add(&next_array, 1)) < ISORT_ARRAYS) {
		uint32_t *v = arrays[k];

		for (long i = 1; i < len; i++) {
			uint32_t x = v[i];
			long j = i;

			while (j > 0 && v[j - 1] > x) {
				v[j] = v[j - 1];
				j--;
			}
			v[j] = x;
		}
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t th[ISORT_THREADS_MAX];
	long threads = argc > 1 ? strtol(argv[1], NULL, 10) : 0, n;
	uint64_t seed = 88172645463325252ull, sum = 0;

	n = argc > 2 ? strtol(argv[2], NULL, 10) : ISORT_N_DEFAULT;
	if (argc < 2 || argc > 3 || threads < 1 || threads > ISORT_THREADS_MAX || n < ISORT_ARRAYS || n > 100000000) {
		fprintf(stderr, "usage: isort THREADS [N]  (THREADS 1 to %d, N %d to 100000000)\n", ISORT_THREADS_MAX,
		        ISORT_ARRAYS);
		return 2;
	}
	len = n / ISORT_ARRAYS;
	for (int k = 0; k < ISORT_ARRAYS; k++) {
		arrays[k] = malloc((size_t)len * sizeof(uint32_t));
		if (!arrays[k]) {
			fprintf(stderr, "isort: out of memory\n");
			return 1;
		}
		for (long i = 0; i < len; i++) {
			seed ^= seed << 13; /* xorshift64: the same numbers every run */
			seed ^= seed >> 7;
			seed ^= seed << 17;
			arrays[k][i] = (uint32_t)seed;
		}
	}
	for (long t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, worker, NULL)) {
			fprintf(stderr, "isort: cannot create thread %ld\n", t);
			return 1;
		}
	for (long t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	for (int k = 0; k < ISORT_ARRAYS; k++) {
		for (long i = 0; i < len; i++)
			sum = sum * 31 + arrays[k][i];
		free(arrays[k]);
	}
	printf("isort: threads %ld n %ld checksum %llu\n", threads, n, (unsigned long long)sum);
	return 0;
}
