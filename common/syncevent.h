/* Synchronisation events in the trace (LP_EV_SYNC, record --sync): their
 * encoding, written by the drain, and their parsing, done by readers.  The
 * body follows the generic "varint length, bytes" form of types 6..13:
 *
 *   varint op (enum lp_sync_op), varint flags (enum lp_sync_flags),
 *   varint object, varint wait_ns, varint call site, varint second object
 *
 * The event's time is the operation's end (acquired, woken, returned; for
 * a release, signal or post, when it was made); the wait, if any, began
 * wait_ns before it. */
#ifndef LP_SYNCEVENT_H
#define LP_SYNCEVENT_H

#include <stdint.h>

#include "common/encoder.h"
#include "common/event.h"

struct syncevent {
	uint8_t op;       /* enum lp_sync_op */
	uint32_t flags;   /* enum lp_sync_flags */
	uint64_t obj;     /* the lock, condition, barrier, semaphore or pthread_t */
	uint64_t obj2;    /* COND_WAIT: the mutex; else 0 */
	uint64_t wait_ns; /* how long it waited (0: not at all) */
	uint64_t site;    /* the call site (the address after the call), 0: unknown */
};

void encoder_sync(struct encoder *e, uint64_t ns, const struct syncevent *y);

/* Parse a decoded LP_EV_SYNC event.  Return 0, or -EBADMSG when the body
 * is malformed or the operation unknown (the event is then ignored). */
int syncevent_parse(const struct lp_event *ev, struct syncevent *out);

/* The operation's name as the reports print it ("mutex-lock", ...), or
 * "?" for an unknown one. */
const char *syncevent_op_name(unsigned op);

#endif
