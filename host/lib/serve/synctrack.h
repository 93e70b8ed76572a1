/* The synchronisation tracks of the web UI's server (GET /api/sync_tracks):
 * for a trace recorded with --sync, each thread's waits (a lock,
 * condition, semaphore, barrier or join that had to wait) with the thread
 * that released each one (trace/syncwake.h), drawn as spans on the
 * thread rows under the timeline with an arrow from the releaser, as the
 * kernel tracks draw wake-ups.
 *
 * A consumer of the walk that takes only sync events and the streams'
 * ends.  The waits are kept to the end of the pass (a releaser's stream
 * may come later in the file) and made into per-thread tracks by
 * synctrack_settle; for a live session again whenever new events came.
 * They are kept in serve's index file (synctrack_index_write/_read).
 * Memory: SYNCWAKE_EVENTS_MAX events.  Not thread-safe. */
#ifndef LP_SERVE_SYNCTRACK_H
#define LP_SERVE_SYNCTRACK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/trace/syncwake.h"
#include "host/lib/trace/walk.h"

#define SYNCTRACK_THREADS_MAX 64u   /* thread rows in one answer */
#define SYNCTRACK_ARROWS_MAX 4096u  /* release arrows in one answer */
#define SYNCTRACK_ITEMS_MAX 400000u /* wait boxes in one answer */
#define SYNCTRACK_NO_SYNC "no sync events in this trace: the sync tracks need a trace recorded with --sync"

/* One wait of a thread (start, end first: ktrack_first_after reads them). */
struct synctrack_wait {
	uint64_t start, end; /* trace ns */
	uint64_t release_ns; /* when its releaser let it go; 0: not known */
	uint64_t obj, obj2;
	uint64_t func;  /* the function that waited (0: none) */
	uint32_t waker; /* walk_stream.index of the releaser; SYNCWAKE_NONE */
	uint32_t flags; /* enum lp_sync_flags */
	uint8_t op;     /* enum lp_sync_op */
};

/* One thread's waits, in order of their ends. */
struct synctrack_thread {
	struct synctrack_wait *w;
	uint32_t n, cap;
};

struct synctrack {
	bool has_sync;                    /* the trace has sync events */
	uint64_t events;                  /* sync events of the walk */
	uint64_t waits;                   /* waits on the tracks */
	uint64_t dropped;                 /* sync events not kept (syncwake's bound) */
	struct synctrack_thread *threads; /* owned; by walk_stream.index */
	uint32_t nthreads;
	bool settled; /* the tracks hold what the walk gave */
	bool oom;
	struct syncwake sw; /* the pass's events; let go of after a trace file's */
};

void synctrack_init(struct synctrack *st);
/* Frees everything; accepts a zeroed one. */
void synctrack_release(struct synctrack *st);

/* Sets ops->ctx, sync and end to feed st. */
void synctrack_walk_ops(struct synctrack *st, struct walk_ops *ops);

/* Makes the tracks from the events taken in (after the pass; in a live
 * session when new events came).  w: the walk (its counts); keep: keep
 * the events for a later call (live), else they are let go of.  Returns
 * 0 or -ENOMEM. */
int synctrack_settle(struct synctrack *st, const struct walk *w, bool keep);

struct servemodel;
struct serve_query;
struct json;

/* Answers GET /api/sync_tracks?from=NS&to=NS&px=W&thread=ID into j (out
 * for errors); {"sync": false, "reason"} for a trace without sync events.
 * Returns the HTTP status as serveapi_get. */
int synctrack_answer(struct servemodel *m, const struct serve_query *q, struct json *j, FILE *out);

#endif
