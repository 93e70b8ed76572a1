/* The call trees of the web UI's server: one per thread, every node a call
 * path with its calls, inclusive and self time, and the system calls made
 * directly under it as leaves, built as a consumer of the event walk with
 * the meaning `layerprof tree` gives them.  Nodes are never moved or
 * removed, so a node's index is a stable id the page can ask for again
 * (also while a live session adds nodes).  Not thread-safe. */
#ifndef LP_SERVE_TREE_H
#define LP_SERVE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/serve_names.h"
#include "host/lib/walk.h"

#define SERVETREE_NODES_MAX (1u << 24) /* per thread */
/* A syscall leaf's key in place of a function address (user addresses
 * never have the top bit set). */
#define SERVETREE_SYSCALL_KEY(arch, nr) (UINT64_C(1) << 63 | (uint64_t)(arch) << 32 | (nr))
#define SERVETREE_IS_SYSCALL(addr) ((addr) >> 63)

struct servetree_node {
	uint64_t addr;                                  /* function, or a SERVETREE_SYSCALL_KEY */
	uint32_t parent;                                /* index; 0 is the root */
	uint32_t first_child, next_sibling, last_child; /* 0: none */
	uint32_t name;                                  /* names id; NAMES_NONE until servetree_name */
	uint32_t nchildren;
	uint32_t recent[2]; /* the children entered last: most calls repeat a recent path */
	uint64_t calls, total_ns, self_ns, min_ns, max_ns; /* min_ns UINT64_MAX: no call ended */
	uint64_t errors;                                   /* syscall leaves: calls that failed */
	uint64_t sys_calls;                                /* calls of the syscall leaves right under it */
};

/* One thread's tree; node 0 is the root (no function). */
struct servetree_stream {
	struct walk_stream *ws; /* the walk's stream (its image names the addresses) */
	struct servetree_node *nodes;
	uint32_t n, cap, named; /* nodes [0, named) have names */
	uint32_t *hash;         /* node index keyed by (parent, addr) */
	uint32_t hcap;
	uint32_t *path; /* node at each depth */
	uint64_t *child_ns;
	uint32_t path_cap;
	/* function address -> name id, from the named nodes [1, amap_upto) */
	uint64_t *amap_addr;
	uint32_t *amap_name;
	uint32_t amap_cap, amap_upto;
};

struct servetree {
	struct servetree_stream **streams; /* by walk_stream.index; NULL for unselected ones */
	uint32_t nstreams;
	bool oom; /* memory ran out: some calls are not counted */
};

void servetree_init(struct servetree *ct);
/* Frees every tree.  Accepts a zeroed servetree. */
void servetree_release(struct servetree *ct);

/* The walk callbacks; ctx is the struct servetree. */
void servetree_begin(void *ctx, struct walk_stream *s);
void servetree_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags);
void servetree_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                    unsigned flags);
void servetree_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc);

/* The tree of the stream at walk_stream.index `index`, or NULL. */
struct servetree_stream *servetree_stream(const struct servetree *ct, uint32_t index);

/* Names every node added since the last call (functions through w's
 * symbolizer, syscalls by their table).  Returns 0 or -ENOMEM. */
int servetree_name(struct servetree *ct, struct walk *w, struct names *nt);

/* The name id of function or syscall key addr from the thread's named
 * nodes, or NAMES_NONE when no node has it (or memory ran out).  The map
 * is brought up to date on each call: cheap when nothing was added. */
uint32_t servetree_addr_name(struct servetree_stream *t, uint64_t addr);

/* The children of node i, largest total time first (ties: first seen).
 * Returns a malloc'ed array of *count indices (the caller frees it), NULL
 * with *count 0 for a leaf, or NULL with *count > 0 when memory ran out. */
uint32_t *servetree_children(const struct servetree_stream *t, uint32_t i, uint32_t *count);

#endif
