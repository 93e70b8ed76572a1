/* layerprof estimate's method (estimate.h): the table that maps a traced
 * call to a calibration entry and its parameter, the walk that decides
 * each call, and the estimated time line of the threads. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/oscal/estcall.h"
#include "host/lib/oscal/estimate.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"

/* How a call's parameter x is had. */
const char *estimate_fate_name(enum estimate_fate f)
{
	static const char *const names[] = { "modelled", "no entry",   "no model", "no parameter",
		                             "wait",     "unfinished", "inside" };

	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "?";
}

/* ------------------------------------------------------------ private state */

/* A point of a thread's time line: at exit_ns, its modelled calls so far
 * added delta (with the models) and delta_wo (without). */
struct tpoint {
	uint64_t ns;
	double delta, delta_wo;
	uint64_t nsys, nlib; /* calls counted so far, each with the recorder's cost outside it */
};

/* A C library call entered and not yet exited. */
struct opencall {
	uint64_t addr, enter_ns;
	uint32_t depth;
	const struct callrule *rule; /* NULL: not in the table */
	char name[OSCAL_NAME_MAX];   /* without @plt */
	bool has_args;
	uint64_t args[6];
	uint32_t nargs;
	bool has_ret;
	uint64_t ret;
	bool modelled; /* decided at entry: its inner calls are its own */
	bool waited;   /* a wait inside it: its measured time is kept */
};

struct tstate {
	uint32_t index; /* in e->threads */
	struct tpoint *pts;
	uint32_t npts, cap;
	struct opencall stack[ESTIMATE_STACK_MAX];
	uint32_t depth;         /* open @plt calls followed (deeper ones ignored) */
	uint32_t modelled_open; /* how many of them are modelled */
	double delta, delta_wo;
	uint64_t nsys, nlib;
	/* the last event was the exit of a system call (1) or a C library call
	 * (2) at last_exit: the gap to the next call of that kind is the
	 * recorder's cost outside a call, plus the program's code between */
	int last_kind;
	uint64_t last_exit;
};

struct creation {
	uint32_t creator; /* thread index */
	uint32_t child;   /* tid (pid of a forked process) */
	uint64_t ns;
};

struct pltname {
	uint32_t image;
	uint64_t addr;
	bool plt;
	char name[OSCAL_NAME_MAX];
};

struct estimate_priv {
	struct walk *w;
	struct estcall calls; /* files and heap blocks followed */
	struct hashindex row_index;
	uint32_t rows_cap;
	struct pltname *plts;
	uint32_t nplts, plts_cap;
	struct hashindex plt_index;
	struct creation *creations;
	uint32_t ncreations, creations_cap;
	struct tstate **ts; /* by thread index */
	uint32_t threads_cap;
	uint64_t npoints;
	uint64_t gap_sys, gap_lib; /* the least gaps seen (UINT64_MAX: none) */
	bool plt_seen;
	int error;
	char err[160];
};

void estimate_init(struct estimate *e, const struct oscal_cal *cal, const struct estimate_opts *opts)
{
	memset(e, 0, sizeof(*e));
	e->cal = cal;
	if (opts)
		e->opts = *opts;
}

static void fail(struct estimate_priv *p, int error, const char *what)
{
	if (p->error)
		return;
	p->error = error;
	snprintf(p->err, sizeof(p->err), "%s", what);
}

/* ------------------------------------------------------------ rows */

struct rowkey {
	const char *name, *entry;
	enum estimate_fate fate;
};

static bool row_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct estimate_row *r = &((const struct estimate *)ctx)->rows[item];
	const struct rowkey *k = key;

	return r->fate == k->fate && !strcmp(r->name, k->name) && !strcmp(r->entry, k->entry);
}

