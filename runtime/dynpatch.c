/* In-process patching (record --dynamic --backend patch): the runtime
 * rewrites the entries of the functions the recorder's plan names
 * (LP_PLAN_NAME, include/layerprof/format.h) so that each jumps to a
 * trampoline of its own, which enters the common entry path
 * (arch/<arch>/dyntramp.S) with the function's record.  That path calls the
 * same entry gate as -finstrument-functions code, replaces the caller's
 * return address with the common return path, and goes on to the
 * function's first instructions, relocated into the trampoline, and from
 * there back into the function.  On return, the exit gate runs and the
 * real return address is taken back from the thread's frame stack.
 *
 * A plan is applied in the constructor, before any of the program's code
 * runs and while no other thread exists, and to a library in the dlopen
 * that loaded it, before the call returns: no thread has been in the bytes
 * being replaced.  A function whose bytes in memory are not the plan's is
 * left alone. */
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

#if defined(LP_HAVE_DYNTRAMP) && (defined(__x86_64__) || defined(__aarch64__))

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* A thread's frame stack: room for this many nested patched calls, reserved
 * at once and made as it is used.  Deeper calls run untraced (counted). */
#define DYN_FRAMES (1u << 16)

#if defined(__x86_64__)
#define DYN_PLAN_ARCH LP_PLAN_X86_64
#define DYN_JUMP 5u        /* jmp rel32 at the entry */
#define DYN_STUB_SIZE 24u  /* bytes of a trampoline before the relocated code (stub_write) */
#define DYN_PROBE_STUB 41u /* probe_stub_write's, and where its code begins */
#define DYN_PROBE_ENTRY 8u
#define DYN_REACH 0x7fff0000ll
#elif defined(__aarch64__)
#define DYN_PLAN_ARCH LP_PLAN_AARCH64
#define DYN_JUMP 4u
#define DYN_STUB_SIZE 32u
#define DYN_PROBE_STUB 56u /* its code 8-aligned: a literal's place */
#define DYN_PROBE_ENTRY 16u
#define DYN_REACH 0x7ff0000ll /* b: +-128 MiB */
#endif

/* arch/<arch>/dyntramp.S (lp_dyn_return: runtime.h) */
void lp_dyn_entry(void);
void lp_dyn_probe(void);

/* A trampoline's stub, before its relocated code, and where the patched
 * instruction's jump lands in it. */
static LP_NOINSTR uint32_t stub_size(const struct lp_plan_func *f)
{
	return f->kind == LP_PLAN_PROBE ? DYN_PROBE_STUB : DYN_STUB_SIZE;
}

