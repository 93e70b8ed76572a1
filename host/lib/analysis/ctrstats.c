/* Counter statistics per program, thread and function (see ctrstats.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/ctrstats.h"
#include "host/lib/trace/symbolizer.h"

#define CTRSTATS_FIRST_FUNCS 256u
#define CTRSTATS_FIRST_DEPTH 64u

/* A call open on a thread: the values at its entry, and the inclusive
 * counts of its direct callees that ended so far. */
struct ctr_frame {
	uint64_t fn;
	uint32_t func; /* its entry in st->fns + 1; 0: over the cap, not counted */
	uint32_t n;
	/* a call of the same function is open below it in the thread: its
	 * inclusive counts are in that one's already (recursion counts once) */
	bool nested;
	uint64_t at[LP_COUNTERS_MAX];
	uint64_t child[LP_COUNTERS_MAX];
};

/* One thread's values and open calls. */
struct ctrstats_thread {
	const struct walk_stream *s;
	bool has_begin, has_end, has_last;
	uint32_t nbegin, nlast;
	uint64_t begin[LP_COUNTERS_MAX], last[LP_COUNTERS_MAX];
	uint64_t enabled[LP_COUNTERS_MAX], running[LP_COUNTERS_MAX];
	bool has_times;
	uint32_t flags; /* of its records, together */
	uint64_t records;
	struct ctr_frame *stack;
	uint32_t depth, cap;
	uint32_t deep; /* calls open over CTRSTATS_DEPTH_MAX, not followed */
};

/* One function's counts, by (image, address) and with CTRSTATS_PER_THREAD
 * the thread. */
struct ctrstats_fn {
	uint64_t addr;
	uint32_t image, tid;
	const struct walk_stream *s; /* the first thread that called it */
	uint64_t calls, ended, unwound;
	uint32_t n;
	uint64_t incl[LP_COUNTERS_MAX], self[LP_COUNTERS_MAX];
};

struct fn_key {
	uint64_t addr;
	uint32_t image, tid;
};

void ctrstats_init(struct ctrstats *st, struct walk *w, unsigned flags)
{
	memset(st, 0, sizeof(*st));
	st->w = w;
	st->flags = flags;
}

void ctrstats_release(struct ctrstats *st)
{
	uint32_t i;

	for (i = 0; i < st->nthreads; i++) {
		free(st->threads[i]->stack);
		free(st->threads[i]);
	}
	free(st->threads);
	free(st->slot_of);
	free(st->fns);
	hashindex_release(&st->fn_index);
	free(st->cpus);
	memset(st, 0, sizeof(*st));
}

/* ------------------------------------------------------------ building */

static uint32_t count_of(const struct walk_counter *c)
{
	return c->n > LP_COUNTERS_MAX ? LP_COUNTERS_MAX : c->n;
}

static void values_set(struct ctrstats_values *val, const struct walk_counter *c)
{
	uint32_t n = count_of(c), i;

	memset(val, 0, sizeof(*val));
	memcpy(val->v, c->values, n * sizeof(val->v[0]));
	val->flags = c->flags;
	if (c->enabled && c->running) {
		val->has_times = true;
		for (i = 0; i < n; i++) {
			val->enabled[i] = c->enabled[i];
			val->running[i] = c->running[i];
		}
	}
}

static void cpu_put(struct ctrstats *st, const struct walk_counter *c)
{
	uint32_t i;

	for (i = 0; i < st->ncpus; i++) {
		if (st->cpus[i].cpu == c->cpu) {
			values_set(&st->cpus[i].val, c); /* cumulative: the last holds */
			return;
		}
	}
	if (st->ncpus == CTRSTATS_CPUS_MAX) {
		st->cpus_dropped++;
		return;
	}
	if (st->ncpus == st->cpus_cap) {
		uint32_t cap = st->cpus_cap ? 2 * st->cpus_cap : 16;
		struct ctrstats_cpu_row *n = realloc(st->cpus, cap * sizeof(*n));

		if (!n) {
			st->oom = true;
			return;
		}
		st->cpus = n;
		st->cpus_cap = cap;
	}
	st->cpus[st->ncpus].cpu = c->cpu;
	values_set(&st->cpus[st->ncpus++].val, c);
}

