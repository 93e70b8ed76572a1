/* The heap state of a live session (`layerprof live --memory`, `snapshot
 * --connect`): the heap operations of the stream fed into a heap state
 * (heap.h) as they arrive, merged by time across threads (heap/feed.h) with
 * a horizon of a few flush periods, settled before each view; the memory
 * view drawn from it (text rows or JSON) and the snapshot file written
 * from it.  Not thread-safe; everything runs on the command's loop. */
#ifndef LP_LIVEMEM_H
#define LP_LIVEMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

/* The merge waits this many flush periods for another thread's older
 * events before applying (the agent sends partial chunks every period). */
#define LIVEMEM_HORIZON_FLUSHES 2u
#define LIVEMEM_HORIZON_MIN_NS 20000000ull /* 20 ms */

struct livemem {
	bool on; /* the session traces heap operations: everything below is set up */
	struct heap h;
	struct heapfeed feed;
	struct walk *w; /* borrowed: the session's walk */
	/* the target's clock: the newest operation time seen and the host's
	 * clock when it was seen, to tell how far the target has got while
	 * the stream is quiet */
	uint64_t seen_ns, seen_host_ns;
	/* the agent's word on the program's interposers (SESSION memory=):
	 * "preloaded", "none", or "" when the agent did not say */
	char agent_mem[16];
	bool finished; /* livemem_finish: everything applied */
};

/* Sets up the heap state fed from w's memory events (w borrowed; its ops
 * are set with livemem_walk_ops), merging with a horizon of
 * LIVEMEM_HORIZON_FLUSHES times flush_ns.  Returns 0 or -ENOMEM; release
 * with livemem_release (also after a failure).  A livemem that was never
 * initialised (zeroed, on false) may be released too. */
int livemem_init(struct livemem *m, struct walk *w, uint64_t flush_ns);
void livemem_release(struct livemem *m);

/* The walk callbacks of the heap (ctx must be the livemem): heap
 * operations, task events and losses. */
void livemem_mem(struct livemem *m, struct walk_stream *s, const struct walk_mem *op);
void livemem_task(struct livemem *m, struct walk_stream *s, uint64_t ns, unsigned kind, uint64_t value);
void livemem_lost(struct livemem *m, struct walk_stream *s, uint64_t ns, uint64_t count);

/* A chunk was fed to the walk at host_now (CLOCK_MONOTONIC of this host):
 * dates the newest time seen in it. */
void livemem_fed(struct livemem *m, uint64_t host_now);

/* The stream begins (again) after the program did: from now on a release
 * of a block never seen allocated is not illegal (heap_set_partial).
 * target_ns: when, on the target's clock (0: unknown). */
void livemem_partial(struct livemem *m, uint64_t target_ns);
/* Tracing was turned on again (host_now: the host's clock when it asked):
 * a block released before may have been allocated again while it was off,
 * so its release now is not a double free (heap_resumed). */
void livemem_resumed(struct livemem *m, uint64_t host_now);

/* Brings the state up to the target's present minus the horizon (host_now:
 * CLOCK_MONOTONIC of this host) and settles it, before a view. */
void livemem_settle(struct livemem *m, uint64_t host_now);
/* The stream ended: applies everything held and settles. */
void livemem_finish(struct livemem *m);

/* The moment the state describes, on the target's clock. */
uint64_t livemem_state_ns(const struct livemem *m);

/* The memory view in text, at most max site rows (SIZE_MAX: all), lines
 * cut to width (0: no limit), each line ended with eol.  origin_ns: times
 * are shown from there.  The state must be settled. */
void livemem_text(struct livemem *m, size_t max, int width, const char *eol, uint64_t origin_ns);
/* The memory view as the JSON member "memory": the object `report
 * --memory --format json` gives, with the live session's additions. */
void livemem_json(struct livemem *m, struct json *j);

/* What a snapshot file says besides the heap state. */
struct livemem_snapinfo {
	const char *target;  /* the agent's address */
	const char *command; /* the traced command line, or NULL */
	uint64_t origin_ns;  /* when the session's stream began */
};

/* Writes the snapshot of the settled state to path ('-': stdout), source
 * "live".  Returns 0, or -errno with the reason in err. */
int livemem_snapshot(struct livemem *m, const char *path, const struct livemem_snapinfo *si, char *err, size_t errlen);
/* The same snapshot written to f (left open).  Returns 0 or -errno. */
int livemem_snapshot_write(struct livemem *m, FILE *f, const struct livemem_snapinfo *si);

/* When the stream the state is built from began (the target's clock): the
 * session's start, or with a partial state the moment it covers from. */
uint64_t livemem_covers_from(const struct livemem *m);

#endif
