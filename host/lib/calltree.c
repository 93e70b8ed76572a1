/* Per-thread call trees (see calltree.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/calltree.h"

#define CALLTREE_FIRST_NODES 64u
#define CALLTREE_FIRST_HASH 256u
#define CALLTREE_FIRST_DEPTH 64u
#define CALLTREE_FIRST_STREAMS 64u
#define GOLDEN_RATIO_64 0x9e3779b97f4a7c15ull

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
	free(t->hash);
	free(t->path);
	free(t->child_ns);
	free(t);
}

void calltree_release(struct calltree *ct)
{
	uint32_t i;

	for (i = 0; i < ct->cap; i++)
		stream_free(ct->streams[i]);
	free(ct->streams);
	memset(ct, 0, sizeof(*ct));
}

static uint32_t node_hash(uint32_t parent, uint64_t addr, uint32_t cap)
{
	return (uint32_t)(((addr ^ ((uint64_t)parent << 40)) * GOLDEN_RATIO_64) >> 40) & (cap - 1);
}

static int hash_rebuild(struct calltree_stream *t, uint32_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h)), i;

	if (!h)
		return -ENOMEM;
	for (i = 1; i < t->n; i++) {
		uint32_t k = node_hash(t->nodes[i].parent, t->nodes[i].addr, cap);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i;
	}
	free(t->hash);
	t->hash = h;
	t->hcap = cap;
	return 0;
}

/* The child of parent for addr, added when new; 0 when memory runs out. */
static uint32_t child_of(struct calltree *ct, struct calltree_stream *t, uint32_t parent, uint64_t addr)
{
	uint32_t k = node_hash(parent, addr, t->hcap), i;
	struct calltree_node *nd;

	while ((i = t->hash[k])) {
		if (t->nodes[i].parent == parent && t->nodes[i].addr == addr)
			return i;
		k = (k + 1) & (t->hcap - 1);
	}
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
	nd->min_ns = UINT64_MAX;
	if (t->nodes[parent].last_child)
		t->nodes[t->nodes[parent].last_child].next_sibling = i;
	else
		t->nodes[parent].first_child = i;
	t->nodes[parent].last_child = i;
	t->hash[k] = i;
	if (t->n * 2 > t->hcap && hash_rebuild(t, t->hcap * 2))
		ct->oom = true;
	return i;
}

static struct calltree_stream *stream_of(const struct calltree *ct, const struct walk_stream *s)
{
	return s->index < ct->cap ? ct->streams[s->index] : NULL;
}

const struct calltree_stream *calltree_stream(const struct calltree *ct, const struct walk_stream *s)
{
	return stream_of(ct, s);
}

void calltree_begin(void *ctx, struct walk_stream *s)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t;

	if (s->index >= ct->cap) {
		uint32_t cap = ct->cap ? ct->cap : CALLTREE_FIRST_STREAMS;
		struct calltree_stream **n;

		while (cap <= s->index)
			cap *= 2;
		n = realloc(ct->streams, cap * sizeof(*n));
		if (!n) {
			ct->oom = true;
			return;
		}
		memset(n + ct->cap, 0, (cap - ct->cap) * sizeof(*n));
		ct->streams = n;
		ct->cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->nodes = calloc(CALLTREE_FIRST_NODES, sizeof(*t->nodes))) ||
	    !(t->hash = calloc(CALLTREE_FIRST_HASH, sizeof(*t->hash)))) {
		stream_free(t);
		ct->oom = true;
		return;
	}
	t->cap = CALLTREE_FIRST_NODES;
	t->hcap = CALLTREE_FIRST_HASH;
	t->n = 1; /* the root */
	stream_free(ct->streams[s->index]);
	ct->streams[s->index] = t;
}

static int ensure_depth(struct calltree *ct, struct calltree_stream *t, uint32_t depth)
{
	uint32_t cap = t->path_cap ? t->path_cap : CALLTREE_FIRST_DEPTH;
	uint32_t *p;
	uint64_t *c;

	if (depth < t->path_cap)
		return 0;
	while (cap <= depth)
		cap *= 2;
	p = realloc(t->path, cap * sizeof(*p));
	if (p)
		t->path = p;
	c = realloc(t->child_ns, cap * sizeof(*c));
	if (c)
		t->child_ns = c;
	if (!p || !c) {
		ct->oom = true;
		return -ENOMEM;
	}
	t->path_cap = cap;
	return 0;
}

