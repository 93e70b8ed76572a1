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
#include "host/lib/util/names.h"

#define FOLDED_FIRST_DEPTH 64u
#define FOLDED_FRAME_MAX 2048u

struct folded {
	struct walk *w;
	unsigned flags;
	struct pathmerge paths; /* keys: index into names */
	uint64_t *value;        /* per node of paths */
	uint32_t vcap;
	struct names names; /* the escaped frames */
	uint32_t *stack;    /* merged node at each depth of the tree being merged */
	uint32_t stack_cap;
	uint64_t deeper; /* call paths merged into "[deeper]" frames */
};

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
	uint32_t id;

	escape_folded_frame(name, frame, sizeof(frame));
	id = names_intern(&fd->names, frame);
	return id == NAMES_NONE ? 0 : node_child(fd, parent, id);
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
		uint32_t id = (uint32_t)nodes[i].key;
		size_t nlen = names_len(&fd->names, id), need = len + 1 + nlen + 1;

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
		memcpy(line + len, names_get(&fd->names, id), nlen);
		len += nlen;
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

	names_init_max(&fd.names, EXPORT_FOLDED_NODES_MAX);
	calltree_init(&ct);
	calltree_walk_ops(&ct, &ops);
	ops.sync = calltree_sync; /* sync waits: frames "[wait] mutex-lock 0x..." with their time */
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
	names_release(&fd.names);
	pathmerge_release(&fd.paths);
	free(fd.value);
	free(fd.stack);
	calltree_release(&ct);
	return r;
}
