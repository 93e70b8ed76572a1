/* Folded stacks export (see export/folded.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/calltree.h"
#include "host/lib/analysis/pathmerge.h"
#include "host/lib/export/folded.h"
#include "host/lib/util/escape.h"

#define FOLDED_FIRST_NAMES 1024u
#define FOLDED_FIRST_DEPTH 64u
#define FOLDED_FRAME_MAX 2048u
#define FNV_OFFSET_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

struct fname {
	char *s; /* owned */
	uint32_t len;
	uint64_t hash;
};

struct folded {
	struct walk *w;
	unsigned flags;
	struct pathmerge paths; /* keys: index into names */
	uint64_t *value;        /* per node of paths */
	uint32_t vcap;
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

/* The merged child of parent named name, added when new; 0 for no memory. */
static uint32_t node_child(struct folded *fd, uint32_t parent, uint32_t name)
{
	bool added;
	uint32_t i = pathmerge_child(&fd->paths, parent, name, &added);

	if (!added)
		return i;
	if (i >= fd->vcap) {
		uint64_t *v = realloc(fd->value, fd->paths.cap * sizeof(*v));

		if (!v)
			return 0;
		fd->value = v;
		fd->vcap = fd->paths.cap;
	}
	fd->value[i] = 0;
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
			fd->value[m] += (fd->flags & EXPORT_FOLDED_CALLS) ? nd->calls : nd->self_ns;
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
		fd->value[m] += (fd->flags & EXPORT_FOLDED_CALLS) ? nd->calls : nd->self_ns;
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
	const struct pathmerge_node *nodes = fd->paths.nodes;
	char *line = NULL, num[32];
	size_t len = 0, cap = 0, *lens = NULL;
	uint32_t i, depth = 0, lcap = 0;
	int r = 0;

	i = nodes[0].first_child;
	while (i) {
		const struct fname *nm = &fd->names[nodes[i].key];
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
		if (fd->value[i]) {
			int n = snprintf(num, sizeof(num), " %" PRIu64 "\n", fd->value[i]);

			fwrite(line, 1, len, f);
			fwrite(num, 1, (size_t)n, f);
		}
		if (nodes[i].first_child) {
			i = nodes[i].first_child;
			depth++;
			continue;
		}
		/* up to the next sibling of this node or of an ancestor */
		while (i && !nodes[i].next_sibling) {
			i = nodes[i].parent;
			if (!depth)
				break;
			depth--;
		}
		if (!i)
			break;
		len = lens[depth];
		i = nodes[i].next_sibling;
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
	if (pathmerge_init(&fd.paths, EXPORT_FOLDED_NODES_MAX, 0))
		goto out;
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
	pathmerge_release(&fd.paths);
	free(fd.value);
	free(fd.stack);
	calltree_release(&ct);
	return r;
}
