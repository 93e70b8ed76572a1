/* The call trees of the web UI's server (see serve_tree.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/serve_tree.h"

#define SERVETREE_FIRST_NODES 64u
#define SERVETREE_FIRST_HASH 256u
#define SERVETREE_FIRST_DEPTH 64u
#define GOLDEN_RATIO_64 0x9e3779b97f4a7c15ull

void servetree_init(struct servetree *ct)
{
	memset(ct, 0, sizeof(*ct));
}

static void stream_free(struct servetree_stream *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t->hash);
	free(t->path);
	free(t->child_ns);
	free(t->amap_addr);
	free(t->amap_name);
	free(t);
}

void servetree_release(struct servetree *ct)
{
	uint32_t i;

	for (i = 0; i < ct->nstreams; i++)
		stream_free(ct->streams[i]);
	free(ct->streams);
	memset(ct, 0, sizeof(*ct));
}

struct servetree_stream *servetree_stream(const struct servetree *ct, uint32_t index)
{
	return index < ct->nstreams ? ct->streams[index] : NULL;
}

static uint32_t node_hash(uint32_t parent, uint64_t addr, uint32_t cap)
{
	return (uint32_t)(((addr ^ ((uint64_t)parent << 40)) * GOLDEN_RATIO_64) >> 40) & (cap - 1);
}

static int hash_rebuild(struct servetree_stream *t, uint32_t cap)
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

/* The child of parent for addr, added when new; 0 when memory ran out.
 * Called on every entry: the parent's two recent children are tried
 * before the hash table. */
static uint32_t child_of(struct servetree *ct, struct servetree_stream *t, uint32_t parent, uint64_t addr)
{
	struct servetree_node *p = &t->nodes[parent], *nd;
	uint32_t k, i;

	if (t->nodes[p->recent[0]].addr == addr && p->recent[0])
		return p->recent[0];
	if (t->nodes[p->recent[1]].addr == addr && p->recent[1]) {
		i = p->recent[1];
		p->recent[1] = p->recent[0];
		p->recent[0] = i;
		return i;
	}
	k = node_hash(parent, addr, t->hcap);
	while ((i = t->hash[k])) {
		if (t->nodes[i].parent == parent && t->nodes[i].addr == addr)
			goto found;
		k = (k + 1) & (t->hcap - 1);
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap * 2;
		struct servetree_node *n;

		if (cap > SERVETREE_NODES_MAX || !(n = realloc(t->nodes, cap * sizeof(*n)))) {
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
	if (t->nodes[parent].last_child)
		t->nodes[t->nodes[parent].last_child].next_sibling = i;
	else
		t->nodes[parent].first_child = i;
	t->nodes[parent].last_child = i;
	t->nodes[parent].nchildren++;
	t->hash[k] = i;
	if (t->n * 2 > t->hcap && hash_rebuild(t, t->hcap * 2))
		ct->oom = true;
found:
	p = &t->nodes[parent]; /* the nodes may have moved */
	p->recent[1] = p->recent[0];
	p->recent[0] = i;
	return i;
}

void servetree_begin(void *ctx, struct walk_stream *s)
{
	struct servetree *ct = ctx;
	struct servetree_stream *t;

	if (s->index >= ct->nstreams) {
		uint32_t n = s->index + 1 > 2 * ct->nstreams ? s->index + 1 : 2 * ct->nstreams;
		struct servetree_stream **v = realloc(ct->streams, n * sizeof(*v));

		if (!v) {
			ct->oom = true;
			return;
		}
		memset(v + ct->nstreams, 0, (n - ct->nstreams) * sizeof(*v));
		ct->streams = v;
		ct->nstreams = n;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->nodes = calloc(SERVETREE_FIRST_NODES, sizeof(*t->nodes))) ||
	    !(t->hash = calloc(SERVETREE_FIRST_HASH, sizeof(*t->hash)))) {
		stream_free(t);
		ct->oom = true;
		return;
	}
	t->ws = s;
	t->cap = SERVETREE_FIRST_NODES;
	t->hcap = SERVETREE_FIRST_HASH;
	t->n = 1; /* the root */
	t->nodes[0].name = NAMES_NONE;
	t->nodes[0].min_ns = UINT64_MAX;
	ct->streams[s->index] = t;
}

static int ensure_depth(struct servetree *ct, struct servetree_stream *t, uint32_t depth)
{
	uint32_t cap = t->path_cap ? t->path_cap : SERVETREE_FIRST_DEPTH;
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

void servetree_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct servetree *ct = ctx;
	struct servetree_stream *t = servetree_stream(ct, s->index);
	uint32_t i;

	if (!t || ensure_depth(ct, t, depth))
		return;
	i = child_of(ct, t, depth ? t->path[depth - 1] : 0, addr);
	t->path[depth] = i;
	t->child_ns[depth] = 0;
	if (i && !(flags & FILTER_INHERITED))
		t->nodes[i].calls++;
}

void servetree_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                    unsigned flags)
{
	struct servetree_stream *t = servetree_stream(ctx, s->index);
	uint64_t dur = ns - entry_ns;
	struct servetree_node *nd;

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

void servetree_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct servetree *ct = ctx;
	struct servetree_stream *t = servetree_stream(ct, s->index);
	uint64_t dur = sc->has_exit ? sc->exit_ns - sc->enter_ns : 0;
	struct servetree_node *nd;
	uint32_t parent, i;

	if (!t || !sc->has_enter || (sc->depth && (sc->depth > t->path_cap || !t->path[sc->depth - 1])))
		return;
	parent = sc->depth ? t->path[sc->depth - 1] : 0;
	i = child_of(ct, t, parent, SERVETREE_SYSCALL_KEY(sc->arch, sc->nr));
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
	nd->self_ns += dur;
	if (dur < nd->min_ns)
		nd->min_ns = dur;
	if (dur > nd->max_ns)
		nd->max_ns = dur;
	if (sc->depth)
		t->child_ns[sc->depth - 1] += dur;
}

