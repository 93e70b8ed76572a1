/* Call paths merged by name: a tree with one node per distinct path of
 * keys from the root, for the views that add up the call trees of many
 * threads (the folded-stacks export, the web UI's flame graph).  A key is
 * the caller's (a names id or a frame id, with flag bits where the caller
 * needs them); the caller keeps what it counts per node in its own arrays,
 * indexed like the nodes.  Not thread-safe. */
#ifndef LP_PATHMERGE_H
#define LP_PATHMERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/util/hashindex.h"

/* Children are linked in the order they were added, or newest first with
 * PATHMERGE_NEWEST_FIRST. */
#define PATHMERGE_NEWEST_FIRST 1u

struct pathmerge_node {
	uint64_t key; /* the root's is 0 */
	uint32_t parent, first_child, last_child, next_sibling, nchildren;
};

struct pathmerge {
	struct pathmerge_node *nodes; /* owned; node 0 is the root */
	uint32_t n, cap;
	uint32_t max; /* at most this many nodes */
	unsigned flags;
	struct hashindex index; /* node by (parent, key) */
};

/* An empty tree of at most max nodes (the root only).  Returns 0 or
 * -ENOMEM. */
int pathmerge_init(struct pathmerge *m, uint32_t max, unsigned flags);
/* Frees the tree; accepts a zeroed one. */
void pathmerge_release(struct pathmerge *m);
/* Back to the root only, keeping the node memory.  Returns 0 or -ENOMEM
 * (the tree is then released). */
int pathmerge_reset(struct pathmerge *m);
/* The child of parent with key, added when new (*added tells); 0 when
 * memory ran out or the tree has max nodes.  Node indices stay as they
 * are; m->nodes may move. */
uint32_t pathmerge_child(struct pathmerge *m, uint32_t parent, uint64_t key, bool *added);

#endif
