/* The memory segments: vectorisable float loops in the L1 cache;
 * streaming reads, writes and copies of buffers the size of an L1 (16 KiB),
 * an L2 (256 KiB) and far larger than any cache (64 MiB); pointer chasing
 * (one dependent load per cache line, in a random cycle) over the L1, L2,
 * a last-level cache (4 MiB) and memory (64 MiB).  The large buffers that
 * are only read are shared by the threads; the ones written are each
 * thread's own, those of memory size split between the threads (64 MiB in
 * all, at least 16 MiB each), so that a program of many threads stays
 * within a small board's memory.  Buffers are made and touched before the
 * clock starts. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "work.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define SIZE_L1 (16u * KIB)
#define SIZE_L2 (256u * KIB)
#define SIZE_LLC (4u * MIB)
#define SIZE_DRAM (64u * MIB)
/* A thread's own buffer of memory size, at least. */
#define SIZE_DRAM_OWN_MIN (16u * MIB)
/* Bytes streamed between two looks at the clock. */
#define STREAM_STEP (64u * KIB)
/* Loads chased between two looks at the clock. */
#define CHASE_STEP 1024
#define LINE 64u
/* Floats in each array of the vector loops: three arrays in 12 KiB. */
#define VEC_N 1024

/* One cache line of a chase: the index of the next. */
struct line {
	uint32_t next;
	uint32_t pad[LINE / 4 - 1];
};

/* The shared buffers, made by setup and only read afterwards. */
static struct line *chase_llc, *chase_dram;
static uint64_t *read_dram;

/* A random cycle through n lines (Sattolo's shuffle): every load misses
 * the prefetchers. */
static struct line *chase_make(uint64_t size, uint64_t seed)
{
	uint32_t n = (uint32_t)(size / LINE), *perm, i;
	struct line *l = work_map(size);
	struct work_thread rng = { .rng = seed | 1 };

	perm = malloc((size_t)n * sizeof(*perm));
	if (!l || !perm) {
		free(perm);
		return NULL;
	}
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint32_t k = (uint32_t)(work_rand(&rng) % i), tmp = perm[i];

		perm[i] = perm[k];
		perm[k] = tmp;
	}
	for (i = 0; i < n; i++)
		l[perm[i]].next = perm[(i + 1) % n];
	free(perm);
	return l;
}

static int setup_llc(unsigned nthreads)
{
	if (!chase_llc)
		chase_llc = chase_make(SIZE_LLC, 0x11c);
	return chase_llc ? 0 : -ENOMEM;
}

static int setup_dram(unsigned nthreads)
{
	if (!chase_dram)
		chase_dram = chase_make(SIZE_DRAM, 0xd7a3);
	return chase_dram ? 0 : -ENOMEM;
}

static int setup_read_dram(unsigned nthreads)
{
	if (!read_dram) {
		read_dram = work_map(SIZE_DRAM);
		if (read_dram)
			memset(read_dram, 1, SIZE_DRAM);
	}
	return read_dram ? 0 : -ENOMEM;
}

/* A thread's share of memory-size buffers. */
static uint64_t dram_own(const struct work_thread *t)
{
	uint64_t size = SIZE_DRAM / t->nthreads;

	return size < SIZE_DRAM_OWN_MIN ? SIZE_DRAM_OWN_MIN : size & ~(uint64_t)(LINE - 1);
}

/* A thread's chase over its own buffer, or a shared one. */
struct chase {
	const struct line *l;
	uint32_t at;
};

static int chase_setup(void **state, const struct line *shared, uint64_t size, uint64_t seed)
{
	struct chase *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->l = shared ? shared : chase_make(size, seed);
	if (!c->l) {
		free(c);
		return -ENOMEM;
	}
	*state = c;
	return 0;
}

static int chase_setup_l1(struct work_thread *t, void **state)
{
	return chase_setup(state, NULL, SIZE_L1, 0x11 + t->id);
}

