/* The heap interposers of the memory tracer.  Built twice from this file:
 *
 *  - liblayerprof-mem.so, preloaded by `record --memory`: defines malloc,
 *    free, ..., and the C++ operators new and delete (their mangled names);
 *    the real functions come from dlsym(RTLD_NEXT), and until they do, from
 *    a static bootstrap arena;
 *  - liblayerprof-memwrap.a (LP_MEMHOOK_WRAP), linked into a program with
 *    ld --wrap: defines __wrap_malloc, ... and calls __real_malloc, ...
 *
 * Each hook records through lp_mem_record (runtime/mem.c): a release before
 * it is passed on (so a release that makes libc abort is in the trace), an
 * allocation after it returned.  lp_memhook (memtrace.h) keeps operations
 * made inside a hook (by the real functions, by the runtime, by a signal
 * handler) and operator new's own malloc out of the trace.  With LAYERPROF_MEM_KEEPALIVE=1 the hooks keep the set of
 * live blocks (memlive.h) and never pass an illegal release on.
 *
 * C++ operators: the hooks call the next definition of the same operator
 * (libstdc++'s, or a custom allocator's), so its semantics are kept: the
 * throwing forms run the new-handler loop and throw std::bad_alloc.  This
 * file is built with -fexceptions, and a cleanup records the failure while
 * the exception passes.  The malloc that operator new makes is recognised
 * by its size while the operator runs, and not recorded; other allocations
 * inside it (the exception object) are.  Without any C++ runtime
 * in the process the operators cannot be called by anyone; if they are
 * anyway (a C++ runtime loaded later is looked for on each call until
 * found), they fall back to malloc and free, and the throwing forms then
 * return NULL on failure, as there is nothing to throw with. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "runtime/memlive.h"

#ifdef LP_MEMHOOK_WRAP
#define HOOK(name) __wrap_##name
#else
#define HOOK(name) name
#endif
#define HOOK_EXPORT __attribute__((visibility("default"), noinline)) LP_NOINSTR
#define SITE __builtin_return_address(0), __builtin_frame_address(0)
#define ALWAYS_INLINE inline __attribute__((always_inline)) LP_NOINSTR

/* C++ mangles size_t as unsigned long (m) or unsigned int (j). */
#if __SIZEOF_SIZE_T__ == 8
#define CXX_NAME_(a, b) a##m##b
#else
#define CXX_NAME_(a, b) a##j##b
#endif
#define CXX_NAME(a, b) CXX_NAME_(a, b)
#define STR_(x) #x
#define STR(x) STR_(x)

struct real_fns {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
};

/* The C++ operators, in the order of cxx_names. */
enum cxx_op {
	CXX_NEW,
	CXX_NEW_ARRAY,
	CXX_NEW_NOTHROW,
	CXX_NEW_ARRAY_NOTHROW,
	CXX_NEW_ALIGNED,
	CXX_NEW_ARRAY_ALIGNED,
	CXX_NEW_ALIGNED_NOTHROW,
	CXX_NEW_ARRAY_ALIGNED_NOTHROW,
	CXX_DELETE,
	CXX_DELETE_ARRAY,
	CXX_DELETE_SIZED,
	CXX_DELETE_ARRAY_SIZED,
	CXX_DELETE_NOTHROW,
	CXX_DELETE_ARRAY_NOTHROW,
	CXX_DELETE_ALIGNED,
	CXX_DELETE_ARRAY_ALIGNED,
	CXX_DELETE_SIZED_ALIGNED,
	CXX_DELETE_ARRAY_SIZED_ALIGNED,
	CXX_DELETE_ALIGNED_NOTHROW,
	CXX_DELETE_ARRAY_ALIGNED_NOTHROW,
	CXX_OPS
};

/* How each operator takes its arguments. */
enum cxx_shape {
	SHAPE_SIZE,        /* (size) */
	SHAPE_SIZE_NT,     /* (size, nothrow) */
	SHAPE_SIZE_AL,     /* (size, align) */
	SHAPE_SIZE_AL_NT,  /* (size, align, nothrow) */
	SHAPE_PTR,         /* (ptr) */
	SHAPE_PTR_SIZE,    /* (ptr, size) */
	SHAPE_PTR_NT,      /* (ptr, nothrow) */
	SHAPE_PTR_AL,      /* (ptr, align) */
	SHAPE_PTR_SIZE_AL, /* (ptr, size, align) */
	SHAPE_PTR_AL_NT,   /* (ptr, align, nothrow) */
};

