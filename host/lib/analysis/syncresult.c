/* The results of the synchronisation statistics (see syncstats.h): names,
 * the sort orders, percentiles, the uses per object, the producer/consumer
 * pairs and the sorted tables. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/analysis/syncstats_impl.h"

const char *syncstats_object_name(const struct syncstats_object *o, char *buf, size_t size)
{
	if (o->name)
		snprintf(buf, size, "%s", o->name);
	else if (o->kind == SYNCSTATS_FUTEX)
		snprintf(buf, size, "futex 0x%llx", (unsigned long long)o->addr);
	else
		snprintf(buf, size, "0x%llx", (unsigned long long)o->addr);
	return buf;
}

const char *syncstats_object_site(struct walk *w, const struct syncstats_object *o, char *buf, size_t size)
{
	if (!o->site) {
		snprintf(buf, size, "?");
		return buf;
	}
	return walk_name(w, o->image, o->site, buf, size);
}

const char *syncstats_thread_name(const struct syncstats_thread *t, char *buf, size_t size)
{
	if (t->comm[0])
		snprintf(buf, size, "%u (%s)", t->tid, t->comm);
	else
		snprintf(buf, size, "%u", t->tid);
	return buf;
}

int syncstats_order_parse(struct syncstats_order *o, const char *spec)
{
	static const struct {
		const char *name;
		enum syncstats_sort_key key;
	} names[] = {
		{ "wait", SYNCSTATS_BY_WAIT },
		{ "total", SYNCSTATS_BY_WAIT },
		{ "ops", SYNCSTATS_BY_OPS },
		{ "calls", SYNCSTATS_BY_OPS },
		{ "avg", SYNCSTATS_BY_AVG },
		{ "max", SYNCSTATS_BY_MAX },
		{ "hold", SYNCSTATS_BY_HOLD },
		{ "self", SYNCSTATS_BY_HOLD },
		{ "contended", SYNCSTATS_BY_CONTENDED },
		{ "min", SYNCSTATS_BY_CONTENDED },
		{ "name", SYNCSTATS_BY_NAME },
	};
	const char *p = spec;

	memset(o, 0, sizeof(*o));
	while (*p) {
		size_t len = strcspn(p, ","), i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == len && !strncmp(p, names[i].name, len))
				break;
		if (i == sizeof(names) / sizeof(names[0]) || o->nkeys == SYNCSTATS_SORT_KEYS_MAX)
			return -EINVAL;
		o->keys[o->nkeys++] = names[i].key;
		p += len;
		if (*p == ',')
			p++;
	}
	return o->nkeys ? 0 : -EINVAL;
}

struct sort_ctx {
	const struct syncstats *st;
	const struct syncstats_order *order;
};

/* qsort has no context: one sort at a time (the struct is not thread-safe anyway). */
static struct sort_ctx sorting;

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int object_cmp(const void *pa, const void *pb)
{
	const struct syncstats_object *a = &sorting.st->objects[*(const uint32_t *)pa];
	const struct syncstats_object *b = &sorting.st->objects[*(const uint32_t *)pb];
	int i, c = 0;

	for (i = 0; i < sorting.order->nkeys && !c; i++) {
		switch (sorting.order->keys[i]) {
		case SYNCSTATS_BY_WAIT:
			c = cmp_u64_desc(a->waits.total_ns, b->waits.total_ns);
			break;
		case SYNCSTATS_BY_OPS:
			c = cmp_u64_desc(a->acquisitions + a->calls, b->acquisitions + b->calls);
			break;
		case SYNCSTATS_BY_AVG:
			c = cmp_u64_desc(a->waits.n ? a->waits.total_ns / a->waits.n : 0,
			                 b->waits.n ? b->waits.total_ns / b->waits.n : 0);
			break;
		case SYNCSTATS_BY_MAX:
			c = cmp_u64_desc(a->waits.max_ns, b->waits.max_ns);
			break;
		case SYNCSTATS_BY_HOLD:
			c = cmp_u64_desc(a->hold_ns, b->hold_ns);
			break;
		case SYNCSTATS_BY_CONTENDED:
			c = cmp_u64_desc(a->contended + a->waits.n, b->contended + b->waits.n);
			break;
		case SYNCSTATS_BY_NAME: {
			char x[SYNCSTATS_NAME_MAX], y[SYNCSTATS_NAME_MAX];

			c = strcmp(syncstats_object_name(a, x, sizeof(x)), syncstats_object_name(b, y, sizeof(y)));
			break;
		}
		}
	}
	if (c)
		return c;
	if (a->image != b->image)
		return a->image < b->image ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->kind < b->kind ? -1 : a->kind > b->kind;
}

