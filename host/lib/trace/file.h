/* The data file of a trace being written by `record` or `recover`: chunks
 * go in whole or not at all, and once a write fails (a full disk, a quota,
 * a size limit) nothing more is written; what could not be written is
 * counted per stream, and the end of the trace (a LOST event per stream
 * and the END chunk naming the cause) goes in at the close, in the room a
 * reserve file gives back.  A reader then sees a whole trace that says
 * what it is missing and why.  Not thread-safe. */
#ifndef LP_TRACEFILE_H
#define LP_TRACEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Streams whose unwritten events are counted one by one; the others are
 * counted together (in the END chunk only). */
#define TRACEFILE_LOST_STREAMS 1024u

struct tracefile_lost {
	uint32_t image, pid, tid;
	uint64_t ns;     /* the start of the last chunk not written */
	uint64_t events; /* events not written */
};

struct tracefile {
	int fd;
	off_t written;     /* bytes of whole chunks (and the file header) */
	int error;         /* the first failed write (-errno); 0: none */
	const char *cause; /* borrowed: why writing stopped, when not error's text */
	uint64_t unwritten;
	uint64_t unwritten_unplaced; /* of streams over TRACEFILE_LOST_STREAMS */
	struct tracefile_lost *lost; /* owned; TRACEFILE_LOST_STREAMS entries */
	size_t nlost;
	/* room given back when a write failed: a callback (the recorder's
	 * note drops its reserve), called once */
	int (*release_reserve)(void *ctx);
	void *reserve_ctx;
};

/* Creates <dirfd>/data exclusively (never through a link) and writes the
 * file header.  Returns 0 or -errno. */
int tracefile_create(struct tracefile *tf, int dirfd);
/* Opens <dirfd>/data of an existing trace to add chunks after its first
 * `valid` bytes (what a reader read whole); what follows is cut off.
 * Returns 0 or -errno. */
int tracefile_append(struct tracefile *tf, int dirfd, off_t valid);
/* Writes one chunk.  Returns 0 when it is in the file; -errno when this
 * write failed (the first failure: the caller stops producing); 1 when
 * writing had already stopped (an EVENTS chunk's `events` are counted as
 * unwritten for its stream). */
int tracefile_write(struct tracefile *tf, uint8_t type, const void *payload, size_t len, uint64_t events);
/* Stops writing on purpose, for `cause` (borrowed: it must live until
 * tracefile_end): later chunks are counted as tracefile_write counts them
 * after a failure. */
void tracefile_discard(struct tracefile *tf, const char *cause);
/* Ends the trace with the END chunk `end` (key=value text): after a
 * failure, the reserve is given back, each stream's unwritten events go in
 * as a LOST event and the END chunk gets "unwritten=N" and "lost_cause=".
 * Returns 0, or -errno when even that did not fit (the file then ends at
 * its last whole chunk). */
int tracefile_end(struct tracefile *tf, const char *end, size_t len);
/* Closes the file.  Returns 0 or -errno from close.  Accepts a released
 * or zeroed struct once tracefile_create or _append failed. */
int tracefile_close(struct tracefile *tf);

#endif
