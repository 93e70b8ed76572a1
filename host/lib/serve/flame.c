/* The merged flame graph (see serve/flame.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
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
static uint32_t child_of(struct flame *f, uint32_t parent, uint32_t name, enum flame_kind kind)
{
	bool added;
	uint32_t i = pathmerge_child(&f->paths, parent, (uint64_t)name << 2 | kind, &added);
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
	nd->kind = (uint8_t)kind;
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
		uint32_t m = child_of(f, twin[nd->parent], nd->name, FLAME_KIND_OF(nd->addr));

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

/* An empty graph: the root alone. */
static int flame_reset(struct flame *f)
{
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
	return 0;
}

int flame_build(struct flame *f, const struct calltree *ct)
{
	uint32_t *twin = NULL, twin_cap = 0, k;
	int r;

	if (flame_reset(f))
		return -ENOMEM;
	r = 0;
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

/* Charges one point: its path's frames from the outermost (path holds the
 * tree's nodes from the innermost, depth of them), then the leaf. */
static int charge_point(struct flame *f, const struct calltree_stream *t, const uint32_t *path, uint32_t depth,
                        uint32_t leaf_name, const struct flame_point *p)
{
	uint32_t at = 0, i;

	f->nodes[0].total_ns += p->ns;
	f->nodes[0].calls += p->count;
	for (i = depth; i > 0; i--) {
		const struct calltree_node *nd = &t->nodes[path[i - 1]];

		at = child_of(f, at, nd->name, FLAME_KIND_OF(nd->addr));
		if (!at)
			return -ENOMEM;
		f->nodes[at].total_ns += p->ns;
		f->nodes[at].calls += p->count;
	}
	if (leaf_name != NAMES_NONE) {
		at = child_of(f, at, leaf_name, p->leaf ? FLAME_SYSCALL : FLAME_FUNCTION);
		if (!at)
			return -ENOMEM;
		f->nodes[at].total_ns += p->ns;
		f->nodes[at].calls += p->count;
	}
	f->nodes[at].self_ns += p->ns;
	return 0;
}

int flame_build_points(struct flame *f, const struct calltree *ct, const struct flame_point *p, size_t n,
                       struct names *nt, const char *none)
{
	uint32_t *path = malloc(FLAME_POINT_DEPTH_MAX * sizeof(*path));
	uint32_t none_name = NAMES_NONE;
	size_t k;
	int r;

	r = path ? flame_reset(f) : -ENOMEM;
	for (k = 0; k < n && !r; k++) {
		const struct calltree_stream *t = calltree_stream(ct, p[k].stream);
		uint32_t depth = 0, i, leaf = NAMES_NONE;
		char buf[64];

		if (!t || p[k].node >= t->named)
			continue;
		/* the innermost frames first; past the bound, the outermost kept */
		for (i = p[k].node; i; i = t->nodes[i].parent)
			depth++;
		for (i = p[k].node; depth > FLAME_POINT_DEPTH_MAX; i = t->nodes[i].parent)
			depth--;
		for (depth = 0; i; i = t->nodes[i].parent)
			path[depth++] = i;
		if (p[k].leaf) {
			sys_name((enum sys_arch)CALLTREE_SYSCALL_ARCH(p[k].leaf), CALLTREE_SYSCALL_NR(p[k].leaf), buf,
			         sizeof(buf));
			leaf = names_intern(nt, buf);
		} else if (!depth) {
			if (none_name == NAMES_NONE)
				none_name = names_intern(nt, none);
			leaf = none_name;
		}
		if ((p[k].leaf || !depth) && leaf == NAMES_NONE)
			r = -ENOMEM;
		else
			r = charge_point(f, t, path, depth, leaf, &p[k]);
	}
	free(path);
	if (r)
		f->oom = true;
	return r;
}
