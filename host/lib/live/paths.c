/* The call-path tree of the live view (see live/paths.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "host/lib/live/paths.h"

#define NONE UINT32_MAX         /* no parent: a root path */
#define FOLDED (UINT32_MAX - 1) /* a frame whose path had no room */
#define FIRST_NODES 1024u
#define FIRST_DEPTH 64u
#define STACK_DEPTH_MAX (1u << 20)

struct livepaths_node {
	uint64_t addr;
	uint64_t calls, total_ns, child_ns;
	uint32_t parent; /* node index, or NONE */
	uint32_t image;
	uint32_t depth;
	/* the node a stream last entered at the same depth right after this
	 * one: loops repeat, so likely the next one again */
	uint32_t next;
};

struct livepaths_stack {
	uint32_t *slot; /* node of each open frame, by depth; FOLDED when not kept */
	uint32_t cap;
};

void livepaths_init(struct livepaths *p, uint32_t max_nodes)
{
	memset(p, 0, sizeof(*p));
	p->max = max_nodes ? max_nodes : LIVEPATHS_NODES_DEFAULT;
	if (p->max > LIVEPATHS_NODES_MAX)
		p->max = LIVEPATHS_NODES_MAX;
}

void livepaths_release(struct livepaths *p)
{
	uint32_t i;

	for (i = 0; i < p->nstacks; i++)
		free(p->stacks[i].slot);
	free(p->stacks);
	free(p->node);
	hashindex_release(&p->index);
	memset(p, 0, sizeof(*p));
}

/* What a node is found by: its parent, image and address. */
struct node_key {
	uint64_t addr;
	uint32_t parent, image;
};

static uint64_t key_hash(const struct node_key *k)
{
	return hashindex_u64(k->addr ^ ((uint64_t)k->parent << 32 | k->image));
}

/* ctx: the node array */
static bool node_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct livepaths_node *nd = (const struct livepaths_node *)ctx + item;
	const struct node_key *k = key;

	return nd->addr == k->addr && nd->parent == k->parent && nd->image == k->image;
}

/* Room for one more node and its index entry. */
static int grow(struct livepaths *p)
{
	if (p->n == p->cap) {
		uint32_t cap = p->cap ? 2 * p->cap : FIRST_NODES;
		struct livepaths_node *n;

		if (cap > p->max)
			cap = p->max;
		n = realloc(p->node, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->node = n;
		p->cap = cap;
	}
	return hashindex_reserve(&p->index);
}

/* The node of (parent, image, addr), made when new; NONE when the limit is
 * reached or memory ran out.  Called on every entry: guess (a node, or
 * NONE) saves the lookup when it is the one; else a known path costs one
 * probe of the index. */
static uint32_t child(struct livepaths *p, uint32_t guess, uint32_t parent, uint32_t image, uint64_t addr,
                      uint32_t depth)
{
	struct node_key k = { addr, parent, image };
	uint64_t hash;
	struct livepaths_node *nd;
	uint32_t slot = 0, cap = p->index.cap;

	if (guess < p->n && node_eq(p->node, guess, &k))
		return guess;
	hash = key_hash(&k);
	if (cap) {
		slot = hashindex_slot(&p->index, hash, node_eq, p->node, &k);
		if (p->index.val[slot])
			return p->index.val[slot] - 1;
	}
	if (p->n >= p->max)
		return NONE;
	if (grow(p)) {
		p->oom = true;
		return NONE;
	}
	if (p->index.cap != cap) /* the index grew: its slots moved */
		slot = hashindex_slot(&p->index, hash, node_eq, p->node, &k);
	nd = &p->node[p->n];
	memset(nd, 0, sizeof(*nd));
	nd->addr = addr;
	nd->parent = parent;
	nd->image = image;
	nd->depth = depth;
	nd->next = NONE;
	hashindex_put(&p->index, slot, hash, p->n);
	return p->n++;
}

/* The slot of depth in the stream's stack, grown as needed; NULL when it
 * cannot be had. */
static uint32_t *stack_slot(struct livepaths *p, const struct walk_stream *s, uint32_t depth)
{
	struct livepaths_stack *st;
	uint32_t i;

	if (s->index >= p->nstacks) {
		uint32_t n = s->index + 1 > 2 * p->nstacks ? s->index + 1 : 2 * p->nstacks;
		struct livepaths_stack *ns = realloc(p->stacks, (size_t)n * sizeof(*ns));

		if (!ns)
			goto oom;
		memset(ns + p->nstacks, 0, (size_t)(n - p->nstacks) * sizeof(*ns));
		p->stacks = ns;
		p->nstacks = n;
	}
	st = &p->stacks[s->index];
	if (depth >= st->cap) {
		uint32_t cap = st->cap ? st->cap : FIRST_DEPTH;
		uint32_t *slot;

		if (depth >= STACK_DEPTH_MAX)
			return NULL;
		while (cap <= depth)
			cap *= 2;
		slot = realloc(st->slot, (size_t)cap * sizeof(*slot));
		if (!slot)
			goto oom;
		for (i = st->cap; i < cap; i++)
			slot[i] = NONE; /* never entered */
		st->slot = slot;
		st->cap = cap;
	}
	return &st->slot[depth];
oom:
	p->oom = true;
	return NULL;
}

void livepaths_entry(struct livepaths *p, struct walk_stream *s, uint32_t depth, uint64_t addr, unsigned flags)
{
	uint32_t *slot = stack_slot(p, s, depth), parent = NONE, node, prev;

	if (!slot) {
		p->folded++;
		return;
	}
	if (depth) {
		parent = p->stacks[s->index].slot[depth - 1];
		if (parent == FOLDED) {
			*slot = FOLDED;
			if (!(flags & FILTER_INHERITED))
				p->folded++;
			return;
		}
	}
	/* the slot still has the stream's last node at this depth (or NONE,
	 * FOLDED) */
	prev = *slot;
	node = child(p, prev < p->n ? p->node[prev].next : NONE, parent, s->image, addr, depth);
	if (node == NONE) {
		*slot = FOLDED;
		if (!(flags & FILTER_INHERITED))
			p->folded++;
		return;
	}
	if (prev < p->n)
		p->node[prev].next = node;
	*slot = node;
	/* a frame entered before a fork is the child's path, not its call */
	if (!(flags & FILTER_INHERITED))
		p->node[node].calls++;
}

void livepaths_exit(struct livepaths *p, struct walk_stream *s, uint32_t depth, uint64_t duration_ns, unsigned flags)
{
	struct livepaths_node *nd;
	uint32_t node;

	if (s->index >= p->nstacks || depth >= p->stacks[s->index].cap)
		return;
	node = p->stacks[s->index].slot[depth];
	if (node >= p->n)
		return; /* FOLDED, or never entered */
	nd = &p->node[node];
	if (flags & FILTER_INHERITED)
		return;
	nd->total_ns += duration_ns;
	if (nd->parent != NONE)
		p->node[nd->parent].child_ns += duration_ns;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct livepaths_row *)a)->path, ((const struct livepaths_row *)b)->path);
}

