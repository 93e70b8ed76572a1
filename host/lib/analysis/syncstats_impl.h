/* The parts of the synchronisation statistics (syncstats.h) shared by
 * their files: syncstats.c (the tables and the accounting of each
 * operation), syncwalk.c (the walk's callbacks: each thread's events in
 * its stream's order, the futex waits placed, the merge by time) and
 * syncresult.c (the sorted results).  Private to host/lib/analysis. */
#ifndef LP_SYNCSTATS_IMPL_H
#define LP_SYNCSTATS_IMPL_H

#include "host/lib/analysis/syncstats.h"

/* A lock a thread holds: depth > 1 for a recursive one. */
struct syncstats_held {
	uint32_t object;
	uint32_t depth;
	uint64_t since;
};

/* A futex wait of a thread, held back until its next operation. */
struct syncstats_pending {
	uint64_t enter_ns, exit_ns, uaddr;
	int64_t ret;
	uint64_t func; /* as walk_syscall's */
	uint32_t depth;
};

/* pthread_t -> thread, per image. */
struct syncstats_ptmap {
	uint32_t image;
	uint64_t pthread;
	uint32_t thread;
};

/* An item's flag beside enum lp_sync_flags: a condition wait's letting go
 * of its mutex (obj2) when the wait began, made by the merge from the
 * wait's record so that the release comes in time order. */
#define SYNCSTATS_ITEM_LET_GO (1u << 31)

/* One operation waiting in the merge by time. */
struct syncstats_item {
	uint64_t ns, seq, obj, obj2, wait_ns, site;
	uint64_t func; /* as walk_sync's */
	uint32_t depth;
	uint32_t thread, flags;
	uint8_t op;
};

/* Grows *arr (of *cap items of size) to hold n + 1, up to max items.
 * Returns 0, or -ENOSPC / -ENOMEM. */
int syncstats_grow(void **arr, uint32_t *cap, uint32_t n, size_t size, uint32_t max);
/* The thread of stream s, made on first use; NULL past the bounds
 * (counted) or out of memory.  Pointers into the tables stay valid until
 * the next call that may make an entry (the *_get functions). */
struct syncstats_thread *syncstats_thread_get(struct syncstats *st, struct walk_stream *s);
/* The thread of s if known, else NULL. */
struct syncstats_thread *syncstats_thread_find(struct syncstats *st, const struct walk_stream *s);
/* The index of object (image of t, addr, kind), made on first use at ns
 * (named then by the namer); UINT32_MAX past the bounds (counted). */
uint32_t syncstats_object_get(struct syncstats *st, const struct syncstats_thread *t, uint64_t addr, uint8_t kind,
                              uint64_t ns, uint64_t site);
/* The use of object by thread; NULL past the bounds (counted). */
struct syncstats_use *syncstats_use_get(struct syncstats *st, uint32_t object, uint32_t thread);
/* Counts a wait of ns on o by t (u may be NULL), as a wait of kind. */
void syncstats_add_wait(struct syncstats *st, struct syncstats_object *o, struct syncstats_use *u,
                        struct syncstats_thread *t, unsigned kind, uint64_t ns);
/* Hands the wait of t in operation it (from begin to it->ns) to the hook
 * and the longest waits; waker is a thread index + 1 (0: none), object an
 * object index (UINT32_MAX: a join). */
void syncstats_emit_wait(struct syncstats *st, const struct syncstats_thread *t, unsigned kind,
                         const struct syncstats_item *it, uint64_t begin, uint32_t waker, uint64_t waker_ns,
                         uint32_t object);
/* thread (index) signalled, broadcast, posted or woke o at ns. */
void syncstats_signalled(struct syncstats_object *o, struct syncstats_use *u, uint32_t thread, uint64_t ns);
/* Applies one operation (in time order, from the merge). */
void syncstats_apply(struct syncstats *st, const struct syncstats_item *it);
/* Names o through the namer if it has no name yet. */
void syncstats_name_object(struct syncstats *st, struct syncstats_object *o, uint64_t ns);
/* o's p99 wait (syncstats.h: wait_p99_ns). */
uint64_t syncstats_object_p99(const struct syncstats *st, struct syncstats_object *o);
/* Places t's held-back futex waits: those inside [begin, end] are an
 * interposed operation's own wait, left out; the others are counted. */
void syncstats_futex_place(struct syncstats *st, struct syncstats_thread *t, uint64_t begin, uint64_t end);

#endif
