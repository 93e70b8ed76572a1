/* What the web UI's server knows of a trace: the flat profile, the system
 * call statistics, the call trees, the flame graph and the timeline index,
 * all built in one pass over the trace (or fed by a live session as its
 * chunks arrive), then answered from.  Not thread-safe: the server holds
 * its lock around every use. */
#ifndef LP_SERVE_MODEL_H
#define LP_SERVE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/profile.h"
#include "host/lib/serve_flame.h"
#include "host/lib/serve_names.h"
#include "host/lib/serve_timeline.h"
#include "host/lib/serve_tree.h"
#include "host/lib/sysstats.h"
#include "host/lib/walk.h"

struct servemodel {
	/* the walk and the consumers it feeds: the model's own for a trace
	 * file, a live session's otherwise (borrowed) */
	struct walk *w;
	struct profile *prof;
	struct sysstats *sys;
	struct calltree tree;
	struct timeline tl;
	struct flame flame;
	struct names names;
	struct walk_ops ops;
	/* a live session's own callbacks, called before the model's */
	struct walk_ops inner;
	bool live;
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

/* Reads the trace in dir in one pass and builds everything.  Returns 0, or
 * -errno with a message in err: the trace reader's codes (reader_open),
 * -ENOMEM.  A damaged trace is read up to the damage (see w->r.state).
 * Release with servemodel_release, also after a failure. */
int servemodel_load(struct servemodel *m, const char *dir, char *err, size_t errlen);

/* A model fed by a live session: takes over its walk, profile and syscall
 * statistics (borrowed: they must outlive the model) and puts the model's
 * consumers behind the session's callbacks in *ops, which the walk uses
 * (ops is modified in place).  Returns 0 or -ENOMEM. */
int servemodel_attach(struct servemodel *m, struct walk *w, struct profile *prof, struct sysstats *sys,
                      struct walk_ops *ops);

/* Marks what new events changed: the flat profile and the flame graph are
 * collected again when next asked for. */
void servemodel_touch(struct servemodel *m);

/* Makes the flat profile rows, the node names and the flame graph current.
 * Returns 0 or -ENOMEM. */
int servemodel_refresh(struct servemodel *m);

void servemodel_release(struct servemodel *m);

#endif