int servetree_name(struct servetree *ct, struct walk *w, struct names *nt)
{
	char buf[1024];
	uint32_t k, i;

	for (k = 0; k < ct->nstreams; k++) {
		struct servetree_stream *t = ct->streams[k];

		if (!t)
			continue;
		for (i = t->named ? t->named : 1; i < t->n; i++) {
			struct servetree_node *nd = &t->nodes[i];

			if (SERVETREE_IS_SYSCALL(nd->addr))
				sys_name((enum sys_arch)(nd->addr >> 32 & 0xff), (uint32_t)nd->addr, buf, sizeof(buf));
			else
				walk_name(w, t->ws->image, nd->addr, buf, sizeof(buf));
			nd->name = names_intern(nt, buf);
			if (nd->name == NAMES_NONE)
				return -ENOMEM;
		}
		t->named = t->n;
	}
	return 0;
}

static uint32_t amap_slot(uint64_t addr, uint32_t cap)
{
	return (uint32_t)((addr * GOLDEN_RATIO_64) >> 40) & (cap - 1);
}

/* Adds addr -> name unless addr is there.  The table has room. */
static void amap_put(struct servetree_stream *t, uint64_t addr, uint32_t name)
{
	uint32_t k;

	for (k = amap_slot(addr, t->amap_cap); t->amap_name[k] != NAMES_NONE; k = (k + 1) & (t->amap_cap - 1))
		if (t->amap_addr[k] == addr)
			return;
	t->amap_addr[k] = addr;
	t->amap_name[k] = name;
}

uint32_t servetree_addr_name(struct servetree_stream *t, uint64_t addr)
{
	uint32_t k, i;

	if (t->amap_upto < t->named) {
		/* at most one entry per node: room for all of them, half full */
		uint32_t cap = t->amap_cap ? t->amap_cap : 64;

		while (cap < 2 * t->named)
			cap *= 2;
		if (cap != t->amap_cap) {
			uint64_t *a = malloc(cap * sizeof(*a));
			uint32_t *nm = malloc(cap * sizeof(*nm));

			if (!a || !nm) {
				free(a);
				free(nm);
				return NAMES_NONE;
			}
			free(t->amap_addr);
			free(t->amap_name);
			t->amap_addr = a;
			t->amap_name = nm;
			t->amap_cap = cap;
			memset(nm, 0xff, cap * sizeof(*nm)); /* NAMES_NONE: empty */
			t->amap_upto = 1;
		}
		for (i = t->amap_upto ? t->amap_upto : 1; i < t->named; i++)
			if (t->nodes[i].name != NAMES_NONE)
				amap_put(t, t->nodes[i].addr, t->nodes[i].name);
		t->amap_upto = t->named;
	}
	if (!t->amap_cap)
		return NAMES_NONE;
	for (k = amap_slot(addr, t->amap_cap); t->amap_name[k] != NAMES_NONE; k = (k + 1) & (t->amap_cap - 1))
		if (t->amap_addr[k] == addr)
			return t->amap_name[k];
	return NAMES_NONE;
}

static int node_cmp(const void *a, const void *b, void *ctx)
{
	const struct servetree_stream *t = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct servetree_node *p = &t->nodes[x], *q = &t->nodes[y];

	if (p->total_ns != q->total_ns)
		return p->total_ns > q->total_ns ? -1 : 1;
	return x < y ? -1 : 1;
}

uint32_t *servetree_children(const struct servetree_stream *t, uint32_t i, uint32_t *count)
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
