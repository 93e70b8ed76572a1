/* The ptrace backend's internals, shared by its two halves: ptrace.c (the
 * entry points, on the caller's thread) and ptrace_tracer.c (the tracer
 * thread).  Its parts have files of their own: the record queue
 * (ptrace_queue.h), the tasks (ptrace_task.h), the seccomp filter
 * (ptrace_seccomp.h) and the reading of stopped tracees (ptrace_reader.h).
 * Not for users of the tracer: see systrace.h.
 *
 * Threads: every ptrace request must come from the tracing thread, so the
 * tracer thread forks the child, waits for all stops and owns the task
 * table and the per-task state.  The caller's thread only takes records out
 * of the queue, reads the exit status and, at release, signals the tasks
 * (kill or tkill need no tracer) to wake the tracer thread.  The mutex
 * guards the queue, the counters the caller reads, the task table's shape
 * and the `started`/`stop_sent` fields of each task. */
#ifndef LP_SYSTRACE_PTRACE_IMPL_H
#define LP_SYSTRACE_PTRACE_IMPL_H

#include <linux/filter.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "systrace/ptrace_queue.h"
#include "systrace/ptrace_reader.h"
#include "systrace/ptrace_task.h"
#include "systrace/systrace.h"

/* What pt_release asked the tracer thread to do. */
enum pt_stopping {
	PT_STOP_NONE = 0,
	PT_STOP_KILL = 1,   /* kill every tracee and reap it */
	PT_STOP_DETACH = 2, /* detach every tracee, leaving it running */
};

/* The backend's state (systrace's impl), made by pt_spawn or pt_attach and
 * freed by pt_release after the tracer thread has ended. */
struct pt {
	struct systrace_config cfg;
	enum sys_arch arch;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* setup finished; the queue was emptied */
	/* under the lock */
	struct pt_queue queue; /* (its spare buffer: the caller's thread only) */
	uint64_t stops_pub;    /* `stops` as last published */
	int setup;             /* 0: starting; 1: running; < 0: -errno, reason in err */
	char err[256];
	bool main_exited, finished;
	int main_status;
	struct pt_tasks tasks; /* changed by the tracer thread only */
	atomic_int stopping;   /* enum pt_stopping */

	/* the tracer thread only (read-only once it runs) */
	const char *path; /* the program's file (struct systrace.path) */
	char *const *argv, *const *envp;
	pid_t attach_pid;
	pid_t main_pid;
	bool seccomp;   /* the filter selects the stops */
	bool seize;     /* tasks are PTRACE_SEIZEd (attach) */
	bool old_order; /* Linux < 4.8 */
	bool spawning;  /* the child has not reached its exec yet */
	int errpipe;    /* the child's report, while spawning */
	struct sock_fprog prog;
	struct pt_reader reader;
	uint64_t stops;
	uint64_t now; /* CLOCK_MONOTONIC at the current stop */
	char str[SYSREC_STR_MAX];
};

/* The tracer thread (pthread_create's start routine, arg: the struct pt):
 * spawns the program or attaches to it, publishes the outcome in `setup`,
 * then handles every stop until no task is left or pt_release has stopped
 * them all; sets `finished` at its end.  Returns NULL. */
void *pt_tracer_run(void *arg);

#endif