static LP_NOINSTR uint32_t stub_entry(const struct lp_plan_func *f)
{
	return f->kind == LP_PLAN_PROBE ? DYN_PROBE_ENTRY : 0;
}

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

	if (t->dyn_done)
		return false;
	p = mmap(NULL, DYN_FRAMES * sizeof(struct lp_dynframe), PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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
#if defined(__x86_64__)
static const int8_t arg_slot[LP_ARGS_MAX] = { -2, -3, -4, -5, -6, -7 }; /* rdi rsi rdx rcx r8 r9 */
#define DYN_RET_SLOT (-1)                                               /* rax, below the return slot */
#else
static const int8_t arg_slot[LP_ARGS_MAX] = { -26, -25, -24, -23, -22, -21 }; /* x0-x5 */
#define DYN_RET_SLOT (-18) /* x0 */
#endif

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
__attribute__((visibility("hidden"))) LP_NOINSTR uintptr_t lp_dyn_enter(const struct lp_dynrec *r, uintptr_t *ret,
                                                                        uintptr_t sp)
{
	struct lp_thread *t = &lp_self;
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

/* The common return path's C half: sp is the stack pointer the function
 * had at its entry (it is so again once it returned).  Frames of deeper
 * stack pointers were left by a longjmp (the runtime's longjmp wrapper
 * recorded it) and go.  Returns the real return address. */
__attribute__((visibility("hidden"))) LP_NOINSTR uintptr_t lp_dyn_exit(uintptr_t sp)
{
	struct lp_thread *t = &lp_self;

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
#elif defined(__aarch64__)
/* On aarch64 the return address comes in the link register, and the
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
		for (uintptr_t a = (hi - 8) & ~(uintptr_t)7; a >= lo && a < hi; a -= 8) {
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

/* ---------------------------------------------------------------- apply */

static LP_NOINSTR bool within(intptr_t d)
{
	return d >= -DYN_REACH && d <= DYN_REACH;
}

/* Room for the trampolines within a rel32 jump of every entry in
 * [lo, hi): tried at 1 MiB steps beyond hi, then below lo. */
static LP_NOINSTR void *near_map(uintptr_t lo, uintptr_t hi, size_t size)
{
	const uintptr_t step = 1u << 20;

	for (int dir = 0; dir < 2; dir++) {
		for (uintptr_t k = 1; k < 1024; k++) {
			uintptr_t at = dir == 0 ? ((hi + step - 1) & ~(step - 1)) + k * step
			                        : ((lo & ~(step - 1)) - k * step - ((size + step - 1) & ~(step - 1)));
			void *p;

			if (dir == 1 && at > lo)
				break;
			if (!within((intptr_t)(at + size) - (intptr_t)lo) || !within((intptr_t)hi - (intptr_t)at))
				break;
			p = mmap((void *)at, size, PROT_READ | PROT_WRITE,
			         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			/* a kernel without MAP_FIXED_NOREPLACE takes it as a hint */
			if ((uintptr_t)p != at) {
				munmap(p, size);
				continue;
			}
			return p;
		}
	}
	return NULL;
}

static LP_NOINSTR void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

#if defined(__x86_64__)
/* movabs $rec, %r11; jmp *0(%rip); .quad lp_dyn_entry */
static LP_NOINSTR void stub_write(uint8_t *p, const struct lp_dynrec *rec)
{
	uint64_t r = (uint64_t)(uintptr_t)rec, e = (uint64_t)(uintptr_t)lp_dyn_entry;

	p[0] = 0x49;
	p[1] = 0xbb;
	memcpy(p + 2, &r, 8);
	p[10] = 0xff;
	p[11] = 0x25;
	put32(p + 12, 0);
	memcpy(p + 16, &e, 8);
}

/* A probe's trampoline (.quad lp_dyn_probe, then at DYN_PROBE_ENTRY): the
 * red zone stepped over, %r11 kept, lp_dyn_probe called with the record
 * in %r11, both given back; the relocated instructions follow. */
static LP_NOINSTR void probe_stub_write(uint8_t *p, const struct lp_dynrec *rec)
{
	static const uint8_t head[] = { 0x48, 0x8d, 0x64, 0x24, 0x80, 0x41, 0x53, 0x49, 0xbb };
	static const uint8_t tail[] = { 0xff, 0x15, 0xe1, 0xff, 0xff, 0xff, /* call *-31(%rip) */
		                        0x41, 0x5b, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00 };
	uint64_t r = (uint64_t)(uintptr_t)rec, e = (uint64_t)(uintptr_t)lp_dyn_probe;

	memcpy(p, &e, 8);
	memcpy(p + 8, head, sizeof(head));
	memcpy(p + 8 + sizeof(head), &r, 8);
	memcpy(p + 8 + sizeof(head) + 8, tail, sizeof(tail));
}

/* jmp rel32 to the trampoline t; the rest of the replaced bytes is never
 * reached (no branch lands there: the plan checked) */
static LP_NOINSTR void entry_write(uintptr_t a, const uint8_t *t, uint32_t len)
{
	uint8_t jump[LP_PLAN_ORIG_MAX];

	memset(jump, 0xcc, sizeof(jump));
	jump[0] = 0xe9;
	put32(jump + 1, (int32_t)((intptr_t)t - (intptr_t)(a + 5)));
	memcpy((void *)a, jump, len);
}
#elif defined(__aarch64__)
/* ldr x16, 16; ldr x17, 24; br x17; nop; .quad rec; .quad lp_dyn_entry
 * (x16 and x17 are free at a function's entry: veneers may use them) */
static LP_NOINSTR void stub_write(uint8_t *p, const struct lp_dynrec *rec)
{
	static const uint32_t insn[4] = { 0x58000090u, 0x580000b1u, 0xd61f0220u, 0xd503201fu };
	uint64_t r = (uint64_t)(uintptr_t)rec, e = (uint64_t)(uintptr_t)lp_dyn_entry;

	memcpy(p, insn, sizeof(insn));
	memcpy(p + 16, &r, 8);
	memcpy(p + 24, &e, 8);
}

/* A probe's trampoline (.quad rec, .quad lp_dyn_probe, then at
 * DYN_PROBE_ENTRY): x16, x17 and x30 kept on the stack, lp_dyn_probe
 * called with the record in x16, all three given back; the relocated
 * instruction follows.  (No red zone on aarch64: sp is the bound.) */
static LP_NOINSTR void probe_stub_write(uint8_t *p, const struct lp_dynrec *rec)
{
	static const uint32_t insn[10] = { 0xd10083ffu, 0xa90047f0u, 0xf9000bfeu, 0x58ffff30u, 0x58ffff51u,
		                           0xd63f0220u, 0xf9400bfeu, 0xa94047f0u, 0x910083ffu, 0xd503201fu };
	uint64_t r = (uint64_t)(uintptr_t)rec, e = (uint64_t)(uintptr_t)lp_dyn_probe;

	memcpy(p, &r, 8);
	memcpy(p + 8, &e, 8);
	memcpy(p + 16, insn, sizeof(insn));
}

/* b to the trampoline t: one aligned word */
static LP_NOINSTR void entry_write(uintptr_t a, const uint8_t *t, uint32_t len)
{
	uint32_t b = 0x14000000u | ((uint32_t)(((intptr_t)t - (intptr_t)a) >> 2) & 0x3ffffffu);

	(void)len;
	__atomic_store_n((uint32_t *)a, b, __ATOMIC_RELAXED);
}
#endif

/* Fills in relocation r of the code c; false when out of reach. */
static LP_NOINSTR bool reloc_apply(uint8_t *c, uint32_t len, const struct lp_plan_reloc *r, uintptr_t bias)
{
	uint64_t v = r->target + bias;
	intptr_t d;
	uint32_t insn;

	switch (r->kind) {
	case LP_PLAN_REL32:
		d = (intptr_t)v - (intptr_t)(c + r->end);
		if (r->at + 4 > len || r->end > len || d < INT32_MIN || d > INT32_MAX)
			return false;
		put32(c + r->at, (int32_t)d);
		return true;
	case LP_PLAN_ABS64:
		if (r->at + 8 > len)
			return false;
		memcpy(c + r->at, &v, 8);
		return true;
	case LP_PLAN_B26:
		d = (intptr_t)v - (intptr_t)(c + r->at);
		if (r->at + 4 > len || (d & 3) || d < -(1ll << 27) || d >= (1ll << 27))
			return false;
		memcpy(&insn, c + r->at, 4);
		insn = (insn & 0xfc000000u) | ((uint32_t)(d >> 2) & 0x3ffffffu);
		memcpy(c + r->at, &insn, 4);
		return true;
	default:
		return false;
	}
}

/* The pages of [a, a + n) writable (true) or back to read and execute. */
static LP_NOINSTR bool text_writable(uintptr_t a, size_t n, bool on)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = a & ~(page - 1), hi = (a + n + page - 1) & ~(page - 1);

	return !mprotect((void *)lo, hi - lo, on ? PROT_READ | PROT_WRITE : PROT_READ | PROT_EXEC);
}

/* The trapped entries of a plan's functions made ready (recs filled in):
 * known to the trap handler before their int3s are written.  False
 * without memory for them. */
static LP_NOINSTR bool traps_add(const struct lp_plan_func *fn, uint32_t n, const struct lp_dynrec *recs,
                                 uintptr_t bias)
{
#if defined(__x86_64__)
	uintptr_t *addr;
	const struct lp_dynrec **rec;
	size_t k = 0;
	int r;

	for (uint32_t i = 0; i < n; i++)
		k += fn[i].status == LP_PLAN_PATCHED && fn[i].trap;
	if (!k)
		return true;
	addr = malloc(k * sizeof(*addr));
	rec = malloc(k * sizeof(*rec));
	k = 0;
	for (uint32_t i = 0; addr && rec && i < n; i++)
		if (fn[i].status == LP_PLAN_PATCHED && fn[i].trap) {
			addr[k] = (uintptr_t)fn[i].addr + bias;
			rec[k++] = &recs[i];
		}
	r = addr && rec ? lp_dyntrap_add(addr, rec, k) : -ENOMEM;
	free(addr);
	free(rec);
	return r == 0;
#else
	(void)fn;
	(void)n;
	(void)recs;
	(void)bias;
	return true;
#endif
}

/* Applies the plan mapped at map to the object loaded with that bias. */
static LP_NOINSTR void apply(uint8_t *map, uintptr_t bias)
{
	struct lp_plan_header *h = (struct lp_plan_header *)map;
	struct lp_plan_func *fn = (struct lp_plan_func *)(map + sizeof(*h));
	const struct lp_plan_reloc *rel = (const struct lp_plan_reloc *)(fn + h->nfuncs);
	const uint8_t *code = (const uint8_t *)(rel + h->nrelocs);
	struct lp_dynrec *recs;
	uint8_t *tramp;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	size_t tsize, off;

	tsize = 0;
	for (uint32_t i = 0; i < h->nfuncs; i++) {
		uintptr_t a = (uintptr_t)fn[i].addr + bias;

		if ((fn[i].trap ? fn[i].patch_len != 1 || !fn[i].orig_len || fn[i].orig_len > LP_PLAN_ORIG_MAX ||
		                      DYN_PLAN_ARCH != LP_PLAN_X86_64
		                : fn[i].patch_len < DYN_JUMP || fn[i].patch_len > LP_PLAN_ORIG_MAX) ||
		    (uint64_t)fn[i].code_off + fn[i].code_len > h->code_bytes ||
		    (uint64_t)fn[i].reloc_first + fn[i].nrelocs > h->nrelocs)
			return; /* not a plan the recorder wrote */
		lo = a < lo ? a : lo;
		hi = a + fn[i].patch_len > hi ? a + fn[i].patch_len : hi;
		tsize += ((stub_size(&fn[i]) + 7u) & ~7u) + ((fn[i].code_len + 7u) & ~7u);
	}
	tramp = near_map(lo, hi, tsize);
	recs =
	    mmap(NULL, (size_t)h->nfuncs * sizeof(*recs), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!tramp || recs == MAP_FAILED) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			fn[i].status = LP_PLAN_FAR;
		if (tramp)
			munmap(tramp, tsize);
		return;
	}
	/* the trampolines first, all of them; then the entries */
	off = 0;
	for (uint32_t i = 0; i < h->nfuncs; i++) {
		uintptr_t a = (uintptr_t)fn[i].addr + bias;
		uint8_t *t = tramp + off, *c = t + stub_size(&fn[i]);
		bool ok = true;

		off += ((stub_size(&fn[i]) + 7u) & ~7u) + ((fn[i].code_len + 7u) & ~7u);
		if (memcmp((const void *)a, fn[i].orig, fn[i].trap ? fn[i].orig_len : fn[i].patch_len)) {
			fn[i].status = LP_PLAN_CHANGED;
			continue;
		}
		memcpy(c, code + fn[i].code_off, fn[i].code_len);
		for (uint32_t k = 0; ok && k < fn[i].nrelocs; k++)
			ok = reloc_apply(c, fn[i].code_len, &rel[fn[i].reloc_first + k], bias);
		if (!ok || !within((intptr_t)t - (intptr_t)a)) {
			fn[i].status = LP_PLAN_FAR;
			continue;
		}
		recs[i].fn = fn[i].kind == LP_PLAN_PROBE ? a : LP_ARCH_FUNC(a);
		recs[i].cont = (uintptr_t)c;
		recs[i].args = fn[i].trap ? 0 : fn[i].args; /* a trap's registers are not on the stack */
		recs[i].kind = fn[i].kind;
		if (fn[i].kind == LP_PLAN_PROBE)
			probe_stub_write(t, &recs[i]);
		else
			stub_write(t, &recs[i]);
		fn[i].status = LP_PLAN_PATCHED; /* for now: the entry's turn below */
	}
	if (mprotect(tramp, tsize, PROT_READ | PROT_EXEC)) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			if (fn[i].status == LP_PLAN_PATCHED)
				fn[i].status = LP_PLAN_UNWRITABLE;
		return;
	}
	mprotect(recs, (size_t)h->nfuncs * sizeof(*recs), PROT_READ);
	/* the program's code is written while nothing runs it (no other
	 * thread exists yet, and this runs in the runtime's own code): it need
	 * not stay executable meanwhile */
	if (!traps_add(fn, h->nfuncs, recs, bias)) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			if (fn[i].status == LP_PLAN_PATCHED && fn[i].trap)
				fn[i].status = LP_PLAN_UNWRITABLE;
	}
	if (!text_writable(lo, hi - lo, true)) {
		for (uint32_t i = 0; i < h->nfuncs; i++)
			if (fn[i].status == LP_PLAN_PATCHED)
				fn[i].status = LP_PLAN_UNWRITABLE;
		return;
	}
	__builtin___clear_cache((char *)tramp, (char *)tramp + tsize);
	off = 0;
	for (uint32_t i = 0; i < h->nfuncs; i++) {
		uintptr_t a = (uintptr_t)fn[i].addr + bias;
		uint8_t *t = tramp + off;

		off += ((stub_size(&fn[i]) + 7u) & ~7u) + ((fn[i].code_len + 7u) & ~7u);
		if (fn[i].status == LP_PLAN_PATCHED && fn[i].trap)
			*(volatile uint8_t *)a = 0xcc;
		else if (fn[i].status == LP_PLAN_PATCHED)
			entry_write(a, t + stub_entry(&fn[i]), fn[i].patch_len);
	}
	text_writable(lo, hi - lo, false);
	__builtin___clear_cache((char *)lo, (char *)hi);
}

