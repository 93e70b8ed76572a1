/* The interposers of the sync tracer (record --sync).  Built twice from
 * this file:
 *
 *  - liblayerprof-sync.so, preloaded: defines pthread_mutex_lock, ...; the
 *    real functions come from dlsym(RTLD_NEXT) (dlvsym for the condition
 *    variables, whose unversioned lookup finds glibc's old compat ones);
 *  - liblayerprof-syncwrap.a (LP_SYNCHOOK_WRAP), linked into a program with
 *    ld --wrap (syncwrap.rsp): defines __wrap_pthread_mutex_lock, ... and
 *    calls __real_pthread_mutex_lock, ...
 *
 * Each hook records through lp_sync_record (runtime/sync.c).  A lock is
 * tried first: only when it is busy is the clock read and the real lock
 * called (LP_SYNC_CONTENDED), so that an uncontended lock costs one record.
 * A release, signal or post takes its time before it is passed on.  The
 * program's return values and errno are kept exactly; what a call does
 * (recursive, error-checking and robust mutexes included) is the real
 * function's.  LAYERPROF_SYNC (synctrace.h) chooses what is recorded
 * (unset: nothing when preloaded, everything when linked in); while the
 * session's tracing is off, a hook passes its call on after one check. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime.h"
#include "runtime/synctrace.h"

#ifdef LP_SYNCHOOK_WRAP
#define HOOK(name) __wrap_##name
#else
#define HOOK(name) name
#endif
#define HOOK_EXPORT __attribute__((visibility("default"), noinline)) LP_NOINSTR
#define SITE ((uintptr_t)__builtin_return_address(0))
#define ALWAYS_INLINE inline __attribute__((always_inline)) LP_NOINSTR
#define OBJ(p) ((uintptr_t)(p))

enum sync_mode { MODE_UNKNOWN = 0, MODE_OFF, MODE_THREADS, MODE_ALL };

static _Atomic int sync_mode;

static LP_NOINSTR __attribute__((noinline, cold)) int mode_read(void)
{
	const char *v = getenv(LP_SYNC_ENV);
	int m = MODE_OFF;

#ifdef LP_SYNCHOOK_WRAP
	/* the program was linked with the interposers to be traced */
	if (!v)
		m = MODE_ALL;
#endif
	if (v && !strcmp(v, "1"))
		m = MODE_ALL;
	else if (v && !strcmp(v, "threads"))
		m = MODE_THREADS;
	atomic_store_explicit(&sync_mode, m, memory_order_relaxed);
	return m;
}

static ALWAYS_INLINE int mode(void)
{
	int m = atomic_load_explicit(&sync_mode, memory_order_relaxed);

	return likely(m != MODE_UNKNOWN) ? m : mode_read();
}

