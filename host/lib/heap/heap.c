/* The heap state builder (see heap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/trend.h"
#include "host/lib/heap/blocktree.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/impl.h"
#include "host/lib/util/hashindex.h"
#include "layerprof/format.h"

/* Grows an array of items of `size` bytes to hold one more. */
static int grow(void **arr, uint32_t *cap, uint32_t n, size_t size, uint32_t max)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	if (n >= max)
		return -ENOSPC;
	ncap = *cap ? 2 * *cap : 64;
	if (ncap > max)
		ncap = max;
	p = realloc(*arr, (size_t)ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* ---- sites, functions, stacks --------------------------------------- */

static bool site_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct heap *h = ctx;
	return !strcmp(h->sites[item].key, key);
}

static bool fn_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct heap *h = ctx;
	return !strcmp(h->fns[item].name, key);
}

struct stack_key {
	uint32_t image, n;
	const uint64_t *ips;
};

static bool stack_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct heap *h = ctx;
	const struct heap_stack *s = &h->stacks[item];
	const struct stack_key *k = key;

	return s->image == k->image && s->n == k->n && !memcmp(s->ips, k->ips, k->n * sizeof(*k->ips));
}

static void counts_init(struct heap *h, struct heap_counts *c)
{
	memset(c, 0, sizeof(*c));
	c->gen = h->peak_gen;
}

static uint32_t fn_get(struct heap *h, const char *name)
{
	uint64_t hash = hashindex_bytes(name, strlen(name), 1);
	struct heap_fn *f;
	uint32_t slot;

	if (hashindex_reserve(&h->fn_idx))
		goto oom;
	slot = hashindex_slot(&h->fn_idx, hash, fn_eq, h, name);
	if (h->fn_idx.val[slot])
		return h->fn_idx.val[slot] - 1;
	if (grow((void **)&h->fns, &h->fns_cap, h->nfns, sizeof(*h->fns), HEAP_SITES_MAX))
		goto oom;
	f = &h->fns[h->nfns];
	f->name = strdup(name);
	if (!f->name)
		goto oom;
	counts_init(h, &f->c);
	hashindex_put(&h->fn_idx, slot, hash, h->nfns);
	return h->nfns++;
oom:
	h->oom = true;
	return 0;
}

uint32_t heap_site(struct heap *h, const char *key, const char *function, const char *file, unsigned line)
{
	uint64_t hash = hashindex_bytes(key, strlen(key), 0);
	struct heap_site *s;
	uint32_t slot, fn;

	if (hashindex_reserve(&h->site_idx))
		goto oom;
	slot = hashindex_slot(&h->site_idx, hash, site_eq, h, key);
	if (h->site_idx.val[slot])
		return h->site_idx.val[slot] - 1;
	fn = fn_get(h, function ? function : "[unknown]");
	if (h->oom || grow((void **)&h->sites, &h->sites_cap, h->nsites, sizeof(*h->sites), HEAP_SITES_MAX))
		goto oom;
	s = &h->sites[h->nsites];
	memset(s, 0, sizeof(*s));
	s->key = strdup(key);
	s->function = strdup(function ? function : "[unknown]");
	s->file = file ? strdup(file) : NULL;
	if (!s->key || !s->function || (file && !s->file)) {
		free(s->key);
		free(s->function);
		free(s->file);
		goto oom;
	}
	s->line = line;
	s->fn = fn;
	counts_init(h, &s->c);
	hashindex_put(&h->site_idx, slot, hash, h->nsites);
	return h->nsites++;
oom:
	h->oom = true;
	return HEAP_SITE_UNKNOWN;
}

