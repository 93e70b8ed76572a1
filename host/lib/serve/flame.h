/* The flame graphs of the web UI's server: the call trees of every thread
 * merged by call path (names, not addresses, so that threads of different
 * images merge), with inclusive and self time and calls per path, built
 * from the call trees in one pass over their nodes; and graphs of other
 * weights charged to call paths (the time off the CPU at each switch-out),
 * built from points on the same trees.  A live session builds them again.
 * Not thread-safe. */
#ifndef LP_SERVE_FLAME_H
#define LP_SERVE_FLAME_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/analysis/calltree.h"
#include "host/lib/analysis/pathmerge.h"

#define FLAME_NODES_MAX (1u << 25)
#define FLAME_POINT_DEPTH_MAX 4096u /* frames of a point's path kept (the outermost) */

/* What a frame is: a function, or a leaf of the call trees. */
enum flame_kind {
	FLAME_FUNCTION = 0,
	FLAME_SYSCALL, /* a system call leaf */
	FLAME_KERNEL,  /* a kernel event leaf */
	FLAME_SYNC,    /* a sync wait leaf (record --sync) */
};

/* What a merged path adds up to; its place in the graph (parent,
 * children, newest first) is paths.nodes[] at the same index. */
struct flame_node {
	uint32_t name; /* names id; the root's is NAMES_NONE */
	uint8_t kind;  /* enum flame_kind */
	uint64_t calls, total_ns, self_ns;
};

/* The kind of a call tree node's frame. */
#define FLAME_KIND_OF(addr)                         \
	(CALLTREE_IS_SYSCALL(addr)  ? FLAME_SYSCALL \
	 : CALLTREE_IS_KERNEL(addr) ? FLAME_KERNEL  \
	 : CALLTREE_IS_SYNC(addr)   ? FLAME_SYNC    \
	                            : FLAME_FUNCTION)

struct flame {
	struct pathmerge paths;   /* keys: name << 2 | kind; node 0: every thread */
	struct flame_node *nodes; /* per node of paths */
	uint32_t cap;
	bool oom; /* memory ran out: the graph lacks some paths */
};

void flame_init(struct flame *f);
/* Frees the graph; accepts a zeroed one. */
void flame_release(struct flame *f);
/* Builds the graph anew from the named nodes of ct (calltree_name first).
 * Returns 0 or -ENOMEM (f->oom set; what fit is kept). */
int flame_build(struct flame *f, const struct calltree *ct);

/* A weight charged to one call path of one thread: the node of its call
 * tree (0: no function open), and a system call leaf under it (leaf: a
 * CALLTREE_SYSCALL_KEY, or 0 for none). */
struct flame_point {
	uint32_t stream, node; /* walk_stream.index, calltree node */
	uint64_t leaf;
	uint64_t ns, count; /* what it weighs, and how many times it was charged */
};

/* Builds the graph anew from n points on the named nodes of ct: each
 * point's path from the root (its outermost FLAME_POINT_DEPTH_MAX frames:
 * deeper ones are charged to the last kept), then its leaf, gets ns in
 * total_ns and count in calls; the frame where a point ends gets its ns in
 * self_ns.  A point on the root without a leaf goes to a frame named
 * `none` (interned into nt, as syscall leaves' names are).  Points on
 * nodes not named yet are left out.  Returns 0 or -ENOMEM (f->oom set). */
int flame_build_points(struct flame *f, const struct calltree *ct, const struct flame_point *p, size_t n,
                       struct names *nt, const char *none);

#endif
