/* The merged flame graph (see serve/flame.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/serve/flame.h"

void flame_init(struct flame *f)
{
	memset(f, 0, sizeof(*f));
}

void flame_release(struct flame *f)
{
	pathmerge_release(&f->paths);
	free(f->nodes);
	memset(f, 0, sizeof(*f));
}

/* The child of parent named name, added when new; 0 when memory ran out. */
static uint32_t child_of(struct flame *f, uint32_t parent, uint32_t name, bool sys)
{
	bool added;
	uint32_t i = pathmerge_child(&f->paths, parent, (uint64_t)name << 1 | sys, &added);
	struct flame_node *nd;

	if (!added)
		return i;
	if (i >= f->cap) {
		nd = realloc(f->nodes, f->paths.cap * sizeof(*nd));
		if (!nd)
			return 0;
		f->nodes = nd;
		f->cap = f->paths.cap;
	}
	nd = &f->nodes[i];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->syscall = sys;
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
	uint64_t *sum = calloc(f->paths.n, sizeof(*sum));
	uint32_t i;

	if (!sum) {
		f->oom = true;
		return -ENOMEM;
	}
	for (i = f->paths.n - 1; i > 0; i--) {
		struct flame_node *nd = &f->nodes[i];

		if (sum[i] > nd->total_ns)
			nd->total_ns = sum[i];
		sum[f->paths.nodes[i].parent] += nd->total_ns;
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
	if (f->paths.nodes ? pathmerge_reset(&f->paths)
	                   : pathmerge_init(&f->paths, FLAME_NODES_MAX, PATHMERGE_NEWEST_FIRST)) {
		f->oom = true;
		return -ENOMEM;
	}
	if (!f->nodes) {
		f->nodes = malloc(f->paths.cap * sizeof(*f->nodes));
		f->cap = f->nodes ? f->paths.cap : 0;
	}
	if (!f->nodes) {
		f->oom = true;
		return -ENOMEM;
	}
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
