/* Synchronisation statistics (see syncstats.h): the per-thread stage (futex
 * waits placed against the interposed operations' waits), the merge by
 * time, and the accounting of each operation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/analysis/syncstats.h"
#include "layerprof/format.h"

/* futex(2) commands (linux/futex.h), without the private and clock bits. */
#define FUTEX_CMD(op) ((op)&0x7f)
enum {
	FUTEX_WAIT_ = 0,
	FUTEX_WAKE_ = 1,
	FUTEX_REQUEUE_ = 3,
	FUTEX_CMP_REQUEUE_ = 4,
	FUTEX_WAKE_OP_ = 5,
	FUTEX_LOCK_PI_ = 6,
	FUTEX_UNLOCK_PI_ = 7,
	FUTEX_WAIT_BITSET_ = 9,
	FUTEX_WAKE_BITSET_ = 10,
	FUTEX_WAIT_REQUEUE_PI_ = 11,
	FUTEX_LOCK_PI2_ = 13,
};

struct syncstats_held {
	uint32_t object;
	uint32_t depth;
	uint64_t since;
};

struct syncstats_pending {
	uint64_t enter_ns, exit_ns, uaddr;
	int64_t ret;
};

struct syncstats_ptmap {
	uint32_t image;
	uint64_t pthread;
	uint32_t thread;
};

struct syncstats_item {
	uint64_t ns, seq, obj, obj2, wait_ns, site;
	uint32_t thread, flags;
	uint8_t op;
};

const char *syncstats_kind_name(unsigned kind)
{
	static const char *const names[SYNCSTATS_KINDS] = {
		"mutex", "rwlock", "spinlock", "cond", "semaphore", "barrier", "futex", "join",
	};

	return kind < SYNCSTATS_KINDS ? names[kind] : "?";
}

void syncstats_init(struct syncstats *st, struct walk *w)
{
	unsigned a;

	memset(st, 0, sizeof(*st));
	st->w = w;
	for (a = 0; a < 4; a++) {
		st->futex_nr[a][0] = sys_lookup((enum sys_arch)a, "futex");
		st->futex_nr[a][1] = sys_lookup((enum sys_arch)a, "futex_time64");
	}
}

void syncstats_release(struct syncstats *st)
{
	uint32_t i;

	for (i = 0; i < st->nobjects; i++)
		free(st->objects[i].name);
	for (i = 0; i < st->nthreads; i++) {
		free(st->threads[i].held);
		free(st->threads[i].pending);
	}
	free(st->objects);
	free(st->threads);
	free(st->uses);
	free(st->joins);
	free(st->ptmap);
	free(st->hists);
	free(st->q);
	hashindex_release(&st->object_index);
	hashindex_release(&st->thread_index);
	hashindex_release(&st->use_index);
	hashindex_release(&st->pthread_index);
	memset(st, 0, sizeof(*st));
}

void syncstats_set_namer(struct syncstats *st,
                         bool (*namer)(void *ctx, uint32_t image, uint64_t addr, uint64_t ns, char *buf, size_t size),
                         void *ctx)
{
	st->namer = namer;
	st->namer_ctx = ctx;
}

void syncstats_set_wait_hook(struct syncstats *st, void (*hook)(void *ctx, const struct syncstats_wait *wt), void *ctx)
{
	st->wait_hook = hook;
	st->wait_ctx = ctx;
}

/* ------------------------------------------------------------ tables */

/* Grows *arr (of *cap items of size) to hold one more, up to max items.
 * Returns 0, or -ENOSPC / -ENOMEM. */
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

static bool thread_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct syncstats_thread *t = &((const struct syncstats *)ctx)->threads[item];
	const struct walk_stream *s = key;

	return t->image == s->image && t->tid == s->tid;
}

/* The thread of stream s, made on first use; NULL past the bounds
 * (counted) or out of memory. */
static struct syncstats_thread *thread_get(struct syncstats *st, struct walk_stream *s)
{
	uint64_t hash = hashindex_u64((uint64_t)s->image << 32 | s->tid);
	struct syncstats_thread *t;
	uint32_t slot;
	int r;

	if (hashindex_reserve(&st->thread_index)) {
		st->oom = true;
		return NULL;
	}
	slot = hashindex_slot(&st->thread_index, hash, thread_eq, st, s);
	if (st->thread_index.val[slot])
		return &st->threads[st->thread_index.val[slot] - 1];
	r = grow((void **)&st->threads, &st->threads_cap, st->nthreads, sizeof(*st->threads), SYNCSTATS_THREADS_MAX);
	if (r) {
		if (r == -ENOMEM)
			st->oom = true;
		st->over.threads++;
		return NULL;
	}
	t = &st->threads[st->nthreads];
	memset(t, 0, sizeof(*t));
	t->image = s->image;
	t->pid = s->pid;
	t->tid = s->tid;
	t->s = s;
	hashindex_put(&st->thread_index, slot, hash, st->nthreads);
	st->nthreads++;
	return t;
}

