/* The ptrace backend's tracer thread (see bptrace_impl.h for what runs on
 * which thread): it seizes the program, follows its threads, forks and
 * execs, and turns each trap into an entry or an exit before stepping over
 * it.  The detach at the end is in bpdetach.c.
 *
 * Stepping over a trap: the original instruction goes back for one
 * PTRACE_SINGLESTEP, so every other thread of the address space that
 * runs code is stopped first (PTRACE_INTERRUPT), else one could pass the
 * entry untraced meanwhile.  What those threads report instead of the
 * interrupt's stop (a trap of their own, a signal, an exit) is kept as
 * their pending status and handled after the step.
 *
 * Job control: the tasks are seized, so a group-stop is held with
 * PTRACE_LISTEN and the program stops and continues as without us. */
#include <errno.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dyntrace/bptrace_impl.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- tasks ---- */

struct bp_task *task_find(struct bptrace *b, pid_t tid)
{
	for (size_t i = 0; i < b->ntasks; i++)
		if (b->tasks[i]->tid == tid)
			return b->tasks[i];
	return NULL;
}

struct bp_task *task_add(struct bptrace *b, pid_t tid, pid_t tgid)
{
	struct bp_task *t;

	if (b->ntasks == b->tasks_cap) {
		size_t cap = b->tasks_cap ? b->tasks_cap * 2 : 16;
		struct bp_task **v = realloc(b->tasks, cap * sizeof(*v));

		if (!v)
			return NULL;
		b->tasks = v;
		b->tasks_cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->tgid = tgid;
	t->run = BP_NEW;
	b->tasks[b->ntasks++] = t;
	return t;
}

void task_free(struct bptrace *b, struct bp_task *t)
{
	frames_drop(b, t);
	space_leave(t);
	if (t->has_pending)
		b->npending--;
	for (size_t i = 0; i < b->ntasks; i++)
		if (b->tasks[i] == t) {
			b->tasks[i] = b->tasks[--b->ntasks];
			break;
		}
	free(t->stack);
	free(t);
}

/* A wait status of task tid kept for later (the task made if unknown: a
 * new child whose parent's event is still to come).  An exit replaces a
 * stop kept before it. */
void task_keep(struct bptrace *b, pid_t tid, struct bp_task *t, int status)
{
	if (!t && !(t = task_add(b, tid, 0)))
		return;
	if (WIFSTOPPED(status))
		t->run = BP_STOPPED;
	if (!t->has_pending)
		b->npending++;
	t->has_pending = true;
	t->pending = status;
	t->pending_ns = now_ns();
}

void task_resume(struct bptrace *b, struct bp_task *t, int sig)
{
	(void)b;
	/* ESRCH: killed meanwhile; its death is reported next */
	ptrace(PTRACE_CONT, t->tid, 0, (void *)(uintptr_t)sig);
	t->run = BP_RUNNING;
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void task_gone(struct bptrace *b, pid_t tid, struct bp_task *t, int status)
{
	if (tid == b->main_pid) {
		pthread_mutex_lock(&b->lock);
		b->main_exited = true;
		b->main_status = status;
		pthread_mutex_unlock(&b->lock);
	}
	if (t)
		task_free(b, t);
}

/* ---- forks and execs ---- */

/* The thread group of tid from /proc, or 0. */
static pid_t proc_tgid(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* Whether two tasks share their memory (a clone with CLONE_VM but not
 * CLONE_THREAD); false when the kernel cannot tell (no kcmp). */
static bool same_memory(pid_t a, pid_t c)
{
	return syscall(SYS_kcmp, a, c, KCMP_VM, 0, 0) == 0;
}

/* A child process inherits the forking thread's open calls: its frames
 * (their return traps in the child's space), and a fork record with the
 * functions' addresses when there are any. */
static void inherit(struct bptrace *b, struct bp_task *parent, struct bp_task *c)
{
	uint64_t frames[UPROBES_INHERIT_MAX];
	uint32_t n = 0;

	for (uint32_t d = 0; d < parent->depth; d++) {
		const struct bp_frame *f = &parent->stack[d];

		frame_push(b, c, f->fn, f->sp, f->ret);
		if (n < UPROBES_INHERIT_MAX)
			frames[n++] = c->space->bias + b->sel.fn[f->fn].addr;
	}
	if (n && !b->detaching)
		bq_fork(b, (uint32_t)c->tgid, (uint32_t)c->tid, b->now, (uint32_t)parent->tgid, frames, n);
}

void task_born(struct bptrace *b, struct bp_task *parent, pid_t tid, int event)
{
	struct bp_task *c = task_find(b, tid);
	struct bp_space *s;
	pid_t tgid = tid;
	bool share;

	if (!c && !(c = task_add(b, tid, 0)))
		return;
	if (event == PTRACE_EVENT_CLONE) {
		/* a thread, or a process made by clone without SIGCHLD */
		tgid = proc_tgid(tid);
		if (tgid <= 0)
			tgid = parent->tgid;
	}
	c->tgid = tgid;
	share = event == PTRACE_EVENT_VFORK ||
	        (event == PTRACE_EVENT_CLONE && (tgid == parent->tgid || same_memory(parent->tid, tid)));
	if (share) {
		space_join(c, parent->space);
	} else {
		s = space_fork(b, parent->space, tid);
		if (!s) {
			fprintf(stderr, "layerprof: ptrace: out of memory for process %d\n", (int)tid);
			return;
		}
		space_join(c, s);
	}
	if (tgid != parent->tgid)
		inherit(b, parent, c);
	if (!share)
		space_prune(b, c->space);
}

/* Whether task tid runs the traced executable. */
static bool runs_ours(const struct bptrace *b, pid_t tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)tid);
	return !stat(path, &st) && st.st_dev == b->dev && st.st_ino == b->ino;
}

/* Whether a task of another process shares t's space (t is a vfork
 * child): that space outlives t's exec. */
static bool space_shared(const struct bptrace *b, const struct bp_task *t)
{
	for (size_t i = 0; i < b->ntasks; i++)
		if (b->tasks[i]->space == t->space && b->tasks[i]->tgid != t->tgid)
			return true;
	return false;
}

struct bp_task *task_exec(struct bptrace *b, struct bp_task *t, pid_t former)
{
	struct bp_task *old = former != t->tid ? task_find(b, former) : NULL;
	struct bp_space *s;

