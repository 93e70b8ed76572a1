/* The report as XML, described by docs/report.xsd: trace metadata, threads,
 * flat profile, per-thread call trees (flat lists of nodes with parent
 * ids, so that deep recursion does not make deep XML), system calls when
 * the trace has them, and lost events. */
#ifndef LP_EXPORT_XML_H
#define LP_EXPORT_XML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/analysis/reportdata.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/view.h"

/* The version written in the format-version attribute: raised when a
 * change could break a reader of the schema. */
#define EXPORT_XML_FORMAT_VERSION 1
/* The parts every report document has (docs/report.xsd): the <trace>
 * element (the walk's counts and the META keys) and <lost-events>, each
 * indented for a child of the root. */
struct walk;
/* Attributes of an element being opened (" name=\"value\""): text
 * escaped, numbers as report --format json writes them (a number that is
 * not finite as NaN), hex as 0x... */
void xml_attr_str(FILE *f, const char *name, const char *value);
void xml_attr_u64(FILE *f, const char *name, uint64_t value);
void xml_attr_bool(FILE *f, const char *name, bool value);
void xml_attr_f64(FILE *f, const char *name, double value);
void xml_attr_hex(FILE *f, const char *name, uint64_t value);
void export_xml_trace(FILE *f, const struct walk *w);
void export_xml_lost(FILE *f, const struct walk *w);

/* Writes the document for rd to f.  Returns 0, -ENOMEM (a call tree could
 * not be walked) or -EIO when f reports a write error. */
int export_xml(struct reportdata *rd, FILE *f);

/* Writes the heap report (`report --memory --format xml`) for h, settled
 * (heap_settle), read from w's trace with feed (may be NULL) and shown as
 * o says: the trace, a <memory> element with the numbers of `report
 * --memory --format json` (totals, sites with a stack, functions, illegal
 * releases with their stacks, overlaps, processes) and the whole heap's
 * growth samples, and the lost events.  Returns 0 or -EIO. */
int export_xml_memory(struct walk *w, const struct heap *h, const struct heapfeed *feed, const struct heapview_opts *o,
                      FILE *f);

#endif
