/* A producer/consumer program, the second case study of `layerprof tune`
 * (paper 003, section 6.2): `mmmt PRODUCERS CONSUMERS TILE [N]`.  The
 * producers compute C = A x B (N x N, default 512) a band of MMMT_BAND rows
 * at a time, in TILE x TILE tiles of the j and k loops (TILE N: untiled,
 * the textbook loop whose walk down B's columns misses the cache), and
 * push each band into a bounded queue; the consumers take the bands and
 * transpose them into the result R = C^T.  The queue is a mutex with two
 * condition variables (not empty, signalled by the producers; not full,
 * signalled by the consumers), so that `record --sync` sees which side
 * waits for the other.  Prints a checksum of R (exact: small integers in
 * doubles, whatever the tile and the threads). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MMMT_N_DEFAULT 512
#define MMMT_THREADS_MAX 64
#define MMMT_BAND 16 /* rows of C per item of the queue */
#define MMMT_QUEUE 4 /* items the queue holds */

static double *a, *b, *r;
static long n, tile, nbands;
static atomic_long next_band;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static struct item {
	long r0, rows;
	double *c; /* rows x n */
} queue[MMMT_QUEUE];
static int head, count;
static long pushed;

static long min_l(long x, long y)
{
	return x < y ? x : y;
}

/* C's rows r0..r0+rows into c, tiled. */
static void band_multiply(long r0, long rows, double *c)
{
	for (long i = 0; i < rows * n; i++)
		c[i] = 0;
	for (long jj = 0; jj < n; jj += tile)
		for (long kk = 0; kk < n; kk += tile)
			for (long i = 0; i < rows; i++) {
				const double *ai = a + (r0 + i) * n;

				for (long j = jj; j < min_l(jj + tile, n); j++) {
					double s = 0;

					for (long k = kk; k < min_l(kk + tile, n); k++)
						s += ai[k] * b[k * n + j];
					c[i * n + j] += s;
				}
			}
}

static void *producer(void *arg)
{
	long band;

	while ((band = atomic_fetch_add(&next_band, 1)) < nbands) {
		struct item it = { band * MMMT_BAND, min_l(MMMT_BAND, n - band * MMMT_BAND), NULL };

		it.c = malloc((size_t)(it.rows * n) * sizeof(double));
		if (!it.c) {
			fprintf(stderr, "mmmt: out of memory\n");
			exit(1);
		}
		band_multiply(it.r0, it.rows, it.c);
		pthread_mutex_lock(&lock);
		while (count == MMMT_QUEUE)
			pthread_cond_wait(&not_full, &lock);
		queue[(head + count) % MMMT_QUEUE] = it;
		count++;
		/* the last band wakes every consumer: those left see the end */
		if (++pushed == nbands)
			pthread_cond_broadcast(&not_empty);
		else
			pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	return arg;
}

static void *consumer(void *arg)
{
	for (;;) {
		struct item it;

		pthread_mutex_lock(&lock);
		while (!count && pushed < nbands)
			pthread_cond_wait(&not_empty, &lock);
		if (!count) {
			pthread_mutex_unlock(&lock);
			break;
		}
		it = queue[head];
		head = (head + 1) % MMMT_QUEUE;
		count--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);
		for (long i = 0; i < it.rows; i++)
			for (long j = 0; j < n; j++)
				r[j * n + it.r0 + i] = it.c[i * n + j];
		free(it.c);
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t th[2 * MMMT_THREADS_MAX];
	long np = argc > 1 ? strtol(argv[1], NULL, 10) : 0, nc = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	double sum = 0;

	tile = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	n = argc > 4 ? strtol(argv[4], NULL, 10) : MMMT_N_DEFAULT;
	if (argc < 4 || argc > 5 || np < 1 || np > MMMT_THREADS_MAX || nc < 1 || nc > MMMT_THREADS_MAX || tile < 1 ||
	    n < 1 || n > 8192) {
		fprintf(stderr,
		        "usage: mmmt PRODUCERS CONSUMERS TILE [N]  (threads 1 to %d, TILE 1 or more, N 1 to "
		        "8192)\n",
		        MMMT_THREADS_MAX);
		return 2;
	}
	if (tile > n)
		tile = n;
	nbands = (n + MMMT_BAND - 1) / MMMT_BAND;
	a = malloc((size_t)(n * n) * sizeof(*a));
	b = malloc((size_t)(n * n) * sizeof(*b));
	r = malloc((size_t)(n * n) * sizeof(*r));
	if (!a || !b || !r) {
		fprintf(stderr, "mmmt: out of memory\n");
		return 1;
	}
	for (long i = 0; i < n * n; i++) {
		a[i] = (double)(i % 7);
		b[i] = (double)((i * 3) % 11);
	}
	for (long t = 0; t < nc; t++)
		pthread_create(&th[t], NULL, consumer, NULL);
	for (long t = 0; t < np; t++)
		pthread_create(&th[nc + t], NULL, producer, NULL);
	for (long t = 0; t < nc + np; t++)
		pthread_join(th[t], NULL);
	for (long i = 0; i < n * n; i++)
		sum += r[i] * (double)(i % 5 + 1);
	printf("mmmt: producers %ld consumers %ld tile %ld n %ld checksum %.0f\n", np, nc, tile, n, sum);
	free(a);
	free(b);
	free(r);
	return 0;
}
