/* Who let a waiting thread go: for each synchronisation wait of a trace
 * (record --sync: an operation with wait_ns > 0), the thread whose release
 * ended it and when, from the sync events of all threads taken in time
 * order.  The views that draw a wait with an arrow from its releaser use
 * it: `flow`, the Chrome export and the web UI's timeline.
 *
 * The releaser of a wait on object o that began at b and ended at e is the
 * thread of the last release of o by another thread in [b, e]:
 * - mutex-lock: mutex-unlock; rwlock-rdlock and -wrlock: rwlock-unlock;
 *   spin-lock: spin-unlock; sem-wait: sem-post; cond-wait (o the
 *   condition): cond-signal or cond-broadcast;
 * - barrier-wait: the thread that arrived last at the barrier (the latest
 *   begin of a barrier-wait on o in [b, e]), at its arrival;
 * - join (o the pthread_t): the thread that began with that pthread_t
 *   (LP_SYNC_THREAD), at its stream's last event (syncwake_thread_end),
 *   or unknown time when not told.
 * Objects are told apart per process (pid).  A wait that timed out or
 * failed has no releaser; neither has one whose release is not in the
 * trace (the releaser's thread not traced, or its event lost).
 *
 * Only what this needs is kept: operations that waited (also those that
 * timed out), releases, barrier waits and thread starts, at most
 * SYNCWAKE_EVENTS_MAX (the rest counted in dropped).
 * Not thread-safe. */
#ifndef LP_SYNCWAKE_H
#define LP_SYNCWAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/trace/walk.h"

#define SYNCWAKE_NONE UINT32_MAX        /* no releaser known */
#define SYNCWAKE_EVENTS_MAX (4u << 20)  /* events kept */
#define SYNCWAKE_THREADS_MAX (1u << 20) /* thread ids told apart */

struct syncwake_event {
	uint64_t ns;      /* the operation's end (walk_sync.ns) */
	uint64_t wait_ns; /* the wait began wait_ns before ns */
	uint64_t obj, obj2, site;
	uint64_t func; /* the function under way (walk_sync.func) */
	uint32_t depth;
	uint32_t pid, tid;
	uint32_t thread; /* the caller's id of the thread (walk_stream.index) */
	uint32_t flags;  /* enum lp_sync_flags */
	uint32_t seq;    /* order of adding: ties of ns keep it */
	uint8_t op;      /* enum lp_sync_op */
	/* after syncwake_resolve, for a wait: the thread that let it go
	 * (SYNCWAKE_NONE: not known) and when (0: not known) */
	uint32_t waker;
	uint64_t release_ns;
};

struct syncwake {
	struct syncwake_event *ev; /* owned; in time order after syncwake_resolve */
	size_t n, cap;
	uint64_t *ends; /* owned: per thread id, its last event (0: not told) */
	uint32_t nends;
	uint64_t dropped; /* events past SYNCWAKE_EVENTS_MAX, not kept */
	bool oom, resolved;
};

void syncwake_init(struct syncwake *sw);
/* Frees everything; accepts a zeroed one. */
void syncwake_release(struct syncwake *sw);

/* Whether an event is a wait that may have a releaser: it waited
 * (wait_ns > 0), did not fail and is of an operation that blocks on
 * another thread. */
bool syncwake_is_wait(uint8_t op, uint32_t flags, uint64_t wait_ns);

/* Takes one sync event of thread `thread` (pid, tid) in.  Events may come
 * in any order (syncwake_resolve sorts them).  Returns 0 (also for an
 * event not kept: not needed, or counted in dropped), or -ENOMEM. */
int syncwake_add(struct syncwake *sw, uint32_t thread, uint32_t pid, uint32_t tid, const struct walk_sync *y);
/* Thread `thread`'s last event was at ns (when a joined thread ended).
 * Returns 0 or -ENOMEM; ids from SYNCWAKE_THREADS_MAX on are ignored. */
int syncwake_thread_end(struct syncwake *sw, uint32_t thread, uint64_t ns);

/* Sorts the events by time and finds every wait's releaser.  Can run
 * again after more events came (a live session).  Returns 0 or -ENOMEM. */
int syncwake_resolve(struct syncwake *sw);

/* After syncwake_resolve: the kept event of thread with end time ns, op
 * and object obj, or NULL.  Valid until the next syncwake_add or
 * syncwake_resolve. */
const struct syncwake_event *syncwake_find(const struct syncwake *sw, uint32_t thread, uint64_t ns, uint8_t op,
                                           uint64_t obj);
/* The index of the first kept event whose end is at or after ns. */
size_t syncwake_first_at(const struct syncwake *sw, uint64_t ns);

/* The walk consumer that feeds sw: sets ops->ctx, sync and end (threads
 * are walk_stream.index; a stream's end tells its last event). */
void syncwake_walk_ops(struct syncwake *sw, struct walk_ops *ops);

#endif
