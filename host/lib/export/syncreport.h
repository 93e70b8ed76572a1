/* `report --sync`: the synchronisation analysis (analysis/syncstats.h) as
 * text tables, JSON or XML (docs/report.xsd, <sync>): per lock, condition,
 * semaphore, barrier and futex of other code; per thread; joins; the
 * producer/consumer balance; the longest waits with who ended them.
 * Objects inside heap blocks are named by the blocks' allocation sites
 * when the trace has heap operations. */
#ifndef LP_EXPORT_SYNCREPORT_H
#define LP_EXPORT_SYNCREPORT_H

#include <stdio.h>

#include "host/lib/analysis/syncstats.h"
#include "host/lib/export/report.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

struct syncreport_opts {
	enum export_report_format fmt; /* text, json or xml */
	struct syncstats_order order;  /* nkeys 0: by total wait */
};

/* Reads the trace of w (opened, not yet walked, by time) and writes the
 * report to f.  Prints nothing else: returns 0; -ENODATA when the trace
 * has no synchronisation events (nothing written); -ENOMEM; -EIO when f
 * reports a write error; -EINVAL for a format it does not write (html). */
int syncreport_write(struct walk *w, const struct syncreport_opts *o, FILE *f);

/* The members of `report --sync --format json` after "trace", for
 * statistics already collected, into the open object of j (for a web
 * answer to be the same document). */
void syncreport_json_members(struct json *j, const struct walk *w, const struct syncstats *st,
                             const struct syncstats_result *r);

/* Writes the XML document (docs/report.xsd: the trace, <sync>, the lost
 * events) for statistics already collected from w's trace. */
void syncreport_xml(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_result *r);

/* One producer/consumer pair as the text report says it ("producer side
 * (tid 5) is slow: consumers wait 83% of the time, producers 2%") into
 * buf; returns buf. */
const char *syncreport_pair_text(const struct syncstats *st, const struct syncstats_pair *p, char *buf, size_t size);

#endif
