/* Memory tracer events in the trace (LP_EV_ALLOC and LP_EV_STACK): their
 * encoding, written by the drain, and their parsing, done by readers.  The
 * bodies follow the generic "varint length, bytes" form of types 6..13, so
 * readers that do not know them skip them.
 *
 * ALLOC (arg = enum lp_mem_op): varint flags, varint ptr, varint size,
 * varint stack; then for REALLOC varint old; for FOLD varint count, varint
 * bytes, varint lifetime_ns.
 * STACK: varint id, varint n, n x zigzag varint address as a delta from the
 * one before (innermost first; the first from 0).
 *
 * Stack ids are scoped to the stream (image, tid) and defined before their
 * first use in it. */
#ifndef LP_MEMEVENT_H
#define LP_MEMEVENT_H

#include <stdint.h>

#include "common/encoder.h"
#include "common/event.h"

#define MEMEVENT_STACK_MAX 64u

/* One heap operation.  FOLD: `count` blocks of the site `stack` were each
 * freed within `lifetime_ns` of their allocation, `bytes` in all, since the
 * site's previous FOLD; they appear in no other event (neither their
 * allocation nor their release).  ptr, size and old are 0 for a FOLD. */
struct memevent {
	uint8_t op;     /* enum lp_mem_op */
	uint32_t flags; /* enum lp_mem_flags */
	uint64_t ptr, size, old;
	uint32_t stack;
	uint64_t count, bytes, lifetime_ns; /* FOLD */
};

struct stackevent {
	uint32_t id;
	uint32_t n;
	uint64_t ips[MEMEVENT_STACK_MAX]; /* innermost first */
};

void encoder_mem(struct encoder *e, uint64_t ns, const struct memevent *m);
/* n at most MEMEVENT_STACK_MAX (deeper frames are cut). */
void encoder_stack(struct encoder *e, uint64_t ns, uint32_t id, const uint64_t *ips, uint32_t n);

/* Parse a decoded LP_EV_ALLOC / LP_EV_STACK event.  Return 0, or -EBADMSG
 * when the body is malformed (the event is then ignored). */
int memevent_parse(const struct lp_event *ev, struct memevent *out);
int stackevent_parse(const struct lp_event *ev, struct stackevent *out);

#endif