struct object_key {
	uint32_t image;
	uint8_t kind;
	uint64_t addr;
};

static uint64_t object_hash(uint32_t image, uint8_t kind, uint64_t addr)
{
	return hashindex_u64(addr ^ hashindex_u64((uint64_t)image << 8 | kind));
}

static bool object_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct syncstats_object *o = &((const struct syncstats *)ctx)->objects[item];
	const struct object_key *k = key;

	return o->addr == k->addr && o->image == k->image && o->kind == k->kind;
}

static void object_name(struct syncstats *st, struct syncstats_object *o, uint64_t ns)
{
	char buf[SYNCSTATS_NAME_MAX];

	if (o->name || !st->namer || o->kind == SYNCSTATS_FUTEX)
		return;
	buf[0] = '\0';
	if (st->namer(st->namer_ctx, o->image, o->addr, ns, buf, sizeof(buf)) && buf[0]) {
		o->name = strdup(buf);
		if (!o->name)
			st->oom = true;
	}
}

/* The object (image, addr, kind), made on first use at ns by thread t;
 * returns its index, or UINT32_MAX past the bounds (counted). */
static uint32_t object_get(struct syncstats *st, const struct syncstats_thread *t, uint64_t addr, uint8_t kind,
                           uint64_t ns, uint64_t site)
{
	struct object_key k = { .image = t->image, .kind = kind, .addr = addr };
	uint64_t hash = object_hash(t->image, kind, addr);
	struct syncstats_object *o;
	uint32_t slot;
	int r;

	if (hashindex_reserve(&st->object_index)) {
		st->oom = true;
		return UINT32_MAX;
	}
	slot = hashindex_slot(&st->object_index, hash, object_eq, st, &k);
	if (st->object_index.val[slot])
		return st->object_index.val[slot] - 1;
	r = grow((void **)&st->objects, &st->objects_cap, st->nobjects, sizeof(*st->objects), SYNCSTATS_OBJECTS_MAX);
	if (r) {
		if (r == -ENOMEM)
			st->oom = true;
		st->over.objects++;
		return UINT32_MAX;
	}
	o = &st->objects[st->nobjects];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->image = t->image;
	o->pid = t->pid;
	o->addr = addr;
	o->site = site;
	o->first_ns = ns;
	hashindex_put(&st->object_index, slot, hash, st->nobjects);
	object_name(st, o, ns);
	return st->nobjects++;
}

static bool use_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct syncstats_use *u = &((const struct syncstats *)ctx)->uses[item];
	const uint32_t *k = key;

	return u->object == k[0] && u->thread == k[1];
}

/* The use of object by thread; NULL past the bounds (counted). */
static struct syncstats_use *use_get(struct syncstats *st, uint32_t object, uint32_t thread)
{
	uint32_t k[2] = { object, thread };
	uint64_t hash = hashindex_u64((uint64_t)object << 32 | thread);
	struct syncstats_use *u;
	uint32_t slot;
	int r;

	if (st->collected)
		return NULL;
	if (hashindex_reserve(&st->use_index)) {
		st->oom = true;
		st->over.uses++;
		return NULL;
	}
	slot = hashindex_slot(&st->use_index, hash, use_eq, st, k);
	if (st->use_index.val[slot])
		return &st->uses[st->use_index.val[slot] - 1];
	r = grow((void **)&st->uses, &st->uses_cap, st->nuses, sizeof(*st->uses), SYNCSTATS_USES_MAX);
	if (r) {
		if (r == -ENOMEM)
			st->oom = true;
		st->over.uses++;
		return NULL;
	}
	u = &st->uses[st->nuses];
	memset(u, 0, sizeof(*u));
	u->object = object;
	u->thread = thread;
	hashindex_put(&st->use_index, slot, hash, st->nuses);
	return &st->uses[st->nuses++];
}

static bool ptmap_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct syncstats_ptmap *m = &((const struct syncstats *)ctx)->ptmap[item];
	const struct syncstats_ptmap *k = key;

	return m->pthread == k->pthread && m->image == k->image;
}

/* pthread_t -> thread of one image: the latest LP_SYNC_THREAD wins (a
 * pthread_t is reused after a join). */