/* The thread of stream s, made on its first record; NULL over the cap or
 * when memory runs out. */
static struct ctrstats_thread *thread_get(struct ctrstats *st, const struct walk_stream *s)
{
	struct ctrstats_thread *t;

	if (s->index < st->slot_cap && st->slot_of[s->index])
		return st->threads[st->slot_of[s->index] - 1];
	if (st->nthreads == CTRSTATS_THREADS_MAX) {
		st->threads_dropped++;
		return NULL;
	}
	if (s->index >= st->slot_cap) {
		uint32_t cap = st->slot_cap ? st->slot_cap : 64, *n;

		while (cap <= s->index)
			cap *= 2;
		n = realloc(st->slot_of, cap * sizeof(*n));
		if (!n)
			goto nomem;
		memset(n + st->slot_cap, 0, (cap - st->slot_cap) * sizeof(*n));
		st->slot_of = n;
		st->slot_cap = cap;
	}
	if (st->nthreads == st->threads_cap) {
		uint32_t cap = st->threads_cap ? 2 * st->threads_cap : 16;
		struct ctrstats_thread **n = realloc(st->threads, cap * sizeof(*n));

		if (!n)
			goto nomem;
		st->threads = n;
		st->threads_cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	t->s = s;
	st->threads[st->nthreads++] = t;
	st->slot_of[s->index] = st->nthreads;
	return t;
nomem:
	st->oom = true;
	return NULL;
}

static bool fn_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct ctrstats_fn *f = &((const struct ctrstats *)ctx)->fns[item];
	const struct fn_key *k = key;

	return f->addr == k->addr && f->image == k->image && f->tid == k->tid;
}

/* The counts of function addr called on stream s, made when new: its entry
 * + 1, or 0 over the cap or when memory runs out. */
static uint32_t fn_get(struct ctrstats *st, const struct walk_stream *s, uint64_t addr)
{
	struct fn_key k = { addr, s->image, (st->flags & CTRSTATS_PER_THREAD) ? s->tid : 0 };
	uint64_t hash = hashindex_u64(addr ^ hashindex_u64(((uint64_t)k.image << 32) | k.tid));
	struct ctrstats_fn *f;
	uint32_t slot;

	if (hashindex_reserve(&st->fn_index)) {
		st->oom = true;
		return 0;
	}
	slot = hashindex_slot(&st->fn_index, hash, fn_eq, st, &k);
	if (st->fn_index.val[slot])
		return st->fn_index.val[slot];
	if (st->nfns == CTRSTATS_FUNCS_MAX) {
		st->fns_dropped++;
		return 0;
	}
	if (st->nfns == st->fns_cap) {
		uint32_t cap = st->fns_cap ? 2 * st->fns_cap : CTRSTATS_FIRST_FUNCS;

		f = realloc(st->fns, cap * sizeof(*f));
		if (!f) {
			st->oom = true;
			return 0;
		}
		st->fns = f;
		st->fns_cap = cap;
	}
	f = &st->fns[st->nfns];
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->image = k.image;
	f->tid = k.tid;
	f->s = s;
	hashindex_put(&st->fn_index, slot, hash, st->nfns++);
	return st->nfns;
}

static void call_enter(struct ctrstats *st, struct ctrstats_thread *t, const struct walk_counter *c)
{
	struct ctr_frame *fr;
	uint32_t n = count_of(c);

	if (t->deep || t->depth == CTRSTATS_DEPTH_MAX) {
		t->deep++;
		st->deep_dropped++;
		return;
	}
	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : CTRSTATS_FIRST_DEPTH;

		if (cap > CTRSTATS_DEPTH_MAX)
			cap = CTRSTATS_DEPTH_MAX;
		fr = realloc(t->stack, cap * sizeof(*fr));
		if (!fr) {
			st->oom = true;
			return;
		}
		t->stack = fr;
		t->cap = cap;
	}
	fr = &t->stack[t->depth++];
	fr->fn = c->fn;
	fr->n = n;
	memcpy(fr->at, c->values, n * sizeof(fr->at[0]));
	memset(fr->child, 0, sizeof(fr->child));
	fr->func = fn_get(st, t->s, c->fn);
	fr->nested = false;
	if (fr->func) {
		st->fns[fr->func - 1].calls++;
		/* the same thread only: another thread's call of the function
		 * at the same time is no recursion */
		for (uint32_t k = 0; k + 1 < t->depth && !fr->nested; k++)
			fr->nested = t->stack[k].func == fr->func;
	}
}