	/* the old memory is gone, unless a vfork parent shares it */
	if (old && old->space && !space_shared(b, old))
		old->space->dead = true;
	if (t->space && !space_shared(b, t))
		t->space->dead = true;
	if (old) {
		/* another thread than the leader exec'd: it takes the leader's
		 * tid, and the leader is gone */
		frames_drop(b, t);
		space_join(t, old->space);
		free(t->stack);
		t->stack = old->stack;
		t->depth = old->depth;
		t->cap = old->cap;
		old->stack = NULL;
		old->depth = old->cap = 0;
		task_free(b, old);
	}
	/* the old image's frames are gone, without records */
	frames_drop(b, t);
	if (!b->detaching)
		bq_exec(b, t, b->now);
	t->tgid = t->tid;
	s = space_new();
	if (!s) {
		fprintf(stderr, "layerprof: ptrace: out of memory for process %d\n", (int)t->tid);
		space_leave(t);
		return t;
	}
	space_join(t, s);
	if (runs_ours(b, t->tid) && !b->detaching)
		space_exec(b, s, t->tid);
	return t;
}

/* ---- traps ---- */

/* A return to a at sp: the exit of the frames returning there from sp
 * (a call, and those that tail-called it); frames above them are gone
 * without their return.  False when no frame returns there. */
static bool returned(struct bptrace *b, struct bp_task *t, uint64_t a, uint64_t sp)
{
	uint64_t want = sp - BP_RET_SP;
	uint32_t k = t->depth;

	while (k && !(t->stack[k - 1].ret == a && t->stack[k - 1].sp == want))
		k--;
	if (!k)
		return false;
	if (k < t->depth) {
		b->unwound += t->depth - k;
		while (t->depth > k)
			frame_pop(b, t);
		bq_longjmp(b, t, b->now, k);
	}
	while (t->depth && t->stack[t->depth - 1].ret == a && t->stack[t->depth - 1].sp == want) {
		uint32_t fn = t->stack[t->depth - 1].fn;

		frame_pop(b, t);
		b->exits++;
		bq_func(b, t, b->now, t->space->bias + b->sel.fn[fn].addr, true);
	}
	return true;
}

/* Function fn entered at sp: the frames an entry at sp shows gone (as
 * the uprobe backend tells them, utasks.c), its entry, and its frame. */
static void entered(struct bptrace *b, struct bp_task *t, uint32_t fn, uint64_t sp, const bp_regs *regs)
{
	uint32_t depth = t->depth;
	uint64_t ret = bp_lr(regs);

	while (depth && t->stack[depth - 1].sp < sp)
		depth--;
	if (depth < t->depth)
		while (depth && t->stack[depth - 1].sp == sp)
			depth--;
	if (depth < t->depth) {
		b->unwound += t->depth - depth;
		while (t->depth > depth)
			frame_pop(b, t);
		bq_longjmp(b, t, b->now, depth);
	}
	b->entries++;
	bq_func(b, t, b->now, t->space->bias + b->sel.fn[fn].addr, false);
	if (BP_RET_IN_MEMORY && space_read(t->space, sp, &ret, sizeof(ret)))
		ret = 0;
	frame_push(b, t, fn, sp, ret);
}

/* Trap site a was hit by t at sp: an exit, an entry, or a pass through a
 * return address that is neither (a loop, another thread). */
static void hit(struct bptrace *b, struct bp_task *t, uint64_t a, const bp_regs *regs)
{
	uint64_t sp = bp_sp(regs);
	const struct bp_site *site = site_find(t->space, a);
	uint32_t fn = site->fn;

	if (t->replay_pc == a && t->replay_sp == sp) {
		t->replay_pc = 0;
		return;
	}
	if (t->replay_pc && sp > t->replay_sp)
		t->replay_pc = 0; /* the stack went above it: stale */
	if (site->refs && returned(b, t, a, sp))
		return;
	if (fn != BP_NO_FN)
		entered(b, t, fn, sp, regs);
}

/* Stops every other task of t's space that runs code, and waits for each;
 * they are marked held.  What one reports instead is kept pending. */
static void hold_others(struct bptrace *b, struct bp_task *t)
{
	uint32_t waiting = 0;

	for (size_t i = 0; i < b->ntasks; i++) {
		struct bp_task *u = b->tasks[i];

		if (u == t || u->space != t->space || u->run != BP_RUNNING || u->in_vfork || u->exiting)
			continue;
		if (!ptrace(PTRACE_INTERRUPT, u->tid, 0, 0)) {
			u->held = true;
			u->awaited = true;
			waiting++;
			b->held++;
		}
	}
	while (waiting) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | __WNOTHREAD);
		struct bp_task *u;

