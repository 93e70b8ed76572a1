/* Per-thread call trees (see calltree.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/syncevent.h"
#include "common/systab.h"
#include "host/lib/analysis/calltree.h"
#include "host/lib/trace/syncwake.h"
#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/klayer.h"

#define CALLTREE_FIRST_NODES 64u
#define CALLTREE_FIRST_DEPTH 64u
#define CALLTREE_FIRST_STREAMS 64u

struct calltree_iter_frame {
	uint32_t *kids; /* owned; sorted children */
	uint32_t n, next;
};

void calltree_init(struct calltree *ct)
{
	memset(ct, 0, sizeof(*ct));
}

static void stream_free(struct calltree_stream *t)
{
	if (!t)
		return;
	free(t->nodes);
	hashindex_release(&t->index);
	free(t->path);
	hashindex_release(&t->amap);
	free(t);
}

void calltree_release(struct calltree *ct)
{
	uint32_t i;

	for (i = 0; i < ct->nstreams; i++)
		stream_free(ct->streams[i]);
	free(ct->streams);
	memset(ct, 0, sizeof(*ct));
}

struct calltree_stream *calltree_stream(const struct calltree *ct, uint32_t index)
{
	return index < ct->nstreams ? ct->streams[index] : NULL;
}

/* ------------------------------------------------------------ building */

/* A node's key in the stream's index: the path it extends, and the
 * function (or syscall key) it adds. */
struct node_key {
	uint32_t parent;
	uint64_t addr;
};

static uint64_t node_hash(const struct node_key *k)
{
	return hashindex_fibonacci(k->addr ^ (uint64_t)k->parent << 40, 32);
}

static bool node_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct calltree_node *nd = &((const struct calltree_stream *)ctx)->nodes[item];
	const struct node_key *k = key;

	return nd->addr == k->addr && nd->parent == k->parent;
}

/* Whether addr is on the path from node i up to the root. */
static bool on_path(const struct calltree_stream *t, uint32_t i, uint64_t addr)
{
	for (; i; i = t->nodes[i].parent)
		if (t->nodes[i].addr == addr)
			return true;
	return false;
}

/* Adds the child of k->parent for k->addr; 0 when memory runs out.  slot
 * is its free slot in the index (hashindex_slot). */
static __attribute__((noinline)) uint32_t child_add(struct calltree *ct, struct calltree_stream *t,
                                                    const struct node_key *k, uint64_t hash, uint32_t slot)
{
	uint32_t parent = k->parent;
	uint64_t addr = k->addr;
	struct calltree_node *nd;
	uint32_t i;

	if (t->n == t->cap) {
		uint32_t cap = t->cap * 2;
		struct calltree_node *n;

		if (cap > CALLTREE_NODES_MAX || !(n = realloc(t->nodes, cap * sizeof(*n)))) {
			ct->oom = true;
			return 0;
		}
		t->nodes = n;
		t->cap = cap;
	}
	i = t->n++;
	nd = &t->nodes[i];
	memset(nd, 0, sizeof(*nd));
	nd->addr = addr;
	nd->parent = parent;
	nd->name = NAMES_NONE;
	nd->min_ns = UINT64_MAX;
	if (!CALLTREE_IS_LEAF(addr) && on_path(t, parent, addr))
		nd->flags |= CALLTREE_RECURSIVE;
	if (t->nodes[parent].last_child)
		t->nodes[t->nodes[parent].last_child].next_sibling = i;
	else
		t->nodes[parent].first_child = i;
	t->nodes[parent].last_child = i;
	t->nodes[parent].nchildren++;
	hashindex_put(&t->index, slot, hash, i);
	return i;
}

/* The child of parent for addr, added when new; 0 when memory runs out.
 * Called on every entry: the parent's two recent children are tried
 * before the index, and left as they are when one of them is it (a loop
 * calling two functions in turn writes nothing here). */
