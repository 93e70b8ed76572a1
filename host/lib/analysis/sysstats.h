/* System call statistics: per syscall its calls, errors and round-trip
 * times (total, min, max, percentiles), and per function the syscalls it
 * made.  A consumer of the event walk's syscall callback; shared by
 * `report --syscalls` and live views. */
#ifndef LP_SYSSTATS_H
#define LP_SYSSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"

/* Log-linear histogram of durations: exact below 64 ns, then 32 buckets
 * per power of two (within about 3%). */
#define SYSSTATS_HIST_BUCKETS 1920u

struct sysstats_key;

/* Per syscall. */
struct sysstats_row {
	uint8_t arch;
	uint32_t nr;
	char name[40];
	uint64_t calls;      /* entries seen */
	uint64_t errors;     /* returned -errno */
	uint64_t unfinished; /* entered, never returned (exit_group, killed) */
	uint64_t timed;      /* calls with both entry and exit: the times below */
	uint64_t total_ns, min_ns, max_ns;
	uint64_t p50_ns, p99_ns; /* filled by sysstats_collect */
	uint32_t *hist;          /* SYSSTATS_HIST_BUCKETS counts */
};

/* Per function (the innermost instrumented function at the call, or the
 * caller found from the user stack) and syscall. */
struct sysstats_fn {
	char *name;   /* owned */
	uint32_t tid; /* with SYSSTATS_PER_THREAD */
	uint8_t arch;
	uint32_t nr;
	char syscall[40];
	uint64_t calls, errors, total_ns;
};

enum sysstats_flags {
	SYSSTATS_PER_THREAD = 1u << 0, /* by_function rows per thread too */
};

struct sysstats {
	struct walk *w;
	unsigned flags;
	struct sysstats_row *rows[4]; /* per enum sys_arch, SYS_NR_MAX entries, on use */
	struct sysstats_key *keys;    /* per function and syscall, in order of arrival */
	uint32_t nkeys, keys_cap;
	struct hashindex keyindex; /* keys by function, thread and syscall */
	uint64_t calls, errors;
	bool oom;
};

/* Sorted results, owned by the caller (sysstats_result_release). */
struct sysstats_result {
	struct sysstats_row *rows; /* by total time, then calls, then name */
	size_t nrows;
	struct sysstats_fn *fns; /* by total time, then calls, then names */
	size_t nfns;
};

void sysstats_init(struct sysstats *st, struct walk *w, unsigned flags);
void sysstats_release(struct sysstats *st);
/* The walk callback: ctx is the struct sysstats. */
void sysstats_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc);
/* Sets ops->ctx and syscall to build st; leaves the others. */
void sysstats_walk_ops(struct sysstats *st, struct walk_ops *ops);
/* Merges and sorts what was seen so far (per-function rows merged by
 * name).  Returns 0 or -ENOMEM (out empty). */
int sysstats_collect(struct sysstats *st, struct sysstats_result *out);
void sysstats_result_release(struct sysstats_result *r);
/* Writes the "syscalls" and "by_function" arrays of `report --syscalls
 * --format json` into the open object of j (per-function rows with their
 * "tid" when with_tid). */
struct json;
void sysstats_json(struct json *j, const struct sysstats_result *res, bool with_tid);

/* The function a syscall is attributed to, as displayed: the innermost
 * instrumented function, or the first user stack frame outside the C
 * library and the loader, or "[unknown]". */
const char *sysstats_caller(struct walk *w, const struct walk_stream *s, const struct walk_syscall *sc, char *buf,
                            size_t size);

#endif