		if (tid < 0 && errno == EINTR)
			continue;
		if (tid < 0)
			break;
		u = task_find(b, tid);
		if (u && u->awaited) {
			u->awaited = false;
			waiting--;
			if (WIFSTOPPED(status) && status >> 16 == PTRACE_EVENT_STOP && WSTOPSIG(status) == SIGTRAP) {
				u->run = BP_STOPPED; /* the interrupt: resumed after the step */
				continue;
			}
			u->held = false;
		}
		task_keep(b, tid, u, status);
	}
}

static void release_others(struct bptrace *b)
{
	for (size_t i = 0; i < b->ntasks; i++) {
		struct bp_task *u = b->tasks[i];

		if (!u->held)
			continue;
		u->held = false;
		if (!u->has_pending && u->run == BP_STOPPED)
			task_resume(b, u, 0);
	}
}

/* One instruction of t with the original code at a.  True once it ran;
 * false when t stopped for something else first, kept pending (a signal,
 * an event, its death), and then, when t is still at a, the trap there
 * will be a repeat. */
static bool single_step(struct bptrace *b, struct bp_task *t, uint64_t a, uint64_t sp)
{
	int status, sig;
	pid_t tid;
	bp_regs regs;

	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0)
			return false; /* killed: its death is reported next */
		t->run = BP_RUNNING;
		do
			tid = waitpid(t->tid, &status, __WALL);
		while (tid < 0 && errno == EINTR);
		if (tid < 0)
			return false;
		if (!WIFSTOPPED(status)) {
			task_keep(b, tid, t, status);
			return false;
		}
		t->run = BP_STOPPED;
		b->stops++;
		sig = WSTOPSIG(status);
		if (!(status >> 16) && sig == SIGTRAP)
			return true;
		/* an interrupt asked for before: the instruction has not run */
		if (status >> 16 == PTRACE_EVENT_STOP && sig == SIGTRAP)
			continue;
		break;
	}
	task_keep(b, tid, t, status);
	if (!bp_regs_get(t->tid, &regs) && bp_pc(&regs) == a) {
		t->replay_pc = a;
		t->replay_sp = sp;
	}
	return false;
}