/* Ends the call open at the top of t's stack with values v (n of them). */
static void call_end(struct ctrstats *st, struct ctrstats_thread *t, const uint64_t *v, uint32_t n)
{
	struct ctr_frame *fr = &t->stack[t->depth - 1];
	uint64_t incl[LP_COUNTERS_MAX];
	uint32_t m = n < fr->n ? n : fr->n, i;
	struct ctrstats_fn *f = fr->func ? &st->fns[fr->func - 1] : NULL;

	for (i = 0; i < m; i++)
		incl[i] = v[i] > fr->at[i] ? v[i] - fr->at[i] : 0;
	if (t->depth > 1) {
		struct ctr_frame *up = &t->stack[t->depth - 2];

		for (i = 0; i < m; i++)
			up->child[i] += incl[i];
	}
	t->depth--;
	if (!f)
		return;
	f->ended++;
	if (m > f->n)
		f->n = m;
	for (i = 0; i < m; i++) {
		if (!fr->nested)
			f->incl[i] += incl[i];
		f->self[i] += incl[i] > fr->child[i] ? incl[i] - fr->child[i] : 0;
	}
}

/* Leaves the call at the top of t's stack without counts (a longjmp passed
 * it): its caller's self keeps what it counted. */
static void call_unwind(struct ctrstats *st, struct ctrstats_thread *t)
{
	struct ctr_frame *fr = &t->stack[--t->depth];

	st->unwound++;
	if (fr->func) {
		struct ctrstats_fn *f = &st->fns[fr->func - 1];

		f->unwound++;
	}
}

static void call_exit(struct ctrstats *st, struct ctrstats_thread *t, const struct walk_counter *c)
{
	uint32_t k;

	if (t->deep) {
		t->deep--; /* taken as the exit of the deepest call not followed */
		return;
	}
	for (k = t->depth; k > 0; k--)
		if (t->stack[k - 1].fn == c->fn)
			break;
	if (!k) {
		st->unmatched_exits++;
		return;
	}
	while (t->depth > k)
		call_unwind(st, t);
	call_end(st, t, c->values, count_of(c));
}

/* The thread's values ended (END, or the end of the trace): its open calls
 * end with them. */
static void calls_close(struct ctrstats *st, struct ctrstats_thread *t)
{
	t->deep = 0;
	while (t->depth) {
		st->open_at_end++;
		call_end(st, t, t->last, t->nlast);
	}
}

static void last_set(struct ctrstats_thread *t, const struct walk_counter *c)
{
	uint32_t n = count_of(c);

	memcpy(t->last, c->values, n * sizeof(t->last[0]));
	t->nlast = n;
	t->has_last = true;
}