static void ptmap_set(struct syncstats *st, uint32_t image, uint64_t pthread, uint32_t thread)
{
	struct syncstats_ptmap k = { .image = image, .pthread = pthread, .thread = thread };
	uint64_t hash = hashindex_u64(pthread ^ hashindex_u64(image));
	uint32_t slot;

	if (hashindex_reserve(&st->pthread_index)) {
		st->oom = true;
		return;
	}
	slot = hashindex_slot(&st->pthread_index, hash, ptmap_eq, st, &k);
	if (st->pthread_index.val[slot]) {
		st->ptmap[st->pthread_index.val[slot] - 1].thread = thread;
		return;
	}
	/* one per thread at most, so the threads' bound holds it */
	if (grow((void **)&st->ptmap, &st->ptmap_cap, st->nptmap, sizeof(*st->ptmap), 4 * SYNCSTATS_THREADS_MAX)) {
		st->oom = true;
		return;
	}
	st->ptmap[st->nptmap] = k;
	hashindex_put(&st->pthread_index, slot, hash, st->nptmap++);
}

/* The thread index + 1 of pthread in image, 0 when unknown. */
static uint32_t ptmap_get(const struct syncstats *st, uint32_t image, uint64_t pthread)
{
	struct syncstats_ptmap k = { .image = image, .pthread = pthread };
	int64_t i = hashindex_get(&st->pthread_index, hashindex_u64(pthread ^ hashindex_u64(image)), ptmap_eq, st, &k);

	return i < 0 ? 0 : st->ptmap[i].thread + 1;
}

/* ------------------------------------------------------------ waits */

static uint32_t hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < 32)
		return (uint32_t)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - 4;
	return (shift + 1) * 16 + (uint32_t)((v >> shift) - 16);
}

/* The middle of a bucket's range. */
static uint64_t hist_value(uint32_t idx)
{
	unsigned shift;
	uint64_t lo;

	if (idx < 32)
		return idx;
	shift = idx / 16 - 1;
	lo = (uint64_t)(idx % 16 + 16) << shift;
	return lo + ((UINT64_C(1) << shift) >> 1);
}

static void waits_add(struct syncstats_waits *w, uint64_t ns)
{
	w->n++;
	w->total_ns += ns;
	if (ns > w->max_ns)
		w->max_ns = ns;
}

static void add_wait(struct syncstats *st, struct syncstats_object *o, struct syncstats_use *u,
                     struct syncstats_thread *t, unsigned kind, uint64_t ns)
{
	waits_add(&o->waits, ns);
	if (u)
		waits_add(&u->waits, ns);
	waits_add(&t->waits[kind], ns);
	t->wait_ns += ns;
	if (!o->hist) {
		if (grow((void **)&st->hists, &st->hists_cap, st->nhists, sizeof(*st->hists), SYNCSTATS_HISTS_MAX)) {
			if (!o->p99_approx)
				st->over.hists++;
			o->p99_approx = true;
			return;
		}
		memset(st->hists[st->nhists], 0, sizeof(st->hists[0]));
		o->hist = ++st->nhists;
	}
	st->hists[o->hist - 1][hist_index(ns)]++;
}

/* Nearest rank: the value at rank n - floor(n / 100) of the waits in
 * order; the longest wait itself when that is the last rank (n <= 100),
 * else the middle of its histogram bucket, never above the longest. */
static uint64_t object_p99(const struct syncstats *st, struct syncstats_object *o)
{
	uint64_t n = o->waits.n, rank = n - n / 100, seen = 0;
	const uint32_t *h;
	uint32_t i;

	if (!n)
		return 0;
	if (rank == n || !o->hist)
		return o->waits.max_ns;
	h = st->hists[o->hist - 1];
	for (i = 0; i < SYNCSTATS_HIST_BUCKETS; i++) {
		seen += h[i];
		if (seen >= rank) {
			uint64_t v = hist_value(i);

			return v < o->waits.max_ns ? v : o->waits.max_ns;
		}
	}
	return o->waits.max_ns;
}

static void top_add(struct syncstats *st, const struct syncstats_wait *wt)
{
	uint64_t len = wt->end_ns - wt->begin_ns;
	uint32_t i, min = 0;

	if (st->ntop < SYNCSTATS_TOP_WAITS) {
		st->top[st->ntop++] = *wt;
		return;
	}
	for (i = 1; i < st->ntop; i++)
		if (st->top[i].end_ns - st->top[i].begin_ns < st->top[min].end_ns - st->top[min].begin_ns)
			min = i;
	if (len > st->top[min].end_ns - st->top[min].begin_ns)
		st->top[min] = *wt;
}

