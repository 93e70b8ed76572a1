/* The kernel layer in the web UI's server (GET /api/layers, /api/kernel,
 * /api/offcpu_flame, /api/kernel_tracks): for a trace with kernel events
 * (record --kernel), the model's one pass also runs the kernel layer
 * (kernel/klayer.h: time per layer per function and thread, kernel events
 * per type, off-CPU waits with their wakers) and the kernel tracks
 * (serve/ktrack.h); the documents of report --layers and report --kernel
 * are written once after the pass and kept in the index file with the
 * tracks, so that a later serve needs no pass.  A live session lends its
 * own kernel layer; its documents are written again when new events came.
 * Not thread-safe: used under the server's lock. */
#ifndef LP_SERVE_KERNEL_H
#define LP_SERVE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/serve/flame.h"
#include "host/lib/serve/ktrack.h"
#include "host/lib/trace/walk.h"

#define SERVEKERNEL_THREADS_MAX 64u   /* thread tracks in one answer */
#define SERVEKERNEL_CPUS_MAX 256u     /* CPU tracks in one answer */
#define SERVEKERNEL_ARROWS_MAX 4096u  /* wake-up arrows in one answer */
#define SERVEKERNEL_ITEMS_MAX 400000u /* intervals in one answer, all tracks */
#define SERVEKERNEL_NO_KERNEL "no kernel events in this trace: the kernel views need a trace recorded with --kernel"

struct klayer;
struct servemodel;
struct serve_query;
struct json;

struct servekernel {
	bool has_kernel;        /* the trace has kernel events */
	uint64_t kernel_events; /* the walk's count */
	/* a trace file's kernel layer, chained at its first KFORMAT chunk
	 * (servekernel_chunk_end), freed once the documents are written; or
	 * NULL */
	struct klayer *own;
	struct walk_ops own_ops;
	/* the layer the documents come from: own, or a live session's
	 * (borrowed: serve/live.c sets it) */
	struct klayer *kl;
	struct ktrack tracks;
	struct walk_ops track_ops; /* the tracks' consumer, after the call trees' */
	/* report --layers and report --kernel --format json, without the
	 * "trace" member (the answer puts the served path there); owned */
	char *layers_doc, *kernel_doc;
	size_t layers_len, kernel_len;
	bool docs_valid;
	uint64_t docs_gen;   /* a live session's generation they are of */
	struct flame offcpu; /* the off-CPU flame graph, from tracks.points */
	bool offcpu_valid;
};

void servekernel_init(struct servekernel *k);
/* Frees everything (and the kernel layer it owns); accepts a zeroed one. */
void servekernel_release(struct servekernel *k);

/* The model's chunk_end: at a trace file's first KFORMAT chunk, makes the
 * kernel layer and appends it to the list that begins at `list` (it sees
 * the events from the next chunk on: the formats come before them).
 * Returns 0 or -ENOMEM. */
int servekernel_chunk_end(struct servekernel *k, struct walk *w, struct walk_ops *list, const struct walk_chunk *c);

/* Brings the documents, the tracks and the off-CPU flame graph up to the
 * model (after its pass, after an index was read, and in a live session
 * when its generation changed).  Returns 0 or -ENOMEM. */
int servekernel_refresh(struct servemodel *m);

/* Answers GET /api/<what> for "layers", "kernel" and "kernel_tracks"
 * into out (j writes to it).  Returns the HTTP status as serveapi_get;
 * -HTTP_NOT_FOUND when what is none of them. */
int servekernel_answer(struct servemodel *m, const char *what, const struct serve_query *q, struct json *j, FILE *out);

/* The answer of a kernel view for a trace without kernel events:
 * {"kernel": false, "reason": "..."}.  Returns HTTP_OK. */
int servekernel_none(const struct servemodel *m, struct json *j);

#endif