uint32_t heap_stack(struct heap *h, uint32_t image, const uint64_t *ips, uint32_t n)
{
	struct stack_key k = { image, n, ips };
	uint64_t hash;
	struct heap_stack *s;
	uint32_t slot;

	if (!n)
		return 0;
	hash = hashindex_bytes(ips, n * sizeof(*ips), image);
	if (hashindex_reserve(&h->stack_idx))
		goto oom;
	slot = hashindex_slot(&h->stack_idx, hash, stack_eq, h, &k);
	if (h->stack_idx.val[slot])
		return h->stack_idx.val[slot] - 1;
	if (grow((void **)&h->stacks, &h->stacks_cap, h->nstacks, sizeof(*h->stacks), HEAP_STACKS_MAX))
		goto oom;
	s = &h->stacks[h->nstacks];
	s->ips = malloc(n * sizeof(*ips));
	if (!s->ips)
		goto oom;
	memcpy(s->ips, ips, n * sizeof(*ips));
	s->image = image;
	s->n = n;
	s->hash = hash;
	hashindex_put(&h->stack_idx, slot, hash, h->nstacks);
	return h->nstacks++;
oom:
	h->oom = true;
	return 0;
}

/* ---- processes ------------------------------------------------------- */

static bool proc_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct heap *h = ctx;
	return h->procs[item].image == *(const uint32_t *)key;
}

static bool pid_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct heap *h = ctx;
	return h->procs[item].pid == *(const uint32_t *)key;
}

struct heap_proc *heap_proc_find(const struct heap *h, uint32_t image)
{
	int64_t i = hashindex_get(&h->proc_idx, hashindex_u64(image), proc_eq, h, &image);

	return i < 0 ? NULL : &h->procs[i];
}

/* The pid's current image: the last one started. */
static struct heap_proc *pid_current(struct heap *h, uint32_t pid)
{
	int64_t i = hashindex_get(&h->pid_idx, hashindex_u64(pid), pid_eq, h, &pid);

	return i < 0 ? NULL : &h->procs[i];
}

static int pid_set(struct heap *h, uint32_t pid, uint32_t item)
{
	uint64_t hash = hashindex_u64(pid);
	uint32_t slot;

	if (hashindex_reserve(&h->pid_idx))
		return -ENOMEM;
	slot = hashindex_slot(&h->pid_idx, hash, pid_eq, h, &pid);
	if (h->pid_idx.val[slot])
		h->pid_idx.val[slot] = item + 1;
	else
		hashindex_put(&h->pid_idx, slot, hash, item);
	return 0;
}

/* ---- counters and growth samples ------------------------------------- */

/* The sample of c as things stand: the bytes its sites hold in processes
 * still running, and in the last ones to exit (so that a program's own
 * exit at the end of its trace is no drop). */
static uint64_t series_value(const struct heap_counts *c)
{
	return c->live_bytes - c->unfreed_bytes + c->held_bytes;
}

/* Merges neighbouring sample intervals of c: the value at the end of an
 * interval pair is the second's; intervals not written hold the value as
 * it stands. */
static void series_halve(struct heap_counts *c)
{
	uint32_t k, last = c->series_last;

	for (k = 0; 2 * k < last; k++)
		c->series[k] = 2 * k + 1 < last ? c->series[2 * k + 1] : series_value(c);
	c->series_last = (last + 1) / 2;
}

/* The sample interval of time ns, merging intervals when it is past the
 * last one. */
static uint32_t series_index(struct heap *h, uint64_t ns)
{
	uint64_t idx = ns > h->first_ns ? (ns - h->first_ns) / h->step_ns : 0;
	uint32_t i;

	while (idx >= HEAP_SERIES_LEN) {
		for (i = 0; i < h->nsites; i++)
			series_halve(&h->sites[i].c);
		for (i = 0; i < h->nfns; i++)
			series_halve(&h->fns[i].c);
		h->step_ns *= 2;
		h->series_n = (h->series_n + 1) / 2;
		idx = (ns - h->first_ns) / h->step_ns;
	}
	if (idx + 1 > h->series_n)
		h->series_n = (uint32_t)idx + 1;
	return (uint32_t)idx;
}

