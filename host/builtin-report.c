/* layerprof report: the flat profile, per function (optionally per thread):
 * calls, total (inclusive, recursion counted once), self, avg, min, max. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/builtin.h"
#include "host/lib/export_report.h"
#include "host/lib/heap.h"
#include "host/lib/heapfeed.h"
#include "host/lib/heapview.h"
#include "host/lib/json.h"
#include "host/lib/profile.h"
#include "host/lib/sysstats.h"
#include "host/lib/walk.h"

static const char report_usage[] =
    "usage: layerprof report [options] [<trace dir>]\n"
    "\n"
    "Flat profile of a trace (default "
    "layerprof.data"
    "): per function its calls and\n"
    "total (inclusive), self, average, minimum and maximum time per call.\n"
    "\n"
    "  -s, --sort KEYS       sort by total, self, calls, avg, min, max or name;\n"
    "                        comma-separated, first key first (default total)\n"
    "  -t, --per-thread      one row per function and thread\n"
    "      --syscalls        the system calls instead: per syscall its calls, errors\n"
    "                        and times (total, avg, min, max, p50, p99), and per\n"
    "                        function the syscalls it made\n"
    "      --memory          the heap instead (record --memory): per call site and\n"
    "                        function the live objects and bytes, peak, allocations,\n"
    "                        growth; illegal releases, overlaps, unfreed at exit\n"
    "                        (text or json)\n"
    "      --at-peak         with --memory: the state when the heap was largest\n"
    "      --at TIME         with --memory: the state TIME after the recording began\n"
    "                        (e.g. 1.5s, 200ms)\n"
    "      --format FMT      text (default), json, xml (docs/report.xsd) or html (one\n"
    "                        self-contained page); xml and html hold the flat profile,\n"
    "                        the call trees and the system calls together\n"
    "  -o, --output FILE     write to FILE (default: standard output)\n" FILTER_HELP
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 trace missing, empty, damaged or of another version.\n";

struct report {
	struct walk w;
	struct profile prof;
	unsigned flags; /* enum profile_flags */
	struct profile_order order;
};

static void print_text(struct report *rp, const struct profile_rows *rows)
{
	struct walk *w = &rp->w;
	char a[32], b[32], c[32], d[32], e[32];
	uint64_t calls = 0;
	size_t i;

	for (i = 0; i < w->nstreams; i++)
		calls += w->streams[i]->calls;
	printf("# layerprof report: %llu calls, %zu functions, %u threads, %llu events lost\n",
	       (unsigned long long)calls, rows->n, w->nstreams, (unsigned long long)w->lost);
	if (w->filtered_at_record)
		printf("# recorded with filters: calls outside them are not in this trace\n");
	printf("#\n");
	printf("%12s %12s %10s %12s %12s %12s  %s%s\n", "Total", "Self", "Calls", "Avg", "Min", "Max",
	       (rp->flags & PROFILE_PER_THREAD) ? "TID     " : "", "Function");
	printf("%12s %12s %10s %12s %12s %12s  %s%s\n", "==========", "==========", "========", "==========",
	       "==========", "==========", (rp->flags & PROFILE_PER_THREAD) ? "======  " : "", "========");
	for (i = 0; i < rows->n; i++) {
		const struct profile_row *r = &rows->row[i];

		printf("%12s %12s %10llu %12s %12s %12s  ", format_duration(r->total_ns, a, sizeof(a)),
		       format_duration(r->self_ns, b, sizeof(b)), (unsigned long long)r->calls,
		       format_duration(profile_row_avg(r), c, sizeof(c)), format_duration(r->min_ns, d, sizeof(d)),
		       format_duration(r->max_ns, e, sizeof(e)));
		if (rp->flags & PROFILE_PER_THREAD)
			printf("%-6u  ", r->tid);
		printf("%s\n", r->name);
	}
	if (w->lost)
		printf("\n# %llu events lost: the profile is incomplete\n", (unsigned long long)w->lost);
	if (w->syscalls)
		printf("\n# the trace has system calls: see report --syscalls\n");
}