static inline __attribute__((always_inline)) uint32_t child_of(struct calltree *ct, struct calltree_stream *t,
                                                               uint32_t parent, uint64_t addr)
{
	struct calltree_node *p = &t->nodes[parent];
	uint32_t slot, i = p->recent[0], j = p->recent[1];
	struct node_key k = { parent, addr };
	uint64_t hash;

	if (__builtin_expect(i && t->nodes[i].addr == addr, 1))
		return i;
	if (j && t->nodes[j].addr == addr)
		return j;
	if (__builtin_expect(hashindex_reserve(&t->index) != 0, 0)) {
		ct->oom = true;
		return 0;
	}
	hash = node_hash(&k);
	slot = hashindex_slot(&t->index, hash, node_eq, t, &k);
	i = t->index.val[slot] ? t->index.val[slot] - 1 : child_add(ct, t, &k, hash, slot);
	if (!i)
		return 0;
	p = &t->nodes[parent]; /* the nodes may have moved */
	p->recent[1] = p->recent[0];
	p->recent[0] = i;
	return i;
}

void calltree_begin(void *ctx, struct walk_stream *s)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t;

	if (s->index >= ct->nstreams) {
		uint32_t n = ct->nstreams ? ct->nstreams : CALLTREE_FIRST_STREAMS;
		struct calltree_stream **v;

		while (n <= s->index)
			n *= 2;
		v = realloc(ct->streams, n * sizeof(*v));
		if (!v) {
			ct->oom = true;
			return;
		}
		memset(v + ct->nstreams, 0, (n - ct->nstreams) * sizeof(*v));
		ct->streams = v;
		ct->nstreams = n;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->nodes = calloc(CALLTREE_FIRST_NODES, sizeof(*t->nodes)))) {
		stream_free(t);
		ct->oom = true;
		return;
	}
	t->ws = s;
	t->cap = CALLTREE_FIRST_NODES;
	t->n = 1; /* the root */
	t->nodes[0].name = NAMES_NONE;
	t->nodes[0].min_ns = UINT64_MAX;
	stream_free(ct->streams[s->index]);
	ct->streams[s->index] = t;
}

static int ensure_depth(struct calltree *ct, struct calltree_stream *t, uint32_t depth)
{
	uint32_t cap = t->path_cap ? t->path_cap : CALLTREE_FIRST_DEPTH;
	struct calltree_frame *p;

	while (cap <= depth)
		cap *= 2;
	p = realloc(t->path, cap * sizeof(*p));
	if (!p) {
		ct->oom = true;
		return -ENOMEM;
	}
	t->path = p;
	t->path_cap = cap;
	return 0;
}

/* A kernel leaf's time under way (calltree_kernel, below) ends at the
 * record that ends it, or at the next sign of the thread running its own
 * code.  Adds the span's time, ending at ns, to its leaf; returns it. */
static uint64_t span_close(struct calltree_stream *t, const struct calltree_span *sp, uint64_t ns)
{
	struct calltree_node *nd = &t->nodes[sp->node];
	uint64_t dur = ns > sp->start_ns ? ns - sp->start_ns : 0;

	nd->total_ns += dur;
	nd->self_ns += dur > sp->inner_ns ? dur - sp->inner_ns : 0;
	if (dur < nd->min_ns)
		nd->min_ns = dur;
	if (dur > nd->max_ns)
		nd->max_ns = dur;
	return dur;
}

/* Remembers that dur from start was taken out of the self time of the
 * function open at depth (a sync wait over it takes out only the rest). */
static void recent_note(struct calltree_stream *t, uint32_t depth, uint64_t start, uint64_t dur)
{
	struct calltree_recent *r = &t->recent[t->nrecent++ % CALLTREE_RECENT_MAX];

	r->start_ns = start;
	r->dur_ns = dur;
	r->depth = depth;
}

/* Takes a kernel leaf's time out of the self time of what it is under:
 * the system call (when it is delivered) or the open function.  Spans end
 * before the thread's next function event, so that function is open. */
