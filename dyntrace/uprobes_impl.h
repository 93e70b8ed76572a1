/* Private to dyntrace/: the uprobe backend's state, shared by uprobes.c
 * (opening the perf events, reading their records), uselect.c (which
 * functions, and their probes in uprobe_events) and utasks.c (the traced
 * tasks and their frames). */
#ifndef LP_DYNTRACE_UPROBES_IMPL_H
#define LP_DYNTRACE_UPROBES_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/elfsyms.h"
#include "dyntrace/dselect.h"
#include "dyntrace/uprobes.h"
#include "systrace/perfring.h"
#include "systrace/tracefs.h"

/* sample body: identifier, ip, pid/tid, time */
#define UP_SAMPLE_NS 24u
#define UP_SAMPLE_SIZE 32u
#if defined(__x86_64__)
#define UP_REG_SP 7 /* PERF_REG_X86_SP */
#elif defined(__aarch64__)
#define UP_REG_SP 31 /* PERF_REG_ARM64_SP */
#elif defined(__arm__)
#define UP_REG_SP 13 /* PERF_REG_ARM_SP */
#endif
#define UP_THREADS 4096u /* threads followed for longjmp (open addressing) */
#define UP_TID_GONE UINT32_MAX
#define UP_STACK_MAX 4096u
#define UP_PIDS 256u /* processes whose load address is known (open addressing) */
#define UP_FD_SPARE 64u

/* What a perf event is: a function's probe, or a scheduler tracepoint
 * that follows the traced tasks. */
enum up_kind { UP_FUNC, UP_FORK, UP_EXEC, UP_EXIT };

struct up_id {
	uint64_t perf_id;
	uint32_t fn;
	bool exit;
	uint8_t kind; /* enum up_kind */
};

/* A thread's calls under way, each with the stack pointer at its entry: a
 * later entry at or above one of them means that the frame is gone
 * without its return (longjmp, or a thread that unwound past it). */
struct up_frame {
	uint64_t sp;
	uint32_t fn;
};

struct up_thread {
	uint32_t tid; /* 0: empty */
	uint32_t depth;
	struct up_frame *stack; /* UP_STACK_MAX frames once needed */
	/* made by a fork: the forking thread's frames, which a child
	 * process (not a thread: its pid tells at its first record)
	 * inherits; forker: that thread's pid, 0 when none pending */
	uint32_t forker;
	uint64_t fork_ns;
};

struct up_pid {
	uint32_t pid;  /* 0: empty */
	uint64_t bias; /* load address - file address */
};

struct uprobes {
	struct uprobes_ops ops;
	char *path;            /* absolute, as the probes name it */
	struct dsel_funcs sel; /* the functions probed */
	const char *root;      /* tracefs */
	char group[64];        /* our probes' group; "" until defined */
	uint32_t *tp_id;       /* per function: entry, return tracepoint ids */
	uint32_t pages;
	struct perfrings pr;
	bool rings_ready;
	int *fds;
	size_t nfds;
	struct up_id *ids; /* sorted by perf_id */
	size_t nids;
	struct up_pid pids[UP_PIDS];
	struct up_thread *threads; /* UP_THREADS, or NULL without stack pointers */
	/* the traced tasks: the program's threads and its descendants' (open
	 * addressing; UP_TID_GONE marks a removed one) */
	uint32_t *tids;
	uint32_t tids_cap, ntids, nused;
	uint32_t follow_id[4];          /* by enum up_kind: tracepoint ids */
	struct tracefs_field child_pid; /* sched_process_fork's */
	bool opened;
	uint64_t others; /* hits of processes not traced */
	uint64_t entries, exits, lost, unattributed, unwound;
	bool finished;
};

/* The scheduler tracepoints' names, by enum up_kind (uselect.c). */
extern const char *const follow_names[4];

/* ---- uselect.c: what to probe ---- */

/* Sets u->root to tracefs.  Returns 0, or a negative errno with err set
 * when tracefs or uprobe_events cannot be used. */
int tracefs_probe(struct uprobes *u, char *err, size_t errlen);
/* Sets u->path (owned by u) to path made absolute.  Returns 0, or a
 * negative errno with err set when a probe definition cannot carry it. */
int probe_path(struct uprobes *u, const char *path, char *err, size_t errlen);
/* Fills u->sel from u->sel.es by cfg's patterns (dsel_functions), after
 * refusing what the uprobe backend cannot trace.  Returns 0, or a negative errno with err set (none
 * chosen, C++ exceptions, unreadable program headers). */
int select_functions(struct uprobes *u, const struct uprobes_config *cfg, char *err, size_t errlen);
/* Sets u->follow_id and u->child_pid.  Returns 0 or a negative errno with
 * err set. */
int follow_formats(struct uprobes *u, char *err, size_t errlen);
/* Defines the probes of u->fn in u->group, their ids in u->tp_id.
 * Returns 0 or a negative errno with err set. */
int define_probes(struct uprobes *u, char *err, size_t errlen);

/* ---- utasks.c: the traced tasks and their frames ---- */

/* tid's slot in the traced set (made when make); NULL: not there, or no
 * room. */
uint32_t *tid_find(struct uprobes *u, uint32_t tid, bool make);
/* Adds a traced task.  0 or -ENOMEM. */
int tid_add(struct uprobes *u, uint32_t tid);
/* Adds every thread of running process pid.  0, -ESRCH (no such
 * process), -ENOMEM or another -errno of reading /proc. */
int tid_add_threads(struct uprobes *u, uint32_t pid);
/* Takes tid out of the traced set, if there. */
void tid_remove(struct uprobes *u, uint32_t tid);
/* Process pid's load bias slot (made when make); NULL: not known. */
struct up_pid *pid_slot(struct uprobes *u, uint32_t pid, bool make);
/* Thread tid's frames (made on first use); NULL without stack pointers or
 * when the table is full. */
struct up_thread *thread_slot(struct uprobes *u, uint32_t tid);
/* Function fn entered at stack pointer sp: drops the frames it shows
 * gone (ops.longjmp) and pushes fn's. */
void entry_unwind(struct uprobes *u, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t sp, uint32_t fn);
/* Function fn returned on thread tid: pops its frame and those above. */
void exit_unwind(struct uprobes *u, uint32_t tid, uint32_t fn);
/* Thread tid of process pid forked child at ns: child keeps a copy of
 * tid's frames until its first record. */
void fork_frames(struct uprobes *u, uint32_t pid, uint32_t tid, uint32_t child, uint64_t ns);
/* The first record of forked task c (thread tid of process pid): a child
 * process is told its inherited frames (ops.fork). */
void inherit_frames(struct uprobes *u, struct up_thread *c, uint32_t pid, uint32_t tid);

#endif