static void print_sys_text(struct report *rp, const struct sysstats *st, const struct sysstats_result *res)
{
	struct walk *w = &rp->w;
	char a[32], b[32], c[32], d[32], e[32], f[32];
	size_t i;

	printf("# layerprof report --syscalls: %llu calls, %llu errors, %zu syscalls, %u threads, %llu events lost\n",
	       (unsigned long long)st->calls, (unsigned long long)st->errors, res->nrows, w->nstreams,
	       (unsigned long long)w->lost);
	if (!w->syscalls)
		printf("# no system calls in this trace (record with --syscalls)\n");
	printf("#\n");
	printf("%10s %8s %12s %12s %12s %12s %12s %12s  %s\n", "Calls", "Errors", "Total", "Avg", "Min", "Max", "p50",
	       "p99", "Syscall");
	printf("%10s %8s %12s %12s %12s %12s %12s %12s  %s\n", "========", "======", "==========", "==========",
	       "==========", "==========", "==========", "==========", "=======");
	for (i = 0; i < res->nrows; i++) {
		const struct sysstats_row *r = &res->rows[i];

		printf("%10llu %8llu %12s %12s %12s %12s %12s %12s  %s", (unsigned long long)r->calls,
		       (unsigned long long)r->errors, format_duration(r->total_ns, a, sizeof(a)),
		       format_duration(r->timed ? r->total_ns / r->timed : 0, b, sizeof(b)),
		       format_duration(r->min_ns, c, sizeof(c)), format_duration(r->max_ns, d, sizeof(d)),
		       format_duration(r->p50_ns, e, sizeof(e)), format_duration(r->p99_ns, f, sizeof(f)), r->name);
		if (r->unfinished)
			printf(" (%llu unfinished)", (unsigned long long)r->unfinished);
		printf("\n");
	}
	printf("\n# by function\n");
	printf("%10s %8s %12s  %s%-16s %s\n", "Calls", "Errors", "Total",
	       (rp->flags & PROFILE_PER_THREAD) ? "TID     " : "", "Syscall", "Function");
	printf("%10s %8s %12s  %s%-16s %s\n",
	       "========", "======", "==========", (rp->flags & PROFILE_PER_THREAD) ? "======  " : "",
	       "=======", "========");
	for (i = 0; i < res->nfns; i++) {
		const struct sysstats_fn *fn = &res->fns[i];

		printf("%10llu %8llu %12s  ", (unsigned long long)fn->calls, (unsigned long long)fn->errors,
		       format_duration(fn->total_ns, a, sizeof(a)));
		if (rp->flags & PROFILE_PER_THREAD)
			printf("%-6u  ", fn->tid);
		printf("%-16s %s\n", fn->syscall, fn->name);
	}
	if (w->lost)
		printf("\n# %llu events lost: the numbers are incomplete\n", (unsigned long long)w->lost);
}

static void print_sys_json(struct report *rp, const struct sysstats *st, const struct sysstats_result *res)
{
	struct walk *w = &rp->w;
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir);
	json_u64(&j, "lost_events", w->lost);
	json_u64(&j, "calls", st->calls);
	json_u64(&j, "errors", st->errors);
	json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
	sysstats_json(&j, res, rp->flags & PROFILE_PER_THREAD);
	json_object_end(&j);
	json_finish(&j);
}

/* report --syscalls */
static int report_syscalls(struct report *rp, bool json, const char *dir)
{
	struct walk_ops ops = { 0 };
	struct sysstats st;
	struct sysstats_result res;
	int code;

	sysstats_init(&st, &rp->w, (rp->flags & PROFILE_PER_THREAD) ? SYSSTATS_PER_THREAD : 0);
	ops.ctx = &st;
	ops.syscall = sysstats_syscall;
	if (walk_run(&rp->w, &ops) || st.oom || sysstats_collect(&st, &res)) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", dir);
		sysstats_release(&st);
		return LP_EXIT_FAILURE;
	}
	code = walk_report_condition(&rp->w, "report");
	if (json)
		print_sys_json(rp, &st, &res);
	else
		print_sys_text(rp, &st, &res);
	sysstats_result_release(&res);
	sysstats_release(&st);
	return code;
}

/* Where the times of a memory report count from: the recording's start,
 * else the trace's first event. */
