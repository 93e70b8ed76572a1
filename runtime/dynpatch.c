/* In-process patching (record --dynamic --backend patch), the patched
 * calls' paths: the runtime rewrites the entries of the functions the
 * recorder's plan names (dynapply.c) so that each jumps to a trampoline of
 * its own, which enters the common entry path (arch/<arch>/dyntramp.S) with
 * the function's record.  That path calls lp_dyn_enter here, which calls the
 * same entry gate as -finstrument-functions code and replaces the caller's
 * return address with the common return path; the function then goes on at
 * its first instructions, relocated into the trampoline, and from there back
 * in its own code.  On return, lp_dyn_exit runs the exit gate and takes the
 * real return address back from the thread's frame stack. */
#include <errno.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime.h"

#if defined(LP_HAVE_DYNTRAMP)

#include "lp_dynarch.h"

/* A thread's frame stack: room for this many nested patched calls, reserved
 * at once and made as it is used.  Deeper calls run untraced (counted). */
#define DYN_FRAMES (1u << 16)

/* arch/<arch>/dyntramp.S (lp_dyn_return: runtime.h) */
void lp_dyn_entry(void);

/* A call the thread cannot keep a frame for (deeper than DYN_FRAMES, or
 * no memory for the stack) runs untraced: its entry and exit count as
 * lost in the thread's stream. */
static LP_NOINSTR void untraced(struct lp_thread *t)
{
	if (t->state == LP_THREAD_READY && !t->busy) {
		t->busy = 1;
		atomic_signal_fence(memory_order_seq_cst);
		lp_ring_put(t, LP_RAW_LOST, 2);
		atomic_signal_fence(memory_order_seq_cst);
		t->busy = 0;
	}
}

/* The thread's frame stack, at its first patched call (a system call: the
 * program's errno is kept). */
static LP_NOINSTR bool frames_get(struct lp_thread *t)
{
	int saved = errno;
	void *p;

	if (t->dyn_done || t->dyn_getting)
		return false;
	t->dyn_getting = 1;
	p = mmap(NULL, DYN_FRAMES * sizeof(struct lp_dynframe), PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	t->dyn_getting = 0;
	errno = saved;
	if (p == MAP_FAILED) {
		t->dyn_done = 1;
		return false;
	}
	t->dyn = p;
	return true;
}

/* Where the common paths keep the registers (arch/<arch>/dyntramp.S), by
 * the stack pointer at the function's entry: integer argument k, and the
 * return value register. */
static const int8_t arg_slot[LP_ARGS_MAX] = DYN_ARG_SLOTS;

/* Up to max bytes at a in the process, without faulting: the reader is
 * the kernel (an address the program passes to a system call need not be
 * mapped).  The piece on a page beyond an unmapped one is not read.
 * Returns the bytes read. */
static LP_NOINSTR size_t mem_read(struct lp_thread *t, uintptr_t a, uint8_t *buf, size_t max)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), split = (a | (page - 1)) + 1;
	struct iovec local = { buf, max }, remote[2] = { { (void *)a, max }, { NULL, 0 } };
	ssize_t n;

	if (!a || split - a < max) {
		if (!a)
			return 0;
		remote[0].iov_len = split - a;
		remote[1].iov_base = (void *)split;
		remote[1].iov_len = max - (split - a);
	}
	n = process_vm_readv((pid_t)t->ring->pid, &local, 1, remote, remote[1].iov_len ? 2 : 1, 0);
	return n > 0 ? (size_t)n : 0;
}

/* A C string the called function reads itself, so reading it first
 * touches no byte it would not (never past its NUL): up to max bytes, the
 * NUL included when it comes.  Returns the bytes read. */
static LP_NOINSTR size_t cstr_read(const char *s, uint8_t *buf, size_t max)
{
	size_t n = 0;

	if (!s)
		return 0;
	while (n < max) {
		buf[n] = (uint8_t)s[n];
		if (!buf[n++])
			break;
	}
	return n;
}

/* The arguments of the call just entered (LP_EXT_ARGS), and the memory
 * its string and buffer arguments point to.  Returns whether they were
 * written (the return value then goes before the exit). */
