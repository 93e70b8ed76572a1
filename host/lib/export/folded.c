/* Folded stacks export (see export/folded.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/calltree.h"
#include "host/lib/export/folded.h"
#include "host/lib/util/escape.h"

#define FOLDED_FIRST_NODES 1024u
#define FOLDED_FIRST_NAMES 1024u
#define FOLDED_FIRST_DEPTH 64u
#define FOLDED_FRAME_MAX 2048u
#define FNV_OFFSET_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull
#define GOLDEN_RATIO_64 0x9e3779b97f4a7c15ull

/* A merged path: one frame name under its parent. */
struct fnode {
	uint32_t name; /* index into names */
	uint32_t parent, first_child, last_child, next_sibling;
	uint64_t value;
};

struct fname {
	char *s; /* owned */
	uint32_t len;
	uint64_t hash;
};

struct folded {
	struct walk *w;
	unsigned flags;
	struct fnode *nodes; /* [0] is the root */
	uint32_t n, cap;
	uint32_t *node_hash; /* node index, keyed by (parent, name) */
	uint32_t nhcap;
	struct fname *names;
	uint32_t nnames, namecap;
	uint32_t *name_hash; /* name index + 1 */
	uint32_t namehcap;
	uint32_t *stack; /* merged node at each depth of the tree being merged */
	uint32_t stack_cap;
	uint64_t deeper; /* call paths merged into "[deeper]" frames */
};

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = FNV_OFFSET_BASIS;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
	return h;
}

static int name_hash_grow(struct folded *fd)
{
	uint32_t cap = fd->namehcap ? 2 * fd->namehcap : 2 * FOLDED_FIRST_NAMES, i;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 0; i < fd->nnames; i++) {
		uint32_t k = (uint32_t)fd->names[i].hash & (cap - 1);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(fd->name_hash);
	fd->name_hash = h;
	fd->namehcap = cap;
	return 0;
}

/* The index of frame name s (already escaped), added when new; -ENOMEM. */
static int64_t name_intern(struct folded *fd, const char *s, size_t len)
{
	uint64_t hash = str_hash(s, len);
	struct fname *e;
	uint32_t k;

	if ((fd->nnames + 1) * 2 > fd->namehcap && name_hash_grow(fd))
		return -ENOMEM;
	k = (uint32_t)hash & (fd->namehcap - 1);
	while (fd->name_hash[k]) {
		e = &fd->names[fd->name_hash[k] - 1];
		if (e->hash == hash && e->len == len && !memcmp(e->s, s, len))
			return fd->name_hash[k] - 1;
		k = (k + 1) & (fd->namehcap - 1);
	}
	if (fd->nnames == fd->namecap) {
		uint32_t cap = fd->namecap ? 2 * fd->namecap : FOLDED_FIRST_NAMES;
		struct fname *n;

		if (cap > EXPORT_FOLDED_NODES_MAX || !(n = realloc(fd->names, cap * sizeof(*n))))
			return -ENOMEM;
		fd->names = n;
		fd->namecap = cap;
	}
	e = &fd->names[fd->nnames];
	e->s = malloc(len + 1);
	if (!e->s)
		return -ENOMEM;
	memcpy(e->s, s, len + 1);
	e->len = (uint32_t)len;
	e->hash = hash;
	fd->name_hash[k] = ++fd->nnames;
	return fd->nnames - 1;
}

static uint32_t node_slot(uint32_t parent, uint32_t name, uint32_t cap)
{
	return (uint32_t)((((uint64_t)parent << 32 | name) * GOLDEN_RATIO_64) >> 40) & (cap - 1);
}

static int node_hash_grow(struct folded *fd)
{
	uint32_t cap = 2 * fd->nhcap, i;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 1; i < fd->n; i++) {
		uint32_t k = node_slot(fd->nodes[i].parent, fd->nodes[i].name, cap);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i;
	}
	free(fd->node_hash);
	fd->node_hash = h;
	fd->nhcap = cap;
	return 0;
}

/* The merged child of parent named name, added when new; 0 for no memory. */
static uint32_t node_child(struct folded *fd, uint32_t parent, uint32_t name)
{
	uint32_t k, i;
	struct fnode *nd;

	if ((fd->n + 1) * 2 > fd->nhcap && node_hash_grow(fd))
		return 0;
	k = node_slot(parent, name, fd->nhcap);
	while ((i = fd->node_hash[k])) {
		if (fd->nodes[i].parent == parent && fd->nodes[i].name == name)
			return i;
		k = (k + 1) & (fd->nhcap - 1);
	}
	if (fd->n == fd->cap) {
		uint32_t cap = 2 * fd->cap;
		struct fnode *n;

		if (cap > EXPORT_FOLDED_NODES_MAX || !(n = realloc(fd->nodes, cap * sizeof(*n))))
			return 0;
		fd->nodes = n;
		fd->cap = cap;
	}
	i = fd->n++;
	nd = &fd->nodes[i];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->parent = parent;
	if (fd->nodes[parent].last_child)
		fd->nodes[fd->nodes[parent].last_child].next_sibling = i;
	else
		fd->nodes[parent].first_child = i;
	fd->nodes[parent].last_child = i;
	fd->node_hash[k] = i;
	return i;
}

/* The merged child of parent for a frame name not yet escaped. */
static uint32_t frame_child(struct folded *fd, uint32_t parent, const char *name)
{
	char frame[FOLDED_FRAME_MAX];
	size_t len = escape_folded_frame(name, frame, sizeof(frame));
	int64_t id = name_intern(fd, frame, len);

	return id < 0 ? 0 : node_child(fd, parent, (uint32_t)id);
}

