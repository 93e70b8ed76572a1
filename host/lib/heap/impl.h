/* Internals of the heap state builder shared by heap.c and heap/check.c;
 * nothing else includes this. */
#ifndef LP_HEAP_IMPL_H
#define LP_HEAP_IMPL_H

#include <stdint.h>

#include "host/lib/heap/blocktree.h"
#include "host/lib/heap/heap.h"

/* A recently released block, for naming double frees with both stacks. */
struct heap_freed {
	uint64_t ptr, size, alloc_ns, free_ns;
	uint32_t site, stack;
	uint32_t free_site, free_stack, free_tid;
	uint8_t op, free_op;
};

/* Counts an illegal release of kind by release_op (b: the block concerned,
 * NULL for none); returns the record to fill in for a new one, NULL for a
 * repeat or over HEAP_ILLEGAL_MAX. */
struct heap_illegal *heapcheck_illegal(struct heap *h, const struct heap_proc *p, const struct heap_op *op,
                                       enum heap_illegal_kind kind, uint8_t release_op, const struct heap_block *b);
/* Counts (and keeps, up to HEAP_OVERLAPS_MAX) the new block of op
 * overlapping the live block old. */
void heapcheck_overlap(struct heap *h, const struct heap_proc *p, const struct heap_op *op,
                       const struct heap_block *old);
/* Remembers that b was released by op (ring of HEAP_FREED_MAX per process). */
void heapcheck_freed_push(struct heap *h, struct heap_proc *p, const struct heap_block *b, const struct heap_op *op,
                          uint8_t release_op);
/* The latest remembered release of a block starting at ptr, or NULL. */
const struct heap_freed *heapcheck_freed_find(const struct heap_proc *p, uint64_t ptr);

#endif