static LP_NOINSTR uintptr_t args_put(struct lp_thread *t, const struct lp_dynrec *r, uintptr_t sp)
{
	uint8_t rec[sizeof(struct lp_ext_args) + LP_ARGS_MAX * (2 + LP_ARGS_MEM_MAX)];
	struct lp_ext_args h;
	uint32_t n = LP_PLAN_ARGS_N(r->args) < LP_ARGS_MAX ? LP_PLAN_ARGS_N(r->args) : LP_ARGS_MAX;
	size_t at = sizeof(h);
	int saved = errno;

	memset(&h, 0, sizeof(h));
	h.fn = r->fn;
	h.n = (uint8_t)n;
	for (uint32_t k = 0; k < n; k++)
		h.words[k] = ((const uintptr_t *)sp)[arg_slot[k]];
	for (uint32_t k = 0; k < n; k++) {
		uint32_t kind = LP_PLAN_ARG_KIND(r->args, k);
		uint8_t buf[LP_ARGS_MEM_MAX + 1];
		size_t want = LP_ARGS_MEM_MAX + 1, got, len;
		bool cut;

		if (kind == LP_ARG_BUF && k + 1 < n)
			want = h.words[k + 1] < want ? (size_t)h.words[k + 1] : want;
		else if (kind != LP_ARG_STR && kind != LP_ARG_CSTR)
			continue;
		got = kind == LP_ARG_CSTR ? cstr_read((const char *)(uintptr_t)h.words[k], buf, want)
		                          : mem_read(t, (uintptr_t)h.words[k], buf, want);
		if (kind != LP_ARG_BUF) {
			uint8_t *nul = memchr(buf, 0, got);

			if (!got)
				continue;
			len = nul ? (size_t)(nul - buf) : got < LP_ARGS_MEM_MAX ? got : LP_ARGS_MEM_MAX;
			cut = !nul;
		} else {
			if (!got && want)
				continue;
			len = got < LP_ARGS_MEM_MAX ? got : LP_ARGS_MEM_MAX;
			cut = len < h.words[k + 1];
		}
		rec[at] = (uint8_t)(k | (cut ? LP_ARGS_MEM_CUT : 0u));
		rec[at + 1] = (uint8_t)len;
		memcpy(rec + at + 2, buf, len);
		at += 2 + len;
		h.nmem++;
	}
	memcpy(rec, &h, sizeof(h));
	errno = saved;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	lp_ring_put_ext(t, LP_EXT_ARGS, rec, at);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
	return (r->args & LP_PLAN_ARGS_RET) != 0;
}

