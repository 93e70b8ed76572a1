/* layerprof-work: runs a mix of basis segments (work.h) on N threads for S
 * seconds, each thread running slices of them in proportion to their
 * weights.  `layerprof energy train` runs it with random mixes, measured,
 * to fit its energy model; it is also a load for trying things by hand.
 *
 *   layerprof-work --list
 *   layerprof-work [--seconds S] [--threads N] [--slice-ms MS] [--verbose] SEG[:WEIGHT][,SEG[:WEIGHT]...]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "work.h"

#define EXIT_USAGE 2
/* Threads, at most. */
#define WORK_THREADS_MAX 256u
/* Entries of a mix, at most. */
#define MIX_MAX 64u
/* A slice's length when none is given. */
#define SLICE_MS_DEFAULT 5.0
/* Buffers from this size on are given huge pages where the system allows. */
#define WORK_HUGE_MIN (4u * 1024u * 1024u)

/* One entry of the mix: a segment and its weight. */
struct mix_entry {
	const struct work_seg *seg;
	unsigned index; /* in the segment list: its state slot */
	double weight;
};

struct work {
	struct mix_entry mix[MIX_MAX];
	unsigned nmix;
	unsigned nthreads;
	uint64_t slice_ns, end_ns;
	bool verbose;
	pthread_barrier_t ready; /* every thread set up */
	pthread_barrier_t go;    /* end_ns set: the clock has started */
};

/* A thread and what it did. */
struct worker {
	pthread_t th;
	struct work *w;
	struct work_thread t;
	uint64_t slices[MIX_MAX], ns[MIX_MAX];
	int err;
};

/* Every result goes here, so that the compiler keeps the work. */
static atomic_ulong work_sink;

uint64_t work_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void *work_map(uint64_t size)
{
	void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	/* fewer faults to make it, fewer TLB misses to stream it: what a
	 * large buffer has where the system allows */
	if (size >= WORK_HUGE_MIN)
		madvise(p, (size_t)size, MADV_HUGEPAGE);
#endif
	return p;
}

/* The segments of every file, by index. */
static const struct work_seg *seg_at(unsigned i)
{
	if (i < work_compute_nsegs)
		return &work_compute_segs[i];
	i -= work_compute_nsegs;
	if (i < work_mem_nsegs)
		return &work_mem_segs[i];
	i -= work_mem_nsegs;
	return i < work_sys_nsegs ? &work_sys_segs[i] : NULL;
}

static unsigned seg_count(void)
{
	return work_compute_nsegs + work_mem_nsegs + work_sys_nsegs;
}

static int seg_find(const char *name, size_t len)
{
	for (unsigned i = 0; i < seg_count(); i++) {
		const struct work_seg *s = seg_at(i);

		if (strlen(s->name) == len && !strncmp(s->name, name, len))
			return (int)i;
	}
	return -1;
}

/* "SEG[:WEIGHT],..." into w->mix; a message and -EINVAL when it is bad. */
static int mix_parse(struct work *w, const char *text)
{
	const char *p = text;

	while (*p) {
		const char *end = strchr(p, ','), *colon;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct mix_entry *e = &w->mix[w->nmix];
		size_t nlen;
		int i;

		colon = memchr(p, ':', len);
		nlen = colon ? (size_t)(colon - p) : len;
		i = seg_find(p, nlen);
		if (i < 0) {
			fprintf(stderr, "layerprof-work: unknown segment '%.*s' (--list lists them)\n", (int)nlen, p);
			return -EINVAL;
		}
		if (w->nmix == MIX_MAX) {
			fprintf(stderr, "layerprof-work: more than %u segments in the mix\n", MIX_MAX);
			return -EINVAL;
		}
		e->seg = seg_at((unsigned)i);
		e->index = (unsigned)i;
		e->weight = 1.0;
		if (colon) {
			char num[32], *rest;

			snprintf(num, sizeof(num), "%.*s", (int)(len - nlen - 1), colon + 1);
			e->weight = strtod(num, &rest);
			if (!num[0] || *rest || !(e->weight > 0) || e->weight > 1e9) {
				fprintf(stderr, "layerprof-work: bad weight '%s' for %s (a number above 0)\n", num,
				        e->seg->name);
				return -EINVAL;
			}
		}
		w->nmix++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (!w->nmix) {
		fprintf(stderr, "layerprof-work: no segment given (--list lists them)\n");
		return -EINVAL;
	}
	return 0;
}

/* The next entry of the mix by smooth weighted round robin: over any
 * stretch of slices, each entry runs in proportion to its weight, spread
 * out rather than in runs. */
static unsigned mix_next(const struct work *w, double *credit)
{
	double total = 0;
	unsigned best = 0;

	for (unsigned i = 0; i < w->nmix; i++) {
		credit[i] += w->mix[i].weight;
		total += w->mix[i].weight;
		if (credit[i] > credit[best])
			best = i;
	}
	credit[best] -= total;
	return best;
}

static void *worker_run(void *arg)
{
	struct worker *k = arg;
	struct work *w = k->w;
	double credit[MIX_MAX] = { 0 };
	unsigned i;

	for (i = 0; i < w->nmix; i++) {
		const struct work_seg *s = w->mix[i].seg;

		if (s->thread_setup && !k->t.state[w->mix[i].index] && !k->err)
			k->err = s->thread_setup(&k->t, &k->t.state[w->mix[i].index]);
	}
	pthread_barrier_wait(&w->ready);
	pthread_barrier_wait(&w->go);
	/* out of step with one another: thread t starts t entries in */
	for (i = 0; i < k->t.id % w->nmix; i++)
		mix_next(w, credit);
	for (;;) {
		uint64_t now = work_now(), end;
		unsigned e;

		if (now >= w->end_ns)
			break;
		e = mix_next(w, credit);
		end = now + w->slice_ns < w->end_ns ? now + w->slice_ns : w->end_ns;
		atomic_fetch_xor_explicit(&work_sink, w->mix[e].seg->run(&k->t, k->t.state[w->mix[e].index], end),
		                          memory_order_relaxed);
		k->slices[e]++;
		k->ns[e] += work_now() - now;
	}
	/* a thread_setup's state is one malloc'd block (its buffers are
	 * mapped and go with the process) */
	for (i = 0; i < w->nmix; i++) {
		free(k->t.state[w->mix[i].index]);
		k->t.state[w->mix[i].index] = NULL;
	}
	return NULL;
}

static void list(void)
{
	for (unsigned i = 0; i < seg_count(); i++)
		printf("%-20s %s\n", seg_at(i)->name, seg_at(i)->desc);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: layerprof-work --list\n"
	           "       layerprof-work [--seconds S] [--threads N] [--slice-ms MS] [--verbose] "
	           "SEG[:WEIGHT][,SEG[:WEIGHT]...]\n"
	           "Runs the segments on N threads (default 1) for S seconds (default 1), each thread in\n"
	           "slices of MS milliseconds (default 5) in proportion to the weights (default 1).\n");
}

