/* The flame graph of the web UI's server: the call trees of every thread
 * merged by call path (names, not addresses, so that threads of different
 * images merge), with inclusive and self time and calls per path.  Built
 * from the call trees in one pass over their nodes; a live session builds
 * it again.  Not thread-safe. */
#ifndef LP_SERVE_FLAME_H
#define LP_SERVE_FLAME_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/analysis/calltree.h"
#include "host/lib/analysis/pathmerge.h"

#define FLAME_NODES_MAX (1u << 25)

/* What a merged path adds up to; its place in the graph (parent,
 * children, newest first) is paths.nodes[] at the same index. */
struct flame_node {
	uint32_t name; /* names id; the root's is NAMES_NONE */
	bool syscall;
	uint64_t calls, total_ns, self_ns;
};

struct flame {
	struct pathmerge paths;   /* keys: name << 1 | syscall; node 0: every thread */
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

#endif
