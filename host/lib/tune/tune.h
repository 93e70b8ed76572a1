/* The automatic optimiser (paper 003, section 6): runs a command (or
 * several at once) under configurations of its parameters, measures each
 * a few times, and searches the space for the configuration that is best
 * for an objective (time, energy, or their product), by one of the
 * strategies: the whole grid, the paper's greedy ascent, a compass
 * (pattern) search for large spaces, the co-run greedy of the paper's Fig.
 * 6, and the producer-consumer heuristic of its Fig. 8, which asks the
 * sync analysis which side is slow.  Measuring is the caller's (struct
 * tune_opts.measure): `tune` times the runs itself, or measures their
 * energy through runmeasure.  Not thread-safe. */
#ifndef LP_TUNE_H
#define LP_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/tune/space.h"
#include "host/lib/util/error.h"

/* Repeats of one configuration at most, configurations tried at most. */
#define TUNE_REPEAT_MAX 50u
#define TUNE_CONFIGS_MAX 4096u
#define TUNE_WHY_MAX 256

enum tune_objective {
	TUNE_TIME = 0,   /* wall seconds, the first start to the last end */
	TUNE_ENERGY = 1, /* joules */
	TUNE_EDP = 2,    /* joules x seconds */
};

enum tune_strategy {
	TUNE_GRID = 0,
	TUNE_GREEDY = 1,
	TUNE_PATTERN = 2,
	TUNE_CORUN = 3,    /* greedy over the joint space of commands run at once */
	TUNE_PRODCONS = 4, /* threads of the slow side, then the tile, then threads again */
};

/* One run of the commands of a configuration, as the measure hook tells it. */
struct tune_sample {
	double seconds; /* the first start to the last end */
	double joules;  /* NAN when not measured */
	bool failed;    /* a program exited nonzero, was killed, or timed out */
	bool timed_out;
	char why[TUNE_WHY_MAX]; /* with failed: "exit status 1: <its first line of stderr>" */
};

/* Runs argvs[0..nprogs) at once, to their end, once.  0 (whatever the
 * programs' exit statuses: see failed), or -errno with err set when they
 * could not be run at all (ends the search). */
typedef int (*tune_measure_fn)(void *ctx, char *const *const *argvs, uint32_t nprogs, struct tune_sample *out,
                               char *err, size_t errlen);
/* The producer-consumer strategy's question: runs argv (the one command,
 * at its first configuration) under `record --sync` and answers which side
 * the other waits for: *slow 0 producers, 1 consumers, -1 neither or no
 * pair found; line the verdict as `report --sync` words it.  0 or -errno
 * with err. */
typedef int (*tune_verdict_fn)(void *ctx, char *const *argv, int *slow, char *line, size_t linelen, char *err,
                               size_t errlen);

/* Where the objective is measured (the repeats are kept) and what it
 * decided. */
struct tune_entry {
	struct tune_config c;
	uint32_t n; /* repeats run */
	double seconds[TUNE_REPEAT_MAX], joules[TUNE_REPEAT_MAX], obj[TUNE_REPEAT_MAX];
	/* medians of the repeats, and the objective's spread: twice the median
	 * absolute deviation over the median (noise.c) */
	double med_seconds, med_joules, med_obj, spread;
	bool failed, timed_out;
	char why[TUNE_WHY_MAX];
};

struct tune_opts {
	enum tune_strategy strategy;
	enum tune_objective objective;
	uint32_t repeat;     /* runs of each configuration (1 to max_repeat) */
	uint32_t max_repeat; /* when the difference is within twice the noise */
	double noise_pct;    /* the least noise assumed, in % */
	uint32_t budget;     /* configurations at most; 0: TUNE_CONFIGS_MAX */
	bool has_baseline;
	struct tune_config baseline; /* else the strategy's first configuration */
	/* the producer-consumer strategy's parameters (indexes); tile
	 * UINT32_MAX: none */
	uint32_t producers, consumers, tile;
	tune_measure_fn measure;
	void *measure_ctx;
	tune_verdict_fn verdict;
	void *verdict_ctx;
	/* told of each configuration that failed, and of each one measured
	 * (progress, when set) */
	const struct lp_warner *warn;
	void (*progress)(void *ctx, const struct tune_space *sp, const struct tune_entry *e);
	void *progress_ctx;
};

struct tune {
	struct tune_space *sp; /* borrowed: the producer-consumer strategy adds tile values */
	struct tune_opts o;
	struct tune_entry *entries; /* owned; in the order tried */
	uint32_t n, cap;
	uint32_t best, baseline; /* indexes in entries; UINT32_MAX: none */
	double noise;            /* the noise used, as a fraction */
	double baseline_spread;  /* the baseline's spread, as a fraction */
	uint64_t runs;           /* runs of the commands, repeats included (the record --sync run too) */
	bool budget_hit;
	char stop[128]; /* why the search ended */
	/* the producer-consumer strategy: the verdict used, and its side */
	char verdict[512];
	int slow;
};

/* Prepares t over sp with o (copied).  No allocation. */
void tune_init(struct tune *t, struct tune_space *sp, const struct tune_opts *o);
/* Frees the entries.  Accepts a zeroed struct. */
void tune_release(struct tune *t);

/* Runs the search (search.c): the baseline first (its spread sets the
 * noise), then the strategy.  0 when a best configuration was found (the
 * search may have stopped at the budget: budget_hit); -ECHILD with err
 * when the baseline failed or no configuration ran well; -E2BIG when
 * the grid is larger than the budget; -ENOMEM; the measure or verdict
 * hook's error. */
int tune_run(struct tune *t, char *err, size_t errlen);

/* noise.c: the entries and the noise rule. */

/* The entry of c, measured o.repeat times when it was not yet.  Its
 * index (>= 0); -ENOSPC when the budget is spent (t->budget_hit set);
 * -errno with err from the measure hook. */
int tune_eval(struct tune *t, const struct tune_config *c, char *err, size_t errlen);
/* Whether entry cand is better than entry inc by more than the noise.
 * While their difference is within twice the noise, runs each again (the
 * one with fewer repeats first) up to o.max_repeat.  A failed entry is
 * never better.  0 no, 1 yes, or -errno with err from the measure hook. */
int tune_improves(struct tune *t, uint32_t cand, uint32_t inc, char *err, size_t errlen);
/* Of entries idx[0..n) the one to move to: the lowest median objective,
 * or the first in idx order within the noise of it (ties go to the
 * earlier, so the order of a search does not hang on the noise).
 * UINT32_MAX when every one failed. */
uint32_t tune_pick(const struct tune *t, const uint32_t *idx, uint32_t n);
/* The entry of c when it was measured, else UINT32_MAX. */
uint32_t tune_find(const struct tune *t, const struct tune_config *c);

/* "time", "energy", "edp"; "grid", "greedy", ... */
const char *tune_objective_name(enum tune_objective o);
const char *tune_strategy_name(enum tune_strategy s);
/* Parses the names; 0 or -EINVAL. */
int tune_objective_parse(const char *s, enum tune_objective *o);
int tune_strategy_parse(const char *s, enum tune_strategy *st);

#endif
