/* The flat profile builder (see profile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/profile.h"
#include "host/lib/trace/symbolizer.h"

#define PROFILE_FIRST_FUNCS 256u
#define PROFILE_FIRST_DEPTH 64u
#define PROFILE_FIRST_ROWS 1024u
#define FNV_OFFSET_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull
#define GOLDEN_RATIO_64 0x9e3779b97f4a7c15ull

/* One function's numbers in one stream, keyed by address. */
struct fstat {
	uint64_t addr;
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns;
	uint32_t active; /* activations open now: recursion counts total once */
	uint32_t used;
};

struct profile_stream {
	struct fstat *tab; /* open addressing, at most half full */
	uint32_t cap, n;
	uint64_t *child_ns; /* per depth: time spent in callees so far */
	uint32_t child_cap;
};

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
}

void profile_release(struct profile *p)
{
	uint32_t i;

	for (i = 0; i < p->nstreams; i++) {
		free(p->streams[i]->tab);
		free(p->streams[i]->child_ns);
		free(p->streams[i]);
	}
	free(p->streams);
	memset(p, 0, sizeof(*p));
}

static uint32_t addr_slot(uint64_t addr, uint32_t cap)
{
	return (uint32_t)((addr * GOLDEN_RATIO_64) >> 40) & (cap - 1);
}

static struct fstat *fstat_get(struct profile *p, struct profile_stream *ps, uint64_t addr)
{
	uint32_t h, i;

	if (ps->n * 2 >= ps->cap) {
		uint32_t cap = ps->cap ? ps->cap * 2 : PROFILE_FIRST_FUNCS;
		struct fstat *n;

		if (cap > PROFILE_FUNCS_MAX || !(n = calloc(cap, sizeof(*n)))) {
			p->oom = true;
			return NULL;
		}
		for (i = 0; i < ps->cap; i++) {
			if (!ps->tab[i].used)
				continue;
			h = addr_slot(ps->tab[i].addr, cap);
			while (n[h].used)
				h = (h + 1) & (cap - 1);
			n[h] = ps->tab[i];
		}
		free(ps->tab);
		ps->tab = n;
		ps->cap = cap;
	}
	h = addr_slot(addr, ps->cap);
	while (ps->tab[h].used) {
		if (ps->tab[h].addr == addr)
			return &ps->tab[h];
		h = (h + 1) & (ps->cap - 1);
	}
	ps->tab[h].used = 1;
	ps->tab[h].addr = addr;
	ps->tab[h].min_ns = UINT64_MAX;
	ps->n++;
	return &ps->tab[h];
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

static uint64_t *child_slot(struct profile *p, struct profile_stream *ps, uint32_t depth)
{
	if (depth >= ps->child_cap) {
		uint32_t cap = ps->child_cap ? ps->child_cap : PROFILE_FIRST_DEPTH;
		uint64_t *n;

		while (cap <= depth)
			cap *= 2;
		n = realloc(ps->child_ns, cap * sizeof(*n));
		if (!n) {
			p->oom = true;
			return NULL;
		}
		ps->child_ns = n;
		ps->child_cap = cap;
	}
	return &ps->child_ns[depth];
}

void profile_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct profile *p = ctx;
	struct profile_stream *ps = s->user;
	uint64_t *c;
	struct fstat *f;

	if (!ps || !(c = child_slot(p, ps, depth)))
		return;
	*c = 0;
	if (flags & FILTER_INHERITED)
		return; /* entered in the parent process, not a call here */
	f = fstat_get(p, ps, addr);
	if (!f)
		return;
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

	if (!ps || depth >= ps->child_cap)
		return;
	self = dur > ps->child_ns[depth] ? dur - ps->child_ns[depth] : 0;
	if (depth)
		ps->child_ns[depth - 1] += dur;
	if (flags & FILTER_INHERITED)
		return;
	f = fstat_get(p, ps, addr);
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

/* Rows are found again by name (and tid) through an index hash. */
struct row_index {
	size_t *slot; /* row index + 1; 0 is empty */
	size_t cap;
};

static uint64_t row_hash(const char *name, uint32_t tid, unsigned flags)
{
	uint64_t h = FNV_OFFSET_BASIS;
	const char *p;

	for (p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * FNV_PRIME;
	if (flags & PROFILE_PER_THREAD)
		h ^= (uint64_t)tid * GOLDEN_RATIO_64;
	return h;
}

static int index_grow(struct row_index *ix, const struct profile_rows *rows, unsigned flags)
{
	size_t cap = ix->cap * 2, k, i;
	size_t *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (k = 0; k < rows->n; k++) {
		i = (size_t)(row_hash(rows->row[k].name, rows->row[k].tid, flags) % cap);
		while (n[i])
			i = (i + 1) % cap;
		n[i] = k + 1;
	}
	free(ix->slot);
	ix->slot = n;
	ix->cap = cap;
	return 0;
}

/* The row of (name, stream), added when new.  NULL when memory runs out. */
static struct profile_row *row_get(struct profile_rows *rows, struct row_index *ix, size_t *rcap, struct walk *w,
                                   const struct walk_stream *s, uint64_t addr, const char *name, unsigned flags)
{
	size_t i = (size_t)(row_hash(name, s->tid, flags) % ix->cap);
	struct profile_row *r;
	struct symbol sym;

	while (ix->slot[i]) {
		r = &rows->row[ix->slot[i] - 1];
		if (!strcmp(r->name, name) && (!(flags & PROFILE_PER_THREAD) || r->tid == s->tid))
			return r;
		i = (i + 1) % ix->cap;
	}
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
	rows->n++;
	ix->slot[i] = rows->n;
	if (rows->n * 2 > ix->cap && index_grow(ix, rows, flags))
		return NULL;
	return r;
}

int profile_collect(struct walk *w, unsigned flags, const struct profile_order *order, struct profile_rows *out)
{
	struct row_index ix = { .cap = PROFILE_FIRST_ROWS };
	size_t rcap = 0;
	uint32_t si, j;

	out->row = NULL;
	out->n = 0;
	ix.slot = calloc(ix.cap, sizeof(*ix.slot));
	if (!ix.slot)
		return -ENOMEM;
	/* the tables hang on the streams, taken in the walk's order so that a
	 * row's file, tid and pid come from the first stream that has it */
	for (si = 0; si < w->nstreams; si++) {
		struct walk_stream *s = w->streams[si];
		struct profile_stream *ps = s->user;

		if (!s->selected || !ps)
			continue;
		for (j = 0; j < ps->cap; j++) {
			const struct fstat *f = &ps->tab[j];
			struct profile_row *r;
			char buf[1024];

			if (!f->used || !f->calls)
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
	free(ix.slot);
	if (out->n)
		qsort_r(out->row, out->n, sizeof(*out->row), row_cmp, (void *)order);
	return 0;
nomem:
	free(ix.slot);
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
