/* The ptrace backend's orderly end with the program still running (see
 * bptrace.h): every task that runs code is stopped, a task stopped on a
 * trap is put back on its instruction, the original code goes back into
 * every space, and each task is detached with the signal its stop was
 * delivering.  Tasks that cannot stop now (a vfork parent waiting for its
 * child, a thread past its exit) run no code of their own: the kernel
 * detaches them when the tracer thread ends.  Tracer thread only. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "dyntrace/bptrace_impl.h"

/* A stop while detaching: followed far enough that the task can go. */
static void detach_stop(struct bptrace *b, pid_t tid, int status)
{
	struct bp_task *t = task_find(b, tid);
	unsigned long msg = 0;
	int sig, event;
	bp_regs regs;
	uint64_t a;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		task_gone(b, tid, t, status);
		return;
	}
	if (!t && !(t = task_add(b, tid, 0)))
		return;
	t->awaited = false;
	t->run = BP_STOPPED;
	t->detach_sig = 0;
	sig = WSTOPSIG(status);
	event = status >> 16;
	if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE) {
		/* the child holds the traps too: its space is restored with
		 * the others once it has stopped */
		if (t->space && !ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg)) {
			struct bp_task *c;

			task_born(b, t, (pid_t)msg, event);
			c = task_find(b, (pid_t)msg);
			if (c && c->run == BP_NEW)
				c->awaited = true;
		}
	} else if (event == PTRACE_EVENT_EXEC) {
		if (t->space && !ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg))
			task_exec(b, t, (pid_t)msg);
	} else if (!event && sig == SIGTRAP && t->space && trap_at(b, t, &a, &regs)) {
		if (BP_PC_AFTER)
			bp_regs_set(t->tid, &regs);
	} else if (!event) {
		t->detach_sig = sig;
	}
}

/* The next status to follow: one kept pending, else a wait.  False when
 * none is kept and no task is awaited. */
static bool next_status(struct bptrace *b, pid_t *tid, int *status)
{
	bool awaited = false;

	for (size_t i = 0; i < b->ntasks; i++) {
		struct bp_task *t = b->tasks[i];

		if (t->has_pending) {
			t->has_pending = false;
			b->npending--;
			*tid = t->tid;
			*status = t->pending;
			return true;
		}
		awaited |= t->awaited;
	}
	while (awaited) {
		*tid = waitpid(-1, status, __WALL | __WNOTHREAD);
		if (*tid >= 0)
			return true;
		if (errno != EINTR)
			return false;
	}
	return false;
}

void bp_detach(struct bptrace *b)
{
	pid_t tid;
	int status;

	b->detaching = true;
	for (size_t i = 0; i < b->ntasks; i++) {
		struct bp_task *t = b->tasks[i];

		if (t->run == BP_NEW)
			t->awaited = true;
		else if (t->run == BP_RUNNING && !t->in_vfork && !t->exiting && !ptrace(PTRACE_INTERRUPT, t->tid, 0, 0))
			t->awaited = true;
	}
	while (next_status(b, &tid, &status))
		detach_stop(b, tid, status);
	for (size_t i = 0; i < b->ntasks; i++) {
		struct bp_space *s = b->tasks[i]->space;

		if (s && !s->dead && s->cap)
			space_restore(b, s);
	}
	for (size_t i = 0; i < b->ntasks; i++) {
		struct bp_task *t = b->tasks[i];

		if (t->run == BP_STOPPED || t->run == BP_LISTENING)
			ptrace(PTRACE_DETACH, t->tid, 0, (void *)(uintptr_t)t->detach_sig);
	}
}