/* The samples of c up to interval idx, before a change there (operations
 * out of time order land in the latest interval): returns the interval
 * the change goes to. */
static uint32_t series_upto(struct heap_counts *c, uint32_t idx)
{
	uint32_t j;

	if (c->series_last && idx < c->series_last - 1)
		idx = c->series_last - 1;
	for (j = c->series_last; j < idx; j++)
		c->series[j] = series_value(c);
	return idx;
}

/* Changes c's live count at ns (interval idx) by a block of p; when p has
 * exited (late: see live_change) its unfreed count as well. */
static void counts_live(struct heap *h, struct heap_counts *c, uint32_t idx, uint64_t ns, int64_t dobj, int64_t dbytes,
                        const struct heap_proc *p)
{
	/* the first change since the last global peak: until now c was as it
	 * was at that peak */
	if (c->gen != h->peak_gen) {
		c->at_peak_objects = c->live_objects;
		c->at_peak_bytes = c->live_bytes;
		c->gen = h->peak_gen;
	}
	idx = series_upto(c, idx);
	c->live_objects += (uint64_t)dobj;
	c->live_bytes += (uint64_t)dbytes;
	if (p->exited) {
		c->unfreed_objects += (uint64_t)dobj;
		c->unfreed_bytes += (uint64_t)dbytes;
		if (p->held)
			c->held_bytes += (uint64_t)dbytes;
	}
	if (c->live_bytes > c->peak_bytes) {
		c->peak_bytes = c->live_bytes;
		c->peak_objects = c->live_objects;
		c->peak_ns = ns;
	}
	c->series[idx] = series_value(c);
	c->series_last = idx + 1;
}

/* A block of process p that exits at interval idx: it stays live, and is
 * unfreed at exit from now on. */
static void counts_exit(struct heap_counts *c, uint32_t idx, uint64_t bytes, const struct heap_proc *p)
{
	idx = series_upto(c, idx);
	c->unfreed_objects++;
	c->unfreed_bytes += bytes;
	if (p->held)
		c->held_bytes += bytes;
	c->series[idx] = series_value(c);
	c->series_last = idx + 1;
}

/* A block enters or leaves the live state of p (dir +1 / -1).  In a
 * process that exited already (an operation of another of its threads
 * that came after the exit in time order) the block is also one more or
 * one fewer unfreed at exit: the unfreed blocks are always the live blocks
 * of the processes that exited. */
static void live_change(struct heap *h, struct heap_proc *p, const struct heap_block *b, int dir, uint32_t idx,
                        uint64_t ns)
{
	struct heap_site *s = &h->sites[b->site];
	int64_t bytes = dir * (int64_t)b->size;

	counts_live(h, &s->c, idx, ns, dir, bytes, p);
	counts_live(h, &h->fns[s->fn].c, idx, ns, dir, bytes, p);
	p->live_objects += (uint64_t)(int64_t)dir;
	p->live_bytes += (uint64_t)bytes;
	h->live_objects += (uint64_t)(int64_t)dir;
	h->live_bytes += (uint64_t)bytes;
	if (p->exited) {
		p->unfreed_objects += (uint64_t)(int64_t)dir;
		p->unfreed_bytes += (uint64_t)bytes;
		h->unfreed_objects += (uint64_t)(int64_t)dir;
		h->unfreed_bytes += (uint64_t)bytes;
		if (ns > p->end_ns)
			p->end_ns = ns;
	}
	if (p->live_bytes > p->peak_bytes) {
		p->peak_bytes = p->live_bytes;
		p->peak_ns = ns;
	}
}

static void global_peak(struct heap *h, uint64_t ns)
{
	if (h->live_bytes > h->peak_bytes) {
		h->peak_bytes = h->live_bytes;
		h->peak_objects = h->live_objects;
		h->peak_ns = ns;
		h->peak_gen++;
	}
}

/* ---- processes: start, fork, exec, exit ------------------------------ */

