/* The flat profile: per function its calls and total (inclusive, recursion
 * counted once), self, sum, minimum and maximum time, built as a consumer of
 * the event walk and merged into sorted rows by name (and thread).  Shared by
 * report (one pass over a file) and live (fed while the trace arrives). */
#ifndef LP_PROFILE_H
#define LP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/trace/walk.h"

/* Bound on the functions one stream may make us count. */
#define PROFILE_FUNCS_MAX (1u << 24)
#define PROFILE_KEYS_MAX 8

enum profile_key {
	PROFILE_TOTAL,
	PROFILE_SELF,
	PROFILE_CALLS,
	PROFILE_AVG,
	PROFILE_MIN,
	PROFILE_MAX,
	PROFILE_NAME,
};

enum profile_flags {
	PROFILE_PER_THREAD = 1u << 0, /* one row per function and thread */
};

/* The sort order of rows: keys[0] first; ties go to the name, then the tid. */
struct profile_order {
	enum profile_key keys[PROFILE_KEYS_MAX];
	int nkeys;
};

struct profile_stream;

/* The numbers of every stream the walk has begun.  Each stream's table is
 * also hung on walk_stream.user, which is the profile's while it lives. */
struct profile {
	struct profile_stream **streams; /* owned */
	uint32_t nstreams, cap;
	bool oom; /* memory ran out: some calls are not counted */
};

/* A function's numbers, merged over streams.  min_ns is UINT64_MAX when no
 * call has ended yet. */
struct profile_row {
	char *name;       /* owned by the rows */
	const char *file; /* source file: the walk's symbolizer owns it (valid
	                   * until walk_release); NULL when unknown */
	unsigned line;
	uint32_t tid, pid; /* of the first stream merged in */
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns;
};

struct profile_rows {
	struct profile_row *row; /* owned; n entries, sorted */
	size_t n;
};

void profile_init(struct profile *p);
/* Frees every stream's table.  The walk_stream.user pointers it set dangle
 * afterwards: release the profile after the last walk callback.  Accepts a
 * zeroed profile. */
void profile_release(struct profile *p);

/* The walk callbacks that build p; ctx is the struct profile.  A consumer
 * that needs callbacks of its own calls these from them. */
void profile_begin(void *ctx, struct walk_stream *s);
void profile_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags);
void profile_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                  unsigned flags);
/* Sets ops->ctx, begin, entry and exit to build p; leaves the others. */
void profile_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns);
void profile_walk_ops(struct profile *p, struct walk_ops *ops);

/* Numbers of calls counted elsewhere (a call tree's paths: calltree.h).
 * min_ns is UINT64_MAX when none of them ended. */
struct profile_sums {
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns;
};

/* Adds sums to function addr of stream s (begun with profile_begin), as if
 * those calls had been walked: for a consumer that derives the profile from
 * another structure at the end instead of calling profile_entry and
 * profile_exit on every event.  Sets p->oom when memory runs out. */
void profile_add(struct profile *p, struct walk_stream *s, uint64_t addr, const struct profile_sums *sums);

/* Merges the tables a profile hung on the streams of w into rows by name
 * (and thread with PROFILE_PER_THREAD), named through w's symbolizer,
 * sorted by `order`.  Can be called again while the walk goes on (live).
 * Returns 0 with *out filled (free with profile_rows_release), or -ENOMEM
 * with *out empty. */
int profile_collect(struct walk *w, unsigned flags, const struct profile_order *order, struct profile_rows *out);
void profile_rows_release(struct profile_rows *rows);

/* Average time per ended call of a row (0 without calls). */
uint64_t profile_row_avg(const struct profile_row *r);
/* The value of r that key k sorts by (min_ns is UINT64_MAX for a row
 * without a finished call). */
uint64_t profile_row_key(const struct profile_row *r, enum profile_key k);

/* Parses "total,calls" (total, self, calls, avg, min, max, name) into order.
 * Returns 0 or -EINVAL. */
int profile_order_parse(struct profile_order *order, const char *arg);

#endif
