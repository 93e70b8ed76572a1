/* The producer-consumer verdict from a `record --sync` trace: the sync
 * analysis's pairs, as `report --sync` computes them (a pass by time). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/analysis/syncstats.h"
#include "host/lib/export/syncreport.h"
#include "host/lib/trace/walk.h"
#include "host/lib/tune/verdict.h"
#include "host/lib/util/error.h"

int tune_verdict_read(const char *dir, int *slow, char *line, size_t linelen, char *err, size_t errlen)
{
	struct walk_ops ops = { 0 };
	struct syncstats_result res = { 0 };
	struct syncstats st;
	struct walk w;
	int r;

	r = walk_open(&w, dir, NULL, err, errlen);
	if (r)
		return r;
	w.quiet = true;
	syncstats_init(&st, &w);
	syncstats_walk_ops(&st, &ops);
	r = walk_run_by_time(&w, &ops);
	if (r) {
		error_set(err, errlen, r, "cannot read the trace '%s': %s", dir, strerror(-r));
		goto out;
	}
	if (!w.sync_events) {
		r = error_set(err, errlen, -ENODATA, "the trace '%s' has no synchronisation events", dir);
		goto out;
	}
	r = syncstats_collect(&st, NULL, &res);
	if (r) {
		error_set(err, errlen, r, "out of memory reading '%s'", dir);
		goto out;
	}
	if (res.npairs) {
		*slow = res.pairs[0].slow;
		syncreport_pair_text(&st, &res.pairs[0], line, linelen);
	} else {
		*slow = -1;
		snprintf(line, linelen,
		         "no producer/consumer pair (no condition or semaphore one group of threads "
		         "signals and another waits on)");
	}
out:
	syncstats_result_release(&res);
	syncstats_release(&st);
	walk_release(&w);
	return r;
}