static void ctr_counter(void *ctx, struct walk_stream *s, const struct walk_counter *c)
{
	struct ctrstats *st = ctx;
	struct ctrstats_thread *t;
	uint32_t n = count_of(c);

	st->records++;
	if (c->flags & LP_CTR_SCALED)
		st->scaled_records++;
	if (n > st->nvalues)
		st->nvalues = n;
	if (c->kind == LP_CTR_PROCESS) {
		values_set(&st->process, c);
		st->has_process = true;
		return;
	}
	if (c->kind == LP_CTR_CPU) {
		cpu_put(st, c);
		return;
	}
	t = thread_get(st, s);
	if (!t)
		return;
	t->records++;
	t->flags |= c->flags & LP_CTR_SCALED;
	if (t->has_end)
		return; /* its values ended */
	switch (c->kind) {
	case LP_CTR_BEGIN:
		if (!t->has_begin) {
			memcpy(t->begin, c->values, n * sizeof(t->begin[0]));
			t->nbegin = n;
			t->has_begin = true;
		}
		last_set(t, c);
		break;
	case LP_CTR_ENTRY:
		last_set(t, c);
		call_enter(st, t, c);
		break;
	case LP_CTR_EXIT:
		last_set(t, c);
		call_exit(st, t, c);
		break;
	case LP_CTR_END:
		last_set(t, c);
		t->has_end = true;
		if (c->enabled && c->running) {
			t->has_times = true;
			memcpy(t->enabled, c->enabled, n * sizeof(t->enabled[0]));
			memcpy(t->running, c->running, n * sizeof(t->running[0]));
		}
		calls_close(st, t);
		break;
	default: /* SAMPLE */
		last_set(t, c);
		break;
	}
}

static void ctr_end(void *ctx, struct walk_stream *s)
{
	struct ctrstats *st = ctx;

	if (s->index < st->slot_cap && st->slot_of[s->index]) {
		struct ctrstats_thread *t = st->threads[st->slot_of[s->index] - 1];

		if (!t->has_end)
			calls_close(st, t);
	}
}

void ctrstats_walk_ops(struct ctrstats *st, struct walk_ops *ops)
{
	ops->ctx = st;
	ops->counter = ctr_counter;
	ops->end = ctr_end;
}

/* ------------------------------------------------------------ metrics */

/* A counter's name without its modifiers ("cycles:u" -> "cycles"). */
static void base_name(const char *name, char *out)
{
	size_t n = strcspn(name, ":");

	if (n >= CTRSTATS_NAME_MAX)
		n = CTRSTATS_NAME_MAX - 1;
	memcpy(out, name, n);
	out[n] = '\0';
}

/* The index of the counter named base (or alias), or -1. */
static int find_base(char names[][CTRSTATS_NAME_MAX], uint32_t n, const char *base, const char *alias)
{
	char b[CTRSTATS_NAME_MAX];
	uint32_t i;

	for (i = 0; i < n; i++) {
		base_name(names[i], b);
		if (!strcmp(b, base) || (alias && !strcmp(b, alias)))
			return (int)i;
	}
	return -1;
}

/* The counter a "...-misses" counter (base name miss) missed of, or -1. */
static int find_refs(char names[][CTRSTATS_NAME_MAX], uint32_t n, const char *miss)
{
	char prefix[CTRSTATS_NAME_MAX], want[CTRSTATS_NAME_MAX + 8];
	size_t len = strlen(miss) - strlen("-misses");

	memcpy(prefix, miss, len);
	prefix[len] = '\0';
	if (!strcmp(prefix, "cache"))
		return find_base(names, n, "cache-references", NULL);
	if (!strcmp(prefix, "branch"))
		return find_base(names, n, "branches", "branch-instructions");
	if (len > 9 && !strcmp(prefix + len - 9, "-prefetch"))
		snprintf(want, sizeof(want), "%ses", prefix);
	else if ((len > 5 && !strcmp(prefix + len - 5, "-load")) || (len > 6 && !strcmp(prefix + len - 6, "-store")))
		snprintf(want, sizeof(want), "%ss", prefix);
	else
		return -1;
	return find_base(names, n, want, NULL);
}

uint32_t ctrstats_metrics(char names[][CTRSTATS_NAME_MAX], uint32_t n, struct ctrstats_metric *out)
{
	int ins = find_base(names, n, "instructions", NULL), cyc = find_base(names, n, "cycles", "cpu-cycles");
	uint32_t k = 0, i;

	if (ins >= 0 && cyc >= 0) {
		out[k] = (struct ctrstats_metric){ .kind = CTRSTATS_IPC, .num = (uint32_t)ins, .den = (uint32_t)cyc };
		snprintf(out[k++].name, sizeof(out[0].name), "IPC");
	}
	for (i = 0; i < n; i++) {
		char b[CTRSTATS_NAME_MAX];
		size_t len;
		int refs;

		base_name(names[i], b);
		len = strlen(b);
		if (len <= strlen("-misses") || strcmp(b + len - strlen("-misses"), "-misses"))
			continue;
		if (ins >= 0) {
			out[k] = (struct ctrstats_metric){ .kind = CTRSTATS_MPKI, .num = i, .den = (uint32_t)ins };
			snprintf(out[k++].name, sizeof(out[0].name), "%s MPKI", names[i]);
		}
		refs = find_refs(names, n, b);
		if (refs >= 0) {
			out[k] = (struct ctrstats_metric){ .kind = CTRSTATS_RATIO, .num = i, .den = (uint32_t)refs };
			snprintf(out[k++].name, sizeof(out[0].name), "%s ratio", names[i]);
		}
	}
	return k;
}

