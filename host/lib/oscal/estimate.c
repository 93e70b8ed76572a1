/* layerprof estimate's method (estimate.h): the table that maps a traced
 * call to a calibration entry and its parameter, the walk that decides
 * each call, and the estimated time line of the threads. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/klayer.h"
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
	uint64_t enter_ns;   /* the call's entry */
	bool wait;           /* a wait for another task (not for time) */
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
	/* its preempted intervals [a, b) (sched_switch out in state R, then
	 * in), the one open since pre_since (0: none), their sum, the part of
	 * it inside modelled calls (their model replaces all their time), and
	 * the part already taken off at a point */
	struct preempt {
		uint64_t a, b;
	} * pre;
	uint32_t npre, pre_cap;
	uint64_t pre_since;
	double pre_total, pre_inside, pre_taken;
	uint64_t preemptions;
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
	const struct kformats *kf; /* the trace's tracepoint formats, once a kernel event came */
	bool kf_tried;
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

static void point_add(struct estimate *e, struct tstate *ts, uint64_t enter_ns, uint64_t ns, double delta,
                      double delta_wo, bool lib, bool wait)
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
	/* what the thread was preempted since its last point, outside
	 * modelled calls: not the program's time */
	double pre = ts->pre_total - ts->pre_inside - ts->pre_taken;

	ts->pre_taken += pre;
	ts->delta += delta - pre;
	ts->delta_wo += delta_wo - pre;
	if (lib)
		ts->nlib++;
	else
		ts->nsys++;
	ts->pts[ts->npts].ns = ns;
	ts->pts[ts->npts].delta = ts->delta;
	ts->pts[ts->npts].delta_wo = ts->delta_wo;
	ts->pts[ts->npts].nsys = ts->nsys;
	ts->pts[ts->npts].nlib = ts->nlib;
	ts->pts[ts->npts].enter_ns = enter_ns;
	ts->pts[ts->npts].wait = wait;
	ts->npts++;
	p->npoints++;
}

/* The thread's preempted time within [a, b): the intervals that end after
 * a (the latest come last). */
static double preempted_within(const struct tstate *ts, uint64_t a, uint64_t b)
{
	double sum = 0;

	for (uint32_t i = ts->npre; i > 0 && ts->pre[i - 1].b > a; i--) {
		uint64_t lo = ts->pre[i - 1].a > a ? ts->pre[i - 1].a : a;
		uint64_t hi = ts->pre[i - 1].b < b ? ts->pre[i - 1].b : b;

		if (hi > lo)
			sum += (double)(hi - lo);
	}
	return sum;
}