void calltree_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t = stream_of(ct, s);
	uint32_t parent, i;

	(void)ns;
	if (!t || ensure_depth(ct, t, depth))
		return;
	parent = depth ? t->path[depth - 1] : 0;
	i = child_of(ct, t, parent, addr);
	t->path[depth] = i;
	t->child_ns[depth] = 0;
	if (i && !(flags & FILTER_INHERITED))
		t->nodes[i].calls++;
}

void calltree_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                   unsigned flags)
{
	struct calltree_stream *t = stream_of(ctx, s);
	uint64_t dur = ns - entry_ns;
	struct calltree_node *nd;

	(void)addr;
	if (!t || depth >= t->path_cap || !t->path[depth])
		return;
	nd = &t->nodes[t->path[depth]];
	nd->total_ns += dur;
	nd->self_ns += dur > t->child_ns[depth] ? dur - t->child_ns[depth] : 0;
	if (!(flags & FILTER_INHERITED)) {
		if (dur < nd->min_ns)
			nd->min_ns = dur;
		if (dur > nd->max_ns)
			nd->max_ns = dur;
	}
	if (depth)
		t->child_ns[depth - 1] += dur;
}

void calltree_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct calltree *ct = ctx;
	struct calltree_stream *t = stream_of(ct, s);
	uint64_t dur = sc->has_exit ? sc->exit_ns - sc->enter_ns : 0;
	struct calltree_node *nd;
	uint32_t parent, i;

	if (!t || !sc->has_enter || (sc->depth && (sc->depth > t->path_cap || !t->path[sc->depth - 1])))
		return;
	parent = sc->depth ? t->path[sc->depth - 1] : 0;
	i = child_of(ct, t, parent, CALLTREE_SYSCALL_KEY(sc->arch, sc->nr));
	if (!i)
		return;
	nd = &t->nodes[i];
	nd->calls++;
	if (sc->has_exit && sc->ret < 0 && sc->ret >= -4095)
		nd->errors++;
	if (!sc->has_exit)
		return;
	nd->total_ns += dur;
	nd->self_ns += dur;
	if (dur < nd->min_ns)
		nd->min_ns = dur;
	if (dur > nd->max_ns)
		nd->max_ns = dur;
	if (sc->depth)
		t->child_ns[sc->depth - 1] += dur;
}

void calltree_walk_ops(struct calltree *ct, struct walk_ops *ops)
{
	ops->ctx = ct;
	ops->begin = calltree_begin;
	ops->entry = calltree_entry;
	ops->exit = calltree_exit;
	ops->syscall = calltree_syscall;
}

const char *calltree_node_name(struct walk *w, const struct walk_stream *s, const struct calltree_node *nd,
                               bool sys_prefix, char *buf, size_t size)
{
	char sys[48];

	if (!CALLTREE_IS_SYSCALL(nd->addr))
		return walk_name(w, s->image, nd->addr, buf, size);
	sys_name((enum sys_arch)CALLTREE_SYSCALL_ARCH(nd->addr), CALLTREE_SYSCALL_NR(nd->addr), sys, sizeof(sys));
	snprintf(buf, size, "%s%s", sys_prefix ? "[sys] " : "", sys);
	return buf;
}

/* Children in order of total time, largest first. */
static int node_cmp(const void *a, const void *b, void *ctx)
{
	const struct calltree_stream *t = ctx;
	uint32_t i = *(const uint32_t *)a, k = *(const uint32_t *)b;

	if (t->nodes[i].total_ns != t->nodes[k].total_ns)
		return t->nodes[i].total_ns > t->nodes[k].total_ns ? -1 : 1;
	return i < k ? -1 : i > k;
}

/* Fills f with the sorted children of node i.  Returns 0 or -ENOMEM. */
static int frame_fill(struct calltree_iter_frame *f, const struct calltree_stream *t, uint32_t i)
{
	uint32_t n = 0, c;

	f->kids = NULL;
	f->n = f->next = 0;
	for (c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		n++;
	if (!n)
		return 0;
	f->kids = malloc(n * sizeof(*f->kids));
	if (!f->kids)
		return -ENOMEM;
	n = 0;
	for (c = t->nodes[i].first_child; c; c = t->nodes[c].next_sibling)
		f->kids[n++] = c;
	qsort_r(f->kids, n, sizeof(*f->kids), node_cmp, (void *)t);
	f->n = n;
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