/* The real functions. */
#define SYNC_FNS(X)                                                                                               \
	X(int, pthread_mutex_lock, (pthread_mutex_t *))                                                           \
	X(int, pthread_mutex_trylock, (pthread_mutex_t *))                                                        \
	X(int, pthread_mutex_timedlock, (pthread_mutex_t *, const struct timespec *))                             \
	X(int, pthread_mutex_clocklock, (pthread_mutex_t *, clockid_t, const struct timespec *))                  \
	X(int, pthread_mutex_unlock, (pthread_mutex_t *))                                                         \
	X(int, pthread_rwlock_rdlock, (pthread_rwlock_t *))                                                       \
	X(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t *))                                                    \
	X(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t *, const struct timespec *))                         \
	X(int, pthread_rwlock_clockrdlock, (pthread_rwlock_t *, clockid_t, const struct timespec *))              \
	X(int, pthread_rwlock_wrlock, (pthread_rwlock_t *))                                                       \
	X(int, pthread_rwlock_trywrlock, (pthread_rwlock_t *))                                                    \
	X(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t *, const struct timespec *))                         \
	X(int, pthread_rwlock_clockwrlock, (pthread_rwlock_t *, clockid_t, const struct timespec *))              \
	X(int, pthread_rwlock_unlock, (pthread_rwlock_t *))                                                       \
	X(int, pthread_spin_lock, (pthread_spinlock_t *))                                                         \
	X(int, pthread_spin_trylock, (pthread_spinlock_t *))                                                      \
	X(int, pthread_spin_unlock, (pthread_spinlock_t *))                                                       \
	X(int, pthread_cond_wait, (pthread_cond_t *, pthread_mutex_t *))                                          \
	X(int, pthread_cond_timedwait, (pthread_cond_t *, pthread_mutex_t *, const struct timespec *))            \
	X(int, pthread_cond_clockwait, (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *)) \
	X(int, pthread_cond_signal, (pthread_cond_t *))                                                           \
	X(int, pthread_cond_broadcast, (pthread_cond_t *))                                                        \
	X(int, pthread_barrier_wait, (pthread_barrier_t *))                                                       \
	X(int, pthread_join, (pthread_t, void **))                                                                \
	X(int, pthread_tryjoin_np, (pthread_t, void **))                                                          \
	X(int, pthread_timedjoin_np, (pthread_t, void **, const struct timespec *))                               \
	X(int, pthread_clockjoin_np, (pthread_t, void **, clockid_t, const struct timespec *))                    \
	X(int, sem_wait, (sem_t *))                                                                               \
	X(int, sem_trywait, (sem_t *))                                                                            \
	X(int, sem_timedwait, (sem_t *, const struct timespec *))                                                 \
	X(int, sem_clockwait, (sem_t *, clockid_t, const struct timespec *))                                      \
	X(int, sem_post, (sem_t *))                                                                               \
	X(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))                  \
	SYNC_FNS_TIME64(X)

/* A 32-bit glibc (2.34 on) has each timed function twice: under its name
 * with the 32-bit struct timespec, and as __NAME64 (__sem_timedwait64, ...)
 * with the 64-bit one, which a program built with _TIME_BITS=64 calls (all
 * of Debian's armhf since trixie).  The hooks of those pass the time on
 * unread: declared here with struct timespec, only its pointer matters. */
#if defined(__GLIBC__) && defined(__TIMESIZE) && __TIMESIZE == 32 && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
#define LP_SYNC_TIME64 1
#define SYNC_FNS_TIME64(X)                                                                                            \
	X(int, __pthread_mutex_timedlock64, (pthread_mutex_t *, const struct timespec *))                             \
	X(int, __pthread_mutex_clocklock64, (pthread_mutex_t *, clockid_t, const struct timespec *))                  \
	X(int, __pthread_rwlock_timedrdlock64, (pthread_rwlock_t *, const struct timespec *))                         \
	X(int, __pthread_rwlock_clockrdlock64, (pthread_rwlock_t *, clockid_t, const struct timespec *))              \
	X(int, __pthread_rwlock_timedwrlock64, (pthread_rwlock_t *, const struct timespec *))                         \
	X(int, __pthread_rwlock_clockwrlock64, (pthread_rwlock_t *, clockid_t, const struct timespec *))              \
	X(int, __pthread_cond_timedwait64, (pthread_cond_t *, pthread_mutex_t *, const struct timespec *))            \
	X(int, __pthread_cond_clockwait64, (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *)) \
	X(int, __pthread_timedjoin_np64, (pthread_t, void **, const struct timespec *))                               \
	X(int, __pthread_clockjoin_np64, (pthread_t, void **, clockid_t, const struct timespec *))                    \
	X(int, __sem_timedwait64, (sem_t *, const struct timespec *))                                                 \
	X(int, __sem_clockwait64, (sem_t *, clockid_t, const struct timespec *))
#else
#define LP_SYNC_TIME64 0
#define SYNC_FNS_TIME64(X)
#endif

#ifdef LP_SYNCHOOK_WRAP
/* ld --wrap turns these into references to the real functions.  Weak, so
 * that a C library without some of them still links. */