/* A wait of thread t, given to the hook and the longest waits. */
static void emit_wait(struct syncstats *st, const struct syncstats_thread *t, unsigned kind, uint8_t op, uint32_t flags,
                      uint64_t obj, uint64_t obj2, uint64_t begin, uint64_t end, uint64_t site, uint32_t waker,
                      uint64_t waker_ns, uint32_t object)
{
	struct syncstats_wait wt = {
		.image = t->image,
		.tid = t->tid,
		.kind = (uint8_t)kind,
		.op = op,
		.flags = flags,
		.obj = obj,
		.obj2 = obj2,
		.begin_ns = begin,
		.end_ns = end,
		.site = site,
		.waker_tid = waker ? st->threads[waker - 1].tid : 0,
		.waker_ns = waker ? waker_ns : 0,
		.object = object,
	};

	top_add(st, &wt);
	if (st->wait_hook)
		st->wait_hook(st->wait_ctx, &wt);
}

/* The last release, signal or post of o by a thread other than thread
 * (index): its index + 1, 0 when none. */
static uint32_t waker_of(const struct syncstats_object *o, uint32_t thread, uint64_t *ns)
{
	int i = o->rel_thread[0] == thread + 1 ? 1 : 0;

	*ns = o->rel_ns[i];
	return o->rel_thread[i];
}

static void set_releaser(struct syncstats_object *o, uint32_t thread, uint64_t ns)
{
	if (o->rel_thread[0] != thread + 1) {
		o->rel_thread[1] = o->rel_thread[0];
		o->rel_ns[1] = o->rel_ns[0];
		o->rel_thread[0] = thread + 1;
	}
	o->rel_ns[0] = ns;
}

static void signalled(struct syncstats_object *o, struct syncstats_use *u, uint32_t thread, uint64_t ns)
{
	if (u)
		u->signals++;
	set_releaser(o, thread, ns);
	if (!o->first_signaller) {
		o->first_signaller = thread + 1;
		o->first_signal_ns = ns;
	}
}

/* ------------------------------------------------------------ holds */

static struct syncstats_held *held_find(struct syncstats_thread *t, uint32_t object)
{
	uint32_t i;

	for (i = 0; i < t->nheld; i++)
		if (t->held[i].object == object)
			return &t->held[i];
	return NULL;
}

static void hold_begin(struct syncstats *st, struct syncstats_thread *t, uint32_t object, uint64_t ns, uint32_t depth)
{
	struct syncstats_object *o = &st->objects[object];
	struct syncstats_held *h = held_find(t, object);

	if (h) {
		h->depth += depth;
		return;
	}
	if (!t->held) {
		t->held = calloc(SYNCSTATS_HELD_MAX, sizeof(*t->held));
		if (!t->held) {
			st->oom = true;
			return;
		}
	}
	if (t->nheld == SYNCSTATS_HELD_MAX) {
		st->over.held++;
		return;
	}
	t->held[t->nheld++] = (struct syncstats_held){ .object = object, .depth = depth, .since = ns };
	if (o->holders++ == 0)
		o->held_since = ns;
}

/* Ends one level of t's hold of object at ns (all levels with all);
 * returns the depth the hold had, 0 when t did not hold it. */
static uint32_t hold_end(struct syncstats *st, struct syncstats_thread *t, struct syncstats_use *u, uint32_t object,
                         uint64_t ns, bool all)
{
	struct syncstats_object *o = &st->objects[object];
	struct syncstats_held *h = held_find(t, object);
	uint32_t depth;
	uint64_t len;

	if (!h)
		return 0;
	depth = h->depth;
	if (!all && --h->depth)
		return depth;
	len = ns > h->since ? ns - h->since : 0;
	o->holds++;
	o->hold_ns += len;
	if (len > o->hold_max_ns)
		o->hold_max_ns = len;
	if (u) {
		u->holds++;
		u->hold_ns += len;
	}
	t->holds++;
	t->hold_ns += len;
	*h = t->held[--t->nheld];
	if (o->holders && --o->holders == 0 && ns > o->held_since)
		o->held_ns += ns - o->held_since;
	return depth;
}

/* ------------------------------------------------------------ applying */

static int op_kind(uint8_t op)
{
	switch (op) {
	case LP_SYNC_MUTEX_LOCK:
	case LP_SYNC_MUTEX_UNLOCK:
		return SYNCSTATS_MUTEX;
	case LP_SYNC_RD_LOCK:
	case LP_SYNC_WR_LOCK:
	case LP_SYNC_RW_UNLOCK:
		return SYNCSTATS_RWLOCK;
	case LP_SYNC_SPIN_LOCK:
	case LP_SYNC_SPIN_UNLOCK:
		return SYNCSTATS_SPIN;
	case LP_SYNC_COND_WAIT:
	case LP_SYNC_COND_SIGNAL:
	case LP_SYNC_COND_BROADCAST:
		return SYNCSTATS_COND;
	case LP_SYNC_SEM_WAIT:
	case LP_SYNC_SEM_POST:
		return SYNCSTATS_SEM;
	case LP_SYNC_BARRIER_WAIT:
		return SYNCSTATS_BARRIER;
	default:
		return -1;
	}
}