static void span_charge(struct calltree_stream *t, const struct calltree_span *sp, uint64_t dur)
{
	if (sp->in_syscall) {
		if (t->ksys_enter_ns != sp->sc_enter_ns) {
			t->ksys_enter_ns = sp->sc_enter_ns;
			t->ksys_ns = 0;
		}
		t->ksys_ns += dur;
	} else if (sp->depth) {
		t->path[sp->depth - 1].kernel_ns += dur;
		recent_note(t, sp->depth, sp->start_ns, dur);
	}
}

static void wait_end(struct calltree_stream *t, uint64_t ns)
{
	span_charge(t, &t->wait, span_close(t, &t->wait, ns));
	t->waiting = false;
}

/* Ends the innermost handler at ns: its time is inside the handler it
 * interrupted, if any, else taken from what the leaves are under. */
static void handler_end(struct calltree_stream *t, uint64_t ns)
{
	const struct calltree_span *sp = &t->handlers[--t->nhandlers];
	uint64_t dur = span_close(t, sp, ns);

	if (t->nhandlers)
		t->handlers[t->nhandlers - 1].inner_ns += dur;
	else
		span_charge(t, sp, dur);
}

/* The thread is back in its own code at ns (a function event, a system
 * call's exit): its waits and handlers are over, also those whose end
 * (a switch-in, a handler's exit) the kernel did not deliver. */
static void spans_end(struct calltree_stream *t, uint64_t ns)
{
	while (t->nhandlers)
		handler_end(t, ns);
	if (t->waiting)
		wait_end(t, ns);
}

void calltree_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t = calltree_stream(ct, s->index);
	struct calltree_frame *f;
	uint32_t i;

	if (!t)
		return;
	if (__builtin_expect(t->waiting || t->nhandlers, 0))
		spans_end(t, ns);
	if (__builtin_expect(depth >= t->path_cap, 0) && ensure_depth(ct, t, depth))
		return;
	i = child_of(ct, t, depth ? t->path[depth - 1].node : 0, addr);
	f = &t->path[depth];
	f->node = i;
	f->inherited = flags & FILTER_INHERITED;
	f->child_ns = 0;
	f->sys_ns = 0;
	f->kernel_ns = 0;
	f->sync_ns = 0;
	if (!i)
		return;
	if (__builtin_expect(f->inherited, 0))
		t->inherited_open++;
	else
		t->nodes[i].calls++;
}

/* Whether the ended call at depth of node nd, entered in this process, was
 * its function's outermost: no call of it entered in this process open
 * below.  Only a recursive node below inherited frames needs to look. */
static bool outermost(const struct calltree_stream *t, const struct calltree_node *nd, uint32_t depth)
{
	uint32_t d;

	if (!(nd->flags & CALLTREE_RECURSIVE))
		return true;
	if (!t->inherited_open)
		return false;
	for (d = 0; d < depth; d++)
		if (!t->path[d].inherited && t->path[d].node && t->nodes[t->path[d].node].addr == nd->addr)
			return false;
	return true;
}

void calltree_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                   unsigned flags)
{
	struct calltree_stream *t = calltree_stream(ctx, s->index);
	uint64_t dur = ns - entry_ns, busy;
	struct calltree_frame *f;
	struct calltree_node *nd;

	(void)addr;
	if (!t)
		return;
	if (__builtin_expect(t->waiting || t->nhandlers, 0))
		spans_end(t, ns);
	if (depth >= t->path_cap || !t->path[depth].node)
		return;
	f = &t->path[depth];
	nd = &t->nodes[f->node];
	busy = f->child_ns + f->sys_ns + f->kernel_ns + f->sync_ns;
	nd->total_ns += dur;
	nd->self_ns += dur > busy ? dur - busy : 0;
	if (__builtin_expect(!f->inherited, 1)) {
		nd->prof_self_ns += dur > f->child_ns ? dur - f->child_ns : 0;
		if (dur < nd->min_ns)
			nd->min_ns = dur;
		if (dur > nd->max_ns)
			nd->max_ns = dur;
		if (__builtin_expect(nd->flags & CALLTREE_RECURSIVE, 0) && outermost(t, nd, depth))
			nd->outer_ns += dur;
	} else {
		nd->inherited_ns += dur;
		t->inherited_open--;
	}
	(void)flags;
	if (depth)
		t->path[depth - 1].child_ns += dur;
}