static void row_add(struct estimate *e, const char *name, const char *entry, enum estimate_fate fate, double measured,
                    double model)
{
	struct estimate_priv *p = e->p;
	struct rowkey k = { name, entry, fate };
	uint64_t h = hashindex_bytes(name, strlen(name), hashindex_bytes(entry, strlen(entry), fate));
	struct estimate_row *r;
	uint32_t slot;

	if (hashindex_reserve(&p->row_index)) {
		fail(p, -ENOMEM, "out of memory");
		return;
	}
	slot = hashindex_slot(&p->row_index, h, row_eq, e, &k);
	if (p->row_index.val[slot]) {
		r = &e->rows[p->row_index.val[slot] - 1];
	} else {
		int g =
		    estcall_grow((void **)&e->rows, &p->rows_cap, e->nrows + 1, sizeof(*e->rows), ESTIMATE_NAMES_MAX);

		if (g) {
			fail(p, g, g == -E2BIG ? "too many call names" : "out of memory");
			return;
		}
		r = &e->rows[e->nrows];
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", name);
		snprintf(r->entry, sizeof(r->entry), "%s", entry);
		r->fate = fate;
		hashindex_put(&p->row_index, slot, h, e->nrows++);
	}
	r->count++;
	r->measured_ns += measured;
	r->model_ns += model;
}

/* ------------------------------------------------------------ threads */

static struct tstate *tstate_of(struct estimate *e, struct walk_stream *s)
{
	struct estimate_priv *p = e->p;
	struct tstate *ts;
	struct estimate_thread *t;
	int g;

	if (s->user)
		return s->user;
	g = estcall_grow((void **)&e->threads, &p->threads_cap, e->nthreads + 1, sizeof(*e->threads),
	                 ESTIMATE_THREADS_MAX);
	if (!g) {
		uint32_t cap = p->threads_cap;
		struct tstate **v = realloc(p->ts, (size_t)cap * sizeof(*v));

		if (!v)
			g = -ENOMEM;
		else
			p->ts = v;
	}
	ts = g ? NULL : calloc(1, sizeof(*ts));
	if (!ts) {
		fail(p, g == -E2BIG ? g : -ENOMEM, g == -E2BIG ? "too many threads" : "out of memory");
		return NULL;
	}
	t = &e->threads[e->nthreads];
	memset(t, 0, sizeof(*t));
	t->pid = s->pid;
	t->tid = s->tid;
	t->image = s->image;
	t->creator = -1;
	ts->index = e->nthreads;
	p->ts[e->nthreads++] = ts;
	s->user = ts;
	return ts;
}

static void point_add(struct estimate *e, struct tstate *ts, uint64_t ns, double delta, double delta_wo, bool lib)
{
	struct estimate_priv *p = e->p;
	int g;

	if (p->npoints >= ESTIMATE_POINTS_MAX) {
		fail(p, -E2BIG, "too many modelled calls for the time line");
		return;
	}
	g = estcall_grow((void **)&ts->pts, &ts->cap, ts->npts + 1, sizeof(*ts->pts), ESTIMATE_POINTS_MAX);
	if (g) {
		fail(p, g, "out of memory");
		return;
	}
	ts->delta += delta;
	ts->delta_wo += delta_wo;
	if (lib)
		ts->nlib++;
	else
		ts->nsys++;
	ts->pts[ts->npts].ns = ns;
	ts->pts[ts->npts].delta = ts->delta;
	ts->pts[ts->npts].delta_wo = ts->delta_wo;
	ts->pts[ts->npts].nsys = ts->nsys;
	ts->pts[ts->npts].nlib = ts->nlib;
	ts->npts++;
	p->npoints++;
}

