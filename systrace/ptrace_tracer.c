/* The ptrace backend's tracer thread: starts (or attaches to) the program,
 * follows its threads, forks and execs, and turns the syscall stops into
 * records for the queue.  A seccomp-bpf filter makes only the selected
 * syscalls stop the tracee, unless the tree must survive a detach
 * (keep_running).  See ptrace_impl.h for what runs on which thread.
 *
 * Job control: a tracee started with PTRACE_TRACEME cannot be held in a
 * group-stop with PTRACE_LISTEN, and a tracee held in a ptrace-stop would
 * not wake on SIGCONT.  So a group-stop (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU
 * delivered to the program) is resumed at once: a traced program does not
 * stop for job control, but it never hangs either, and SIGCONT passes
 * through as any other signal. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/progpath.h"
#include "systrace/ptrace_impl.h"
#include "systrace/ptrace_seccomp.h"

/* Rescans of /proc/<pid>/task while attaching, for threads born meanwhile. */
#define PT_ATTACH_PASSES 16

#define PT_SYSCALL_SIG (SIGTRAP | 0x80)
#define PT_OPTIONS                                                                                                     \
	(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | \
	 PTRACE_O_TRACESECCOMP)

/* The child's report when it cannot start the program. */
enum pt_child_stage {
	PT_CHILD_TRACEME = 1,
	PT_CHILD_SECCOMP = 2,
	PT_CHILD_EXEC = 3,
};
struct pt_child_err {
	int stage, err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the queue and the task table, under the lock ---- */

/* Queues one record of task t, or counts it lost.  Called at every
 * recorded stop: one lock, no allocation once the buffers have grown. */
static bool queue_push(struct pt *pt, struct pt_task *t, struct pt_entry *e, const uint64_t *ips, const char *str)
{
	bool ok;

	pthread_mutex_lock(&pt->lock);
	pt->stops_pub = pt->stops;
	ok = pt_queue_push(&pt->queue, &pt->lock, &pt->cond, e, ips, str, &t->lost);
	pthread_mutex_unlock(&pt->lock);
	return ok;
}

static void queue_lose(struct pt *pt, struct pt_task *t)
{
	pthread_mutex_lock(&pt->lock);
	pt_queue_lose(&pt->queue, &t->lost);
	pthread_mutex_unlock(&pt->lock);
}

/* Under the lock: queues a lost marker for the task's unreported losses. */
static void queue_put_lost(struct pt *pt, struct pt_task *t, bool force)
{
	pt_queue_put_lost(&pt->queue, (uint32_t)(t->tgid ? t->tgid : t->tid), (uint32_t)t->tid, &t->lost, force);
}

static struct pt_task *task_add(struct pt *pt, pid_t tid, pid_t tgid, uint32_t flags, bool started)
{
	struct pt_task *t = pt_task_new(tid, tgid, flags, started);
	int r;

