/* The --save side of `layerprof live`: the chunks of a live stream written
 * after a trace file header, so that the directory is a trace that report,
 * tree and replay read.  Until a save starts, the chunks are kept in memory
 * (up to LIVESAVE_KEEP_MAX) so that a save started mid-session has the
 * session from its beginning.  Not thread-safe: the live command owns it. */
#ifndef LP_LIVESAVE_H
#define LP_LIVESAVE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/lib/trace/dir.h"

#define LIVESAVE_KEEP_MAX (64u << 20) /* bytes kept in memory for a later save */
#define LIVESAVE_HOLD_MAX (64u << 20) /* bytes held in memory while a reader reads the trace */

/* the heap at the end, beside a trace saved with --memory (builtin-live.c's
 * LIVE_SNAPSHOT_NAME); the raw export takes it with the trace */
#define LIVESAVE_SNAPSHOT_NAME TRACEDIR_SNAPSHOT

struct livesave {
	int fd;             /* the trace's data file; -1 when not saving */
	char dir[PATH_MAX]; /* the trace directory, kept after close for messages */
	uint64_t bytes;     /* written to the data file */
	bool failed;        /* a write failed: saving stopped */
	uint8_t *kept;      /* owned: chunks received before saving began */
	size_t kept_len, kept_cap;
	bool kept_dropped;          /* more than LIVESAVE_KEEP_MAX came: nothing is kept */
	char error[PATH_MAX + 128]; /* after a failure: what went wrong, for people */
	/* while held (livesave_hold): chunks wait here instead of the file */
	bool held;
	bool hold_broken; /* over LIVESAVE_HOLD_MAX came while held: written through */
	uint8_t *hold_buf;
	size_t hold_len, hold_cap;
	/* told of every chunk livesave_chunk takes, after it was written:
	 * its offset in the data file (in dir), or -1 when it is not there
	 * (kept in memory, held by livesave_hold, or saving stopped).  Set by the user; NULL: none.
	 * livesave_init clears it. */
	void (*on_chunk)(void *ctx, const struct livesave *sv, const void *chunk, size_t len, off_t offset);
	void *on_chunk_ctx;

	/* the directory livesave_open made: livesave_discard removes only it */
	dev_t dir_dev;
	ino_t dir_ino;
};

/* Not saving, nothing kept.  Release with livesave_release. */
void livesave_init(struct livesave *sv);
/* Closes the data file as it is (no END chunk) and frees what is kept.
 * Accepts a zeroed or initialised struct. */
void livesave_release(struct livesave *sv);

static inline bool livesave_active(const struct livesave *sv)
{
	return sv->fd >= 0;
}

/* Starts saving into dir, made by tracedir_create (an existing trace is
 * moved to DIR.old, as record does; anything else is refused).
 * Writes the file header and what was kept, then frees the kept bytes.
 * Returns 0, or -errno with sv->error set (nothing is saved then). */
int livesave_open(struct livesave *sv, const char *dir);

/* One whole chunk (header and payload) as received: written when saving,
 * else kept.  Returns 0, or -errno when a write failed: sv->error says
 * why, the file is closed and saving has stopped (sv->failed). */
int livesave_chunk(struct livesave *sv, const void *chunk, size_t len);

/* Ends the saved trace.  With add_end, an END chunk closed by the host
 * (holding `events`) is written first, so that readers see a closed
 * recording; without it, readers say the recording was cut.  Returns 0,
 * or -EIO with sv->error set when a write, the sync or the close failed
 * (also after an earlier failed write).  sv->dir stays set. */
int livesave_close(struct livesave *sv, bool add_end, uint64_t events);

/* Holds the data file still so that a reader (an export) sees a
 * consistent prefix of whole chunks: until livesave_resume, chunks are
 * kept in memory (up to LIVESAVE_HOLD_MAX; past it they are written
 * through and hold_broken is set).  Everything is already in the file
 * when this returns (writes are unbuffered).  Not nested. */
void livesave_hold(struct livesave *sv);
/* Writes what was held and lets chunks through again.  Returns false when
 * the file changed while held (hold_broken): the reader may have seen a
 * cut chunk.  A failed write stops saving as livesave_chunk's would. */
bool livesave_resume(struct livesave *sv);

/* Removes a trace that never got a session (only its header). */
void livesave_discard(struct livesave *sv);

#endif