/* The session's plans (plan.0, plan.1, ...: the program's, then each
 * library's), mapped at the first call, and the objects they were applied
 * to. */
static struct dynplan {
	uint8_t *map;
	size_t size;
} plans[LP_PLAN_FILES_MAX];
static unsigned nplans;

static struct dynapplied {
	unsigned plan;
	uintptr_t bias;
	bool seen;
} applied[LP_PLAN_APPLIED_MAX];
static unsigned napplied;

static LP_NOINSTR bool plan_valid(const uint8_t *map, size_t size)
{
	const struct lp_plan_header *h = (const struct lp_plan_header *)map;
	size_t need;

	if (size < sizeof(*h) || h->magic != LP_PLAN_MAGIC || h->version != LP_PLAN_VERSION ||
	    h->arch != DYN_PLAN_ARCH || !h->nfuncs)
		return false;
	need = sizeof(*h) + (size_t)h->nfuncs * sizeof(struct lp_plan_func) +
	       (size_t)h->nrelocs * sizeof(struct lp_plan_reloc) + h->code_bytes;
	return need <= size;
}

static LP_NOINSTR void plans_load(void)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->plans, memory_order_acquire);

	for (unsigned k = nplans; k < n && k < LP_PLAN_FILES_MAX; k++) {
		char path[4096];
		struct stat st;
		void *map;
		int fd;

		if ((size_t)snprintf(path, sizeof(path), "%s/" LP_PLAN_NAME ".%u", lp_proc.session_dir, k) >=
		    sizeof(path))
			return;
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			close(fd);
			return;
		}
		map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			return;
		if (!plan_valid(map, (size_t)st.st_size)) {
			munmap(map, (size_t)st.st_size);
			return;
		}
		plans[nplans].map = map;
		plans[nplans++].size = (size_t)st.st_size;
	}
}

