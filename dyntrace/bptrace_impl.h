/* Private to dyntrace/: the ptrace backend's state, shared by bptrace.c
 * (the entry points on the caller's thread, and the record queue),
 * bpspace.c (address spaces, their traps, the threads' frames) and
 * bptracer.c (the tracer thread: stops, steps, forks, execs, the detach).
 *
 * Threads: every ptrace request comes from the tracer thread, which owns
 * the tasks, the spaces and the figures.  The caller's thread takes the
 * records out of the queue, reads the main process's exit status, and
 * asks for the end (`stopping`, then a signal that breaks the tracer's
 * wait).  The lock guards the queue, `setup`, `err`, `main_exited`,
 * `main_status` and `finished`. */
#ifndef LP_DYNTRACE_BPTRACE_IMPL_H
#define LP_DYNTRACE_BPTRACE_IMPL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dyntrace/bparch.h"
#include "dyntrace/bptrace.h"
#include "dyntrace/dselect.h"

#define BP_NO_FN UINT32_MAX
#define BP_STACK_MAX BP_STACK_DEPTH_MAX
/* The queue: each of its two buffers holds at most this many bytes; a
 * full one makes the tracer (and so the stopped tracee) wait this long
 * for the caller, once per fill, then records are counted lost. */
#define BQ_BYTES (8u << 20)
#define BQ_FULL_WAIT_MS 100
/* What the tracer follows: every new task, exec, and the end of each
 * thread (a thread past its exit event is never waited for in a step). */
#define BP_OPTIONS                                                                             \
	(PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | \
	 PTRACE_O_TRACEVFORKDONE | PTRACE_O_TRACEEXIT)
/* Sent to the tracer thread to break its wait when the caller asks for
 * the end (its handler does nothing). */
#define BP_WAKE_SIG (SIGRTMIN + 3)

/* ---- the record queue (bptrace.c) ---- */

enum bq_kind { BQ_ENTRY, BQ_EXIT, BQ_LONGJMP, BQ_FORK, BQ_EXEC };

/* One record; a BQ_FORK one is followed by nframes uint64_t addresses. */
struct bq_rec {
	uint8_t kind;
	uint8_t nframes;
	uint16_t pad;
	uint32_t pid, tid;
	uint32_t arg; /* BQ_LONGJMP: the depth left; BQ_FORK: the parent */
	uint64_t ns;
	uint64_t addr; /* BQ_ENTRY, BQ_EXIT: the function's address */
};

struct bq_buf {
	unsigned char *buf;
	size_t len, cap;
};

/* Double-buffered: the tracer fills `fill` under the lock; the caller
 * swaps it with `spare` (its own) and hands the records out unlocked. */
struct bq {
	struct bq_buf fill, spare;
	bool dropping;  /* full once already: no more waiting */
	uint64_t lost;  /* records dropped, not yet handed out */
	uint64_t total; /* records dropped in all */
};

/* ---- address spaces, traps and frames (bpspace.c) ---- */

/* A trap address in a space: a traced function's entry (fn), the return
 * address of frames under way (refs), or both.  A site whose trap was
 * taken out stays known, so that a thread that reached the trap just
 * before is put back on the original instruction. */
struct bp_site {
	uint64_t addr; /* 0: an empty slot */
	uint32_t fn;   /* the function entered here, or BP_NO_FN */
	uint32_t refs; /* frames returning here */
	uint8_t orig[BP_LEN];
	bool inserted;
};

/* One address space: a process's memory, shared by its threads and by a
 * vfork child until it execs or exits. */
struct bp_space {
	int memfd;             /* /proc/<tid>/mem of a member, or -1 until needed */
	uint64_t bias;         /* load address - file address (traced) */
	bool traced;           /* it maps the traced executable: its entries trap */
	bool dead;             /* its memory is gone (exec): nothing is written */
	uint32_t users;        /* tasks in it */
	struct bp_site *sites; /* open addressing on addr, cap a power of 2 */
	uint32_t cap, used;
};

struct bp_frame {
	uint64_t sp;  /* at the entry */
	uint64_t ret; /* the return address (0: unknown, never an exit) */
	uint32_t fn;
};

enum bp_run {
	BP_NEW,       /* its first stop is still to come: it runs no code yet */
	BP_RUNNING,   /* resumed by us */
	BP_STOPPED,   /* in a ptrace-stop we hold */
	BP_LISTENING, /* in a group-stop (PTRACE_LISTEN): runs no code */
};

struct bp_task {
	pid_t tid, tgid;
	struct bp_space *space; /* NULL: its parent's event is still to come */
	uint8_t run;            /* enum bp_run */
	bool in_vfork;          /* waits in vfork for its child: cannot stop */
	bool exiting;           /* past PTRACE_EVENT_EXIT: runs no code */
	bool held;              /* stopped while another task steps */
	bool awaited;           /* interrupted, its stop still to come */
	bool has_pending;
	int pending; /* a wait status taken while another task was stepped */
	uint64_t pending_ns;
	int detach_sig; /* detaching: the signal its stop delivers */
	/* a trap at this pc and sp is one already recorded (a signal came
	 * before its step, and the task comes back to it) */
	uint64_t replay_pc, replay_sp;
	struct bp_frame *stack;
	uint32_t depth, cap;
};

/* ---- the backend ---- */

enum bp_stopping { BP_GO_ON = 0, BP_DETACH = 1 };

struct bptrace {
	struct uprobes_ops ops;
	char *path; /* absolute */
	dev_t dev;  /* the executable, to know it after an exec */
	ino_t ino;
	uint64_t e_entry;
	struct dsel_funcs sel;

