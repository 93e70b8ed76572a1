/* What the web UI's server knows of a trace: the flat profile, the system
 * call statistics, the call trees, the flame graph, the timeline index and,
 * with kernel events, the kernel layer and tracks (serve/kernel.h), all
 * built in one pass over the trace (or fed by a live session as its
 * chunks arrive), then answered from.  Not thread-safe: the server holds
 * its lock around every use. */
#ifndef LP_SERVE_MODEL_H
#define LP_SERVE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/analysis/calltree.h"
#include "host/lib/analysis/calltree.h" /* the API code's names for calltree's */
#include "host/lib/analysis/profile.h"
#include "host/lib/analysis/sysstats.h"
#include "host/lib/live/save.h"
#include "host/lib/serve/flame.h"
#include "host/lib/serve/heap.h"
#include "host/lib/serve/kernel.h"
#include "host/lib/serve/synctrack.h"
#include "host/lib/serve/timeline.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/names.h"

/* A thread as the API shows it (times in trace ns, CLOCK_MONOTONIC). */
struct serve_thread {
	uint32_t id; /* walk_stream.index: what the API names a thread by */
	uint32_t pid, tid, image, parent_pid, status;
	char comm[17];
	bool after_exec, exited;
	uint64_t first_ns, last_ns, calls, lost, syscalls;
};

/* The trace as a whole. */
struct serve_info {
	uint64_t events, lost, syscall_events, first_ns, last_ns;
	bool complete, damaged, filtered_at_record, source_filtered;
	char damage[256], command[1024], host[256];
	struct serve_thread *threads; /* owned; in order of first event */
	uint32_t nthreads;
};

enum servemodel_flags {
	SERVEMODEL_NO_INDEX = 1u << 0, /* neither read nor write the index file */
	SERVEMODEL_REINDEX = 1u << 1,  /* read the trace even when an index is current */
};

struct servemodel {
	const char *dir; /* the trace; NULL for a live session */
	/* what the API answers from: filled from the walk by
	 * servemodel_refresh, or read from the index file */
	struct serve_info info;
	struct sysstats_result sysres;
	struct names files; /* the rows' source file names, read from an index */
	bool info_valid, sys_valid, from_index;
	char index_note[600]; /* what became of the index, for people */
	/* the walk and the consumers it feeds: the model's own for a trace
	 * file, a live session's otherwise (borrowed); NULL after reading
	 * an index */
	struct walk *w;
	struct profile *prof;
	struct sysstats *sys;
	struct calltree tree;
	struct timeline tl;
	struct flame flame;
	struct names names;
	struct serveheap heap; /* the heap view (serve/heap.h); empty for a live session */
	/* the kernel layer and tracks; a live session's kernel layer is lent
	 * by serve/live.c (kern.kl, set under the lock as the session makes it) */
	struct servekernel kern;
	struct synctrack sync; /* the sync tracks (record --sync) */
	/* the model's consumers of the walk, in this order (after a trace
	 * file's profile and syscall statistics, or a live session's): the
	 * call trees, the timeline, the timeline's chunk index (whose
	 * chunk_end also chains a trace file's kernel layer at its formats),
	 * the kernel tracks (kern.track_ops), the sync tracks */
	struct walk_ops tree_ops, tl_ops, chunk_ops, sync_ops;
	bool live;
	bool timeline_off;   /* live: the timeline is not fed (servemodel_timeline_off) */
	bool following_save; /* live: servemodel_follow_save */
	off_t saved_at;      /* live: where the save put the chunk being fed; -1: not in the file */
	/* the flat profile, collected after the pass (again when stale) */
	struct profile_rows rows;
	bool rows_valid, flame_valid;
	uint64_t generation; /* bumped whenever new events came in */
	uint64_t load_ns;    /* how long the pass took */
	bool oom;
	/* storage for a trace file */
	struct walk own_w;
	struct profile own_prof;
	struct sysstats own_sys;
};

/* Builds everything for the trace in dir: from its index file (see
 * serve/index.h) when that is current, else in one pass over the trace,
 * then writes the index (flags: enum servemodel_flags).  Returns 0, or
 * -errno with a message in err: the trace reader's codes (reader_open),
 * -ENOMEM.  A damaged trace is read up to the damage (info.damaged).
 * Release with servemodel_release, also after a failure. */
int servemodel_load(struct servemodel *m, const char *dir, unsigned flags, char *err, size_t errlen);

/* The name id of function addr as the thread at walk_stream.index `index`
 * ran it (NAMES_NONE when memory ran out).  A timeline_window namer. */
uint32_t servemodel_name(void *ctx, uint32_t index, uint64_t addr);

/* A model fed by a live session: takes over its walk, profile and syscall
 * statistics (borrowed: they must outlive the model) and appends the
 * model's consumers to the list ops, the session's, which the walk uses
 * (walk_chain).  Returns 0 or -ENOMEM. */
int servemodel_attach(struct servemodel *m, struct walk *w, struct profile *prof, struct sysstats *sys,
                      struct walk_ops *ops);

/* Tells the live model of the chunks sv saves (livesave.on_chunk): the
 * timeline indexes those written to the trace file and decodes its windows
 * from it; without a saved trace, its windows come from the grid alone.
 * sv must outlive the model. */
void servemodel_follow_save(struct servemodel *m, struct livesave *sv);

/* Leaves the live model's timeline out: its callbacks are not fed and its
 * windows stay empty.  Call after servemodel_attach, before the first
 * event, and instead of servemodel_follow_save.  Only for bench/serve,
 * which measures the live timeline's cost against a session without it
 * (`serve --connect` with LAYERPROF_BENCH_NO_TIMELINE set in its
 * environment). */
void servemodel_timeline_off(struct servemodel *m);

/* Before a timeline window of a live model: the chunk last fed is indexed
 * and the newest event known.  Does nothing for a trace file. */
void servemodel_live_settle(struct servemodel *m);

/* Marks what new events changed: the flat profile and the flame graph are
 * collected again when next asked for. */
void servemodel_touch(struct servemodel *m);

/* Makes the summary, the flat profile rows, the syscall statistics, the
 * node names, the flame graph, the kernel layer's documents and
 * off-CPU flame graph and the sync tracks current.  Returns 0 or -ENOMEM. */
int servemodel_refresh(struct servemodel *m);

void servemodel_release(struct servemodel *m);

#endif