	if (!t)
		return NULL;
	pthread_mutex_lock(&pt->lock);
	r = pt_tasks_add(&pt->tasks, t);
	pthread_mutex_unlock(&pt->lock);
	if (r < 0) {
		free(t);
		return NULL;
	}
	return t;
}

/* Forgets a task that exited, was detached or changed its tid in an exec;
 * its unreported losses are queued even when the queue is full. */
static void task_remove(struct pt *pt, struct pt_task *t)
{
	pthread_mutex_lock(&pt->lock);
	queue_put_lost(pt, t, true);
	pt_tasks_del(&pt->tasks, t);
	pthread_mutex_unlock(&pt->lock);
	free(t);
}

static void task_start(struct pt *pt, struct pt_task *t)
{
	pthread_mutex_lock(&pt->lock);
	t->started = true;
	pthread_mutex_unlock(&pt->lock);
}

/* ---- records ---- */

static bool record_enter(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	const struct sys_info *si = sys_info(pt->arch, c->nr);
	uint64_t ips[SYSREC_IPS_MAX];
	struct pt_entry e;

	memset(&e, 0, sizeof(e));
	e.kind = SYSREC_ENTER;
	e.arch = (uint8_t)pt->arch;
	e.pid = pt_task_pid(t);
	e.tid = (uint32_t)t->tid;
	e.nr = c->nr;
	e.ns = pt->now;
	memcpy(e.args, c->args, sizeof(e.args));
	ips[0] = c->ip;
	e.nips = (uint16_t)(1 + pt_reader_stack(&pt->reader, t->tid, ips + 1, SYSREC_IPS_MAX - 1));
	e.str_len = PT_NO_STR;
	for (unsigned i = 0; si && i < 6; i++) {
		if (si->arg[i] == SYS_ARG_PATH) {
			ssize_t n = pt_reader_mem(&pt->reader, t->tid, c->args[i], pt->str, sizeof(pt->str));

			if (n >= 0) {
				const char *nul = memchr(pt->str, '\0', (size_t)n);

				e.str_len = (uint32_t)(nul ? nul - pt->str : n);
			}
			break;
		}
	}
	return queue_push(pt, t, &e, ips, pt->str);
}

static void record_exit(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	struct pt_entry e;

	memset(&e, 0, sizeof(e));
	e.kind = SYSREC_EXIT;
	e.arch = (uint8_t)pt->arch;
	e.pid = pt_task_pid(t);
	e.tid = (uint32_t)t->tid;
	e.nr = t->nr;
	e.ns = pt->now;
	e.ret = c->ret;
	e.str_len = PT_NO_STR;
	queue_push(pt, t, &e, NULL, NULL);
}

/* ---- stops ---- */

/* The next resume will detach the task: pt_release asked for a detach and
 * no SIGSTOP of ours is on its way to it. */
static bool task_detaching(struct pt *pt, struct pt_task *t)
{
	bool pending;

	if (atomic_load(&pt->stopping) != PT_STOP_DETACH)
		return false;
	pthread_mutex_lock(&pt->lock);
	pending = t->stop_sent;
	pthread_mutex_unlock(&pt->lock);
	return !pending;
}

/* Lets the task go on, delivering `sig`: to its next syscall exit when a
 * call is in progress or every syscall is watched, else to the next stop
 * the filter asks for.  When detaching, detaches it instead. */
static void task_resume(struct pt *pt, struct pt_task *t, int sig)
{
	int req = !pt->seccomp || (t->flags & PT_IN_SYSCALL) ? PTRACE_SYSCALL : PTRACE_CONT;

	if (task_detaching(pt, t)) {
		pt_req(PTRACE_DETACH, t->tid, 0, (uintptr_t)sig);
		task_remove(pt, t);
		return;
	}
	/* ESRCH: killed meanwhile; its death is reported next */
	pt_req(req, t->tid, 0, (uintptr_t)sig);
}

/* A call starts: records it when selected. */
static void call_enter(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	t->flags = (t->flags & ~(uint32_t)(PT_RECORDING | PT_ENTER_LOST)) | PT_IN_SYSCALL;
	t->nr = c->nr;
	if (c->compat)
		return;
	if (t->flags & PT_PRELUDE) {
		if (c->nr != SYS_execve && c->nr != SYS_execveat)
			return;
		t->flags &= ~(uint32_t)PT_PRELUDE;
	}
	if (!sys_set_has(&pt->cfg.filter, c->nr) || task_detaching(pt, t))
		return;
	t->flags |= record_enter(pt, t, c) ? PT_RECORDING : PT_ENTER_LOST;
}

static void call_exit(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	if (t->flags & PT_RECORDING)
		record_exit(pt, t, c);
	else if (t->flags & PT_ENTER_LOST)
		queue_lose(pt, t);
	t->flags &= ~(uint32_t)(PT_IN_SYSCALL | PT_RECORDING | PT_ENTER_LOST);
}

/* PTRACE_EVENT_SECCOMP: a selected call is entering.  Since Linux 4.8 the
 * next stop after PTRACE_SYSCALL is its syscall-exit-stop; before, a
 * syscall-entry-stop came first (PT_ENTRY_DUE). */
static void seccomp_stop(struct pt *pt, struct pt_task *t)
{
	struct pt_call c;

	if (!pt_reader_call(&pt->reader, t->tid, &c) && !c.compat) {
		call_enter(pt, t, &c);
		if (pt->old_order)
			t->flags |= PT_ENTRY_DUE;
	}
	task_resume(pt, t, 0);
}

static void syscall_stop(struct pt *pt, struct pt_task *t)
{
	struct pt_call c;
	bool entry;

	if (pt_reader_call(&pt->reader, t->tid, &c) < 0) {
		task_resume(pt, t, 0);
		return;
	}
	if (c.op == PT_INFO_ENTRY || c.op == PT_INFO_EXIT)
		entry = c.op == PT_INFO_ENTRY;
	else if (pt->seccomp)
		entry = t->flags & PT_ENTRY_DUE;
	else
		entry = !(t->flags & PT_IN_SYSCALL);
	if (pt->seccomp && entry) {
		/* the entry-stop after a seccomp stop (Linux < 4.8) */
		t->flags &= ~(uint32_t)PT_ENTRY_DUE;
	} else if (entry) {
		call_enter(pt, t, &c);
	} else if (t->flags & PT_IN_SYSCALL) {
		/* an exit with no entry seen (after an attach) is ignored */
		call_exit(pt, t, &c);
	}
	task_resume(pt, t, 0);
}

/* A fork, vfork or clone event in the parent: the new task is traced
 * already and its first stop may come before or after this. */
static void task_born(struct pt *pt, struct pt_task *parent, pid_t tid, int event)
{
	struct pt_task *t = pt_tasks_find(&pt->tasks, tid);
	pid_t tgid = tid;

	if (event == PTRACE_EVENT_CLONE) {
		/* a thread, or a process made by clone without SIGCHLD */
		tgid = pt_proc_tgid(tid);
		if (tgid <= 0)
			tgid = (pid_t)pt_task_pid(parent);
	}
	if (t) {
		t->tgid = tgid;
		return;
	}
	if (!task_add(pt, tid, tgid, 0, false))
		fprintf(stderr, "layerprof: ptrace: out of memory for task %d: not traced\n", (int)tid);
}

/* PTRACE_EVENT_EXEC in task t, now the group's leader; `former` is the tid
 * the execing thread had (another thread than the leader may call execve:
 * the leader is gone and the execing thread takes its tid).  Its call in
 * progress (the execve) continues under the new tid. */
static void task_exec(struct pt *pt, struct pt_task *t, pid_t former)
{
	if (former != t->tid) {
		struct pt_task *old = pt_tasks_find(&pt->tasks, former);

		if (old) {
			t->flags = old->flags;
			t->nr = old->nr;
			pthread_mutex_lock(&pt->lock);
			t->lost += old->lost;
			old->lost = 0;
			t->stop_sent = old->stop_sent;
			pthread_mutex_unlock(&pt->lock);
			task_remove(pt, old);
		}
	}
	t->tgid = t->tid;
	t->flags &= ~(uint32_t)PT_PRELUDE;
	if (t->tid == pt->main_pid && pt->spawning) {
		pt->spawning = false;
		close(pt->errpipe);
		pt->errpipe = -1;
		pthread_mutex_lock(&pt->lock);
		pt->setup = 1;
		pthread_cond_broadcast(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
	}
}

static void event_stop(struct pt *pt, struct pt_task *t, int event)
{
	unsigned long msg = 0;

	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		if (!pt_req(PTRACE_GETEVENTMSG, t->tid, 0, (uintptr_t)&msg))
			task_born(pt, t, (pid_t)msg, event);
		break;
	case PTRACE_EVENT_EXEC:
		if (!pt_req(PTRACE_GETEVENTMSG, t->tid, 0, (uintptr_t)&msg))
			task_exec(pt, t, (pid_t)msg);
		break;
	case PTRACE_EVENT_SECCOMP:
		seccomp_stop(pt, t);
		return;
	case PTRACE_EVENT_STOP:
		/* seized tasks: the first stop, an interrupt or a group-stop */
		if (!t->started)
			task_start(pt, t);
		break;
	default:
		break;
	}
	task_resume(pt, t, 0);
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* A signal-delivery-stop or a group-stop. */
static void signal_stop(struct pt *pt, struct pt_task *t, int sig)
{
	siginfo_t si;
	bool ours = false;

	if (!t->started) {
		task_start(pt, t);
		if (sig == SIGSTOP && !pt->seize) {
			/* the SIGSTOP every new task begins with */
			task_resume(pt, t, 0);
			return;
		}
	}
	if (sig == SIGSTOP && atomic_load(&pt->stopping) == PT_STOP_DETACH) {
		pthread_mutex_lock(&pt->lock);
		ours = t->stop_sent;
		t->stop_sent = false;
		pthread_mutex_unlock(&pt->lock);
	}
	if (ours) {
		task_resume(pt, t, 0);
		return;
	}
	if (is_stop_signal(sig) && pt_req(PTRACE_GETSIGINFO, t->tid, 0, (uintptr_t)&si) < 0 && errno == EINVAL) {
		/* a group-stop: resumed, see the top of the file */
		task_resume(pt, t, 0);
		return;
	}
	task_resume(pt, t, sig);
}

/* The child ended before its exec: says why in pt->err. */
static void spawn_failed(struct pt *pt, int status)
{
	struct pt_child_err ce;
	const char *what = pt->argv[0];
	int r;

	if (read(pt->errpipe, &ce, sizeof(ce)) == (ssize_t)sizeof(ce) && ce.err > 0) {
		r = -ce.err;
		if (ce.stage == PT_CHILD_TRACEME)
			snprintf(pt->err, sizeof(pt->err), "PTRACE_TRACEME: %s", strerror(ce.err));
		else if (ce.stage == PT_CHILD_SECCOMP)
			snprintf(pt->err, sizeof(pt->err), "cannot install the seccomp filter: %s", strerror(ce.err));
		else
			snprintf(pt->err, sizeof(pt->err), "cannot run '%s': %s", what, strerror(ce.err));
	} else {
		r = -ECHILD;
		snprintf(pt->err, sizeof(pt->err), "'%s' ended before it started (wait status %#x)", what,
		         (unsigned)status);
	}
	pt->spawning = false;
	close(pt->errpipe);
	pt->errpipe = -1;
	pthread_mutex_lock(&pt->lock);
	pt->setup = r;
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
}

static void task_gone(struct pt *pt, pid_t tid, int status)
{
	struct pt_task *t = pt_tasks_find(&pt->tasks, tid);

	if (tid == pt->main_pid) {
		pthread_mutex_lock(&pt->lock);
		pt->main_exited = true;
		pt->main_status = status;
		pthread_mutex_unlock(&pt->lock);
		if (pt->spawning)
			spawn_failed(pt, status);
	}
	if (t)
		task_remove(pt, t);
}

static void pt_handle(struct pt *pt, pid_t tid, int status)
{
	struct pt_task *t;
	int sig, event;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		task_gone(pt, tid, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	pt->now = now_ns();
	if (!(++pt->stops & 1023)) {
		pthread_mutex_lock(&pt->lock);
		pt->stops_pub = pt->stops;
		pthread_mutex_unlock(&pt->lock);
	}
	t = pt_tasks_find(&pt->tasks, tid);
	if (!t) {
		/* a new task whose first stop came before its parent's event */
		t = task_add(pt, tid, 0, 0, false);
		if (!t) {
			pt_req(PTRACE_DETACH, tid, 0, 0);
			return;
		}
	}
	if (atomic_load(&pt->stopping) == PT_STOP_KILL) {
		/* SIGKILL ends the stop; the death is reported next */
		kill(tid, SIGKILL);
		return;
	}
	sig = WSTOPSIG(status);
	event = (unsigned)status >> 16;
	if (sig == PT_SYSCALL_SIG)
		syscall_stop(pt, t);
	else if (event)
		event_stop(pt, t, event);
	else
		signal_stop(pt, t, sig);
}

/* ---- starting ---- */

/* In the forked child: only async-signal-safe calls until the exec. */
static void __attribute__((noreturn)) child_fail(int fd, int stage)
{
	struct pt_child_err ce = { stage, errno };

	if (write(fd, &ce, sizeof(ce)) < 0)
		_exit(127);
	_exit(127);
}

/* The child stops for its tracer before it installs the filter: until the
 * tracer has set PTRACE_O_TRACESECCOMP, a call the filter selects would
 * fail with ENOSYS, and raise() itself makes calls a filter may select. */
static void __attribute__((noreturn)) child_run(struct pt *pt, int fd)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
		child_fail(fd, PT_CHILD_TRACEME);
	raise(SIGSTOP);
	if (pt->seccomp && pt_seccomp_install(&pt->prog) < 0)
		child_fail(fd, PT_CHILD_SECCOMP);
	errno = -progpath_exec(pt->path, pt->argv, pt->envp);
	child_fail(fd, PT_CHILD_EXEC);
}

static int options(const struct pt *pt)
{
	return PT_OPTIONS | (pt->cfg.keep_running ? 0 : PTRACE_O_EXITKILL);
}

/* Forks the child and handles its first stop; the loop then runs it up to
 * its exec, which ends the setup. */
static int pt_do_spawn(struct pt *pt)
{
	int fds[2], status, r;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(pt->err, sizeof(pt->err), "cannot create a pipe: %s", strerror(-r));
		return r;
	}
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child_run(pt, fds[1]);
	}
	if (pid < 0) {
		r = -errno;
		snprintf(pt->err, sizeof(pt->err), "cannot fork: %s", strerror(-r));
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	close(fds[1]);
	pt->errpipe = fds[0];
	pt->main_pid = pid;
	while (waitpid(pid, &status, __WALL) < 0) {
		if (errno != EINTR) {
			r = -errno;
			snprintf(pt->err, sizeof(pt->err), "cannot wait for the child: %s", strerror(-r));
			goto kill;
		}
	}
	if (!WIFSTOPPED(status)) {
		pt->spawning = true;
		spawn_failed(pt, status);
		return pt->setup;
	}
	if (pt_req(PTRACE_SETOPTIONS, pid, 0, (uintptr_t)options(pt)) < 0) {
		r = -errno;
		snprintf(pt->err, sizeof(pt->err), "PTRACE_SETOPTIONS: %s", strerror(-r));
		goto kill;
	}
	if (!task_add(pt, pid, pid, pt->seccomp ? 0 : PT_PRELUDE, true)) {
		r = -ENOMEM;
		snprintf(pt->err, sizeof(pt->err), "out of memory");
		goto kill;
	}
	pt->spawning = true;
	pt_req(pt->seccomp ? PTRACE_CONT : PTRACE_SYSCALL, pid, 0, 0);
	return 0;
kill:
	/* the loop reaps it (not spawning: the reason stays) */
	kill(pid, SIGKILL);
	return r;
}

/* Are we (the tracer thread) tracing `tid` already?  A thread born while
 * attaching is traced from its birth (PTRACE_O_TRACECLONE). */
static bool traced_by_us(pid_t tid)
{
	return pt_proc_status(tid, "\nTracerPid:") == (long)syscall(SYS_gettid);
}

/* Seizes every thread of the process, rescanning for threads born
 * meanwhile, and interrupts each so that the loop can start watching its
 * syscalls.  On failure the loop detaches what was seized. */
static int pt_do_attach(struct pt *pt)
{
	pid_t pid = pt->attach_pid;
	char path[64];
	int r = 0;

	pt->main_pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (int pass = 0; pass < PT_ATTACH_PASSES; pass++) {
		DIR *d = opendir(path);
		struct dirent *de;
		int added = 0;

		if (!d) {
			r = -errno;
			snprintf(pt->err, sizeof(pt->err), "cannot list the threads of %d: %s", (int)pid, strerror(-r));
			goto fail;
		}
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);

			if (tid <= 0 || pt_tasks_find(&pt->tasks, tid))
				continue;
			if (pt_req(PTRACE_SEIZE, tid, 0, (uintptr_t)options(pt)) < 0) {
				if (errno == ESRCH)
					continue;
				if (errno != EPERM || !traced_by_us(tid)) {
					r = -errno;
					snprintf(pt->err, sizeof(pt->err), "cannot attach to thread %d of %d: %s",
					         (int)tid, (int)pid, strerror(-r));
					closedir(d);
					goto fail;
				}
			} else {
				pt_req(PTRACE_INTERRUPT, tid, 0, 0);
			}
			if (!task_add(pt, tid, pid, 0, false)) {
				r = -ENOMEM;
				snprintf(pt->err, sizeof(pt->err), "out of memory");
				closedir(d);
				goto fail;
			}
			added++;
		}
		closedir(d);
		if (!added)
			break;
	}
	if (pt->tasks.n)
		return 0;
	r = -ESRCH;
	snprintf(pt->err, sizeof(pt->err), "no such process: %d", (int)pid);