void calltree_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t = calltree_stream(ct, s->index);
	uint64_t dur = sc->has_exit ? sc->exit_ns - sc->enter_ns : 0, kern;
	struct calltree_node *nd;
	uint32_t parent, i;

	if (!t)
		return;
	/* back from the kernel: its waits and handlers are over; those of
	 * a call that did not finish end unknown, with no time */
	if (sc->has_exit) {
		spans_end(t, sc->exit_ns);
	} else {
		t->waiting = false;
		t->nhandlers = 0;
	}
	kern = sc->has_enter && t->ksys_enter_ns == sc->enter_ns ? t->ksys_ns : 0;
	t->ksys_enter_ns = t->ksys_ns = 0;
	if (!sc->has_enter || (sc->depth && (sc->depth > t->path_cap || !t->path[sc->depth - 1].node)))
		return;
	parent = sc->depth ? t->path[sc->depth - 1].node : 0;
	i = child_of(ct, t, parent, CALLTREE_SYSCALL_KEY(sc->arch, sc->nr));
	if (!i)
		return;
	nd = &t->nodes[i];
	nd->calls++;
	t->nodes[parent].sys_calls++;
	if (sc->has_exit && sc->ret < 0 && sc->ret >= -4095)
		nd->errors++;
	if (!sc->has_exit)
		return;
	nd->total_ns += dur;
	nd->self_ns += dur > kern ? dur - kern : 0;
	if (dur < nd->min_ns)
		nd->min_ns = dur;
	if (dur > nd->max_ns)
		nd->max_ns = dur;
	if (sc->depth) {
		t->path[sc->depth - 1].sys_ns += dur;
		recent_note(t, sc->depth, sc->enter_ns, dur);
	}
}

/* ------------------------------------------------------------ sync leaves */

void calltree_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t = calltree_stream(ct, s->index);
	uint64_t wait = y->wait_ns < y->ns ? y->wait_ns : y->ns, begin = y->ns - wait, inside = 0;
	struct calltree_node *nd;
	uint32_t parent, i, k, n;

	if (!t || (!wait && !ct->sync_all))
		return;
	if (y->depth && (y->depth > t->path_cap || !t->path[y->depth - 1].node))
		return;
	parent = y->depth ? t->path[y->depth - 1].node : 0;
	i = child_of(ct, t, parent, CALLTREE_SYNC_KEY(y->op, y->obj));
	if (!i)
		return;
	nd = &t->nodes[i];
	nd->calls++;
	nd->total_ns += wait;
	nd->self_ns += wait;
	if (wait < nd->min_ns)
		nd->min_ns = wait;
	if (wait > nd->max_ns)
		nd->max_ns = wait;
	if (!y->depth || !wait)
		return;
	/* the futex calls and times off the CPU of the wait, if recorded, are
	 * out of the function's self time already */
	n = t->nrecent < CALLTREE_RECENT_MAX ? t->nrecent : CALLTREE_RECENT_MAX;
	for (k = 0; k < n; k++) {
		const struct calltree_recent *r = &t->recent[k];

		if (r->depth == y->depth && r->start_ns >= begin && r->start_ns < y->ns)
			inside += r->dur_ns;
	}
	t->path[y->depth - 1].sync_ns += wait > inside ? wait - inside : 0;
}

/* ------------------------------------------------------------ kernel leaves */

/* The leaf's time begins: a span of the kernel event k on node i. */
static struct calltree_span span_at(uint32_t i, const struct walk_kernel *k, enum kev_kind kind)
{
	return (struct calltree_span){ .node = i,
		                       .depth = k->depth,
		                       .in_syscall = k->in_syscall,
		                       .kind = (uint8_t)kind,
		                       .sc_enter_ns = k->sc_enter_ns,
		                       .start_ns = k->ns };
}

