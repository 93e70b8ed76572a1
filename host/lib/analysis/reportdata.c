/* One pass that gathers a full report (see reportdata.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/analysis/reportdata.h"

int reportdata_build(struct reportdata *rd, struct walk *w, unsigned flags, const struct profile_order *order)
{
	/* the builders, each a consumer of the one pass */
	struct walk_ops prof_ops = { 0 }, tree_ops = { 0 }, sys_ops = { 0 };

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
	if (walk_run(w, &prof_ops) || rd->prof.oom || rd->ct.oom || rd->st.oom)
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
