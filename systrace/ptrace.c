/* The ptrace backend of the syscall tracer, its entry points: one tracer
 * thread (ptrace_tracer.c) starts or attaches to the program and queues its
 * syscalls as records; pt_poll hands them out on the caller's thread, and
 * pt_release stops the thread.  Which thread does what, and what the lock
 * guards: ptrace_impl.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "systrace/backend.h"
#include "systrace/ptrace_arch.h"
#include "systrace/ptrace_impl.h"
#include "systrace/ptrace_seccomp.h"

static void pt_free(struct pt *pt)
{
	if (!pt)
		return;
	pt_tasks_release(&pt->tasks);
	pt_queue_release(&pt->queue);
	pt_seccomp_release(&pt->prog);
	pthread_cond_destroy(&pt->cond);
	pthread_mutex_destroy(&pt->lock);
	free(pt);
}

static struct pt *pt_new(const struct systrace *st)
{
	struct pt *pt = calloc(1, sizeof(*pt));
	pthread_condattr_t ca;
	struct utsname u;
	int major = 0, minor = 0;

	if (!pt)
		return NULL;
	pt->cfg = st->cfg;
	pt->arch = sys_arch_native();
	pt->errpipe = -1;
	pt_reader_init(&pt->reader);
	if (!uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2)
		pt->old_order = major < 4 || (major == 4 && minor < 8);
	atomic_init(&pt->stopping, PT_STOP_NONE);
	pthread_mutex_init(&pt->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pt->cond, &ca);
	pthread_condattr_destroy(&ca);
	return pt;
}

/* Runs the tracer thread and waits for the end of its setup. */
static int pt_start(struct systrace *st, struct pt *pt, char *err, size_t errlen)
{
	int r = pthread_create(&pt->thread, NULL, pt_tracer_run, pt);

	if (r) {
		snprintf(err, errlen, "cannot start the tracer thread: %s", strerror(r));
		pt_free(pt);
		return -r;
	}
	pt->thread_started = true;
	pthread_mutex_lock(&pt->lock);
	while (!pt->setup)
		pthread_cond_wait(&pt->cond, &pt->lock);
	r = pt->setup;
	if (r < 0)
		snprintf(err, errlen, "%s", pt->err);
	pthread_mutex_unlock(&pt->lock);
	if (r < 0) {
		pthread_join(pt->thread, NULL);
		pt_free(pt);
		return r;
	}
	st->impl = pt;
	return 0;
}

int pt_probe(char *err, size_t errlen)
{
	int status, r;
	pid_t pid;

	if (!PT_AUDIT_ARCH) {
		snprintf(err, errlen, "no register access for this architecture");
		return -ENOSYS;
	}
	/* a trial child that asks to be traced and stops: under qemu-user or
	 * a seccomp policy without ptrace, PTRACE_TRACEME fails */
	pid = fork();
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(errno > 0 && errno < 126 ? errno : 126);
		raise(SIGSTOP);
		_exit(0);
	}
	if (pid < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot fork: %s", strerror(-r));
		return r;
	}
	while (waitpid(pid, &status, __WALL) < 0) {
		if (errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "cannot wait for the trial child: %s", strerror(-r));
			kill(pid, SIGKILL);
			return r;
		}
	}
	if (!WIFSTOPPED(status)) {
		r = WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : EPERM;
		snprintf(err, errlen, "ptrace is not available: PTRACE_TRACEME: %s", strerror(r));
		return -r;
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
		;
	return pt_seccomp_probe(err, errlen);
}

int pt_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen)
{
	struct pt *pt = pt_new(st);
	int r;

	if (!pt) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (st->cfg.held) {
		snprintf(err, errlen,
		         "the ptrace backend cannot hold the program before its exec for the dynamic "
		         "tracer: choose --syscalls=bpf or tracepoint");
		pt_free(pt);
		return -ENOTSUP;
	}
	pt->path = st->path;
	pt->argv = argv;
	pt->envp = envp ? envp : environ;
	pt->seccomp = !st->cfg.keep_running;
	pt->queue.full_wait_ms = st->cfg.full_wait_ms;
	if (pt->seccomp && pt_seccomp_build(&pt->cfg.filter, &pt->prog) < 0) {
		snprintf(err, errlen, "out of memory");
		pt_free(pt);
		return -ENOMEM;
	}
	r = pt_start(st, pt, err, errlen);
	if (!r)
		*pid = ((struct pt *)st->impl)->main_pid;
	return r;
}

int pt_attach(struct systrace *st, pid_t pid, char *err, size_t errlen)
{
	struct pt *pt;

	if (pid <= 0) {
		snprintf(err, errlen, "invalid pid %d", (int)pid);
		return -EINVAL;
	}
	pt = pt_new(st);
	if (!pt) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pt->attach_pid = pid;
	pt->seize = true;
	return pt_start(st, pt, err, errlen);
}

long pt_poll(struct systrace *st)
{
	struct pt *pt = st->impl;
	struct pt_buf b;
	uint64_t lost_nothread;
	long n;

	if (!pt)
		return 0;
	pthread_mutex_lock(&pt->lock);
	pt_queue_take(&pt->queue, &b, &lost_nothread);
	st->stats.lost = pt->queue.lost_total;
	st->stats.stops = pt->stops_pub;
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
	n = pt_queue_deliver(&pt->queue, &b, lost_nothread, &st->ops);
	st->stats.records += (uint64_t)n;
	return n;
}

bool pt_exited(struct systrace *st, int *status)
{
	struct pt *pt = st->impl;
	bool done;

	if (!pt)
		return false;
	pthread_mutex_lock(&pt->lock);
	done = pt->main_exited;
	if (done && status)
		*status = pt->main_status;
	pthread_mutex_unlock(&pt->lock);
	return done;
}

/* Wakes the tracer thread into killing or detaching every task.  Killing:
 * SIGKILL to each, and the tracer kills whatever else stops.  Detaching:
 * SIGSTOP (tkill) to each task that has had its first stop; the tracer
 * detaches it at that signal's stop, passing no signal, so that it goes on
 * running; a task not signalled is detached at its next stop.  A task
 * whose first stop is still to come is not signalled: its own SIGSTOP
 * would merge with ours and a second one could stop it after the detach. */
static void pt_stop_tasks(struct pt *pt)
{
	int mode = pt->cfg.keep_running ? PT_STOP_DETACH : PT_STOP_KILL;

	pthread_mutex_lock(&pt->lock);
	if (!pt->finished) {
		atomic_store(&pt->stopping, mode);
		for (size_t i = 0; i < pt->tasks.n; i++) {
			struct pt_task *t = pt->tasks.v[i];

			if (mode == PT_STOP_KILL)
				kill(t->tid, SIGKILL);
			else if (t->started && !t->stop_sent && !syscall(SYS_tkill, t->tid, SIGSTOP))
				t->stop_sent = true;
		}
	}
	pthread_mutex_unlock(&pt->lock);
}

void pt_release(struct systrace *st)
{
	struct pt *pt = st->impl;

	if (!pt)
		return;
	if (pt->thread_started) {
		pt_stop_tasks(pt);
		pthread_join(pt->thread, NULL);
	}
	pt_poll(st);
	pt_free(pt);
	st->impl = NULL;
}
