/* Feeds the heap state builder from the event walk (see heap/feed.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/heap/feed.h"
#include "host/lib/trace/symbolizer.h"

enum item_kind {
	ITEM_OP = 0,
	ITEM_START = 1,
	ITEM_FORK = 2,
	ITEM_EXIT = 3,
	ITEM_LOST = 4,
};

struct heapfeed_item {
	uint64_t ns, seq;
	uint32_t image, pid;
	uint64_t value; /* FORK: parent pid; EXIT: wait status; LOST: events */
	uint8_t kind;
	bool main_thread;
	uint64_t func; /* without a stack: the innermost instrumented function */
	struct heap_op op;
};

/* A resolved stack remembered in the walk's stack definition. */
#define CACHE_SET (1ull << 63)

int heapfeed_init(struct heapfeed *f, struct walk *w, struct heap *h)
{
	memset(f, 0, sizeof(*f));
	f->w = w;
	f->h = h;
	return 0;
}

void heapfeed_release(struct heapfeed *f)
{
	free(f->q);
	free(f->sites);
	memset(f, 0, sizeof(*f));
}

static bool item_before(const struct heapfeed_item *a, const struct heapfeed_item *b)
{
	return a->ns < b->ns || (a->ns == b->ns && a->seq < b->seq);
}

static uint32_t site_of(struct heapfeed *f, uint32_t image, uint32_t stack, uint64_t func);

static void apply(struct heapfeed *f, const struct heapfeed_item *it)
{
	if (f->stop_ns && it->ns > f->stop_ns) {
		f->stopped++;
		return;
	}
	if (it->ns < f->applied_ns)
		f->late++;
	else
		f->applied_ns = it->ns;
	if (!f->meta_seen) {
		char buf[32];

		/* a program attached to had run before: its older blocks are
		 * unknown (unless it lists them: a complete listing makes the
		 * state whole).  The trace's META came before any operation. */
		f->meta_seen = true;
		if (walk_meta(f->w, "attached", buf, sizeof(buf)) && !strcmp(buf, "1"))
			heap_set_partial(f->h, walk_meta(f->w, "start_monotonic_ns", buf, sizeof(buf))
			                           ? strtoull(buf, NULL, 10)
			                           : 0);
	}
	switch (it->kind) {
	case ITEM_OP: {
		struct heap_op op = it->op;

		op.site = site_of(f, it->image, op.stack, it->func);
		if (heap_apply(f->h, it->image, it->pid, &op))
			f->oom = true;
		break;
	}
	case ITEM_START:
	case ITEM_FORK:
		/* a process's main thread starting in a new image: exec */
		if (heap_proc_start(f->h, it->image, it->pid, it->ns, it->kind == ITEM_FORK ? (uint32_t)it->value : 0,
		                    it->kind == ITEM_START && it->main_thread ? HEAP_START_EXEC : 0))
			f->oom = true;
		break;
	case ITEM_EXIT:
		heap_proc_exit(f->h, it->image, it->ns, (uint32_t)it->value);
		break;
	case ITEM_LOST:
		heap_lost(f->h, it->image, it->ns, it->value);
		break;
	default:
		break;
	}
}

/* Takes the earliest item off the min-heap and applies it. */
static void pop_apply(struct heapfeed *f)
{
	struct heapfeed_item top = f->q[0], last;
	uint32_t i = 0;

	last = f->q[--f->n];
	while (f->n) {
		uint32_t c = 2 * i + 1;

		if (c >= f->n)
			break;
		if (c + 1 < f->n && item_before(&f->q[c + 1], &f->q[c]))
			c++;
		if (!item_before(&f->q[c], &last))
			break;
		f->q[i] = f->q[c];
		i = c;
	}
	if (f->n)
		f->q[i] = last;
	apply(f, &top);
}