static struct heap_proc *proc_new(struct heap *h, uint32_t image, uint32_t pid, uint64_t ns)
{
	uint64_t hash = hashindex_u64(image);
	struct heap_proc *p;
	uint32_t slot;

	if (hashindex_reserve(&h->proc_idx) ||
	    grow((void **)&h->procs, &h->procs_cap, h->nprocs, sizeof(*h->procs), HEAP_PROCS_MAX)) {
		h->oom = true;
		return NULL;
	}
	slot = hashindex_slot(&h->proc_idx, hash, proc_eq, h, &image);
	p = &h->procs[h->nprocs];
	memset(p, 0, sizeof(*p));
	p->image = image;
	p->pid = pid;
	p->start_ns = ns;
	hashindex_put(&h->proc_idx, slot, hash, h->nprocs);
	h->nprocs++;
	h->running++;
	return p;
}

struct tree_ctx {
	struct heap *h;
	struct heap_proc *p;
	uint32_t idx;
	uint64_t ns;
	int dir;
};

static int block_live_cb(void *ctx, const struct heap_block *b)
{
	struct tree_ctx *c = ctx;

	live_change(c->h, c->p, b, c->dir, c->idx, c->ns);
	return 0;
}

static int block_unfreed_cb(void *ctx, const struct heap_block *b)
{
	struct tree_ctx *c = ctx;
	struct heap_site *s = &c->h->sites[b->site];

	counts_exit(&s->c, c->idx, b->size, c->p);
	counts_exit(&c->h->fns[s->fn].c, c->idx, b->size, c->p);
	return 0;
}

int heap_proc_start(struct heap *h, uint32_t image, uint32_t pid, uint64_t ns, uint32_t parent_pid, unsigned flags)
{
	struct heap_proc *p, *prev, *parent;
	struct tree_ctx c = { .h = h, .ns = ns };
	uint32_t item;

	if (heap_proc_find(h, image))
		return 0;
	if (!h->ops && !h->nprocs)
		h->first_ns = ns;
	c.idx = series_index(h, ns);
	p = proc_new(h, image, pid, ns);
	if (!p)
		return -ENOMEM;
	item = (uint32_t)(p - h->procs);
	prev = pid_current(h, pid);
	if (prev && (flags & HEAP_START_EXEC) && !prev->execed && !prev->exited) {
		/* exec: the old image's address space is gone (an image that
		 * exited execs nothing: its pid was given to a new process) */
		h->dropped_at_exec += prev->live_objects;
		c.p = prev;
		c.dir = -1;
		blocktree_foreach(prev->root, block_live_cb, &c);
		blocktree_free(h->pool, &prev->root);
		prev->execed = true;
		prev->end_ns = ns;
		h->running--;
	}
	parent = parent_pid ? pid_current(h, parent_pid) : NULL;
	if (parent && !parent->execed) {
		p->has_parent = true;
		p->parent_image = parent->image;
		if (blocktree_clone(h->pool, parent->root, &p->root)) {
			h->oom = true;
		} else {
			c.p = p;
			c.dir = 1;
			blocktree_foreach(p->root, block_live_cb, &c);
			p->inherited_objects = p->live_objects;
			p->inherited_bytes = p->live_bytes;
			global_peak(h, ns);
		}
	}
	/* the pid's current image, the one a fork copies */
	if ((!prev || prev->exited || prev->execed || (flags & HEAP_START_EXEC) || parent_pid) &&
	    pid_set(h, pid, item)) {
		h->oom = true;
		return -ENOMEM;
	}
	return 0;
}