static int chase_setup_l2(struct work_thread *t, void **state)
{
	return chase_setup(state, NULL, SIZE_L2, 0x22 + t->id);
}

static int chase_setup_llc(struct work_thread *t, void **state)
{
	int r = chase_setup(state, chase_llc, SIZE_LLC, 0);

	if (!r)
		((struct chase *)*state)->at = t->id * 4099u % (SIZE_LLC / LINE);
	return r;
}

static int chase_setup_dram(struct work_thread *t, void **state)
{
	int r = chase_setup(state, chase_dram, SIZE_DRAM, 0);

	if (!r)
		((struct chase *)*state)->at = t->id * 65537u % (SIZE_DRAM / LINE);
	return r;
}

static uint64_t chase_run(struct work_thread *t, void *state, uint64_t deadline)
{
	struct chase *c = state;
	uint32_t at = c->at;

	do {
		for (int i = 0; i < CHASE_STEP; i++)
			at = c->l[at].next;
	} while (work_now() < deadline);
	c->at = at;
	return at;
}

/* A thread's streams: a buffer, and a second one copied into. */
struct stream {
	uint64_t *src, *dst;
	uint64_t size, at;
};

/* A copy's two buffers are the halves of one of size bytes. */
static int stream_setup(void **state, uint64_t *shared, uint64_t size, int copy)
{
	struct stream *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->size = copy ? size / 2 : size;
	s->src = shared ? shared : work_map(size);
	if (!s->src) {
		free(s);
		return -ENOMEM;
	}
	/* touched now, not in the first slices */
	if (!shared)
		memset(s->src, 1, size);
	s->dst = copy ? s->src + s->size / sizeof(uint64_t) : NULL;
	*state = s;
	return 0;
}

static int setup_l1(struct work_thread *t, void **state)
{
	return stream_setup(state, NULL, SIZE_L1, 0);
}
static int setup_l2(struct work_thread *t, void **state)
{
	return stream_setup(state, NULL, SIZE_L2, 0);
}
static int setup_dram_read(struct work_thread *t, void **state)
{
	return stream_setup(state, read_dram, SIZE_DRAM, 0);
}
static int setup_dram_own(struct work_thread *t, void **state)
{
	return stream_setup(state, NULL, dram_own(t), 0);
}
static int setup_l1_copy(struct work_thread *t, void **state)
{
	return stream_setup(state, NULL, 2 * SIZE_L1, 1);
}
static int setup_l2_copy(struct work_thread *t, void **state)
{
	return stream_setup(state, NULL, 2 * SIZE_L2, 1);
}
static int setup_dram_copy(struct work_thread *t, void **state)
{
	return stream_setup(state, NULL, dram_own(t), 1);
}

/* The part of s to stream next: at most STREAM_STEP bytes from s->at. */
static uint64_t stream_next(struct stream *s, uint64_t *n)
{
	uint64_t at = s->at, len = s->size - at < STREAM_STEP ? s->size - at : STREAM_STEP;

	s->at = at + len == s->size ? 0 : at + len;
	*n = len / sizeof(uint64_t);
	return at / sizeof(uint64_t);
}

static uint64_t stream_read(struct work_thread *t, void *state, uint64_t deadline)
{
	struct stream *s = state;
	uint64_t sum = 0;

	do {
		uint64_t n, at = stream_next(s, &n);
		const uint64_t *p = s->src + at;

		for (uint64_t i = 0; i < n; i++)
			sum += p[i];
	} while (work_now() < deadline);
	return sum;
}

static uint64_t stream_write(struct work_thread *t, void *state, uint64_t deadline)
{
	struct stream *s = state;
	uint64_t v = t->rng;

	do {
		uint64_t n, at = stream_next(s, &n);
		uint64_t *p = s->src + at;

		for (uint64_t i = 0; i < n; i++)
			p[i] = v + i;
		v++;
	} while (work_now() < deadline);
	return s->src[v % (s->size / sizeof(uint64_t))];
}