static void push(struct heapfeed *f, struct heapfeed_item *it)
{
	uint32_t i;

	it->seq = f->seq++;
	if (it->ns > f->newest_ns)
		f->newest_ns = it->ns;
	if (f->n == HEAPFEED_WINDOW)
		pop_apply(f);
	if (f->n == f->cap) {
		uint32_t cap = f->cap ? 2 * f->cap : 1024;
		struct heapfeed_item *q = realloc(f->q, cap * sizeof(*q));

		if (!q) {
			/* no room to wait: apply now, possibly out of order */
			f->oom = true;
			apply(f, it);
			return;
		}
		f->q = q;
		f->cap = cap;
	}
	i = f->n++;
	while (i > 0 && item_before(it, &f->q[(i - 1) / 2])) {
		f->q[i] = f->q[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	f->q[i] = *it;
	while (f->horizon_ns && f->n && f->q[0].ns + f->horizon_ns < f->newest_ns)
		pop_apply(f);
}

void heapfeed_flush(struct heapfeed *f, uint64_t end_ns)
{
	while (f->n)
		pop_apply(f);
	if (end_ns) {
		if (f->stop_ns && end_ns > f->stop_ns)
			end_ns = f->stop_ns;
		heap_advance(f->h, end_ns);
	}
}

int heapfeed_pass(struct walk *w, struct heap *h, struct heapfeed *f, uint64_t stop_ns)
{
	struct walk_ops ops = { 0 };

	if (heap_init(h) || heapfeed_init(f, w, h))
		return -ENOMEM;
	f->stop_ns = stop_ns;
	heapfeed_walk_ops(f, &ops);
	if (walk_run_by_time(w, &ops))
		return -ENOMEM;
	heapfeed_flush(f, w->last_ns);
	heap_settle(h);
	return h->oom || f->oom ? -ENOMEM : 0;
}

/* The first frame outside the runtime libraries, or 0. */
static uint64_t user_frame(struct walk *w, uint32_t image, const uint64_t *ips, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct symbol sym;

		if (!ips[i])
			continue;
		if (symbolizer_lookup(w->sym, image, ips[i] - 1, &sym) == -ENOMEM)
			break;
		if (sym.module && !symbolizer_system_module(sym.module))
			return ips[i];
	}
	return 0;
}

uint64_t heapfeed_site_frame(struct walk *w, uint32_t image, const uint64_t *ips, uint32_t n)
{
	uint64_t frame = user_frame(w, image, ips, n);

	return frame ? frame : n ? ips[0] : 0;
}

/* The call site of an interned stack (or, without one, of the innermost
 * instrumented function).  Named when the operation is applied, not when
 * it is read: by then the mappings of the image, which may come in a
 * later chunk than another thread's operations, are known. */
static uint32_t site_of(struct heapfeed *f, uint32_t image, uint32_t stack, uint64_t func)
{
	const struct heap_stack *st = stack ? &f->h->stacks[stack] : NULL;
	char key[1024], fn[1024];
	struct symbol sym;
	uint64_t frame;
	uint32_t site;
	bool user;

	if (stack && stack < f->nsites && f->sites[stack])
		return f->sites[stack] - 1;
	frame = st ? user_frame(f->w, st->image, st->ips, st->n) : 0;
	user = frame != 0;
	if (!frame && func) {
		/* the stack never left the runtime libraries (they have no
		 * frame pointers): the instrumented function the thread is in */
		walk_name(f->w, image, func, fn, sizeof(fn));
		return heap_site(f->h, fn, fn, NULL, 0);
	}
	if (!frame && st && st->n)
		frame = st->ips[0];
	if (!frame)
		return HEAP_SITE_UNKNOWN;
	{
		int r = symbolizer_lookup(f->w->sym, st->image, frame - 1, &sym);

		walk_name(f->w, st->image, frame, key, sizeof(key));
		site = heap_site(f->h, key, r == 0 && sym.name ? sym.name : key, r == -ENOMEM ? NULL : sym.file,
		                 r == -ENOMEM ? 0 : sym.line);
	}
	/* a site inside the runtime libraries may be named otherwise later,
	 * when the mappings that tell are known: remember user sites only */
	if (!user)
		return site;
	if (stack >= f->nsites) {
		uint32_t n = stack + 1 > 2 * f->nsites ? stack + 1 : 2 * f->nsites;
		uint32_t *v = realloc(f->sites, n * sizeof(*v));

		if (!v)
			return site;
		memset(v + f->nsites, 0, (n - f->nsites) * sizeof(*v));
		f->sites = v;
		f->nsites = n;
	}
	f->sites[stack] = site + 1;
	return site;
}

/* The interned stack of an operation, remembered with the walk's stack
 * definition. */
static uint32_t stack_of(struct heapfeed *f, const struct walk_stream *s, const struct walk_mem *m)
{
	uint32_t stack;

	if (m->cache && (*m->cache & CACHE_SET))
		return (uint32_t)*m->cache;
	stack = heap_stack(f->h, s->image, m->ips, m->nips);
	if (m->cache && (stack || !m->nips))
		*m->cache = CACHE_SET | stack;
	return stack;
}

void heapfeed_mem(void *ctx, struct walk_stream *s, const struct walk_mem *m)
{
	struct heapfeed *f = ctx;
	struct heapfeed_item it = { 0 };

	it.kind = ITEM_OP;
	it.ns = m->time;
	it.image = s->image;
	it.pid = s->pid;
	it.op.op = m->op;
	it.op.flags = m->flags;
	it.op.ns = m->time;
	it.op.ptr = m->ptr;
	it.op.size = m->size;
	it.op.old = m->old;
	it.op.count = m->count;
	it.op.bytes = m->bytes;
	it.op.tid = m->tid;
	it.op.stack = stack_of(f, s, m);
	it.func = m->func;
	push(f, &it);
}

void heapfeed_task(void *ctx, struct walk_stream *s, uint64_t ns, unsigned kind, uint64_t value)
{
	struct heapfeed *f = ctx;
	struct heapfeed_item it = { 0 };

	it.ns = ns;
	it.image = s->image;
	it.pid = s->pid;
	it.value = value;
	it.main_thread = s->tid == s->pid;
	switch (kind) {
	case LP_TASK_START:
		it.kind = ITEM_START;
		break;
	case LP_TASK_FORK:
		it.kind = ITEM_FORK;
		break;
	case LP_TASK_EXIT:
		it.kind = ITEM_EXIT;
		break;
	default:
		return;
	}
	push(f, &it);
}

void heapfeed_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct heapfeed *f = ctx;
	struct heapfeed_item it = { 0 };

	it.kind = ITEM_LOST;
	it.ns = ns;
	it.image = s->image;
	it.pid = s->pid;
	it.value = count;
	push(f, &it);
}

void heapfeed_watermark(void *ctx, uint64_t ns)
{
	struct heapfeed *f = ctx;

	while (f->n && f->q[0].ns < ns)
		pop_apply(f);
}

void heapfeed_walk_ops(struct heapfeed *f, struct walk_ops *ops)
{
	ops->ctx = f;
	ops->mem = heapfeed_mem;
	ops->task = heapfeed_task;
	ops->lost = heapfeed_lost;
	ops->watermark = heapfeed_watermark;
}