/* A loaded object a plan is for, not yet patched. */
struct dynmatch {
	unsigned objects;  /* seen so far: the first is the program */
	bool main_planned; /* a plan is the program's */
	unsigned n;
	struct {
		unsigned plan;
		uintptr_t bias;
	} m[LP_PLAN_APPLIED_MAX];
};

static LP_NOINSTR int object_match(struct dl_phdr_info *info, size_t size, void *data)
{
	struct dynmatch *dm = data;
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL;
	struct stat st;

	(void)size;
	/* the program itself, first, has no name here: /proc names it, or
	 * (without /proc) the path it was started by */
	if (!name && dm->objects++ == 0) {
		name = "/proc/self/exe";
		if (stat(name, &st))
			name = (const char *)getauxval(AT_EXECFN);
	} else if (name)
		dm->objects++;
	if (!name || stat(name, &st))
		return 0;
	for (unsigned k = 0; k < nplans; k++) {
		const struct lp_plan_header *h = (const struct lp_plan_header *)plans[k].map;
		bool done = false;

		if ((uint64_t)st.st_dev != h->dev || (uint64_t)st.st_ino != h->ino)
			continue;
		if (dm->objects == 1)
			dm->main_planned = true;
		for (unsigned i = 0; i < napplied; i++)
			if (applied[i].plan == k && applied[i].bias == info->dlpi_addr) {
				applied[i].seen = true;
				done = true;
			}
		if (!done && dm->n < LP_PLAN_APPLIED_MAX) {
			dm->m[dm->n].plan = k;
			dm->m[dm->n++].bias = info->dlpi_addr;
		}
	}
	return 0;
}