static int thread_cmp(const void *pa, const void *pb)
{
	const struct syncstats_thread *a = &sorting.st->threads[*(const uint32_t *)pa];
	const struct syncstats_thread *b = &sorting.st->threads[*(const uint32_t *)pb];

	if (a->wait_ns != b->wait_ns)
		return a->wait_ns > b->wait_ns ? -1 : 1;
	if (a->image != b->image)
		return a->image < b->image ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int use_cmp(const void *pa, const void *pb)
{
	const struct syncstats_use *a = pa, *b = pb;

	if (a->object != b->object)
		return a->object < b->object ? -1 : 1;
	return a->thread < b->thread ? -1 : a->thread > b->thread;
}

static int top_cmp(const void *pa, const void *pb)
{
	const struct syncstats_wait *a = pa, *b = pb;
	uint64_t x = a->end_ns - a->begin_ns, y = b->end_ns - b->begin_ns;

	if (x != y)
		return x > y ? -1 : 1;
	return a->end_ns < b->end_ns ? -1 : a->end_ns > b->end_ns;
}

static int pair_cmp(const void *pa, const void *pb)
{
	const struct syncstats_pair *a = pa, *b = pb;
	double x = a->share[0] > a->share[1] ? a->share[0] : a->share[1];
	double y = b->share[0] > b->share[1] ? b->share[0] : b->share[1];

	if (x != y)
		return x > y ? -1 : 1;
	return a->first_ns < b->first_ns ? -1 : a->first_ns > b->first_ns;
}

/* Lists of thread indexes: by length, then element by element. */
static int list_cmp(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
	uint32_t i;

	if (na != nb)
		return na < nb ? -1 : 1;
	for (i = 0; i < na; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* Adds a condition or semaphore signalled by one group of threads and
 * waited on by another (no thread in both) to the pair of those groups. */
static void pair_object(struct syncstats *st, struct syncstats_result *out, uint32_t object)
{
	const struct syncstats_object *o = &st->objects[object];
	uint32_t sig[SYNCSTATS_SIDE_MAX], wai[SYNCSTATS_SIDE_MAX], ns = 0, nw = 0, i;
	uint64_t wait = 0, first_signal = UINT64_MAX;
	const uint32_t *a, *b;
	uint32_t na, nb;
	struct syncstats_pair *p = NULL;
	int s; /* the side that signals this object */

	for (i = o->first_use; i < o->first_use + o->nuses; i++) {
		const struct syncstats_use *u = &st->uses[i];
		uint64_t n = u->calls + u->signals;

		if (!n)
			continue;
		if (4 * u->signals >= 3 * n) {
			if (ns == SYNCSTATS_SIDE_MAX)
				goto over;
			sig[ns++] = u->thread;
			if (u->first_signal_ns < first_signal)
				first_signal = u->first_signal_ns;
		} else if (4 * u->calls >= 3 * n) {
			if (nw == SYNCSTATS_SIDE_MAX)
				goto over;
			wai[nw++] = u->thread;
			wait += u->waits.total_ns;
		} else {
			return; /* a thread that waits and signals alike: not a queue */
		}
	}
	if (!ns || !nw)
		return;
	s = list_cmp(sig, ns, wai, nw) < 0 ? 0 : 1;
	a = s == 0 ? sig : wai;
	na = s == 0 ? ns : nw;
	b = s == 0 ? wai : sig;
	nb = s == 0 ? nw : ns;
	for (i = 0; i < out->npairs && !p; i++)
		if (!list_cmp(out->pairs[i].side[0], out->pairs[i].nside[0], a, na) &&
		    !list_cmp(out->pairs[i].side[1], out->pairs[i].nside[1], b, nb))
			p = &out->pairs[i];
	if (!p) {
		if (out->npairs == SYNCSTATS_PAIRS_MAX)
			goto over;
		p = &out->pairs[out->npairs++];
		memset(p, 0, sizeof(*p));
		memcpy(p->side[0], a, na * sizeof(*a));
		memcpy(p->side[1], b, nb * sizeof(*b));
		p->nside[0] = na;
		p->nside[1] = nb;
		p->first_ns = UINT64_MAX;
		p->first_signal_ns[0] = p->first_signal_ns[1] = UINT64_MAX;
	}
	if (p->nobjects < SYNCSTATS_PAIR_OBJECTS)
		p->objects[p->nobjects] = object;
	p->nobjects++;
	p->wait_ns[1 - s] += wait;
	if (first_signal < p->first_signal_ns[s])
		p->first_signal_ns[s] = first_signal;
	if (o->first_ns < p->first_ns)
		p->first_ns = o->first_ns;
	if (o->last_ns > p->last_ns)
		p->last_ns = o->last_ns;
	return;
over:
	st->over.pairs++;
}

static void pair_finish(struct syncstats_pair *p)
{
	/* the producers signalled first */
	if (p->first_signal_ns[1] < p->first_signal_ns[0]) {
		uint32_t side[SYNCSTATS_SIDE_MAX], n = p->nside[0];
		uint64_t v;

		memcpy(side, p->side[0], sizeof(side));
		memcpy(p->side[0], p->side[1], sizeof(side));
		memcpy(p->side[1], side, sizeof(side));
		p->nside[0] = p->nside[1];
		p->nside[1] = n;
		v = p->wait_ns[0], p->wait_ns[0] = p->wait_ns[1], p->wait_ns[1] = v;
		v = p->first_signal_ns[0], p->first_signal_ns[0] = p->first_signal_ns[1], p->first_signal_ns[1] = v;
	}
	p->span_ns = p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0;
	for (int i = 0; i < 2; i++)
		p->share[i] = p->span_ns ? (double)p->wait_ns[i] / ((double)p->span_ns * p->nside[i]) : 0.0;
	p->slow = p->share[1] > p->share[0] ? 0 : p->share[0] > p->share[1] ? 1 : -1;
}

void syncstats_result_release(struct syncstats_result *r)
{
	free(r->locks);
	free(r->conds);
	free(r->barriers);
	free(r->futexes);
	free(r->threads);
	free(r->pairs);
	memset(r, 0, sizeof(*r));
}

int syncstats_collect(struct syncstats *st, const struct syncstats_order *order, struct syncstats_result *out)
{
	static const struct syncstats_order by_wait = { .keys = { SYNCSTATS_BY_WAIT }, .nkeys = 1 };
	uint32_t i, n;

	memset(out, 0, sizeof(*out));
	syncstats_flush(st);
	for (i = 0; i < st->nthreads; i++) {
		struct syncstats_thread *t = &st->threads[i];

		if (t->npending)
			syncstats_futex_place(st, t, 0, 0);
		while (t->nheld) {
			st->objects[t->held[t->nheld - 1].object].held_at_end++;
			t->nheld--;
		}
		memcpy(t->comm, t->s->comm, sizeof(t->comm));
		t->comm[sizeof(t->comm) - 1] = '\0';
		t->first_ns = t->s->first_ns;
		t->last_ns = t->s->last_ns;
		t->wait_share =
		    t->last_ns > t->first_ns ? (double)t->wait_ns / (double)(t->last_ns - t->first_ns) : 0.0;
	}
	/* every object is made by now (the operations held back made theirs) */
	n = st->nobjects ? st->nobjects : 1;
	st->collected = true;
	hashindex_release(&st->use_index);
	if (st->nuses > 1)
		qsort(st->uses, st->nuses, sizeof(*st->uses), use_cmp);
	for (i = 0; i < st->nuses; i++) {
		struct syncstats_object *o = &st->objects[st->uses[i].object];

		if (!o->nuses)
			o->first_use = i;
		o->nuses++;
	}
	out->locks = malloc(n * sizeof(*out->locks));
	out->conds = malloc(n * sizeof(*out->conds));
	out->barriers = malloc(n * sizeof(*out->barriers));
	out->futexes = malloc(n * sizeof(*out->futexes));
	out->threads = malloc((st->nthreads ? st->nthreads : 1) * sizeof(*out->threads));
	out->pairs = malloc(SYNCSTATS_PAIRS_MAX * sizeof(*out->pairs));
	if (!out->locks || !out->conds || !out->barriers || !out->futexes || !out->threads || !out->pairs) {
		syncstats_result_release(out);
		return -ENOMEM;
	}
	for (i = 0; i < st->nobjects; i++) {
		struct syncstats_object *o = &st->objects[i];

		syncstats_name_object(st, o, o->last_ns);
		o->wait_p99_ns = syncstats_object_p99(st, o);
		/* exclusive locks: held is the holds' sum (a condition wait's
		 * release is applied late, which would upset a count of holders) */
		if (o->kind == SYNCSTATS_MUTEX || o->kind == SYNCSTATS_SPIN)
			o->held_ns = o->hold_ns;
		switch (o->kind) {
		case SYNCSTATS_MUTEX:
		case SYNCSTATS_RWLOCK:
		case SYNCSTATS_SPIN:
			out->locks[out->nlocks++] = i;
			break;
		case SYNCSTATS_COND:
		case SYNCSTATS_SEM:
			out->conds[out->nconds++] = i;
			pair_object(st, out, i);
			break;
		case SYNCSTATS_BARRIER:
			out->barriers[out->nbarriers++] = i;
			break;
		case SYNCSTATS_FUTEX:
			if (o->calls)
				out->futexes[out->nfutexes++] = i;
			break;
		}
	}
	for (i = 0; i < out->npairs; i++)
		pair_finish(&out->pairs[i]);
	for (i = 0; i < st->nthreads; i++)
		out->threads[i] = i;
	out->nthreads = st->nthreads;
	sorting.st = st;
	sorting.order = order && order->nkeys ? order : &by_wait;
	qsort(out->locks, out->nlocks, sizeof(*out->locks), object_cmp);
	qsort(out->conds, out->nconds, sizeof(*out->conds), object_cmp);
	qsort(out->barriers, out->nbarriers, sizeof(*out->barriers), object_cmp);
	qsort(out->futexes, out->nfutexes, sizeof(*out->futexes), object_cmp);
	qsort(out->threads, out->nthreads, sizeof(*out->threads), thread_cmp);
	qsort(out->pairs, out->npairs, sizeof(*out->pairs), pair_cmp);
	qsort(st->top, st->ntop, sizeof(*st->top), top_cmp);
	sorting.st = NULL;
	if (st->oom) {
		syncstats_result_release(out);
		return -ENOMEM;
	}
	return 0;
}
