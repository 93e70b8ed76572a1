/* The heap state's findings: illegal releases (repeats counted once per
 * kind, operations and sites), overlaps, and the recently released blocks
 * that name a double free's first release (see heap.h, heap/impl.h). */
#include <stdlib.h>
#include <string.h>

#include "host/lib/heap/blocktree.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/impl.h"
#include "host/lib/util/hashindex.h"
#include "layerprof/format.h"

struct illegal_key {
	enum heap_illegal_kind kind;
	uint8_t op, alloc_op;
	bool kept, after_loss;
	uint32_t site, alloc_site;
};

static bool illegal_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct heap *h = ctx;
	const struct heap_illegal *i = &h->illegal[item];
	const struct illegal_key *k = key;

	return i->kind == k->kind && i->op == k->op && i->alloc_op == k->alloc_op && i->kept == k->kept &&
	       i->after_loss == k->after_loss && i->site == k->site && i->alloc_site == k->alloc_site;
}

/* Counts an illegal release; returns the record to fill for a new one,
 * NULL for a repeat or over the bound. */
struct heap_illegal *heapcheck_illegal(struct heap *h, const struct heap_proc *p, const struct heap_op *op,
                                       enum heap_illegal_kind kind, uint8_t release_op, const struct heap_block *b)
{
	struct illegal_key k = { .kind = kind,
		                 .op = release_op,
		                 .alloc_op = b ? b->op : 0,
		                 .kept = (op->flags & LP_MEM_KEPT) != 0,
		                 .after_loss = p->lost > 0,
		                 .site = op->site,
		                 .alloc_site = b ? b->site : 0 };
	uint64_t hash = hashindex_bytes(&k.site, sizeof(k.site),
	                                hashindex_u64((uint64_t)kind << 32 | (uint64_t)k.op << 16 |
	                                              (uint64_t)k.alloc_op << 8 | k.kept << 1 | k.after_loss)) ^
	                hashindex_u64(k.alloc_site);
	struct heap_illegal *i;
	uint32_t slot;

	h->illegal_counts[kind]++;
	h->illegal_after_loss += p->lost > 0;
	if (hashindex_reserve(&h->illegal_idx)) {
		h->oom = true;
		return NULL;
	}
	slot = hashindex_slot(&h->illegal_idx, hash, illegal_eq, h, &k);
	if (h->illegal_idx.val[slot]) {
		h->illegal[h->illegal_idx.val[slot] - 1].count++;
		return NULL;
	}
	if (h->nillegal >= HEAP_ILLEGAL_MAX) {
		h->illegal_dropped++;
		return NULL;
	}
	i = &h->illegal[h->nillegal];
	memset(i, 0, sizeof(*i));
	i->kind = kind;
	i->op = release_op;
	i->kept = k.kept;
	i->after_loss = k.after_loss;
	i->count = 1;
	i->ns = op->ns;
	i->ptr = release_op == LP_MEM_REALLOC ? op->old : op->ptr;
	i->pid = p->pid;
	i->image = p->image;
	i->tid = op->tid;
	i->site = op->site;
	i->stack = op->stack;
	if (b) {
		i->has_block = true;
		i->alloc_op = b->op;
		i->block_ptr = b->ptr;
		i->block_size = b->size;
		i->alloc_ns = b->ns;
		i->alloc_site = b->site;
		i->alloc_stack = b->stack;
	}
	hashindex_put(&h->illegal_idx, slot, hash, h->nillegal++);
	return i;
}

void heapcheck_overlap(struct heap *h, const struct heap_proc *p, const struct heap_op *op,
                       const struct heap_block *old)
{
	struct heap_overlap *o;

	h->overlap_count++;
	h->overlaps_after_loss += p->lost > 0;
	if (h->noverlaps >= HEAP_OVERLAPS_MAX)
		return;
	o = &h->overlaps[h->noverlaps++];
	o->after_loss = p->lost > 0;
	o->ns = op->ns;
	o->ptr = op->ptr;
	o->size = op->size;
	o->op = op->op;
	o->pid = p->pid;
	o->image = p->image;
	o->tid = op->tid;
	o->site = op->site;
	o->stack = op->stack;
	o->old_ptr = old->ptr;
	o->old_size = old->size;
	o->old_ns = old->ns;
	o->old_op = old->op;
	o->old_site = old->site;
	o->old_stack = old->stack;
}

void heapcheck_freed_push(struct heap *h, struct heap_proc *p, const struct heap_block *b, const struct heap_op *op,
                          uint8_t release_op)
{
	struct heap_freed *f;

	if (!p->freed) {
		p->freed = calloc(HEAP_FREED_MAX, sizeof(*p->freed));
		if (!p->freed)
			return; /* double frees of it will read as never allocated */
	}
	f = &p->freed[p->freed_head];
	p->freed_head = (p->freed_head + 1) % HEAP_FREED_MAX;
	if (p->nfreed < HEAP_FREED_MAX)
		p->nfreed++;
	f->ptr = b->ptr;
	f->size = b->size;
	f->alloc_ns = b->ns;
	f->site = b->site;
	f->stack = b->stack;
	f->op = b->op;
	f->free_ns = op->ns;
	f->free_site = op->site;
	f->free_stack = op->stack;
	f->free_tid = op->tid;
	f->free_op = release_op;
}

/* The latest remembered release of a block starting at ptr. */
const struct heap_freed *heapcheck_freed_find(const struct heap_proc *p, uint64_t ptr)
{
	uint32_t k;

	for (k = 1; p->freed && k <= p->nfreed; k++) {
		const struct heap_freed *f = &p->freed[(p->freed_head + HEAP_FREED_MAX - k) % HEAP_FREED_MAX];

		if (f->ptr == ptr)
			return f;
	}
	return NULL;
}

const char *heap_op_name(uint8_t op)
{
	static const char *const names[] = { "?",   "malloc", "calloc", "realloc",  "aligned_alloc", "free",
		                             "new", "new[]",  "delete", "delete[]", "fold" };

	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

const char *heap_illegal_name(enum heap_illegal_kind kind)
{
	static const char *const names[] = { "never_allocated", "double_free", "interior_pointer", "mismatch" };

	return (unsigned)kind < HEAP_ILLEGAL_KINDS ? names[kind] : "?";
}
