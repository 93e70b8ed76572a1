/* The wait interposers of the preloaded memory tracer (liblayerprof-mem.so):
 * wait, waitpid, wait3, wait4 and waitid pass through to the C library, and
 * each child end they collect is written into the calling thread's ring
 * (lp_mem_reaped), so that the recorder learns how a forked child ended:
 * only a process's parent is told, and the recorder is the parent of the
 * program it started, not of that program's children.  Off the hot path:
 * one dlsym per function, on its first call. */
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

/* A child's end (not a stop or a continue) goes into the ring. */
static LP_NOINSTR void note(pid_t pid, int status)
{
	if (pid > 0 && (WIFEXITED(status) || WIFSIGNALED(status)))
		lp_mem_reaped((uint32_t)pid, (uint32_t)status);
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
	if (r || info->si_pid <= 0 || (options & WNOWAIT))
		return r;
	saved_errno = errno;
	/* the wait status waitpid would have given */
	if (info->si_code == CLD_EXITED)
		note(info->si_pid, (info->si_status & 0xff) << 8);
	else if (info->si_code == CLD_KILLED)
		note(info->si_pid, info->si_status & 0x7f);
	else if (info->si_code == CLD_DUMPED)
		note(info->si_pid, (info->si_status & 0x7f) | 0x80);
	errno = saved_errno;
	return r;
}
