/* The signal group: signals to this process (the handler's run included:
 * a signal to oneself is delivered before kill returns), to another
 * process, to no process (ESRCH is the expected result), round trips and
 * wake-ups, the signal mask and the interval timers.  SIGUSR1 and SIGUSR2
 * only, handled by an empty handler. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oscal/suite.h"

/* A pid no process has: above Linux's largest pid_max (2^22). */
#define NO_PID ((pid_t)0x3ffffff0)

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

static volatile sig_atomic_t caught;
static sigset_t roundtrip_old_mask; /* restored by done_roundtrip */

static void on_usr(int sig)
{
	(void)sig;
	caught++;
}

static int handle_usr(struct suite_ctx *c)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0)
		return suite_err(c, "sigaction SIGUSR1, SIGUSR2");
	return 0;
}

static int one_kill_self(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = kill(getpid(), SIGUSR1);
	T1;
	return r < 0 ? suite_err(c, "kill SIGUSR1 of this process") : 0;
}

static int one_kill_probe(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = kill(getpid(), 0);
	T1;
	return r < 0 ? suite_err(c, "kill 0 of this process") : 0;
}

static int one_kill_none(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = kill(NO_PID, SIGUSR1);
	T1;
	if (r == 0) {
		c->what = "kill of a pid no process can have succeeded";
		return -EIO;
	}
	return errno == ESRCH ? 0 : suite_err(c, "kill of a pid no process has");
}

static int one_raise(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = raise(SIGUSR1);
	T1;
	return r ? suite_err(c, "raise SIGUSR1") : 0;
}

static int one_pthread_kill_self(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_kill(pthread_self(), SIGUSR1);
	T1;
	if (r) {
		errno = r;
		return suite_err(c, "pthread_kill SIGUSR1 of this thread");
	}
	return 0;
}

static int one_sigqueue(struct suite_ctx *c, uint64_t *ns)
{
	union sigval v = { .sival_int = 1 };
	T0;
	int r = sigqueue(getpid(), SIGUSR1, v);
	T1;
	return r < 0 ? suite_err(c, "sigqueue SIGUSR1 to this process") : 0;
}

static int one_sigaction(struct suite_ctx *c, uint64_t *ns)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr;
	sigemptyset(&sa.sa_mask);
	T0;
	int r = sigaction(SIGUSR1, &sa, NULL);
	T1;
	return r < 0 ? suite_err(c, "sigaction SIGUSR1") : 0;
}

static int one_sigprocmask(struct suite_ctx *c, uint64_t *ns)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	T0;
	int r = sigprocmask(SIG_BLOCK, &s, NULL);
	T1;
	if (r < 0)
		return suite_err(c, "sigprocmask SIG_BLOCK");
	return sigprocmask(SIG_UNBLOCK, &s, NULL) < 0 ? suite_err(c, "sigprocmask SIG_UNBLOCK") : 0;
}

static int one_pthread_sigmask(struct suite_ctx *c, uint64_t *ns)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	T0;
	int r = pthread_sigmask(SIG_BLOCK, &s, NULL);
	T1;
	if (r) {
		errno = r;
		return suite_err(c, "pthread_sigmask SIG_BLOCK");
	}
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	return 0;
}

static int one_sigpending(struct suite_ctx *c, uint64_t *ns)
{
	sigset_t s;
	T0;
	int r = sigpending(&s);
	T1;
	return r < 0 ? suite_err(c, "sigpending") : 0;
}

/* ------------------------------------------------------------ other processes */

static void kill_child(struct suite_ctx *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		suite_child_forget(c->pid);
		c->pid = 0;
	}
}

/* A child that does nothing but take SIGUSR1 with the empty handler. */
static int setup_other(struct suite_ctx *c)
{
	int err = handle_usr(c);
	if (err)
		return err;
	c->pid = fork();
	if (c->pid < 0)
		return suite_err(c, "fork");
	if (c->pid == 0) {
		for (;;)
			pause();
	}
	suite_child_add(c->pid);
	return 0;
}

