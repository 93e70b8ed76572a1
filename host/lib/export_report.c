/* report --format xml|html (see export_report.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/lib/export_html.h"
#include "host/lib/export_report.h"
#include "host/lib/export_xml.h"
#include "host/lib/reportdata.h"

/* Output buffer: the documents are written in many small pieces. */
#define EXPORT_REPORT_BUFFER (1u << 20)

enum export_report_format export_report_format_parse(const char *name)
{
	if (!strcmp(name, "xml"))
		return EXPORT_REPORT_XML;
	if (!strcmp(name, "html"))
		return EXPORT_REPORT_HTML;
	return EXPORT_REPORT_NONE;
}

int export_report(struct walk *w, enum export_report_format fmt, unsigned flags, const struct profile_order *order,
                  const char *out)
{
	struct reportdata rd;
	int code, r, werr = 0;

	setvbuf(stdout, NULL, _IOFBF, EXPORT_REPORT_BUFFER);
	if (reportdata_build(&rd, w, flags, order)) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", w->dir);
		if (out)
			unlink(out);
		return LP_EXIT_FAILURE;
	}
	code = walk_report_condition(w, "report");
	r = fmt == EXPORT_REPORT_XML ? export_xml(&rd, stdout) : export_html(&rd, stdout);
	if (fflush(stdout))
		werr = errno;
	if (r == -EIO && !werr)
		werr = EIO;
	if (r == -ENOMEM)
		fprintf(stderr, "layerprof report: out of memory writing the report of '%s'\n", w->dir);
	else if (werr)
		fprintf(stderr, "layerprof report: cannot write '%s': %s\n", out ? out : "standard output",
		        strerror(werr));
	if (r || werr) {
		if (out)
			unlink(out);
		code = LP_EXIT_FAILURE;
	}
	reportdata_release(&rd);
	return code;
}
