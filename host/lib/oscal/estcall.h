/* layerprof estimate's table of calls, private to host/lib/oscal/: for a
 * traced call (a system call or a C library call NAME@plt), the
 * calibration's entry it takes (by its name's alias and the condition the
 * call's arguments or result tell), its parameter x, or why it keeps its
 * measured time; and what the calls do to the processes' files (a read of
 * a regular file or of a pipe) and heap blocks (free's size).  The rules
 * are docs/estimate.md's.  Not thread-safe. */
#ifndef LP_OSCAL_ESTCALL_H
#define LP_OSCAL_ESTCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/oscal/estimate.h"
#include "host/lib/oscal/oscal.h"
#include "host/lib/util/hashindex.h"

/* One rule of the table: see estcall.c. */
struct callrule {
	const char *name; /* as the trace names it (syscall, or libcall without @plt) */
	const char *call; /* the calibration's call */
	uint8_t x, a, b;  /* enum xrule and its arguments */
	uint8_t cond, ca; /* enum condrule and its argument */
};

/* A call in the making: what the rules need of it. */
struct estcall_in {
	const char *tname; /* as the trace names it */
	const char *name;  /* rule lookup name (libcall without @plt) */
	bool libcall;
	const uint64_t *args;
	uint32_t nargs;
	bool has_args;
	bool has_ret;
	int64_t ret;
	uint32_t pid, tid;
};

struct estcall_proc {
	uint32_t pid;
	uint8_t files[ESTIMATE_FDS_MAX / 8]; /* fds opened as files */
	/* files whose position is known to be their end (a new, emptied or
	 * O_APPEND file, written, not read or moved since): a write there
	 * appends */
	uint8_t at_end[ESTIMATE_FDS_MAX / 8];
};

/* A heap block a C library call returned (malloc, calloc, realloc): its
 * size, for free's and realloc's x.  size 0: freed. */
struct estcall_block {
	uint32_t pid;
	uint64_t ptr, size;
};

#define ESTIMATE_BLOCKS_MAX (1u << 20) /* past it the table starts again */

/* The files and heap blocks followed: zero-initialise; estcall_release
 * frees. */
struct estcall {
	struct estcall_proc *procs;
	uint32_t nprocs, procs_cap;
	struct estcall_block *blocks;
	uint32_t nblocks, blocks_cap;
	struct hashindex block_index;
};

/* Grows *v (of *cap items of size bytes) to hold need, doubling, at most
 * max items.  Returns 0, -E2BIG past max, or -ENOMEM (*v unchanged). */
int estcall_grow(void **v, uint32_t *cap, uint32_t need, size_t size, uint32_t max);
/* The rule of the call named name (a syscall, or a libcall without @plt),
 * NULL when the table has none (the call is then looked up by its name). */
const struct callrule *estcall_rule(const char *name);
/* The entry of c under r: sets *fate to ESTIMATE_MODELLED (the entry has a
 * model), or why not (NO_ENTRY, NO_MODEL: the entry is returned, WAIT).
 * With c's arguments and result unknown yet, what its name alone says. */
const struct oscal_entry *estcall_entry(struct estcall *st, const struct oscal_cal *cal, const struct callrule *r,
                                        const struct estcall_in *c, enum estimate_fate *fate);
/* Decides a finished call: its fate, entry (*en, NULL when none), x and the
 * model's time at x (0 unless MODELLED). */
enum estimate_fate estcall_decide(struct estcall *st, const struct oscal_cal *cal, const struct estcall_in *c,
                                  const struct oscal_entry **en, double *x, double *model);
/* What a finished call (its name in the table's terms, arguments, result)
 * does to pid's files: open, close, dup; and, for a C library call, to its
 * heap blocks: malloc, calloc, realloc, free.  After estcall_decide (a
 * realloc's x is its old block's size). */
void estcall_follow_fd(struct estcall *st, uint32_t pid, const char *name, const uint64_t *args, int64_t ret);
void estcall_follow_heap(struct estcall *st, uint32_t pid, const char *name, const uint64_t *args, uint64_t ret);
/* A process child forked from parent: its files are the parent's. */
void estcall_fork(struct estcall *st, uint32_t parent, uint32_t child);
void estcall_release(struct estcall *st);

#endif
