/* Live heap blocks of one address space, ordered by address: a treap
 * (binary search tree by address, heap-ordered by random priorities, so
 * O(log n) expected per operation) that answers "which block contains
 * address X" for interior pointers and overlaps.  Nodes come from a pool
 * shared by the trees of one heap.  Not thread-safe. */
#ifndef LP_BLOCKTREE_H
#define LP_BLOCKTREE_H

#include <stdint.h>

struct heap_block {
	uint64_t ptr;  /* first byte; unique within a tree */
	uint64_t size; /* bytes asked for; a block of 0 bytes still holds ptr */
	uint64_t ns;   /* allocation time */
	uint32_t site, stack;
	uint8_t op; /* enum lp_mem_op of the allocation */
	/* tree links, owned by blocktree */
	uint32_t prio;
	struct heap_block *l, *r;
};

/* One past the block's last byte (a block of 0 bytes covers ptr). */
static inline uint64_t heap_block_end(const struct heap_block *b)
{
	return b->ptr + (b->size ? b->size : 1);
}

struct blockpool_chunk;

/* Hands out nodes in chunks; freed nodes are reused.  Zero-initialise,
 * then blockpool_release frees every chunk (and so every tree). */
struct blockpool {
	struct blockpool_chunk *chunks;
	struct heap_block *free;
	uint64_t rng;
	uint64_t used; /* nodes handed out and not put back */
};

/* A node with a fresh priority and no links (other fields unset), or NULL
 * when memory runs out. */
struct heap_block *blockpool_get(struct blockpool *bp);
void blockpool_put(struct blockpool *bp, struct heap_block *b);
void blockpool_release(struct blockpool *bp);

/* Inserts b (its ptr must not be in the tree). */
void blocktree_insert(struct heap_block **root, struct heap_block *b);
/* Detaches and returns the block starting at ptr, or NULL. */
struct heap_block *blocktree_remove(struct heap_block **root, uint64_t ptr);
/* The block starting at ptr, or NULL. */
struct heap_block *blocktree_find(struct heap_block *root, uint64_t ptr);
/* The block with the greatest start <= addr / the least start >= addr. */
struct heap_block *blocktree_floor(struct heap_block *root, uint64_t addr);
struct heap_block *blocktree_ceil(struct heap_block *root, uint64_t addr);
/* The block containing addr (start <= addr < end), or NULL. */
struct heap_block *blocktree_containing(struct heap_block *root, uint64_t addr);
/* Copies the tree src into *out (nodes from bp).  Returns 0, or -ENOMEM
 * with *out freed and NULL. */
int blocktree_clone(struct blockpool *bp, const struct heap_block *src, struct heap_block **out);
/* Puts every node of *root back into bp; *root becomes NULL. */
void blocktree_free(struct blockpool *bp, struct heap_block **root);
/* Calls cb for each block in address order; stops at the first nonzero
 * return and returns it.  cb must not change the tree. */
int blocktree_foreach(const struct heap_block *root, int (*cb)(void *ctx, const struct heap_block *b), void *ctx);

#endif
