/* Other processes' kernel events (record --kernel-system), kept apart
 * from the traced program's: per process, its threads folded in, the
 * events, the time on a CPU from its sched_switch records (switched in to
 * switched out; a thread on a CPU when the trace begins or ends counts
 * from its first switch-in to its last switch-out), the switches, and the
 * most frequent event types.  Fed by the kernel layer (klayer.c) with the
 * events of the walk's other streams (walk_stream.other). */
#ifndef LP_KOTHER_H
#define LP_KOTHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/kernel/kevent.h"
#include "host/lib/trace/walk.h"

#define KOTHER_TOP 5u /* event types given per process */
#define KOTHER_PROCS_MAX 65536u
#define KOTHER_IDS_MAX 4096u /* event types counted per process */

struct kother_evcount {
	char name[136]; /* "group:event" */
	uint64_t count;
};

struct kother_proc {
	uint32_t pid;
	char comm[17]; /* its main thread's, else its first thread's */
	uint32_t threads;
	uint64_t events, on_cpu_ns;
	uint64_t switches;                     /* switched out, in any state */
	uint64_t switches_vol;                 /* of them, to wait (S, D) */
	uint64_t switches_invol;               /* of them, preempted (R) */
	struct kother_evcount top[KOTHER_TOP]; /* by count, then name */
	uint32_t ntop;
};

struct kother;

/* NULL when out of memory. */
struct kother *kother_new(void);
/* Accepts NULL. */
void kother_free(struct kother *ko);
/* One kernel event of the other stream s: ev decoded, or NULL when it
 * did not decode (then counted only). */
void kother_kernel(struct kother *ko, const struct walk_stream *s, const struct walk_kernel *k,
                   const struct kevent *ev);
/* The processes seen, by time on a CPU, then events, then pid; their
 * event types named with kf (may be NULL).  *out is the caller's (free);
 * NULL with *n 0 when there are none.  Returns 0 or -ENOMEM. */
int kother_collect(const struct kother *ko, const struct kformats *kf, struct kother_proc **out, size_t *n);
/* True when some event was not counted for lack of memory. */
bool kother_oom(const struct kother *ko);

#endif
