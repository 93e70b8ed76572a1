/* Per-thread call trees: every node is a call path (a function, a system
 * call leaf under the function that made it, or a kernel event leaf under
 * the system call or function under way when it happened) with its calls
 * and inclusive and self time.  A consumer of the event walk, shared by tree,
 * the report exports (XML, HTML), folded stacks and the web UI's server,
 * which names the nodes, asks for one level at a time and derives its flat
 * profile from the trees (calltree_profile).  Memory grows with the number
 * of distinct call paths, not with the number of events.  Nodes are never
 * moved or removed, so a node's index is a stable id (also while a live
 * session adds nodes).
 *
 * Not thread-safe: one walk feeds one calltree. */
#ifndef LP_CALLTREE_H
#define LP_CALLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/analysis/profile.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"
#include "host/lib/util/json.h"
#include "host/lib/util/names.h"

/* Bound on the nodes of one thread's tree. */
#define CALLTREE_NODES_MAX (1u << 24)
/* A leaf's key in place of a function address, told apart by its top
 * bits (function addresses, code addresses too, never have the top bit
 * set: symbolizer.h): 10 a system call (its arch and number), 110 a kernel
 * event (its tracepoint id, named by the trace's formats), 111 a
 * synchronisation operation (record --sync: its enum lp_sync_op in bits
 * 48..55 and the low 48 bits of its object, which hold a user-space
 * address on x86-64 and aarch64). */
#define CALLTREE_SYSCALL_KEY(arch, nr) (UINT64_C(2) << 62 | (uint64_t)(arch) << 32 | (nr))
#define CALLTREE_KERNEL_KEY(id) (UINT64_C(6) << 61 | (uint64_t)(uint32_t)(id))
#define CALLTREE_SYNC_OBJ_MASK ((UINT64_C(1) << 48) - 1)
#define CALLTREE_SYNC_KEY(op, obj) \
	(UINT64_C(7) << 61 | (uint64_t)((op)&0xff) << 48 | ((uint64_t)(obj)&CALLTREE_SYNC_OBJ_MASK))
#define CALLTREE_IS_LEAF(addr) ((addr) >> 63)
#define CALLTREE_IS_SYSCALL(addr) ((addr) >> 62 == 2)
#define CALLTREE_IS_KERNEL(addr) ((addr) >> 61 == 6)
#define CALLTREE_IS_SYNC(addr) ((addr) >> 61 == 7)
#define CALLTREE_SYNC_OP(addr) ((uint8_t)((addr) >> 48))
#define CALLTREE_SYNC_OBJ(addr) ((addr)&CALLTREE_SYNC_OBJ_MASK)
/* System calls and kernel waits remembered per thread, to tell how much of
 * a sync wait they already took out of a function's self time. */
#define CALLTREE_RECENT_MAX 8u
#define CALLTREE_SYSCALL_ARCH(addr) ((uint8_t)((addr) >> 32 & 0xff))
#define CALLTREE_SYSCALL_NR(addr) ((uint32_t)(addr))
#define CALLTREE_KERNEL_ID(addr) ((uint32_t)(addr))
/* Interrupt handlers open at once on a thread whose time is followed. */
#define CALLTREE_HANDLERS_MAX 8u

enum calltree_node_flags {
	CALLTREE_RECURSIVE = 1u << 0, /* the same function is on the path above */
};