/* Accounts one finished, outermost-or-not call. */
static void account(struct estimate *e, struct walk_stream *s, struct tstate *ts, const struct estcall_in *c,
                    const char *call, enum estimate_fate fate, const struct oscal_entry *en, double x,
                    uint64_t enter_ns, uint64_t exit_ns, double model)
{
	double measured = (double)(exit_ns - enter_ns);

	if (fate != ESTIMATE_MODELLED)
		model = 0;
	if (fate == ESTIMATE_MODELLED) {
		e->threads[ts->index].modelled++;
		ts->pre_inside += preempted_within(ts, enter_ns, exit_ns);
	}
	if (fate != ESTIMATE_INSIDE && fate != ESTIMATE_UNFINISHED)
		point_add(e, ts, enter_ns, exit_ns, fate == ESTIMATE_MODELLED ? model - measured : 0,
		          fate == ESTIMATE_MODELLED ? -measured : 0, c->libcall,
		          fate == ESTIMATE_WAIT && strcmp(call, "nanosleep") && strcmp(call, "clock_nanosleep"));
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

/* A scheduler switch of the thread (record --kernel): out preempted (state
 * R) opens an interval, the next switch in closes it. */
static void on_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k)
{
	struct estimate *e = ctx;
	struct estimate_priv *p = e->p;
	struct tstate *ts = tstate_of(e, s);
	struct kevent ev;

	if (!ts)
		return;
	if (!p->kf_tried) {
		p->kf = klayer_formats(p->w, NULL, 0);
		p->kf_tried = true;
	}
	if (!p->kf || kevent_decode(p->kf, k->id, k->raw, k->raw_len, &ev) || ev.kind != KEV_SWITCH)
		return;
	e->switches = true;
	if ((uint32_t)ev.u.sw.prev_pid == s->tid && ev.u.sw.prev_pid != ev.u.sw.next_pid) {
		ts->pre_since = kevent_switch_state(&ev) == 'R' ? k->ns : 0;
		return;
	}
	if ((uint32_t)ev.u.sw.next_pid != s->tid || !ts->pre_since)
		return;
	if (k->ns > ts->pre_since &&
	    !estcall_grow((void **)&ts->pre, &ts->pre_cap, ts->npre + 1, sizeof(*ts->pre), ESTIMATE_POINTS_MAX)) {
		ts->pre[ts->npre].a = ts->pre_since;
		ts->pre[ts->npre++].b = k->ns;
		ts->pre_total += (double)(k->ns - ts->pre_since);
		ts->preemptions++;
	}
	ts->pre_since = 0;
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

/* An event of the time line: a point (kind 0), a thread's start (1), its
 * end (2), in the order of the trace's times. */
struct tlevent {
	uint64_t ns;
	uint32_t kind, thread, idx;
};

static int cmp_tlevent(const void *a, const void *b)
{
	const struct tlevent *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Per thread during the pass: its estimated time less its measured time
 * (both from the program's start), with and without the models. */
struct tlstate {
	bool started;
	double off, off_wo;
	double prev_d, prev_d_wo; /* the cumulative figures of its last point */
};

/* The threads' estimated time lines, in one pass over every thread's
 * points in time order.  A point adds its call's delta (model - measured,
 * less the recorder's cost).  A thread starts at its creator's estimated
 * time of its first event.  A wait for another task ends, on the
 * estimated time line, where the task that acted last before its end (its
 * waker: the last other thread with an event between the wait's entry and
 * exit) stood then, and not before the wait began: off = max(off - the
 * wait's length, the waker's off).  Without a waker, the wait keeps its
 * length. */
static int timeline(struct estimate *e)
{
	struct estimate_priv *p = e->p;
	struct tlevent *ev;
	struct tlstate *st;
	uint64_t n = 2u * (uint64_t)e->nthreads, k = 0, last_ns = 0, other_ns = 0;
	int64_t last = -1, other = -1;
	uint32_t i;

	for (i = 0; i < e->nthreads; i++)
		n += p->ts[i]->npts;
	ev = malloc((size_t)n * sizeof(*ev) + 1);
	st = calloc(e->nthreads + 1, sizeof(*st));
	if (!ev || !st) {
		free(ev);
		free(st);
		return -ENOMEM;
	}
	for (i = 0; i < e->nthreads; i++) {
		const struct tstate *ts = p->ts[i];

		ev[k++] = (struct tlevent){ e->threads[i].first_ns, 1, i, 0 };
		for (uint32_t j = 0; j < ts->npts; j++)
			ev[k++] = (struct tlevent){ ts->pts[j].ns, 0, i, j };
		ev[k++] = (struct tlevent){ e->threads[i].last_ns, 2, i, 0 };
	}
	qsort(ev, n, sizeof(*ev), cmp_tlevent);
	e->estimate_ns = e->without_ns = 0;
	for (k = 0; k < n; k++) {
		struct estimate_thread *t = &e->threads[ev[k].thread];
		const struct tstate *ts = p->ts[ev[k].thread];
		struct tlstate *me = &st[ev[k].thread];

		if (ev[k].kind == 1) {
			int32_t c = find_creator(e, ev[k].thread);

			t->creator = c >= 0 && st[c].started ? c : -1;
			me->off = t->creator >= 0 ? st[c].off : 0;
			me->off_wo = t->creator >= 0 ? st[c].off_wo : 0;
			me->started = true;
			t->start = (double)(t->first_ns - e->t0) + me->off;
			t->start_wo = (double)(t->first_ns - e->t0) + me->off_wo;
			t->calls = ts->nsys + ts->nlib;
			t->overhead = e->overhead_sys_ns * (double)ts->nsys + e->overhead_lib_ns * (double)ts->nlib;
			t->delta = ts->delta - t->overhead;
			t->delta_wo = ts->delta_wo - t->overhead;
			t->preempted = ts->pre_total - ts->pre_inside;
			t->preemptions = ts->preemptions;
			e->preempted_ns += t->preempted;
		} else if (ev[k].kind == 0 && me->started) {
			const struct tpoint *pt = &ts->pts[ev[k].idx];
			double o = e->overhead_sys_ns * (double)pt->nsys + e->overhead_lib_ns * (double)pt->nlib;
			bool mine = last == (int64_t)ev[k].thread;
			int64_t w = mine ? other : last;
			uint64_t w_ns = mine ? other_ns : last_ns;

			if (pt->wait && w >= 0 && st[w].started && w_ns >= pt->enter_ns) {
				double len = (double)(pt->ns - pt->enter_ns);

				me->off = me->off - len > st[w].off ? me->off - len : st[w].off;
				me->off_wo = me->off_wo - len > st[w].off_wo ? me->off_wo - len : st[w].off_wo;
			}
			me->off += (pt->delta - o) - me->prev_d;
			me->off_wo += (pt->delta_wo - o) - me->prev_d_wo;
			me->prev_d = pt->delta - o;
			me->prev_d_wo = pt->delta_wo - o;
		} else if (ev[k].kind == 2 && me->started) {
			/* preempted after its last point */
			double tail = ts->pre_total - ts->pre_inside - ts->pre_taken;

			t->end = (double)(t->last_ns - e->t0) + me->off - tail;
			t->end_wo = (double)(t->last_ns - e->t0) + me->off_wo - tail;
			if (t->end > e->estimate_ns)
				e->estimate_ns = t->end;
			if (t->end_wo > e->without_ns)
				e->without_ns = t->end_wo;
		}
		if (last != (int64_t)ev[k].thread) {
			other = last;
			other_ns = last_ns;
		}
		last = ev[k].thread;
		last_ns = ev[k].ns;
	}
	free(ev);
	free(st);
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
		                .syscall = on_syscall,
		                .kernel = on_kernel };
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
				free(p->ts[i]->pre);
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
