/* Who let a waiting thread go (see syncwake.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/trace/syncwake.h"
#include "host/lib/util/hashindex.h"
#include "layerprof/format.h"

#define SYNCWAKE_FIRST 1024u

/* What an operation is to the search: which objects' releases end its
 * waits, or which it releases. */
enum syncwake_class {
	SW_NONE = 0,
	SW_MUTEX,
	SW_RWLOCK,
	SW_SPIN,
	SW_COND,
	SW_SEM,
	SW_THREAD, /* LP_SYNC_THREAD: the pthread_t of a thread, for joins */
};

/* The class of the object op waits on, and whether op releases it. */
static enum syncwake_class op_class(uint8_t op, bool *release)
{
	*release = false;
	switch (op) {
	case LP_SYNC_MUTEX_UNLOCK:
		*release = true;
		__attribute__((fallthrough));
	case LP_SYNC_MUTEX_LOCK:
		return SW_MUTEX;
	case LP_SYNC_RW_UNLOCK:
		*release = true;
		__attribute__((fallthrough));
	case LP_SYNC_RD_LOCK:
	case LP_SYNC_WR_LOCK:
		return SW_RWLOCK;
	case LP_SYNC_SPIN_UNLOCK:
		*release = true;
		__attribute__((fallthrough));
	case LP_SYNC_SPIN_LOCK:
		return SW_SPIN;
	case LP_SYNC_COND_SIGNAL:
	case LP_SYNC_COND_BROADCAST:
		*release = true;
		__attribute__((fallthrough));
	case LP_SYNC_COND_WAIT:
		return SW_COND;
	case LP_SYNC_SEM_POST:
		*release = true;
		__attribute__((fallthrough));
	case LP_SYNC_SEM_WAIT:
		return SW_SEM;
	case LP_SYNC_THREAD:
		*release = true;
		__attribute__((fallthrough));
	case LP_SYNC_JOIN:
		return SW_THREAD;
	default:
		return SW_NONE;
	}
}

bool syncwake_is_wait(uint8_t op, uint32_t flags, uint64_t wait_ns)
{
	bool release;

	if (!wait_ns || (flags & (LP_SYNC_FAILED | LP_SYNC_TIMEDOUT)))
		return false;
	return op == LP_SYNC_BARRIER_WAIT || (op_class(op, &release) != SW_NONE && !release);
}

void syncwake_init(struct syncwake *sw)
{
	memset(sw, 0, sizeof(*sw));
}

void syncwake_release(struct syncwake *sw)
{
	free(sw->ev);
	free(sw->ends);
	memset(sw, 0, sizeof(*sw));
}

int syncwake_add(struct syncwake *sw, uint32_t thread, uint32_t pid, uint32_t tid, const struct walk_sync *y)
{
	struct syncwake_event *e;
	bool release;

	/* a lock taken at once is neither a wait nor a release */
	if (y->op != LP_SYNC_BARRIER_WAIT && !y->wait_ns && (op_class(y->op, &release) == SW_NONE || !release))
		return 0;
	if (sw->n >= SYNCWAKE_EVENTS_MAX) {
		sw->dropped++;
		return 0;
	}
	if (sw->n == sw->cap) {
		size_t cap = sw->cap ? 2 * sw->cap : SYNCWAKE_FIRST;

		e = realloc(sw->ev, cap * sizeof(*e));
		if (!e) {
			sw->oom = true;
			return -ENOMEM;
		}
		sw->ev = e;
		sw->cap = cap;
	}
	e = &sw->ev[sw->n];
	memset(e, 0, sizeof(*e));
	e->ns = y->ns;
	e->wait_ns = y->wait_ns < y->ns ? y->wait_ns : y->ns; /* a body read from a file: never before 0 */
	e->obj = y->obj;
	e->obj2 = y->obj2;
	e->site = y->site;
	e->func = y->func;
	e->depth = y->depth;
	e->pid = pid;
	e->tid = tid;
	e->thread = thread;
	e->flags = y->flags;
	e->op = y->op;
	e->seq = (uint32_t)sw->n;
	e->waker = SYNCWAKE_NONE;
	sw->n++;
	sw->resolved = false;
	return 0;
}

int syncwake_thread_end(struct syncwake *sw, uint32_t thread, uint64_t ns)
{
	if (thread >= SYNCWAKE_THREADS_MAX)
		return 0;
	if (thread >= sw->nends) {
		uint32_t cap = thread + 64;
		uint64_t *g = realloc(sw->ends, cap * sizeof(*g));

		if (!g) {
			sw->oom = true;
			return -ENOMEM;
		}
		memset(g + sw->nends, 0, (cap - sw->nends) * sizeof(*g));
		sw->ends = g;
		sw->nends = cap;
	}
	sw->ends[thread] = ns;
	return 0;
}

/* By end time; at the same time a release before a wait (its time was
 * taken before it was passed on, so it came first), then in order of
 * adding. */
static int by_time(const void *a, const void *b)
{
	const struct syncwake_event *x = a, *y = b;
	bool rx, ry;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	op_class(x->op, &rx);
	op_class(y->op, &ry);
	if (rx != ry)
		return rx ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The last release of an object, by (pid, class, object). */
struct sw_last {
	uint64_t obj, ns;
	uint32_t pid, thread;
	uint8_t cls;
};

struct sw_table {
	struct sw_last *v;
	uint32_t n, cap;
	struct hashindex index;
};

static bool last_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct sw_last *a = &((const struct sw_table *)ctx)->v[item], *k = key;

	return a->obj == k->obj && a->pid == k->pid && a->cls == k->cls;
}

