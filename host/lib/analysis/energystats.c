/* Energy per program, CPU, thread and function (see energystats.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/energystats.h"

#define ENERGYSTATS_FIRST_FUNCS 256u
#define ENERGYSTATS_FIRST_DEPTH 64u

/* A call open on a thread: when it began, the inclusive time of its direct
 * callees that ended so far. */
struct time_frame {
	uint64_t addr;
	uint32_t func; /* its entry in es->fns + 1; 0: over the cap, not timed */
	bool nested;   /* a call of the same function is open below it: its time is in that one's */
	uint64_t entry_ns, child_ns;
};

struct energystats_thread {
	struct time_frame *stack;
	uint32_t depth, cap;
	uint32_t deep; /* calls open over CTRSTATS_DEPTH_MAX, not followed */
};

struct energystats_fn {
	uint64_t addr;
	uint32_t image, tid;
	uint64_t self_ns, incl_ns;
};

struct fn_key {
	uint64_t addr;
	uint32_t image, tid;
};

void energystats_init(struct energystats *es, struct walk *w, unsigned flags)
{
	memset(es, 0, sizeof(*es));
	es->w = w;
	es->flags = flags;
}

void energystats_release(struct energystats *es)
{
	uint32_t i;

	for (i = 0; i < es->nthreads; i++) {
		if (es->threads[i])
			free(es->threads[i]->stack);
		free(es->threads[i]);
	}
	free(es->threads);
	free(es->slot_of);
	free(es->fns);
	hashindex_release(&es->fn_index);
	memset(es, 0, sizeof(*es));
}

/* ------------------------------------------------------------ timing */

/* The thread of stream s, made on its first entry; NULL over the cap or
 * when memory runs out. */
static struct energystats_thread *thread_get(struct energystats *es, const struct walk_stream *s)
{
	struct energystats_thread *t;

	if (s->index < es->slot_cap && es->slot_of[s->index])
		return es->threads[es->slot_of[s->index] - 1];
	if (es->nthreads == CTRSTATS_THREADS_MAX) {
		es->threads_dropped++;
		return NULL;
	}
	if (s->index >= es->slot_cap) {
		uint32_t cap = es->slot_cap ? es->slot_cap : 64, *n;

		while (cap <= s->index)
			cap *= 2;
		n = realloc(es->slot_of, cap * sizeof(*n));
		if (!n)
			goto nomem;
		memset(n + es->slot_cap, 0, (cap - es->slot_cap) * sizeof(*n));
		es->slot_of = n;
		es->slot_cap = cap;
	}
	if (es->nthreads == es->threads_cap) {
		uint32_t cap = es->threads_cap ? 2 * es->threads_cap : 16;
		struct energystats_thread **n = realloc(es->threads, cap * sizeof(*n));

		if (!n)
			goto nomem;
		es->threads = n;
		es->threads_cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	es->threads[es->nthreads++] = t;
	es->slot_of[s->index] = es->nthreads;
	return t;
nomem:
	es->oom = true;
	return NULL;
}

static bool fn_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct energystats_fn *f = &((const struct energystats *)ctx)->fns[item];
	const struct fn_key *k = key;

	return f->addr == k->addr && f->image == k->image && f->tid == k->tid;
}

/* The times of function addr called on stream s, made when new: its entry
 * + 1, or 0 over the cap or when memory runs out. */
static uint32_t fn_get(struct energystats *es, const struct walk_stream *s, uint64_t addr)
{
	struct fn_key k = { addr, s->image, (es->flags & ENERGYSTATS_PER_THREAD) ? s->tid : 0 };
	uint64_t hash = hashindex_u64(addr ^ hashindex_u64(((uint64_t)k.image << 32) | k.tid));
	struct energystats_fn *f;
	uint32_t slot;

	if (hashindex_reserve(&es->fn_index)) {
		es->oom = true;
		return 0;
	}
	slot = hashindex_slot(&es->fn_index, hash, fn_eq, es, &k);
	if (es->fn_index.val[slot])
		return es->fn_index.val[slot];
	if (es->nfns == CTRSTATS_FUNCS_MAX) {
		es->fns_dropped++;
		return 0;
	}
	if (es->nfns == es->fns_cap) {
		uint32_t cap = es->fns_cap ? 2 * es->fns_cap : ENERGYSTATS_FIRST_FUNCS;

		f = realloc(es->fns, cap * sizeof(*f));
		if (!f) {
			es->oom = true;
			return 0;
		}
		es->fns = f;
		es->fns_cap = cap;
	}
	f = &es->fns[es->nfns];
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->image = k.image;
	f->tid = k.tid;
	hashindex_put(&es->fn_index, slot, hash, es->nfns++);
	return es->nfns;
}

