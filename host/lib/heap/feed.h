/* Feeds the heap state builder (heap.h) from the event walk: resolves each
 * heap operation's stack to its call site and merges the operations and
 * task events of all threads by time before applying them.
 *
 * Why a merge: a thread's events reach the file in chunks, so in file
 * order one thread's free can come before another thread's allocation of
 * the same block.  The feed holds items in a min-heap by time and applies
 * them up to the walk's watermark (walk_run_by_time: exact, holding only
 * what overlapping chunks bring), or, without one, the earliest when
 * HEAPFEED_WINDOW items are held, and with a horizon those older than the
 * newest by more than the horizon (a live stream whose chunks are flushed
 * regularly).  Items arriving earlier than one already applied are applied
 * anyway and counted in `late`. */
#ifndef LP_HEAPFEED_H
#define LP_HEAPFEED_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/heap/heap.h"
#include "host/lib/trace/walk.h"

#define HEAPFEED_WINDOW (1u << 18)

struct heapfeed_item;

struct heapfeed {
	struct walk *w;
	struct heap *h;
	uint64_t stop_ns;        /* nonzero: items later than this are not applied */
	uint64_t horizon_ns;     /* nonzero: apply items older than newest - horizon */
	struct heapfeed_item *q; /* min-heap by (ns, seq) */
	uint32_t n, cap;
	uint64_t seq;
	uint64_t newest_ns, applied_ns;
	uint64_t late;    /* items earlier than one already applied */
	uint64_t stopped; /* items after stop_ns, not applied */
	uint32_t *sites;  /* per heap stack: its site + 1, 0 not yet named */
	uint32_t nsites;
	bool oom;
	bool meta_seen; /* the trace's META looked at (attached: partial) */
};

/* Sets up a feed into h, resolving names with w's symbolizer (both
 * borrowed).  Returns 0 or -ENOMEM. */
int heapfeed_init(struct heapfeed *f, struct walk *w, struct heap *h);
void heapfeed_release(struct heapfeed *f);
/* Puts the feed's callbacks into ops (ctx, mem, task, lost, watermark);
 * other members are
 * left as they are. */
void heapfeed_walk_ops(struct heapfeed *f, struct walk_ops *ops);
/* The heap of a trace: one pass over w (opened, not yet walked) feeding h
 * and f (both set up here: release them also after a failure), the
 * operations after stop_ns left out (0: none), then h settled.  Returns 0
 * or -ENOMEM. */
int heapfeed_pass(struct walk *w, struct heap *h, struct heapfeed *f, uint64_t stop_ns);
/* The walk callbacks themselves (ctx is the struct heapfeed), for a
 * consumer that wraps them. */
void heapfeed_mem(void *ctx, struct walk_stream *s, const struct walk_mem *m);
void heapfeed_task(void *ctx, struct walk_stream *s, uint64_t ns, unsigned kind, uint64_t value);
void heapfeed_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count);
void heapfeed_watermark(void *ctx, uint64_t ns);
/* Applies every item held (the end of a trace, or a view of a live
 * stream that wants everything so far) and moves the heap's sampling clock
 * to end_ns (0: leave it). */
void heapfeed_flush(struct heapfeed *f, uint64_t end_ns);

/* The call site of a stack: the first return address outside the C and
 * C++ runtime libraries, the loader and layerprof's own libraries, else the
 * innermost; 0 without a stack. */
uint64_t heapfeed_site_frame(struct walk *w, uint32_t image, const uint64_t *ips, uint32_t n);

#endif
