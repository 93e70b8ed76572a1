/* A program's run time on a characterised platform, from its trace (paper
 * 004, section 4.5): each system call and C library call the trace holds
 * that the calibration models takes the model's time at the call's
 * parameter instead of its measured time, thread by thread on an
 * estimated time line.
 *
 * The method (docs/estimate.md):
 * - a call is a system call (record --syscalls) or a C library call
 *   NAME@plt with its arguments (record --libcalls); a call inside a
 *   modelled call of the same thread (the write syscall inside write@plt)
 *   is part of it and not counted again;
 * - the call's entry in the calibration: by a table of call names (syscall
 *   aliases: pread64 is pread, openat is open ...), the condition where the
 *   trace tells it (kill to itself, to another task, to no task), and the
 *   parameter x from an argument or the result (read: the bytes read);
 * - calls that wait for another task or for time (a futex wait, wait4,
 *   pthread_join, a read from a pipe, poll, a sleep whose request the trace
 *   does not hold) are not modelled: their length is another task's doing
 *   or a requested time, not the call's;
 * - all threads' calls in the order of the trace's times, each thread with
 *   its offset (estimated less measured time): a modelled call adds model(x)
 *   - measured, every call takes off the recorder's cost per call outside
 *   the call; a thread starts with its creator's offset at its first event;
 *   a wait for another task ends where its waker (the last other thread to
 *   act during the wait) stands: offset = max(offset - the wait's length,
 *   the waker's offset); the program's estimate is the latest estimated end
 *   of a thread less the program's start;
 * - without the call models: the same with each modelled call's time 0.
 *
 * Not thread-safe.  One struct estimate per trace. */
#ifndef LP_OSCAL_ESTIMATE_H
#define LP_OSCAL_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/oscal/oscal.h"

struct walk;

#define ESTIMATE_NAMES_MAX 512u         /* rows of call names */
#define ESTIMATE_POINTS_MAX (16u << 20) /* modelled calls kept for the time line, all threads */
#define ESTIMATE_THREADS_MAX 65536u
#define ESTIMATE_FDS_MAX 4096u /* file descriptors followed per process */
#define ESTIMATE_STACK_MAX 64u /* open C library calls followed per thread */

/* What became of a call. */
enum estimate_fate {
	ESTIMATE_MODELLED = 0, /* the model's time replaces the measured one */
	ESTIMATE_NO_ENTRY,     /* the calibration has no entry for it */
	ESTIMATE_NO_MODEL,     /* its entry has no model (skipped, failed, too few points) */
	ESTIMATE_NO_PARAM,     /* its entry has a parameter the trace does not give */
	ESTIMATE_WAIT,         /* it waits for another task or for time: measured time kept */
	ESTIMATE_UNFINISHED,   /* no exit in the trace (exit_group, the end): not counted */
	ESTIMATE_INSIDE,       /* inside a modelled call of the same thread: counted there */
};

/* "modelled", "no entry", ... */
const char *estimate_fate_name(enum estimate_fate f);

/* One call as estimate saw it, for a listing (estimate_opts.on_call). */
struct estimate_call {
	uint32_t pid, tid;
	const char *name;  /* the call's name in the trace: "pread64", "write@plt" */
	const char *call;  /* the name looked up: "pread", "write" */
	const char *entry; /* the calibration's entry used, or "" */
	bool libcall;
	enum estimate_fate fate;
	uint64_t enter_ns, exit_ns;
	double x;           /* the parameter, when the entry has one */
	double measured_ns; /* exit - enter */
	double model_ns;    /* the model's time at x (MODELLED only, else 0) */
};

/* Per call name and entry: the calls modelled, or per call name and fate
 * those that were not. */
struct estimate_row {
	char name[OSCAL_NAME_MAX];  /* the looked-up call name ("read") */
	char entry[OSCAL_NAME_MAX]; /* the entry used, "" when not modelled */
	enum estimate_fate fate;
	uint64_t count;
	double measured_ns, model_ns;
};

struct estimate_thread {
	uint32_t pid, tid, image;
	int32_t creator; /* index in threads, -1: none (a root) */
	uint64_t first_ns, last_ns;
	uint64_t modelled;       /* calls modelled */
	uint64_t calls;          /* calls counted (finished, not inside a modelled one) */
	double overhead;         /* the recorder's cost taken off: calls x its cost per call */
	double delta, delta_wo;  /* sum of model - measured; of - measured */
	double start, end;       /* on the estimated time line, from the program's start */
	double start_wo, end_wo; /* the same without the call models */
	/* time it was preempted (runnable, off the CPU: sched_switch of
	 * record --kernel) outside its modelled calls, taken off its time line */
	double preempted;
	uint64_t preemptions;
};

struct estimate_opts {
	/* each call as it is decided (the listing), or NULL; e is valid during
	 * the callback */
	void (*on_call)(void *ctx, const struct estimate_call *c);
	void *ctx;
	/* the recorder's cost per call outside the call's measured time, for a
	 * system call and a C library call (ns); when not given, the least gap
	 * between two consecutive calls of that kind in a thread of the trace */
	bool overhead_given;
	double overhead_sys_ns, overhead_lib_ns;
};

struct estimate {
	const struct oscal_cal *cal; /* borrowed */
	struct estimate_opts opts;
	/* results, after estimate_run */
	uint64_t t0, t1;             /* the program's measured start and end (ns) */
	double span_ns;              /* t1 - t0 */
	double estimate_ns;          /* with the call models */
	double without_ns;           /* with each modelled call's time 0 */
	uint64_t syscalls, libcalls; /* calls seen (finished, outermost) */
	/* the least gap between consecutive system calls, C library calls of a
	 * thread (-1: none), and the cost per call taken off (opts, else these) */
	double gap_sys_ns, gap_lib_ns;
	double overhead_sys_ns, overhead_lib_ns;
	/* the trace has the scheduler's switches of its threads (record
	 * --kernel): their preempted time outside modelled calls, the sum of
	 * the threads', is taken off (another task's time, the recorder's
	 * among them); else 0 and nothing is taken off */
	bool switches;
	double preempted_ns;
	struct estimate_row *rows; /* modelled rows first, then the others, each by name */
	uint32_t nrows;
	struct estimate_thread *threads; /* in the walk's order of streams */
	uint32_t nthreads;
	/* private */
	struct estimate_priv *p;
};

/* Sets e up for cal (borrowed until estimate_release); opts may be NULL. */
void estimate_init(struct estimate *e, const struct oscal_cal *cal, const struct estimate_opts *opts);
/* Walks the trace w (opened) once and computes the results into e.
 * Returns 0, -ENOMEM, or -E2BIG past ESTIMATE_POINTS_MAX, ESTIMATE_NAMES_MAX
 * or ESTIMATE_THREADS_MAX (err says which), or -ENODATA when the trace has
 * neither system calls nor C library calls. */
int estimate_run(struct estimate *e, struct walk *w, char *err, size_t errlen);
/* Frees what estimate_run made; e may be zeroed or initialised only. */
void estimate_release(struct estimate *e);

#endif
