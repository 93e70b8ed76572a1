/* `layerprof report --energy --model M`: the energy of a trace recorded
 * with --counters, estimated with an energy model (energy/emodel.h) per
 * program, CPU, thread and function (self and inclusive), with mean watts,
 * and beside it the energy measured by a meter when the trace has power
 * samples (record --power).  Text or JSON.  One pass over the trace. */
#ifndef LP_EXPORT_ENERGYREPORT_H
#define LP_EXPORT_ENERGYREPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "host/lib/analysis/energystats.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/export/report.h"
#include "host/lib/trace/walk.h"

struct energyreport_opts {
	enum export_report_format fmt; /* text or json */
	bool per_thread;               /* one function row per function and thread */
	enum energystats_sort sort;
	const struct emodel *model; /* borrowed */
	const char *model_path;     /* as the user named it, for the report */
};

/* Parses --sort's key with --energy: incl (also total), self or calls.
 * Returns 0 or -EINVAL. */
int energyreport_sort_parse(enum energystats_sort *sort, const char *arg);

/* Whether model m was made on another kind of machine than the one trace w
 * was recorded on (its architecture, or its CPU when the trace names it):
 * true with a line saying so in buf ("the model was made on aarch64 ..."). */
bool energyreport_other_machine(const struct walk *w, const struct emodel *m, char *buf, size_t size);

/* Reads the trace of w (opened, not yet walked) and writes the report to
 * f.  Prints nothing.  Returns 0; -ENODATA with err when the trace has no
 * counter values (nothing is written); -ENOENT with err when it lacks
 * events the model needs ("the model needs instructions, cycles; the trace
 * has task-clock (record it with --counters=instructions,cycles)"; nothing
 * is written); -ENOMEM; -EIO when f reports a write error.  The trace's own
 * condition is in w->r afterwards. */
int energyreport_write(struct walk *w, const struct energyreport_opts *o, FILE *f, char *err, size_t errlen);

#endif