void heap_proc_exit(struct heap *h, uint32_t image, uint64_t ns, uint32_t status)
{
	struct heap_proc *p = heap_proc_find(h, image);
	struct tree_ctx c = { .h = h, .ns = ns };

	if (!p || p->exited)
		return;
	if (!p->execed) {
		/* the last one running: the program's end, not a child's */
		p->held = h->running == 1;
		h->running--;
	}
	p->exited = true;
	p->exit_status = status;
	p->end_ns = ns;
	p->unfreed_objects = p->live_objects;
	p->unfreed_bytes = p->live_bytes;
	h->unfreed_objects += p->live_objects;
	h->unfreed_bytes += p->live_bytes;
	c.p = p;
	c.idx = series_index(h, ns);
	blocktree_foreach(p->root, block_unfreed_cb, &c);
}

/* ---- operations ------------------------------------------------------ */

int heap_op_family(uint8_t op)
{
	switch (op) {
	case LP_MEM_MALLOC:
	case LP_MEM_CALLOC:
	case LP_MEM_REALLOC:
	case LP_MEM_ALIGNED:
	case LP_MEM_FREE:
		return 1;
	case LP_MEM_NEW:
	case LP_MEM_DELETE:
		return 2;
	case LP_MEM_NEW_ARRAY:
	case LP_MEM_DELETE_ARRAY:
		return 3;
	default:
		return 0;
	}
}

static void block_release(struct heap *h, struct heap_proc *p, const struct heap_op *op, uint8_t release_op,
                          uint64_t ptr, uint32_t idx)
{
	struct heap_block *b;
	struct heap_illegal *il;
	const struct heap_freed *f;

	if (!ptr) {
		h->null_releases++;
		return;
	}
	if (op->flags & LP_MEM_KEPT)
		h->kept_releases++;
	b = blocktree_find(p->root, ptr);
	if (b) {
		if (heap_op_family(b->op) != heap_op_family(release_op))
			heapcheck_illegal(h, p, op, HEAP_MISMATCH, release_op, b);
		if (op->flags & LP_MEM_KEPT)
			return; /* libc never saw it: the block stays */
		blocktree_remove(&p->root, ptr);
		live_change(h, p, b, -1, idx, op->ns);
		h->sites[b->site].c.frees++;
		h->sites[b->site].c.bytes_freed += b->size;
		h->fns[h->sites[b->site].fn].c.frees++;
		h->fns[h->sites[b->site].fn].c.bytes_freed += b->size;
		h->frees++;
		h->bytes_freed += b->size;
		heapcheck_freed_push(h, p, b, op, release_op);
		blockpool_put(h->pool, b);
		return;
	}
	b = blocktree_containing(p->root, ptr);
	if (b) {
		heapcheck_illegal(h, p, op, HEAP_INTERIOR_POINTER, release_op, b);
		return;
	}
	f = heapcheck_freed_find(p, ptr);
	if (f && f->free_ns < h->resumed_ns && op->ns >= h->resumed_ns) {
		/* released before a pause in tracing: maybe allocated again
		 * in it */
		h->released_unknown++;
		if (release_op == LP_MEM_REALLOC)
			h->reallocs_unknown++;
		return;
	}
	if (f) {
		struct heap_block old = { .ptr = f->ptr,
			                  .size = f->size,
			                  .ns = f->alloc_ns,
			                  .site = f->site,
			                  .stack = f->stack,
			                  .op = f->op };

		il = heapcheck_illegal(h, p, op, HEAP_DOUBLE_FREE, release_op, &old);
		if (il) {
			il->has_free = true;
			il->free_op = f->free_op;
			il->free_ns = f->free_ns;
			il->free_site = f->free_site;
			il->free_stack = f->free_stack;
			il->free_tid = f->free_tid;
		}
		return;
	}
	if (h->partial || (op->flags & LP_MEM_KNOWN)) {
		/* allocated before the stream began, most likely; or the
		 * runtime's table held it (released while it was listed) */
		h->released_unknown++;
		if (release_op == LP_MEM_REALLOC)
			h->reallocs_unknown++;
		return;
	}
	heapcheck_illegal(h, p, op, HEAP_NEVER_ALLOCATED, release_op, NULL);
}

/* The end of a heap listing: a complete one makes the state whole (a
 * release of a block not live is illegal again). */