struct calltree_node {
	uint64_t addr;                                  /* function address, CALLTREE_SYSCALL_KEY or _KERNEL_KEY */
	uint32_t parent;                                /* index; 0 is the root */
	uint32_t first_child, next_sibling, last_child; /* 0: none */
	uint32_t nchildren;
	uint32_t recent[2]; /* the children entered last: most calls repeat a recent path */
	uint32_t name;      /* names id; NAMES_NONE until calltree_name */
	uint32_t flags;     /* enum calltree_node_flags */
	/* calls: entries on this path (frames inherited from the parent
	 * process at fork not counted); total_ns and self_ns: time of the
	 * calls that ended (inherited frames included); self excludes callees,
	 * system calls and the time of kernel leaves; min_ns is UINT64_MAX
	 * before a call ended.  A kernel leaf's calls are its records on the
	 * path (a switch to the thread is not one: it ends the wait its
	 * switch-out began); its time is that of its waits off the CPU
	 * (sched_switch) and interrupt handlers (irq_handler_entry,
	 * softirq_entry), 0 for other events; its self time leaves out the
	 * handlers that interrupted a handler. */
	uint64_t calls, total_ns, self_ns, min_ns, max_ns;
	uint64_t errors;    /* syscall leaves: calls that failed */
	uint64_t sys_calls; /* calls of the syscall leaves right under it */
	/* what the flat profile (profile.h) counts of these calls, which
	 * leaves inherited frames out: their time (in total_ns), the self
	 * time of the others with system calls left in, and for a
	 * CALLTREE_RECURSIVE node the time of its calls that had no call of
	 * the same function (entered in this process) open above them */
	uint64_t inherited_ns, prof_self_ns, outer_ns;
};

/* A call open on a thread's stack. */
struct calltree_frame {
	uint32_t node;      /* 0: not counted (no memory) */
	uint32_t inherited; /* entered before a fork, in the parent */
	uint64_t child_ns;  /* time of its callees that ended */
	uint64_t sys_ns;    /* time of its system calls that ended */
	uint64_t kernel_ns; /* time of the kernel leaves right under it that ended */
	uint64_t sync_ns;   /* time of its sync waits that ended, apart from the above */
};

/* A system call or kernel leaf's time taken out of a function's self time:
 * a sync wait that covers it takes out only the rest. */
struct calltree_recent {
	uint64_t start_ns, dur_ns;
	uint32_t depth; /* of the function it was charged to */
};

/* The time of a kernel leaf under way: a wait off the CPU (from the
 * thread's switch-out) or an interrupt handler, charged when it ends. */
struct calltree_span {
	uint32_t node;   /* the leaf */
	uint32_t depth;  /* functions open then: the leaf is under the innermost (or the root) */
	bool in_syscall; /* ... or under the system call entered at sc_enter_ns */
	uint8_t kind;    /* the kev_kind (kformat.h) that began it */
	uint64_t sc_enter_ns;
	uint64_t start_ns;
	uint64_t inner_ns; /* handlers: the time of handlers that interrupted it */
};

/* One thread's tree: nodes[0] is the root (no function), nodes[1..n) the
 * call paths in order of first appearance. */
struct calltree_stream {
	struct walk_stream *ws; /* the walk's stream (its image names the addresses); NULL when read from a file */
	struct calltree_node *nodes;
	uint32_t n, cap, named;      /* nodes [0, named) have names */
	struct hashindex index;      /* nodes [1, n) by (parent, addr); empty when read from a file */
	struct calltree_frame *path; /* the open calls, by depth */
	uint32_t path_cap;
	uint32_t inherited_open; /* inherited frames among them */
	/* function address -> the first of the named nodes [1, amap_upto)
	 * with a name and that address */
	struct hashindex amap;
	uint32_t amap_upto;
	/* kernel leaves' time under way: the wait since the thread's last
	 * switch-out, and the interrupt handlers running on it, innermost
	 * last */
	bool waiting;
	struct calltree_span wait;
	struct calltree_span handlers[CALLTREE_HANDLERS_MAX];
	uint32_t nhandlers;
	/* the time of the kernel leaves under the system call entered at
	 * ksys_enter_ns, taken out of its self time when it is delivered */
	uint64_t ksys_enter_ns, ksys_ns;
	/* the last CALLTREE_RECENT_MAX charges (ring, nrecent in all) */
	struct calltree_recent recent[CALLTREE_RECENT_MAX];
	uint32_t nrecent;
};

struct calltree {
	struct calltree_stream **streams; /* owned; by walk_stream.index, NULL until begun (or unselected) */
	uint32_t nstreams;                /* entries of streams */
	bool oom; /* memory ran out (or a tree reached CALLTREE_NODES_MAX): trees are incomplete */
	/* calltree_sync: every sync operation a leaf, not only the waits */
	bool sync_all;
};