#define REAL_DECL(ret, name, params) extern ret __real_##name params __attribute__((weak));
SYNC_FNS(REAL_DECL)
#define REAL(name) __real_##name
#define READY() true

/* The real call, with the guard up: the preloaded interposer, which it
 * reaches when both are in the process, passes it on. */
#define CALL(expr)                                        \
	({                                                \
		uint8_t saved_guard_ = lp_synchook.guard; \
		int r_;                                   \
		lp_synchook.guard = 1;                    \
		r_ = (expr);                              \
		lp_synchook.guard = saved_guard_;         \
		r_;                                       \
	})
#define GUARDED() false

#else /* the preloaded library */

#define REAL_FIELD(ret, name, params) ret(*name) params;
static struct real_fns {
	SYNC_FNS(REAL_FIELD)
} real;
static _Atomic int hooks_state; /* 0: unresolved, 2: resolved */

#define REAL(name) real.name
#define CALL(expr) (expr)
#define GUARDED() (lp_synchook.guard != 0)

/* glibc keeps the condition variables of before 2.3.2 under the name's
 * oldest version, which an unversioned dlsym may find (x86); the ARM
 * libraries have one version of each (aarch64 GLIBC_2.17, armhf GLIBC_2.4:
 * the guest suite's sync group checks), which dlsym finds. */
#if defined(__x86_64__) || defined(__i386__)
#define COND_VERSION "GLIBC_2.3.2"
#endif

static LP_NOINSTR void *real_lookup(const char *name)
{
	void *p = NULL;

#ifdef COND_VERSION
	if (!strncmp(name, "pthread_cond_", 13))
		p = dlvsym(RTLD_NEXT, name, COND_VERSION);
#endif
	return p ? p : dlsym(RTLD_NEXT, name);
}

#define RESOLVE(ret, name, params) __atomic_store_n((void **)&real.name, real_lookup(#name), __ATOMIC_RELAXED);

/* Looks the real functions up; a thread that comes meanwhile looks them up
 * as well (the same values).  A function the C library lacks stays NULL:
 * the program cannot have been linked against it. */
static LP_NOINSTR __attribute__((noinline, cold)) bool hooks_resolve(void)
{
	SYNC_FNS(RESOLVE)
	atomic_store_explicit(&hooks_state, 2, memory_order_release);
	return true;
}

#define READY() (likely(atomic_load_explicit(&hooks_state, memory_order_acquire) == 2) || hooks_resolve())

__attribute__((constructor)) static LP_NOINSTR void hooks_constructor(void)
{
	(void)READY();
	mode();
}
#endif

/* Calls real function `name`; ENOSYS when there is none. */
#define REAL_CALL(name, ...) (REAL(name) ? CALL(REAL(name)(__VA_ARGS__)) : ENOSYS)

/* Whether every operation is recorded now. */
static ALWAYS_INLINE bool tracing(void)
{
	(void)READY();
	return mode() == MODE_ALL && !GUARDED() && lp_sync_on();
}

static ALWAYS_INLINE unsigned failed_flags(int r)
{
	return r ? LP_SYNC_FAILED | (r == ETIMEDOUT ? LP_SYNC_TIMEDOUT : 0) : 0;
}

/* The result of an acquisition: a robust mutex whose owner died is held
 * (EOWNERDEAD). */
static ALWAYS_INLINE unsigned lock_flags(int r)
{
	return r == EOWNERDEAD ? 0 : failed_flags(r);
}

/* ---- locks ---------------------------------------------------------------- */

/* A blocking or timed acquisition, after the try (r) failed: waits only
 * when the lock was busy; an error the try found comes again from the
 * real call, which is what the program gets.  EDEADLK: no wait. */
#define LOCK_SLOW(r, flags, begin, call)                         \
	do {                                                     \
		if ((r) == EBUSY) {                              \
			(begin) = lp_sync_clock();               \
			(flags) |= LP_SYNC_CONTENDED;            \
		}                                                \
		(r) = (call);                                    \
		if ((r) == EDEADLK) {                            \
			(begin) = 0;                             \
			(flags) &= ~(unsigned)LP_SYNC_CONTENDED; \
		}                                                \
	} while (0)