/* Adds one thread's tree under the root (or under a frame for the thread). */
static int merge_stream(struct folded *fd, const struct walk_stream *s, const struct calltree_stream *t)
{
	struct calltree_iter it;
	uint32_t i, depth, root = 0;
	char name[1024];
	int r = 0;

	if (fd->flags & EXPORT_FOLDED_PER_THREAD) {
		snprintf(name, sizeof(name), "%s-%" PRIu32 "/%" PRIu32, s->comm, s->pid, s->tid);
		root = frame_child(fd, 0, name);
		if (!root)
			return -ENOMEM;
	}
	if (calltree_iter_init(&it, t))
		return -ENOMEM;
	while ((i = calltree_iter_next(&it, &depth))) {
		const struct calltree_node *nd = &t->nodes[i];
		uint32_t m;

		if (depth >= EXPORT_FOLDED_DEPTH_MAX) {
			m = frame_child(fd, fd->stack[EXPORT_FOLDED_DEPTH_MAX - 1], EXPORT_FOLDED_DEEPER);
			if (!m) {
				r = -ENOMEM;
				break;
			}
			fd->nodes[m].value += (fd->flags & EXPORT_FOLDED_CALLS) ? nd->calls : nd->self_ns;
			fd->deeper++;
			continue;
		}
		if (depth >= fd->stack_cap) {
			uint32_t cap = fd->stack_cap ? 2 * fd->stack_cap : FOLDED_FIRST_DEPTH;
			uint32_t *n = realloc(fd->stack, cap * sizeof(*n));

			if (!n) {
				r = -ENOMEM;
				break;
			}
			fd->stack = n;
			fd->stack_cap = cap;
		}
		m = frame_child(fd, depth ? fd->stack[depth - 1] : root,
		                calltree_node_name(fd->w, s, nd, true, name, sizeof(name)));
		if (!m) {
			r = -ENOMEM;
			break;
		}
		fd->nodes[m].value += (fd->flags & EXPORT_FOLDED_CALLS) ? nd->calls : nd->self_ns;
		fd->stack[depth] = m;
	}
	if (it.oom)
		r = -ENOMEM;
	calltree_iter_release(&it);
	return r;
}

/* Writes every path with a value, depth first, with the path so far in a
 * buffer: each node's frame is appended on the way down and cut on the way
 * back up (lens holds the buffer length at each depth). */
static int write_lines(struct folded *fd, FILE *f)
{
	char *line = NULL, num[32];
	size_t len = 0, cap = 0, *lens = NULL;
	uint32_t i, depth = 0, lcap = 0;
	int r = 0;

	i = fd->nodes[0].first_child;
	while (i) {
		const struct fname *nm = &fd->names[fd->nodes[i].name];
		size_t need = len + 1 + nm->len + 1;

		if (depth >= lcap) {
			uint32_t c = lcap ? 2 * lcap : FOLDED_FIRST_DEPTH;
			size_t *n = realloc(lens, c * sizeof(*n));

			if (!n) {
				r = -ENOMEM;
				break;
			}
			lens = n;
			lcap = c;
		}
		if (need > cap) {
			size_t c = cap ? 2 * cap : 4096;
			char *n;

			while (c < need)
				c *= 2;
			if (c > EXPORT_FOLDED_LINE_MAX || !(n = realloc(line, c))) {
				r = -ENOMEM;
				break;
			}
			line = n;
			cap = c;
		}
		lens[depth] = len;
		if (depth)
			line[len++] = ';';
		memcpy(line + len, nm->s, nm->len);
		len += nm->len;
		if (fd->nodes[i].value) {
			int n = snprintf(num, sizeof(num), " %" PRIu64 "\n", fd->nodes[i].value);

			fwrite(line, 1, len, f);
			fwrite(num, 1, (size_t)n, f);
		}
		if (fd->nodes[i].first_child) {
			i = fd->nodes[i].first_child;
			depth++;
			continue;
		}
		/* up to the next sibling of this node or of an ancestor */
		while (i && !fd->nodes[i].next_sibling) {
			i = fd->nodes[i].parent;
			if (!depth)
				break;
			depth--;
		}
		if (!i)
			break;
		len = lens[depth];
		i = fd->nodes[i].next_sibling;
	}
	free(line);
	free(lens);
	return r;
}

int export_folded(struct walk *w, unsigned flags, FILE *f, uint64_t *deeper)
{
	struct folded fd = { .w = w, .flags = flags };
	struct walk_ops ops = { 0 };
	struct calltree ct;
	uint32_t i;
	int r = -ENOMEM;

	calltree_init(&ct);
	calltree_walk_ops(&ct, &ops);
	if (walk_run(w, &ops) || ct.oom)
		goto out;
	fd.cap = FOLDED_FIRST_NODES;
	fd.nhcap = 2 * FOLDED_FIRST_NODES;
	fd.nodes = calloc(fd.cap, sizeof(*fd.nodes));
	fd.node_hash = calloc(fd.nhcap, sizeof(*fd.node_hash));
	if (!fd.nodes || !fd.node_hash)
		goto out;
	fd.n = 1;
	for (i = 0; i < w->nstreams; i++) {
		const struct calltree_stream *t = calltree_stream(&ct, w->streams[i]->index);

		if (t && merge_stream(&fd, w->streams[i], t))
			goto out;
	}
	r = write_lines(&fd, f);
	if (!r && ferror(f))
		r = -EIO;
	if (deeper)
		*deeper = fd.deeper;
out:
	for (i = 0; i < fd.nnames; i++)
		free(fd.names[i].s);
	free(fd.names);
	free(fd.name_hash);
	free(fd.nodes);
	free(fd.node_hash);
	free(fd.stack);
	calltree_release(&ct);
	return r;
}