/* Steps t over the trap at a (regs: its registers, the pc on a), the
 * other threads of its space held meanwhile, and puts the trap back. */
static void step_over(struct bptrace *b, struct bp_task *t, uint64_t a, bp_regs *regs)
{
	struct bp_space *s = t->space;
	struct bp_site *site;
	bool done;

	hold_others(b, t);
	site = site_find(s, a);
	site_write(b, s, site, false);
	if (BP_PC_AFTER)
		bp_regs_set(t->tid, regs);
	b->steps++;
	done = single_step(b, t, a, bp_sp(regs));
	site = site_find(s, a);
	if ((site->fn != BP_NO_FN || site->refs) && !site->inserted)
		site_write(b, s, site, true);
	release_others(b);
	if (done)
		task_resume(b, t, 0);
}

bool trap_at(struct bptrace *b, struct bp_task *t, uint64_t *a, bp_regs *regs)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0 || si.si_code != BP_TRAP_CODE || bp_regs_get(t->tid, regs))
		return false;
	*a = bp_pc(regs) - BP_PC_AFTER;
	if (!site_find(t->space, *a))
		return false;
	bp_set_pc(regs, *a); /* the instruction at a runs next */
	return true;
}

/* A SIGTRAP of t: true when it is one of our traps, handled. */
static bool trap_stop(struct bptrace *b, struct bp_task *t)
{
	struct bp_site *site;
	bp_regs regs;
	uint64_t a;

	if (!trap_at(b, t, &a, &regs))
		return false;
	if (site_find(t->space, a)->inserted)
		hit(b, t, a, &regs);
	site = site_find(t->space, a);
	if (site->inserted) {
		step_over(b, t, a, &regs);
		return true;
	}
	/* taken out: since t reached it, or by its own exit just now */
	if (BP_PC_AFTER)
		bp_regs_set(t->tid, &regs);
	task_resume(b, t, 0);
	return true;
}

/* ---- stops ---- */

static void event_stop(struct bptrace *b, struct bp_task *t, int event)
{
	unsigned long msg = 0;

	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		if (!ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg))
			task_born(b, t, (pid_t)msg, event);
		t->in_vfork = event == PTRACE_EVENT_VFORK;
		break;
	case PTRACE_EVENT_VFORK_DONE:
		t->in_vfork = false;
		break;
	case PTRACE_EVENT_EXEC:
		if (!ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg))
			t = task_exec(b, t, (pid_t)msg);
		break;
	case PTRACE_EVENT_EXIT:
		/* it runs no code any more: never waited for in a step */
		t->exiting = true;
		frames_drop(b, t);
		break;
	default:
		break;
	}
	task_resume(b, t, 0);
}