/* Accounts one finished, outermost-or-not call. */
static void account(struct estimate *e, struct walk_stream *s, struct tstate *ts, const struct estcall_in *c,
                    const char *call, enum estimate_fate fate, const struct oscal_entry *en, double x,
                    uint64_t enter_ns, uint64_t exit_ns, double model)
{
	double measured = (double)(exit_ns - enter_ns);

	if (fate != ESTIMATE_MODELLED)
		model = 0;
	if (fate == ESTIMATE_MODELLED)
		e->threads[ts->index].modelled++;
	if (fate != ESTIMATE_INSIDE && fate != ESTIMATE_UNFINISHED)
		point_add(e, ts, exit_ns, fate == ESTIMATE_MODELLED ? model - measured : 0,
		          fate == ESTIMATE_MODELLED ? -measured : 0, c->libcall);
	if (fate != ESTIMATE_INSIDE && fate != ESTIMATE_UNFINISHED) {
		if (c->libcall)
			e->libcalls++;
		else
			e->syscalls++;
	}
	if (fate != ESTIMATE_INSIDE)
		row_add(e, call, fate == ESTIMATE_MODELLED && en ? en->name : "", fate, measured, model);
	if (e->opts.on_call) {
		struct estimate_call ec = {
			.pid = s->pid,
			.tid = s->tid,
			.name = c->tname,
			.call = call,
			.entry = en && fate == ESTIMATE_MODELLED ? en->name : "",
			.libcall = c->libcall,
			.fate = fate,
			.enter_ns = enter_ns,
			.exit_ns = exit_ns,
			.x = x,
			.measured_ns = measured,
			.model_ns = model,
		};
		e->opts.on_call(e->opts.ctx, &ec);
	}
}

static const char *call_name(const struct estcall_in *c)
{
	const struct callrule *r = estcall_rule(c->name);

	return r ? r->call : c->name;
}

/* ------------------------------------------------------------ the walk's callbacks */

/* A task created by the thread ts (a clone, fork or vfork that returned
 * child): the child's creator, and a forked child's files (a thread's
 * table is its process's; the copy under its tid is never read). */
static void creation(struct estimate_priv *p, struct walk_stream *s, struct tstate *ts, uint32_t child, uint64_t ns)
{
	if (!estcall_grow((void **)&p->creations, &p->creations_cap, p->ncreations + 1, sizeof(*p->creations),
	                  ESTIMATE_THREADS_MAX)) {
		p->creations[p->ncreations].creator = ts->index;
		p->creations[p->ncreations].child = child;
		p->creations[p->ncreations].ns = ns;
		p->ncreations++;
	}
	estcall_fork(&p->calls, s->pid, child);
}

static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct estimate *e = ctx;
	struct estimate_priv *p = e->p;
	struct tstate *ts = tstate_of(e, s);
	char name[48];
	struct estcall_in c = { 0 };
	const struct oscal_entry *en = NULL;
	enum estimate_fate fate;
	double x = 0, model = 0;

	if (!ts)
		return;
	sys_name((enum sys_arch)sc->arch, sc->nr, name, sizeof(name));
	c.tname = c.name = name;
	c.args = sc->args;
	c.nargs = sc->nargs;
	c.has_args = sc->has_enter;
	c.has_ret = sc->has_exit;
	c.ret = sc->ret;
	c.pid = s->pid;
	c.tid = s->tid;
	if (sc->has_exit && sc->has_enter)
		estcall_follow_fd(&p->calls, s->pid, name, sc->args, sc->ret);
	if (sc->has_exit && sc->ret > 0 &&
	    (!strcmp(name, "clone") || !strcmp(name, "clone3") || !strcmp(name, "fork") || !strcmp(name, "vfork")))
		creation(p, s, ts, (uint32_t)sc->ret, sc->exit_ns);
	if (!sc->has_exit || !sc->has_enter) {
		ts->last_kind = 0;
		account(e, s, ts, &c, call_name(&c), ESTIMATE_UNFINISHED, NULL, 0, 0, 0, 0);
		return;
	}
	if (ts->last_kind == 1 && sc->enter_ns >= ts->last_exit && sc->enter_ns - ts->last_exit < p->gap_sys)
		p->gap_sys = sc->enter_ns - ts->last_exit;
	ts->last_kind = 1;
	ts->last_exit = sc->exit_ns;
	fate = estcall_decide(&e->p->calls, e->cal, &c, &en, &x, &model);
	if (ts->modelled_open) {
		/* inside a modelled C library call: its own time; a wait in it
		 * makes it a wait */
		if (fate == ESTIMATE_WAIT)
			for (uint32_t i = 0; i < ts->depth && i < ESTIMATE_STACK_MAX; i++)
				if (ts->stack[i].modelled)
					ts->stack[i].waited = true;
		fate = ESTIMATE_INSIDE;
	}
	account(e, s, ts, &c, call_name(&c), fate, en, x, sc->enter_ns, sc->exit_ns, model);
}