static void es_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct energystats *es = ctx;
	struct energystats_thread *t = thread_get(es, s);
	struct time_frame *fr;

	(void)depth;
	(void)flags;
	es->entries++;
	if (!t)
		return;
	if (t->deep || t->depth == CTRSTATS_DEPTH_MAX) {
		t->deep++;
		es->deep_dropped++;
		return;
	}
	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : ENERGYSTATS_FIRST_DEPTH;

		if (cap > CTRSTATS_DEPTH_MAX)
			cap = CTRSTATS_DEPTH_MAX;
		fr = realloc(t->stack, cap * sizeof(*fr));
		if (!fr) {
			es->oom = true;
			return;
		}
		t->stack = fr;
		t->cap = cap;
	}
	fr = &t->stack[t->depth++];
	fr->addr = addr;
	fr->entry_ns = ns;
	fr->child_ns = 0;
	fr->func = fn_get(es, s, addr);
	fr->nested = false;
	for (uint32_t k = 0; fr->func && k + 1 < t->depth && !fr->nested; k++)
		fr->nested = t->stack[k].func == fr->func;
}

/* Ends the call at the top of t's stack at ns. */
static void call_end(struct energystats *es, struct energystats_thread *t, uint64_t ns)
{
	struct time_frame *fr = &t->stack[--t->depth];
	uint64_t incl = ns > fr->entry_ns ? ns - fr->entry_ns : 0;

	if (t->depth)
		t->stack[t->depth - 1].child_ns += incl;
	if (!fr->func)
		return;
	if (!fr->nested)
		es->fns[fr->func - 1].incl_ns += incl;
	es->fns[fr->func - 1].self_ns += incl > fr->child_ns ? incl - fr->child_ns : 0;
}

/* The walk hands each thread's calls properly nested (the exits of calls
 * still open come at its stream's end), so an exit ends the innermost open
 * call of its function, and the calls above it end with it. */
static void es_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                    unsigned flags)
{
	struct energystats *es = ctx;
	struct energystats_thread *t;
	uint32_t k;

	(void)depth;
	(void)entry_ns;
	(void)flags;
	if (s->index >= es->slot_cap || !es->slot_of[s->index])
		return;
	t = es->threads[es->slot_of[s->index] - 1];
	if (t->deep) {
		t->deep--;
		return;
	}
	for (k = t->depth; k > 0 && t->stack[k - 1].addr != addr; k--)
		;
	while (k && t->depth >= k)
		call_end(es, t, ns);
}

/* Calls still open at the end (the walk ended them already; this is for a
 * walk fed without them): they end at the stream's last event. */
static void es_end(void *ctx, struct walk_stream *s)
{
	struct energystats *es = ctx;
	struct energystats_thread *t;

	if (s->index >= es->slot_cap || !es->slot_of[s->index])
		return;
	t = es->threads[es->slot_of[s->index] - 1];
	t->deep = 0;
	while (t->depth)
		call_end(es, t, s->last_ns);
}

void energystats_walk_ops(struct energystats *es, struct walk_ops *ops)
{
	ops->ctx = es;
	ops->entry = es_entry;
	ops->exit = es_exit;
	ops->end = es_end;
}

/* ------------------------------------------------------------ applying the model */

