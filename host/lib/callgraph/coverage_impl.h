/* What coverage.c builds and covwrite.c writes: struct coverage itself,
 * private to host/lib/callgraph (users see coverage.h). */
#ifndef LP_COVERAGE_IMPL_H
#define LP_COVERAGE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/callgraph/cgraph.h"
#include "host/lib/callgraph/coverage.h"

/* An executed call between two functions: caller f1 of object o1, callee
 * f2 of o2 (indexes in the set), with its count. */
struct cov_rpair {
	uint32_t o1, f1, o2, f2;
	uint64_t calls;
};

struct cov_count {
	uint32_t total, run;
};

/* What an object of the set holds beside its graph. */
struct cov_obj {
	char *path;         /* as the trace names it (no sysroot); owned */
	uint64_t *calls;    /* per function: entries traced; owned */
	const char **names; /* per function: as shown (cgout_func_name);
	                     * owned, each */
	uint32_t *never;    /* counted functions that never ran, largest
	                     * first; owned */
	uint32_t nnever;
	struct cov_count funcs, edges;
};

struct coverage {
	char *trace; /* the trace's directory, as given */
	unsigned flags;
	struct cg_set set;    /* the objects holding a traced function, in
	                       * order first traced; imports linked */
	struct cov_obj *objs; /* beside set.objs, nobjs of them */
	uint32_t nobjs;
	char *damage;            /* the trace's damage (walk_condition); NULL: none */
	uint32_t unread;         /* objects that could not be read */
	uint64_t unmatched;      /* traced addresses in no function of any object */
	bool plt;                /* the trace has PLT entries: imports count */
	struct cov_rpair *pairs; /* executed calls, sorted (cov_rpair_cmp) */
	uint32_t npairs;
	uint32_t *dyn; /* of them, those outside the static graph, sorted
	                * by calls (most first), then names */
	uint32_t ndyn;
	struct {
		struct cov_count funcs, edges;
	} total;
	uint32_t prog, root; /* the path tree's program and root (CG_NONE) */
	uint32_t depth, max_nodes;
	bool want_paths; /* asked for: JSON says null when there are none */
	bool has_paths;
	struct cg_paths paths; /* with has_paths: CG_PATH_RUN and calls set */
};

int cov_rpair_cmp(const void *a, const void *b);
/* The count of executed call (o1, f1) -> (o2, f2); 0 when it never ran. */
uint64_t coverage_pair_calls(const struct coverage *c, uint32_t o1, uint32_t f1, uint32_t o2, uint32_t f2);
/* Whether the static graph explains the call (o1, f1) -> (o2, f2). */
bool coverage_static_call(const struct coverage *c, uint32_t o1, uint32_t f1, uint32_t o2, uint32_t f2);
/* How often static edge e of object obj ran. */
uint64_t coverage_edge_calls(const struct coverage *c, uint32_t obj, const struct cg_edge *e);
/* Whether function f counts in the percentages. */
bool coverage_counted(const struct coverage *c, const struct cg_func *f);
/* Whether static edge e of object obj counts: a call or tail call between
 * counted functions, or to an import linked to a counted function. */
bool coverage_edge_counted(const struct coverage *c, uint32_t obj, const struct cg_edge *e);
/* Sorts the never-run and outside-the-graph lists (covwrite.c). */
void cov_sort_lists(struct coverage *c);
void cov_obj_release(struct cov_obj *co);

#endif
