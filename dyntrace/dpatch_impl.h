/* The patch planner's shared parts (dpatch.c, and the architectures'
 * planners dplan_x86.c, dplan_a64.c and dplan_arm.c): one file's plan being
 * made. */
#ifndef LP_DYNTRACE_DPATCH_IMPL_H
#define LP_DYNTRACE_DPATCH_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/elfsyms.h"
#include "dyntrace/dpatch.h"
#include "dyntrace/dselect.h"
#include "layerprof/format.h"

#define JMP_SIZE 5u
/* A function moved whole (a branch lands inside its first bytes) is at
 * most this long. */
#define WHOLE_MAX 1024u
/* Relocated code of one function, at most: a whole function and its last
 * int3, or 5 instructions of up to 15 bytes grown by a few bytes each (a
 * loop becomes 12) and the jump back. */
#define CODE_MAX (WHOLE_MAX + 16u)
#define RELOCS_MAX 64u
/* executables asked for later (exec) that could not be planned, kept to be
 * told */
#define DPATCH_EXEC_FAILS_MAX 16u

/* A direct branch of the file: where it lands, and where it is. */
struct branch {
	uint64_t target, source;
};

struct dpatch {
	char *path;
	struct elfsyms *es;
	struct dseg seg[DSEG_MAX];
	uint8_t *bytes[DSEG_MAX];
	unsigned nseg;
	uint64_t dev, ino;
	struct branch *targets; /* direct branches of every function, by target */
	size_t ntargets, captargets;
	/* the plan */
	struct lp_plan_func *fn;
	const char **name;
	uint32_t *span; /* per planned function: the file's bytes its patch takes
	                 * over (those replaced; a function moved whole: all) */
	uint32_t nfn;
	struct lp_plan_reloc *rel;
	uint32_t nrel, caprel;
	uint8_t *code;
	uint32_t ncode, capcode;
	uint32_t candidates;
	uint32_t traps; /* functions planned with an int3 at the entry */
	struct uprobes_skipped *skipped;
	size_t nskipped, planner_skipped;
	char **owned; /* reasons made for one function, names of PLT stubs */
	size_t nowned;
	size_t cap; /* of fn, name, skipped and owned */
	/* the written plan, shared with the runtimes that apply it */
	const uint8_t *map;
	size_t map_size;
	bool lib;            /* a library's plan, chained after the program's */
	struct dpatch *next; /* the next file's plan */
	/* the first plan's: every file's skipped functions, for the stats */
	struct uprobes_skipped *all;
	size_t nall;
	/* the first plan's: executables a process asked a plan for that
	 * could not be planned (path and reason, allocated) */
	struct uprobes_skipped xs[DPATCH_EXEC_FAILS_MAX];
	size_t nxs;
};

/* One function's relocated code, being built. */
struct reloc_buf {
	uint8_t code[CODE_MAX];
	uint32_t len;
	struct lp_plan_reloc rel[RELOCS_MAX];
	uint32_t nrel;
};

/* The file's bytes at vaddr a, and how many follow in its segment; NULL
 * when no executable segment holds a. */
const uint8_t *dpatch_bytes_at(const struct dpatch *p, uint64_t a, size_t *avail);
/* A reason with an offset in it, kept until the plan is freed. */
const char *dpatch_why_at(struct dpatch *p, const char *fmt, uint64_t off);
/* Function f into the plan: patch_len bytes at its entry (b: the file's
 * bytes there), its relocated code rb.  NULL, or why not. */
const char *dpatch_append(struct dpatch *p, const struct elfsyms_fn *f, uint32_t patch_len, const uint8_t *b,
                          const struct reloc_buf *rb);

/* A direct branch into p->targets: 0 or -ENOMEM.  Sorted by target at
 * the end (dpatch_targets_sort), they answer dpatch_target_inside: the
 * first that lands in (a, end), or NULL. */
int dpatch_target_add(struct dpatch *p, uint64_t source, uint64_t target);
void dpatch_targets_sort(struct dpatch *p);
const struct branch *dpatch_target_inside(const struct dpatch *p, uint64_t a, uint64_t end);

/* dplan_x86.c: every direct branch of the file's functions, into
 * p->targets (0 or -ENOMEM); then function f, whose next neighbour starts
 * at next, planned (NULL) or why not. */
int dplan_x86_targets(struct dpatch *p);
const char *dplan_x86(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next);
/* dplan_a64.c: function f planned (NULL), or why not. */
const char *dplan_a64(struct dpatch *p, const struct elfsyms_fn *f);
/* A probe (LP_PLAN_PROBE) at at, an instruction of function f, planned
 * under name (NULL), or why not: dplan_x86.c, dplan_a64.c. */
const char *dplan_x86_probe(struct dpatch *p, const struct elfsyms_fn *f, uint64_t at, const char *name);
const char *dplan_a64_probe(struct dpatch *p, const struct elfsyms_fn *f, uint64_t at, const char *name);
/* dplan_arm.c: every direct branch of the file's ARM and Thumb functions,
 * into p->targets (0 or -ENOMEM); then function f (ARM code, or Thumb code
 * when bit 0 of its address is set), whose next neighbour starts at next,
 * planned (NULL) or why not. */
int dplan_arm_targets(struct dpatch *p);
const char *dplan_arm(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next);

#endif