/* The name of the function at addr when it is a NAME@plt, else NULL. */
static const char *plt_name(struct estimate *e, struct walk_stream *s, uint64_t addr)
{
	struct estimate_priv *p = e->p;
	uint64_t h = hashindex_u64(addr ^ ((uint64_t)s->image << 48));
	uint32_t mask, slot;
	struct pltname *pn;
	char buf[1024];
	size_t len;

	if (hashindex_reserve(&p->plt_index)) {
		fail(p, -ENOMEM, "out of memory");
		return NULL;
	}
	mask = p->plt_index.cap - 1;
	for (slot = (uint32_t)h & mask; p->plt_index.val[slot]; slot = (slot + 1) & mask) {
		pn = &p->plts[p->plt_index.val[slot] - 1];
		if (pn->addr == addr && pn->image == s->image)
			return pn->plt ? pn->name : NULL;
	}
	if (estcall_grow((void **)&p->plts, &p->plts_cap, p->nplts + 1, sizeof(*p->plts), 1u << 20)) {
		fail(p, -ENOMEM, "out of memory");
		return NULL;
	}
	pn = &p->plts[p->nplts];
	memset(pn, 0, sizeof(*pn));
	pn->image = s->image;
	pn->addr = addr;
	walk_name(p->w, s->image, addr, buf, sizeof(buf));
	len = strlen(buf);
	if (len > 4 && len - 4 < sizeof(pn->name) && !strcmp(buf + len - 4, "@plt")) {
		pn->plt = true;
		memcpy(pn->name, buf, len - 4);
		pn->name[len - 4] = '\0';
	}
	hashindex_put(&p->plt_index, slot, h, p->nplts++);
	return pn->plt ? pn->name : NULL;
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct estimate *e = ctx;
	struct tstate *ts = tstate_of(e, s);
	const char *name;
	struct opencall *oc;

	(void)flags;
	if (!ts)
		return;
	if (!(name = plt_name(e, s, addr))) {
		ts->last_kind = 0;
		return;
	}
	e->p->plt_seen = true;
	if (ts->last_kind == 2 && ns >= ts->last_exit && ns - ts->last_exit < e->p->gap_lib)
		e->p->gap_lib = ns - ts->last_exit;
	ts->last_kind = 0;
	if (ts->depth++ >= ESTIMATE_STACK_MAX)
		return;
	oc = &ts->stack[ts->depth - 1];
	memset(oc, 0, sizeof(*oc));
	oc->addr = addr;
	oc->enter_ns = ns;
	oc->depth = depth;
	oc->rule = estcall_rule(name);
	snprintf(oc->name, sizeof(oc->name), "%s", name);
	/* decided now from the name alone (the arguments follow): a call that
	 * may be modelled owns the calls inside it */
	if (!ts->modelled_open) {
		struct estcall_in c = { .tname = name, .name = name, .libcall = true, .pid = s->pid, .tid = s->tid };
		enum estimate_fate fate;

		estcall_entry(&e->p->calls, e->cal, oc->rule, &c, &fate);
		oc->modelled = fate == ESTIMATE_MODELLED;
		if (oc->modelled)
			ts->modelled_open++;
	}
}

static void on_args(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, const struct libcsig_args *a)
{
	struct tstate *ts = s->user;
	struct opencall *oc;

	(void)ctx;
	(void)ns;
	if (!ts || !ts->depth || ts->depth > ESTIMATE_STACK_MAX)
		return;
	oc = &ts->stack[ts->depth - 1];
	if (oc->addr != addr)
		return;
	oc->has_args = true;
	oc->nargs = a->n < 6 ? a->n : 6;
	memcpy(oc->args, a->words, sizeof(oc->args));
}