static void apply_join(struct syncstats *st, const struct syncstats_item *it, struct syncstats_thread *t,
                       uint64_t begin)
{
	uint32_t thread = (uint32_t)(t - st->threads), joined = ptmap_get(st, t->image, it->obj);
	bool failed = it->flags & LP_SYNC_FAILED;

	if (grow((void **)&st->joins, &st->joins_cap, st->njoins, sizeof(*st->joins), SYNCSTATS_JOINS_MAX))
		st->over.joins++;
	else
		st->joins[st->njoins++] = (struct syncstats_join){
			.thread = thread,
			.joined = joined,
			.pthread = it->obj,
			.ns = it->ns,
			.wait_ns = it->wait_ns,
			.failed = failed,
		};
	if (!it->wait_ns)
		return;
	waits_add(&t->waits[SYNCSTATS_JOIN], it->wait_ns);
	t->wait_ns += it->wait_ns;
	emit_wait(st, t, SYNCSTATS_JOIN, it->op, it->flags, it->obj, 0, begin, it->ns, it->site, failed ? 0 : joined,
	          joined ? st->threads[joined - 1].s->last_ns : 0, UINT32_MAX);
}

static void apply_lock(struct syncstats *st, const struct syncstats_item *it, struct syncstats_thread *t,
                       uint32_t object, struct syncstats_use *u, uint64_t begin)
{
	struct syncstats_object *o = &st->objects[object];
	uint32_t thread = (uint32_t)(t - st->threads), waker = 0;
	uint64_t waker_ns = 0;

	if (it->flags & LP_SYNC_FAILED) {
		if (it->flags & LP_SYNC_TRY)
			o->try_failures++;
		else
			o->failures++;
		if (it->wait_ns) {
			add_wait(st, o, u, t, o->kind, it->wait_ns);
			emit_wait(st, t, o->kind, it->op, it->flags, it->obj, 0, begin, it->ns, it->site, 0, 0, object);
		}
		return;
	}
	o->acquisitions++;
	o->rd_acquisitions += it->op == LP_SYNC_RD_LOCK;
	if (u)
		u->acquisitions++;
	t->acquisitions++;
	if (it->wait_ns || (it->flags & LP_SYNC_CONTENDED)) {
		o->contended++;
		add_wait(st, o, u, t, o->kind, it->wait_ns);
		waker = waker_of(o, thread, &waker_ns);
		emit_wait(st, t, o->kind, it->op, it->flags, it->obj, 0, begin, it->ns, it->site, waker, waker_ns,
		          object);
	}
	hold_begin(st, t, object, it->ns, 1);
}

static void apply_unlock(struct syncstats *st, const struct syncstats_item *it, struct syncstats_thread *t,
                         uint32_t object, struct syncstats_use *u)
{
	struct syncstats_object *o = &st->objects[object];

	if (it->flags & LP_SYNC_FAILED)
		return; /* not held by the caller, or not a lock: nothing changed */
	o->releases++;
	if (!hold_end(st, t, u, object, it->ns, false))
		o->unmatched_releases++;
	set_releaser(o, (uint32_t)(t - st->threads), it->ns);
}

static void apply_cond_wait(struct syncstats *st, const struct syncstats_item *it, struct syncstats_thread *t,
                            uint32_t object, struct syncstats_use *u, uint64_t begin)
{
	uint32_t thread = (uint32_t)(t - st->threads), waker = 0, mutex, depth;
	uint32_t use = u ? (uint32_t)(u - st->uses) : UINT32_MAX;
	bool failed = it->flags & LP_SYNC_FAILED, timedout = it->flags & LP_SYNC_TIMEDOUT;
	struct syncstats_object *o;
	uint64_t waker_ns = 0;

	/* the mutex was let go of when the wait began and is held again
	 * now (also after a timeout; not after another error) */
	if (it->obj2 && (!failed || timedout)) {
		mutex = object_get(st, t, it->obj2, SYNCSTATS_MUTEX, begin, it->site);
		if (mutex != UINT32_MAX) {
			struct syncstats_use *mu = use_get(st, mutex, thread);

			depth = hold_end(st, t, mu, mutex, begin, true);
			set_releaser(&st->objects[mutex], thread, begin);
			if (depth)
				hold_begin(st, t, mutex, it->ns, depth);
		}
	}
	/* the mutex's object and use may have moved the tables */
	o = &st->objects[object];
	u = use != UINT32_MAX ? &st->uses[use] : NULL;
	o->calls++;
	if (u)
		u->calls++;
	if (timedout)
		o->timeouts++;
	else if (failed)
		o->failures++;
	if (!it->wait_ns)
		return;
	add_wait(st, o, u, t, SYNCSTATS_COND, it->wait_ns);
	if (!failed && !timedout)
		waker = waker_of(o, thread, &waker_ns);
	emit_wait(st, t, SYNCSTATS_COND, it->op, it->flags, it->obj, it->obj2, begin, it->ns, it->site, waker, waker_ns,
	          object);
}

