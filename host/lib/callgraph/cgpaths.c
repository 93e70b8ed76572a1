/* The tree of possible call paths from one function (cg_paths_build in
 * cgraph.h): a depth-first walk of a cg_set's graph with an explicit stack,
 * so that the depth a user asks for costs heap, never C stack. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/callgraph/cgraph.h"

/* A child a node will get: the function (an import already replaced by the
 * function it is linked to, when the libraries are followed) and the kind
 * of the first call that leads there. */
struct kid {
	uint32_t obj, func;
	uint8_t kind, flags;
};

/* A node being expanded: its children are kids[first, first + count), the
 * next one to add is kids[first + next]. */
struct frame {
	uint32_t node;
	uint32_t first, count, next;
};

/* Per object, made on first use: stamp[f] == walk.tick while the children
 * of one node are gathered (a callee seen already), onpath[f] while f is on
 * the path from the root to the node being expanded. */
struct objmarks {
	uint32_t *stamp;
	uint8_t *onpath;
};

struct walk {
	const struct cg_set *s;
	unsigned flags;
	struct cg_paths *p;
	struct objmarks *marks; /* s->n of them */
	uint32_t tick;
	struct frame *st;
	uint32_t nst, capst;
	struct kid *kids;
	uint32_t nkids, capkids;
};

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t max)
{
	uint32_t n = *cap ? *cap : 16;
	void *a;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -ENOMEM;
	while (n < need)
		n = n > max / 2 ? max : n * 2;
	if (n > max)
		n = max;
	a = realloc(*arr, (size_t)n * elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = n;
	return 0;
}

static struct objmarks *marks_of(struct walk *w, uint32_t obj)
{
	struct objmarks *m = &w->marks[obj];
	size_t n = w->s->objs[obj]->nfuncs ? w->s->objs[obj]->nfuncs : 1;

	if (!m->stamp) {
		m->stamp = calloc(n, sizeof(*m->stamp));
		m->onpath = calloc(n, 1);
		if (!m->stamp || !m->onpath) {
			free(m->stamp);
			free(m->onpath);
			m->stamp = NULL;
			m->onpath = NULL;
			return NULL;
		}
	}
	return m;
}

/* A new tick for gathering one node's children; all stamps cleared when
 * the counter wraps. */
static void next_tick(struct walk *w)
{
	if (++w->tick)
		return;
	for (uint32_t i = 0; i < w->s->n; i++)
		if (w->marks[i].stamp)
			memset(w->marks[i].stamp, 0, w->s->objs[i]->nfuncs * sizeof(uint32_t));
	w->tick = 1;
}

static int push_kid(struct walk *w, uint32_t obj, uint32_t func, uint8_t kind, uint8_t flags)
{
	int r = grow((void **)&w->kids, &w->capkids, w->nkids + 1, sizeof(*w->kids), UINT32_MAX / 2);

	if (r)
		return r;
	w->kids[w->nkids++] = (struct kid){ .obj = obj, .func = func, .kind = kind, .flags = flags };
	return 0;
}

/* Appends the children of function func of object obj to w->kids: its
 * distinct direct and tail callees in site order, less the
 * instrumentation's __cyg_profile_func_enter/exit, a linked import replaced
 * by its definition under CG_PATH_LIBS; then one indirect node when it has
 * indirect sites.  Sets *count to how many. */
static int gather(struct walk *w, uint32_t obj, uint32_t func, uint32_t *count)
{
	const struct cg_object *o = w->s->objs[obj];
	const struct cg_func *f = &o->funcs[func];
	uint32_t start = w->nkids;
	bool indirect = false;
	int r;

	*count = 0;
	if (f->edges > o->nedges || f->nedges > o->nedges - f->edges)
		return 0;
	next_tick(w);
	for (uint32_t i = f->edges; i < f->edges + f->nedges; i++) {
		const struct cg_edge *e = &o->edges[i];
		uint32_t to_obj = obj, to = e->callee;
		struct objmarks *m;

		if (e->kind == CG_EDGE_INDIRECT) {
			indirect = true;
			continue;
		}
		if (to >= o->nfuncs)
			continue;
		/* -finstrument-functions' own calls, in every function: the
		 * instrumentation, not the program's paths */
		if (o->funcs[to].kind == CG_FUNC_IMPORT && o->funcs[to].import &&
		    !strncmp(o->funcs[to].import, "__cyg_profile_func_", 19))
			continue;
		if ((w->flags & CG_PATH_LIBS) && o->funcs[to].kind == CG_FUNC_IMPORT &&
		    o->funcs[to].link_obj < w->s->n &&
		    o->funcs[to].link_func < w->s->objs[o->funcs[to].link_obj]->nfuncs) {
			to_obj = o->funcs[to].link_obj;
			to = o->funcs[to].link_func;
		}
		m = marks_of(w, to_obj);
		if (!m)
			return -ENOMEM;
		if (m->stamp[to] == w->tick)
			continue;
		m->stamp[to] = w->tick;
		r = push_kid(w, to_obj, to, e->kind, 0);
		if (r)
			return r;
	}
	if (indirect) {
		r = push_kid(w, obj, CG_NONE, CG_EDGE_INDIRECT, CG_PATH_INDIRECT);
		if (r)
			return r;
	}
	*count = w->nkids - start;
	return 0;
}

static int add_node(struct walk *w, uint32_t obj, uint32_t func, uint32_t parent, uint8_t kind, uint8_t flags)
{
	struct cg_paths *p = w->p;
	int r = grow((void **)&p->nodes, &p->cap, p->n + 1, sizeof(*p->nodes), p->max_nodes);

	if (r)
		return r;
	p->nodes[p->n++] = (struct cg_path_node){
		.obj = obj,
		.func = func,
		.parent = parent,
		.depth = parent == CG_NONE ? 0 : p->nodes[parent].depth + 1,
		.kind = kind,
		.flags = flags,
	};
	return 0;
}

/* Decides what becomes of the node just added: a leaf (indirect,
 * recursive, an import, no callees), a leaf with its callees counted as
 * cut (at the depth limit), or expanded (a frame on the stack). */
static int expand(struct walk *w, uint32_t node)
{
	struct cg_path_node *nd = &w->p->nodes[node];
	uint32_t obj = nd->obj, func = nd->func, count;
	struct objmarks *m;
	int r;

	if (nd->flags & CG_PATH_INDIRECT)
		return 0;
	m = marks_of(w, obj);
	if (!m)
		return -ENOMEM;
	if (m->onpath[func]) {
		nd->flags |= CG_PATH_RECURSIVE;
		w->p->recursive++;
		return 0;
	}
	r = gather(w, obj, func, &count);
	if (r)
		return r;
	nd = &w->p->nodes[node];
	if (!count)
		return 0;
	if (nd->depth >= w->p->max_depth) {
		nd->cut = count;
		w->nkids -= count;
		return 0;
	}
	r = grow((void **)&w->st, &w->capst, w->nst + 1, sizeof(*w->st), UINT32_MAX / 2);
	if (r)
		return r;
	w->st[w->nst++] = (struct frame){ .node = node, .first = w->nkids - count, .count = count };
	m->onpath[func] = 1;
	return 0;
}

static int walk_run(struct walk *w, uint32_t obj, uint32_t root)
{
	struct cg_paths *p = w->p;
	int r;

	if (!p->max_nodes)
		return 0;
	r = add_node(w, obj, root, CG_NONE, CG_EDGE_CALL, 0);
	if (!r)
		r = expand(w, 0);
	while (!r && w->nst) {
		struct frame *fr = &w->st[w->nst - 1];
		struct kid k;

		if (fr->next == fr->count) {
			const struct cg_path_node *nd = &p->nodes[fr->node];

			w->marks[nd->obj].onpath[nd->func] = 0;
			w->nkids = fr->first;
			w->nst--;
			continue;
		}
		if (p->n >= p->max_nodes) {
			p->nodes[fr->node].cut += fr->count - fr->next;
			fr->next = fr->count;
			continue;
		}
		k = w->kids[fr->first + fr->next++];
		r = add_node(w, k.obj, k.func, fr->node, k.kind, k.flags);
		if (!r)
			r = expand(w, p->n - 1);
	}
	return r;
}

int cg_paths_build(const struct cg_set *s, uint32_t obj, uint32_t root, uint32_t depth, uint32_t max_nodes,
                   unsigned flags, struct cg_paths *out)
{
	struct walk w = { .s = s, .flags = flags, .p = out };
	int r;

	memset(out, 0, sizeof(*out));
	out->max_depth = depth;
	out->max_nodes = max_nodes;
	if (obj >= s->n || root >= s->objs[obj]->nfuncs)
		return -EINVAL;
	w.marks = calloc(s->n, sizeof(*w.marks));
	if (!w.marks)
		return -ENOMEM;
	r = walk_run(&w, obj, root);
	for (uint32_t i = 0; i < s->n; i++) {
		free(w.marks[i].stamp);
		free(w.marks[i].onpath);
	}
	free(w.marks);
	free(w.st);
	free(w.kids);
	if (r) {
		cg_paths_release(out);
		out->max_depth = depth;
		out->max_nodes = max_nodes;
		return r;
	}
	for (uint32_t i = 0; i < out->n; i++) {
		if (!out->nodes[i].cut)
			continue;
		out->cut_nodes++;
		out->cut_paths += out->nodes[i].cut;
	}
	return 0;
}

void cg_paths_release(struct cg_paths *p)
{
	if (!p)
		return;
	free(p->nodes);
	memset(p, 0, sizeof(*p));
}