#define NOTHROW RKSt9nothrow_t
#define ALIGN St11align_val_t

static const unsigned char cxx_shapes[CXX_OPS] = {
	SHAPE_SIZE,     SHAPE_SIZE,        SHAPE_SIZE_NT,     SHAPE_SIZE_NT,   SHAPE_SIZE_AL,
	SHAPE_SIZE_AL,  SHAPE_SIZE_AL_NT,  SHAPE_SIZE_AL_NT,  SHAPE_PTR,       SHAPE_PTR,
	SHAPE_PTR_SIZE, SHAPE_PTR_SIZE,    SHAPE_PTR_NT,      SHAPE_PTR_NT,    SHAPE_PTR_AL,
	SHAPE_PTR_AL,   SHAPE_PTR_SIZE_AL, SHAPE_PTR_SIZE_AL, SHAPE_PTR_AL_NT, SHAPE_PTR_AL_NT,
};

static bool keepalive; /* LAYERPROF_MEM_KEEPALIVE=1 and the set exists */

#ifdef LP_MEMHOOK_WRAP
/* ld --wrap turns these into references to the real functions.  Weak, so
 * that a program without reallocarray or a C++ runtime still links. */
#define REAL_DECL(ret, name, params) extern ret __real_##name params __attribute__((weak))
REAL_DECL(void *, malloc, (size_t));
REAL_DECL(void, free, (void *));
REAL_DECL(void *, calloc, (size_t, size_t));
REAL_DECL(void *, realloc, (void *, size_t));
REAL_DECL(int, posix_memalign, (void **, size_t, size_t));
REAL_DECL(void *, aligned_alloc, (size_t, size_t));
REAL_DECL(void *, memalign, (size_t, size_t));
REAL_DECL(void *, valloc, (size_t));
REAL_DECL(void *, pvalloc, (size_t));
#define REAL_CXX(a, b) extern void CXX_NAME(__real_##a, b)(void) __attribute__((weak))
#define REAL_CXX0(name) extern void __real_##name(void) __attribute__((weak))
REAL_CXX(_Znw, );
REAL_CXX(_Zna, );
REAL_CXX(_Znw, NOTHROW);
REAL_CXX(_Zna, NOTHROW);
REAL_CXX(_Znw, ALIGN);
REAL_CXX(_Zna, ALIGN);
REAL_CXX(_Znw, St11align_val_tRKSt9nothrow_t);
REAL_CXX(_Zna, St11align_val_tRKSt9nothrow_t);
REAL_CXX0(_ZdlPv);
REAL_CXX0(_ZdaPv);
REAL_CXX(_ZdlPv, );
REAL_CXX(_ZdaPv, );
REAL_CXX0(_ZdlPvRKSt9nothrow_t);
REAL_CXX0(_ZdaPvRKSt9nothrow_t);
REAL_CXX0(_ZdlPvSt11align_val_t);
REAL_CXX0(_ZdaPvSt11align_val_t);
REAL_CXX(_ZdlPv, ALIGN);
REAL_CXX(_ZdaPv, ALIGN);
REAL_CXX0(_ZdlPvSt11align_val_tRKSt9nothrow_t);
REAL_CXX0(_ZdaPvSt11align_val_tRKSt9nothrow_t);

static const struct real_fns real = { __real_malloc,   __real_free,           __real_calloc,
	                              __real_realloc,  __real_posix_memalign, __real_aligned_alloc,
	                              __real_memalign, __real_valloc,         __real_pvalloc };
static void (*const cxx_real[CXX_OPS])(void) = {
	CXX_NAME(__real__Znw, ),
	CXX_NAME(__real__Zna, ),
	CXX_NAME(__real__Znw, NOTHROW),
	CXX_NAME(__real__Zna, NOTHROW),
	CXX_NAME(__real__Znw, ALIGN),
	CXX_NAME(__real__Zna, ALIGN),
	CXX_NAME(__real__Znw, St11align_val_tRKSt9nothrow_t),
	CXX_NAME(__real__Zna, St11align_val_tRKSt9nothrow_t),
	__real__ZdlPv,
	__real__ZdaPv,
	CXX_NAME(__real__ZdlPv, ),
	CXX_NAME(__real__ZdaPv, ),
	__real__ZdlPvRKSt9nothrow_t,
	__real__ZdaPvRKSt9nothrow_t,
	__real__ZdlPvSt11align_val_t,
	__real__ZdaPvSt11align_val_t,
	CXX_NAME(__real__ZdlPv, ALIGN),
	CXX_NAME(__real__ZdaPv, ALIGN),
	__real__ZdlPvSt11align_val_tRKSt9nothrow_t,
	__real__ZdaPvSt11align_val_tRKSt9nothrow_t,
};
static _Atomic int hooks_state; /* 0: keep-alive not looked at yet, 2: set up */

