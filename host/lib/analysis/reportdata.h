/* What a full report shows, gathered in one pass over a trace: the flat
 * profile, each thread's call tree, the system call statistics and the
 * kernel layer (time per layer, kernel events).  The XML and HTML reports
 * are written from it. */
#ifndef LP_REPORTDATA_H
#define LP_REPORTDATA_H

#include <stdbool.h>

#include "host/lib/analysis/calltree.h"
#include "host/lib/analysis/profile.h"
#include "host/lib/analysis/sysstats.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/trace/walk.h"

struct reportdata {
	struct walk *w; /* borrowed */
	unsigned flags; /* enum profile_flags: PROFILE_PER_THREAD also splits syscalls by_function */
	struct profile_order order;
	struct profile prof;
	struct calltree ct;
	struct sysstats st;
	struct profile_rows rows;   /* the flat profile, sorted by order */
	struct sysstats_result sys; /* empty when the trace has no system calls */
	struct klayer *kl;          /* in the pass when the trace has the layers; else NULL */
	/* the kernel layer's results (those of `report --layers` and `report
	 * --kernel`): has_layers when the trace has kernel events or system
	 * calls (its META or KFORMAT chunks say so before its events),
	 * has_kernel when it has kernel events; empty otherwise */
	struct klayer_result layers;
	bool has_layers, has_kernel;
};

/* Runs the walk of w (opened, not yet walked) and collects everything into
 * rd, which owns it afterwards (reportdata_release); rd->w stays borrowed.
 * Returns 0, or -ENOMEM with rd released. */
int reportdata_build(struct reportdata *rd, struct walk *w, unsigned flags, const struct profile_order *order);
/* Accepts a zeroed or released reportdata. */
void reportdata_release(struct reportdata *rd);

/* The key names of an order ("total,self") into buf; returns buf. */
const char *reportdata_order_name(const struct profile_order *order, char *buf, size_t size);

#endif
