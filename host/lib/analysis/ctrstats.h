/* Counter statistics (record --counters) at the three levels of
 * `report --counters`: the program (the recorder's totals, else the sum of
 * its threads), each thread (its last values less its first) and each
 * function (inclusive and self counts from the values read at its entry
 * and exit), with the metrics derived from them (IPC, misses per thousand
 * instructions, miss ratios).  Built as a consumer of the event walk, in
 * memory bounded by the caps below; what goes over a cap is counted. */
#ifndef LP_CTRSTATS_H
#define LP_CTRSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"
#include "layerprof/format.h"

/* Threads with counter values kept (more: their values are left out). */
#define CTRSTATS_THREADS_MAX 4096u
/* Distinct functions kept, over all threads (per thread and function with
 * CTRSTATS_PER_THREAD); calls of more are left out. */
#define CTRSTATS_FUNCS_MAX 65536u
/* Open calls followed per thread; deeper calls are left out. */
#define CTRSTATS_DEPTH_MAX 4096u
/* CPUs of the per-CPU totals. */
#define CTRSTATS_CPUS_MAX 1024u
/* Derived metrics of one counter set: IPC, and for each miss counter its
 * MPKI and its ratio. */
#define CTRSTATS_METRICS_MAX (1u + 2u * LP_COUNTERS_MAX)
#define CTRSTATS_KEYS_MAX 8
/* The name a counter of the trace may have ("L1-dcache-load-misses"). */
#define CTRSTATS_NAME_MAX 64

enum ctrstats_flags {
	CTRSTATS_PER_THREAD = 1u << 0, /* one function row per function and thread */
};

/* Counter values with what the kernel said of them. */
struct ctrstats_values {
	uint64_t v[LP_COUNTERS_MAX];
	/* with has_times: ns each counter was enabled, and running (counting)
	 * on a PMU; running < enabled: multiplexed, the value was scaled up by
	 * enabled / running */
	uint64_t enabled[LP_COUNTERS_MAX], running[LP_COUNTERS_MAX];
	bool has_times;
	uint32_t flags; /* enum lp_ctr_flags of the record(s) they came from */
};

enum ctrstats_metric_kind {
	CTRSTATS_IPC,   /* instructions / cycles */
	CTRSTATS_MPKI,  /* 1000 * misses / instructions */
	CTRSTATS_RATIO, /* misses / their references (cache-misses / cache-references) */
};

/* A metric derived from two counters of the set. */
struct ctrstats_metric {
	enum ctrstats_metric_kind kind;
	uint32_t num, den;                    /* counter indexes */
	char name[2 * CTRSTATS_NAME_MAX + 8]; /* "IPC", "cache-misses MPKI", "cache-misses ratio" */
};

struct ctrstats_thread_row {
	const struct walk_stream *s; /* the walk's: pid, tid, image, comm */
	struct ctrstats_values val;  /* its last values less its BEGIN values */
	bool has_begin, has_end;     /* a BEGIN, an END record was seen */
	uint64_t records;            /* its counter records */
};

struct ctrstats_cpu_row {
	uint32_t cpu;
	struct ctrstats_values val;
};

struct ctrstats_fn_row {
	char *name;       /* owned by the result */
	const char *file; /* the walk's symbolizer's (valid until walk_release); NULL when unknown */
	unsigned line;
	uint32_t tid, pid; /* of the first thread merged in */
	uint64_t calls;    /* entries */
	/* calls that ended (an EXIT, or open when the thread's values ended),
	 * and calls a longjmp left (an EXIT of a caller came first): those
	 * have no counts of their own, their callers' self holds them */
	uint64_t ended, unwound;
	uint32_t n;
	uint64_t incl[LP_COUNTERS_MAX]; /* recursion counted once */
	uint64_t self[LP_COUNTERS_MAX]; /* inclusive less its direct callees' */
};

enum ctrstats_key_kind {
	CTRSTATS_KEY_INCL,
	CTRSTATS_KEY_SELF,
	CTRSTATS_KEY_CALLS,
	CTRSTATS_KEY_NAME,
	CTRSTATS_KEY_METRIC, /* of the inclusive counts */
};

/* Sort order of the function rows: keys[0] first, largest first (name:
 * alphabetical); ties go to the name, then the tid.  A key names a counter
 * or metric by its name until ctrstats_collect finds its index. */
struct ctrstats_key {
	enum ctrstats_key_kind kind;
	char name[2 * CTRSTATS_NAME_MAX + 8]; /* counter or metric; "": the first counter */
	uint32_t index;
};

struct ctrstats_order {
	struct ctrstats_key keys[CTRSTATS_KEYS_MAX];
	int nkeys;
};

