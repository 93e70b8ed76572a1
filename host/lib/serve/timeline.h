/* The per-thread timeline of the web UI's server.  A 100 M-event trace
 * does not fit in a page, so the server sends one thread's visible window
 * at the page's resolution, from two structures built during the one pass:
 *
 * - a chunk index: per thread, where each of its EVENTS chunks is in the
 *   file, its time range and event count, and the calls open when it
 *   begins.  A window of few events is decoded again from those chunks
 *   alone: every call and syscall, calls narrower than a pixel merged.
 * - a grid: per thread and call depth, time buckets (their width doubles
 *   as the thread's time grows) with the time spent at that depth, the
 *   calls begun and the function that took most of it.  A window of many
 *   events is drawn from it: the page zoomed out.
 *
 * A live session feeds both as its chunks arrive (timeline.live): the
 * chunk index only for chunks written to a trace file it can read again
 * (a saved session), and a window drawn before the session ended shows the
 * calls still running as open up to the newest event.
 *
 * Memory is bounded by TIMELINE_GRID_BYTES_MAX and TIMELINE_SNAP_FRAMES_MAX,
 * not by the number of events; in a live session also the chunk index, by
 * TIMELINE_CHUNKS_MAX (its oldest half is let go: windows there come from
 * the grid).  Not thread-safe. */
#ifndef LP_SERVE_TIMELINE_H
#define LP_SERVE_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/decoder.h"
#include "host/lib/trace/reader.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"
#include "host/lib/util/names.h"

#define TIMELINE_GRID_BUCKETS 8192u
#define TIMELINE_GRID_DEPTH 64u               /* call depths with a grid */
#define TIMELINE_GRID_BYTES_MAX (256u << 20)  /* all grids together */
#define TIMELINE_SNAP_MAX 1024u               /* open calls kept per chunk */
#define TIMELINE_SNAP_FRAMES_MAX (4u << 20)   /* open calls kept in all */
#define TIMELINE_DECODE_EVENTS_MAX (4u << 20) /* a window decoded again, at most */
#define TIMELINE_LOST_MAX 4096u               /* loss marks kept per thread */
#define TIMELINE_SPANS_MAX 400000u            /* spans in one answer */
#define TIMELINE_PX_MAX 16384u                /* the resolution a page may ask */
#define TIMELINE_CHUNKS_MAX (1u << 20)        /* chunks indexed in a live session */

/* Flags of a span in an answer. */
enum timeline_span_flags {
	TIMELINE_SYSCALL = 1u << 0, /* a system call */
	TIMELINE_MERGED = 1u << 1,  /* several calls narrower than a pixel */
	TIMELINE_OPEN = 1u << 2,    /* still running at the end of what was read */
	TIMELINE_CUT = 1u << 3,     /* its end is missing (unfinished: longjmp, lost exit) */
};

struct timeline_frame {
	uint64_t addr, entry_ns;
};

struct timeline_chunk {
	off_t offset;         /* of the chunk header in the data file; -1: not in it */
	uint64_t first_ns;    /* the chunk's base time */
	uint64_t last_ns;     /* its last event */
	uint32_t events;      /* events in it */
	uint32_t depth;       /* calls open when it begins */
	uint32_t snap, nsnap; /* their frames: snap_frames[snap, snap + nsnap) */
};

struct timeline_bucket {
	uint64_t busy_ns;  /* time at this depth within the bucket */
	uint64_t cand;     /* the function most of it went to (weighted majority vote) */
	uint64_t cand_ns;  /* the vote's weight */
	uint32_t calls;    /* calls begun in the bucket */
	uint32_t syscalls; /* of which system calls */
};

struct timeline_stream {
	struct walk_stream *ws;
	struct timeline_chunk *chunks;
	uint32_t nchunks, chunks_cap;
	/* the grid: bucket i covers [base + i * width, base + (i + 1) * width) */
	uint64_t base, width;
	unsigned shift;                                     /* width is 1 << shift */
	struct timeline_bucket *level[TIMELINE_GRID_DEPTH]; /* NULL until used */
	bool grid_partial;                                  /* a level could not be had */
	uint32_t max_depth;                                 /* deepest call seen + 1 */
	uint64_t (*lost)[2];                                /* (time, count) */
	uint32_t nlost;
	bool ended;        /* no more events come (the walk's end) */
	bool head_missing; /* chunks before chunks[0] are not indexed */
};