/* Semaphore and barrier waits. */
static void apply_wait(struct syncstats *st, const struct syncstats_item *it, struct syncstats_thread *t,
                       uint32_t object, struct syncstats_use *u, uint64_t begin)
{
	struct syncstats_object *o = &st->objects[object];
	uint32_t thread = (uint32_t)(t - st->threads), waker = 0;
	bool failed = it->flags & LP_SYNC_FAILED;
	uint64_t waker_ns = 0;

	o->calls++;
	if (u)
		u->calls++;
	if (failed && (it->flags & LP_SYNC_TRY))
		o->try_failures++;
	else if (failed && (it->flags & LP_SYNC_TIMEDOUT))
		o->timeouts++;
	else if (failed)
		o->failures++;
	if (!it->wait_ns)
		return;
	add_wait(st, o, u, t, o->kind, it->wait_ns);
	if (!failed && o->kind == SYNCSTATS_SEM)
		waker = waker_of(o, thread, &waker_ns);
	emit_wait(st, t, o->kind, it->op, it->flags, it->obj, 0, begin, it->ns, it->site, waker, waker_ns, object);
}

static void apply(struct syncstats *st, const struct syncstats_item *it)
{
	struct syncstats_thread *t = &st->threads[it->thread];
	uint64_t begin = it->ns - (it->wait_ns < it->ns ? it->wait_ns : it->ns);
	struct syncstats_object *o;
	struct syncstats_use *u;
	uint32_t object;
	int kind;

	st->ops++;
	t->ops++;
	if (it->ns < st->applied_ns)
		st->late++;
	else
		st->applied_ns = it->ns;
	if (it->op == LP_SYNC_THREAD) {
		t->pthread = it->obj;
		ptmap_set(st, t->image, it->obj, it->thread);
		return;
	}
	if (it->op == LP_SYNC_CREATE) {
		t->creates++;
		return;
	}
	if (it->op == LP_SYNC_JOIN) {
		apply_join(st, it, t, begin);
		return;
	}
	kind = op_kind(it->op);
	if (kind < 0)
		return;
	object = object_get(st, t, it->obj, (uint8_t)kind, begin, it->site);
	if (object == UINT32_MAX)
		return;
	u = use_get(st, object, it->thread);
	o = &st->objects[object];
	o->ops++;
	if (begin < o->first_ns)
		o->first_ns = begin;
	if (it->ns > o->last_ns)
		o->last_ns = it->ns;
	if (u)
		u->ops++;
	switch (it->op) {
	case LP_SYNC_MUTEX_LOCK:
	case LP_SYNC_RD_LOCK:
	case LP_SYNC_WR_LOCK:
	case LP_SYNC_SPIN_LOCK:
		apply_lock(st, it, t, object, u, begin);
		break;
	case LP_SYNC_MUTEX_UNLOCK:
	case LP_SYNC_RW_UNLOCK:
	case LP_SYNC_SPIN_UNLOCK:
		apply_unlock(st, it, t, object, u);
		break;
	case LP_SYNC_COND_WAIT:
		apply_cond_wait(st, it, t, object, u, begin);
		break;
	case LP_SYNC_COND_SIGNAL:
	case LP_SYNC_COND_BROADCAST:
		if (it->op == LP_SYNC_COND_SIGNAL)
			o->signals++;
		else
			o->broadcasts++;
		t->signals++;
		signalled(o, u, it->thread, it->ns);
		break;
	case LP_SYNC_SEM_POST:
		if (it->flags & LP_SYNC_FAILED)
			break;
		o->posts++;
		t->posts++;
		signalled(o, u, it->thread, it->ns);
		break;
	default: /* SEM_WAIT, BARRIER_WAIT */
		apply_wait(st, it, t, object, u, begin);
		break;
	}
}

/* ------------------------------------------------------------ the merge by time */

