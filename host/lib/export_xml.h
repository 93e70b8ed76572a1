/* The report as XML, described by docs/report.xsd: trace metadata, threads,
 * flat profile, per-thread call trees (flat lists of nodes with parent
 * ids, so that deep recursion does not make deep XML), system calls when
 * the trace has them, and lost events. */
#ifndef LP_EXPORT_XML_H
#define LP_EXPORT_XML_H

#include <stdio.h>

#include "host/lib/reportdata.h"

/* The version written in the format-version attribute: raised when a
 * change could break a reader of the schema. */
#define EXPORT_XML_FORMAT_VERSION 1

/* Writes the document for rd to f.  Returns 0, -ENOMEM (a call tree could
 * not be walked) or -EIO when f reports a write error. */
int export_xml(struct reportdata *rd, FILE *f);

#endif
