/* Call paths merged by name (see analysis/pathmerge.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/pathmerge.h"

#define PATHMERGE_FIRST_NODES 1024u

struct path_key {
	uint32_t parent;
	uint64_t key;
};

static bool node_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct pathmerge *m = ctx;
	const struct path_key *k = key;

	return m->nodes[item].parent == k->parent && m->nodes[item].key == k->key;
}

static uint64_t node_hash(uint32_t parent, uint64_t key)
{
	return hashindex_u64(key ^ hashindex_u64(parent));
}

int pathmerge_init(struct pathmerge *m, uint32_t max, unsigned flags)
{
	memset(m, 0, sizeof(*m));
	m->max = max;
	m->flags = flags;
	return pathmerge_reset(m);
}

void pathmerge_release(struct pathmerge *m)
{
	free(m->nodes);
	hashindex_release(&m->index);
	memset(m, 0, sizeof(*m));
}

int pathmerge_reset(struct pathmerge *m)
{
	uint32_t max = m->max;
	unsigned flags = m->flags;

	hashindex_release(&m->index);
	if (!m->nodes) {
		m->cap = max < PATHMERGE_FIRST_NODES ? max : PATHMERGE_FIRST_NODES;
		m->nodes = malloc(m->cap * sizeof(*m->nodes));
		if (!m->nodes) {
			pathmerge_release(m);
			m->max = max;
			m->flags = flags;
			return -ENOMEM;
		}
	}
	memset(&m->nodes[0], 0, sizeof(m->nodes[0]));
	m->n = 1;
	return 0;
}

uint32_t pathmerge_child(struct pathmerge *m, uint32_t parent, uint64_t key, bool *added)
{
	struct path_key k = { parent, key };
	uint64_t hash = node_hash(parent, key);
	struct pathmerge_node *p, *nd;
	uint32_t slot, i;

	*added = false;
	if (!m->nodes || hashindex_reserve(&m->index))
		return 0;
	slot = hashindex_slot(&m->index, hash, node_eq, m, &k);
	if (m->index.val[slot])
		return m->index.val[slot] - 1;
	if (m->n == m->cap) {
		uint32_t cap = m->cap * 2;

		if (cap > m->max || !(nd = realloc(m->nodes, cap * sizeof(*nd))))
			return 0;
		m->nodes = nd;
		m->cap = cap;
	}
	i = m->n++;
	nd = &m->nodes[i];
	memset(nd, 0, sizeof(*nd));
	nd->key = key;
	nd->parent = parent;
	p = &m->nodes[parent];
	if (m->flags & PATHMERGE_NEWEST_FIRST) {
		nd->next_sibling = p->first_child;
		p->first_child = i;
		if (!p->last_child)
			p->last_child = i;
	} else {
		if (p->last_child)
			m->nodes[p->last_child].next_sibling = i;
		else
			p->first_child = i;
		p->last_child = i;
	}
	p->nchildren++;
	hashindex_put(&m->index, slot, hash, i);
	*added = true;
	return i;
}