/* Applies the plans to what is loaded; true when one is the program's. */
static LP_NOINSTR bool scan(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct dynmatch dm = { .n = 0 };
	unsigned kept = 0;
	int saved = errno; /* after dlopen and dlclose: theirs, not ours */

	if (!nplans)
		return false;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < napplied; i++)
		applied[i].seen = false;
	dl_iterate_phdr(object_match, &dm);
	/* objects unloaded since (dlclose): loaded again, they are new */
	for (unsigned i = 0; i < napplied; i++)
		if (applied[i].seen)
			applied[kept++] = applied[i];
	napplied = kept;
	for (unsigned i = 0; i < dm.n && napplied < LP_PLAN_APPLIED_MAX; i++) {
		apply(plans[dm.m[i].plan].map, dm.m[i].bias);
		applied[napplied].plan = dm.m[i].plan;
		applied[napplied].bias = dm.m[i].bias;
		applied[napplied++].seen = true;
	}
	pthread_mutex_unlock(&lock);
	errno = saved;
	return dm.main_planned;
}

LP_NOINSTR void lp_dynpatch_scan(void)
{
	scan();
}

/* This process's executable has no plan (the program exec'd it): the
 * drain is asked for one (LP_PLAN_WANT_NAME in struct lp_control), and
 * waited for, at most LP_PLAN_WAIT_MS, less when the drain is gone. */
