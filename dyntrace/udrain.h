/* The dynamic tracer feeding a drain: each function entry and exit goes
 * into the stream of its thread (drain_func) while sd->on, as the syscall
 * tracer's records do (systrace/sysdrain.h, whose struct it shares); the
 * records the kernel dropped are counted as lost events. */
#ifndef LP_DYNTRACE_UDRAIN_H
#define LP_DYNTRACE_UDRAIN_H

#include "dyntrace/uprobes.h"
#include "systrace/sysdrain.h"

/* The tracer's callbacks for sd (ctx is sd, which must outlive the
 * tracer); they run inside uprobes_poll and uprobes_finish. */
struct uprobes_ops udrain_ops(struct sysdrain *sd);

#endif