static void summary(const struct work *w, const struct worker *k)
{
	for (unsigned e = 0; e < w->nmix; e++) {
		uint64_t slices = 0, ns = 0;

		for (unsigned i = 0; i < w->nthreads; i++) {
			slices += k[i].slices[e];
			ns += k[i].ns[e];
		}
		printf("%-20s weight %-8g slices %-8llu seconds %.3f\n", w->mix[e].seg->name, w->mix[e].weight,
		       (unsigned long long)slices, (double)ns / 1e9);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "list", no_argument, NULL, 'l' },
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "slice-ms", required_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct work w;
	struct worker *k;
	double seconds = 1.0, slice_ms = SLICE_MS_DEFAULT;
	char *end;
	unsigned i;
	int c, r = 0;

	memset(&w, 0, sizeof(w));
	w.nthreads = 1;
	while ((c = getopt_long(argc, argv, "+s:t:m:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			list();
			return 0;
		case 's':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0) || seconds > 1e6) {
				fprintf(stderr, "layerprof-work: bad --seconds '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't': {
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || !n || n > WORK_THREADS_MAX) {
				fprintf(stderr, "layerprof-work: bad --threads '%s' (1 to %u)\n", optarg,
				        WORK_THREADS_MAX);
				return EXIT_USAGE;
			}
			w.nthreads = (unsigned)n;
			break;
		}
		case 'm':
			slice_ms = strtod(optarg, &end);
			if (*end || !(slice_ms >= 0.1) || slice_ms > 10000) {
				fprintf(stderr, "layerprof-work: bad --slice-ms '%s' (0.1 to 10000)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'v':
			w.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (mix_parse(&w, argv[optind]))
		return EXIT_USAGE;
	for (i = 0; i < w.nmix; i++)
		if (w.mix[i].seg->setup && (r = w.mix[i].seg->setup(w.nthreads)) != 0) {
			fprintf(stderr, "layerprof-work: %s: %s\n", w.mix[i].seg->name, strerror(-r));
			return 1;
		}
	k = calloc(w.nthreads, sizeof(*k));
	if (!k || pthread_barrier_init(&w.ready, NULL, w.nthreads + 1) ||
	    pthread_barrier_init(&w.go, NULL, w.nthreads + 1)) {
		fprintf(stderr, "layerprof-work: out of memory\n");
		return 1;
	}
	w.slice_ns = (uint64_t)(slice_ms * 1e6);
	for (i = 0; i < w.nthreads; i++) {
		k[i].w = &w;
		k[i].t.id = i;
		k[i].t.nthreads = w.nthreads;
		k[i].t.rng = 0x9e3779b97f4a7c15ull * (i + 1) | 1;
		r = pthread_create(&k[i].th, NULL, worker_run, &k[i]);
		if (r) {
			fprintf(stderr, "layerprof-work: cannot start thread %u: %s\n", i, strerror(r));
			/* the barrier can no longer be passed: the exit ends them */
			return 1;
		}
	}
	/* the threads' setup (buffers made and touched) is not in the S
	 * seconds; a thread that could not make its buffers stops them all */
	pthread_barrier_wait(&w.ready);
	for (i = 0; i < w.nthreads && !r; i++)
		if (k[i].err) {
			fprintf(stderr, "layerprof-work: thread %u: cannot set up its segments: %s\n", i,
			        strerror(-k[i].err));
			r = 1;
		}
	w.end_ns = r ? 0 : work_now() + (uint64_t)(seconds * 1e9);
	pthread_barrier_wait(&w.go);
	for (i = 0; i < w.nthreads; i++)
		pthread_join(k[i].th, NULL);
	if (!r && w.verbose)
		summary(&w, k);
	free(k);
	return r;
}