struct timeline {
	uint64_t decode_max;              /* windows of more events come from the grid (TIMELINE_DECODE_EVENTS_MAX) */
	uint32_t chunks_max;              /* chunks indexed in a live session (TIMELINE_CHUNKS_MAX) */
	bool off;                         /* build nothing */
	bool live;                        /* fed by a live session: see timeline_live_newest */
	struct timeline_stream **streams; /* by walk_stream.index */
	uint32_t nstreams;
	struct timeline_frame *snap_frames;
	uint32_t nsnap_frames, snap_cap;
	uint32_t nchunks_all; /* in every stream's index */
	uint64_t newest_ns;   /* live: the newest event taken in */
	size_t grid_bytes;
	bool oom;
	/* the chunk being read by the pass */
	struct decoder dec;
	struct timeline_chunk pending;
	uint32_t pending_image, pending_tid;
	uint64_t pending_events;
	bool pending_valid;
	/* the second reader, for windows */
	struct reader r;
	bool have_reader;
	/* the walk's (set by timeline_chunk_begin): addresses decoded again
	 * become code addresses, as the walk's are */
	struct symbolizer *sym;
};

void timeline_init(struct timeline *tl);
void timeline_release(struct timeline *tl);

/* The walk callbacks (ctx is the struct timeline). */
void timeline_begin(void *ctx, struct walk_stream *s);
void timeline_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                   unsigned flags);
void timeline_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc);
void timeline_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count);
void timeline_end(void *ctx, struct walk_stream *s);
/* Sets ops->ctx, begin, exit, syscall, lost and end to feed tl; leaves the
 * others (the chunk hooks are its user's: timeline_chunk_begin). */
void timeline_walk_ops(struct timeline *tl, struct walk_ops *ops);

/* Around walk_feed of each EVENTS chunk of the pass: before, with the
 * chunk's offset in the file (-1: not in a file that can be read again)
 * and its payload; after, with the walk.  timeline_chunk_end does nothing
 * when no chunk is pending, so a live session may call it late: before
 * the next chunk begins, or before a window is drawn. */
void timeline_chunk_begin(struct timeline *tl, struct walk *w, off_t offset, const uint8_t *payload, size_t len);
void timeline_chunk_end(struct timeline *tl, struct walk *w);

/* Opens the trace again for windows.  Returns 0 or -errno.  In a live
 * session the file grows as it is read: only chunks already indexed are
 * read from it. */
int timeline_open(struct timeline *tl, const char *dir);

/* Live: the newest event taken in, which calls still running reach. */
void timeline_live_newest(struct timeline *tl, uint64_t ns);

/* Names a function (or CALLTREE_SYSCALL_KEY) of the thread at
 * walk_stream.index `index`: returns its names id, NAMES_NONE when memory
 * ran out. */
typedef uint32_t (*timeline_namer)(void *ctx, uint32_t index, uint64_t addr);

/* Writes the window [t0, t1) (ns from origin_ns) of the thread at
 * walk_stream.index `index`, at px pixels across, as members of the JSON
 * object open in j: "mode" ("exact": decoded again, or "aggregate": from
 * the grid), "running" (a live thread that still takes events), "spans"
 * ([depth, start, end, name id, calls, flags, fill per mille], times from
 * origin_ns), "names" ({id: name}), "lost" ([time, count]).  Names come
 * from namer (ctx its argument) and are read from nt.  Returns 0, -ENOENT
 * for no such thread, -ENOMEM, or -EIO when the file could not be read
 * again. */
int timeline_window(struct timeline *tl, timeline_namer namer, void *ctx, const struct names *nt, uint32_t index,
                    uint64_t origin_ns, uint64_t t0, uint64_t t1, uint32_t px, struct json *j);

#endif