#define LOCK_HOOK(name, tryname, op, obj_t)                                                     \
	HOOK_EXPORT int HOOK(name)(obj_t * o)                                                   \
	{                                                                                       \
		unsigned flags = 0;                                                             \
		uint64_t begin = 0;                                                             \
		int r;                                                                          \
                                                                                                \
		if (!tracing())                                                                 \
			return REAL_CALL(name, o);                                              \
		r = REAL_CALL(tryname, o);                                                      \
		if (r && r != EOWNERDEAD)                                                       \
			LOCK_SLOW(r, flags, begin, REAL_CALL(name, o));                         \
		lp_sync_record(LP_SYNC_OPF(op, flags | lock_flags(r)), OBJ(o), begin, SITE, 0); \
		return r;                                                                       \
	}

#define TRY_HOOK(name, op, obj_t)                                                                 \
	HOOK_EXPORT int HOOK(name)(obj_t * o)                                                     \
	{                                                                                         \
		int r;                                                                            \
                                                                                                  \
		if (!tracing())                                                                   \
			return REAL_CALL(name, o);                                                \
		r = REAL_CALL(name, o);                                                           \
		lp_sync_record(LP_SYNC_OPF(op, LP_SYNC_TRY | lock_flags(r)), OBJ(o), 0, SITE, 0); \
		return r;                                                                         \
	}

#define TIMED_HOOK(name, tryname, op, obj_t)                                                    \
	HOOK_EXPORT int HOOK(name)(obj_t * o, const struct timespec *at)                        \
	{                                                                                       \
		unsigned flags = LP_SYNC_TIMED;                                                 \
		uint64_t begin = 0;                                                             \
		int r;                                                                          \
                                                                                                \
		if (!tracing())                                                                 \
			return REAL_CALL(name, o, at);                                          \
		r = REAL_CALL(tryname, o);                                                      \
		if (r && r != EOWNERDEAD)                                                       \
			LOCK_SLOW(r, flags, begin, REAL_CALL(name, o, at));                     \
		lp_sync_record(LP_SYNC_OPF(op, flags | lock_flags(r)), OBJ(o), begin, SITE, 0); \
		return r;                                                                       \
	}

#define CLOCK_HOOK(name, tryname, op, obj_t)                                                    \
	HOOK_EXPORT int HOOK(name)(obj_t * o, clockid_t clk, const struct timespec *at)         \
	{                                                                                       \
		unsigned flags = LP_SYNC_TIMED;                                                 \
		uint64_t begin = 0;                                                             \
		int r;                                                                          \
                                                                                                \
		if (!tracing())                                                                 \
			return REAL_CALL(name, o, clk, at);                                     \
		r = REAL_CALL(tryname, o);                                                      \
		if (r && r != EOWNERDEAD)                                                       \
			LOCK_SLOW(r, flags, begin, REAL_CALL(name, o, clk, at));                \
		lp_sync_record(LP_SYNC_OPF(op, flags | lock_flags(r)), OBJ(o), begin, SITE, 0); \
		return r;                                                                       \
	}

/* A release: its time before it is passed on, its outcome in the record. */
#define RELEASE_HOOK(name, op, obj_t)                                                      \
	HOOK_EXPORT int HOOK(name)(obj_t * o)                                              \
	{                                                                                  \
		uint64_t now;                                                              \
		int r;                                                                     \
                                                                                           \
		if (!tracing())                                                            \
			return REAL_CALL(name, o);                                         \
		now = lp_sync_clock();                                                     \
		r = REAL_CALL(name, o);                                                    \
		lp_sync_record_at(now, LP_SYNC_OPF(op, failed_flags(r)), OBJ(o), SITE, 0); \
		return r;                                                                  \
	}

