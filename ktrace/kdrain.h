/* The kernel tracer feeding a drain: each record goes into the stream of
 * its thread (drain_kernel) while sd->on, as the syscall tracer's do
 * (systrace/sysdrain.h, whose struct it shares); the records the kernel
 * dropped are counted as lost events.  Shared by the recorder and the
 * agent. */
#ifndef LP_KTRACE_KDRAIN_H
#define LP_KTRACE_KDRAIN_H

#include "ktrace/ktrace.h"
#include "systrace/sysdrain.h"

/* The tracer's callbacks for sd (ctx is sd, which must outlive the
 * tracer); they run inside ktrace_poll and ktrace_finish. */
struct ktrace_ops kdrain_ops(struct sysdrain *sd);

#endif