bool ctrstats_metric_value(const struct ctrstats_metric *m, const uint64_t *v, double *out)
{
	if (!v[m->den])
		return false;
	*out = (double)v[m->num] / (double)v[m->den];
	if (m->kind == CTRSTATS_MPKI)
		*out *= 1000.0;
	return true;
}

bool ctrstats_scale(const struct ctrstats_values *val, uint32_t i, double *factor)
{
	if (!val->has_times)
		return false;
	if (val->running[i] >= val->enabled[i])
		*factor = 1.0;
	else if (!val->running[i])
		*factor = 0.0;
	else
		*factor = (double)val->enabled[i] / (double)val->running[i];
	return true;
}

/* ------------------------------------------------------------ sort order */

void ctrstats_order_default(struct ctrstats_order *order)
{
	memset(order, 0, sizeof(*order));
	order->keys[0].kind = CTRSTATS_KEY_INCL;
	order->nkeys = 1;
}

int ctrstats_order_parse(struct ctrstats_order *order, const char *arg)
{
	char buf[512], *tok, *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	memset(order, 0, sizeof(*order));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *name = tok;
		enum ctrstats_key_kind kind = CTRSTATS_KEY_INCL;

		if (order->nkeys == CTRSTATS_KEYS_MAX)
			return -EINVAL;
		if (!strcmp(tok, "calls")) {
			kind = CTRSTATS_KEY_CALLS;
			name = "";
		} else if (!strcmp(tok, "name")) {
			kind = CTRSTATS_KEY_NAME;
			name = "";
		} else if (!strcmp(tok, "self") || !strcmp(tok, "incl") || !strcmp(tok, "total")) {
			kind = tok[0] == 's' ? CTRSTATS_KEY_SELF : CTRSTATS_KEY_INCL;
			name = "";
		} else if (!strncmp(tok, "self:", 5)) {
			kind = CTRSTATS_KEY_SELF;
			name = tok + 5;
		} else if (!strncmp(tok, "incl:", 5)) {
			name = tok + 5;
		} else if (!strncmp(tok, "total:", 6)) {
			name = tok + 6;
		}
		/* "self:" names no counter; a name too long names none either */
		if ((name != tok && strchr(tok, ':') && !*name) || strlen(name) >= sizeof(order->keys[0].name))
			return -EINVAL;
		order->keys[order->nkeys].kind = kind;
		strcpy(order->keys[order->nkeys].name, name);
		order->nkeys++;
	}
	return order->nkeys ? 0 : -EINVAL;
}

/* Finds the counter or metric each key names. */
static int order_resolve(struct ctrstats_order *order, const struct ctrstats_result *res, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < order->nkeys; i++) {
		struct ctrstats_key *k = &order->keys[i];
		uint32_t j;

		if (k->kind == CTRSTATS_KEY_CALLS || k->kind == CTRSTATS_KEY_NAME)
			continue;
		if (k->kind == CTRSTATS_KEY_METRIC)
			k->kind = CTRSTATS_KEY_INCL; /* resolved again */
		if (!k->name[0]) {
			k->index = 0;
			continue;
		}
		for (j = 0; j < res->n && strcmp(res->names[j], k->name); j++)
			;
		if (j < res->n) {
			k->index = j;
			continue;
		}
		if (k->kind == CTRSTATS_KEY_INCL) {
			for (j = 0; j < res->nmetrics && strcmp(res->metrics[j].name, k->name); j++)
				;
			if (j < res->nmetrics) {
				k->kind = CTRSTATS_KEY_METRIC;
				k->index = j;
				continue;
			}
		}
		snprintf(err, errlen, "'%s' is not a counter%s of the trace", k->name,
		         k->kind == CTRSTATS_KEY_INCL ? " or metric" : "");
		return -EINVAL;
	}
	return 0;
}