LOCK_HOOK(pthread_mutex_lock, pthread_mutex_trylock, LP_SYNC_MUTEX_LOCK, pthread_mutex_t)
TRY_HOOK(pthread_mutex_trylock, LP_SYNC_MUTEX_LOCK, pthread_mutex_t)
TIMED_HOOK(pthread_mutex_timedlock, pthread_mutex_trylock, LP_SYNC_MUTEX_LOCK, pthread_mutex_t)
CLOCK_HOOK(pthread_mutex_clocklock, pthread_mutex_trylock, LP_SYNC_MUTEX_LOCK, pthread_mutex_t)
RELEASE_HOOK(pthread_mutex_unlock, LP_SYNC_MUTEX_UNLOCK, pthread_mutex_t)

LOCK_HOOK(pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, LP_SYNC_RD_LOCK, pthread_rwlock_t)
TRY_HOOK(pthread_rwlock_tryrdlock, LP_SYNC_RD_LOCK, pthread_rwlock_t)
TIMED_HOOK(pthread_rwlock_timedrdlock, pthread_rwlock_tryrdlock, LP_SYNC_RD_LOCK, pthread_rwlock_t)
CLOCK_HOOK(pthread_rwlock_clockrdlock, pthread_rwlock_tryrdlock, LP_SYNC_RD_LOCK, pthread_rwlock_t)
LOCK_HOOK(pthread_rwlock_wrlock, pthread_rwlock_trywrlock, LP_SYNC_WR_LOCK, pthread_rwlock_t)
TRY_HOOK(pthread_rwlock_trywrlock, LP_SYNC_WR_LOCK, pthread_rwlock_t)
TIMED_HOOK(pthread_rwlock_timedwrlock, pthread_rwlock_trywrlock, LP_SYNC_WR_LOCK, pthread_rwlock_t)
CLOCK_HOOK(pthread_rwlock_clockwrlock, pthread_rwlock_trywrlock, LP_SYNC_WR_LOCK, pthread_rwlock_t)
RELEASE_HOOK(pthread_rwlock_unlock, LP_SYNC_RW_UNLOCK, pthread_rwlock_t)

LOCK_HOOK(pthread_spin_lock, pthread_spin_trylock, LP_SYNC_SPIN_LOCK, pthread_spinlock_t)
TRY_HOOK(pthread_spin_trylock, LP_SYNC_SPIN_LOCK, pthread_spinlock_t)
RELEASE_HOOK(pthread_spin_unlock, LP_SYNC_SPIN_UNLOCK, pthread_spinlock_t)

#if LP_SYNC_TIME64
TIMED_HOOK(__pthread_mutex_timedlock64, pthread_mutex_trylock, LP_SYNC_MUTEX_LOCK, pthread_mutex_t)
CLOCK_HOOK(__pthread_mutex_clocklock64, pthread_mutex_trylock, LP_SYNC_MUTEX_LOCK, pthread_mutex_t)
TIMED_HOOK(__pthread_rwlock_timedrdlock64, pthread_rwlock_tryrdlock, LP_SYNC_RD_LOCK, pthread_rwlock_t)
CLOCK_HOOK(__pthread_rwlock_clockrdlock64, pthread_rwlock_tryrdlock, LP_SYNC_RD_LOCK, pthread_rwlock_t)
TIMED_HOOK(__pthread_rwlock_timedwrlock64, pthread_rwlock_trywrlock, LP_SYNC_WR_LOCK, pthread_rwlock_t)
CLOCK_HOOK(__pthread_rwlock_clockwrlock64, pthread_rwlock_trywrlock, LP_SYNC_WR_LOCK, pthread_rwlock_t)
#endif

/* ---- condition variables, barriers --------------------------------------- */

/* The wait ends when the mutex is held again; a timeout still holds it. */
static ALWAYS_INLINE void cond_done(int r, unsigned flags, pthread_cond_t *c, pthread_mutex_t *m, uint64_t begin,
                                    uintptr_t site)
{
	if (r == ETIMEDOUT)
		flags |= LP_SYNC_TIMEDOUT;
	else if (r)
		flags |= LP_SYNC_FAILED;
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_COND_WAIT, flags), OBJ(c), begin, site, OBJ(m));
}

