/* Trapped entries of patched functions (x86-64, record --dynamic's patch
 * backend).  A function that cannot hold a 5-byte jump at its entry (a
 * function of 1 to 4 bytes followed at once by another, one that another
 * function jumps into just after its first instruction) gets a 1-byte int3
 * there instead: the trap's handler does what a trampoline's jump would
 * (lp_dyn_enter: the entry, the return hooked) and lets the thread go on
 * at the function's first instruction, relocated into its trampoline.
 * A trap costs a signal's delivery (microseconds), so the planner uses one
 * only where a jump cannot go.
 *
 * A SIGTRAP that an int3 raises while SIGTRAP is blocked ends the process
 * (the kernel takes the default action): so while the patch backend is on,
 * the runtime keeps SIGTRAP out of every signal mask the program sets
 * (sigprocmask, pthread_sigmask, a handler's sa_mask, sigsuspend, ppoll,
 * pselect), keeps its handler installed, and hands a SIGTRAP that is none
 * of its traps to the handler the program set (or takes the default
 * action, as without it). */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <ucontext.h>

#include "runtime.h"

#if defined(LP_HAVE_DYNTRAMP) && defined(__x86_64__)

struct trap {
	uintptr_t addr;
	const struct lp_dynrec *rec;
};

/* The traps, sorted by address: a table replaced whole when traps are
 * added (the handler may read the old one meanwhile; old tables are not
 * freed). */
struct traptab {
	size_t n;
	struct trap t[];
};
static struct traptab *_Atomic traps;
static pthread_mutex_t traps_lock = PTHREAD_MUTEX_INITIALIZER;

/* On once the process has plans to apply (lp_dyntrap_arm). */
static _Atomic int armed;
/* The program's own SIGTRAP action, which the runtime's handler stands in
 * front of. */
static struct sigaction prog_action;
static pthread_mutex_t action_lock = PTHREAD_MUTEX_INITIALIZER;

static LP_NOINSTR void *next_fn(void *volatile *cache, const char *name)
{
	void *f = *cache;

	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		*cache = f;
	}
	return f;
}

#define REAL(ret, name, params)                                     \
	static void *volatile real_##name;                          \
	static LP_NOINSTR ret(*name##_real(void)) params            \
	{                                                           \
		return (ret(*) params)next_fn(&real_##name, #name); \
	}

REAL(int, sigaction, (int, const struct sigaction *, struct sigaction *))
REAL(int, sigprocmask, (int, const sigset_t *, sigset_t *))
REAL(int, pthread_sigmask, (int, const sigset_t *, sigset_t *))
REAL(int, sigsuspend, (const sigset_t *))
REAL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
REAL(int, pselect, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))

static LP_NOINSTR const struct lp_dynrec *trap_find(uintptr_t pc)
{
	const struct traptab *tab = atomic_load_explicit(&traps, memory_order_acquire);
	size_t lo = 0, hi = tab ? tab->n : 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (tab->t[mid].addr == pc)
			return tab->t[mid].rec;
		if (tab->t[mid].addr < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A SIGTRAP that is none of the runtime's: what the program asked for. */
static LP_NOINSTR void not_ours(int sig, siginfo_t *si, void *ctx)
{
	struct sigaction a = prog_action;

	if (a.sa_flags & SA_SIGINFO) {
		a.sa_sigaction(sig, si, ctx);
		return;
	}
	if (a.sa_handler == SIG_IGN && si->si_code <= 0)
		return; /* sent by a process, and ignored */
	if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
		a.sa_handler(sig);
		return;
	}
	/* the default action, as the kernel takes it for a trap */
	memset(&a, 0, sizeof(a));
	a.sa_handler = SIG_DFL;
	sigaction_real()(SIGTRAP, &a, NULL);
	raise(SIGTRAP);
}

static LP_NOINSTR void trap_handler(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t *g = uc->uc_mcontext.gregs;
	const struct lp_dynrec *r = trap_find((uintptr_t)g[REG_RIP] - 1);
	int saved = errno;

	if (r && si->si_code > 0 && r->kind == LP_PLAN_PROBE) {
		lp_dyn_probe_hit(r);
		g[REG_RIP] = (greg_t)r->cont;
		errno = saved;
		return;
	}
	if (r && si->si_code > 0) {
		uintptr_t sp = (uintptr_t)g[REG_RSP];

		g[REG_RIP] = (greg_t)lp_dyn_enter(r, (uintptr_t *)sp, sp);
		errno = saved;
		return;
	}
	not_ours(sig, si, ctx);
	errno = saved;
}

/* The runtime's handler in place, SIGTRAP out of this thread's mask. */
static LP_NOINSTR void handler_install(void)
{
	struct sigaction a;
	sigset_t trap;

	memset(&a, 0, sizeof(a));
	a.sa_sigaction = trap_handler;
	/* a trap inside a handler that blocks nothing else must still trap */
	a.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
	sigemptyset(&a.sa_mask);
	sigaction_real()(SIGTRAP, &a, &prog_action);
	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	sigprocmask_real()(SIG_UNBLOCK, &trap, NULL);
}

LP_NOINSTR void lp_dyntrap_arm(void)
{
	int was = 0;

	if (!atomic_compare_exchange_strong(&armed, &was, 1))
		return;
	pthread_mutex_lock(&action_lock);
	handler_install();
	pthread_mutex_unlock(&action_lock);
}

static LP_NOINSTR int trap_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct trap *)a)->addr, y = ((const struct trap *)b)->addr;

	return x < y ? -1 : x > y;
}

