/* The dynamic tracer feeding a drain (see udrain.h). */
#include "dyntrace/udrain.h"

static void on_func(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t addr, bool exit)
{
	struct sysdrain *sd = ctx;

	if (sd->on)
		drain_func(sd->drain, pid, tid, ns, addr, exit);
}

static void on_exec(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns)
{
	struct sysdrain *sd = ctx;

	if (sd->on)
		drain_func_exec(sd->drain, pid, tid, ns);
}

static void on_longjmp(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t depth)
{
	struct sysdrain *sd = ctx;

	if (sd->on)
		drain_func_longjmp(sd->drain, pid, tid, ns, depth);
}

static void on_fork(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t parent, const uint64_t *frames,
                    uint32_t n)
{
	struct sysdrain *sd = ctx;

	if (sd->on)
		drain_func_fork(sd->drain, pid, tid, ns, parent, frames, n);
}

static void on_lost(void *ctx, uint32_t cpu, uint64_t count)
{
	struct sysdrain *sd = ctx;

	(void)cpu;
	drain_syscalls_lost(sd->drain, 0, 0, count);
}

struct uprobes_ops udrain_ops(struct sysdrain *sd)
{
	struct uprobes_ops ops = {
		.ctx = sd, .func = on_func, .exec = on_exec, .fork = on_fork, .longjmp = on_longjmp, .lost = on_lost
	};

	return ops;
}