static uint64_t trace_origin(struct walk *w)
{
	char buf[32];

	if (walk_meta(w, "start_monotonic_ns", buf, sizeof(buf)))
		return strtoull(buf, NULL, 10);
	return w->first_ns;
}

/* One pass of the heap: stop_ns 0 for the whole trace. */
static int memory_pass(struct report *rp, struct heap *h, struct heapfeed *feed, uint64_t stop_ns)
{
	struct walk_ops ops = { 0 };

	if (heap_init(h) || heapfeed_init(feed, &rp->w, h))
		return -ENOMEM;
	feed->stop_ns = stop_ns;
	heapfeed_walk_ops(feed, &ops);
	if (walk_run_by_time(&rp->w, &ops))
		return -ENOMEM;
	heapfeed_flush(feed, rp->w.last_ns);
	heap_settle(h);
	return h->oom || feed->oom ? -ENOMEM : 0;
}

/* report --memory */
static int report_memory(struct report *rp, bool json, const char *dir, bool at_peak, bool has_at, uint64_t at_ns)
{
	struct heapview_opts o = { .at_peak = false };
	struct heapfeed feed = { 0 };
	struct heap h = { 0 };
	int code, r;

	r = memory_pass(rp, &h, &feed, 0);
	o.origin_ns = trace_origin(&rp->w);
	if (!r && (at_peak || has_at)) {
		/* again, up to the moment asked for */
		o.state_ns = at_peak ? h.peak_ns : o.origin_ns + at_ns;
		heapfeed_release(&feed);
		heap_release(&h);
		r = memory_pass(rp, &h, &feed, o.state_ns ? o.state_ns : 1);
		o.at_peak = at_peak;
	}
	if (r) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", dir);
		code = LP_EXIT_FAILURE;
		goto out;
	}
	code = walk_report_condition(&rp->w, "report");
	if (json) {
		struct json j;

		json_init(&j, stdout);
		json_object_begin(&j, NULL);
		json_str(&j, "trace", rp->w.dir);
		json_u64(&j, "lost_events", rp->w.lost);
		json_bool(&j, "complete", rp->w.r.state == READER_OK && rp->w.r.seen_end);
		json_u64(&j, "origin_ns", o.origin_ns);
		heapview_json(&j, &rp->w, &h, &feed, &o);
		json_object_end(&j);
		json_finish(&j);
	} else {
		heapview_text(stdout, &rp->w, &h, &feed, &o);
	}
out:
	heapfeed_release(&feed);
	heap_release(&h);
	return code;
}