HOOK_EXPORT int HOOK(pthread_cond_wait)(pthread_cond_t *c, pthread_mutex_t *m)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(pthread_cond_wait, c, m);
	begin = lp_sync_clock();
	r = REAL_CALL(pthread_cond_wait, c, m);
	cond_done(r, 0, c, m, begin, SITE);
	return r;
}

HOOK_EXPORT int HOOK(pthread_cond_timedwait)(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(pthread_cond_timedwait, c, m, at);
	begin = lp_sync_clock();
	r = REAL_CALL(pthread_cond_timedwait, c, m, at);
	cond_done(r, LP_SYNC_TIMED, c, m, begin, SITE);
	return r;
}

HOOK_EXPORT int HOOK(pthread_cond_clockwait)(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                             const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(pthread_cond_clockwait, c, m, clk, at);
	begin = lp_sync_clock();
	r = REAL_CALL(pthread_cond_clockwait, c, m, clk, at);
	cond_done(r, LP_SYNC_TIMED, c, m, begin, SITE);
	return r;
}

#if LP_SYNC_TIME64
HOOK_EXPORT int HOOK(__pthread_cond_timedwait64)(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(__pthread_cond_timedwait64, c, m, at);
	begin = lp_sync_clock();
	r = REAL_CALL(__pthread_cond_timedwait64, c, m, at);
	cond_done(r, LP_SYNC_TIMED, c, m, begin, SITE);
	return r;
}

HOOK_EXPORT int HOOK(__pthread_cond_clockwait64)(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                                 const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(__pthread_cond_clockwait64, c, m, clk, at);
	begin = lp_sync_clock();
	r = REAL_CALL(__pthread_cond_clockwait64, c, m, clk, at);
	cond_done(r, LP_SYNC_TIMED, c, m, begin, SITE);
	return r;
}
#endif

RELEASE_HOOK(pthread_cond_signal, LP_SYNC_COND_SIGNAL, pthread_cond_t)
RELEASE_HOOK(pthread_cond_broadcast, LP_SYNC_COND_BROADCAST, pthread_cond_t)

HOOK_EXPORT int HOOK(pthread_barrier_wait)(pthread_barrier_t *b)
{
	uint64_t begin;
	unsigned flags;
	int r;

	if (!tracing())
		return REAL_CALL(pthread_barrier_wait, b);
	begin = lp_sync_clock();
	r = REAL_CALL(pthread_barrier_wait, b);
	flags = r == PTHREAD_BARRIER_SERIAL_THREAD ? LP_SYNC_SERIAL : failed_flags(r);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_BARRIER_WAIT, flags), OBJ(b), begin, SITE, 0);
	return r;
}

/* ---- joins ---------------------------------------------------------------- */

HOOK_EXPORT int HOOK(pthread_join)(pthread_t th, void **ret)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(pthread_join, th, ret);
	begin = lp_sync_clock();
	r = REAL_CALL(pthread_join, th, ret);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_JOIN, failed_flags(r)), OBJ(th), r == EDEADLK ? 0 : begin, SITE, 0);
	return r;
}

HOOK_EXPORT int HOOK(pthread_tryjoin_np)(pthread_t th, void **ret)
{
	int r;

	if (!tracing())
		return REAL_CALL(pthread_tryjoin_np, th, ret);
	r = REAL_CALL(pthread_tryjoin_np, th, ret);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_JOIN, LP_SYNC_TRY | failed_flags(r)), OBJ(th), 0, SITE, 0);
	return r;
}

HOOK_EXPORT int HOOK(pthread_timedjoin_np)(pthread_t th, void **ret, const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(pthread_timedjoin_np, th, ret, at);
	begin = lp_sync_clock();
	r = REAL_CALL(pthread_timedjoin_np, th, ret, at);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_JOIN, LP_SYNC_TIMED | failed_flags(r)), OBJ(th), begin, SITE, 0);
	return r;
}