/* The return value of fn, whose frame had stack pointer sp (LP_EXT_RETVAL). */
static LP_NOINSTR void retval_put(struct lp_thread *t, uintptr_t fn, uintptr_t sp)
{
	struct lp_ext_retval v = { .fn = fn, .value = ((const uintptr_t *)sp)[DYN_RET_SLOT] };

	if (t->state != LP_THREAD_READY || t->busy)
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	lp_ring_put_ext(t, LP_EXT_RETVAL, &v, sizeof(v));
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* The common entry path's C half: ret is where the caller's return
 * address is (x86-64: on the stack; aarch64: the saved link register), sp
 * the stack pointer at the function's entry, which names its frame.
 * Returns where the function goes on. */
static LP_NOINSTR uintptr_t dyn_enter(struct lp_thread *t, const struct lp_dynrec *r, uintptr_t *ret, uintptr_t sp)
{
	struct lp_dynframe *f;

	if (unlikely(!t->dyn) && !frames_get(t)) {
		untraced(t);
		return r->cont;
	}
	/* a branch of the function's own code back to its entry (a loop
	 * whose head is the entry, or a call made a jump): still the same
	 * call, as with compiled-in gates */
	if (t->dyn_n && t->dyn[t->dyn_n - 1].sp == sp && t->dyn[t->dyn_n - 1].fn == r->fn &&
	    *ret == (uintptr_t)lp_dyn_return)
		return r->cont;
	if (unlikely(t->dyn_n == DYN_FRAMES)) {
		untraced(t);
		return r->cont;
	}
	f = &t->dyn[t->dyn_n];
	f->sp = sp;
	f->ret = *ret;
	f->fn = r->fn;
	/* a signal handler that runs now finds the frame complete */
	atomic_signal_fence(memory_order_seq_cst);
	t->dyn_n++;
	atomic_signal_fence(memory_order_seq_cst);
	*ret = (uintptr_t)lp_dyn_return;
	f->want_ret = 0;
	if (unlikely(r->args)) {
		struct lp_slot *before = t->state == LP_THREAD_READY ? t->cur : NULL;

		lp_gate_entry(r->fn);
		/* the entry was written (not filtered out at the source) */
		if (t->state == LP_THREAD_READY && t->cur != before && !t->busy)
			f->want_ret = args_put(t, r, sp);
		return r->cont;
	}
	lp_gate_entry(r->fn);
	return r->cont;
}

/* Once a plan patches the C library (dynapply.c), the runtime's own calls
 * into it (errno, the clock, mmap, ...) reach the entry path: a call made
 * while the thread is inside the entry or the return path runs as it is,
 * untraced (so does a patched call of a signal handler that interrupts
 * them then). */
int lp_dyn_libc_patched;

__attribute__((visibility("hidden"))) LP_NOINSTR uintptr_t lp_dyn_enter(const struct lp_dynrec *r, uintptr_t *ret,
                                                                        uintptr_t sp)
{
	struct lp_thread *t = &lp_self;
	uintptr_t cont;

	if (likely(!lp_dyn_libc_patched))
		return dyn_enter(t, r, ret, sp);
	if (t->dyn_inside)
		return r->cont;
	t->dyn_inside = 1;
	cont = dyn_enter(t, r, ret, sp);
	t->dyn_inside = 0;
	return cont;
}

/* The common return path's C half: sp is the stack pointer the function
 * had at its entry (it is so again once it returned).  Frames of deeper
 * stack pointers were left by a longjmp (the runtime's longjmp wrapper
 * recorded it) and go.  Returns the real return address. */
static LP_NOINSTR uintptr_t dyn_exit(struct lp_thread *t, uintptr_t sp);

__attribute__((visibility("hidden"))) LP_NOINSTR uintptr_t lp_dyn_exit(uintptr_t sp)
{
	struct lp_thread *t = &lp_self;
	uint8_t was = t->dyn_inside;
	uintptr_t ret;

	if (likely(!lp_dyn_libc_patched))
		return dyn_exit(t, sp);
	t->dyn_inside = 1;
	ret = dyn_exit(t, sp);
	t->dyn_inside = was;
	return ret;
}

static LP_NOINSTR uintptr_t dyn_exit(struct lp_thread *t, uintptr_t sp)
{
	while (t->dyn_n) {
		struct lp_dynframe f = t->dyn[t->dyn_n - 1];

		atomic_signal_fence(memory_order_seq_cst);
		t->dyn_n--;
		atomic_signal_fence(memory_order_seq_cst);
		if (f.sp < sp)
			continue;
		if (unlikely(f.want_ret))
			retval_put(t, f.fn, sp);
		lp_gate_exit(f.fn);
		return f.ret;
	}
	/* cannot happen: every return address pointing here has its frame */
	static const char msg[] = "layerprof: a patched function returned without its frame\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	abort();
}

/* C++ exceptions.  The unwinder finds a frame's caller through its return
 * address, which for a patched function is lp_dyn_return: an exception
 * would stop there.  So when one is raised the thread's frames get their
 * real return addresses back, and when it is caught the frames it unwound
 * end (their exits written, innermost first, as the gates of
 * -finstrument-functions code write them while it unwinds) and the others
 * are hooked again. */
#if defined(__x86_64__)
/* On x86-64 a frame's return address is at its stack pointer.  (lower:
 * the stack pointer of the caller, unused here.) */
static LP_NOINSTR void frames_unhook(struct lp_thread *t, uintptr_t lower)
{
	(void)lower;
	for (uint32_t i = t->dyn_n; i-- > 0;) {
		uintptr_t *slot = (uintptr_t *)t->dyn[i].sp;

		if (*slot == (uintptr_t)lp_dyn_return)
			*slot = t->dyn[i].ret;
	}
}

static LP_NOINSTR void frames_rehook(struct lp_thread *t)
{
	for (uint32_t i = 0; i < t->dyn_n; i++) {
		uintptr_t *slot = (uintptr_t *)t->dyn[i].sp;

		if (*slot == t->dyn[i].ret)
			*slot = (uintptr_t)lp_dyn_return;
	}
}
#else
/* On aarch64 and 32-bit ARM the return address comes in the link
 * register, and the
 * function saves it where it chooses, within its own frame: between its
 * entry's stack pointer and the next patched call's (the innermost frame:
 * down to lower, the stack pointer of the runtime's wrapper).  That is the
 * word holding lp_dyn_return there (a function that ended by a tail call
 * leaves it to its callee, which saves it in its own frame, in the same
 * range).  Each such word gets the real address back; the first found is
 * kept for hooking the frame again. */
static LP_NOINSTR void frames_unhook(struct lp_thread *t, uintptr_t lower)
{
	for (uint32_t i = t->dyn_n; i-- > 0;) {
		uintptr_t hi = t->dyn[i].sp, lo = i + 1 < t->dyn_n ? t->dyn[i + 1].sp : lower;

		t->dyn[i].slot = 0;
		for (uintptr_t a = (hi - sizeof(uintptr_t)) & ~(uintptr_t)(sizeof(uintptr_t) - 1); a >= lo && a < hi;
		     a -= sizeof(uintptr_t)) {
			uintptr_t *w = (uintptr_t *)a;

			if (*w != (uintptr_t)lp_dyn_return)
				continue;
			*w = t->dyn[i].ret;
			if (!t->dyn[i].slot)
				t->dyn[i].slot = a;
		}
	}
}

static LP_NOINSTR void frames_rehook(struct lp_thread *t)
{
	for (uint32_t i = 0; i < t->dyn_n; i++) {
		uintptr_t *slot = (uintptr_t *)t->dyn[i].slot;

		if (slot && *slot == t->dyn[i].ret)
			*slot = (uintptr_t)lp_dyn_return;
		t->dyn[i].slot = 0;
	}
}
#endif

/* The next definition of a function the runtime wraps (libgcc_s's,
 * libstdc++'s). */
static LP_NOINSTR void *next_fn(void *volatile *cache, const char *name)
{
	void *f = *cache;

	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		*cache = f;
	}
	return f;
}

