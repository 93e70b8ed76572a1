/* The entry and exit gates called by -finstrument-functions code: the hot
 * path of the runtime.  Called on every function entry and exit, from any
 * thread and from signal handlers: no locks, no allocation, no system calls
 * (the first call of a thread sets it up, off the hot path). */
#include <errno.h>

#include "runtime.h"

__thread struct lp_thread lp_self __attribute__((tls_model("initial-exec")));

LP_NOINSTR void lp_gate_write(struct lp_thread *t, uint32_t type, uintptr_t fn)
{
	lp_gate_write_inline(t, type, fn);
}

/* The thread part of opening a gate: its ring exists (or is made now) and
 * no gate of this thread is running (a signal handler's gate drops). */
static inline LP_NOINSTR bool thread_open(struct lp_thread *t)
{
	if (likely(t->state == LP_THREAD_READY)) {
		if (likely(!t->busy))
			return true;
		t->nested++;
		return false;
	}
	if (t->state == LP_THREAD_OFF)
		return false;
	return lp_thread_open(t);
}

/* A stopped session, or a process without one, returns after one load and
 * compare; source filters take the filtered path. */
static LP_NOINSTR __attribute__((noinline, cold)) void gate_filtered(uintptr_t fn, bool entry)
{
	struct lp_thread *t = &lp_self;

	if (thread_open(t))
		lp_gate_filtered(t, fn, entry);
}

#define GATE_CHECK(fn, entry)                                                                                    \
	do {                                                                                                     \
		uint32_t f = atomic_load_explicit((const _Atomic uint32_t *)lp_ctl_flags, memory_order_relaxed); \
		if (unlikely(f != LP_CTL_ENABLED)) {                                                             \
			if (f & LP_CTL_ENABLED)                                                                  \
				gate_filtered(LP_ARCH_FUNC(fn), entry);                                          \
			return;                                                                                  \
		}                                                                                                \
	} while (0)

/* The recording halves of the gates, reached by a tail jump so that the
 * check before them needs no stack frame. */
static LP_NOINSTR __attribute__((noinline)) void gate_enter(uintptr_t fn)
{
	struct lp_thread *t = &lp_self;

	if (unlikely(!thread_open(t)))
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	/* record --counters: the counter record stands for the entry */
	if (unlikely(t->ctr))
		lp_ctr_gate(t, LP_CTR_ENTRY, fn);
	else
		lp_gate_write_inline(t, LP_RAW_ENTRY, fn);
	if (likely(t->depth < LP_SHADOW_MAX))
		t->shadow[t->depth] = fn;
	t->depth++;
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

static LP_NOINSTR __attribute__((noinline)) void gate_exit(uintptr_t fn)
{
	struct lp_thread *t = &lp_self;

	if (unlikely(!thread_open(t)))
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (unlikely(t->ctr))
		lp_ctr_gate(t, LP_CTR_EXIT, fn);
	else
		lp_gate_write_inline(t, LP_RAW_EXIT, fn);
	if (likely(t->depth))
		t->depth--;
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

LP_EXPORT LP_NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site)
{
	GATE_CHECK(fn, true);
	gate_enter(LP_ARCH_FUNC(fn));
}

LP_EXPORT LP_NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site)
{
	GATE_CHECK(fn, false);
	gate_exit(LP_ARCH_FUNC(fn));
}

/* The same gates for functions patched in (dynpatch.c), without the
 * exported symbols' indirection. */
LP_NOINSTR void lp_gate_entry(uintptr_t fn)
{
	GATE_CHECK(fn, true);
	gate_enter(LP_ARCH_FUNC(fn));
}

LP_NOINSTR void lp_gate_exit(uintptr_t fn)
{
	GATE_CHECK(fn, false);
	gate_exit(LP_ARCH_FUNC(fn));
}

#ifdef LP_HAVE_DYNTRAMP
/* A probed instruction ran: its record, while tracing is on (source
 * filters do not apply: they choose functions).  The program's errno is
 * kept. */
LP_NOINSTR void lp_dyn_probe_hit(const struct lp_dynrec *r)
{
	uint32_t f = atomic_load_explicit((const _Atomic uint32_t *)lp_ctl_flags, memory_order_relaxed);
	struct lp_thread *t = &lp_self;
	uint64_t addr = r->fn;
	int saved = errno;

	if ((f & LP_CTL_ENABLED) && thread_open(t)) {
		t->busy = 1;
		atomic_signal_fence(memory_order_seq_cst);
		lp_ring_put_ext(t, LP_EXT_PROBE, &addr, sizeof(addr));
		atomic_signal_fence(memory_order_seq_cst);
		t->busy = 0;
	}
	errno = saved;
}
#endif
