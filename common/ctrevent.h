/* Counter events in the trace (LP_EV_COUNTER, record --counters): their
 * encoding, written by the drain and the recorder, and their parsing, done
 * by readers.  The body follows the generic "varint length, bytes" form of
 * types 6..13:
 *
 *   varint kind (enum lp_ctr_kind), varint flags (enum lp_ctr_flags),
 *   varint function (ENTRY, EXIT; else 0), varint cpu (CPU; else 0),
 *   varint n, n x varint value,
 *   with LP_CTR_HAS_TIMES: n x (varint enabled_ns, varint running_ns)
 *
 * Value i is the count of the i-th counter of the trace's set (META
 * "counters", comma-separated perf names, in order).  A thread's values
 * (BEGIN, ENTRY, EXIT, SAMPLE, END) only grow: a function's inclusive count
 * is its EXIT's value less its ENTRY's. */
#ifndef LP_CTREVENT_H
#define LP_CTREVENT_H

#include <stdint.h>

#include "common/encoder.h"
#include "common/event.h"

struct ctrevent {
	uint8_t kind;   /* enum lp_ctr_kind */
	uint32_t flags; /* enum lp_ctr_flags */
	uint64_t fn;    /* ENTRY, EXIT: the function; else 0 */
	uint32_t cpu;   /* CPU: the CPU; else 0 */
	uint32_t n;
	uint64_t values[LP_COUNTERS_MAX];
	uint64_t enabled[LP_COUNTERS_MAX], running[LP_COUNTERS_MAX]; /* with LP_CTR_HAS_TIMES */
};

/* n over LP_COUNTERS_MAX is cut. */
void encoder_counter(struct encoder *e, uint64_t ns, const struct ctrevent *c);

/* Parse a decoded LP_EV_COUNTER event.  Return 0, or -EBADMSG when the
 * body is malformed (the event is then ignored). */
int ctrevent_parse(const struct lp_event *ev, struct ctrevent *out);

#endif
