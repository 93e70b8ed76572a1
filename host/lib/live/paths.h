/* Hot call paths for `layerprof live`: a tree of call paths (root function
 * -> ... -> callee, the threads of a session merged) with the calls and the
 * inclusive and self time of each, built incrementally as a consumer of the
 * event walk and collected into rows sorted by self time.  Memory is bounded
 * by a node limit: calls on paths that do not fit are counted as folded.
 * Not thread-safe: the live session owns it. */
#ifndef LP_LIVEPATHS_H
#define LP_LIVEPATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"

#define LIVEPATHS_NODES_DEFAULT (1u << 16)
#define LIVEPATHS_NODES_MAX (1u << 22)
#define LIVEPATHS_NAME_MAX 4096 /* bytes of one path's text; longer ones lose their root end */
#define LIVEPATHS_SEP " > "     /* between the functions of a path's text */

struct livepaths_node;
struct livepaths_stack;

struct livepaths {
	struct livepaths_node *node;    /* owned: n nodes, room for cap */
	uint32_t n, cap, max;           /* max: the node limit */
	struct hashindex index;         /* owned: the nodes by (parent, image, addr) */
	struct livepaths_stack *stacks; /* owned: the open path of each stream, by walk index */
	uint32_t nstacks;
	uint64_t folded; /* calls not kept: their path had no room */
	bool oom;        /* memory ran out: some calls are not counted */
};

/* One path, merged over the threads and images that ran it.  Time is of
 * calls that have returned; calls count entries. */
struct livepaths_row {
	char *path; /* owned by the rows: "main > f > g", root first */
	uint32_t depth;
	uint64_t calls, total_ns, self_ns;
};

struct livepaths_rows {
	struct livepaths_row *row; /* owned; n rows, most self time first */
	size_t n;
};

/* An empty tree that keeps at most max_nodes paths (0: the default; at
 * most LIVEPATHS_NODES_MAX).  Nothing is allocated until the first call. */
void livepaths_init(struct livepaths *p, uint32_t max_nodes);
/* Frees everything.  Accepts a zeroed struct. */
void livepaths_release(struct livepaths *p);

/* The walk callbacks (walk.h) that build the tree; they use the stream's
 * index, not walk_stream.user (which the flat profile owns).  Called on
 * every event: they allocate only when the tree or a stack grows. */
void livepaths_entry(struct livepaths *p, struct walk_stream *s, uint32_t depth, uint64_t addr, unsigned flags);
void livepaths_exit(struct livepaths *p, struct walk_stream *s, uint32_t depth, uint64_t duration_ns, unsigned flags);

/* The paths so far, named through w's symbolizer, paths with the same
 * names merged, sorted by self time (then total time, then text).
 * Returns 0 with *out filled (free with livepaths_rows_release) or
 * -ENOMEM with *out empty. */
int livepaths_collect(const struct livepaths *p, struct walk *w, struct livepaths_rows *out);
void livepaths_rows_release(struct livepaths_rows *rows);

#endif