/* A handler's exit record: ends the innermost handler of its kind, and
 * those above it, whose exits are missing. */
static void handler_exit(struct calltree_stream *t, enum kev_kind entry, uint64_t ns)
{
	uint32_t h = t->nhandlers;

	while (h && t->handlers[h - 1].kind != entry)
		h--;
	while (h && t->nhandlers >= h)
		handler_end(t, ns);
}

void calltree_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t = calltree_stream(ct, s->index);
	const struct kformats *kf;
	struct kevent ev;
	bool own;
	uint32_t parent, i;

	if (!t)
		return;
	/* again when a live session brings more formats (cheap otherwise) */
	kf = klayer_formats(s->w, NULL, 0);
	if (!kf || kevent_decode(kf, k->id, k->raw, k->raw_len, &ev)) {
		ev.kind = KEV_OTHER; /* counted, with no time */
		ev.common_pid = -1;
	}
	own = (uint32_t)ev.common_pid == s->tid;
	/* a record made on the thread while it waits: it runs again, the
	 * record of its switch-in missing */
	if (own && t->waiting)
		wait_end(t, k->ns);
	if (ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.next_pid == s->tid && !own) {
		if (t->waiting)
			wait_end(t, k->ns);
		return; /* a switch-in ends a wait: not an event of its own */
	}
	if (k->depth && (k->depth > t->path_cap || !t->path[k->depth - 1].node))
		return;
	parent = k->depth ? t->path[k->depth - 1].node : 0;
	if (k->in_syscall && !(parent = child_of(ct, t, parent, CALLTREE_SYSCALL_KEY(k->sc_arch, k->sc_nr))))
		return;
	i = child_of(ct, t, parent, CALLTREE_KERNEL_KEY(k->id));
	if (!i)
		return;
	t->nodes[i].calls++;
	if (!own)
		return;
	switch (ev.kind) {
	case KEV_SWITCH:
		if ((uint32_t)ev.u.sw.prev_pid != s->tid)
			break;
		while (t->nhandlers)
			handler_end(t, k->ns); /* no handler runs on across a switch */
		t->wait = span_at(i, k, ev.kind);
		t->waiting = true;
		break;
	case KEV_IRQ_ENTRY:
	case KEV_SOFTIRQ_ENTRY:
		if (t->nhandlers < CALLTREE_HANDLERS_MAX)
			t->handlers[t->nhandlers++] = span_at(i, k, ev.kind);
		break;
	case KEV_IRQ_EXIT:
		handler_exit(t, KEV_IRQ_ENTRY, k->ns);
		break;
	case KEV_SOFTIRQ_EXIT:
		handler_exit(t, KEV_SOFTIRQ_ENTRY, k->ns);
		break;
	default:
		break;
	}
}

void calltree_walk_ops(struct calltree *ct, struct walk_ops *ops)
{
	ops->ctx = ct;
	ops->begin = calltree_begin;
	ops->entry = calltree_entry;
	ops->exit = calltree_exit;
	ops->syscall = calltree_syscall;
	ops->kernel = calltree_kernel;
}

const char *calltree_key_name(struct walk *w, uint32_t image, uint64_t key, bool prefix, char *buf, size_t size)
{
	const struct kformat_event *e = NULL;
	const struct kformats *kf;
	char leaf[160];

	if (CALLTREE_IS_SYSCALL(key)) {
		sys_name((enum sys_arch)CALLTREE_SYSCALL_ARCH(key), CALLTREE_SYSCALL_NR(key), leaf, sizeof(leaf));
		snprintf(buf, size, "%s%s", prefix ? "[sys] " : "", leaf);
	} else if (CALLTREE_IS_SYNC(key)) {
		unsigned op = CALLTREE_SYNC_OP(key);

		snprintf(buf, size, "%s%s 0x%llx",
		         !prefix                               ? ""
		         : syncwake_is_wait((uint8_t)op, 0, 1) ? "[wait] "
		                                               : "[sync] ",
		         syncevent_op_name(op), (unsigned long long)CALLTREE_SYNC_OBJ(key));
	} else if (CALLTREE_IS_KERNEL(key)) {
		if (w && (kf = klayer_formats(w, NULL, 0)))
			e = kformats_find(kf, CALLTREE_KERNEL_ID(key));
		if (e)
			snprintf(leaf, sizeof(leaf), "%s:%s", e->system, e->name);
		else
			snprintf(leaf, sizeof(leaf), "tracepoint %u", CALLTREE_KERNEL_ID(key));
		snprintf(buf, size, "%s%s", prefix ? "[kernel] " : "", leaf);
	} else if (w) {
		return walk_name(w, image, key, buf, size);
	} else {
		snprintf(buf, size, "0x%llx", (unsigned long long)key);
	}
	return buf;
}