static bool item_less(const struct syncstats_item *a, const struct syncstats_item *b)
{
	return a->ns < b->ns || (a->ns == b->ns && a->seq < b->seq);
}

static void q_pop(struct syncstats *st, struct syncstats_item *out)
{
	struct syncstats_item *q = st->q;
	uint32_t i = 0, n = --st->nq;

	*out = q[0];
	if (!n)
		return;
	q[0] = q[n];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		struct syncstats_item tmp;

		if (l < n && item_less(&q[l], &q[m]))
			m = l;
		if (r < n && item_less(&q[r], &q[m]))
			m = r;
		if (m == i)
			break;
		tmp = q[i];
		q[i] = q[m];
		q[m] = tmp;
		i = m;
	}
}

static void q_apply_one(struct syncstats *st)
{
	struct syncstats_item it;

	q_pop(st, &it);
	apply(st, &it);
}

static void q_push(struct syncstats *st, const struct syncstats_item *it)
{
	struct syncstats_item *q;
	uint32_t i;

	if (st->nq == SYNCSTATS_QUEUE_MAX)
		q_apply_one(st);
	if (grow((void **)&st->q, &st->q_cap, st->nq, sizeof(*st->q), SYNCSTATS_QUEUE_MAX)) {
		/* no room to hold it back: apply it now, out of order */
		st->oom = true;
		apply(st, it);
		return;
	}
	q = st->q;
	i = st->nq++;
	q[i] = *it;
	q[i].seq = st->seq++;
	while (i) {
		uint32_t p = (i - 1) / 2;
		struct syncstats_item tmp;

		if (!item_less(&q[i], &q[p]))
			break;
		tmp = q[i];
		q[i] = q[p];
		q[p] = tmp;
		i = p;
	}
}

void syncstats_watermark(void *ctx, uint64_t ns)
{
	struct syncstats *st = ctx;

	while (st->nq && st->q[0].ns <= ns)
		q_apply_one(st);
}

void syncstats_flush(struct syncstats *st)
{
	while (st->nq)
		q_apply_one(st);
}

/* ------------------------------------------------------------ futex waits of other code */

static void futex_wait_commit(struct syncstats *st, struct syncstats_thread *t, const struct syncstats_pending *p)
{
	uint32_t thread = (uint32_t)(t - st->threads), object;
	uint64_t len = p->exit_ns > p->enter_ns ? p->exit_ns - p->enter_ns : 0;
	struct syncstats_object *o;
	struct syncstats_use *u;

	st->futex_waits++;
	object = object_get(st, t, p->uaddr, SYNCSTATS_FUTEX, p->enter_ns, 0);
	if (object == UINT32_MAX)
		return;
	o = &st->objects[object];
	u = use_get(st, object, thread);
	o->ops++;
	o->calls++;
	if (p->enter_ns < o->first_ns)
		o->first_ns = p->enter_ns;
	if (p->exit_ns > o->last_ns)
		o->last_ns = p->exit_ns;
	if (p->ret == -ETIMEDOUT)
		o->timeouts++;
	if (u) {
		u->ops++;
		u->calls++;
	}
	if (!len)
		return;
	add_wait(st, o, u, t, SYNCSTATS_FUTEX, len);
	emit_wait(st, t, SYNCSTATS_FUTEX, 0, 0, p->uaddr, 0, p->enter_ns, p->exit_ns, 0, 0, 0, object);
}

/* Places t's held-back futex waits: those inside [begin, end] (an
 * interposed operation's own wait) are left out, the others counted. */
static void futex_place(struct syncstats *st, struct syncstats_thread *t, uint64_t begin, uint64_t end)
{
	uint32_t i;

	for (i = 0; i < t->npending; i++) {
		const struct syncstats_pending *p = &t->pending[i];

		if (end > begin && p->enter_ns >= begin && p->exit_ns <= end)
			st->futex_waits_inside++;
		else
			futex_wait_commit(st, t, p);
	}
	t->npending = 0;
}

static void futex_wake(struct syncstats *st, struct syncstats_thread *t, const struct walk_syscall *sc)
{
	uint32_t object = object_get(st, t, sc->args[0], SYNCSTATS_FUTEX, sc->enter_ns, 0);
	struct syncstats_object *o;
	struct syncstats_use *u;

	if (object == UINT32_MAX)
		return;
	o = &st->objects[object];
	u = use_get(st, object, (uint32_t)(t - st->threads));
	o->ops++;
	o->signals++;
	if (u)
		u->ops++;
	signalled(o, u, (uint32_t)(t - st->threads), sc->enter_ns);
}

