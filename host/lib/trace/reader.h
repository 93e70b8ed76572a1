/* Reading a trace directory chunk by chunk, with every header and checksum
 * checked.  Damage stops the reading at the last whole chunk and is
 * described once in reader->damage. */
#ifndef LP_READER_H
#define LP_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/chunk.h"

enum reader_state {
	READER_OK = 0,
	READER_DAMAGED = 1, /* a short or corrupt chunk ended the reading */
};

struct reader {
	FILE *f;
	char *path;   /* the data file */
	off_t offset; /* of the next chunk */
	off_t size;   /* of the data file at open */
	uint8_t *buf; /* payload buffer, LP_CHUNK_MAX_PAYLOAD bytes */
	unsigned major, minor;
	enum reader_state state;
	char damage[256];     /* what was wrong and where, when DAMAGED */
	bool seen_end;        /* an END chunk was read: the recording closed */
	char lost_cause[256]; /* the END chunk's lost_cause (why events are
	                       * missing, e.g. a full disk); "" when none */
	uint64_t chunks;
};

/* Opens <dir>/data.  Returns 0, or a negative errno with a message in
 * err (size errlen): -ENOENT missing, -ENODATA empty, -EBADMSG not a
 * layerprof trace, -EPROTONOSUPPORT another format version. */
int reader_open(struct reader *r, const char *dir, char *err, size_t errlen);
/* Reads the next chunk: 1 with *ci and *payload set (payload valid until
 * the next call), 0 at the end or after damage (see r->state). */
int reader_next(struct reader *r, struct chunk_info *ci, const uint8_t **payload);
/* Moves to a chunk offset previously seen (r->offset before reader_next). */
int reader_seek(struct reader *r, off_t offset);
void reader_release(struct reader *r);

#endif