	pthread_t thread;
	bool thread_started, finished_called;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* setup done; the queue emptied; finished */
	/* under the lock */
	struct bq queue;
	int setup; /* 0: starting; 1: running; < 0: -errno, reason in err */
	char err[256];
	bool main_exited, finished;
	int main_status;
	atomic_int stopping; /* enum bp_stopping */

	/* the tracer thread only (the caller reads the figures once it ended) */
	pid_t main_pid;
	struct bp_task **tasks; /* ntasks, in no order */
	size_t ntasks, tasks_cap;
	uint32_t npending; /* tasks with has_pending */
	uint64_t now;      /* CLOCK_MONOTONIC of the stop being handled */
	bool detaching;
	uint64_t entries, exits, unwound, stops, steps, held, too_deep;
	uint32_t spaces;
	char werr[200];
};

/* ---- bptrace.c: records, on the tracer thread ---- */

void bq_func(struct bptrace *b, const struct bp_task *t, uint64_t ns, uint64_t addr, bool exit);
void bq_longjmp(struct bptrace *b, const struct bp_task *t, uint64_t ns, uint32_t depth);
void bq_exec(struct bptrace *b, const struct bp_task *t, uint64_t ns);
/* Child process pid (its thread tid) forked at ns by a thread of process
 * parent, with the n open calls (outermost first) it inherited. */
void bq_fork(struct bptrace *b, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t parent, const uint64_t *frames,
             uint32_t n);

/* ---- bpspace.c ---- */

/* A new space, empty and untraced (NULL when out of memory). */
struct bp_space *space_new(void);
/* Task t joins s; it leaves its former space, which goes with its last
 * user. */
void space_join(struct bp_task *t, struct bp_space *s);
void space_leave(struct bp_task *t);
/* The site at addr, or NULL. */
struct bp_site *site_find(const struct bp_space *s, uint64_t addr);
/* The traced executable was mapped into s by an exec of task tid: its
 * load bias from the auxiliary vector, and a trap at every chosen
 * function's entry.  Returns 0 or -errno with b->werr set. */
int space_exec(struct bptrace *b, struct bp_space *s, pid_t tid);
/* A copy of parent for child (a fork): the traps the child's memory
 * holds, with no frames returning anywhere yet.  NULL: no memory. */
struct bp_space *space_fork(struct bptrace *b, const struct bp_space *parent, pid_t child);
/* Puts the trap back at (insert) or the original bytes at site.  Returns
 * 0 or -errno (nothing is written in a dead space). */
int site_write(struct bptrace *b, struct bp_space *s, struct bp_site *site, bool insert);
/* The return traps of s that no frame returns to any more out (a fork
 * child's, once its frames are known). */
void space_prune(struct bptrace *b, struct bp_space *s);
/* Every trap of s out (detaching). */
void space_restore(struct bptrace *b, struct bp_space *s);
/* Reads len bytes at addr of space s.  Returns 0 or -errno. */
int space_read(struct bp_space *s, uint64_t addr, void *out, size_t len);

/* Function fn entered by t at sp, returning to ret: a frame, and a trap
 * at ret.  False when the stack is full (counted). */
bool frame_push(struct bptrace *b, struct bp_task *t, uint32_t fn, uint64_t sp, uint64_t ret);
/* t's top frame is done: its return site loses a user. */
void frame_pop(struct bptrace *b, struct bp_task *t);
/* Every frame of t is gone (exit, exec) without records. */
void frames_drop(struct bptrace *b, struct bp_task *t);

/* ---- bptracer.c: the tasks and their stops ---- */

/* The tracer thread (arg: the struct bptrace): seizes main_pid, publishes
 * `setup`, handles every stop until no tracee is left or the caller asks
 * for the end (bp_detach), then sets `finished`. */
void *bp_tracer_run(void *arg);
struct bp_task *task_find(struct bptrace *b, pid_t tid);
/* A new task, BP_NEW, in no space yet (NULL when out of memory). */
struct bp_task *task_add(struct bptrace *b, pid_t tid, pid_t tgid);
/* Forgets t: its frames, its space, its pending status. */
void task_free(struct bptrace *b, struct bp_task *t);
/* Keeps a wait status of task tid (t, or made when NULL) for later. */
void task_keep(struct bptrace *b, pid_t tid, struct bp_task *t, int status);
void task_resume(struct bptrace *b, struct bp_task *t, int sig);
/* Task tid ended (t may be NULL): the main process's status goes to
 * the caller. */
void task_gone(struct bptrace *b, pid_t tid, struct bp_task *t, int status);
/* A fork, vfork or clone event of parent: the new task's space (shared,
 * or a copy) and, for a process, its inherited frames. */
void task_born(struct bptrace *b, struct bp_task *parent, pid_t tid, int event);
/* The exec event of t (the leader's tid; former: the tid that called
 * it).  Returns the task that goes on. */
struct bp_task *task_exec(struct bptrace *b, struct bp_task *t, pid_t former);
/* Whether t's SIGTRAP stop is one of our traps: its address in *a, and
 * regs with the pc set on it (to write back before the task runs). */
bool trap_at(struct bptrace *b, struct bp_task *t, uint64_t *a, bp_regs *regs);

/* ---- bpdetach.c ---- */

/* Stops every task that runs code, puts the original code back in every
 * space, and detaches them.  Tracer thread; the tasks are then freed. */
void bp_detach(struct bptrace *b);

#endif
