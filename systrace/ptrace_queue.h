/* The record queue of the ptrace backend, between the tracer thread, which
 * adds a record at each recorded stop, and the caller's thread, which takes
 * them all in pt_poll.  Double-buffered: records go into one buffer while
 * the caller empties the other.  Only for the ptrace backend
 * (systrace/ptrace*.c). */
#ifndef LP_SYSTRACE_PTRACE_QUEUE_H
#define LP_SYSTRACE_PTRACE_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "systrace/systrace.h"

/* Each buffer holds at most this many records and bytes; beyond, records
 * are counted as lost.  A buffer starts at PT_QUEUE_FIRST bytes. */
#define PT_QUEUE_RECORDS (64u * 1024u)
#define PT_QUEUE_BYTES (4u << 20)
#define PT_QUEUE_FIRST (64u << 10)
/* How long the tracee may be held when the queue is full before records
 * are dropped (once per fill of the queue, not per record). */
#define PT_FULL_WAIT_NS 20000000L

/* A queue entry: a record, or (kind PT_LOST) a count of lost ones. */
#define PT_LOST 3u
#define PT_NO_STR UINT32_MAX
struct pt_entry {
	uint32_t size; /* bytes, the ips and the string included; a multiple of 8 */
	uint8_t kind;  /* enum sysrec_kind, or PT_LOST */
	uint8_t arch;
	uint16_t nips;
	uint32_t pid, tid, nr;
	uint32_t str_len; /* PT_NO_STR: none */
	uint64_t ns;
	int64_t ret; /* EXIT: the return value; PT_LOST: the count */
	uint64_t args[6];
	/* then nips return addresses and str_len bytes of string */
};

/* One buffer of entries, grown up to PT_QUEUE_BYTES. */
struct pt_buf {
	unsigned char *buf;
	size_t len, cap;
	uint32_t count;
};

/* The queue has no lock of its own: the backend's lock guards every field
 * but `spare`, and the functions below say whether they must be called with
 * it held.  A zeroed struct is an empty queue. */
struct pt_queue {
	struct pt_buf fill;     /* records being added */
	bool dropping;          /* the queue was full: drop without waiting */
	uint32_t full_wait_ms;  /* how long to wait for room; 0: PT_FULL_WAIT_NS */
	uint64_t lost_total;    /* every lost record */
	uint64_t lost_nothread; /* lost records of tasks gone before they could be reported */
	struct pt_buf spare;    /* the caller's thread only */
};

/* Under the lock, on the tracer thread: queues record e with its nips
 * return addresses and its string (e->size is set here), preceded by a lost
 * marker for the *lost records its thread lost before (*lost becomes 0).
 * When the queue is full, waits on `cond` (releasing `lock`) up to
 * full_wait_ms (or PT_FULL_WAIT_NS) for the caller to empty it, once per fill; when there is
 * still no room, counts the record in *lost and returns false.  Called at
 * every recorded stop: no allocation once the buffers have grown. */
bool pt_queue_push(struct pt_queue *q, pthread_mutex_t *lock, pthread_cond_t *cond, struct pt_entry *e,
                   const uint64_t *ips, const char *str, uint64_t *lost);
/* Under the lock: queues a lost marker for the *lost records of thread tid
 * (process pid) and sets *lost to 0; nothing when *lost is 0.  `force`
 * ignores the bounds (a gone task's last count, at most one per task); a
 * marker that finds no room is added to lost_nothread. */
void pt_queue_put_lost(struct pt_queue *q, uint32_t pid, uint32_t tid, uint64_t *lost, bool force);
/* Under the lock: one more record lost, counted in *lost (the thread's
 * unreported losses) and in lost_total. */
void pt_queue_lose(struct pt_queue *q, uint64_t *lost);

/* Under the lock, on the caller's thread: takes the filled buffer into
 * *out, which the caller owns until it gives it back with pt_queue_deliver,
 * and the count of lost records of gone tasks into *lost_nothread; new
 * records go into the spare buffer.  The caller then broadcasts the
 * backend's cond to wake a tracer waiting for room. */
void pt_queue_take(struct pt_queue *q, struct pt_buf *out, uint64_t *lost_nothread);
/* Without the lock, on the caller's thread: hands each record of b to
 * ops->sys and each lost marker to ops->lost, then lost_nothread (when not
 * 0) to ops->lost as of an unknown thread, and keeps b, emptied, as the
 * spare buffer.  Returns the number of records. */
long pt_queue_deliver(struct pt_queue *q, struct pt_buf *b, uint64_t lost_nothread, const struct systrace_ops *ops);

/* Frees both buffers.  The tracer thread has ended. */
void pt_queue_release(struct pt_queue *q);

#endif