void syncstats_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct syncstats *st = ctx;
	struct syncstats_thread *t;
	unsigned cmd;

	if (sc->arch >= 4 || sc->nargs < 2 || !sc->has_enter || !sc->has_exit ||
	    ((int)sc->nr != st->futex_nr[sc->arch][0] && (int)sc->nr != st->futex_nr[sc->arch][1]))
		return;
	cmd = FUTEX_CMD((unsigned)sc->args[1]);
	switch (cmd) {
	case FUTEX_WAIT_:
	case FUTEX_WAIT_BITSET_:
	case FUTEX_WAIT_REQUEUE_PI_:
	case FUTEX_LOCK_PI_:
	case FUTEX_LOCK_PI2_:
		t = thread_get(st, s);
		if (!t)
			return;
		if (!t->pending) {
			t->pending = calloc(SYNCSTATS_PENDING_MAX, sizeof(*t->pending));
			if (!t->pending) {
				st->oom = true;
				return;
			}
		}
		if (t->npending == SYNCSTATS_PENDING_MAX) {
			/* the oldest is placed now: counted, as if outside any operation */
			st->over.pending++;
			futex_wait_commit(st, t, &t->pending[0]);
			memmove(t->pending, t->pending + 1, (SYNCSTATS_PENDING_MAX - 1) * sizeof(*t->pending));
			t->npending--;
		}
		t->pending[t->npending++] = (struct syncstats_pending){
			.enter_ns = sc->enter_ns, .exit_ns = sc->exit_ns, .uaddr = sc->args[0], .ret = sc->ret
		};
		break;
	case FUTEX_WAKE_:
	case FUTEX_WAKE_BITSET_:
	case FUTEX_WAKE_OP_:
	case FUTEX_REQUEUE_:
	case FUTEX_CMP_REQUEUE_:
	case FUTEX_UNLOCK_PI_:
		t = thread_get(st, s);
		if (t)
			futex_wake(st, t, sc);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------ the walk */

void syncstats_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y)
{
	struct syncstats *st = ctx;
	struct syncstats_thread *t = thread_get(st, s);
	struct syncstats_item it;

	if (!t)
		return;
	if (t->npending)
		futex_place(st, t, y->wait_ns < y->ns ? y->ns - y->wait_ns : 0, y->wait_ns ? y->ns : 0);
	memset(&it, 0, sizeof(it));
	it.ns = y->ns;
	it.op = y->op;
	it.flags = y->flags;
	it.obj = y->obj;
	it.obj2 = y->obj2;
	it.wait_ns = y->wait_ns;
	it.site = y->site;
	it.thread = (uint32_t)(t - st->threads);
	q_push(st, &it);
}

void syncstats_end(void *ctx, struct walk_stream *s)
{
	struct syncstats *st = ctx;
	uint64_t hash = hashindex_u64((uint64_t)s->image << 32 | s->tid);
	int64_t i = hashindex_get(&st->thread_index, hash, thread_eq, st, s);

	if (i >= 0 && st->threads[i].npending)
		futex_place(st, &st->threads[i], 0, 0);
}

void syncstats_walk_ops(struct syncstats *st, struct walk_ops *ops)
{
	ops->ctx = st;
	ops->sync = syncstats_sync;
	ops->syscall = syncstats_syscall;
	ops->watermark = syncstats_watermark;
	ops->end = syncstats_end;
}

/* ------------------------------------------------------------ results */

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
	const uint32_t *a, *b;
	uint32_t na, nb;
	struct syncstats_pair *p = NULL;
	int s; /* the side that signals this object */

	for (i = o->first_use; i < o->first_use + o->nuses; i++) {
		const struct syncstats_use *u = &st->uses[i];

		if (u->signals && u->calls)
			return; /* a thread on both sides: not a queue */
		if (u->signals) {
			if (ns == SYNCSTATS_SIDE_MAX)
				goto over;
			sig[ns++] = u->thread;
		} else if (u->calls) {
			if (nw == SYNCSTATS_SIDE_MAX)
				goto over;
			wai[nw++] = u->thread;
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
	p->wait_ns[1 - s] += o->waits.total_ns;
	if (o->first_signaller && o->first_signal_ns < p->first_signal_ns[s])
		p->first_signal_ns[s] = o->first_signal_ns;
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
			futex_place(st, t, 0, 0);
		while (t->nheld) {
			st->objects[t->held[t->nheld - 1].object].held_at_end++;
			t->nheld--;
		}
		memcpy(t->comm, t->s->comm, sizeof(t->comm));
		t->comm[sizeof(t->comm) - 1] = '\0';
		t->first_ns = t->s->first_ns;
		t->last_ns = t->s->last_ns;
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

		object_name(st, o, o->last_ns);
		o->wait_p99_ns = object_p99(st, o);
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