/* A stop of task tid (or its end), status as waitpid gave it. */
static void handle(struct bptrace *b, pid_t tid, int status)
{
	struct bp_task *t = task_find(b, tid);
	int sig, event;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		task_gone(b, tid, t, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	b->stops++;
	if (!t || !t->space) {
		/* a new task whose parent's event is still to come */
		task_keep(b, tid, t, status);
		return;
	}
	t->run = BP_STOPPED;
	sig = WSTOPSIG(status);
	event = status >> 16;
	if (event == PTRACE_EVENT_STOP && is_stop_signal(sig)) {
		/* a group-stop: held until SIGCONT, as without us */
		ptrace(PTRACE_LISTEN, t->tid, 0, 0);
		t->run = BP_LISTENING;
	} else if (event) {
		event_stop(b, t, event);
	} else if (sig != SIGTRAP || !trap_stop(b, t)) {
		task_resume(b, t, sig);
	}
}

/* Handles one status kept pending, of a task whose space is known.
 * False when there is none. */
static bool handle_pending(struct bptrace *b)
{
	for (size_t i = 0; i < b->ntasks; i++) {
		struct bp_task *t = b->tasks[i];
		int status = t->pending;

		if (!t->has_pending || (!t->space && WIFSTOPPED(status)))
			continue;
		t->has_pending = false;
		b->npending--;
		b->now = t->pending_ns;
		handle(b, t->tid, status);
		return true;
	}
	return false;
}

/* Seizes the held child; it runs on to its exec. */
static int seize(struct bptrace *b)
{
	struct bp_task *t;
	struct bp_space *s;
	int r;

	if (ptrace(PTRACE_SEIZE, b->main_pid, 0, (void *)(uintptr_t)BP_OPTIONS) < 0) {
		r = -errno;
		snprintf(b->err, sizeof(b->err), "cannot trace process %d: PTRACE_SEIZE: %s%s", (int)b->main_pid,
		         strerror(-r), r == -EPERM ? " (another tracer, or kernel.yama.ptrace_scope forbids it)" : "");
		return r;
	}
	t = task_add(b, b->main_pid, b->main_pid);
	s = space_new();
	if (!t || !s) {
		free(s);
		snprintf(b->err, sizeof(b->err), "out of memory");
		ptrace(PTRACE_DETACH, b->main_pid, 0, 0);
		return -ENOMEM;
	}
	space_join(t, s);
	t->run = BP_RUNNING;
	return 0;
}

void *bp_tracer_run(void *arg)
{
	struct bptrace *b = arg;
	sigset_t set;
	int r;

	/* the program's signals go to the caller's threads; SIGCHLD, which
	 * every stop sends and the kernel drops while it is ignored, stays
	 * unblocked, and the wake-up breaks this thread's waits */
	sigfillset(&set);
	sigdelset(&set, SIGCHLD);
	sigdelset(&set, BP_WAKE_SIG);
	pthread_sigmask(SIG_SETMASK, &set, NULL);
	r = seize(b);
	pthread_mutex_lock(&b->lock);
	b->setup = r < 0 ? r : 1;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	while (!r) {
		int status;
		pid_t tid;

		if (atomic_load(&b->stopping) == BP_DETACH) {
			bp_detach(b);
			break;
		}
		if (b->npending && handle_pending(b))
			continue;
		tid = waitpid(-1, &status, __WALL | __WNOTHREAD);
		if (tid < 0 && errno == EINTR)
			continue;
		if (tid < 0)
			break; /* ECHILD: every tracee is gone */
		b->now = now_ns();
		handle(b, tid, status);
	}
	while (b->ntasks)
		task_free(b, b->tasks[b->ntasks - 1]);
	pthread_mutex_lock(&b->lock);
	b->finished = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}