static void on_retval(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint64_t value)
{
	struct tstate *ts = s->user;
	struct opencall *oc;

	(void)ctx;
	(void)ns;
	if (!ts || !ts->depth || ts->depth > ESTIMATE_STACK_MAX)
		return;
	oc = &ts->stack[ts->depth - 1];
	if (oc->addr != addr)
		return;
	oc->has_ret = true;
	oc->ret = value;
}

/* A libcall's result as a signed number, by its type. */
static int64_t libcall_ret(const char *name, uint64_t v)
{
	const struct libcsig *sig = libcsig_find(name);

	if (sig && sig->ret == 'i')
		return (int64_t)(int32_t)(uint32_t)v;
	return (int64_t)v;
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct estimate *e = ctx;
	struct tstate *ts = s->user;
	struct opencall *oc;
	struct estcall_in c = { 0 };
	const struct oscal_entry *en = NULL;
	enum estimate_fate fate;
	double x = 0, model = 0;
	char tname[OSCAL_NAME_MAX + 8];
	bool inside;

	if (!ts)
		return;
	ts->last_kind = 0;
	if (!ts->depth)
		return;
	if (ts->depth > ESTIMATE_STACK_MAX) {
		if (plt_name(e, s, addr))
			ts->depth--;
		return;
	}
	/* calls the thread left without their exit (a longjmp past them):
	 * forgotten, so that a modelled one does not own the calls after it */
	while (ts->depth && ts->depth <= ESTIMATE_STACK_MAX && ts->stack[ts->depth - 1].depth > depth) {
		if (ts->stack[ts->depth - 1].modelled)
			ts->modelled_open--;
		ts->depth--;
	}
	if (!ts->depth)
		return;
	oc = &ts->stack[ts->depth - 1];
	if (oc->addr != addr || oc->depth != depth)
		return;
	ts->depth--;
	ts->last_kind = 2;
	ts->last_exit = ns;
	if (oc->modelled)
		ts->modelled_open--;
	inside = ts->modelled_open > 0;
	snprintf(tname, sizeof(tname), "%s@plt", oc->name);
	c.tname = tname;
	c.name = oc->name;
	c.libcall = true;
	c.args = oc->args;
	c.nargs = oc->nargs;
	c.has_args = oc->has_args;
	c.has_ret = oc->has_ret;
	c.ret = oc->has_ret ? libcall_ret(oc->name, oc->ret) : 0;
	c.pid = s->pid;
	c.tid = s->tid;
	if (oc->has_args && oc->has_ret)
		estcall_follow_fd(&e->p->calls, s->pid, oc->name, oc->args, c.ret);
	if (oc->has_ret && c.ret > 0 && !strcmp(oc->name, "fork"))
		creation(e->p, s, ts, (uint32_t)c.ret, ns);
	if (flags & FILTER_UNFINISHED) {
		account(e, s, ts, &c, call_name(&c), ESTIMATE_UNFINISHED, NULL, 0, entry_ns, ns, 0);
		return;
	}
	fate = estcall_decide(&e->p->calls, e->cal, &c, &en, &x, &model);
	if (oc->has_args && oc->has_ret)
		estcall_follow_heap(&e->p->calls, s->pid, oc->name, oc->args, oc->ret);
	if (inside)
		fate = ESTIMATE_INSIDE;
	else if (oc->waited)
		fate = ESTIMATE_WAIT;
	else if (!oc->modelled && fate == ESTIMATE_MODELLED)
		fate = ESTIMATE_NO_MODEL; /* its inner calls were counted on their own */
	account(e, s, ts, &c, call_name(&c), fate, en, x, entry_ns, ns, model);
}

/* ------------------------------------------------------------ the time line */

