/* Kernel events in the trace (LP_EV_KERNEL): one tracepoint record as the
 * kernel wrote it, with its tracepoint id and CPU.  Written by the drain
 * (records of ktrace/), parsed by readers, which decode the record with
 * the tracepoint's format stored in the trace's KFORMAT chunk.  The body
 * follows the generic "varint length, bytes" form of types 6..13. */
#ifndef LP_KERNEVENT_H
#define LP_KERNEVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/encoder.h"
#include "common/event.h"

/* Longest record kept (bytes, common header included): what fits one
 * encoded event (ENCODER_EVENT_MAX, less the event's and the body's
 * varints).  Longer ones (a tracepoint with a large dynamic array) are cut:
 * the reader sees a record shorter than its format and counts it
 * undecodable; the tracer counts them as it reads them (ktrace_stats). */
#define KERNEVENT_RAW_MAX 8064u
/* The common header every tracepoint record starts with: u16 type, u8
 * flags, u8 preempt count, s32 pid.  Stored packed when the format has
 * exactly this layout (arg KERNEVENT_PACKED). */
#define KERNEVENT_COMMON_SIZE 8u

enum kernevent_arg {
	KERNEVENT_WHOLE = 0,  /* body: varint id, varint cpu, the record */
	KERNEVENT_PACKED = 1, /* body: varint id, varint cpu, varint common_pid,
	                       * u8 common_flags, u8 common_preempt_count, the
	                       * record from byte 8 on (common_type is the id) */
};

/* A parsed kernel event: raw is the whole record, common header first. */
struct kernevent {
	uint32_t id, cpu;
	const uint8_t *raw;
	uint32_t raw_len;
};

/* Appends one record (the whole record, len at most KERNEVENT_RAW_MAX,
 * longer is cut); packed says the common header has the standard layout. */
void encoder_kernel(struct encoder *e, uint64_t ns, uint32_t id, uint32_t cpu, const uint8_t *raw, uint32_t len,
                    bool packed);

/* Parses a decoded LP_EV_KERNEL event, rebuilding a packed record into
 * buf (KERNEVENT_RAW_MAX bytes); out->raw points into the event or buf.
 * Returns 0, or -EBADMSG when the body is malformed. */
int kernevent_parse(const struct lp_event *ev, struct kernevent *out, uint8_t *buf);

#endif
