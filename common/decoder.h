/* Decoder of EVENTS chunk payloads.  Every length, index and count read
 * from the payload is checked: a corrupt payload yields -EBADMSG, never a
 * read outside it. */
#ifndef LP_DECODER_H
#define LP_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "common/event.h"

struct decoder {
	const uint8_t *p, *end;
	uint32_t image, pid, tid;
	uint64_t time;
	uint32_t nrefs;
	uint64_t refs[LP_REF_TABLE_MAX];
	uint64_t frames[EVENT_FRAMES_MAX];
};

/* Starts on a payload (which must stay valid while events are read).
 * Reads the stream header into d->image, pid, tid.  Returns 0 or -EBADMSG. */
int decoder_begin(struct decoder *d, const uint8_t *payload, size_t len);
/* Reads the next event.  Returns 1 with *ev filled, 0 at the end of the
 * payload, -EBADMSG on corrupt input (the rest of the payload is unusable). */
int decoder_next(struct decoder *d, struct lp_event *ev);

#endif