static LP_NOINSTR __attribute__((noinline, cold)) void hooks_setup(void)
{
	int expect = 0;
	const char *ka;

	if (!atomic_compare_exchange_strong(&hooks_state, &expect, 1))
		return;
	ka = getenv(LP_MEM_ENV_KEEPALIVE);
	keepalive = ka && !strcmp(ka, "1") && !memlive_init();
	atomic_store_explicit(&hooks_state, 2, memory_order_release);
}

static ALWAYS_INLINE bool hooks_ready(void)
{
	if (likely(atomic_load_explicit(&hooks_state, memory_order_acquire) == 2))
		return true;
	hooks_setup();
	return true;
}

static ALWAYS_INLINE void (*cxx_fn(enum cxx_op op))(void)
{
	return cxx_real[op];
}

static ALWAYS_INLINE bool in_arena(const void *p)
{
	(void)p;
	return false;
}

static ALWAYS_INLINE void *boot_alloc(size_t size, size_t align, const void *old)
{
	(void)size;
	(void)align;
	(void)old;
	errno = ENOMEM;
	return NULL;
}

#else /* the preloaded library */

static struct real_fns real;
static _Atomic int hooks_state; /* 0: unresolved, 1: resolving, 2: resolved */

static const char *const cxx_names[CXX_OPS] = {
	STR(CXX_NAME(_Znw, )),
	STR(CXX_NAME(_Zna, )),
	STR(CXX_NAME(_Znw, NOTHROW)),
	STR(CXX_NAME(_Zna, NOTHROW)),
	STR(CXX_NAME(_Znw, ALIGN)),
	STR(CXX_NAME(_Zna, ALIGN)),
	STR(CXX_NAME(_Znw, St11align_val_tRKSt9nothrow_t)),
	STR(CXX_NAME(_Zna, St11align_val_tRKSt9nothrow_t)),
	"_ZdlPv",
	"_ZdaPv",
	STR(CXX_NAME(_ZdlPv, )),
	STR(CXX_NAME(_ZdaPv, )),
	"_ZdlPvRKSt9nothrow_t",
	"_ZdaPvRKSt9nothrow_t",
	"_ZdlPvSt11align_val_t",
	"_ZdaPvSt11align_val_t",
	STR(CXX_NAME(_ZdlPv, ALIGN)),
	STR(CXX_NAME(_ZdaPv, ALIGN)),
	"_ZdlPvSt11align_val_tRKSt9nothrow_t",
	"_ZdaPvSt11align_val_tRKSt9nothrow_t",
};
static void (*_Atomic cxx_real[CXX_OPS])(void);

/* Allocations made while the real functions are being looked up (dlsym
 * allocates) come from here; they are never freed. */
#define BOOT_ARENA_SIZE (128u << 10)
#define BOOT_ALIGN 16u
static unsigned char boot_arena[BOOT_ARENA_SIZE] __attribute__((aligned(4096)));
static _Atomic size_t boot_used;

static ALWAYS_INLINE bool in_arena(const void *p)
{
	return (const unsigned char *)p >= boot_arena && (const unsigned char *)p < boot_arena + BOOT_ARENA_SIZE;
}

/* A block of the arena (zeroed: the arena is never reused), its size in the
 * word before it; with old, a copy of that arena block.  NULL (ENOMEM) when
 * the arena is used up. */
