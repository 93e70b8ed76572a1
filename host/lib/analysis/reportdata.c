/* One pass that gathers a full report (see reportdata.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/analysis/reportdata.h"

/* The walk callbacks: each event to every builder that wants it. */
static void on_begin(void *ctx, struct walk_stream *s)
{
	struct reportdata *rd = ctx;

	profile_begin(&rd->prof, s);
	calltree_begin(&rd->ct, s);
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct reportdata *rd = ctx;

	profile_entry(&rd->prof, s, ns, addr, depth, flags);
	calltree_entry(&rd->ct, s, ns, addr, depth, flags);
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct reportdata *rd = ctx;

	profile_exit(&rd->prof, s, ns, addr, depth, entry_ns, flags);
	calltree_exit(&rd->ct, s, ns, addr, depth, entry_ns, flags);
}

static void on_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	struct reportdata *rd = ctx;

	profile_call(&rd->prof, s, exit_ns, addr, duration_ns);
}

static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct reportdata *rd = ctx;

	calltree_syscall(&rd->ct, s, sc);
	sysstats_syscall(&rd->st, s, sc);
}

int reportdata_build(struct reportdata *rd, struct walk *w, unsigned flags, const struct profile_order *order)
{
	struct walk_ops ops = { .ctx = rd,
		                .begin = on_begin,
		                .entry = on_entry,
		                .exit = on_exit_ev,
		                .call = on_call,
		                .syscall = on_syscall };

	memset(rd, 0, sizeof(*rd));
	rd->w = w;
	rd->flags = flags;
	rd->order = *order;
	profile_init(&rd->prof);
	calltree_init(&rd->ct);
	sysstats_init(&rd->st, w, (flags & PROFILE_PER_THREAD) ? SYSSTATS_PER_THREAD : 0);
	if (walk_run(w, &ops) || rd->prof.oom || rd->ct.oom || rd->st.oom)
		goto nomem;
	if (profile_collect(w, flags, order, &rd->rows))
		goto nomem;
	if (w->syscalls && sysstats_collect(&rd->st, &rd->sys))
		goto nomem;
	return 0;
nomem:
	reportdata_release(rd);
	return -ENOMEM;
}

void reportdata_release(struct reportdata *rd)
{
	profile_rows_release(&rd->rows);
	sysstats_result_release(&rd->sys);
	sysstats_release(&rd->st);
	calltree_release(&rd->ct);
	profile_release(&rd->prof);
	memset(rd, 0, sizeof(*rd));
}

const char *reportdata_order_name(const struct profile_order *order, char *buf, size_t size)
{
	static const char *const names[] = { "total", "self", "calls", "avg", "min", "max", "name" };
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < order->nkeys && n < size; i++) {
		unsigned k = (unsigned)order->keys[i];

		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "," : "",
		                      k < sizeof(names) / sizeof(names[0]) ? names[k] : "?");
	}
	return buf;
}