static void done_child(struct suite_ctx *c)
{
	kill_child(c);
}

static int one_kill_other(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = kill(c->pid, SIGUSR1);
	T1;
	return r < 0 ? suite_err(c, "kill SIGUSR1 of another process") : 0;
}

/* A child that answers each SIGUSR1 by a SIGUSR2 to its parent; both
 * signals blocked and taken by sigwaitinfo. */
static int setup_roundtrip(struct suite_ctx *c)
{
	sigset_t s;
	int err = handle_usr(c);
	if (err)
		return err;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &s, &roundtrip_old_mask) < 0)
		return suite_err(c, "sigprocmask SIG_BLOCK");
	c->len = 1; /* the mask to restore is kept */
	c->pid = fork();
	if (c->pid < 0)
		return suite_err(c, "fork");
	if (c->pid == 0) {
		sigset_t one;
		pid_t parent = getppid();
		sigemptyset(&one);
		sigaddset(&one, SIGUSR1);
		for (;;)
			if (sigwaitinfo(&one, NULL) == SIGUSR1)
				kill(parent, SIGUSR2);
	}
	suite_child_add(c->pid);
	return 0;
}

static void done_roundtrip(struct suite_ctx *c)
{
	kill_child(c);
	if (c->len) {
		struct timespec zero = { 0, 0 };
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGUSR2);
		while (sigtimedwait(&s, NULL, &zero) > 0)
			;
		sigprocmask(SIG_SETMASK, &roundtrip_old_mask, NULL);
	}
}

static int one_roundtrip(struct suite_ctx *c, uint64_t *ns)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	T0;
	if (kill(c->pid, SIGUSR1) < 0)
		return suite_err(c, "kill SIGUSR1 of the other process");
	int r;
	while ((r = sigwaitinfo(&s, NULL)) < 0 && errno == EINTR)
		;
	T1;
	return r == SIGUSR2 ? 0 : suite_err(c, "sigwaitinfo SIGUSR2");
}

/* ------------------------------------------------------------ another thread */

struct sig_waiter {
	pthread_t th;
	pid_t tid;
	atomic_int ready, returned, stop;
	uint64_t ret;
};

static void *sig_waiter_main(void *arg)
{
	struct sig_waiter *w = arg;
	sigset_t s;
	int sig;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	w->tid = suite_gettid();
	for (;;) {
		atomic_fetch_add(&w->ready, 1);
		if (sigwait(&s, &sig))
			break;
		w->ret = suite_now();
		if (atomic_load(&w->stop))
			break;
		atomic_fetch_add(&w->returned, 1);
	}
	return NULL;
}

static int setup_thread_wake(struct suite_ctx *c)
{
	struct sig_waiter *w;
	sigset_t s, old;
	int r;
	if (!(w = calloc(1, sizeof(*w))))
		return suite_err(c, "calloc");
	/* the new thread starts with SIGUSR2 blocked (sigwait takes it) */
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &s, &old);
	r = pthread_create(&w->th, NULL, sig_waiter_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		free(w);
		errno = r;
		return suite_err(c, "pthread_create");
	}
	c->priv = w;
	return 0;
}

static void done_thread_wake(struct suite_ctx *c)
{
	struct sig_waiter *w = c->priv;
	if (!w)
		return;
	atomic_store(&w->stop, 1);
	pthread_kill(w->th, SIGUSR2);
	pthread_join(w->th, NULL);
	free(w);
	c->priv = NULL;
}

static int one_thread_wake(struct suite_ctx *c, uint64_t *ns)
{
	struct sig_waiter *w = c->priv;
	int want = atomic_load(&w->returned) + 1, r;
	while (atomic_load(&w->ready) < want)
		sched_yield();
	suite_wait_sleeping(w->tid, 1);
	uint64_t t0 = suite_now();
	if ((r = pthread_kill(w->th, SIGUSR2))) {
		errno = r;
		return suite_err(c, "pthread_kill SIGUSR2");
	}
	while (atomic_load(&w->returned) < want)
		sched_yield();
	*ns = w->ret - t0;
	return 0;
}

