/* The kernel tracks of the web UI's server: what the kernel did with the
 * traced threads, from the kernel events (record --kernel) of the model's
 * one pass.  Per thread, its time off the CPU (switch-out to switch-in)
 * with the state it left in, the system call it was in and who woke it,
 * and the interrupt handlers that ran on it; per CPU, the slices in which
 * it ran a traced thread; and the off-CPU time summed per call path (the
 * points of the off-CPU flame graph, on the model's call trees).
 *
 * A consumer of the walk that takes only kernel events and the streams'
 * ends: nothing per function call.  The call path at a switch-out is read
 * from the call trees' open frames, so the trees' consumer must come
 * before this one in the walk's list.
 *
 * Memory is bounded: KTRACK_ITEMS_MAX intervals of each kind and
 * KTRACK_POINTS_MAX path sums; what is past them is counted (dropped_*).
 * Not thread-safe. */
#ifndef LP_SERVE_KTRACK_H
#define LP_SERVE_KTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/analysis/calltree.h"
#include "host/lib/serve/flame.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"
#include "host/lib/util/names.h"

#define KTRACK_ITEMS_MAX (2u << 20)  /* off-CPU intervals, irq intervals and run slices kept, each */
#define KTRACK_POINTS_MAX (1u << 20) /* distinct (thread, call path, syscall) off-CPU sums */
#define KTRACK_CPUS_MAX 4096u        /* CPUs told apart; others are not drawn */
#define KTRACK_IRQ_NEST 8u           /* handlers open at once on a thread */
/* A wake-up from an interrupt this soon after the expiry of the thread's
 * timer on the same CPU is the timer's (as the kernel layer counts it). */
#define KTRACK_TIMER_WAKE_NS 200000ull

/* Who woke a thread. */
enum ktrack_waker {
	KTRACK_WAKER_NONE = 0, /* no wake-up seen (or preempted: none needed) */
	KTRACK_WAKER_THREAD,   /* a task, in its own context */
	KTRACK_WAKER_HARDIRQ,
	KTRACK_WAKER_SOFTIRQ,
	KTRACK_WAKER_TIMER, /* the thread's timer, from its interrupt */
};

/* One stretch of a thread off the CPU. */
struct ktrack_off {
	uint64_t start, end; /* trace ns: switch-out, switch-in */
	uint64_t wake_ns;    /* the wake-up that ended the wait; 0: none seen */
	uint32_t waker_tid;  /* the task the wake-up ran in (0: the idle task) */
	uint32_t who;        /* texts id: who woke it, in the kernel layer's words; NAMES_NONE */
	uint32_t sys;        /* texts id: the system call it was in; NAMES_NONE */
	uint16_t cpu;        /* where it ran before */
	uint16_t wake_cpu;   /* where the wake-up ran */
	uint8_t state;       /* 'R' preempted, 'S', 'D', '?' (kevent_switch_state) */
	uint8_t waker;       /* enum ktrack_waker */
};

/* An interrupt handler that ran on a thread. */
struct ktrack_irq {
	uint64_t start, end;
	uint32_t what; /* texts id: "irq 17 (eth0)", "softirq TIMER" */
	uint16_t cpu;
	uint8_t soft;
};

/* A CPU running a traced thread. */
struct ktrack_slice {
	uint64_t start, end;
	uint32_t thread; /* walk_stream.index */
	uint16_t cpu;
	/* texts id: "comm pid" of another process's thread (record
	 * --kernel-system); NAMES_NONE for the program's */
	uint32_t other;
};

