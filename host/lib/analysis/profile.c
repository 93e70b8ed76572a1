/* The flat profile builder (see profile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/profile.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/hashindex.h"

#define PROFILE_FIRST_FUNCS 256u
#define PROFILE_FIRST_DEPTH 64u
/* Bits of a function's hash: every slot of the index, up to
 * PROFILE_FUNCS_MAX, is some address's first choice.  The hash also sets
 * the slot order profile_collect reads a stream's functions in. */
#define PROFILE_HASH_BITS 24u

/* One function's numbers in one stream, keyed by address. */
struct fstat {
	uint64_t addr;
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns;
	uint32_t active; /* activations open now: recursion counts total once */
};

struct profile_stream {
	struct fstat *funcs; /* n of cap, in order of first call */
	uint32_t n, cap;
	/* funcs by address; profile_collect reads them in its slot order,
	 * which decides which of two functions of one name in one stream
	 * gives the row its file and line */
	struct hashindex index;
	struct profile_frame *frames; /* the open calls, by depth */
	uint32_t frame_cap;
};

/* A call open at one depth. */
struct profile_frame {
	uint64_t child_ns; /* time spent in its callees so far */
	uint32_t func;     /* its entry in funcs + 1; 0: none (inherited, no memory) */
};

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
}

void profile_release(struct profile *p)
{
	uint32_t i;

	for (i = 0; i < p->nstreams; i++) {
		free(p->streams[i]->funcs);
		hashindex_release(&p->streams[i]->index);
		free(p->streams[i]->frames);
		free(p->streams[i]);
	}
	free(p->streams);
	memset(p, 0, sizeof(*p));
}

static bool fstat_eq(const void *ctx, uint32_t item, const void *key)
{
	return ((const struct profile_stream *)ctx)->funcs[item].addr == *(const uint64_t *)key;
}

/* Grows a full index; false when memory runs out (or the stream reached
 * PROFILE_FUNCS_MAX / 2 functions). */
static __attribute__((noinline, cold)) bool fstat_grow(struct profile *p, struct profile_stream *ps)
{
	if (2 * ps->index.cap > PROFILE_FUNCS_MAX || hashindex_grow(&ps->index)) {
		p->oom = true;
		return false;
	}
	return true;
}

/* Adds the numbers of a function first seen, at its free slot. */
static __attribute__((noinline)) struct fstat *fstat_add(struct profile *p, struct profile_stream *ps, uint64_t addr,
                                                         uint64_t hash, uint32_t slot)
{
	struct fstat *f;

	if (ps->n == ps->cap) {
		uint32_t cap = ps->cap ? 2 * ps->cap : PROFILE_FIRST_FUNCS;

		f = realloc(ps->funcs, cap * sizeof(*f));
		if (!f) {
			p->oom = true;
			return NULL;
		}
		ps->funcs = f;
		ps->cap = cap;
	}
	f = &ps->funcs[ps->n];
	*f = (struct fstat){ .addr = addr, .min_ns = UINT64_MAX };
	hashindex_put(&ps->index, slot, hash, ps->n++);
	return f;
}

/* The numbers of addr, added when new; NULL when memory runs out.  Called
 * on every entry.  The index grows on any call that finds it full, not
 * only before a put: its slot order, and so profile_collect's, depends on
 * that. */
static inline struct fstat *fstat_get(struct profile *p, struct profile_stream *ps, uint64_t addr)
{
	uint64_t hash = hashindex_fibonacci(addr, PROFILE_HASH_BITS);
	uint32_t slot;

	if (__builtin_expect(!hashindex_has_room(&ps->index), 0) && !fstat_grow(p, ps))
		return NULL;
	slot = hashindex_slot(&ps->index, hash, fstat_eq, ps, &addr);
	if (__builtin_expect(ps->index.val[slot] != 0, 1))
		return &ps->funcs[ps->index.val[slot] - 1];
	return fstat_add(p, ps, addr, hash, slot);
}

/* The numbers of addr for the exit of a call whose entry found func (a
 * frame's): fstat_get without the lookup. */
static inline struct fstat *fstat_again(struct profile *p, struct profile_stream *ps, uint32_t func, uint64_t addr)
{
	if (__builtin_expect(func && ps->funcs[func - 1].addr == addr && hashindex_has_room(&ps->index), 1))
		return &ps->funcs[func - 1];
	return fstat_get(p, ps, addr);
}

