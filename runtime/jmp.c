/* setjmp/longjmp: a longjmp leaves frames whose exit gates never run.  The
 * setjmp family is wrapped (by the per-architecture trampolines in
 * arch/<arch>/setjmp.S, which must not add a frame) to remember the call
 * depth at each jmp_buf; the longjmp family writes LONGJMP(depth) so the
 * host can close the abandoned frames at the right time. */
#include <dlfcn.h>
#include <setjmp.h>

#include "runtime.h"

#ifdef LP_HAVE_SETJMP_TRAMPOLINE

/* Targets of the trampolines' tail jumps, resolved on first use. */
LP_NOINSTR void *lp_real_setjmp_fn(unsigned which);

static void *real_setjmp[3];
static const char *const setjmp_names[3] = { "setjmp", "_setjmp", "__sigsetjmp" };

/* Called by a trampoline with the jmp_buf before it jumps to libc. Returns
 * the libc function to jump to.  Must preserve nothing but what the C ABI
 * says: the trampoline saves the argument registers. */
__attribute__((visibility("hidden"))) LP_NOINSTR void *lp_setjmp_note(const void *env, unsigned which)
{
	struct lp_thread *t = &lp_self;
	unsigned i;

	if (which > 2)
		which = 2;
	if (!real_setjmp[which])
		real_setjmp[which] = dlsym(RTLD_NEXT, setjmp_names[which]);
	if (t->state != LP_THREAD_READY)
		return real_setjmp[which];
	for (i = 0; i < LP_JMPBUF_SLOTS; i++) {
		if (t->jmp[i].env == env) {
			t->jmp[i].depth = t->depth;
			return real_setjmp[which];
		}
	}
	t->jmp[t->jmp_next].env = env;
	t->jmp[t->jmp_next].depth = t->depth;
	t->jmp_next = (t->jmp_next + 1) % LP_JMPBUF_SLOTS;
	return real_setjmp[which];
}

static LP_NOINSTR void note_longjmp(const void *env)
{
	struct lp_thread *t = &lp_self;
	unsigned i;

	/* a signal handler jumps out of a gate it interrupted (no traced code
	 * runs inside one otherwise), maybe one that waits for room: the gate
	 * is abandoned, and the jump is recorded below */
	if (t->state == LP_THREAD_READY && t->busy)
		lp_ring_abandon(t);
	if (t->state != LP_THREAD_READY || t->busy)
		return;
	for (i = 0; i < LP_JMPBUF_SLOTS; i++) {
		if (t->jmp[i].env != env)
			continue;
		if (t->jmp[i].depth < t->depth) {
			t->busy = 1;
			lp_ring_put(t, LP_RAW_LONGJMP, t->jmp[i].depth);
			t->depth = t->jmp[i].depth;
			t->busy = 0;
		}
		return;
	}
}

#define LONGJMP_WRAPPER(name)                                                                          \
	LP_EXPORT LP_NOINSTR __attribute__((noreturn)) void name(struct __jmp_buf_tag env[1], int val) \
	{                                                                                              \
		static void (*real)(struct __jmp_buf_tag *, int);                                      \
		if (!real)                                                                             \
			real = (void (*)(struct __jmp_buf_tag *, int))dlsym(RTLD_NEXT, #name);         \
		note_longjmp(env);                                                                     \
		real(env, val);                                                                        \
		__builtin_unreachable();                                                               \
	}

LONGJMP_WRAPPER(longjmp)
LONGJMP_WRAPPER(_longjmp)
LONGJMP_WRAPPER(siglongjmp)
LONGJMP_WRAPPER(__longjmp_chk)

#endif
