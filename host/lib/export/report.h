/* The reports of `layerprof report` written to any stream: the flat
 * profile, the system calls and the heap (--memory) as text or JSON, the
 * full report as XML or HTML, and the heap as XML or HTML.  One pass over
 * the trace per report (two for a heap state at a chosen time).  The web
 * UI's exports call the same writers, so a file from either is the same. */
#ifndef LP_EXPORT_REPORT_H
#define LP_EXPORT_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/analysis/profile.h"
#include "host/lib/trace/walk.h"

enum export_report_format {
	EXPORT_REPORT_NONE, /* not one of these formats */
	EXPORT_REPORT_TEXT,
	EXPORT_REPORT_JSON,
	EXPORT_REPORT_XML,
	EXPORT_REPORT_HTML,
};

enum export_report_what {
	EXPORT_REPORT_PROFILE,  /* the flat profile (xml, html: with call trees and syscalls) */
	EXPORT_REPORT_SYSCALLS, /* text, json: the system calls; xml, html: as PROFILE */
	EXPORT_REPORT_MEMORY,   /* the heap state */
	EXPORT_REPORT_LAYERS,   /* text, json: time per layer, per function and thread */
	EXPORT_REPORT_KERNEL,   /* text, json: the kernel events, off-CPU waits, block requests */
};

struct export_report_opts {
	enum export_report_format fmt;
	enum export_report_what what;
	unsigned flags; /* enum profile_flags */
	struct profile_order order;
	bool at_peak; /* memory: the state when the heap was largest */
	bool has_at;  /* memory: the state at_ns after the recording began */
	uint64_t at_ns;
};

/* "text", "json", "xml" or "html"; EXPORT_REPORT_NONE for anything else. */
enum export_report_format export_report_format_parse(const char *name);

/* Reads the trace of w (opened, not yet walked) and writes the report o
 * asks for to f.  Prints nothing: returns 0, -ENOMEM, or -EIO when f
 * reports a write error; the trace's own condition is in w->r afterwards
 * (walk_condition). */
int export_report_write(struct walk *w, const struct export_report_opts *o, FILE *f);

/* Where the times of a memory report count from: the recording's start,
 * else the trace's first event. */
uint64_t export_report_origin(struct walk *w);

#endif