void profile_begin(void *ctx, struct walk_stream *s)
{
	struct profile *p = ctx;
	struct profile_stream *ps;

	s->user = NULL;
	if (p->nstreams == p->cap) {
		uint32_t cap = p->cap ? 2 * p->cap : 64;
		struct profile_stream **n = realloc(p->streams, cap * sizeof(*n));

		if (!n) {
			p->oom = true;
			return;
		}
		p->streams = n;
		p->cap = cap;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		p->oom = true;
		return;
	}
	p->streams[p->nstreams++] = ps;
	s->user = ps;
}

static struct profile_frame *frame_at(struct profile *p, struct profile_stream *ps, uint32_t depth)
{
	if (depth >= ps->frame_cap) {
		uint32_t cap = ps->frame_cap ? ps->frame_cap : PROFILE_FIRST_DEPTH;
		struct profile_frame *n;

		while (cap <= depth)
			cap *= 2;
		n = realloc(ps->frames, cap * sizeof(*n));
		if (!n) {
			p->oom = true;
			return NULL;
		}
		ps->frames = n;
		ps->frame_cap = cap;
	}
	return &ps->frames[depth];
}

void profile_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct profile *p = ctx;
	struct profile_stream *ps = s->user;
	struct profile_frame *fr;
	struct fstat *f;

	if (!ps || !(fr = frame_at(p, ps, depth)))
		return;
	fr->child_ns = 0;
	fr->func = 0;
	if (flags & FILTER_INHERITED)
		return; /* entered in the parent process, not a call here */
	f = fstat_get(p, ps, addr);
	if (!f)
		return;
	fr->func = (uint32_t)(f - ps->funcs) + 1;
	f->calls++;
	f->active++;
}

void profile_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                  unsigned flags)
{
	struct profile *p = ctx;
	struct profile_stream *ps = s->user;
	uint64_t dur = ns - entry_ns, self;
	struct fstat *f;

	if (!ps || depth >= ps->frame_cap)
		return;
	self = dur > ps->frames[depth].child_ns ? dur - ps->frames[depth].child_ns : 0;
	if (depth)
		ps->frames[depth - 1].child_ns += dur;
	if (flags & FILTER_INHERITED)
		return;
	f = fstat_again(p, ps, ps->frames[depth].func, addr);
	if (!f)
		return;
	if (f->active)
		f->active--;
	if (!f->active)
		f->total_ns += dur;
	f->self_ns += self;
	f->sum_ns += dur;
	if (dur < f->min_ns)
		f->min_ns = dur;
	if (dur > f->max_ns)
		f->max_ns = dur;
}

void profile_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	struct profile *p = ctx;
	struct profile_stream *ps = s->user;
	struct fstat *f;

	/* a whole call from a duration source filter: its callees are unknown,
	 * so it adds to total, not to self */
	if (!ps || !(f = fstat_get(p, ps, addr)))
		return;
	f->calls++;
	f->total_ns += duration_ns;
	f->sum_ns += duration_ns;
	if (duration_ns < f->min_ns)
		f->min_ns = duration_ns;
	if (duration_ns > f->max_ns)
		f->max_ns = duration_ns;
}

void profile_add(struct profile *p, struct walk_stream *s, uint64_t addr, const struct profile_sums *sums)
{
	struct profile_stream *ps = s->user;
	struct fstat *f;

	if (!ps || !(f = fstat_get(p, ps, addr)))
		return;
	f->calls += sums->calls;
	f->total_ns += sums->total_ns;
	f->self_ns += sums->self_ns;
	f->sum_ns += sums->sum_ns;
	if (sums->min_ns < f->min_ns)
		f->min_ns = sums->min_ns;
	if (sums->max_ns > f->max_ns)
		f->max_ns = sums->max_ns;
}

void profile_walk_ops(struct profile *p, struct walk_ops *ops)
{
	ops->ctx = p;
	ops->begin = profile_begin;
	ops->entry = profile_entry;
	ops->exit = profile_exit;
	ops->call = profile_call;
}

uint64_t profile_row_avg(const struct profile_row *r)
{
	return r->calls ? r->sum_ns / r->calls : 0;
}

