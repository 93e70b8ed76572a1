/* The drain's folding stage for heap operations (record --mem-fold DUR):
 * a block allocated and released by the matching release (FREE for the C
 * allocations, DELETE for NEW, DELETE_ARRAY for NEW_ARRAY) on the same
 * thread within DUR appears in neither event; it is counted in a FOLD event
 * of its allocation's stack (common/memevent.h), so that an endless run of
 * short-lived blocks does not grow the trace, nor the host's state.
 *
 * The stage holds the stream's events back for up to DUR, so that they keep
 * their time order: at most MEMFOLD_QUEUE_MAX events (beyond that the
 * oldest go out, unfolded).  Blocks released by another thread, failed and
 * kept operations, and REALLOCs are never folded; a release of another
 * family (a mismatch) is not folded either.  FOLD events of the sites with
 * counts go out once per MEMFOLD_PERIOD_NS of the stream's time and at its
 * end.  C11 and libc only; one stage per stream, single-threaded. */
#ifndef LP_MEMFOLD_H
#define LP_MEMFOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/memevent.h"

#define MEMFOLD_QUEUE_MAX 65536u
#define MEMFOLD_SITES_MAX 65536u
#define MEMFOLD_PERIOD_NS 1000000000ull

struct memfold_sink {
	void *ctx;
	/* One event of the stream, in time order: LP_EV_ENTRY, LP_EV_EXIT
	 * (value: function address), LP_EV_LONGJMP (value: depth) or
	 * LP_EV_ALLOC (m; a FOLD among them). */
	void (*event)(void *ctx, uint64_t ns, uint8_t type, uint64_t value, const struct memevent *m);
};

struct memfold_stats {
	uint64_t blocks; /* blocks folded */
	uint64_t bytes;  /* their bytes */
	uint64_t folds;  /* FOLD events written */
};

struct memfold;

/* A stage with the given lifetime (> 0) writing into sink (copied).
 * Returns NULL when memory runs out; free with memfold_free (accepts NULL),
 * which writes nothing: call memfold_flush(f, true) first. */
struct memfold *memfold_new(uint64_t lifetime_ns, const struct memfold_sink *sink);
void memfold_free(struct memfold *f);

/* The stream's next event (ENTRY, EXIT or LONGJMP; a heap operation). */
void memfold_func(struct memfold *f, uint64_t ns, uint8_t type, uint64_t value);
void memfold_mem(struct memfold *f, uint64_t ns, const struct memevent *m);
/* Writes out the events older than the lifetime at `now` (the stream's
 * clock, CLOCK_MONOTONIC ns): call it now and then for a quiet stream. */
void memfold_expire(struct memfold *f, uint64_t now);
/* Writes out every held event, before an event that does not go through
 * the stage; with counts, also a FOLD for every site with blocks folded
 * since its last one (at the end of the stream). */
void memfold_flush(struct memfold *f, bool counts);
void memfold_get_stats(const struct memfold *f, struct memfold_stats *out);
/* The time of the oldest event the stage holds, UINT64_MAX when none:
 * what goes into the stream beside it (syscall records) may go out up to
 * that time, not later. */
uint64_t memfold_oldest_ns(const struct memfold *f);

#endif