HOOK_EXPORT int HOOK(pthread_clockjoin_np)(pthread_t th, void **ret, clockid_t clk, const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(pthread_clockjoin_np, th, ret, clk, at);
	begin = lp_sync_clock();
	r = REAL_CALL(pthread_clockjoin_np, th, ret, clk, at);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_JOIN, LP_SYNC_TIMED | failed_flags(r)), OBJ(th), begin, SITE, 0);
	return r;
}

#if LP_SYNC_TIME64
HOOK_EXPORT int HOOK(__pthread_timedjoin_np64)(pthread_t th, void **ret, const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(__pthread_timedjoin_np64, th, ret, at);
	begin = lp_sync_clock();
	r = REAL_CALL(__pthread_timedjoin_np64, th, ret, at);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_JOIN, LP_SYNC_TIMED | failed_flags(r)), OBJ(th), begin, SITE, 0);
	return r;
}

HOOK_EXPORT int HOOK(__pthread_clockjoin_np64)(pthread_t th, void **ret, clockid_t clk, const struct timespec *at)
{
	uint64_t begin;
	int r;

	if (!tracing())
		return REAL_CALL(__pthread_clockjoin_np64, th, ret, clk, at);
	begin = lp_sync_clock();
	r = REAL_CALL(__pthread_clockjoin_np64, th, ret, clk, at);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_JOIN, LP_SYNC_TIMED | failed_flags(r)), OBJ(th), begin, SITE, 0);
	return r;
}
#endif

/* ---- semaphores (-1 and errno) -------------------------------------------- */

/* sem_wait and its timed forms: tried first; the program's errno is the
 * one it had when the try failed, until the real call sets it. */
#define SEM_WAIT_BODY(flags0, call)                                                                    \
	do {                                                                                           \
		unsigned flags = (flags0);                                                             \
		uint64_t begin = 0;                                                                    \
		int saved = errno, r;                                                                  \
                                                                                                       \
		r = REAL_CALL(sem_trywait, s);                                                         \
		if (r) {                                                                               \
			if (errno == EAGAIN) {                                                         \
				begin = lp_sync_clock();                                               \
				flags |= LP_SYNC_CONTENDED;                                            \
			}                                                                              \
			errno = saved;                                                                 \
			r = (call);                                                                    \
			if (r)                                                                         \
				flags |= LP_SYNC_FAILED | (errno == ETIMEDOUT ? LP_SYNC_TIMEDOUT : 0); \
		}                                                                                      \
		lp_sync_record(LP_SYNC_OPF(LP_SYNC_SEM_WAIT, flags), OBJ(s), begin, SITE, 0);          \
		return r;                                                                              \
	} while (0)

HOOK_EXPORT int HOOK(sem_wait)(sem_t *s)
{
	if (!tracing())
		return REAL_CALL(sem_wait, s);
	SEM_WAIT_BODY(0, REAL_CALL(sem_wait, s));
}

HOOK_EXPORT int HOOK(sem_timedwait)(sem_t *s, const struct timespec *at)
{
	if (!tracing())
		return REAL_CALL(sem_timedwait, s, at);
	SEM_WAIT_BODY(LP_SYNC_TIMED, REAL_CALL(sem_timedwait, s, at));
}

HOOK_EXPORT int HOOK(sem_clockwait)(sem_t *s, clockid_t clk, const struct timespec *at)
{
	if (!tracing())
		return REAL_CALL(sem_clockwait, s, clk, at);
	SEM_WAIT_BODY(LP_SYNC_TIMED, REAL_CALL(sem_clockwait, s, clk, at));
}

#if LP_SYNC_TIME64
HOOK_EXPORT int HOOK(__sem_timedwait64)(sem_t *s, const struct timespec *at)
{
	if (!tracing())
		return REAL_CALL(__sem_timedwait64, s, at);
	SEM_WAIT_BODY(LP_SYNC_TIMED, REAL_CALL(__sem_timedwait64, s, at));
}