uint64_t profile_row_key(const struct profile_row *r, enum profile_key k)
{
	switch (k) {
	case PROFILE_TOTAL:
		return r->total_ns;
	case PROFILE_SELF:
		return r->self_ns;
	case PROFILE_CALLS:
		return r->calls;
	case PROFILE_AVG:
		return profile_row_avg(r);
	case PROFILE_MIN:
		return r->min_ns;
	case PROFILE_MAX:
		return r->max_ns;
	default:
		return 0;
	}
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct profile_row *x = a, *y = b;
	const struct profile_order *order = ctx;
	int i, c;

	for (i = 0; i < order->nkeys; i++) {
		enum profile_key k = order->keys[i];

		if (k == PROFILE_NAME) {
			c = strcmp(x->name, y->name);
			if (c)
				return c;
			continue;
		}
		if (profile_row_key(x, k) != profile_row_key(y, k))
			return profile_row_key(x, k) > profile_row_key(y, k) ? -1 : 1;
	}
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* A row's key while rows are collected: its name, and its thread with
 * PROFILE_PER_THREAD. */
struct row_key {
	const char *name;
	uint32_t tid;
	bool per_thread;
};

static bool row_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct profile_row *r = &((const struct profile_rows *)ctx)->row[item];
	const struct row_key *k = key;

	return !strcmp(r->name, k->name) && (!k->per_thread || r->tid == k->tid);
}

/* The row of (name, stream), added when new.  NULL when memory runs out. */
static struct profile_row *row_get(struct profile_rows *rows, struct hashindex *ix, size_t *rcap, struct walk *w,
                                   const struct walk_stream *s, uint64_t addr, const char *name, unsigned flags)
{
	struct row_key k = { name, s->tid, (flags & PROFILE_PER_THREAD) != 0 };
	uint64_t hash = hashindex_bytes(name, strlen(name), k.per_thread ? hashindex_u64(s->tid) : 0);
	struct profile_row *r;
	struct symbol sym;
	uint32_t slot;

	if (hashindex_reserve(ix))
		return NULL;
	slot = hashindex_slot(ix, hash, row_eq, rows, &k);
	if (ix->val[slot])
		return &rows->row[ix->val[slot] - 1];
	if (rows->n == *rcap) {
		size_t cap = *rcap ? 2 * *rcap : 256;
		struct profile_row *n = realloc(rows->row, cap * sizeof(*n));

		if (!n)
			return NULL;
		rows->row = n;
		*rcap = cap;
	}
	r = &rows->row[rows->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	if (!r->name)
		return NULL;
	r->min_ns = UINT64_MAX;
	r->tid = s->tid;
	r->pid = s->pid;
	if (!symbolizer_lookup(w->sym, s->image, addr, &sym)) {
		r->file = sym.file;
		r->line = sym.line;
	}
	hashindex_put(ix, slot, hash, (uint32_t)rows->n++);
	return r;
}

int profile_collect(struct walk *w, unsigned flags, const struct profile_order *order, struct profile_rows *out)
{
	struct hashindex ix = { 0 };
	size_t rcap = 0;
	uint32_t si, j;

	out->row = NULL;
	out->n = 0;
	/* the tables hang on the streams, taken in the walk's order so that a
	 * row's file, tid and pid come from the first stream that has it */
	for (si = 0; si < w->nstreams; si++) {
		struct walk_stream *s = w->streams[si];
		struct profile_stream *ps = s->user;

		if (!s->selected || !ps)
			continue;
		for (j = 0; j < ps->index.cap; j++) {
			const struct fstat *f;
			struct profile_row *r;
			char buf[1024];

			if (!ps->index.val[j])
				continue;
			f = &ps->funcs[ps->index.val[j] - 1];
			if (!f->calls)
				continue;
			r = row_get(out, &ix, &rcap, w, s, f->addr, walk_name(w, s->image, f->addr, buf, sizeof(buf)),
			            flags);
			if (!r)
				goto nomem;
			r->calls += f->calls;
			r->total_ns += f->total_ns;
			r->self_ns += f->self_ns;
			r->sum_ns += f->sum_ns;
			if (f->min_ns < r->min_ns)
				r->min_ns = f->min_ns;
			if (f->max_ns > r->max_ns)
				r->max_ns = f->max_ns;
		}
	}
	hashindex_release(&ix);
	if (out->n)
		qsort_r(out->row, out->n, sizeof(*out->row), row_cmp, (void *)order);
	return 0;
nomem:
	hashindex_release(&ix);
	profile_rows_release(out);
	return -ENOMEM;
}

void profile_rows_release(struct profile_rows *rows)
{
	size_t i;

	for (i = 0; i < rows->n; i++)
		free(rows->row[i].name);
	free(rows->row);
	rows->row = NULL;
	rows->n = 0;
}

int profile_order_parse(struct profile_order *order, const char *arg)
{
	static const char *const names[] = { "total", "self", "calls", "avg", "min", "max", "name" };
	char buf[256], *tok, *save = NULL;
	size_t i;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	order->nkeys = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == sizeof(names) / sizeof(names[0]) || order->nkeys == PROFILE_KEYS_MAX)
			return -EINVAL;
		order->keys[order->nkeys++] = (enum profile_key)i;
	}
	return order->nkeys ? 0 : -EINVAL;
}