fail:
	atomic_store(&pt->stopping, PT_STOP_DETACH);
	return r;
}

void *pt_tracer_run(void *arg)
{
	struct pt *pt = arg;
	sigset_t all;
	int r;

	/* signals for the program go to its other threads, except SIGCHLD:
	 * every ptrace stop sends this thread one, which the kernel drops at
	 * once when it is ignored (the default) and not blocked; blocked, it
	 * would be queued and wake another thread on each stop */
	sigfillset(&all);
	sigdelset(&all, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	r = pt->attach_pid ? pt_do_attach(pt) : pt_do_spawn(pt);
	if (r < 0 || !pt->spawning) {
		pthread_mutex_lock(&pt->lock);
		pt->setup = r < 0 ? r : 1;
		pthread_cond_broadcast(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
	}
	for (;;) {
		int status;
		pid_t tid;

		if (atomic_load(&pt->stopping) == PT_STOP_DETACH && !pt->tasks.n)
			break;
		/* __WNOTHREAD: only this thread's children and tracees, never
		 * other children of the process */
		tid = waitpid(-1, &status, __WALL | __WNOTHREAD);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: every tracee is gone */
		}
		pt_handle(pt, tid, status);
	}
	pthread_mutex_lock(&pt->lock);
	for (struct pt_task *t; (t = pt_tasks_pop(&pt->tasks));) {
		/* gone without a report (ECHILD): nothing left to trace */
		queue_put_lost(pt, t, true);
		free(t);
	}
	pt->stops_pub = pt->stops;
	pt->finished = true;
	if (!pt->setup) {
		pt->setup = -ECHILD;
		snprintf(pt->err, sizeof(pt->err), "the tracer ended before the program started");
	}
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
	if (pt->errpipe >= 0)
		close(pt->errpipe);
	pt->errpipe = -1;
	return NULL;
}