/* One thread's tracks: intervals in time order (irqs by their end). */
struct ktrack_thread {
	struct ktrack_off *off;
	uint32_t noff, off_cap;
	struct ktrack_irq *irq;
	uint32_t nirq, irq_cap;
	/* the pass's state */
	struct walk_stream *ws;
	bool known;   /* a kernel event of it was seen */
	bool running; /* on a CPU since run_start */
	uint64_t run_start;
	uint16_t run_cpu;
	bool is_off; /* off the CPU since the pending off's start */
	struct ktrack_off pending;
	uint32_t other;        /* another process's thread: its slices' name (texts id); NAMES_NONE */
	uint32_t pending_node; /* the call path it left on */
	uint64_t pending_leaf; /* and the system call (CALLTREE_SYSCALL_KEY, 0) */
	bool woken_waking;     /* the wake-up seen was a sched_waking */
	uint64_t timer_ns;     /* the last expiry of its timer */
	uint16_t timer_cpu;
	struct ktrack_irq open[KTRACK_IRQ_NEST];
	uint32_t nopen;
};

struct ktrack {
	struct ktrack_thread **threads; /* owned; by walk_stream.index, NULL for a thread without kernel events */
	uint32_t nthreads;
	struct ktrack_slice *slices; /* by (cpu, start) once settled */
	size_t nslices, slices_cap;
	bool sorted;       /* slices are in order and cpus is current */
	uint16_t *cpus;    /* the CPUs that ran a traced thread, ascending */
	size_t *cpu_first; /* ncpus + 1: their slices are [cpu_first[i], cpu_first[i + 1]) */
	uint32_t ncpus;
	struct flame_point *points; /* off-CPU time per (thread, call path, syscall) */
	uint32_t npoints, points_cap;
	struct hashindex point_index;
	struct names texts;    /* wakers, syscalls and interrupts in words */
	uint64_t noffs, nirqs; /* intervals kept, of all threads */
	uint64_t dropped_off, dropped_irq, dropped_slices, dropped_points;
	bool oom;
	/* the pass's (borrowed) */
	struct walk *w;
	const struct calltree *ct;
	const struct kformats *kf;
	size_t kformat_len; /* of w's formats when kf was had */
};

void ktrack_init(struct ktrack *kt);
/* Frees everything; accepts a zeroed ktrack. */
void ktrack_release(struct ktrack *kt);

/* The walk callbacks (ctx is the struct ktrack): sets ops->ctx, kernel and
 * end.  w and ct (the call trees the same walk builds, earlier in its
 * list) are borrowed until the pass ends. */
void ktrack_walk_ops(struct ktrack *kt, struct walk *w, const struct calltree *ct, struct walk_ops *ops);

/* Puts the slices in order (after the pass, and in a live session before
 * each window).  Returns 0 or -ENOMEM. */
int ktrack_settle(struct ktrack *kt);

/* The thread at walk_stream.index `index`, or NULL when it has no kernel
 * track. */
struct ktrack_thread *ktrack_thread(const struct ktrack *kt, uint32_t index);

/* Adds room for one more item of a thread's (kind: 0 off, 1 irq) or a
 * slice, within KTRACK_ITEMS_MAX.  For the index file's reader; the pass
 * uses them too.  NULL when the bound is reached or memory ran out. */
struct ktrack_thread *ktrack_thread_make(struct ktrack *kt, uint32_t index);
struct ktrack_off *ktrack_add_off(struct ktrack *kt, struct ktrack_thread *t);
struct ktrack_irq *ktrack_add_irq(struct ktrack *kt, struct ktrack_thread *t);
struct ktrack_slice *ktrack_add_slice(struct ktrack *kt);
/* Adds ns (and count) to the point of (stream, node, leaf).  Returns 0,
 * or -ENOSPC past KTRACK_POINTS_MAX (counted), -ENOMEM. */
int ktrack_add_point(struct ktrack *kt, uint32_t stream, uint32_t node, uint64_t leaf, uint64_t ns, uint64_t count);

/* The first of n items of `size` bytes that ends after t: where a window
 * from t begins.  The items are any of the structs above (a start, then an
 * end, as their first members), in an order where their ends never
 * decrease (every list here is). */
size_t ktrack_first_after(const void *items, size_t n, size_t size, uint64_t t);

#endif
