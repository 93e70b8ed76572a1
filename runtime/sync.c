/* The sync tracer's recording half: the LP_RAW_SYNC records of the
 * synchronisation operations the interposers (synchook.c) report.  Called
 * on every traced lock, unlock, wait and post of the program: no locks, no
 * allocation, no system calls except when a thread is set up. */
#include <errno.h>

#include "runtime.h"
#include "runtime/synctrace.h"

#define SYNC_SLOTS 3u

LP_EXPORT __thread struct lp_synchook_state lp_synchook __attribute__((tls_model("initial-exec")));

LP_EXPORT LP_NOINSTR bool lp_sync_on(void)
{
	return atomic_load_explicit((const _Atomic uint32_t *)lp_ctl_flags, memory_order_relaxed) & LP_CTL_ENABLED;
}

/* Not ordered (the ordered read costs twice as much on some machines): it
 * is read before the operation it times, whose effect (a release's store,
 * a wait's first step) cannot be seen by another thread before the read
 * retired. */
LP_EXPORT LP_NOINSTR uint64_t lp_sync_clock(void)
{
	return lp_clock_now();
}

/* The thread cannot write now: its first record (the ring is made), a
 * signal handler's operation inside another record (counted lost), a
 * thread without a ring (counted in the loss table).  True when the
 * record can be written.  Keeps errno. */
static LP_NOINSTR __attribute__((noinline, cold)) bool sync_thread_open(struct lp_thread *t)
{
	int saved_errno = errno;
	bool ok = false;

	if (t->state == LP_THREAD_NEW) {
		/* before the runtime's constructor (the loader's and libc's
		 * own start): the thread is left as it is, the operation
		 * is not the program's */
		if (atomic_load_explicit(&lp_proc.init, memory_order_acquire) != 2)
			goto out;
		lp_thread_start(t);
	}
	if (t->state == LP_THREAD_LOST) {
		lp_loss_add(t, 1);
		goto out;
	}
	if (t->state != LP_THREAD_READY)
		goto out;
	if (t->busy) {
		t->nested++; /* a signal handler's operation inside a record or gate */
		goto out;
	}
	ok = true;
out:
	errno = saved_errno;
	return ok;
}

/* The three slots (format.h, LP_RAW_SYNC). */
static inline LP_NOINSTR void sync_put(struct lp_thread *t, uint64_t now, uint32_t op_flags, uintptr_t obj,
                                       uint64_t begin, uintptr_t site, uintptr_t obj2)
{
	struct lp_slot *s = t->cur;

	if (unlikely((size_t)(t->limit - s) < SYNC_SLOTS))
		s = lp_ring_reserve(t, SYNC_SLOTS, now);
	s[0].time = now;
	s[0].word = LP_RAW_SYNC_PAYLOAD(op_flags & 0xff, op_flags >> 8) | ((uint64_t)LP_RAW_SYNC << LP_SLOT_TYPE_SHIFT);
	s[1].time = obj;
	s[1].word = begin;
	s[2].time = site;
	s[2].word = obj2;
	lp_ring_commit(t, s, SYNC_SLOTS);
}

static inline LP_NOINSTR void sync_write(bool have_now, uint64_t now, uint32_t op_flags, uintptr_t obj, uint64_t begin,
                                         uintptr_t site, uintptr_t obj2)
{
	uint32_t f = atomic_load_explicit((const _Atomic uint32_t *)lp_ctl_flags, memory_order_relaxed);
	struct lp_thread *t = &lp_self;

	if (unlikely(!(f & LP_CTL_ENABLED)))
		return;
	if (unlikely(t->state != LP_THREAD_READY || t->busy) && !sync_thread_open(t))
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	/* ordered: an acquisition must not read the clock before the
	 * atomic operation that acquired (so that it comes after the
	 * release it waited for, whose time was taken before it) */
	if (!have_now)
		now = lp_clock_now_ordered();
	sync_put(t, now, op_flags, obj, begin, site, obj2);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

LP_EXPORT LP_NOINSTR void lp_sync_record(uint32_t op_flags, uintptr_t obj, uint64_t begin, uintptr_t site,
                                         uintptr_t obj2)
{
	sync_write(false, 0, op_flags, obj, begin, site, obj2);
}

LP_EXPORT LP_NOINSTR void lp_sync_record_at(uint64_t now, uint32_t op_flags, uintptr_t obj, uintptr_t site,
                                            uintptr_t obj2)
{
	sync_write(true, now, op_flags, obj, 0, site, obj2);
}
