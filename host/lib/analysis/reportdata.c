/* One pass that gathers a full report (see reportdata.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/analysis/reportdata.h"
#include "layerprof/format.h"

/* Whether the trace says, before its first events, that it has system
 * calls (META's syscall_arch, written since traces have them) or kernel
 * events (KFORMAT chunks come after META, before any event).  The kernel
 * layer joins the pass only then: it follows every call, which costs as
 * much as the rest of the pass. */
static bool trace_has_layers(struct walk *w)
{
	const uint8_t *payload;
	struct chunk_info ci;
	bool yes = false;

	if (!w->dir || reader_seek(&w->r, LP_FILE_HEADER_SIZE))
		return false;
	while (!yes && reader_next(&w->r, &ci, &payload) > 0 && ci.type != LP_CHUNK_EVENTS) {
		if (ci.type == LP_CHUNK_KFORMAT)
			yes = true;
		else if (ci.type == LP_CHUNK_META)
			yes = memmem(payload, ci.len, "\nsyscall_arch=", 14) ||
			      memmem(payload, ci.len, "\nkernel=1\n", 10);
	}
	return yes;
}

int reportdata_build(struct reportdata *rd, struct walk *w, unsigned flags, const struct profile_order *order)
{
	/* the builders, each a consumer of the one pass */
	struct walk_ops prof_ops = { 0 }, tree_ops = { 0 }, sys_ops = { 0 }, kl_ops = { 0 };

	memset(rd, 0, sizeof(*rd));
	rd->w = w;
	rd->flags = flags;
	rd->order = *order;
	profile_init(&rd->prof);
	calltree_init(&rd->ct);
	sysstats_init(&rd->st, w, (flags & PROFILE_PER_THREAD) ? SYSSTATS_PER_THREAD : 0);
	profile_walk_ops(&rd->prof, &prof_ops);
	calltree_walk_ops(&rd->ct, &tree_ops);
	sysstats_walk_ops(&rd->st, &sys_ops);
	prof_ops.next = &tree_ops;
	tree_ops.next = &sys_ops;
	if (trace_has_layers(w)) {
		rd->kl = klayer_new(w);
		if (!rd->kl)
			goto nomem;
		klayer_walk_ops(rd->kl, &kl_ops);
		sys_ops.next = &kl_ops;
	}
	if (walk_run(w, &prof_ops) || rd->prof.oom || rd->ct.oom || rd->st.oom)
		goto nomem;
	if (profile_collect(w, flags, order, &rd->rows))
		goto nomem;
	if (w->syscalls && sysstats_collect(&rd->st, &rd->sys))
		goto nomem;
	/* a trace whose first chunks do not say so has no layers shown */
	rd->has_kernel = rd->kl && w->kernel_events > 0;
	rd->has_layers = rd->kl && (rd->has_kernel || w->syscalls > 0);
	if (rd->has_layers && klayer_collect(rd->kl, &rd->layers))
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
	klayer_result_release(&rd->layers);
	klayer_free(rd->kl);
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
