/* Random programs for `energy train`: mixes of layerprof-work's basis
 * segments (a few segments with weights, a number of threads), drawn from
 * a seed so that a training run can be made again.  The set spans idle
 * machines (programs that mostly sleep) to full ones (as many threads as
 * CPUs, and sometimes more). */
#ifndef LP_ENERGY_RANDPROG_H
#define LP_ENERGY_RANDPROG_H

#include <stddef.h>
#include <stdint.h>

/* Segments in one program, at most. */
#define RANDPROG_SEGS_MAX 4u
/* A segment's weight is 1 to this. */
#define RANDPROG_WEIGHT_MAX 8u
/* Segments the generator draws from, at most. */
#define RANDPROG_POOL_MAX 256u

struct randprog {
	uint32_t nsegs;
	uint32_t seg[RANDPROG_SEGS_MAX];    /* indexes in the generator's names, distinct */
	uint32_t weight[RANDPROG_SEGS_MAX]; /* 1 to RANDPROG_WEIGHT_MAX (the idle segment: up to twice) */
	uint32_t threads;                   /* 1 to 2 x cpus */
};

struct randprog_gen {
	uint64_t state;  /* splitmix64's */
	uint32_t nnames; /* the segments drawn from */
	uint32_t cpus;
	int idle; /* the index of the idle segment ("sleep"), or -1 */
};

/* A generator over nnames segments (1 to RANDPROG_POOL_MAX) for a machine
 * of cpus CPUs.  idle: the index of the segment that sleeps, added to one
 * program in four with a large weight so that the set has lightly loaded
 * programs too; -1 when there is none.  Returns 0, or -EINVAL. */
int randprog_init(struct randprog_gen *g, uint64_t seed, uint32_t nnames, uint32_t cpus, int idle);

/* The next program.  The same seed gives the same programs in the same
 * order on every machine with the same segment list and CPU count. */
void randprog_next(struct randprog_gen *g, struct randprog *p);

/* The mix layerprof-work takes: "int-add:3,chase-l2:1" (names: the
 * generator's segment names).  Returns its length, or -ENAMETOOLONG when
 * size is too small (RANDPROG_SEGS_MAX x (the longest name + 4) do). */
int randprog_mix(const struct randprog *p, const char *const *names, char *buf, size_t size);

#endif