static void print_json(struct report *rp, const struct profile_rows *rows)
{
	struct walk *w = &rp->w;
	struct json j;
	uint32_t i;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir);
	json_u64(&j, "lost_events", w->lost);
	json_u64(&j, "events", w->events);
	json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
	json_bool(&j, "filtered_at_record", w->filtered_at_record);
	json_array_begin(&j, "threads");
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		json_object_begin(&j, NULL);
		json_u64(&j, "pid", s->pid);
		json_u64(&j, "tid", s->tid);
		json_u64(&j, "image", s->image);
		json_str(&j, "comm", s->comm);
		json_u64(&j, "calls", s->calls);
		json_u64(&j, "lost_events", s->lost);
		if (s->parent_pid)
			json_u64(&j, "parent_pid", s->parent_pid);
		json_bool(&j, "after_exec", s->after_exec);
		if (s->exited)
			json_u64(&j, "exit_status", s->status);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "functions");
	for (i = 0; i < rows->n; i++) {
		const struct profile_row *r = &rows->row[i];

		json_object_begin(&j, NULL);
		json_str(&j, "name", r->name);
		json_u64(&j, "calls", r->calls);
		json_u64(&j, "total_ns", r->total_ns);
		json_u64(&j, "self_ns", r->self_ns);
		json_u64(&j, "avg_ns", profile_row_avg(r));
		json_u64(&j, "min_ns", r->min_ns == UINT64_MAX ? 0 : r->min_ns);
		json_u64(&j, "max_ns", r->max_ns);
		if (rp->flags & PROFILE_PER_THREAD) {
			json_u64(&j, "tid", r->tid);
			json_u64(&j, "pid", r->pid);
		}
		if (r->file) {
			json_str(&j, "file", r->file);
			json_u64(&j, "line", r->line);
		}
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "per-thread", no_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "syscalls", no_argument, NULL, 'Y' },
		{ "memory", no_argument, NULL, 'M' },
		{ "at-peak", no_argument, NULL, 'P' },
		{ "at", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct report rp = { .order = { .keys = { PROFILE_TOTAL }, .nkeys = 1 } };
	struct walk_ops ops = { 0 };
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data", *out = NULL;
	enum export_report_format export = EXPORT_REPORT_NONE;
	struct profile_rows rows;
	bool json = false, syscalls = false, memory = false, at_peak = false, has_at = false;
	uint64_t at_ns = 0;
	char err[512];
	int c, r, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:tho:F:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (profile_order_parse(&rp.order, optarg)) {
				fprintf(stderr,
				        "layerprof report: invalid --sort '%s': use total, self, calls, avg, min, "
				        "max, name\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case 't':
			rp.flags |= PROFILE_PER_THREAD;
			break;
		case 'Y':
			syscalls = true;
			break;
		case 'M':
			memory = true;
			break;
		case 'P':
			at_peak = true;
			break;
		case 'A':
			if (parse_duration(optarg, &at_ns)) {
				fprintf(stderr, "layerprof report: invalid --at '%s': a time such as 1.5s or 200ms\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			has_at = true;
			break;
		case 'f':
			export = export_report_format_parse(optarg);
			if (strcmp(optarg, "text") && strcmp(optarg, "json") && export == EXPORT_REPORT_NONE) {
				fprintf(stderr, "layerprof report: invalid --format '%s': text, json, xml or html\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return LP_EXIT_OK;
		default:
			r = filter_opts_parse(&fopts, c, optarg, "report");
			if (r == 1)
				break;
			if (r == 0)
				fputs(report_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind < argc)
		dir = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "layerprof report: one trace at a time ('%s' is extra)\n", argv[optind]);
		return LP_EXIT_USAGE;
	}
	if ((at_peak || has_at) && !memory) {
		fprintf(stderr, "layerprof report: --at-peak and --at go with --memory\n");
		return LP_EXIT_USAGE;
	}
	if (at_peak && has_at) {
		fprintf(stderr, "layerprof report: --at-peak or --at, not both\n");
		return LP_EXIT_USAGE;
	}
	if (memory && syscalls) {
		fprintf(stderr, "layerprof report: --memory or --syscalls, not both\n");
		return LP_EXIT_USAGE;
	}
	if (memory && export != EXPORT_REPORT_NONE) {
		fprintf(stderr, "layerprof report: --memory gives text or json\n");
		return LP_EXIT_USAGE;
	}
	r = walk_open(&rp.w, dir, &fopts, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof report: %s\n", err);
		return r == -ENOMEM ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
	}
	if (out && !freopen(out, "w", stdout)) {
		fprintf(stderr, "layerprof report: cannot write '%s': %s\n", out, strerror(errno));
		walk_release(&rp.w);
		return LP_EXIT_FAILURE;
	}
	if (memory) {
		code = report_memory(&rp, json, dir, at_peak, has_at, at_ns);
		walk_release(&rp.w);
		return code;
	}
	if (export != EXPORT_REPORT_NONE) {
		code = export_report(&rp.w, export, rp.flags, &rp.order, out);
		walk_release(&rp.w);
		return code;
	}
	if (syscalls) {
		code = report_syscalls(&rp, json, dir);
		walk_release(&rp.w);
		return code;
	}
	profile_init(&rp.prof);
	profile_walk_ops(&rp.prof, &ops);
	if (walk_run(&rp.w, &ops) || rp.prof.oom) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", dir);
		code = LP_EXIT_FAILURE;
		goto out;
	}
	code = walk_report_condition(&rp.w, "report");
	if (profile_collect(&rp.w, rp.flags, &rp.order, &rows)) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", dir);
		code = LP_EXIT_FAILURE;
		goto out;
	}
	if (json)
		print_json(&rp, &rows);
	else
		print_text(&rp, &rows);
	profile_rows_release(&rows);
out:
	profile_release(&rp.prof);
	walk_release(&rp.w);
	return code;
}