static LP_NOINSTR bool plan_request(void)
{
	_Atomic uint32_t *answers = (_Atomic uint32_t *)&lp_proc.control->plan_answers;
	char exe[4096], path[4096], line[4200];
	struct timespec pause = { 0, 1000000 };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;
	uint32_t ticket;
	int fd, len;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	if (exe[0] != '/' || stat(exe, &st) ||
	    (size_t)snprintf(path, sizeof(path), "%s/" LP_PLAN_WANT_NAME ".%d", lp_proc.session_dir, (int)getpid()) >=
	        sizeof(path))
		return false;
	len = snprintf(line, sizeof(line), "%llu %llu %s\n", (unsigned long long)st.st_dev,
	               (unsigned long long)st.st_ino, exe);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	n = write(fd, line, (size_t)len);
	close(fd);
	if (n != len)
		return false;
	ticket =
	    atomic_fetch_add_explicit((_Atomic uint32_t *)&lp_proc.control->plan_wants, 1, memory_order_acq_rel) + 1;
	for (unsigned waited = 0; waited < LP_PLAN_WAIT_MS; waited++) {
		if ((int32_t)(atomic_load_explicit(answers, memory_order_acquire) - ticket) >= 0)
			return true;
		if (waited % 50 == 49 && lp_proc.control->drain_pid && kill((pid_t)lp_proc.control->drain_pid, 0) &&
		    errno == ESRCH)
			return false;
		nanosleep(&pause, NULL);
	}
	return false;
}

LP_NOINSTR void lp_dynpatch_apply(void)
{
	static bool done;
	int saved = errno;

	if (done || !lp_proc.session_dir || !lp_proc.control || !lp_proc.control->plans)
		return;
	done = true;
	plans_load();
	if (nplans)
		lp_dyntrap_arm();
	if (!scan() && plan_request()) {
		lp_dyntrap_arm();
		plans_load();
		scan();
	}
	errno = saved;
}

#else

LP_NOINSTR void lp_dynpatch_apply(void)
{
}

LP_NOINSTR void lp_dynpatch_scan(void)
{
}

LP_NOINSTR void lp_dynpatch_thread_end(struct lp_thread *t)
{
	(void)t;
}

#endif
