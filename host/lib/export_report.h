/* report --format xml|html: one pass over the trace (reportdata), then the
 * document to standard output (which report has pointed at -o's file). */
#ifndef LP_EXPORT_REPORT_H
#define LP_EXPORT_REPORT_H

#include "host/lib/profile.h"
#include "host/lib/walk.h"

enum export_report_format {
	EXPORT_REPORT_NONE, /* not one of these formats */
	EXPORT_REPORT_XML,
	EXPORT_REPORT_HTML,
};

/* "xml" or "html"; EXPORT_REPORT_NONE for anything else. */
enum export_report_format export_report_format_parse(const char *name);

/* Reads the trace of w (opened, not yet walked) and writes the report in
 * fmt to stdout; flags and order as for profile_collect.  `out` is the file
 * stdout writes to (NULL: the real standard output), named in messages and
 * removed when writing fails.  Prints any error and the trace's condition
 * to stderr and returns the exit code: 0, 1 (memory, writing) or 3
 * (damaged trace: the readable part is in the report). */
int export_report(struct walk *w, enum export_report_format fmt, unsigned flags, const struct profile_order *order,
                  const char *out);

#endif
