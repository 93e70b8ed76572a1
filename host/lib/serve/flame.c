/* The merged flame graph (see serve/flame.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/serve/flame.h"

#define GOLDEN_RATIO_64 0x9e3779b97f4a7c15ull
#define FLAME_FIRST_NODES 1024u

void flame_init(struct flame *f)
{
	memset(f, 0, sizeof(*f));
}

void flame_release(struct flame *f)
{
	free(f->nodes);
	free(f->hash);
	memset(f, 0, sizeof(*f));
}

static uint32_t key_hash(uint32_t parent, uint32_t name, bool sys, uint32_t cap)
{
	uint64_t k = (uint64_t)parent << 33 | (uint64_t)name << 1 | sys;

	return (uint32_t)((k * GOLDEN_RATIO_64) >> 40) & (cap - 1);
}

static int rehash(struct flame *f, uint32_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h)), i;

	if (!h)
		return -ENOMEM;
	for (i = 1; i < f->n; i++) {
		uint32_t k = key_hash(f->nodes[i].parent, f->nodes[i].name, f->nodes[i].syscall, cap);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i;
	}
	free(f->hash);
	f->hash = h;
	f->hcap = cap;
	return 0;
}

/* The child of parent named name, added when new; 0 when memory ran out.
 * Children are prepended: the order does not matter, requests sort them. */
static uint32_t child_of(struct flame *f, uint32_t parent, uint32_t name, bool sys)
{
	uint32_t k = key_hash(parent, name, sys, f->hcap), i;
	struct flame_node *nd;

	while ((i = f->hash[k])) {
		nd = &f->nodes[i];
		if (nd->parent == parent && nd->name == name && nd->syscall == sys)
			return i;
		k = (k + 1) & (f->hcap - 1);
	}
	if (f->n == f->cap) {
		uint32_t cap = f->cap * 2;
		struct flame_node *n;

		if (cap > FLAME_NODES_MAX || !(n = realloc(f->nodes, cap * sizeof(*n))))
			return 0;
		f->nodes = n;
		f->cap = cap;
	}
	i = f->n++;
	nd = &f->nodes[i];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->syscall = sys;
	nd->parent = parent;
	nd->next_sibling = f->nodes[parent].first_child;
	f->nodes[parent].first_child = i;
	f->nodes[parent].nchildren++;
	f->hash[k] = i;
	if (f->n * 2 > f->hcap && rehash(f, f->hcap * 2))
		return 0;
	return i;
}

/* Merges one thread's tree: a node's merged twin is found from its
 * parent's, which comes first (parents have lower indices). */
static int merge_stream(struct flame *f, const struct calltree_stream *t, uint32_t *twin)
{
	uint32_t i;

	twin[0] = 0;
	for (i = 1; i < t->named; i++) {
		const struct calltree_node *nd = &t->nodes[i];
		uint32_t m = child_of(f, twin[nd->parent], nd->name, CALLTREE_IS_SYSCALL(nd->addr));

		if (!m)
			return -ENOMEM;
		twin[i] = m;
		f->nodes[m].calls += nd->calls;
		f->nodes[m].total_ns += nd->total_ns;
		f->nodes[m].self_ns += nd->self_ns;
		if (!nd->parent)
			f->nodes[0].total_ns += nd->total_ns;
	}
	return 0;
}

/* A call still running (a live session, or a frame whose exit is not in
 * the trace yet) has no total; its frame is made as wide as its callees,
 * so that they show.  Children come after their parents. */
static int cover_children(struct flame *f)
{
	uint64_t *sum = calloc(f->n, sizeof(*sum));
	uint32_t i;

	if (!sum) {
		f->oom = true;
		return -ENOMEM;
	}
	for (i = f->n - 1; i > 0; i--) {
		struct flame_node *nd = &f->nodes[i];

		if (sum[i] > nd->total_ns)
			nd->total_ns = sum[i];
		sum[nd->parent] += nd->total_ns;
	}
	if (sum[0] > f->nodes[0].total_ns)
		f->nodes[0].total_ns = sum[0];
	free(sum);
	return 0;
}

int flame_build(struct flame *f, const struct calltree *ct)
{
	uint32_t *twin = NULL, twin_cap = 0, k;
	int r = 0;

	f->oom = false;
	if (!f->nodes) {
		f->nodes = malloc(FLAME_FIRST_NODES * sizeof(*f->nodes));
		f->cap = FLAME_FIRST_NODES;
	}
	f->n = 0;
	if (!f->nodes || rehash(f, 2 * FLAME_FIRST_NODES)) {
		f->oom = true;
		return -ENOMEM;
	}
	f->n = 1;
	memset(&f->nodes[0], 0, sizeof(f->nodes[0]));
	f->nodes[0].name = NAMES_NONE;
	for (k = 0; k < ct->nstreams && !r; k++) {
		const struct calltree_stream *t = ct->streams[k];

		if (!t || t->named < 2)
			continue;
		if (t->named > twin_cap) {
			uint32_t *v = realloc(twin, t->named * sizeof(*v));

			if (!v) {
				r = -ENOMEM;
				break;
			}
			twin = v;
			twin_cap = t->named;
		}
		r = merge_stream(f, t, twin);
	}
	free(twin);
	f->nodes[0].self_ns = 0;
	if (r)
		f->oom = true;
	else
		r = cover_children(f);
	return r;
}
