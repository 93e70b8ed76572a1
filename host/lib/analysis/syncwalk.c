/* The walk's side of the synchronisation statistics (see syncstats.h):
 * each thread's events in its stream's order (futex waits held back and
 * placed against the interposed operations' waits), and the merge by time
 * that hands the operations to syncstats.c in order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/analysis/syncstats_impl.h"
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
	syncstats_apply(st, &it);
}

static void q_push(struct syncstats *st, const struct syncstats_item *it)
{
	struct syncstats_item *q;
	uint32_t i;

	if (st->nq == SYNCSTATS_QUEUE_MAX)
		q_apply_one(st);
	if (syncstats_grow((void **)&st->q, &st->q_cap, st->nq, sizeof(*st->q), SYNCSTATS_QUEUE_MAX)) {
		/* no room to hold it back: apply it now, out of order */
		st->oom = true;
		syncstats_apply(st, it);
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
	struct syncstats_item it = { 0 };

	st->futex_waits++;
	object = syncstats_object_get(st, t, p->uaddr, SYNCSTATS_FUTEX, p->enter_ns, 0);
	if (object == UINT32_MAX)
		return;
	o = &st->objects[object];
	u = syncstats_use_get(st, object, thread);
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
	syncstats_add_wait(st, o, u, t, SYNCSTATS_FUTEX, len);
	it.ns = p->exit_ns;
	it.obj = p->uaddr;
	it.func = p->func;
	it.depth = p->depth;
	syncstats_emit_wait(st, t, SYNCSTATS_FUTEX, &it, p->enter_ns, 0, 0, object);
}

/* Places t's held-back futex waits: those inside [begin, end] (an
 * interposed operation's own wait) are left out, the others counted. */
void syncstats_futex_place(struct syncstats *st, struct syncstats_thread *t, uint64_t begin, uint64_t end)
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
	uint32_t object = syncstats_object_get(st, t, sc->args[0], SYNCSTATS_FUTEX, sc->enter_ns, 0);
	struct syncstats_object *o;
	struct syncstats_use *u;

	if (object == UINT32_MAX)
		return;
	o = &st->objects[object];
	u = syncstats_use_get(st, object, (uint32_t)(t - st->threads));
	o->ops++;
	o->signals++;
	if (u)
		u->ops++;
	syncstats_signalled(o, u, (uint32_t)(t - st->threads), sc->enter_ns);
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
		t = syncstats_thread_get(st, s);
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
			.enter_ns = sc->enter_ns,
			.exit_ns = sc->exit_ns,
			.uaddr = sc->args[0],
			.ret = sc->ret,
			.func = sc->func,
			.depth = sc->depth,
		};
		break;
	case FUTEX_WAKE_:
	case FUTEX_WAKE_BITSET_:
	case FUTEX_WAKE_OP_:
	case FUTEX_REQUEUE_:
	case FUTEX_CMP_REQUEUE_:
	case FUTEX_UNLOCK_PI_:
		t = syncstats_thread_get(st, s);
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
	struct syncstats_thread *t = syncstats_thread_get(st, s);
	struct syncstats_item it;

	if (!t)
		return;
	if (t->npending)
		syncstats_futex_place(st, t, y->wait_ns < y->ns ? y->ns - y->wait_ns : 0, y->wait_ns ? y->ns : 0);
	memset(&it, 0, sizeof(it));
	it.ns = y->ns;
	it.op = y->op;
	it.flags = y->flags;
	it.obj = y->obj;
	it.obj2 = y->obj2;
	it.wait_ns = y->wait_ns;
	it.site = y->site;
	it.func = y->func;
	it.depth = y->depth;
	it.thread = (uint32_t)(t - st->threads);
	q_push(st, &it);
	/* the mutex a condition wait let go of, released when the wait began
	 * (not after an error other than a timeout), unless the merge has
	 * gone past that time: the wait's record then ends the hold late */
	if (y->op == LP_SYNC_COND_WAIT && y->obj2 && y->wait_ns && y->wait_ns <= y->ns &&
	    (!(y->flags & LP_SYNC_FAILED) || (y->flags & LP_SYNC_TIMEDOUT)) && y->ns - y->wait_ns >= st->applied_ns) {
		it.ns = y->ns - y->wait_ns;
		it.flags = SYNCSTATS_ITEM_LET_GO;
		it.wait_ns = 0;
		q_push(st, &it);
	}
}

void syncstats_end(void *ctx, struct walk_stream *s)
{
	struct syncstats *st = ctx;
	struct syncstats_thread *t = syncstats_thread_find(st, s);

	if (t && t->npending)
		syncstats_futex_place(st, t, 0, 0);
}

void syncstats_walk_ops(struct syncstats *st, struct walk_ops *ops)
{
	ops->ctx = st;
	ops->sync = syncstats_sync;
	ops->syscall = syncstats_syscall;
	ops->watermark = syncstats_watermark;
	ops->end = syncstats_end;
}