static int by_self(const void *a, const void *b)
{
	const struct livepaths_row *x = a, *y = b;

	if (x->self_ns != y->self_ns)
		return x->self_ns > y->self_ns ? -1 : 1;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* A node's path as text: its parent's text (nodes come after their
 * parents), the separator and its name.  A text longer than
 * LIVEPATHS_NAME_MAX keeps its callee end behind "... > ". */
static char *path_text(const struct livepaths *p, struct walk *w, const struct livepaths_row *rows, uint32_t node)
{
	static const char cut[] = "..." LIVEPATHS_SEP;
	const struct livepaths_node *nd = &p->node[node];
	const char *head = nd->parent == NONE ? NULL : rows[nd->parent].path;
	char name[1024], *buf, *out;
	const char *nm = walk_name(w, nd->image, nd->addr, name, sizeof(name));
	size_t hl = head ? strlen(head) : 0, sl = head ? strlen(LIVEPATHS_SEP) : 0, nl = strlen(nm);
	size_t len = hl + sl + nl;

	buf = malloc(len + 1);
	if (!buf)
		return NULL;
	if (head) {
		memcpy(buf, head, hl);
		memcpy(buf + hl, LIVEPATHS_SEP, sl);
	}
	memcpy(buf + hl + sl, nm, nl + 1);
	if (len < LIVEPATHS_NAME_MAX)
		return buf;
	out = malloc(LIVEPATHS_NAME_MAX);
	if (out) {
		size_t keep = LIVEPATHS_NAME_MAX - sizeof(cut);

		memcpy(out, cut, sizeof(cut) - 1);
		memcpy(out + sizeof(cut) - 1, buf + len - keep, keep + 1);
	}
	free(buf);
	return out;
}

int livepaths_collect(const struct livepaths *p, struct walk *w, struct livepaths_rows *out)
{
	struct livepaths_row *row;
	size_t n = 0, i, k;

	out->row = NULL;
	out->n = 0;
	if (!p->n)
		return 0;
	row = calloc(p->n, sizeof(*row));
	if (!row)
		return -ENOMEM;
	/* in node order, so that a parent's text is there for its children */
	for (i = 0; i < p->n; i++) {
		const struct livepaths_node *nd = &p->node[i];

		row[n].path = path_text(p, w, row, (uint32_t)i);
		if (!row[n].path)
			goto oom;
		row[n].depth = nd->depth;
		row[n].calls = nd->calls;
		row[n].total_ns = nd->total_ns;
		row[n].self_ns = nd->total_ns > nd->child_ns ? nd->total_ns - nd->child_ns : 0;
		n++;
	}
	/* the same names in two images or processes make one path */
	qsort(row, n, sizeof(*row), by_text);
	for (i = 0, k = 0; i < n; i++) {
		if (k && !strcmp(row[k - 1].path, row[i].path)) {
			row[k - 1].calls += row[i].calls;
			row[k - 1].total_ns += row[i].total_ns;
			row[k - 1].self_ns += row[i].self_ns;
			free(row[i].path);
			continue;
		}
		row[k++] = row[i];
	}
	qsort(row, k, sizeof(*row), by_self);
	out->row = row;
	out->n = k;
	return 0;
oom:
	for (i = 0; i < n; i++)
		free(row[i].path);
	free(row);
	return -ENOMEM;
}

void livepaths_rows_release(struct livepaths_rows *rows)
{
	size_t i;

	for (i = 0; i < rows->n; i++)
		free(rows->row[i].path);
	free(rows->row);
	rows->row = NULL;
	rows->n = 0;
}
