/* The wait interposers of the memory tracer: wait, waitpid, wait3, wait4
 * and waitid pass through to the C library, and each child end they
 * collect is written into the calling thread's ring (lp_mem_reaped), so
 * that the recorder learns how a forked child ended: only a process's
 * parent is told, and the recorder is the parent of the program it
 * started, not of that program's children.  Built twice, as memhook.c is:
 * into the preloaded liblayerprof-mem.so (the real functions from
 * dlsym(RTLD_NEXT), one lookup per function on its first call) and into
 * liblayerprof-memwrap.a (LP_MEMHOOK_WRAP: __wrap_waitpid, ..., calling
 * __real_waitpid, ...).
 *
 * Children reaped inside the C library (system and pclose call an internal
 * waitpid that no interposer sees) or by the kernel (SIGCHLD ignored) are
 * not told here: the drain finds them gone (common/drainwatch.c). */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime.h"

#define HOOK_EXPORT __attribute__((visibility("default"))) LP_NOINSTR

/* A child's end (not a stop or a continue) goes into the ring. */
static LP_NOINSTR void note(pid_t pid, int status)
{
	if (pid > 0 && (WIFEXITED(status) || WIFSIGNALED(status)))
		lp_mem_reaped((uint32_t)pid, (uint32_t)status);
}

/* The end waitid collected into info, as a wait status. */
static LP_NOINSTR void note_info(const siginfo_t *info)
{
	if (info->si_code == CLD_EXITED)
		note(info->si_pid, (info->si_status & 0xff) << 8);
	else if (info->si_code == CLD_KILLED)
		note(info->si_pid, info->si_status & 0x7f);
	else if (info->si_code == CLD_DUMPED)
		note(info->si_pid, (info->si_status & 0x7f) | 0x80);
}

#ifdef LP_MEMHOOK_WRAP

/* ld --wrap turns these into references to the C library's functions. */
extern pid_t __real_wait(int *);
extern pid_t __real_waitpid(pid_t, int *, int);
extern pid_t __real_wait3(int *, int, struct rusage *);
extern pid_t __real_wait4(pid_t, int *, int, struct rusage *);
extern int __real_waitid(idtype_t, id_t, siginfo_t *, int);

/* Around each real call: reaping set, so that the preloaded library's
 * interposer (when both are there) does not note the end a second time;
 * restored after, a signal handler's wait may be running inside ours. */
#define REAL_CALL(res, call)                         \
	do {                                         \
		uint8_t saved_ = lp_memhook.reaping; \
                                                     \
		lp_memhook.reaping = 1;              \
		res = call;                          \
		lp_memhook.reaping = saved_;         \
	} while (0)

static LP_NOINSTR pid_t reaped(pid_t got, const int *status)
{
	if (got > 0 && status) {
		int saved_errno = errno;

		note(got, *status);
		errno = saved_errno;
	}
	return got;
}

HOOK_EXPORT pid_t __wrap_wait(int *status)
{
	int st = 0;
	pid_t got;

	REAL_CALL(got, __real_wait(&st));
	if (got > 0 && status)
		*status = st;
	return reaped(got, &st);
}

HOOK_EXPORT pid_t __wrap_waitpid(pid_t pid, int *status, int options)
{
	int st = 0;
	pid_t got;

	REAL_CALL(got, __real_waitpid(pid, &st, options));
	if (got > 0 && status)
		*status = st;
	return reaped(got, &st);
}

HOOK_EXPORT pid_t __wrap_wait3(int *status, int options, struct rusage *ru)
{
	int st = 0;
	pid_t got;

	REAL_CALL(got, __real_wait3(&st, options, ru));
	if (got > 0 && status)
		*status = st;
	return reaped(got, &st);
}

HOOK_EXPORT pid_t __wrap_wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	int st = 0;
	pid_t got;

	REAL_CALL(got, __real_wait4(pid, &st, options, ru));
	if (got > 0 && status)
		*status = st;
	return reaped(got, &st);
}

HOOK_EXPORT int __wrap_waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	siginfo_t own;
	int r, saved_errno;

	if (!info)
		info = &own;
	info->si_pid = 0;
	REAL_CALL(r, __real_waitid(type, id, info, options));
	if (r || info->si_pid <= 0 || (options & WNOWAIT))
		return r;
	saved_errno = errno;
	note_info(info);
	errno = saved_errno;
	return r;
}

#else /* the preloaded library */

typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);
typedef int (*waitid_fn)(idtype_t, id_t, siginfo_t *, int);

static _Atomic(void *) real_wait4, real_waitid;

/* The next definition of name (the C library's); NULL when there is none. */
static LP_NOINSTR void *next_fn(_Atomic(void *) *cache, const char *name)
{
	void *f = atomic_load_explicit(cache, memory_order_acquire);

	if (!f) {
		uint8_t saved = lp_memhook.guard;

		lp_memhook.guard = 1; /* dlsym may allocate: not the program's */
		f = dlsym(RTLD_NEXT, name);
		lp_memhook.guard = saved;
		atomic_store_explicit(cache, f, memory_order_release);
	}
	return f;
}

static LP_NOINSTR pid_t wait4_hook(pid_t pid, int *status, int options, struct rusage *ru)
{
	wait4_fn real = (wait4_fn)next_fn(&real_wait4, "wait4");
	int st = 0;
	pid_t got;

	if (real)
		got = real(pid, &st, options, ru);
	else
		got = (pid_t)syscall(SYS_wait4, pid, &st, options, ru);
	if (got > 0) {
		int saved_errno = errno;

		if (!lp_memhook.reaping)
			note(got, st);
		errno = saved_errno;
		if (status)
			*status = st;
	}
	return got;
}

HOOK_EXPORT pid_t wait(int *status)
{
	return wait4_hook(-1, status, 0, NULL);
}

HOOK_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	return wait4_hook(pid, status, options, NULL);
}

HOOK_EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
	return wait4_hook(-1, status, options, ru);
}

HOOK_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	return wait4_hook(pid, status, options, ru);
}

HOOK_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	waitid_fn real = (waitid_fn)next_fn(&real_waitid, "waitid");
	siginfo_t own;
	int r, saved_errno;

	if (!info)
		info = &own;
	info->si_pid = 0;
	if (real)
		r = real(type, id, info, options);
	else
		r = (int)syscall(SYS_waitid, type, id, info, options, NULL);
	if (r || info->si_pid <= 0 || (options & WNOWAIT) || lp_memhook.reaping)
		return r;
	saved_errno = errno;
	note_info(info);
	errno = saved_errno;
	return r;
}
#endif