/* ------------------------------------------------------------ timers */

static int one_alarm(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	unsigned r = alarm(1000);
	T1;
	(void)r;
	alarm(0);
	return 0;
}

static int one_setitimer(struct suite_ctx *c, uint64_t *ns)
{
	struct itimerval on = { { 0, 0 }, { 1000, 0 } }, off = { { 0, 0 }, { 0, 0 } };
	T0;
	int r = setitimer(ITIMER_REAL, &on, NULL);
	T1;
	if (r < 0)
		return suite_err(c, "setitimer ITIMER_REAL");
	return setitimer(ITIMER_REAL, &off, NULL) < 0 ? suite_err(c, "setitimer (disarm)") : 0;
}

static int one_getitimer(struct suite_ctx *c, uint64_t *ns)
{
	struct itimerval v;
	T0;
	int r = getitimer(ITIMER_REAL, &v);
	T1;
	return r < 0 ? suite_err(c, "getitimer ITIMER_REAL") : 0;
}

#define G(name, call, cond, setup, one, done, desc)                                   \
	{                                                                             \
		name, call, cond, "signal", "", "", SUITE_NOX, setup, one, done, desc \
	}

const struct suite_def suite_sig[] = {
	G("kill-self", "kill", "self", handle_usr, one_kill_self, NULL,
	  "kill(2) SIGUSR1 of this process, its empty handler run before kill returns"),
	G("kill-other", "kill", "other", setup_other, one_kill_other, done_child,
	  "kill(2) SIGUSR1 of another process (which handles it)"),
	G("kill-none", "kill", "none", NULL, one_kill_none, NULL,
	  "kill(2) of a pid no process has (ESRCH is its result)"),
	G("kill-probe", "kill", "probe", NULL, one_kill_probe, NULL, "kill(2) with signal 0 of this process"),
	G("raise", "raise", "", handle_usr, one_raise, NULL, "raise(3) SIGUSR1, its empty handler run"),
	G("pthread_kill-self", "pthread_kill", "self", handle_usr, one_pthread_kill_self, NULL,
	  "pthread_kill(3) SIGUSR1 of this thread, its empty handler run"),
	G("pthread_kill-wake", "pthread_kill", "wake", setup_thread_wake, one_thread_wake, done_thread_wake,
	  "pthread_kill(3) SIGUSR2 to a thread in sigwait(3), to its return there"),
	G("sigqueue-self", "sigqueue", "self", handle_usr, one_sigqueue, NULL,
	  "sigqueue(3) SIGUSR1 to this process, its empty handler run"),
	G("signal-roundtrip", "kill", "roundtrip", setup_roundtrip, one_roundtrip, done_roundtrip,
	  "kill(2) SIGUSR1 of another process that answers SIGUSR2, to sigwaitinfo(2)'s return here"),
	G("sigaction", "sigaction", "", NULL, one_sigaction, NULL, "sigaction(2) of SIGUSR1's handler"),
	G("sigprocmask", "sigprocmask", "", NULL, one_sigprocmask, NULL,
	  "sigprocmask(2) SIG_BLOCK of SIGUSR2 (the unblock not timed)"),
	G("pthread_sigmask", "pthread_sigmask", "", NULL, one_pthread_sigmask, NULL,
	  "pthread_sigmask(3) SIG_BLOCK of SIGUSR2 (the unblock not timed)"),
	G("sigpending", "sigpending", "", NULL, one_sigpending, NULL, "sigpending(2)"),
	G("alarm", "alarm", "", NULL, one_alarm, NULL, "alarm(2) of 1000 s (alarm(0) not timed)"),
	G("setitimer", "setitimer", "", NULL, one_setitimer, NULL,
	  "setitimer(2) ITIMER_REAL of 1000 s (the disarm not timed)"),
	G("getitimer", "getitimer", "", NULL, one_getitimer, NULL, "getitimer(2) ITIMER_REAL"),
};
const size_t suite_sig_n = sizeof(suite_sig) / sizeof(suite_sig[0]);
