/* Energy per program, CPU, thread and function (`report --energy`): an
 * energy model (energy/emodel.h) applied to the counts of a ctrstats result
 * and to the times of the same walk.  The builder follows the walk's
 * function entries and exits for each function's self and inclusive time;
 * the program's span and each thread's lifetime are its streams' first to
 * last event.  The formulas (docs/energy.md, "Energy per program, thread
 * and function"), with c0 the model's constant and CPUS machine.cpus:
 *
 *   program   c0 * span        + sum coef * the program's counts
 *   CPU       c0 * span / CPUS + sum coef * the CPU's counts
 *   thread    c0 * life / CPUS + sum coef * the thread's counts
 *   function  c0 * time / CPUS + sum coef * its counts (self or inclusive)
 *
 * Memory is bounded by the caps of ctrstats.h (threads, functions, depth). */
#ifndef LP_ENERGYSTATS_H
#define LP_ENERGYSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/analysis/ctrstats.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"

enum energystats_flags {
	ENERGYSTATS_PER_THREAD = 1u << 0, /* times per function and thread (as CTRSTATS_PER_THREAD) */
};

/* Order of the function rows, largest first; ties go to the name, then
 * the tid. */
enum energystats_sort {
	ENERGYSTATS_SORT_INCL, /* inclusive energy (the default) */
	ENERGYSTATS_SORT_SELF, /* self energy */
	ENERGYSTATS_SORT_CALLS,
};

/* One energy with its split and the span it was spent over. */
struct energystats_energy {
	double joules;   /* constant + events */
	double constant; /* the constant's share: c0 * seconds * share */
	uint64_t ns;     /* the span (program), lifetime (thread) or time (function) */
	double watts;    /* joules / seconds; 0 when ns is 0 */
};

struct energystats_cpu_row {
	const struct ctrstats_cpu_row *c; /* the ctrstats result's */
	struct energystats_energy e;      /* over the program's span */
};

struct energystats_thread_row {
	const struct ctrstats_thread_row *t; /* the ctrstats result's */
	struct energystats_energy e;         /* over its lifetime */
};

struct energystats_fn_row {
	const struct ctrstats_fn_row *fn; /* the counts: the ctrstats result's */
	struct energystats_energy self, incl;
};

/* Power samples of the trace over the program's span (record --power). */
struct energystats_measured {
	char source[64];
	double joules, watts;
	double error_pct; /* (estimated - measured) / measured * 100 */
};
#define ENERGYSTATS_MEASURED_MAX 8u

/* What energystats_collect makes: owned by it, freed by
 * energystats_result_release.  The row pointers into the ctrstats result
 * are valid while that result is. */
struct energystats_result {
	uint32_t cpus;                     /* the constant's divisor: the model's machine.cpus (1 when it says 0) */
	uint64_t t0_ns, t1_ns;             /* the program's first and last event */
	struct energystats_energy program; /* from the program's counts (ctrstats_result.program) */
	bool has_program;
	/* the threads together, and program less threads: its constant part
	 * (the constant of CPUs no thread of the program used) and its counts
	 * part (counts of the program in no thread's values: before a thread's
	 * first record or after its END, children, threads over the cap) */
	struct energystats_energy threads;
	double rest_constant, rest_events;
	struct energystats_cpu_row *cpus_rows; /* by CPU number */
	uint32_t ncpus;
	struct energystats_thread_row *threads_rows; /* in order of first appearance */
	uint32_t nthreads;
	struct energystats_fn_row *fns; /* sorted */
	size_t nfns;
	struct energystats_measured measured[ENERGYSTATS_MEASURED_MAX];
	uint32_t nmeasured;
};

struct energystats_thread;
struct energystats_fn;

/* The builder of the function times.  Zero it with energystats_init. */
struct energystats {
	struct walk *w;
	unsigned flags;    /* enum energystats_flags */
	uint32_t *slot_of; /* threads by walk_stream.index (slot + 1; 0: none yet) */
	uint32_t slot_cap;
	struct energystats_thread **threads;
	uint32_t nthreads, threads_cap;
	struct energystats_fn *fns; /* by (image, address[, tid]) */
	uint32_t nfns, fns_cap;
	struct hashindex fn_index;
	uint64_t entries;         /* function entries seen */
	uint64_t threads_dropped; /* entries of threads over CTRSTATS_THREADS_MAX */
	uint64_t fns_dropped;     /* calls of functions over CTRSTATS_FUNCS_MAX */
	uint64_t deep_dropped;    /* calls deeper than CTRSTATS_DEPTH_MAX */
	uint64_t untimed_rows;    /* function rows with counts and no time (filtered out by -F/-N) */
	bool oom;
};

void energystats_init(struct energystats *es, struct walk *w, unsigned flags);
/* Frees everything.  Accepts a zeroed or released builder. */
void energystats_release(struct energystats *es);

/* Sets ops->ctx, entry, exit and end to time the functions (the others
 * stay as they were: put ctrstats' consumer in another walk_ops of the same
 * list).  walk_stream.user is not used. */
void energystats_walk_ops(struct energystats *es, struct walk_ops *ops);

/* Applies model m (bound to res's counter names: map from emodel_bind) to
 * the ctrstats result res of the same pass and the times of es, rows sorted
 * by sort.  Fills out (the measured energies are the caller's to add:
 * energystats_measured_add).  Returns 0 or -ENOMEM (out is then empty). */
int energystats_collect(struct energystats *es, const struct emodel *m, const uint32_t *map,
                        const struct ctrstats_result *res, enum energystats_sort sort, struct energystats_result *out);
/* Adds a meter's joules over the program's span, named source (cut to
 * fit), with the error of the estimate.  false when out has
 * ENERGYSTATS_MEASURED_MAX already. */
bool energystats_measured_add(struct energystats_result *out, const char *source, double joules);
void energystats_result_release(struct energystats_result *res);

/* The energy of counts v over ns with the constant's share (1, or 1 /
 * CPUS): emodel_energy with its split. */
struct energystats_energy energystats_energy(const struct emodel *m, const uint32_t *map, const uint64_t *v,
                                             uint64_t ns, double share);

#endif