static void listing_end(struct heap *h, const struct heap_op *op)
{
	h->listings++;
	if (op->flags & LP_MEM_INCOMPLETE) {
		h->listings_incomplete++;
		heap_set_partial(h, op->ns);
	} else if (!h->listings_incomplete) {
		h->partial = false;
		h->partial_since_ns = 0;
	}
}

/* A new live block.  One listed by the runtime (LP_MEM_BEFORE: from before
 * tracing began) that is live here already stays as it is; else it joins
 * the state without counting as an allocation. */
static void block_alloc(struct heap *h, struct heap_proc *p, const struct heap_op *op, uint32_t idx)
{
	struct heap_site *s = &h->sites[op->site];
	bool listed = (op->flags & LP_MEM_BEFORE) != 0;
	struct heap_block *b, *old;
	uint64_t end;

	if ((op->flags & LP_MEM_FAILED) || !op->ptr) {
		if (listed)
			return;
		s->c.failed++;
		h->fns[s->fn].c.failed++;
		h->failed++;
		return;
	}
	if (listed && (b = blocktree_find(p->root, op->ptr)) && b->size == op->size)
		return;
	end = op->ptr + (op->size ? op->size : 1);
	if (end < op->ptr)
		end = UINT64_MAX;
	/* every live block the new one overlaps is gone without a release;
	 * one a listed block overlaps, or one from before a pause in tracing,
	 * was released while tracing was off */
	while ((old = blocktree_floor(p->root, end - 1)) && heap_block_end(old) > op->ptr) {
		if (listed)
			h->listed_dropped++;
		else if (old->ns < h->resumed_ns && op->ns >= h->resumed_ns)
			h->released_unseen++;
		else
			heapcheck_overlap(h, p, op, old);
		blocktree_remove(&p->root, old->ptr);
		live_change(h, p, old, -1, idx, op->ns);
		blockpool_put(h->pool, old);
	}
	b = blockpool_get(h->pool);
	if (!b) {
		h->oom = true;
		return;
	}
	b->ptr = op->ptr;
	b->size = op->size;
	b->ns = op->ns;
	b->site = op->site;
	b->stack = op->stack;
	b->op = op->op;
	blocktree_insert(&p->root, b);
	if (listed) {
		s->c.listed++;
		s->c.listed_bytes += op->size;
		h->fns[s->fn].c.listed++;
		h->fns[s->fn].c.listed_bytes += op->size;
		h->listed_objects++;
		h->listed_bytes += op->size;
	} else {
		s->c.allocs++;
		s->c.bytes_allocated += op->size;
		h->fns[s->fn].c.allocs++;
		h->fns[s->fn].c.bytes_allocated += op->size;
		h->allocs++;
		h->bytes_allocated += op->size;
	}
	live_change(h, p, b, 1, idx, op->ns);
}

static void fold(struct heap *h, const struct heap_op *op)
{
	struct heap_counts *c[2] = { &h->sites[op->site].c, &h->fns[h->sites[op->site].fn].c };
	int i;

	for (i = 0; i < 2; i++) {
		c[i]->allocs += op->count;
		c[i]->frees += op->count;
		c[i]->bytes_allocated += op->bytes;
		c[i]->bytes_freed += op->bytes;
		c[i]->folded += op->count;
		c[i]->folded_bytes += op->bytes;
	}
	h->allocs += op->count;
	h->frees += op->count;
	h->bytes_allocated += op->bytes;
	h->bytes_freed += op->bytes;
	h->folded += op->count;
	h->folded_bytes += op->bytes;
	h->folds++;
}