/* The thread's added deltas by measured time t (calls ended by then). */
static void deltas_at(const struct estimate *e, const struct tstate *ts, uint64_t t, double *d, double *d_wo)
{
	double o;

	uint32_t lo = 0, hi = ts->npts;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ts->pts[mid].ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo) {
		*d = *d_wo = 0;
		return;
	}
	o = e->overhead_sys_ns * (double)ts->pts[lo - 1].nsys + e->overhead_lib_ns * (double)ts->pts[lo - 1].nlib;
	*d = ts->pts[lo - 1].delta - o;
	*d_wo = ts->pts[lo - 1].delta_wo - o;
}

static int32_t find_creator(const struct estimate *e, uint32_t i)
{
	const struct estimate_priv *p = e->p;
	const struct estimate_thread *t = &e->threads[i];
	uint32_t j;

	for (j = 0; j < p->ncreations; j++)
		if (p->creations[j].child == t->tid && p->creations[j].creator != i &&
		    e->threads[p->creations[j].creator].first_ns <= t->first_ns)
			return (int32_t)p->creations[j].creator;
	/* an image that replaced another (exec): the one before, same tid */
	for (j = 0; j < e->nthreads; j++)
		if (j != i && e->threads[j].tid == t->tid && e->threads[j].image != t->image &&
		    e->threads[j].first_ns <= t->first_ns)
			return (int32_t)j;
	/* a thread of the process: its main thread */
	for (j = 0; j < e->nthreads; j++)
		if (j != i && e->threads[j].tid == t->pid && e->threads[j].pid == t->pid &&
		    e->threads[j].first_ns <= t->first_ns)
			return (int32_t)j;
	return -1;
}