struct sort_ctx {
	const struct ctrstats_order *order;
	const struct ctrstats_result *res;
};

/* A row's value for key k; *has false when a metric has no value (those
 * rows go last). */
static double row_key(const struct ctrstats_fn_row *r, const struct sort_ctx *sc, int k, bool *has)
{
	const struct ctrstats_key *key = &sc->order->keys[k];
	double v = 0;

	*has = true;
	switch (key->kind) {
	case CTRSTATS_KEY_CALLS:
		return (double)r->calls;
	case CTRSTATS_KEY_SELF:
		return (double)r->self[key->index];
	case CTRSTATS_KEY_METRIC:
		*has = ctrstats_metric_value(&sc->res->metrics[key->index], r->incl, &v);
		return v;
	default:
		return (double)r->incl[key->index];
	}
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct ctrstats_fn_row *x = a, *y = b;
	const struct sort_ctx *sc = ctx;
	int i, c;

	for (i = 0; i < sc->order->nkeys; i++) {
		bool hx, hy;
		double vx, vy;

		if (sc->order->keys[i].kind == CTRSTATS_KEY_NAME) {
			c = strcmp(x->name, y->name);
			if (c)
				return c;
			continue;
		}
		vx = row_key(x, sc, i, &hx);
		vy = row_key(y, sc, i, &hy);
		if (hx != hy)
			return hx ? -1 : 1;
		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* ------------------------------------------------------------ collecting */

struct row_key {
	const char *name;
	uint32_t tid;
	bool per_thread;
};

static bool row_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct ctrstats_fn_row *r = &((const struct ctrstats_result *)ctx)->fns[item];
	const struct row_key *k = key;

	return !strcmp(r->name, k->name) && (!k->per_thread || r->tid == k->tid);
}

/* The row of function f's name (and thread), added when new; NULL when
 * memory runs out. */
static struct ctrstats_fn_row *row_get(struct ctrstats *st, struct ctrstats_result *res, struct hashindex *ix,
                                       size_t *cap, const struct ctrstats_fn *f)
{
	struct row_key k = { NULL, f->s->tid, (st->flags & CTRSTATS_PER_THREAD) != 0 };
	struct ctrstats_fn_row *r;
	struct symbol sym;
	char buf[1024];
	uint64_t hash;
	uint32_t slot;

	k.name = walk_name(st->w, f->image, f->addr, buf, sizeof(buf));
	hash = hashindex_bytes(k.name, strlen(k.name), k.per_thread ? hashindex_u64(k.tid) : 0);
	if (hashindex_reserve(ix))
		return NULL;
	slot = hashindex_slot(ix, hash, row_eq, res, &k);
	if (ix->val[slot])
		return &res->fns[ix->val[slot] - 1];
	if (res->nfns == *cap) {
		size_t ncap = *cap ? 2 * *cap : 256;
		struct ctrstats_fn_row *n = realloc(res->fns, ncap * sizeof(*n));

		if (!n)
			return NULL;
		res->fns = n;
		*cap = ncap;
	}
	r = &res->fns[res->nfns];
	memset(r, 0, sizeof(*r));
	r->name = strdup(k.name);
	if (!r->name)
		return NULL;
	r->tid = f->s->tid;
	r->pid = f->s->pid;
	if (!symbolizer_lookup(st->w->sym, f->image, f->addr, &sym)) {
		r->file = sym.file;
		r->line = sym.line;
	}
	hashindex_put(ix, slot, hash, (uint32_t)res->nfns++);
	return r;
}

static int collect_fns(struct ctrstats *st, struct ctrstats_result *res)
{
	struct hashindex ix = { 0 };
	size_t cap = 0;
	uint32_t i, j;

	for (i = 0; i < st->nfns; i++) {
		const struct ctrstats_fn *f = &st->fns[i];
		struct ctrstats_fn_row *r = row_get(st, res, &ix, &cap, f);

		if (!r) {
			hashindex_release(&ix);
			return -ENOMEM;
		}
		r->calls += f->calls;
		r->ended += f->ended;
		r->unwound += f->unwound;
		if (f->n > r->n)
			r->n = f->n;
		for (j = 0; j < f->n; j++) {
			r->incl[j] += f->incl[j];
			r->self[j] += f->self[j];
		}
	}
	hashindex_release(&ix);
	return 0;
}

static void collect_threads(struct ctrstats *st, struct ctrstats_result *res)
{
	uint32_t i, j;

	for (i = 0; i < st->nthreads; i++) {
		const struct ctrstats_thread *t = st->threads[i];
		struct ctrstats_thread_row *r = &res->threads[res->nthreads++];

		memset(r, 0, sizeof(*r));
		r->s = t->s;
		r->has_begin = t->has_begin;
		r->has_end = t->has_end;
		r->records = t->records;
		r->val.flags = t->flags;
		r->val.has_times = t->has_times;
		for (j = 0; j < t->nlast; j++) {
			uint64_t b = j < t->nbegin ? t->begin[j] : 0;

			r->val.v[j] = t->last[j] > b ? t->last[j] - b : 0;
		}
		memcpy(r->val.enabled, t->enabled, sizeof(r->val.enabled));
		memcpy(r->val.running, t->running, sizeof(r->val.running));
		if (!st->has_process) {
			res->has_program = true;
			res->program.flags |= t->flags;
			for (j = 0; j < LP_COUNTERS_MAX; j++)
				res->program.v[j] += r->val.v[j];
		}
	}
}

static int cpu_cmp(const void *a, const void *b)
{
	const struct ctrstats_cpu_row *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

int ctrstats_collect(struct ctrstats *st, struct ctrstats_order *order, struct ctrstats_result *out, char *err,
                     size_t errlen)
{
	const struct walk *w = st->w;
	struct sort_ctx sc = { order, out };
	uint32_t i;
	int r;

	memset(out, 0, sizeof(*out));
	out->n = st->nvalues > w->ncounters ? st->nvalues : w->ncounters;
	for (i = 0; i < out->n; i++) {
		if (i < w->ncounters)
			snprintf(out->names[i], sizeof(out->names[i]), "%s", w->counters[i]);
		else
			snprintf(out->names[i], sizeof(out->names[i]), "counter%u", i);
	}
	out->nmetrics = ctrstats_metrics(out->names, out->n, out->metrics);
	r = order_resolve(order, out, err, errlen);
	if (r)
		return r;
	if (st->has_process) {
		out->has_program = out->from_process = true;
		out->program = st->process;
	}
	if (st->ncpus) {
		out->cpus = malloc(st->ncpus * sizeof(*out->cpus));
		if (!out->cpus)
			goto nomem;
		memcpy(out->cpus, st->cpus, st->ncpus * sizeof(*out->cpus));
		out->ncpus = st->ncpus;
		qsort(out->cpus, out->ncpus, sizeof(*out->cpus), cpu_cmp);
	}
	if (st->nthreads) {
		out->threads = malloc(st->nthreads * sizeof(*out->threads));
		if (!out->threads)
			goto nomem;
		collect_threads(st, out);
	}
	if (collect_fns(st, out))
		goto nomem;
	if (out->nfns)
		qsort_r(out->fns, out->nfns, sizeof(*out->fns), row_cmp, &sc);
	return 0;
nomem:
	ctrstats_result_release(out);
	return -ENOMEM;
}

void ctrstats_result_release(struct ctrstats_result *res)
{
	size_t i;

	for (i = 0; i < res->nfns; i++)
		free(res->fns[i].name);
	free(res->fns);
	free(res->threads);
	free(res->cpus);
	memset(res, 0, sizeof(*res));
}