static uint64_t stream_copy(struct work_thread *t, void *state, uint64_t deadline)
{
	struct stream *s = state;

	do {
		uint64_t n, at = stream_next(s, &n);

		memcpy(s->dst + at, s->src + at, n * sizeof(uint64_t));
	} while (work_now() < deadline);
	return s->dst[s->at / sizeof(uint64_t)];
}

/* The vector loops' arrays. */
struct vec {
	float x[VEC_N], y[VEC_N], z[VEC_N];
};

static int vec_setup(struct work_thread *t, void **state)
{
	struct vec *v = malloc(sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (int i = 0; i < VEC_N; i++) {
		v->x[i] = (float)i * 0.001f;
		v->y[i] = 1.0f;
		v->z[i] = 0.5f;
	}
	*state = v;
	return 0;
}

static uint64_t vec_saxpy(struct work_thread *t, void *state, uint64_t deadline)
{
	struct vec *v = state;

	do {
		for (int k = 0; k < 8; k++) {
			for (int i = 0; i < VEC_N; i++)
				v->y[i] = 0.999f * v->x[i] + v->y[i];
			for (int i = 0; i < VEC_N; i++)
				v->y[i] = v->y[i] * 0.5f;
		}
	} while (work_now() < deadline);
	return (uint64_t)v->y[VEC_N / 2];
}

static uint64_t vec_mul(struct work_thread *t, void *state, uint64_t deadline)
{
	struct vec *v = state;

	do {
		for (int k = 0; k < 16; k++)
			for (int i = 0; i < VEC_N; i++)
				v->z[i] = v->x[i] * v->y[i] - v->z[i] * 0.25f;
	} while (work_now() < deadline);
	return (uint64_t)v->z[VEC_N / 3];
}

const struct work_seg work_mem_segs[] = {
	{ "vec-saxpy", "y = a*x + y over float arrays in the L1 cache (vectorised)", NULL, vec_setup, vec_saxpy },
	{ "vec-mul", "z = x*y - z/4 over float arrays in the L1 cache (vectorised)", NULL, vec_setup, vec_mul },
	{ "read-l1", "streaming reads of a 16 KiB buffer (L1)", NULL, setup_l1, stream_read },
	{ "read-l2", "streaming reads of a 256 KiB buffer (L2)", NULL, setup_l2, stream_read },
	{ "read-dram", "streaming reads of a 64 MiB buffer, shared (memory)", setup_read_dram, setup_dram_read,
	  stream_read },
	{ "write-l1", "streaming writes of a 16 KiB buffer (L1)", NULL, setup_l1, stream_write },
	{ "write-l2", "streaming writes of a 256 KiB buffer (L2)", NULL, setup_l2, stream_write },
	{ "write-dram", "streaming writes of 64 MiB split between the threads (memory)", NULL, setup_dram_own,
	  stream_write },
	{ "copy-l1", "memcpy between two 16 KiB buffers (L1)", NULL, setup_l1_copy, stream_copy },
	{ "copy-l2", "memcpy between two 256 KiB buffers (L2)", NULL, setup_l2_copy, stream_copy },
	{ "copy-dram", "memcpy between the halves of 64 MiB split between the threads (memory)", NULL, setup_dram_copy,
	  stream_copy },
	{ "chase-l1", "dependent loads in a random cycle over 16 KiB (L1 latency)", NULL, chase_setup_l1, chase_run },
	{ "chase-l2", "dependent loads in a random cycle over 256 KiB (L2 latency)", NULL, chase_setup_l2, chase_run },
	{ "chase-llc", "dependent loads in a random cycle over 4 MiB, shared (last-level cache latency)", setup_llc,
	  chase_setup_llc, chase_run },
	{ "chase-dram", "dependent loads in a random cycle over 64 MiB, shared (memory latency)", setup_dram,
	  chase_setup_dram, chase_run },
};
const unsigned work_mem_nsegs = sizeof(work_mem_segs) / sizeof(work_mem_segs[0]);