struct energystats_energy energystats_energy(const struct emodel *m, const uint32_t *map, const uint64_t *v,
                                             uint64_t ns, double share)
{
	struct energystats_energy e;

	e.ns = ns;
	e.joules = emodel_energy(m, map, v, ns, share);
	e.constant = m->c0.coef * ((double)ns / 1e9) * share;
	e.watts = ns ? e.joules / ((double)ns / 1e9) : 0;
	return e;
}

static void energy_add(struct energystats_energy *sum, const struct energystats_energy *e)
{
	sum->joules += e->joules;
	sum->constant += e->constant;
	sum->ns += e->ns;
}

/* The program's first and last event: its streams' (other processes'
 * streams of record --kernel-system are not the program's). */
static void program_span(const struct walk *w, uint64_t *t0, uint64_t *t1)
{
	uint32_t i;

	*t0 = *t1 = 0;
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		if (s->other)
			continue;
		if (!*t0 || s->first_ns < *t0)
			*t0 = s->first_ns;
		if (s->last_ns > *t1)
			*t1 = s->last_ns;
	}
}

struct row_key {
	const char *name;
	uint32_t tid;
	bool per_thread;
};

static bool row_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct ctrstats_result *res = ctx;
	const struct row_key *k = key;

	return !strcmp(res->fns[item].name, k->name) && (!k->per_thread || res->fns[item].tid == k->tid);
}

static uint64_t row_hash(const struct row_key *k)
{
	return hashindex_bytes(k->name, strlen(k->name), k->per_thread ? hashindex_u64(k->tid) : 0);
}

/* Each function's times, added to the row of the ctrstats result with its
 * name (and thread): self[i], incl[i] for res->fns[i].  Functions with
 * time and no counts have no row: left out. */
static int fn_times(struct energystats *es, const struct ctrstats_result *res, uint64_t *self, uint64_t *incl)
{
	bool per_thread = (es->flags & ENERGYSTATS_PER_THREAD) != 0;
	struct hashindex ix = { 0 };
	char buf[1024];
	size_t i;

	for (i = 0; i < res->nfns; i++) {
		struct row_key k = { res->fns[i].name, res->fns[i].tid, per_thread };
		uint64_t h = row_hash(&k);
		uint32_t slot;

		if (hashindex_reserve(&ix)) {
			hashindex_release(&ix);
			return -ENOMEM;
		}
		slot = hashindex_slot(&ix, h, row_eq, res, &k);
		if (!ix.val[slot])
			hashindex_put(&ix, slot, h, (uint32_t)i);
	}
	for (i = 0; i < es->nfns; i++) {
		const struct energystats_fn *f = &es->fns[i];
		struct row_key k = { walk_name(es->w, f->image, f->addr, buf, sizeof(buf)), f->tid, per_thread };
		int64_t row = hashindex_get(&ix, row_hash(&k), row_eq, res, &k);

		if (row < 0)
			continue;
		self[row] += f->self_ns;
		incl[row] += f->incl_ns;
	}
	hashindex_release(&ix);
	return 0;
}

static double fn_key(const struct energystats_fn_row *r, enum energystats_sort sort)
{
	switch (sort) {
	case ENERGYSTATS_SORT_SELF:
		return r->self.joules;
	case ENERGYSTATS_SORT_CALLS:
		return (double)r->fn->calls;
	default:
		return r->incl.joules;
	}
}

static int fn_cmp(const void *a, const void *b, void *ctx)
{
	const struct energystats_fn_row *x = a, *y = b;
	enum energystats_sort sort = *(const enum energystats_sort *)ctx;
	double vx = fn_key(x, sort), vy = fn_key(y, sort);
	int c;

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (sort != ENERGYSTATS_SORT_INCL && x->incl.joules != y->incl.joules)
		return x->incl.joules > y->incl.joules ? -1 : 1;
	c = strcmp(x->fn->name, y->fn->name);
	if (c)
		return c;
	return x->fn->tid < y->fn->tid ? -1 : x->fn->tid > y->fn->tid;
}