static uint64_t last_hash(const struct sw_last *k)
{
	return hashindex_u64(k->obj ^ (uint64_t)k->pid << 40 ^ (uint64_t)k->cls << 59);
}

/* Notes the release k (its thread and ns). */
static int last_put(struct sw_table *t, const struct sw_last *k)
{
	uint64_t hash = last_hash(k);
	uint32_t slot;

	if (hashindex_reserve(&t->index))
		return -ENOMEM;
	slot = hashindex_slot(&t->index, hash, last_eq, t, k);
	if (t->index.val[slot]) {
		t->v[t->index.val[slot] - 1] = *k;
		return 0;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : SYNCWAKE_FIRST;
		struct sw_last *g = realloc(t->v, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		t->v = g;
		t->cap = cap;
	}
	t->v[t->n] = *k;
	hashindex_put(&t->index, slot, hash, t->n++);
	return 0;
}

static const struct sw_last *last_get(const struct sw_table *t, const struct sw_last *k)
{
	int64_t i = hashindex_get(&t->index, last_hash(k), last_eq, t, k);

	return i < 0 ? NULL : &t->v[i];
}

/* Barrier waits by (pid, object, arrival). */
static int barrier_cmp(const void *a, const void *b, void *ctx)
{
	const struct syncwake_event *v = ctx, *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
	uint64_t bx = x->ns - x->wait_ns, by = y->ns - y->wait_ns;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->obj != y->obj)
		return x->obj < y->obj ? -1 : 1;
	if (bx != by)
		return bx < by ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The barrier waits' releasers: for each wait, the last of the others to
 * arrive at the same barrier during it. */
static int resolve_barriers(struct syncwake *sw)
{
	size_t nb = 0, *v, i;

	for (i = 0; i < sw->n; i++)
		nb += sw->ev[i].op == LP_SYNC_BARRIER_WAIT;
	if (!nb)
		return 0;
	v = malloc(nb * sizeof(*v));
	if (!v)
		return -ENOMEM;
	nb = 0;
	for (i = 0; i < sw->n; i++)
		if (sw->ev[i].op == LP_SYNC_BARRIER_WAIT)
			v[nb++] = i;
	qsort_r(v, nb, sizeof(*v), barrier_cmp, sw->ev);
	for (i = 0; i < nb; i++) {
		struct syncwake_event *e = &sw->ev[v[i]];
		uint64_t begin = e->ns - e->wait_ns;
		size_t k;

		if (!syncwake_is_wait(e->op, e->flags, e->wait_ns))
			continue;
		/* the arrivals of the same barrier after this one, up to its end */
		for (k = i + 1; k < nb; k++) {
			const struct syncwake_event *o = &sw->ev[v[k]];

			if (o->pid != e->pid || o->obj != e->obj || o->ns - o->wait_ns > e->ns)
				break;
			if (o->thread != e->thread && o->ns - o->wait_ns >= begin) {
				e->waker = o->thread;
				e->release_ns = o->ns - o->wait_ns;
			}
		}
	}
	free(v);
	return 0;
}

int syncwake_resolve(struct syncwake *sw)
{
	struct sw_table t = { 0 };
	int r = 0;

	if (sw->oom)
		return -ENOMEM;
	if (sw->n)
		qsort(sw->ev, sw->n, sizeof(*sw->ev), by_time);
	for (size_t i = 0; i < sw->n; i++) {
		struct syncwake_event *e = &sw->ev[i];
		struct sw_last k = { .obj = e->obj, .pid = e->pid, .thread = e->thread, .ns = e->ns };
		const struct sw_last *l;
		bool release;

		e->seq = (uint32_t)i;
		e->waker = SYNCWAKE_NONE;
		e->release_ns = 0;
		k.cls = (uint8_t)op_class(e->op, &release);
		if (k.cls == SW_NONE)
			continue;
		if (release) {
			if ((r = last_put(&t, &k)))
				break;
			continue;
		}
		if (!syncwake_is_wait(e->op, e->flags, e->wait_ns) || !(l = last_get(&t, &k)) || l->thread == e->thread)
			continue;
		if (k.cls == SW_THREAD) {
			/* the joined thread: it ended before the join returned */
			uint64_t end = l->thread < sw->nends ? sw->ends[l->thread] : 0;

			e->waker = l->thread;
			e->release_ns = end && end <= e->ns ? end : 0;
		} else if (l->ns >= e->ns - e->wait_ns) {
			e->waker = l->thread;
			e->release_ns = l->ns;
		}
	}
	if (!r)
		r = resolve_barriers(sw);
	free(t.v);
	hashindex_release(&t.index);
	if (r) {
		sw->oom = true;
		return r;
	}
	sw->resolved = true;
	return 0;
}

size_t syncwake_first_at(const struct syncwake *sw, uint64_t ns)
{
	size_t lo = 0, hi = sw->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sw->ev[mid].ns < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct syncwake_event *syncwake_find(const struct syncwake *sw, uint32_t thread, uint64_t ns, uint8_t op,
                                           uint64_t obj)
{
	for (size_t i = syncwake_first_at(sw, ns); i < sw->n && sw->ev[i].ns == ns; i++) {
		const struct syncwake_event *e = &sw->ev[i];

		if (e->thread == thread && e->op == op && e->obj == obj)
			return e;
	}
	return NULL;
}

static void on_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y)
{
	syncwake_add(ctx, s->index, s->pid, s->tid, y);
}

static void on_end(void *ctx, struct walk_stream *s)
{
	syncwake_thread_end(ctx, s->index, s->last_ns);
}

void syncwake_walk_ops(struct syncwake *sw, struct walk_ops *ops)
{
	ops->ctx = sw;
	ops->sync = on_sync;
	ops->end = on_end;
}