static LP_NOINSTR __attribute__((noinline, cold)) void *boot_alloc(size_t size, size_t align, const void *old)
{
	size_t used, start, end;

	if (align < BOOT_ALIGN)
		align = BOOT_ALIGN;
	if (size > BOOT_ARENA_SIZE || align > BOOT_ARENA_SIZE / 4 || (align & (align - 1))) {
		errno = ENOMEM;
		return NULL;
	}
	used = atomic_load_explicit(&boot_used, memory_order_relaxed);
	do {
		start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
		end = start + size;
		if (end > BOOT_ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
	} while (
	    !atomic_compare_exchange_weak_explicit(&boot_used, &used, end, memory_order_relaxed, memory_order_relaxed));
	memcpy(boot_arena + start - sizeof(size_t), &size, sizeof(size));
	if (old && in_arena(old)) {
		size_t old_size;

		memcpy(&old_size, (const unsigned char *)old - sizeof(size_t), sizeof(old_size));
		memcpy(boot_arena + start, old, old_size < size ? old_size : size);
	}
	return boot_arena + start;
}

#define RESOLVE(name) r.name = (__typeof__(r.name))dlsym(RTLD_NEXT, #name)

/* Looks the real functions up once; threads that arrive meanwhile (and
 * dlsym's own allocations) use the arena. */
static LP_NOINSTR __attribute__((noinline, cold)) bool hooks_resolve(void)
{
	struct real_fns r;
	const char *ka;
	int expect = 0;

	if (!atomic_compare_exchange_strong(&hooks_state, &expect, 1))
		return false;
	RESOLVE(malloc);
	RESOLVE(free);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	if (!r.malloc || !r.free || !r.calloc || !r.realloc || !r.posix_memalign || !r.aligned_alloc || !r.memalign ||
	    !r.valloc || !r.pvalloc) {
		/* no allocator to pass on to: the arena is all there is */
		return false;
	}
	real = r;
	ka = getenv(LP_MEM_ENV_KEEPALIVE);
	keepalive = ka && !strcmp(ka, "1") && !memlive_init();
	atomic_store_explicit(&hooks_state, 2, memory_order_release);
	return true;
}

static ALWAYS_INLINE bool hooks_ready(void)
{
	if (likely(atomic_load_explicit(&hooks_state, memory_order_acquire) == 2))
		return true;
	return hooks_resolve();
}

/* The next definition of a C++ operator; looked up on first use (and
 * again until found: a C++ runtime may be loaded later). */
static LP_NOINSTR void (*cxx_fn(enum cxx_op op))(void)
{
	void (*fn)(void) = atomic_load_explicit(&cxx_real[op], memory_order_relaxed);

	if (likely(fn))
		return fn;
	fn = (void (*)(void))dlsym(RTLD_NEXT, cxx_names[op]);
	if (fn)
		atomic_store_explicit(&cxx_real[op], fn, memory_order_relaxed);
	return fn;
}

/* The loader and libc allocate before any constructor runs; resolving
 * here at the latest keeps the hooks out of the arena from main on. */
__attribute__((constructor)) static LP_NOINSTR void hooks_constructor(void)
{
	hooks_ready();
}
#endif

static ALWAYS_INLINE void record(enum lp_mem_op op, unsigned flags, const void *p, size_t size, const void *old,
                                 const void *ret, const void *frame)
{
	lp_mem_record(LP_MEM_OPF(op, flags), (uintptr_t)p, size, (uintptr_t)old, ret, frame);
}

/* The end of every allocation hook. */
static ALWAYS_INLINE void *alloc_done(enum lp_mem_op op, void *p, size_t size, const void *ret, const void *frame)
{
	if (p && keepalive)
		memlive_insert((uintptr_t)p);
	record(op, p ? 0 : LP_MEM_FAILED, p, size, NULL, ret, frame);
	return p;
}

/* An allocation inside a hook: only the live set hears of it. */
static ALWAYS_INLINE void *alloc_nested(void *p)
{
	if (p && keepalive)
		memlive_insert((uintptr_t)p);
	return p;
}

/* Operator new's own allocation of `size` bytes (see lp_memhook_state):
 * not recorded, the NEW is.  Stays expected until one succeeds (operator
 * new tries again after its new-handler ran). */
static ALWAYS_INLINE bool new_own(size_t size)
{
	return unlikely(lp_memhook.new_hi) && size >= lp_memhook.new_lo && size <= lp_memhook.new_hi;
}

static ALWAYS_INLINE void *new_own_done(void *p)
{
	if (p)
		lp_memhook.new_hi = 0;
	return alloc_nested(p);
}

/* The start of every release hook: true when p may be passed on.  Records
 * the release (before it happens), or with keep-alive an illegal one. */
static ALWAYS_INLINE bool release_begin(enum lp_mem_op op, const void *p, const void *ret, const void *frame)
{
	if (keepalive && !memlive_remove((uintptr_t)p) && memlive_active()) {
		record(op, LP_MEM_KEPT, p, 0, NULL, ret, frame);
		return false;
	}
	record(op, 0, p, 0, NULL, ret, frame);
	return true;
}

static ALWAYS_INLINE size_t mul_sat(size_t a, size_t b, bool *overflow)
{
	size_t r;

	*overflow = __builtin_mul_overflow(a, b, &r);
	return *overflow ? SIZE_MAX : r;
}

HOOK_EXPORT void *HOOK(malloc)(size_t size)
{
	void *p;

	if (unlikely(!hooks_ready()))
		return boot_alloc(size, 0, NULL);
	if (lp_memhook.guard)
		return alloc_nested(real.malloc(size));
	if (new_own(size))
		return new_own_done(real.malloc(size));
	lp_memhook.guard = 1;
	p = alloc_done(LP_MEM_MALLOC, real.malloc(size), size, SITE);
	lp_memhook.guard = 0;
	return p;
}

HOOK_EXPORT void *HOOK(calloc)(size_t n, size_t size)
{
	bool overflow;
	size_t total = mul_sat(n, size, &overflow);
	void *p;

	if (unlikely(!hooks_ready())) {
		if (overflow) {
			errno = ENOMEM;
			return NULL;
		}
		return boot_alloc(total, 0, NULL);
	}
	if (lp_memhook.guard)
		return alloc_nested(real.calloc(n, size));
	lp_memhook.guard = 1;
	p = alloc_done(LP_MEM_CALLOC, real.calloc(n, size), total, SITE);
	lp_memhook.guard = 0;
	return p;
}

HOOK_EXPORT void HOOK(free)(void *p)
{
	if (!p || unlikely(in_arena(p)))
		return;
	if (unlikely(!hooks_ready()))
		return; /* not from the real malloc, which is not known yet */
	if (lp_memhook.guard) {
		if (keepalive)
			memlive_remove((uintptr_t)p);
		lp_mem_forget((uintptr_t)p);
		real.free(p);
		return;
	}
	lp_memhook.guard = 1;
	if (release_begin(LP_MEM_FREE, p, SITE))
		real.free(p);
	lp_memhook.guard = 0;
}

/* realloc and reallocarray.  The old block leaves the live set before the
 * call (another thread may be handed its address as soon as it is freed)
 * and comes back when the call fails. */
static ALWAYS_INLINE void *realloc_hook(void *old, size_t size, bool overflow, const void *ret, const void *frame)
{
	unsigned flags = 0;
	void *p;

	if (unlikely(!hooks_ready())) {
		if (!overflow)
			return boot_alloc(size, 0, old);
		errno = ENOMEM;
		return NULL;
	}
	if (overflow) {
		errno = ENOMEM;
		if (!lp_memhook.guard) {
			lp_memhook.guard = 1;
			record(LP_MEM_REALLOC, LP_MEM_FAILED, NULL, size, old, ret, frame);
			lp_memhook.guard = 0;
		}
		return NULL;
	}
	if (unlikely(in_arena(old))) {
		/* a bootstrap block: copied into a real one, recorded as new */
		size_t old_size;

		memcpy(&old_size, (const unsigned char *)old - sizeof(size_t), sizeof(old_size));
		if (lp_memhook.guard)
			p = alloc_nested(real.malloc(size));
		else {
			lp_memhook.guard = 1;
			p = alloc_done(LP_MEM_MALLOC, real.malloc(size), size, ret, frame);
			lp_memhook.guard = 0;
		}
		if (p)
			memcpy(p, old, old_size < size ? old_size : size);
		return p;
	}
	if (lp_memhook.guard) {
		if (old && keepalive)
			memlive_remove((uintptr_t)old);
		if (old)
			lp_mem_forget((uintptr_t)old);
		p = real.realloc(old, size);
		if (keepalive && (p || (old && size)))
			memlive_insert((uintptr_t)(p ? p : old));
		return p;
	}
	lp_memhook.guard = 1;
	if (old && keepalive && !memlive_remove((uintptr_t)old) && memlive_active()) {
		/* not a live block: left alone, the program gets a new one */
		p = size ? real.malloc(size) : NULL;
		if (p)
			memlive_insert((uintptr_t)p);
		flags = LP_MEM_KEPT | (size && !p ? LP_MEM_FAILED : 0);
	} else {
		p = real.realloc(old, size);
		if (keepalive && (p || (old && size)))
			memlive_insert((uintptr_t)(p ? p : old));
		/* realloc(old, 0) may release old and return NULL */
		if (!p && (size || !old))
			flags = LP_MEM_FAILED;
	}
	record(LP_MEM_REALLOC, flags, p, size, old, ret, frame);
	lp_memhook.guard = 0;
	return p;
}

HOOK_EXPORT void *HOOK(realloc)(void *old, size_t size)
{
	return realloc_hook(old, size, false, SITE);
}

HOOK_EXPORT void *HOOK(reallocarray)(void *old, size_t n, size_t size)
{
	bool overflow;
	size_t total = mul_sat(n, size, &overflow);

	return realloc_hook(old, total, overflow, SITE);
}

/* The aligned family: recorded as ALIGNED. */
enum align_kind { AK_ALIGNED_ALLOC, AK_MEMALIGN, AK_VALLOC, AK_PVALLOC };

static ALWAYS_INLINE void *aligned_call(enum align_kind k, size_t align, size_t size)
{
	switch (k) {
	case AK_ALIGNED_ALLOC:
		return real.aligned_alloc(align, size);
	case AK_MEMALIGN:
		return real.memalign(align, size);
	case AK_VALLOC:
		return real.valloc(size);
	default:
		return real.pvalloc(size);
	}
}

static ALWAYS_INLINE void *aligned_hook(enum align_kind k, size_t align, size_t size, const void *ret,
                                        const void *frame)
{
	void *p;

	if (unlikely(!hooks_ready()))
		return boot_alloc(size, k == AK_VALLOC || k == AK_PVALLOC ? 4096 : align, NULL);
	if (lp_memhook.guard)
		return alloc_nested(aligned_call(k, align, size));
	if (new_own(size) && (k == AK_ALIGNED_ALLOC || k == AK_MEMALIGN))
		return new_own_done(aligned_call(k, align, size));
	lp_memhook.guard = 1;
	p = alloc_done(LP_MEM_ALIGNED, aligned_call(k, align, size), size, ret, frame);
	lp_memhook.guard = 0;
	return p;
}

HOOK_EXPORT void *HOOK(aligned_alloc)(size_t align, size_t size)
{
	return aligned_hook(AK_ALIGNED_ALLOC, align, size, SITE);
}

HOOK_EXPORT void *HOOK(memalign)(size_t align, size_t size)
{
	return aligned_hook(AK_MEMALIGN, align, size, SITE);
}

HOOK_EXPORT void *HOOK(valloc)(size_t size)
{
	return aligned_hook(AK_VALLOC, 0, size, SITE);
}

HOOK_EXPORT void *HOOK(pvalloc)(size_t size)
{
	return aligned_hook(AK_PVALLOC, 0, size, SITE);
}

HOOK_EXPORT int HOOK(posix_memalign)(void **out, size_t align, size_t size)
{
	void *p = NULL;
	int r;

	if (unlikely(!hooks_ready())) {
		if (align < sizeof(void *) || (align & (align - 1)))
			return EINVAL;
		p = boot_alloc(size, align, NULL);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	if (lp_memhook.guard || new_own(size)) {
		bool own = !lp_memhook.guard;

		r = real.posix_memalign(out, align, size);
		if (!r)
			own ? new_own_done(*out) : alloc_nested(*out);
		return r;
	}
	lp_memhook.guard = 1;
	r = real.posix_memalign(&p, align, size);
	if (!r)
		*out = p;
	alloc_done(LP_MEM_ALIGNED, r ? NULL : p, size, SITE);
	lp_memhook.guard = 0;
	return r;
}

/* C++ operators. */

typedef void *(*new_size_fn)(size_t);
typedef void *(*new_size_nt_fn)(size_t, const void *);
typedef void *(*new_size_al_fn)(size_t, size_t);
typedef void *(*new_size_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_ptr_fn)(void *);
typedef void (*del_ptr_size_fn)(void *, size_t);
typedef void (*del_ptr_nt_fn)(void *, const void *);
typedef void (*del_ptr_al_fn)(void *, size_t);
typedef void (*del_ptr_size_al_fn)(void *, size_t, size_t);
typedef void (*del_ptr_al_nt_fn)(void *, size_t, const void *);

/* Calls the next operator new; may throw. */
static ALWAYS_INLINE void *cxx_new_call(enum cxx_op op, size_t size, size_t align, const void *nt)
{
	void (*fn)(void) = cxx_fn(op);

	if (unlikely(!fn)) {
		if (!hooks_ready())
			return boot_alloc(size, align, NULL);
		return align ? real.aligned_alloc(align, (size + align - 1) & ~(align - 1))
		             : real.malloc(size ? size : 1);
	}
	switch (cxx_shapes[op]) {
	case SHAPE_SIZE:
		return ((new_size_fn)fn)(size);
	case SHAPE_SIZE_NT:
		return ((new_size_nt_fn)fn)(size, nt);
	case SHAPE_SIZE_AL:
		return ((new_size_al_fn)fn)(size, align);
	default:
		return ((new_size_al_nt_fn)fn)(size, align, nt);
	}
}

static ALWAYS_INLINE void cxx_delete_call(enum cxx_op op, void *p, size_t size, size_t align, const void *nt)
{
	void (*fn)(void) = cxx_fn(op);

	if (unlikely(!fn)) {
		if (hooks_ready())
			real.free(p);
		return;
	}
	switch (cxx_shapes[op]) {
	case SHAPE_PTR:
		((del_ptr_fn)fn)(p);
		break;
	case SHAPE_PTR_SIZE:
		((del_ptr_size_fn)fn)(p, size);
		break;
	case SHAPE_PTR_NT:
		((del_ptr_nt_fn)fn)(p, nt);
		break;
	case SHAPE_PTR_AL:
		((del_ptr_al_fn)fn)(p, align);
		break;
	case SHAPE_PTR_SIZE_AL:
		((del_ptr_size_al_fn)fn)(p, size, align);
		break;
	default:
		((del_ptr_al_nt_fn)fn)(p, align, nt);
		break;
	}
}

/* While operator new runs: when it throws, the cleanup records the failed
 * allocation as the exception passes. */
struct new_pending {
	bool armed;
	enum lp_mem_op op;
	size_t size;
	const void *ret, *frame;
};

static LP_NOINSTR void new_unwound(struct new_pending *n)
{
	if (!n->armed)
		return;
	lp_memhook.new_hi = 0;
	lp_memhook.guard = 1;
	record(n->op, LP_MEM_FAILED, NULL, n->size, NULL, n->ret, n->frame);
	lp_memhook.guard = 0;
}

static ALWAYS_INLINE void *new_hook(enum cxx_op op, size_t size, size_t align, const void *nt, const void *ret,
                                    const void *frame)
{
	enum lp_mem_op mop = (op & 1) ? LP_MEM_NEW_ARRAY : LP_MEM_NEW;
	struct new_pending pending __attribute__((cleanup(new_unwound))) = { .armed = false };
	size_t hi = size ? size : 1;
	void *p;

	/* inside a hook, or inside another operator new (libstdc++'s nothrow
	 * forms call the throwing ones): that one records */
	if (lp_memhook.guard || lp_memhook.new_hi)
		return alloc_nested(cxx_new_call(op, size, align, nt));
	/* what the operator will ask malloc or aligned_alloc for: the size,
	 * at least 1, rounded up to the alignment */
	if (align > 1 && __builtin_add_overflow(hi, align - 1, &hi))
		hi = SIZE_MAX;
	else if (align > 1)
		hi &= ~(align - 1);
	pending.op = mop;
	pending.size = size;
	pending.ret = ret;
	pending.frame = frame;
	pending.armed = true;
	lp_memhook.new_lo = size;
	lp_memhook.new_hi = hi;
	p = cxx_new_call(op, size, align, nt);
	pending.armed = false;
	lp_memhook.new_hi = 0;
	lp_memhook.guard = 1;
	alloc_done(mop, p, size, ret, frame);
	lp_memhook.guard = 0;
	return p;
}

static ALWAYS_INLINE void delete_hook(enum cxx_op op, void *p, size_t size, size_t align, const void *nt,
                                      const void *ret, const void *frame)
{
	enum lp_mem_op mop = (op & 1) ? LP_MEM_DELETE_ARRAY : LP_MEM_DELETE;

	if (!p || unlikely(in_arena(p)))
		return;
	if (lp_memhook.guard) {
		if (keepalive)
			memlive_remove((uintptr_t)p);
		lp_mem_forget((uintptr_t)p);
		cxx_delete_call(op, p, size, align, nt);
		return;
	}
	lp_memhook.guard = 1;
	if (release_begin(mop, p, ret, frame))
		cxx_delete_call(op, p, size, align, nt);
	lp_memhook.guard = 0;
}

#define HOOK_CXX(a, b) CXX_NAME(HOOK(a), b)

HOOK_EXPORT void *HOOK_CXX(_Znw, )(size_t size)
{
	return new_hook(CXX_NEW, size, 0, NULL, SITE);
}

HOOK_EXPORT void *HOOK_CXX(_Zna, )(size_t size)
{
	return new_hook(CXX_NEW_ARRAY, size, 0, NULL, SITE);
}

HOOK_EXPORT void *HOOK_CXX(_Znw, NOTHROW)(size_t size, const void *nt)
{
	return new_hook(CXX_NEW_NOTHROW, size, 0, nt, SITE);
}

HOOK_EXPORT void *HOOK_CXX(_Zna, NOTHROW)(size_t size, const void *nt)
{
	return new_hook(CXX_NEW_ARRAY_NOTHROW, size, 0, nt, SITE);
}

HOOK_EXPORT void *HOOK_CXX(_Znw, ALIGN)(size_t size, size_t align)
{
	return new_hook(CXX_NEW_ALIGNED, size, align, NULL, SITE);
}

HOOK_EXPORT void *HOOK_CXX(_Zna, ALIGN)(size_t size, size_t align)
{
	return new_hook(CXX_NEW_ARRAY_ALIGNED, size, align, NULL, SITE);
}

HOOK_EXPORT void *HOOK_CXX(_Znw, St11align_val_tRKSt9nothrow_t)(size_t size, size_t align, const void *nt)
{
	return new_hook(CXX_NEW_ALIGNED_NOTHROW, size, align, nt, SITE);
}

HOOK_EXPORT void *HOOK_CXX(_Zna, St11align_val_tRKSt9nothrow_t)(size_t size, size_t align, const void *nt)
{
	return new_hook(CXX_NEW_ARRAY_ALIGNED_NOTHROW, size, align, nt, SITE);
}

HOOK_EXPORT void HOOK(_ZdlPv)(void *p)
{
	delete_hook(CXX_DELETE, p, 0, 0, NULL, SITE);
}

HOOK_EXPORT void HOOK(_ZdaPv)(void *p)
{
	delete_hook(CXX_DELETE_ARRAY, p, 0, 0, NULL, SITE);
}

HOOK_EXPORT void HOOK_CXX(_ZdlPv, )(void *p, size_t size)
{
	delete_hook(CXX_DELETE_SIZED, p, size, 0, NULL, SITE);
}

HOOK_EXPORT void HOOK_CXX(_ZdaPv, )(void *p, size_t size)
{
	delete_hook(CXX_DELETE_ARRAY_SIZED, p, size, 0, NULL, SITE);
}

HOOK_EXPORT void HOOK(_ZdlPvRKSt9nothrow_t)(void *p, const void *nt)
{
	delete_hook(CXX_DELETE_NOTHROW, p, 0, 0, nt, SITE);
}

HOOK_EXPORT void HOOK(_ZdaPvRKSt9nothrow_t)(void *p, const void *nt)
{
	delete_hook(CXX_DELETE_ARRAY_NOTHROW, p, 0, 0, nt, SITE);
}

HOOK_EXPORT void HOOK(_ZdlPvSt11align_val_t)(void *p, size_t align)
{
	delete_hook(CXX_DELETE_ALIGNED, p, 0, align, NULL, SITE);
}

HOOK_EXPORT void HOOK(_ZdaPvSt11align_val_t)(void *p, size_t align)
{
	delete_hook(CXX_DELETE_ARRAY_ALIGNED, p, 0, align, NULL, SITE);
}

HOOK_EXPORT void HOOK_CXX(_ZdlPv, ALIGN)(void *p, size_t size, size_t align)
{
	delete_hook(CXX_DELETE_SIZED_ALIGNED, p, size, align, NULL, SITE);
}

HOOK_EXPORT void HOOK_CXX(_ZdaPv, ALIGN)(void *p, size_t size, size_t align)
{
	delete_hook(CXX_DELETE_ARRAY_SIZED_ALIGNED, p, size, align, NULL, SITE);
}

HOOK_EXPORT void HOOK(_ZdlPvSt11align_val_tRKSt9nothrow_t)(void *p, size_t align, const void *nt)
{
	delete_hook(CXX_DELETE_ALIGNED_NOTHROW, p, 0, align, nt, SITE);
}

HOOK_EXPORT void HOOK(_ZdaPvSt11align_val_tRKSt9nothrow_t)(void *p, size_t align, const void *nt)
{
	delete_hook(CXX_DELETE_ARRAY_ALIGNED_NOTHROW, p, 0, align, nt, SITE);
}
