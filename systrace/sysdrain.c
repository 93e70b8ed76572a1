/* The syscall tracer feeding a drain: each record becomes a syscall event
 * in its thread's stream; records the kernel dropped are counted there. */
#include "systrace/sysdrain.h"

#include "common/sysevent.h"

static void on_sysrec(void *ctx, const struct sysrec *r)
{
	struct sysdrain *sd = ctx;
	struct sysevent ev;

	if (!sd->on)
		return;
	sysrec_to_event(r, &ev);
	drain_syscall(sd->drain, r->pid, r->tid, r->ns, &ev);
}

static void on_syslost(void *ctx, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct sysdrain *sd = ctx;

	drain_syscalls_lost(sd->drain, pid, tid, count);
}

struct systrace_ops sysdrain_ops(struct sysdrain *sd)
{
	struct systrace_ops ops = { .ctx = sd, .sys = on_sysrec, .lost = on_syslost };

	return ops;
}
