/* layerprof-work's basis segments: small loops, each with one kind of
 * behaviour (integer or floating-point arithmetic, branches, memory at one
 * level of the hierarchy, sharing between threads, system calls, idling),
 * run in slices by work.c to make the programs `layerprof energy train`
 * fits its model on.  C11, libc and pthreads only: cross-built for the
 * target. */
#ifndef LP_WORKLOAD_WORK_H
#define LP_WORKLOAD_WORK_H

#include <stdint.h>

/* Segments in all, at most. */
#define WORK_SEGS_MAX 64u

/* One thread's view: what its segments keep between slices. */
struct work_thread {
	unsigned id, nthreads;
	uint64_t rng;               /* work_rand's state */
	void *state[WORK_SEGS_MAX]; /* each segment's, from its thread_setup */
};

struct work_seg {
	const char *name;
	const char *desc; /* one line, for --list */
	/* state the threads share, made once before they start (NULL:
	 * none); 0 or -errno */
	int (*setup)(unsigned nthreads);
	/* the thread's own state, made by the thread itself before the clock
	 * starts (NULL: none): one malloc'd block (or none), freed by the
	 * thread when it ends; 0 or -errno */
	int (*thread_setup)(struct work_thread *t, void **state);
	/* runs until work_now() >= deadline (checked every few microseconds
	 * at most); returns a value the caller consumes, so that the
	 * compiler keeps the work */
	uint64_t (*run)(struct work_thread *t, void *state, uint64_t deadline);
};

/* The segments of each file, in --list order. */
extern const struct work_seg work_compute_segs[];
extern const unsigned work_compute_nsegs;
extern const struct work_seg work_mem_segs[];
extern const unsigned work_mem_nsegs;
extern const struct work_seg work_sys_segs[];
extern const unsigned work_sys_nsegs;

/* CLOCK_MONOTONIC in ns (the vDSO: tens of ns). */
uint64_t work_now(void);

/* xorshift64*: t's next pseudo-random number. */
static inline uint64_t work_rand(struct work_thread *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dull;
}

/* Anonymous memory of size bytes, not touched yet, or NULL. */
void *work_map(uint64_t size);

#endif