/* What ctrstats_collect makes: owned by it, freed by ctrstats_result_release. */
struct ctrstats_result {
	uint32_t n; /* counters */
	char names[LP_COUNTERS_MAX][CTRSTATS_NAME_MAX];
	struct ctrstats_metric metrics[CTRSTATS_METRICS_MAX];
	uint32_t nmetrics;
	/* the program: from the recorder's PROCESS record (from_process), else
	 * the sum of the threads' values (has_program false when no thread
	 * has any) */
	bool has_program, from_process;
	struct ctrstats_values program;
	struct ctrstats_cpu_row *cpus; /* by CPU number */
	uint32_t ncpus;
	struct ctrstats_thread_row *threads; /* in order of first appearance */
	uint32_t nthreads;
	struct ctrstats_fn_row *fns; /* sorted by the order given */
	size_t nfns;
};

struct ctrstats_thread;
struct ctrstats_fn;

/* The builder.  Zero it with ctrstats_init. */
struct ctrstats {
	struct walk *w;
	unsigned flags;   /* enum ctrstats_flags */
	uint32_t nvalues; /* the most values a record had */
	/* threads by walk_stream.index (slot + 1; 0: none yet) */
	uint32_t *slot_of;
	uint32_t slot_cap;
	struct ctrstats_thread **threads;
	uint32_t nthreads, threads_cap;
	/* functions by (image, address[, tid]) */
	struct ctrstats_fn *fns;
	uint32_t nfns, fns_cap;
	struct hashindex fn_index;
	bool has_process;
	struct ctrstats_values process;
	struct ctrstats_cpu_row *cpus;
	uint32_t ncpus, cpus_cap;
	/* what was left out or did not fit, for the report to say */
	uint64_t records;         /* counter records taken */
	uint64_t threads_dropped; /* records of threads over CTRSTATS_THREADS_MAX */
	uint64_t fns_dropped;     /* calls of functions over CTRSTATS_FUNCS_MAX */
	uint64_t deep_dropped;    /* calls deeper than CTRSTATS_DEPTH_MAX */
	uint64_t cpus_dropped;    /* CPU records over CTRSTATS_CPUS_MAX */
	uint64_t unmatched_exits; /* EXITs with no open call of their function */
	uint64_t unwound;         /* calls left by a longjmp (a caller's EXIT came first) */
	uint64_t open_at_end;     /* calls still open when their thread's values ended */
	uint64_t scaled_records;  /* records flagged LP_CTR_SCALED */
	bool oom;                 /* memory ran out: some records are not counted */
};

void ctrstats_init(struct ctrstats *st, struct walk *w, unsigned flags);
/* Frees everything.  Accepts a zeroed or released builder. */
void ctrstats_release(struct ctrstats *st);

/* Sets ops->ctx, counter and end to build st (begin, entry, exit and the
 * others stay as they were).  walk_stream.user is not used. */
void ctrstats_walk_ops(struct ctrstats *st, struct walk_ops *ops);

/* Parses "self:instructions,calls": each key calls, name, self[:COUNTER],
 * incl[:COUNTER] (also total[:COUNTER]), a counter (its inclusive count)
 * or a derived metric's name (of the inclusive counts); a key without a
 * counter means the first counter.  Names are checked against the trace
 * by ctrstats_collect.  Returns 0 or -EINVAL. */
int ctrstats_order_parse(struct ctrstats_order *order, const char *arg);
/* The default: the inclusive count of the first counter. */
void ctrstats_order_default(struct ctrstats_order *order);

/* Makes the rows of st's walk (after the pass; can be called again),
 * named through the walk's symbolizer, the functions sorted by order.
 * Returns 0; -EINVAL with err saying which key of order names no counter
 * or metric of the trace (out is then empty); -ENOMEM. */
int ctrstats_collect(struct ctrstats *st, struct ctrstats_order *order, struct ctrstats_result *out, char *err,
                     size_t errlen);
void ctrstats_result_release(struct ctrstats_result *res);

/* The value of metric m for values v: false when an input is 0 (no
 * division by zero; the metric is then not shown). */
bool ctrstats_metric_value(const struct ctrstats_metric *m, const uint64_t *v, double *out);
/* How much the value of counter i was scaled up (enabled / running): 1
 * when it was not; 0 when it never ran (enabled but not counted); false
 * without times. */
bool ctrstats_scale(const struct ctrstats_values *val, uint32_t i, double *factor);

/* The metrics of a counter set named names[0..n): IPC when it has
 * instructions and cycles; for each "...-misses" counter its MPKI (with
 * instructions) and its ratio to the events it missed of (cache-references
 * for cache-misses, branches for branch-misses, X-loads for X-load-misses,
 * ...) when the set has them.  A name's ":u"-style modifiers are ignored.
 * Returns the number written to out (at most CTRSTATS_METRICS_MAX). */
uint32_t ctrstats_metrics(char names[][CTRSTATS_NAME_MAX], uint32_t n, struct ctrstats_metric *out);

#endif