HOOK_EXPORT int HOOK(__sem_clockwait64)(sem_t *s, clockid_t clk, const struct timespec *at)
{
	if (!tracing())
		return REAL_CALL(__sem_clockwait64, s, clk, at);
	SEM_WAIT_BODY(LP_SYNC_TIMED, REAL_CALL(__sem_clockwait64, s, clk, at));
}
#endif

HOOK_EXPORT int HOOK(sem_trywait)(sem_t *s)
{
	int r;

	if (!tracing())
		return REAL_CALL(sem_trywait, s);
	r = REAL_CALL(sem_trywait, s);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_SEM_WAIT, LP_SYNC_TRY | (r ? LP_SYNC_FAILED : 0)), OBJ(s), 0, SITE, 0);
	return r;
}

HOOK_EXPORT int HOOK(sem_post)(sem_t *s)
{
	uint64_t now;
	int r;

	if (!tracing())
		return REAL_CALL(sem_post, s);
	now = lp_sync_clock();
	r = REAL_CALL(sem_post, s);
	lp_sync_record_at(now, LP_SYNC_OPF(LP_SYNC_SEM_POST, r ? LP_SYNC_FAILED : 0), OBJ(s), SITE, 0);
	return r;
}

/* ---- thread starts ---------------------------------------------------------- */

struct sync_start {
	void *(*fn)(void *);
	void *arg;
};

/* Heap use of the hooks themselves is not the program's (memtrace.h). */
static LP_NOINSTR void *own_malloc(size_t n)
{
	uint8_t g = lp_memhook.guard;
	void *p;

	lp_memhook.guard = 1;
	p = malloc(n);
	lp_memhook.guard = g;
	return p;
}

static LP_NOINSTR void own_free(void *p)
{
	uint8_t g = lp_memhook.guard;
	int saved = errno;

	lp_memhook.guard = 1;
	free(p);
	lp_memhook.guard = g;
	errno = saved;
}

/* The main thread's THREAD record, as the other threads write theirs when
 * they start (so that a join of it, or its pthread_t, is known), once in a
 * program that has both builds.  The runtime's constructor has run (it is
 * a library this one needs). */
__attribute__((constructor)) static LP_NOINSTR void main_thread_start(void)
{
	if (mode() < MODE_THREADS || lp_synchook.started || !lp_sync_on())
		return;
	lp_synchook.started = 1;
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_THREAD, 0), OBJ(pthread_self()), 0, 0, 0);
}

/* The new thread's first code: its THREAD record (object: its pthread_t,
 * site: its start routine), then the program's start routine.  Built with
 * -fexceptions: a cancellation's unwinding passes through. */
static LP_NOINSTR void *sync_start(void *p)
{
	struct sync_start st = *(struct sync_start *)p;

	own_free(p);
	if (lp_sync_on())
		lp_sync_record(LP_SYNC_OPF(LP_SYNC_THREAD, 0), OBJ(pthread_self()), 0, (uintptr_t)st.fn, 0);
	return st.fn(st.arg);
}

HOOK_EXPORT int HOOK(pthread_create)(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct sync_start *st;
	int r, saved;

	(void)READY();
	/* the trampoline even while tracing is off: it may come on (live)
	 * before the thread starts or while it runs */
	if (mode() < MODE_THREADS || GUARDED())
		return REAL_CALL(pthread_create, th, attr, fn, arg);
	saved = errno;
	st = own_malloc(sizeof(*st));
	errno = saved;
	if (!st)
		return REAL_CALL(pthread_create, th, attr, fn, arg);
	st->fn = fn;
	st->arg = arg;
	r = REAL_CALL(pthread_create, th, attr, sync_start, st);
	if (r)
		own_free(st);
	lp_sync_record(LP_SYNC_OPF(LP_SYNC_CREATE, r ? LP_SYNC_FAILED : 0), r ? 0 : OBJ(*th), 0, SITE, 0);
	return r;
}
