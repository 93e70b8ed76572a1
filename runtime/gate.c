/* The entry and exit gates called by -finstrument-functions code: the hot
 * path of the runtime.  Called on every function entry and exit, from any
 * thread and from signal handlers: no locks, no allocation, no system calls
 * (the first call of a thread sets it up, off the hot path). */
#include "runtime.h"

__thread struct lp_thread lp_self __attribute__((tls_model("initial-exec")));

static inline LP_NOINSTR void gate_write(struct lp_thread *t, uint32_t type, uintptr_t fn)
{
	struct lp_slot *s = t->cur;

	if (unlikely(s == t->limit))
		s = lp_ring_advance(t);
	s->time = lp_clock_now();
	s->word = (uint64_t)fn | ((uint64_t)type << LP_SLOT_TYPE_SHIFT);
	t->cur = s + 1;
	atomic_store_explicit((_Atomic uint32_t *)t->head_ptr, ++t->head, memory_order_release);
}

static inline LP_NOINSTR bool gate_open(struct lp_thread *t)
{
	if (unlikely(
	        !(atomic_load_explicit((const _Atomic uint32_t *)lp_ctl_flags, memory_order_relaxed) & LP_CTL_ENABLED)))
		return false;
	if (likely(t->state == LP_THREAD_READY)) {
		if (likely(!t->busy))
			return true;
		t->nested++; /* a signal handler interrupted a gate */
		return false;
	}
	if (t->state == LP_THREAD_OFF)
		return false;
	return lp_thread_start(t);
}

LP_EXPORT LP_NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site)
{
	struct lp_thread *t = &lp_self;

	if (unlikely(!gate_open(t)))
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	gate_write(t, LP_RAW_ENTRY, (uintptr_t)fn);
	if (likely(t->depth < LP_SHADOW_MAX))
		t->shadow[t->depth] = (uintptr_t)fn;
	t->depth++;
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

LP_EXPORT LP_NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site)
{
	struct lp_thread *t = &lp_self;

	if (unlikely(!gate_open(t)))
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	gate_write(t, LP_RAW_EXIT, (uintptr_t)fn);
	if (likely(t->depth))
		t->depth--;
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}