const char *calltree_node_name(struct walk *w, const struct walk_stream *s, const struct calltree_node *nd, bool prefix,
                               char *buf, size_t size)
{
	return calltree_key_name(w, s->image, nd->addr, prefix, buf, size);
}

void calltree_profile(const struct calltree *ct, struct profile *p, struct walk_stream *s)
{
	const struct calltree_stream *t = calltree_stream(ct, s->index);
	uint32_t i;

	for (i = 1; t && i < t->n; i++) {
		const struct calltree_node *nd = &t->nodes[i];
		struct profile_sums sums;

		if (CALLTREE_IS_LEAF(nd->addr) || !nd->calls)
			continue;
		sums.calls = nd->calls;
		sums.sum_ns = nd->total_ns - nd->inherited_ns;
		sums.total_ns = nd->flags & CALLTREE_RECURSIVE ? nd->outer_ns : sums.sum_ns;
		sums.self_ns = nd->prof_self_ns;
		sums.min_ns = nd->min_ns;
		sums.max_ns = nd->max_ns;
		profile_add(p, s, nd->addr, &sums);
	}
}

/* ------------------------------------------------------------ names */

int calltree_name(struct calltree *ct, struct walk *w, struct names *nt)
{
	char buf[1024];
	uint32_t k, i;

	for (k = 0; k < ct->nstreams; k++) {
		struct calltree_stream *t = ct->streams[k];

		if (!t)
			continue;
		for (i = t->named ? t->named : 1; i < t->n; i++) {
			struct calltree_node *nd = &t->nodes[i];

			nd->name = names_intern(nt, calltree_node_name(w, t->ws, nd, false, buf, sizeof(buf)));
			if (nd->name == NAMES_NONE)
				return -ENOMEM;
		}
		t->named = t->n;
	}
	return 0;
}

static bool amap_eq(const void *ctx, uint32_t item, const void *key)
{
	return ((const struct calltree_stream *)ctx)->nodes[item].addr == *(const uint64_t *)key;
}

uint32_t calltree_addr_name(struct calltree_stream *t, uint64_t addr)
{
	uint32_t i;
	int64_t nd;

	for (i = t->amap_upto ? t->amap_upto : 1; i < t->named; i++) {
		uint64_t a = t->nodes[i].addr, hash = hashindex_fibonacci(a, 32);
		uint32_t slot;

		if (t->nodes[i].name == NAMES_NONE)
			continue;
		if (hashindex_reserve(&t->amap))
			return NAMES_NONE;
		slot = hashindex_slot(&t->amap, hash, amap_eq, t, &a);
		if (!t->amap.val[slot])
			hashindex_put(&t->amap, slot, hash, i);
	}
	if (t->amap_upto < t->named)
		t->amap_upto = t->named;
	nd = hashindex_get(&t->amap, hashindex_fibonacci(addr, 32), amap_eq, t, &addr);
	return nd < 0 ? NAMES_NONE : t->nodes[nd].name;
}

/* ------------------------------------------------------------ reading */

/* Children in order of total time, largest first. */
static int node_cmp(const void *a, const void *b, void *ctx)
{
	const struct calltree_stream *t = ctx;
	uint32_t i = *(const uint32_t *)a, k = *(const uint32_t *)b;

	if (t->nodes[i].total_ns != t->nodes[k].total_ns)
		return t->nodes[i].total_ns > t->nodes[k].total_ns ? -1 : 1;
	return i < k ? -1 : i > k;
}

