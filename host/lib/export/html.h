/* The report as one self-contained HTML page: inline CSS and a small
 * inline script, no external resources (a Content-Security-Policy in the
 * page forbids them).  A banner for lost events or a damaged trace, the
 * flat profile as a sortable table, the system calls when the trace has
 * them, and each thread's call tree, expandable and foldable, with
 * inclusive and self time, calls, and the system calls each node made as
 * "[sys]" leaves.  The trees are embedded as JSON and drawn as nodes are
 * opened, so that a tree of a million nodes does not make a million
 * elements. */
#ifndef LP_EXPORT_HTML_H
#define LP_EXPORT_HTML_H

#include <stdio.h>

#include "host/lib/analysis/reportdata.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/view.h"

/* Writes the page for rd to f.  Returns 0, -ENOMEM (a call tree could not
 * be walked) or -EIO when f reports a write error. */
int export_html(struct reportdata *rd, FILE *f);

/* Writes the heap report (`report --memory --format html`) for h, settled,
 * read from w's trace with feed (may be NULL), shown as o says: one
 * self-contained page with the totals, the whole heap's live bytes over
 * time as an inline SVG chart, the call sites and functions as sortable
 * tables, the illegal releases and overlaps with their stacks, the
 * processes and what was unfreed at exit.  Returns 0 or -EIO. */
int export_html_memory(struct walk *w, const struct heap *h, const struct heapfeed *feed, const struct heapview_opts *o,
                       FILE *f);

#endif
