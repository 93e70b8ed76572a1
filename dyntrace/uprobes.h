/* The dynamic tracer's uprobe backend: the functions of an unmodified
 * executable traced through uprobes, an entry probe and a return probe
 * (uretprobe) per function, defined in tracefs's uprobe_events and opened
 * through perf_event_open on every CPU.  A probe traps only in processes
 * that map the file; the reader keeps the hits of the traced tasks, which
 * it follows from the scheduler's fork, exec and exit tracepoints read in
 * the same rings (the program, its threads and its descendants), and drops
 * the others (another process running the same file, counted).  The kernel
 * stamps each hit with CLOCK_MONOTONIC; the records are merged into time
 * order and handed out as function entries and exits of the thread that
 * made them.  The program's code is never written.  C11 and libc only: it
 * runs on the target. */
#ifndef LP_DYNTRACE_UPROBES_H
#define LP_DYNTRACE_UPROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UPROBES_PATTERNS_MAX 64u
#define UPROBES_DEFAULT_PAGES 256u /* data pages per CPU ring */
/* Nested return probes the kernel keeps per thread (its
 * MAX_URETPROBE_DEPTH): a call deeper than this has no exit record. */
#define UPROBES_RETURN_DEPTH 64u
/* Open calls a forked child process is told it inherited, at most (the
 * outermost ones) */
#define UPROBES_INHERIT_MAX 31u

struct uprobes_config {
	const char *path; /* the executable, as it will be run */
	/* shell globs on function names (at most UPROBES_PATTERNS_MAX); none:
	 * every function of the executable */
	const char *patterns[UPROBES_PATTERNS_MAX];
	uint32_t npatterns;
	/* FILE:GLOB, a shared library's functions (patch backend): the file
	 * (a path, or a name looked for as dpatch.h says) and the glob */
	struct {
		const char *file, *glob;
	} libs[UPROBES_PATTERNS_MAX];
	uint32_t nlibs;
	uint32_t buffer_pages; /* per CPU ring, a power of two; 0: the default */
	/* the patch backend (dpatch.h): also every call through the PLT
	 * (libcalls), or only those (no_functions) */
	bool libcalls;
	bool no_functions;
	/* the patch backend: instructions of the program to probe
	 * (record --probe), each FUNCTION+OFFSET */
	const char *probes[UPROBES_PATTERNS_MAX];
	uint32_t nprobes;
};

struct uprobes_ops {
	void *ctx;
	/* one function entry (exit false) or exit of thread tid of process
	 * pid at ns; addr: the function's address in that process */
	void (*func)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t addr, bool exit);
	/* thread tid left frames without their returns (longjmp): depth
	 * frames of those the tracer saw it enter remain */
	void (*longjmp)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t depth);
	/* thread tid of process pid, forked at ns by a thread of process
	 * parent, inherited these n open calls (outermost first) */
	void (*fork)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t parent, const uint64_t *frames,
	             uint32_t n);
	/* thread tid of process pid called exec at ns: its later records are
	 * the new image's */
	void (*exec)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns);
	/* count records the kernel dropped on cpu (its ring was full) */
	void (*lost)(void *ctx, uint32_t cpu, uint64_t count);
};

/* A function that is not traced, and why. */
struct uprobes_skipped {
	const char *name;
	const char *why;
};

struct uprobes_stats {
	uint32_t functions;    /* traced */
	uint32_t candidates;   /* functions of the file the patterns chose */
	uint64_t entries;      /* entry records read */
	uint64_t exits;        /* return records read */
	uint64_t lost;         /* dropped by the kernel, all CPUs */
	uint64_t unattributed; /* exits of a process whose address was unknown */
	uint64_t unwound;      /* frames left without a return (longjmp) */
	uint64_t others;       /* probe hits of processes not traced, left out */
	uint32_t events;       /* perf events opened */
	uint32_t traps;        /* patch backend: functions entered through an int3 */
	uint32_t probes;       /* patch backend: instructions probed (--probe) */
	const struct uprobes_skipped *skipped;
	size_t nskipped;
};

struct uprobes;

/* Splits list ("glob,FILE:glob,...", modified in place, which cfg's
 * patterns then point into) into cfg's patterns and libs.  Returns 0, or
 * -EINVAL with one line in err: an empty list or glob, too many patterns. */
int uprobes_patterns(struct uprobes_config *cfg, char *list, char *err, size_t errlen);

/* Reads the executable's functions (common/elfsyms.h), chooses those the
 * patterns name and checks that the kernel has the uprobe PMU.  Nothing is
 * opened until uprobes_attach.  On error returns NULL with the reason in
 * err: an unreadable or foreign file, no function chosen, no uprobe PMU, a
 * library's functions asked for (-ENOTSUP: the patch backend traces them). */
struct uprobes *uprobes_open(const struct uprobes_config *cfg, const struct uprobes_ops *ops, char *err, size_t errlen);
/* Traces process pid (a child held before its exec, or a running
 * process), every thread it has now and its future threads and children,
 * their hits kept from now on; the probes are opened at the first call
 * (the kernel writes them into every process that maps the file, and
 * takes them out again when they close).  A call under way in a running
 * process has no exit record: the kernel plants a return probe only at
 * an entry it saw.  Returns 0 or -errno with err set (-EMFILE: more
 * probes than descriptors; -EACCES/-EPERM: not allowed; -ESRCH: no such
 * process). */
int uprobes_attach(struct uprobes *u, pid_t pid, char *err, size_t errlen);
/* Hands out every record up to now.  Returns the number handed out, or
 * -errno. */
long uprobes_poll(struct uprobes *u);
void uprobes_get_stats(const struct uprobes *u, struct uprobes_stats *st);
/* Stops the probes and hands out what is left.  Accepts NULL; once only. */
void uprobes_finish(struct uprobes *u);
/* Closes everything (no callback runs).  Accepts NULL. */
void uprobes_free(struct uprobes *u);

#endif