uint32_t *calltree_children(const struct calltree_stream *t, uint32_t i, uint32_t *count)
{
	uint32_t n = t->nodes[i].nchildren, c, *v;

	*count = n;
	if (!n)
		return NULL;
	v = malloc(n * sizeof(*v));
	if (!v)
		return NULL;
	n = 0;
	for (c = t->nodes[i].first_child; c && n < *count; c = t->nodes[c].next_sibling)
		v[n++] = c;
	*count = n;
	qsort_r(v, n, sizeof(*v), node_cmp, (void *)t);
	return v;
}

/* Fills f with the sorted children of node i.  Returns 0 or -ENOMEM. */
static int frame_fill(struct calltree_iter_frame *f, const struct calltree_stream *t, uint32_t i)
{
	f->next = 0;
	f->kids = calltree_children(t, i, &f->n);
	if (!f->kids && f->n) {
		f->n = 0;
		return -ENOMEM;
	}
	return 0;
}

int calltree_iter_init(struct calltree_iter *it, const struct calltree_stream *t)
{
	memset(it, 0, sizeof(*it));
	it->t = t;
	it->cap = CALLTREE_FIRST_DEPTH;
	it->stack = malloc(it->cap * sizeof(*it->stack));
	if (!it->stack || frame_fill(&it->stack[0], t, 0)) {
		free(it->stack);
		it->stack = NULL;
		it->oom = true;
		return -ENOMEM;
	}
	return 0;
}

uint32_t calltree_iter_next(struct calltree_iter *it, uint32_t *depth)
{
	struct calltree_iter_frame *f;
	uint32_t i;

	if (!it->stack)
		return 0;
	for (;;) {
		f = &it->stack[it->sp];
		if (f->next < f->n)
			break;
		free(f->kids);
		f->kids = NULL;
		f->n = f->next = 0;
		if (!it->sp)
			return 0;
		it->sp--;
	}
	i = f->kids[f->next++];
	*depth = it->sp;
	if (it->sp + 1 == it->cap) {
		struct calltree_iter_frame *ns = realloc(it->stack, 2 * it->cap * sizeof(*ns));

		if (!ns) {
			it->oom = true;
			calltree_iter_release(it);
			return 0;
		}
		it->stack = ns;
		it->cap *= 2;
	}
	if (frame_fill(&it->stack[it->sp + 1], it->t, i)) {
		it->oom = true;
		calltree_iter_release(it);
		return 0;
	}
	it->sp++;
	return i;
}

void calltree_iter_release(struct calltree_iter *it)
{
	uint32_t i;

	if (it->stack)
		for (i = 0; i <= it->sp; i++)
			free(it->stack[i].kids);
	free(it->stack);
	it->stack = NULL;
	it->sp = 0;
}

void calltree_node_json(struct json *j, const struct calltree_node *nd)
{
	if (CALLTREE_IS_SYSCALL(nd->addr)) {
		json_bool(j, "syscall", true);
		json_u64(j, "errors", nd->errors);
	}
	if (CALLTREE_IS_KERNEL(nd->addr))
		json_bool(j, "kernel", true);
	if (CALLTREE_IS_SYNC(nd->addr)) {
		char obj[24];

		snprintf(obj, sizeof(obj), "0x%llx", (unsigned long long)CALLTREE_SYNC_OBJ(nd->addr));
		json_bool(j, "sync", true);
		json_str(j, "op", syncevent_op_name(CALLTREE_SYNC_OP(nd->addr)));
		json_str(j, "object", obj);
	}
	json_u64(j, "calls", nd->calls);
	json_u64(j, "total_ns", nd->total_ns);
	json_u64(j, "self_ns", nd->self_ns);
	json_u64(j, "min_ns", nd->min_ns == UINT64_MAX ? 0 : nd->min_ns);
	json_u64(j, "max_ns", nd->max_ns);
}