static int cmp_first(const void *a, const void *b, void *ctx)
{
	const struct estimate *e = ctx;
	const struct estimate_thread *x = &e->threads[*(const uint32_t *)a], *y = &e->threads[*(const uint32_t *)b];

	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int timeline(struct estimate *e)
{
	struct estimate_priv *p = e->p;
	uint32_t *order, i, k;
	bool *done;

	order = malloc((size_t)e->nthreads * sizeof(*order) + 1);
	done = calloc(e->nthreads + 1, sizeof(*done));
	if (!order || !done) {
		free(order);
		free(done);
		return -ENOMEM;
	}
	for (i = 0; i < e->nthreads; i++)
		order[i] = i;
	/* by first event (few threads: an insertion sort keeps it simple) */
	for (i = 1; i < e->nthreads; i++)
		for (k = i; k > 0 && cmp_first(&order[k - 1], &order[k], e) > 0; k--) {
			uint32_t tmp = order[k];

			order[k] = order[k - 1];
			order[k - 1] = tmp;
		}
	e->estimate_ns = e->without_ns = 0;
	for (k = 0; k < e->nthreads; k++) {
		struct estimate_thread *t = &e->threads[order[k]];
		const struct tstate *ts = p->ts[order[k]];
		int32_t c = find_creator(e, order[k]);

		t->calls = ts->nsys + ts->nlib;
		t->overhead = e->overhead_sys_ns * (double)ts->nsys + e->overhead_lib_ns * (double)ts->nlib;
		t->delta = ts->delta - t->overhead;
		t->delta_wo = ts->delta_wo - t->overhead;
		if (c >= 0 && done[c]) {
			const struct estimate_thread *ct = &e->threads[c];
			double d, d_wo;

			deltas_at(e, p->ts[c], t->first_ns, &d, &d_wo);
			t->creator = c;
			t->start = ct->start + (double)(t->first_ns - ct->first_ns) + d;
			t->start_wo = ct->start_wo + (double)(t->first_ns - ct->first_ns) + d_wo;
		} else {
			t->creator = -1;
			t->start = t->start_wo = (double)(t->first_ns - e->t0);
		}
		t->end = t->start + (double)(t->last_ns - t->first_ns) + t->delta;
		t->end_wo = t->start_wo + (double)(t->last_ns - t->first_ns) + t->delta_wo;
		if (t->end > e->estimate_ns)
			e->estimate_ns = t->end;
		if (t->end_wo > e->without_ns)
			e->without_ns = t->end_wo;
		done[order[k]] = true;
	}
	free(order);
	free(done);
	return 0;
}

/* Rows: modelled ones first, then by name, then by fate. */
static int cmp_rows(const void *a, const void *b)
{
	const struct estimate_row *x = a, *y = b;
	int c;

	if ((x->fate == ESTIMATE_MODELLED) != (y->fate == ESTIMATE_MODELLED))
		return x->fate == ESTIMATE_MODELLED ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	if (x->fate != y->fate)
		return x->fate < y->fate ? -1 : 1;
	return strcmp(x->entry, y->entry);
}

int estimate_run(struct estimate *e, struct walk *w, char *err, size_t errlen)
{
	struct walk_ops ops = { .ctx = e,
		                .entry = on_entry,
		                .exit = on_exit_ev,
		                .args = on_args,
		                .retval = on_retval,
		                .syscall = on_syscall };
	struct estimate_priv *p;
	int r;

	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->p = p;
	p->w = w;
	p->gap_sys = p->gap_lib = UINT64_MAX;
	r = walk_run_by_time(w, &ops);
	if (!r && p->error)
		r = p->error;
	if (r) {
		snprintf(err, errlen, "%s", p->error ? p->err : "out of memory");
		return r;
	}
	if (!w->syscalls && !p->plt_seen) {
		snprintf(err, errlen,
		         "the trace has neither system calls nor C library calls: estimate needs a "
		         "trace of record --syscalls or --libcalls");
		return -ENODATA;
	}
	/* the threads' measured spans */
	e->t0 = e->t1 = 0;
	for (uint32_t i = 0; i < w->nstreams; i++) {
		struct walk_stream *s = w->streams[i];
		struct tstate *ts = s->user;

		if (!s->selected || s->other)
			continue;
		if (!ts && !(ts = tstate_of(e, s))) {
			snprintf(err, errlen, "%s", p->err);
			return p->error;
		}
		e->threads[ts->index].first_ns = s->first_ns;
		e->threads[ts->index].last_ns = s->last_ns;
		if (!e->t0 || s->first_ns < e->t0)
			e->t0 = s->first_ns;
		if (s->last_ns > e->t1)
			e->t1 = s->last_ns;
	}
	e->span_ns = e->t1 > e->t0 ? (double)(e->t1 - e->t0) : 0;
	e->gap_sys_ns = p->gap_sys == UINT64_MAX ? -1 : (double)p->gap_sys;
	e->gap_lib_ns = p->gap_lib == UINT64_MAX ? -1 : (double)p->gap_lib;
	if (e->opts.overhead_given) {
		e->overhead_sys_ns = e->opts.overhead_sys_ns;
		e->overhead_lib_ns = e->opts.overhead_lib_ns;
	} else {
		e->overhead_sys_ns = e->gap_sys_ns > 0 ? e->gap_sys_ns : 0;
		e->overhead_lib_ns = e->gap_lib_ns > 0 ? e->gap_lib_ns : 0;
	}
	r = timeline(e);
	if (r) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	qsort(e->rows, e->nrows, sizeof(*e->rows), cmp_rows);
	return 0;
}

void estimate_release(struct estimate *e)
{
	struct estimate_priv *p = e->p;

	if (p) {
		for (uint32_t i = 0; i < e->nthreads; i++) {
			if (p->ts[i]) {
				free(p->ts[i]->pts);
				free(p->ts[i]);
			}
		}
		free(p->ts);
		hashindex_release(&p->row_index);
		hashindex_release(&p->plt_index);
		estcall_release(&p->calls);
		free(p->plts);
		free(p->creations);
		free(p);
	}
	free(e->rows);
	free(e->threads);
	e->p = NULL;
	e->rows = NULL;
	e->threads = NULL;
	e->nrows = e->nthreads = 0;
}