int heap_apply(struct heap *h, uint32_t image, uint32_t pid, const struct heap_op *in)
{
	struct heap_op op = *in;
	struct heap_proc *p = heap_proc_find(h, image);
	uint32_t idx;

	if (!p) {
		if (heap_proc_start(h, image, pid, op.ns, 0, 0))
			return -ENOMEM;
		p = heap_proc_find(h, image);
	}
	if (!h->ops && op.ns < h->first_ns)
		h->first_ns = op.ns;
	if (op.ns < h->last_ns)
		h->out_of_order++;
	else
		h->last_ns = op.ns;
	if (op.ns > h->now_ns)
		h->now_ns = op.ns;
	h->ops++;
	p->ops++;
	if (op.site >= h->nsites)
		op.site = HEAP_SITE_UNKNOWN;
	if (op.stack >= h->nstacks)
		op.stack = 0;
	if (op.stack && !h->sites[op.site].stack)
		h->sites[op.site].stack = op.stack;
	idx = series_index(h, op.ns);
	switch (op.op) {
	case LP_MEM_MALLOC:
	case LP_MEM_CALLOC:
	case LP_MEM_ALIGNED:
	case LP_MEM_NEW:
	case LP_MEM_NEW_ARRAY:
		block_alloc(h, p, &op, idx);
		break;
	case LP_MEM_REALLOC:
		if (op.flags & LP_MEM_FAILED) {
			block_alloc(h, p, &op, idx); /* counts the failure; old stays */
			break;
		}
		if (op.old)
			block_release(h, p, &op, LP_MEM_REALLOC, op.old, idx);
		if (op.ptr || !op.old)
			block_alloc(h, p, &op, idx);
		break;
	case LP_MEM_FREE:
	case LP_MEM_DELETE:
	case LP_MEM_DELETE_ARRAY:
		block_release(h, p, &op, op.op, op.ptr, idx);
		break;
	case LP_MEM_FOLD:
		fold(h, &op);
		break;
	case LP_MEM_BASELINE:
		listing_end(h, &op);
		break;
	default:
		break;
	}
	global_peak(h, op.ns);
	return h->oom ? -ENOMEM : 0;
}

/* ---- derived values and queries -------------------------------------- */

void heap_resumed(struct heap *h, uint64_t ns)
{
	if (ns > h->resumed_ns)
		h->resumed_ns = ns;
}

void heap_set_partial(struct heap *h, uint64_t ns)
{
	if (!h->partial || (ns && (!h->partial_since_ns || ns < h->partial_since_ns)))
		h->partial_since_ns = ns;
	h->partial = true;
}

void heap_lost(struct heap *h, uint32_t image, uint64_t ns, uint64_t count)
{
	struct heap_proc *p = heap_proc_find(h, image);

	h->lost += count;
	if (p)
		p->lost += count;
	(void)ns;
}

void heap_advance(struct heap *h, uint64_t ns)
{
	if (h->ops && ns > h->last_ns) {
		series_index(h, ns);
		if (ns > h->now_ns)
			h->now_ns = ns;
	}
}

static void counts_settle(const struct heap *h, struct heap_counts *c)
{
	uint32_t j;

	if (c->gen != h->peak_gen) {
		c->at_peak_objects = c->live_objects;
		c->at_peak_bytes = c->live_bytes;
		c->gen = h->peak_gen;
	}
	for (j = c->series_last; j < h->series_n; j++)
		c->series[j] = series_value(c);
	if (c->series_last < h->series_n)
		c->series_last = h->series_n;
}

void heap_settle(struct heap *h)
{
	uint32_t i;

	for (i = 0; i < h->nsites; i++)
		counts_settle(h, &h->sites[i].c);
	for (i = 0; i < h->nfns; i++)
		counts_settle(h, &h->fns[i].c);
}

