/* Chunk framing of trace files and live streams: a 16-byte header with
 * type, length and CRC-32C, then the payload. */
#ifndef LP_CHUNK_H
#define LP_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "layerprof/format.h"

struct chunk_info {
	uint8_t type;
	uint8_t flags;
	uint32_t len; /* payload bytes, <= LP_CHUNK_MAX_PAYLOAD */
	uint32_t crc;
};

/* Fills hdr[LP_CHUNK_HEADER_SIZE] for this payload. */
void chunk_header_put(uint8_t *hdr, uint8_t type, const void *payload, uint32_t len);
/* Parses and bounds a header.  Returns 0, or -EBADMSG when the magic is
 * wrong or the length is over LP_CHUNK_MAX_PAYLOAD. */
int chunk_header_get(const uint8_t *hdr, struct chunk_info *out);
/* Returns 0 when the payload matches the header's checksum, else -EBADMSG. */
int chunk_verify(const struct chunk_info *ci, const void *payload);

/* Fills hdr[LP_FILE_HEADER_SIZE] with the trace file header. */
void trace_header_put(uint8_t *hdr);
/* Checks a trace file header.  Returns 0; -EBADMSG when it is not a
 * layerprof trace; -EPROTONOSUPPORT for another major version (the version
 * found is stored in *major, *minor). */
int trace_header_get(const uint8_t *hdr, unsigned *major, unsigned *minor);

/* Writes header and payload with one writev, retrying short writes.
 * Returns 0 or -errno. */
int chunk_write_fd(int fd, uint8_t type, const void *payload, uint32_t len);

#endif
