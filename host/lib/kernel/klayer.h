/* The kernel layer of a trace, joined with the others: a consumer of the
 * walk that follows each thread through its modes (running its own code,
 * in a system call, off the CPU by state, in an irq or softirq), charges
 * every moment to the functions open then, and collects the kernel events
 * per type, thread, function and syscall, the off-CPU waits per reason with
 * their wakers, and the block requests per issuing syscall.  What
 * `report --layers` and `report --kernel` print. */
#ifndef LP_KLAYER_H
#define LP_KLAYER_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/kother.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"

/* Where a thread's time goes: a partition (every nanosecond between a
 * thread's first and last event is in exactly one mode). */
enum klayer_mode {
	KL_USER = 0,  /* on a CPU, in the program's own code (or a library's) */
	KL_SYSCALL,   /* on a CPU, in a system call */
	KL_OFF_R,     /* off the CPU, preempted (runnable) */
	KL_OFF_S,     /* off the CPU, sleeping (interruptible wait) */
	KL_OFF_D,     /* off the CPU, blocked (uninterruptible wait, e.g. I/O) */
	KL_OFF_OTHER, /* off the CPU, another state (stopped, dead, idle) */
	KL_IRQ,       /* handling a hard irq that interrupted the thread */
	KL_SOFTIRQ,   /* handling softirqs that interrupted the thread */
	KL_MODES
};

/* Times and counts of one thread, or of one function's calls. */
struct klayer_parts {
	uint64_t ns[KL_MODES];
	uint64_t faults;         /* user page faults */
	uint64_t switches_vol;   /* switched out to wait (S, D, ...) */
	uint64_t switches_invol; /* preempted */
	uint64_t irqs, softirqs; /* handlers that interrupted it */
	uint64_t syscalls;
};

/* The name of a mode in the JSON ("user", "syscall", "off_cpu_R", ...). */
const char *klayer_mode_name(enum klayer_mode m);
/* off-CPU time of all states */
uint64_t klayer_off_ns(const struct klayer_parts *p);

/* One function, its calls merged by name over threads and images. */
struct klayer_func {
	char *name; /* owned */
	uint64_t calls, total_ns;
	struct klayer_parts incl, self;
};

struct klayer_thread {
	uint32_t image, pid, tid;
	char comm[17];
	uint64_t first_ns, last_ns;
	struct klayer_parts parts;
};

/* Counts of one tracepoint, in all and per thread, function, syscall. */
struct klayer_evrow {
	char name[136]; /* "group:event" */
	uint64_t count;
};

/* A count keyed by tracepoint and a name (thread, function or syscall). */
struct klayer_keyrow {
	char *event; /* owned, "group:event" */
	char *what;  /* owned */
	uint64_t count;
};

/* Off-CPU waits of one reason: the syscall the thread was in ("" when in
 * its own code) and its state. */
struct klayer_waker {
	char *who; /* owned: "thread 12 (writer) in write", "hardirq", "timer", ... */
	uint64_t count;
};
#define KLAYER_WAKERS_MAX 5u
struct klayer_wait {
	char syscall[40]; /* "" : not in a system call */
	char state;       /* 'R', 'S', 'D', '?' */
	uint64_t count, total_ns, max_ns;
	struct klayer_waker wakers[KLAYER_WAKERS_MAX]; /* the most frequent */
	uint32_t nwakers;
	uint64_t unknown_wakers; /* wake-ups not seen (no wake-up event of it) */
};

/* Block requests per issuing syscall (or "" outside one). */
struct klayer_block {
	char syscall[40];
	uint64_t issued, completed, total_ns, max_ns; /* time issue to completion */
};

struct klayer;

/* Sorted results, owned by the caller (klayer_result_release). */
struct klayer_result {
	struct klayer_func *funcs; /* by total time, then name */
	size_t nfuncs;
	struct klayer_thread *threads; /* in order of first event */
	size_t nthreads;
	struct klayer_evrow *events; /* by count, then name */
	size_t nevents;
	struct klayer_keyrow *by_thread, *by_func, *by_syscall; /* by count */
	size_t nby_thread, nby_func, nby_syscall;
	struct klayer_wait *waits; /* by total time */
	size_t nwaits;
	struct klayer_block *blocks;
	size_t nblocks;
	uint64_t kernel_events, undecodable; /* records seen, those without a usable format */
	uint64_t faults, switches, wakeups;
	/* switch-outs of a thread with no switch-in before its next one: a
	 * record the kernel did not deliver (not counted by it as lost) */
	uint64_t unpaired_switches;
	/* the CPUs those switch-outs were on, bit n for CPU n (bit 63: CPU 63
	 * or a later one): one CPU alone points at a kernel that never
	 * delivers what runs in that CPU's idle task (docs/performance.md) */
	uint64_t unpaired_cpus;
	/* other processes (record --kernel-system), apart from all the
	 * above, which are the program's only */
	struct kother_proc *others;
	size_t nothers;
	bool oom;
};

/* A consumer for walk w (which must outlive it).  NULL when out of memory. */
struct klayer *klayer_new(struct walk *w);
void klayer_free(struct klayer *kl);
/* Sets ops->ctx and the callbacks it needs; leaves the others. */
void klayer_walk_ops(struct klayer *kl, struct walk_ops *ops);
/* What was seen, merged and sorted.  Returns 0 or -ENOMEM (out empty). */
int klayer_collect(struct klayer *kl, struct klayer_result *out);
void klayer_result_release(struct klayer_result *r);

/* The running totals of thread s now (its last event seen): the
 * difference of two readings is what happened between them.  False when
 * the thread has had no event yet. */
bool klayer_thread_parts(struct klayer *kl, const struct walk_stream *s, struct klayer_parts *out);

/* Who woke thread wakee at wake_ns, in words ("thread 12 (writer) in
 * writer, syscall write", "timer (hardirq)", "hardirq", "task 99 (not
 * traced)", with --kernel-system "process 99 (sshd)"):
 * waker_tid and the flags are those of the wake-up event.  Call it once
 * the pass is over (it sorts what it needs on first use). */
void klayer_waker_text(struct klayer *kl, uint32_t wakee, uint64_t wake_ns, uint32_t waker_tid, bool hardirq,
                       bool softirq, bool timer, char *buf, size_t size);

/* The trace's tracepoint formats, parsed once per walk (and again when a
 * live session brings more); NULL when the trace has none or they are
 * unreadable (the reason in err).  Owned by the walk. */
const struct kformats *klayer_formats(struct walk *w, char *err, size_t errlen);

#endif