void calltree_init(struct calltree *ct);
/* Frees every tree.  Accepts a zeroed calltree. */
void calltree_release(struct calltree *ct);

/* The walk callbacks that build ct; ctx is the struct calltree.  They do
 * not use walk_stream.user.  A consumer with callbacks of its own calls
 * these from them.  entry and exit run on every call: no allocation but
 * when a path is new or the stack deeper than ever. */
void calltree_begin(void *ctx, struct walk_stream *s);
void calltree_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags);
void calltree_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                   unsigned flags);
void calltree_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc);
/* A kernel event: a leaf under the system call under way (found or added
 * under the current path, as its delivery at its exit finds it), else
 * under the innermost function, else the root.  Decodes the record with
 * the trace's formats (klayer_formats): a hash probe and a few loads; no
 * allocation but when a path is new. */
void calltree_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k);
/* A sync operation (record --sync) that waited (wait_ns > 0; with
 * ct->sync_all, any): a leaf under the function under way (else the root),
 * one per (operation, object), counting the operations, with the time
 * waited.  The wait's time is taken out of the function's self time, but
 * for the system calls and kernel waits inside it, taken out already.
 * Not in calltree_walk_ops: a consumer that wants sync leaves (tree) sets
 * ops->sync itself. */
void calltree_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y);
/* Sets ops->ctx, begin, entry, exit, syscall and kernel to build ct. */
void calltree_walk_ops(struct calltree *ct, struct walk_ops *ops);

/* The tree of the stream at walk_stream.index `index`, or NULL when it
 * has none (not selected, or no memory).  Valid until calltree_release. */
struct calltree_stream *calltree_stream(const struct calltree *ct, uint32_t index);

/* Adds to p what the flat profile would have counted of the function calls
 * in the tree of s, had p been fed the same walk: per function its calls,
 * total time (recursion counted once), self time (system calls included),
 * sum, minimum and maximum.  p must have begun s (profile_begin).  Cheaper
 * than profile_entry/exit on every event for a consumer that builds the
 * tree anyway. */
void calltree_profile(const struct calltree *ct, struct profile *p, struct walk_stream *s);

/* The display name of key (a function address in image, or a leaf's key)
 * into buf: the function's name (walk_name; an address form when w is
 * NULL), a syscall leaf's name after "[sys] ", a kernel leaf's
 * "group:event" (from w's formats; "tracepoint ID" without them) after
 * "[kernel] ", a sync leaf's "operation 0xobject" after "[wait] " (an
 * operation that can wait) or "[sync] ", those prefixes only with prefix.
 * Returns buf. */
const char *calltree_key_name(struct walk *w, uint32_t image, uint64_t key, bool prefix, char *buf, size_t size);
/* The same for a node of s's tree. */
const char *calltree_node_name(struct walk *w, const struct walk_stream *s, const struct calltree_node *nd, bool prefix,
                               char *buf, size_t size);

/* Names every node added since the last call into nt (functions through
 * w's symbolizer, syscalls by their table, kernel events by the trace's
 * formats, without a prefix).  Returns 0 or -ENOMEM. */
int calltree_name(struct calltree *ct, struct walk *w, struct names *nt);

/* The name id of function or leaf key addr from the thread's named
 * nodes, or NAMES_NONE when no node has it (or memory ran out).  The map
 * is brought up to date on each call: cheap when nothing was added. */
uint32_t calltree_addr_name(struct calltree_stream *t, uint64_t addr);

/* The children of node i, largest total time first (ties: first seen).
 * Returns a malloc'ed array of *count indices (the caller frees it), NULL
 * with *count 0 for a leaf, or NULL with *count > 0 when memory ran out. */
uint32_t *calltree_children(const struct calltree_stream *t, uint32_t i, uint32_t *count);

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

/* Writes a node's figures as JSON members, as `tree --format json` and serve
 * show them: syscall and errors (a system call's node only), kernel (true,
 * a kernel event's node only), sync, op and object (a sync leaf only: true,
 * the operation's name, the object as "0x..."), calls, total_ns, self_ns,
 * min_ns (0 without a finished call), max_ns. */
void calltree_node_json(struct json *j, const struct calltree_node *nd);

#endif
