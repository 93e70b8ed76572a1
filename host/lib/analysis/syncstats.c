/* Synchronisation statistics (see syncstats.h): the tables of threads,
 * objects and uses, and the accounting of each operation, applied in time
 * order (syncwalk.c merges them). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/analysis/syncstats_impl.h"
#include "layerprof/format.h"

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

int syncstats_grow(void **arr, uint32_t *cap, uint32_t n, size_t size, uint32_t max)
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
struct syncstats_thread *syncstats_thread_get(struct syncstats *st, struct walk_stream *s)
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
	r = syncstats_grow((void **)&st->threads, &st->threads_cap, st->nthreads, sizeof(*st->threads),
	                   SYNCSTATS_THREADS_MAX);
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

struct syncstats_thread *syncstats_thread_find(struct syncstats *st, const struct walk_stream *s)
{
	int64_t i =
	    hashindex_get(&st->thread_index, hashindex_u64((uint64_t)s->image << 32 | s->tid), thread_eq, st, s);

	return i < 0 ? NULL : &st->threads[i];
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

void syncstats_name_object(struct syncstats *st, struct syncstats_object *o, uint64_t ns)
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
uint32_t syncstats_object_get(struct syncstats *st, const struct syncstats_thread *t, uint64_t addr, uint8_t kind,
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
	r = syncstats_grow((void **)&st->objects, &st->objects_cap, st->nobjects, sizeof(*st->objects),
	                   SYNCSTATS_OBJECTS_MAX);
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
	syncstats_name_object(st, o, ns);
	return st->nobjects++;
}

static bool use_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct syncstats_use *u = &((const struct syncstats *)ctx)->uses[item];
	const uint32_t *k = key;

	return u->object == k[0] && u->thread == k[1];
}

/* The use of object by thread; NULL past the bounds (counted). */
struct syncstats_use *syncstats_use_get(struct syncstats *st, uint32_t object, uint32_t thread)
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
	r = syncstats_grow((void **)&st->uses, &st->uses_cap, st->nuses, sizeof(*st->uses), SYNCSTATS_USES_MAX);
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
	if (syncstats_grow((void **)&st->ptmap, &st->ptmap_cap, st->nptmap, sizeof(*st->ptmap),
	                   4 * SYNCSTATS_THREADS_MAX)) {
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

void syncstats_add_wait(struct syncstats *st, struct syncstats_object *o, struct syncstats_use *u,
                        struct syncstats_thread *t, unsigned kind, uint64_t ns)
{
	waits_add(&o->waits, ns);
	if (u)
		waits_add(&u->waits, ns);
	waits_add(&t->waits[kind], ns);
	t->wait_ns += ns;
	if (!o->hist) {
		if (syncstats_grow((void **)&st->hists, &st->hists_cap, st->nhists, sizeof(*st->hists),
		                   SYNCSTATS_HISTS_MAX)) {
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
uint64_t syncstats_object_p99(const struct syncstats *st, struct syncstats_object *o)
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
void syncstats_emit_wait(struct syncstats *st, const struct syncstats_thread *t, unsigned kind,
                         const struct syncstats_item *it, uint64_t begin, uint32_t waker, uint64_t waker_ns,
                         uint32_t object)
{
	struct syncstats_wait wt = {
		.image = t->image,
		.tid = t->tid,
		.kind = (uint8_t)kind,
		.op = it->op,
		.flags = it->flags,
		.obj = it->obj,
		.obj2 = it->obj2,
		.begin_ns = begin,
		.end_ns = it->ns,
		.site = it->site,
		.func = it->func,
		.depth = it->depth,
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

void syncstats_signalled(struct syncstats_object *o, struct syncstats_use *u, uint32_t thread, uint64_t ns)
{
	if (u && !u->signals++)
		u->first_signal_ns = ns;
	set_releaser(o, thread, ns);
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

	if (syncstats_grow((void **)&st->joins, &st->joins_cap, st->njoins, sizeof(*st->joins), SYNCSTATS_JOINS_MAX))
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
	syncstats_emit_wait(st, t, SYNCSTATS_JOIN, it, begin, failed ? 0 : joined,
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
			syncstats_add_wait(st, o, u, t, o->kind, it->wait_ns);
			syncstats_emit_wait(st, t, o->kind, it, begin, 0, 0, object);
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
		syncstats_add_wait(st, o, u, t, o->kind, it->wait_ns);
		waker = waker_of(o, thread, &waker_ns);
		syncstats_emit_wait(st, t, o->kind, it, begin, waker, waker_ns, object);
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

/* t lets go of mutex (index) at ns in a condition wait; returns the depth
 * its hold had (0: not held). */
static uint32_t let_go(struct syncstats *st, struct syncstats_thread *t, uint32_t mutex, uint64_t ns)
{
	uint32_t thread = (uint32_t)(t - st->threads);
	struct syncstats_use *mu = syncstats_use_get(st, mutex, thread);
	uint32_t depth = hold_end(st, t, mu, mutex, ns, true);

	set_releaser(&st->objects[mutex], thread, ns);
	return depth;
}

static void apply_cond_wait(struct syncstats *st, const struct syncstats_item *it, struct syncstats_thread *t,
                            uint32_t object, struct syncstats_use *u, uint64_t begin)
{
	uint32_t thread = (uint32_t)(t - st->threads), waker = 0, mutex, depth;
	uint32_t use = u ? (uint32_t)(u - st->uses) : UINT32_MAX;
	bool failed = it->flags & LP_SYNC_FAILED, timedout = it->flags & LP_SYNC_TIMEDOUT;
	struct syncstats_object *o;
	uint64_t waker_ns = 0;

	/* the mutex was let go of when the wait began (by the merge's item,
	 * or else now) and is held again now (also after a timeout; not after
	 * another error) */
	if (it->obj2 && (!failed || timedout)) {
		mutex = syncstats_object_get(st, t, it->obj2, SYNCSTATS_MUTEX, begin, it->site);
		if (mutex != UINT32_MAX) {
			depth = t->let_go ? t->let_go_depth : let_go(st, t, mutex, begin);
			if (depth)
				hold_begin(st, t, mutex, it->ns, depth);
		}
	}
	t->let_go = false;
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
	syncstats_add_wait(st, o, u, t, SYNCSTATS_COND, it->wait_ns);
	if (!failed && !timedout)
		waker = waker_of(o, thread, &waker_ns);
	syncstats_emit_wait(st, t, SYNCSTATS_COND, it, begin, waker, waker_ns, object);
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
	syncstats_add_wait(st, o, u, t, o->kind, it->wait_ns);
	if (!failed && o->kind == SYNCSTATS_SEM)
		waker = waker_of(o, thread, &waker_ns);
	syncstats_emit_wait(st, t, o->kind, it, begin, waker, waker_ns, object);
}

void syncstats_apply(struct syncstats *st, const struct syncstats_item *it)
{
	struct syncstats_thread *t = &st->threads[it->thread];
	uint64_t begin = it->ns - (it->wait_ns < it->ns ? it->wait_ns : it->ns);
	struct syncstats_object *o;
	struct syncstats_use *u;
	uint32_t object;
	int kind;

	if (it->flags & SYNCSTATS_ITEM_LET_GO) {
		/* made by the merge, in time order: not an operation of its own */
		object = syncstats_object_get(st, t, it->obj2, SYNCSTATS_MUTEX, it->ns, it->site);
		if (object != UINT32_MAX && it->ns >= st->applied_ns) {
			st->applied_ns = it->ns;
			t->let_go_depth = let_go(st, t, object, it->ns);
			t->let_go = true;
		}
		return;
	}
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
	object = syncstats_object_get(st, t, it->obj, (uint8_t)kind, begin, it->site);
	if (object == UINT32_MAX || it->op != LP_SYNC_COND_WAIT)
		t->let_go = false; /* only the wait that let go takes the mutex again */
	if (object == UINT32_MAX)
		return;
	u = syncstats_use_get(st, object, it->thread);
	o = &st->objects[object];
	o->ops++;
	if (begin < o->first_ns) {
		/* a wait recorded at its end began before the operation first seen */
		o->first_ns = begin;
		o->site = it->site;
	}
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
		syncstats_signalled(o, u, it->thread, it->ns);
		break;
	case LP_SYNC_SEM_POST:
		if (it->flags & LP_SYNC_FAILED)
			break;
		o->posts++;
		t->posts++;
		syncstats_signalled(o, u, it->thread, it->ns);
		break;
	default: /* SEM_WAIT, BARRIER_WAIT */
		apply_wait(st, it, t, object, u, begin);
		break;
	}
}