LP_NOINSTR int lp_dyntrap_add(const uintptr_t *addr, const struct lp_dynrec *const *rec, size_t n)
{
	struct traptab *old, *tab;
	size_t had;

	if (!n)
		return 0;
	pthread_mutex_lock(&traps_lock);
	old = atomic_load_explicit(&traps, memory_order_relaxed);
	had = old ? old->n : 0;
	tab = malloc(sizeof(*tab) + (had + n) * sizeof(struct trap));
	if (!tab) {
		pthread_mutex_unlock(&traps_lock);
		return -ENOMEM;
	}
	if (had)
		memcpy(tab->t, old->t, had * sizeof(struct trap));
	for (size_t i = 0; i < n; i++) {
		tab->t[had + i].addr = addr[i];
		tab->t[had + i].rec = rec[i];
	}
	tab->n = had + n;
	qsort(tab->t, tab->n, sizeof(struct trap), trap_cmp);
	atomic_store_explicit(&traps, tab, memory_order_release);
	pthread_mutex_unlock(&traps_lock);
	return 0;
}

/* ---- the program's signal calls, SIGTRAP kept out of its masks ---- */

/* set without SIGTRAP into copy; returns what to pass on */
static LP_NOINSTR const sigset_t *without_trap(const sigset_t *set, sigset_t *copy)
{
	if (!set || !atomic_load_explicit(&armed, memory_order_relaxed) || !sigismember(set, SIGTRAP))
		return set;
	*copy = *set;
	sigdelset(copy, SIGTRAP);
	return copy;
}

LP_EXPORT LP_NOINSTR int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction a;

	if (!atomic_load_explicit(&armed, memory_order_relaxed))
		return sigaction_real()(sig, act, old);
	if (sig == SIGTRAP) {
		/* the program's action is kept; the runtime's handler stays */
		pthread_mutex_lock(&action_lock);
		if (old)
			*old = prog_action;
		if (act)
			prog_action = *act;
		pthread_mutex_unlock(&action_lock);
		return 0;
	}
	if (act && sigismember(&act->sa_mask, SIGTRAP)) {
		a = *act;
		sigdelset(&a.sa_mask, SIGTRAP);
		act = &a;
	}
	return sigaction_real()(sig, act, old);
}

LP_EXPORT LP_NOINSTR void (*signal(int sig, void (*handler)(int)))(int)
{
	struct sigaction a, old;

	memset(&a, 0, sizeof(a));
	a.sa_handler = handler;
	a.sa_flags = SA_RESTART;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, sig);
	if (sigaction(sig, &a, &old))
		return SIG_ERR;
	return old.sa_handler;
}

LP_EXPORT LP_NOINSTR int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	return sigprocmask_real()(how, how == SIG_UNBLOCK ? set : without_trap(set, &copy), old);
}

LP_EXPORT LP_NOINSTR int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	return pthread_sigmask_real()(how, how == SIG_UNBLOCK ? set : without_trap(set, &copy), old);
}

LP_EXPORT LP_NOINSTR int sigsuspend(const sigset_t *set)
{
	sigset_t copy;

	return sigsuspend_real()(without_trap(set, &copy));
}

LP_EXPORT LP_NOINSTR int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *set)
{
	sigset_t copy;

	return ppoll_real()(fds, n, t, without_trap(set, &copy));
}

LP_EXPORT LP_NOINSTR int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *set)
{
	sigset_t copy;

	return pselect_real()(n, r, w, e, t, without_trap(set, &copy));
}

#else

LP_NOINSTR void lp_dyntrap_arm(void)
{
}

#endif