#define UNWIND_WRAPPER(ret, name, params, args)                                  \
	LP_EXPORT LP_NOINSTR ret name params                                     \
	{                                                                        \
		static void *volatile real;                                      \
		ret(*f) params = (ret(*) params)next_fn(&real, #name);           \
		struct lp_thread *t = &lp_self;                                  \
		if (t->dyn_n)                                                    \
			frames_unhook(t, (uintptr_t)__builtin_frame_address(0)); \
		return f args;                                                   \
	}

struct _Unwind_Exception;
typedef int (*lp_unwind_stop_fn)(int, int, uint64_t, struct _Unwind_Exception *, void *, void *);

UNWIND_WRAPPER(int, _Unwind_RaiseException, (struct _Unwind_Exception * e), (e))
UNWIND_WRAPPER(int, _Unwind_Resume_or_Rethrow, (struct _Unwind_Exception * e), (e))
UNWIND_WRAPPER(int, _Unwind_ForcedUnwind, (struct _Unwind_Exception * e, lp_unwind_stop_fn stop, void *arg),
               (e, stop, arg))

/* From __cxa_begin_catch (dyntramp.S): sp is the catching frame's stack
 * pointer.  Frames below it were unwound. */
__attribute__((visibility("hidden"))) LP_NOINSTR void *lp_dyn_begin_catch(void *exc, uintptr_t sp)
{
	static void *volatile real;
	void *(*f)(void *) = (void *(*)(void *))next_fn(&real, "__cxa_begin_catch");
	struct lp_thread *t = &lp_self;

	if (t->dyn_n) {
		while (t->dyn_n && t->dyn[t->dyn_n - 1].sp < sp) {
			uintptr_t fn = t->dyn[t->dyn_n - 1].fn;

			atomic_signal_fence(memory_order_seq_cst);
			t->dyn_n--;
			atomic_signal_fence(memory_order_seq_cst);
			lp_gate_exit(fn);
		}
		frames_rehook(t);
	}
	return f(exc);
}

LP_NOINSTR void lp_dynpatch_thread_end(struct lp_thread *t)
{
	if (t->dyn && !t->dyn_n) {
		munmap(t->dyn, DYN_FRAMES * sizeof(struct lp_dynframe));
		t->dyn = NULL;
		t->dyn_done = 1;
	}
}

#else

LP_NOINSTR void lp_dynpatch_thread_end(struct lp_thread *t)
{
	(void)t;
}

#endif
