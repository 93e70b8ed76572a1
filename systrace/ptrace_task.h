/* The tasks the ptrace backend traces: each one's state between stops, and
 * the table that finds a task from the tid a stop reports.  Only for the
 * ptrace backend (systrace/ptrace*.c). */
#ifndef LP_SYSTRACE_PTRACE_TASK_H
#define LP_SYSTRACE_PTRACE_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A bound on the table; a task beyond it is not traced. */
#define PT_TASKS_MAX 65536u

enum pt_task_flag {
	PT_IN_SYSCALL = 1 << 0, /* between a call's entry and its exit */
	PT_RECORDING = 1 << 1,  /* the call in progress had its ENTER queued */
	PT_ENTER_LOST = 1 << 2, /* ... or lost: its EXIT is lost with it */
	PT_PRELUDE = 1 << 3,    /* the spawned child before its execve: not recorded */
	PT_ENTRY_DUE = 1 << 4,  /* Linux < 4.8: a syscall-entry-stop follows the seccomp stop */
};

/* "Under the lock": the backend's lock (struct pt in ptrace_impl.h). */
struct pt_task {
	pid_t tid;
	pid_t tgid;     /* 0 until known; tracer thread only */
	uint32_t flags; /* enum pt_task_flag; tracer thread only */
	uint32_t nr;    /* the call in progress */
	uint64_t lost;  /* lost records not yet reported; under the lock */
	bool started;   /* its first stop was seen; under the lock */
	bool stop_sent; /* pt_release sent it SIGSTOP to detach it; under the lock */
};

/* A new task (calloc'd: the caller frees it, or the table once added), or
 * NULL when out of memory. */
struct pt_task *pt_task_new(pid_t tid, pid_t tgid, uint32_t flags, bool started);
/* The task's thread group, read from /proc the first time it is asked for
 * (a thread whose group /proc does not know is its own group).  Tracer
 * thread only. */
uint32_t pt_task_pid(struct pt_task *t);

/* The table of traced tasks.  It has no lock of its own: only the tracer
 * thread changes it, under the backend's lock; the caller's thread reads it
 * under that lock (pt_release signals every task); the tracer thread reads
 * it without.  A zeroed struct is an empty table. */
struct pt_tasks {
	struct pt_task **v; /* n tasks, in no order */
	size_t n, cap;
	struct pt_task *last; /* the task found last: the next stop is likely its */
};

/* The task with this tid, or NULL.  Tracer thread only. */
struct pt_task *pt_tasks_find(struct pt_tasks *ts, pid_t tid);
/* Adds t, which the table then owns: 0, or -ENOMEM (more than PT_TASKS_MAX
 * tasks, or no memory) leaving t to the caller. */
int pt_tasks_add(struct pt_tasks *ts, struct pt_task *t);
/* Takes t out of the table; the caller frees it. */
void pt_tasks_del(struct pt_tasks *ts, struct pt_task *t);
/* Takes the last task out of the table and returns it for the caller to
 * free; NULL when the table is empty. */
struct pt_task *pt_tasks_pop(struct pt_tasks *ts);
/* Frees every task and the table. */
void pt_tasks_release(struct pt_tasks *ts);

/* A numeric field ("\nTgid:", "\nTracerPid:", with its newline) of
 * /proc/<tid>/status, or -1. */
long pt_proc_status(pid_t tid, const char *field);
/* The thread group of `tid` from /proc, or -1. */
pid_t pt_proc_tgid(pid_t tid);

#endif
