/* The drain's folding stage for heap operations (record --mem-fold DUR):
 * a block allocated and released by the matching release (FREE for the C
 * allocations, DELETE for NEW, DELETE_ARRAY for NEW_ARRAY) within DUR, by
 * the same thread or another of its process, appears in neither event; it
 * is counted in a FOLD event of its allocation's stack in the allocating
 * thread's stream (common/memevent.h), so that an endless run of
 * short-lived blocks does not grow the trace, nor the host's state.
 *
 * One stage per stream holds its events back, so that they keep their time
 * order: at most MEMFOLD_QUEUE_MAX events (beyond that the oldest go out,
 * unfolded).  The stages of one process share a memfold_proc, which pairs
 * releases with allocations in the time order of the whole process: the
 * streams arrive in any interleaving, so an event is paired only once every
 * stream of the process has come that far (memfold_proc_expire: the caller
 * says up to when; with a single stream, as its events arrive).  An event
 * that comes in behind that point, or that had to go out before it was
 * paired, is not folded, nor is anything of its pointer around it.  Failed
 * and kept operations and REALLOCs are never folded; a release of another
 * family (a mismatch) is not folded either.  FOLD events of the sites with
 * counts go out once per MEMFOLD_PERIOD_NS of the stream's time and at its
 * end.  C11 and libc only; single-threaded. */
#ifndef LP_MEMFOLD_H
#define LP_MEMFOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/memevent.h"

#define MEMFOLD_QUEUE_MAX 65536u
#define MEMFOLD_SITES_MAX 65536u
#define MEMFOLD_PERIOD_NS 1000000000ull
/* pending allocations per process, at most */
#define MEMFOLD_PENDING_MAX (1u << 22)

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
struct memfold_proc;

/* The shared part of the stages of one process, pairing with the given
 * lifetime (> 0).  NULL when memory runs out.  Free with memfold_proc_free
 * (accepts NULL) once its stages are freed. */
struct memfold_proc *memfold_proc_new(uint64_t lifetime_ns);
void memfold_proc_free(struct memfold_proc *p);
/* The stages that belong to p now. */
uint32_t memfold_proc_stages(const struct memfold_proc *p);
/* Every stream of the process has given its events up to `now` (CLOCK_MONOTONIC
 * ns): pair them in time order, then write out of each stage the events
 * whose fate is known (older than the lifetime at now), and the FOLD
 * events due.  Call it after each round of reading all the streams. */
void memfold_proc_expire(struct memfold_proc *p, uint64_t now);

/* A stage of process p writing into sink (copied).  Returns NULL when
 * memory runs out; free with memfold_free (accepts NULL), which writes
 * nothing: call memfold_flush(f, true) first. */
struct memfold *memfold_new(struct memfold_proc *p, const struct memfold_sink *sink);
void memfold_free(struct memfold *f);

/* The stream's next event (ENTRY, EXIT or LONGJMP; a heap operation). */
void memfold_func(struct memfold *f, uint64_t ns, uint8_t type, uint64_t value);
void memfold_mem(struct memfold *f, uint64_t ns, const struct memevent *m);
/* Writes out every held event, before an event that does not go through
 * the stage (those not paired yet are not folded); with counts, also a
 * FOLD for every site with blocks folded since its last one (at the end of
 * the stream). */
void memfold_flush(struct memfold *f, bool counts);
void memfold_get_stats(const struct memfold *f, struct memfold_stats *out);
/* The time of the oldest event the stage holds, UINT64_MAX when none:
 * what goes into the stream beside it (syscall records) may go out up to
 * that time, not later. */
uint64_t memfold_oldest_ns(const struct memfold *f);

#endif
