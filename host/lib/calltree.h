/* Per-thread call trees: every node is a call path (a function, or a
 * system call leaf under the function that made it) with its calls and
 * inclusive and self time.  A consumer of the event walk, shared by tree,
 * the report exports (XML, HTML) and folded stacks.  Memory grows with the
 * number of distinct call paths, not with the number of events.
 *
 * Not thread-safe: one walk feeds one calltree. */
#ifndef LP_CALLTREE_H
#define LP_CALLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/walk.h"

/* Bound on the nodes of one thread's tree. */
#define CALLTREE_NODES_MAX (1u << 24)
/* A syscall leaf's key in place of a function address (user addresses
 * never have the top bit set). */
#define CALLTREE_SYSCALL_KEY(arch, nr) (UINT64_C(1) << 63 | (uint64_t)(arch) << 32 | (nr))
#define CALLTREE_IS_SYSCALL(addr) ((addr) >> 63)
#define CALLTREE_SYSCALL_ARCH(addr) ((uint8_t)((addr) >> 32 & 0xff))
#define CALLTREE_SYSCALL_NR(addr) ((uint32_t)(addr))

struct calltree_node {
	uint64_t addr;                                  /* function address, or CALLTREE_SYSCALL_KEY */
	uint32_t parent;                                /* index; 0 is the root */
	uint32_t first_child, next_sibling, last_child; /* 0: none */
	/* calls: entries on this path (frames inherited from the parent
	 * process at fork not counted); total_ns and self_ns: time of the
	 * calls that ended (inherited frames included); self excludes callees
	 * and system calls; min_ns is UINT64_MAX before a call ended */
	uint64_t calls, total_ns, self_ns, min_ns, max_ns;
	uint64_t errors; /* syscall leaves: calls that failed */
};

/* One thread's tree: nodes[0] is the root (no function), nodes[1..n) the
 * call paths in order of first appearance. */
struct calltree_stream {
	struct calltree_node *nodes;
	uint32_t n, cap;
	uint32_t *hash; /* node index, keyed by (parent, addr) */
	uint32_t hcap;
	uint32_t *path; /* node at each depth */
	uint64_t *child_ns;
	uint32_t path_cap;
};

struct calltree {
	struct calltree_stream **streams; /* owned; by walk_stream.index, NULL until begun */
	uint32_t cap;
	bool oom; /* memory ran out (or a tree reached CALLTREE_NODES_MAX): trees are incomplete */
};

void calltree_init(struct calltree *ct);
/* Frees every tree.  Accepts a zeroed calltree. */
void calltree_release(struct calltree *ct);

/* The walk callbacks that build ct; ctx is the struct calltree.  They do
 * not use walk_stream.user.  A consumer with callbacks of its own calls
 * these from them. */
void calltree_begin(void *ctx, struct walk_stream *s);
void calltree_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags);
void calltree_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                   unsigned flags);
void calltree_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc);
/* Sets ops->ctx, begin, entry, exit and syscall to build ct. */
void calltree_walk_ops(struct calltree *ct, struct walk_ops *ops);

/* The tree of stream s, or NULL when it has none (not selected, or no
 * memory).  Valid until calltree_release. */
const struct calltree_stream *calltree_stream(const struct calltree *ct, const struct walk_stream *s);

/* A node's display name into buf: the function's name (walk_name), or for
 * a syscall leaf its name, after "[sys] " when sys_prefix.  Returns buf. */
const char *calltree_node_name(struct walk *w, const struct walk_stream *s, const struct calltree_node *nd,
                               bool sys_prefix, char *buf, size_t size);

/* Depth-first walk of one tree in preorder, each node's children in order
 * of total time, largest first (ties: first seen first).  Uses an explicit
 * stack: trees of deep recursion are as deep as the recursion. */
struct calltree_iter {
	const struct calltree_stream *t;
	struct calltree_iter_frame *stack; /* owned */
	uint32_t sp, cap;
	bool oom;
};

/* Starts at t's root.  Returns 0 or -ENOMEM. */
int calltree_iter_init(struct calltree_iter *it, const struct calltree_stream *t);
/* The next node's index, with its depth (0 for the children of the root),
 * or 0 at the end.  Sets it->oom and ends early when memory runs out. */
uint32_t calltree_iter_next(struct calltree_iter *it, uint32_t *depth);
void calltree_iter_release(struct calltree_iter *it);

#endif
