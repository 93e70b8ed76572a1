/* Live heap blocks ordered by address (see blocktree.h). */
#include <errno.h>
#include <stdlib.h>

#include "host/lib/heap/blocktree.h"

#define BLOCKPOOL_CHUNK 4096u

struct blockpool_chunk {
	struct blockpool_chunk *next;
	struct heap_block b[BLOCKPOOL_CHUNK];
};

static uint32_t pool_rand(struct blockpool *bp)
{
	/* xorshift64*: priorities only need to look random */
	uint64_t x = bp->rng ? bp->rng : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	bp->rng = x;
	return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}

struct heap_block *blockpool_get(struct blockpool *bp)
{
	struct heap_block *b;
	uint32_t i;

	if (!bp->free) {
		struct blockpool_chunk *c = malloc(sizeof(*c));

		if (!c)
			return NULL;
		c->next = bp->chunks;
		bp->chunks = c;
		for (i = BLOCKPOOL_CHUNK; i > 0; i--) {
			c->b[i - 1].l = bp->free;
			bp->free = &c->b[i - 1];
		}
	}
	b = bp->free;
	bp->free = b->l;
	b->l = b->r = NULL;
	b->prio = pool_rand(bp);
	bp->used++;
	return b;
}

void blockpool_put(struct blockpool *bp, struct heap_block *b)
{
	b->l = bp->free;
	bp->free = b;
	bp->used--;
}

void blockpool_release(struct blockpool *bp)
{
	while (bp->chunks) {
		struct blockpool_chunk *c = bp->chunks;

		bp->chunks = c->next;
		free(c);
	}
	bp->free = NULL;
	bp->used = 0;
}

/* Splits t into the blocks below key (*lo) and the others (*hi). */
static void split(struct heap_block *t, uint64_t key, struct heap_block **lo, struct heap_block **hi)
{
	while (t) {
		if (t->ptr < key) {
			*lo = t;
			lo = &t->r;
			t = t->r;
		} else {
			*hi = t;
			hi = &t->l;
			t = t->l;
		}
	}
	*lo = *hi = NULL;
}

/* Joins a and b, every block of a below every block of b. */
static struct heap_block *merge(struct heap_block *a, struct heap_block *b)
{
	struct heap_block *root = NULL, **link = &root;

	while (a && b) {
		if (a->prio > b->prio) {
			*link = a;
			link = &a->r;
			a = a->r;
		} else {
			*link = b;
			link = &b->l;
			b = b->l;
		}
	}
	*link = a ? a : b;
	return root;
}

void blocktree_insert(struct heap_block **root, struct heap_block *b)
{
	struct heap_block **link = root;

	/* down to where b's priority puts it, then b takes the subtree */
	while (*link && (*link)->prio >= b->prio)
		link = b->ptr < (*link)->ptr ? &(*link)->l : &(*link)->r;
	split(*link, b->ptr, &b->l, &b->r);
	*link = b;
}

struct heap_block *blocktree_remove(struct heap_block **root, uint64_t ptr)
{
	struct heap_block **link = root, *b;

	while (*link && (*link)->ptr != ptr)
		link = ptr < (*link)->ptr ? &(*link)->l : &(*link)->r;
	b = *link;
	if (!b)
		return NULL;
	*link = merge(b->l, b->r);
	b->l = b->r = NULL;
	return b;
}

struct heap_block *blocktree_find(struct heap_block *root, uint64_t ptr)
{
	while (root && root->ptr != ptr)
		root = ptr < root->ptr ? root->l : root->r;
	return root;
}

struct heap_block *blocktree_floor(struct heap_block *root, uint64_t addr)
{
	struct heap_block *best = NULL;

	while (root) {
		if (root->ptr <= addr) {
			best = root;
			root = root->r;
		} else {
			root = root->l;
		}
	}
	return best;
}

struct heap_block *blocktree_ceil(struct heap_block *root, uint64_t addr)
{
	struct heap_block *best = NULL;

	while (root) {
		if (root->ptr >= addr) {
			best = root;
			root = root->l;
		} else {
			root = root->r;
		}
	}
	return best;
}

struct heap_block *blocktree_containing(struct heap_block *root, uint64_t addr)
{
	struct heap_block *b = blocktree_floor(root, addr);

	return b && addr < heap_block_end(b) ? b : NULL;
}

/* Recursion depth is the tree's height: O(log n) expected for a treap. */
static struct heap_block *clone(struct blockpool *bp, const struct heap_block *src, int *err)
{
	struct heap_block *b;
	uint32_t prio;

	if (!src || *err)
		return NULL;
	b = blockpool_get(bp);
	if (!b) {
		*err = -ENOMEM;
		return NULL;
	}
	prio = b->prio;
	*b = *src;
	b->prio = src->prio ? src->prio : prio;
	b->l = clone(bp, src->l, err);
	b->r = clone(bp, src->r, err);
	return b;
}

void blocktree_free(struct blockpool *bp, struct heap_block **root)
{
	struct heap_block *t = *root;

	if (!t)
		return;
	blocktree_free(bp, &t->l);
	blocktree_free(bp, &t->r);
	blockpool_put(bp, t);
	*root = NULL;
}

int blocktree_clone(struct blockpool *bp, const struct heap_block *src, struct heap_block **out)
{
	int err = 0;

	*out = clone(bp, src, &err);
	if (err)
		blocktree_free(bp, out);
	return err;
}

int blocktree_foreach(const struct heap_block *root, int (*cb)(void *ctx, const struct heap_block *b), void *ctx)
{
	int r;

	if (!root)
		return 0;
	r = blocktree_foreach(root->l, cb, ctx);
	if (!r)
		r = cb(ctx, root);
	if (!r)
		r = blocktree_foreach(root->r, cb, ctx);
	return r;
}
