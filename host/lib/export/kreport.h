/* The kernel layer's reports: `report --layers` (time per layer, per
 * function and per thread) and `report --kernel` (kernel events per type,
 * thread, function and syscall; off-CPU time per reason with the wakers;
 * block requests per issuing syscall), as text or JSON. */
#ifndef LP_EXPORT_KREPORT_H
#define LP_EXPORT_KREPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "host/lib/kernel/klayer.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

/* Reads the trace of w (opened, not yet walked) and writes the layers
 * report (layers) or the kernel report to f, as JSON or text.  Prints
 * nothing else: returns 0, -ENOMEM, or -EIO when f reports a write error. */
int export_kernel_write(struct walk *w, bool layers, bool json, FILE *f);

/* The members of `report --layers` and `report --kernel --format json`
 * after "trace", for a result already collected, into the open object of
 * j (the web UI's answers are these documents). */
void kreport_layers_members(struct json *j, const struct walk *w, const struct klayer_result *r);
void kreport_kernel_members(struct json *j, const struct walk *w, const struct klayer_result *r);

#endif
