/* The kernel tracer feeding a drain (see kdrain.h). */
#include "ktrace/kdrain.h"

static void on_event(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, const struct kernrec *k)
{
	struct sysdrain *sd = ctx;

	if (sd->on)
		drain_kernel(sd->drain, pid, tid, ns, k);
}

static void on_lost(void *ctx, uint32_t cpu, uint64_t count)
{
	struct sysdrain *sd = ctx;

	(void)cpu; /* the recorder prints them per CPU from ktrace_get_stats */
	drain_syscalls_lost(sd->drain, 0, 0, count);
}

struct ktrace_ops kdrain_ops(struct sysdrain *sd)
{
	struct ktrace_ops ops = { .ctx = sd, .event = on_event, .lost = on_lost };

	return ops;
}
