/* `layerprof report --counters`: the counters of a trace (record
 * --counters) per program, per CPU, per thread and per function (self and
 * inclusive), with their derived metrics, as text, JSON or XML
 * (docs/report.xsd).  One pass over the trace. */
#ifndef LP_EXPORT_CTRREPORT_H
#define LP_EXPORT_CTRREPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "host/lib/analysis/ctrstats.h"
#include "host/lib/export/report.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

struct ctrreport_opts {
	enum export_report_format fmt; /* text, json or xml */
	bool per_thread;               /* one function row per function and thread */
	struct ctrstats_order order;   /* of the function rows */
};

/* Reads the trace of w (opened, not yet walked) and writes the report to
 * f.  Prints nothing.  Returns 0; -ENODATA when the trace has no counter
 * records (nothing is written); -EINVAL with err saying which sort key
 * names no counter or metric of the trace (nothing is written); -ENOMEM;
 * -EIO when f reports a write error.  The trace's own condition is in w->r
 * afterwards (walk_condition). */
int ctrreport_write(struct walk *w, const struct ctrreport_opts *o, FILE *f, char *err, size_t errlen);

/* The members of `report --counters --format json` after "trace", for a
 * result already collected from st's pass over w, into the open object of
 * j (a web UI view answers with this document). */
void ctrreport_json_members(struct json *j, struct walk *w, const struct ctrstats *st,
                            const struct ctrstats_result *res, bool per_thread);

#endif