void heap_growth(const struct heap *h, const struct heap_counts *c, struct heap_growth *out)
{
	uint32_t n = h->series_n < c->series_last ? h->series_n : c->series_last, start = n / 2, i;
	double t[HEAP_SERIES_LEN];
	struct trend tr;

	memset(out, 0, sizeof(*out));
	out->p_value = 1;
	out->samples = n - start;
	if (out->samples < HEAP_GROWTH_MIN_SAMPLES || (uint64_t)out->samples * h->step_ns < HEAP_GROWTH_MIN_NS)
		return;
	/* each sample at the end of its interval; the last one, still going,
	 * now */
	for (i = start; i < n; i++)
		t[i - start] = (double)(i + 1) * (double)h->step_ns;
	if (h->now_ns > h->first_ns && (double)(h->now_ns - h->first_ns) < t[n - 1 - start])
		t[n - 1 - start] = (double)(h->now_ns - h->first_ns);
	trend_analyse(c->series + start, t, out->samples, &tr);
	out->p_value = tr.p_rising;
	out->confidence = 1 - tr.p_rising;
	out->rate_bps = tr.slope * 1e9;
	out->growing = tr.p_rising < HEAP_GROWTH_P && tr.slope > 0;
}

struct foreach_ctx {
	int (*cb)(void *ctx, uint64_t ptr, uint64_t size, uint64_t ns, uint32_t site, uint32_t stack, uint8_t op);
	void *ctx;
};

static int foreach_cb(void *ctx, const struct heap_block *b)
{
	struct foreach_ctx *c = ctx;

	return c->cb(c->ctx, b->ptr, b->size, b->ns, b->site, b->stack, b->op);
}

int heap_foreach_block(const struct heap_proc *p,
                       int (*cb)(void *ctx, uint64_t ptr, uint64_t size, uint64_t ns, uint32_t site, uint32_t stack,
                                 uint8_t op),
                       void *ctx)
{
	struct foreach_ctx c = { cb, ctx };

	return blocktree_foreach(p->root, foreach_cb, &c);
}

bool heap_find_block(const struct heap_proc *p, uint64_t addr, uint64_t *ptr, uint64_t *size, uint32_t *site)
{
	const struct heap_block *b = blocktree_containing(p->root, addr);

	if (!b)
		return false;
	*ptr = b->ptr;
	*size = b->size;
	*site = b->site;
	return true;
}

/* ---- lifecycle ------------------------------------------------------- */

int heap_init(struct heap *h)
{
	memset(h, 0, sizeof(*h));
	h->step_ns = HEAP_SERIES_STEP_NS;
	h->pool = calloc(1, sizeof(struct blockpool));
	h->illegal = calloc(HEAP_ILLEGAL_MAX, sizeof(*h->illegal));
	h->overlaps = calloc(HEAP_OVERLAPS_MAX, sizeof(*h->overlaps));
	h->stacks = calloc(64, sizeof(*h->stacks));
	if (!h->pool || !h->illegal || !h->overlaps || !h->stacks)
		return -ENOMEM;
	h->stacks_cap = 64;
	h->nstacks = 1; /* the empty stack */
	heap_site(h, "[unknown]", "[unknown]", NULL, 0);
	return h->oom ? -ENOMEM : 0;
}

void heap_release(struct heap *h)
{
	uint32_t i;

	for (i = 0; i < h->nsites; i++) {
		free(h->sites[i].key);
		free(h->sites[i].function);
		free(h->sites[i].file);
	}
	for (i = 0; i < h->nfns; i++)
		free(h->fns[i].name);
	for (i = 1; i < h->nstacks; i++)
		free(h->stacks[i].ips);
	for (i = 0; i < h->nprocs; i++)
		free(h->procs[i].freed);
	if (h->pool)
		blockpool_release(h->pool);
	free(h->pool);
	free(h->sites);
	free(h->fns);
	free(h->stacks);
	free(h->procs);
	free(h->illegal);
	free(h->overlaps);
	hashindex_release(&h->site_idx);
	hashindex_release(&h->fn_idx);
	hashindex_release(&h->stack_idx);
	hashindex_release(&h->proc_idx);
	hashindex_release(&h->pid_idx);
	hashindex_release(&h->illegal_idx);
	memset(h, 0, sizeof(*h));
}
