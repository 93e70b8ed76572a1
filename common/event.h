/* A decoded trace event, as the decoder hands it to readers. */
#ifndef LP_EVENT_H
#define LP_EVENT_H

#include <stdint.h>

#include "layerprof/format.h"

#define EVENT_FRAMES_MAX 256

struct lp_event {
	uint8_t type;  /* enum lp_event_type */
	uint8_t arg;   /* TASK: enum lp_task_kind */
	uint64_t time; /* ns, CLOCK_MONOTONIC */
	/* ENTRY/EXIT: function address; LOST: events lost; LONGJMP: depth;
	 * TASK: pid or status; EXTENDED: subtype */
	uint64_t value;
	/* MAP */
	uint64_t base, start, end, offset;
	const uint8_t *build_id;
	uint32_t build_id_len;
	/* MAP: path; TASK: name; EXTENDED: body.  Not NUL-terminated; points
	 * into the chunk, valid until the next chunk is read. */
	const char *str;
	uint32_t str_len;
	/* TASK FORK: inherited frames, outermost first; points into the
	 * decoder, valid until the next event is decoded */
	const uint64_t *frames;
	uint32_t nframes;
};

#endif
