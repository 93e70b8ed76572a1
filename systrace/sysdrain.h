/* The syscall tracer feeding a drain: the systrace_ops that hand each
 * record to the drain, which merges it into its thread's stream.  Shared by
 * the recorder and the agent. */
#ifndef LP_SYSTRACE_SYSDRAIN_H
#define LP_SYSTRACE_SYSDRAIN_H

#include <stdbool.h>

#include "common/drain.h"
#include "systrace/systrace.h"

struct sysdrain {
	struct drain *drain; /* borrowed: where the records go */
	bool on;             /* false: records are dropped (tracing is off), as the
	                      * runtime drops function events; losses still count */
};

/* The tracer's callbacks for sd (ctx is sd, which must outlive the
 * tracer).  They run inside systrace_poll, which the drain's owner calls
 * from drain_poll (drain_ops.collect). */
struct systrace_ops sysdrain_ops(struct sysdrain *sd);

#endif