static int collect_fns(struct energystats *es, const struct emodel *m, const uint32_t *map,
                       const struct ctrstats_result *res, enum energystats_sort sort, struct energystats_result *out)
{
	double share = 1.0 / out->cpus;
	uint64_t *self = NULL, *incl = NULL;
	size_t i;
	int r = -ENOMEM;

	if (!res->nfns)
		return 0;
	self = calloc(res->nfns, sizeof(*self));
	incl = calloc(res->nfns, sizeof(*incl));
	out->fns = calloc(res->nfns, sizeof(*out->fns));
	if (!self || !incl || !out->fns || fn_times(es, res, self, incl))
		goto out;
	es->untimed_rows = 0;
	for (i = 0; i < res->nfns; i++) {
		struct energystats_fn_row *row = &out->fns[i];

		row->fn = &res->fns[i];
		row->self = energystats_energy(m, map, res->fns[i].self, self[i], share);
		row->incl = energystats_energy(m, map, res->fns[i].incl, incl[i], share);
		if (!incl[i])
			es->untimed_rows++;
	}
	out->nfns = res->nfns;
	qsort_r(out->fns, out->nfns, sizeof(*out->fns), fn_cmp, &sort);
	r = 0;
out:
	free(self);
	free(incl);
	return r;
}

int energystats_collect(struct energystats *es, const struct emodel *m, const uint32_t *map,
                        const struct ctrstats_result *res, enum energystats_sort sort, struct energystats_result *out)
{
	double share;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->cpus = m->machine.cpus ? m->machine.cpus : 1;
	share = 1.0 / out->cpus;
	program_span(es->w, &out->t0_ns, &out->t1_ns);
	out->has_program = res->has_program;
	if (res->has_program)
		out->program = energystats_energy(m, map, res->program.v, out->t1_ns - out->t0_ns, 1.0);
	if (res->ncpus) {
		out->cpus_rows = calloc(res->ncpus, sizeof(*out->cpus_rows));
		if (!out->cpus_rows)
			goto nomem;
		for (i = 0; i < res->ncpus; i++) {
			out->cpus_rows[i].c = &res->cpus[i];
			out->cpus_rows[i].e =
			    energystats_energy(m, map, res->cpus[i].val.v, out->t1_ns - out->t0_ns, share);
		}
		out->ncpus = res->ncpus;
	}
	if (res->nthreads) {
		out->threads_rows = calloc(res->nthreads, sizeof(*out->threads_rows));
		if (!out->threads_rows)
			goto nomem;
		for (i = 0; i < res->nthreads; i++) {
			const struct ctrstats_thread_row *t = &res->threads[i];
			struct energystats_thread_row *row = &out->threads_rows[i];

			row->t = t;
			row->e = energystats_energy(m, map, t->val.v, t->s->last_ns - t->s->first_ns, share);
			energy_add(&out->threads, &row->e);
		}
		out->nthreads = res->nthreads;
	}
	/* the threads' mean power: over the program's span, as the program's */
	if (out->t1_ns > out->t0_ns)
		out->threads.watts = out->threads.joules / ((double)(out->t1_ns - out->t0_ns) / 1e9);
	if (out->has_program) {
		out->rest_constant = out->program.constant - out->threads.constant;
		out->rest_events =
		    (out->program.joules - out->program.constant) - (out->threads.joules - out->threads.constant);
	}
	if (collect_fns(es, m, map, res, sort, out))
		goto nomem;
	return 0;
nomem:
	energystats_result_release(out);
	return -ENOMEM;
}

bool energystats_measured_add(struct energystats_result *out, const char *source, double joules)
{
	struct energystats_measured *x;
	uint64_t span = out->t1_ns - out->t0_ns;

	if (out->nmeasured == ENERGYSTATS_MEASURED_MAX)
		return false;
	x = &out->measured[out->nmeasured++];
	snprintf(x->source, sizeof(x->source), "%s", source);
	x->joules = joules;
	x->watts = span ? joules / ((double)span / 1e9) : 0;
	x->error_pct = joules > 0 ? (out->program.joules - joules) / joules * 100.0 : 0;
	return true;
}

void energystats_result_release(struct energystats_result *res)
{
	free(res->cpus_rows);
	free(res->threads_rows);
	free(res->fns);
	memset(res, 0, sizeof(*res));
}
