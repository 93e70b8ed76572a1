/* The kernel event tracer: tracepoints opened through perf_event_open on
 * every online CPU (CLOCK_MONOTONIC through use_clockid, one ring per
 * CPU), read and merged into time order, and kept to the traced processes
 * and their children: each record goes to the stream of every traced
 * thread it concerns (the thread that was running, the thread a payload
 * names such as a switch's next task or a wake-up's wakee, the thread
 * whose block request completes or whose timer expires); with
 * --kernel-system, other tasks' records too, marked as such.  The tracepoint
 * formats are read from tracefs and handed on for the trace (KFORMAT
 * chunk), so that the host decodes any kernel's records.  C11 and libc
 * only: it runs on the target. */
#ifndef LP_KTRACE_H
#define LP_KTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/drain.h"

/* The default selection of --kernel: scheduling, irqs and softirqs, user
 * page faults, block requests and timers.  sched_waking is the one that
 * fires in the waker's context (sched_wakeup runs on the wakee's CPU, from
 * an IPI when that is another CPU). */
#define KTRACE_DEFAULT_EVENTS                                                                           \
	"sched:sched_switch,sched:sched_waking,sched:sched_wakeup,sched:sched_wakeup_new,"              \
	"sched:sched_process_fork,"                                                                     \
	"sched:sched_process_exec,sched:sched_process_exit,irq:irq_handler_entry,irq:irq_handler_exit," \
	"irq:softirq_entry,irq:softirq_exit,exceptions:page_fault_user,block:block_rq_insert,"          \
	"block:block_rq_issue,block:block_rq_complete,timer:hrtimer_start,timer:hrtimer_cancel,"        \
	"timer:hrtimer_expire_entry,timer:hrtimer_expire_exit,timer:timer_start,timer:timer_cancel,"    \
	"timer:timer_expire_entry,timer:timer_expire_exit"
#define KTRACE_EVENTS_MAX 1024u /* tracepoints opened at most */
#define KTRACE_FILTERS_MAX 16u
#define KTRACE_DEFAULT_PAGES 512u /* data pages per CPU ring */

struct ktrace_config {
	/* comma-separated "group:event" with shell globs in either part, or
	 * "group" alone for all its events; NULL: KTRACE_DEFAULT_EVENTS, where
	 * an event this kernel lacks is left out with a warning (named ones
	 * must exist) */
	const char *events;
	/* in-kernel filters (ftrace's filter syntax): "EXPR" for every selected
	 * event, or "group:event=EXPR" for one; a filter the kernel refuses is
	 * an error naming the event */
	const char *filters[KTRACE_FILTERS_MAX];
	uint32_t nfilters;
	uint32_t buffer_pages; /* per CPU ring, a power of two; 0: the default */
	/* kernel functions to trace (comma-separated symbols), entry and
	 * return, through kprobes (ktrace/kprobes.h) where the kernel allows
	 * them; NULL: none */
	const char *functions;
	/* --kernel-system: the records of every other task too (not the idle
	 * task's), each handed to the stream of the task that ran it and of
	 * those it names, marked kernrec.other with the task's name; the
	 * traced threads get theirs as without it */
	bool system;
};

struct ktrace_ops {
	void *ctx;
	/* one record for the stream of thread tid of process pid (0: not
	 * known yet, a new task gone before its process could be read), in
	 * time order per thread; k's record is valid during the call */
	void (*event)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, const struct kernrec *k);
	/* count records the kernel dropped on cpu (its ring was full) */
	void (*lost)(void *ctx, uint32_t cpu, uint64_t count);
};

struct ktrace_stats {
	uint64_t records; /* read from the rings */
	uint64_t kept;    /* handed out (one record may go to several threads) */
	uint64_t lost;    /* dropped by the kernel, all CPUs */
	uint64_t cut;     /* kept records longer than KERNEVENT_RAW_MAX, stored cut */
	uint32_t events;  /* tracepoints opened */
	uint32_t ncpus;
	const uint64_t *lost_cpu; /* per ring, in ring order; cpus[] names them */
	const int *cpus;
};

struct ktrace;

/* Opens the selected tracepoints on every online CPU; nothing is traced
 * until ktrace_follow names a process.  `warn` receives one line about
 * events left out (empty when none).  On error returns NULL with the
 * reason in err, naming what is missing and how to allow it (tracefs,
 * perf_event_paranoid, a tracepoint). */
struct ktrace *ktrace_open(const struct ktrace_config *cfg, const struct ktrace_ops *ops, char *warn, size_t warnlen,
                           char *err, size_t errlen);
/* Traces process pid, its threads (those of /proc/<pid>/task now, unless
 * held) and the children they create from now on.  held: pid is a child
 * the caller forked that has not called exec yet; its records up to its
 * first exec are the caller's and dropped.  Returns 0 or -ENOMEM. */
int ktrace_follow(struct ktrace *kt, pid_t pid, bool held);
/* Hands out every record up to now.  Returns the number handed out, or
 * -errno. */
long ktrace_poll(struct ktrace *kt);
/* The KFORMAT chunk payloads: the formats of the selected tracepoints
 * (docs/format.md), in as many chunks as they need.  Valid while kt
 * lives. */
size_t ktrace_format_chunks(const struct ktrace *kt);
const uint8_t *ktrace_format_chunk(const struct ktrace *kt, size_t i, size_t *len);
/* The selection as opened, "group:event,..." (for META).  Valid while kt
 * lives. */
const char *ktrace_selection(const struct ktrace *kt);
void ktrace_get_stats(const struct ktrace *kt, struct ktrace_stats *st);
/* Stops the events and hands out what is left, with the losses not yet
 * reported.  Call it before the drain takes its last records.  Accepts
 * NULL; once only. */
void ktrace_finish(struct ktrace *kt);
/* Closes everything (no callback runs).  Accepts NULL. */
void ktrace_free(struct ktrace *kt);

#endif
