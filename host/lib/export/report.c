/* The reports of `layerprof report` (see export/report.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/lib/analysis/reportdata.h"
#include "host/lib/analysis/sysstats.h"
#include "host/lib/export/kreport.h"
#include "host/lib/export/html.h"
#include "host/lib/export/report.h"
#include "host/lib/export/xml.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/view.h"
#include "host/lib/util/json.h"
#include "host/lib/util/options.h"
#include "layerprof/format.h"

enum export_report_format export_report_format_parse(const char *name)
{
	if (!strcmp(name, "text"))
		return EXPORT_REPORT_TEXT;
	if (!strcmp(name, "json"))
		return EXPORT_REPORT_JSON;
	if (!strcmp(name, "xml"))
		return EXPORT_REPORT_XML;
	if (!strcmp(name, "html"))
		return EXPORT_REPORT_HTML;
	return EXPORT_REPORT_NONE;
}

/* ------------------------------------------------------------ the flat profile */

/* What the runtime did with a full ring (META ring_full): "wait" (record:
 * the program waited for the recorder), "discard" (live, record
 * --discard), or NULL (a trace from before the key). */
static const char *ring_full_mode(const struct walk *w, char *buf, size_t size)
{
	const char *v = walk_meta(w, "ring_full", buf, size);

	return v && (!strcmp(v, "wait") || !strcmp(v, "discard")) ? v : NULL;
}

static void profile_text_mode(FILE *f, const struct walk *w)
{
	char buf[16];
	const char *mode = ring_full_mode(w, buf, sizeof(buf));

	if (mode && !strcmp(mode, "wait"))
		fprintf(
		    f, "# mode: wait (at a full ring the program waits for the recorder: no event dropped for room)\n");
	else if (mode)
		fprintf(f, "# mode: discard (at a full ring events are dropped and counted as lost)\n");
}

/* The probes of record --probe: hits per instruction (and process image,
 * whose addresses are its own), in order of first hit. */
#define REPORT_PROBES_MAX 4096u
struct probecount {
	struct walk *w;
	size_t n;
	bool full; /* more distinct instructions than REPORT_PROBES_MAX: left out */
	struct {
		uint32_t image;
		uint64_t addr, hits;
	} p[REPORT_PROBES_MAX];
};

static void probe_hit(void *ctx, struct walk_stream *s, const struct walk_probe *pr)
{
	struct probecount *pc = ctx;

	for (size_t i = 0; i < pc->n; i++) {
		if (pc->p[i].addr == pr->addr && pc->p[i].image == s->image) {
			pc->p[i].hits++;
			return;
		}
	}
	if (pc->n == REPORT_PROBES_MAX) {
		pc->full = true;
		return;
	}
	pc->p[pc->n].image = s->image;
	pc->p[pc->n].addr = pr->addr;
	pc->p[pc->n++].hits = 1;
}

static void probes_text(FILE *f, const struct probecount *pc)
{
	char name[1024];

	if (!pc->n)
		return;
	fprintf(f, "\n%10s  %s\n%10s  %s\n", "Hits", "Probe", "========", "========");
	for (size_t i = 0; i < pc->n; i++) {
		walk_name(pc->w, pc->p[i].image, pc->p[i].addr, name, sizeof(name));
		fprintf(f, "%10llu  %s\n", (unsigned long long)pc->p[i].hits, name);
	}
}

static void probes_json(struct json *j, const struct probecount *pc)
{
	char name[1024];

	json_array_begin(j, "probes");
	for (size_t i = 0; i < pc->n; i++) {
		walk_name(pc->w, pc->p[i].image, pc->p[i].addr, name, sizeof(name));
		json_object_begin(j, NULL);
		json_str(j, "name", name);
		json_u64(j, "hits", pc->p[i].hits);
		json_object_end(j);
	}
	json_array_end(j);
}

static void profile_text(FILE *f, struct walk *w, const struct export_report_opts *o, const struct profile_rows *rows,
                         const struct probecount *pc)
{
	bool per_thread = o->flags & PROFILE_PER_THREAD;
	char a[32], b[32], c[32], d[32], e[32];
	uint64_t calls = 0;
	size_t i;

	for (i = 0; i < w->nstreams; i++)
		calls += w->streams[i]->calls;
	fprintf(f, "# layerprof report: %llu calls, %zu functions, %u threads, %llu events lost\n",
	        (unsigned long long)calls, rows->n, w->nstreams - w->nother, (unsigned long long)w->lost);
	if (w->filtered_at_record)
		fprintf(f, "# recorded with filters: calls outside them are not in this trace\n");
	profile_text_mode(f, w);
	fprintf(f, "#\n");
	fprintf(f, "%12s %12s %10s %12s %12s %12s  %s%s\n", "Total", "Self", "Calls", "Avg", "Min", "Max",
	        per_thread ? "TID     " : "", "Function");
	fprintf(f, "%12s %12s %10s %12s %12s %12s  %s%s\n", "==========", "==========", "========", "==========",
	        "==========", "==========", per_thread ? "======  " : "", "========");
	for (i = 0; i < rows->n; i++) {
		const struct profile_row *r = &rows->row[i];

		fprintf(f, "%12s %12s %10llu %12s %12s %12s  ", options_format_duration(r->total_ns, a, sizeof(a)),
		        options_format_duration(r->self_ns, b, sizeof(b)), (unsigned long long)r->calls,
		        options_format_duration(profile_row_avg(r), c, sizeof(c)),
		        options_format_duration(r->min_ns, d, sizeof(d)),
		        options_format_duration(r->max_ns, e, sizeof(e)));
		if (per_thread)
			fprintf(f, "%-6u  ", r->tid);
		fprintf(f, "%s\n", r->name);
	}
	probes_text(f, pc);
	if (w->lost)
		fprintf(f, "\n# %llu events lost: the profile is incomplete\n", (unsigned long long)w->lost);
	if (w->r.lost_cause[0])
		fprintf(f, "# %s\n", w->r.lost_cause);
	if (w->syscalls)
		fprintf(f, "\n# the trace has system calls: see report --syscalls\n");
}

static void profile_json(FILE *f, struct walk *w, const struct export_report_opts *o, const struct profile_rows *rows,
                         const struct probecount *pc)
{
	struct json j;
	uint32_t i;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir);
	json_u64(&j, "lost_events", w->lost);
	if (w->r.lost_cause[0])
		json_str(&j, "lost_cause", w->r.lost_cause);
	json_u64(&j, "events", w->events);
	json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
	json_bool(&j, "filtered_at_record", w->filtered_at_record);
	{
		char buf[16];
		const char *mode = ring_full_mode(w, buf, sizeof(buf));

		if (mode)
			json_str(&j, "ring_full", mode);
		else
			json_null(&j, "ring_full");
	}
	json_array_begin(&j, "threads");
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		if (s->other)
			continue; /* another process's (--kernel-system), not the program's */
		json_object_begin(&j, NULL);
		json_u64(&j, "pid", s->pid);
		json_u64(&j, "tid", s->tid);
		json_u64(&j, "image", s->image);
		json_str(&j, "comm", s->comm);
		json_u64(&j, "calls", s->calls);
		json_u64(&j, "lost_events", s->lost);
		/* exits whose entry the stream lacks (a tracer that saw a
		 * return without its call): left out of the profile */
		json_u64(&j, "unmatched_exits", s->fs.unmatched);
		if (s->parent_pid)
			json_u64(&j, "parent_pid", s->parent_pid);
		json_bool(&j, "after_exec", s->after_exec);
		if (s->exited && s->status == LP_EXIT_STATUS_UNKNOWN)
			json_null(&j, "exit_status"); /* ended, how is not known */
		else if (s->exited)
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
		if (o->flags & PROFILE_PER_THREAD) {
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
	probes_json(&j, pc);
	json_object_end(&j);
	json_finish(&j);
}

static int write_profile(struct walk *w, const struct export_report_opts *o, FILE *f)
{
	struct walk_ops ops = { 0 }, probe_ops = { 0 };
	struct probecount *pc = calloc(1, sizeof(*pc));
	struct profile prof;
	struct profile_rows rows;
	int r = -ENOMEM;

	profile_init(&prof);
	if (!pc)
		goto out;
	pc->w = w;
	probe_ops.ctx = pc;
	probe_ops.probe = probe_hit;
	profile_walk_ops(&prof, &ops);
	ops.next = &probe_ops;
	if (walk_run(w, &ops) || prof.oom || profile_collect(w, o->flags, &o->order, &rows))
		goto out;
	if (o->fmt == EXPORT_REPORT_JSON)
		profile_json(f, w, o, &rows, pc);
	else
		profile_text(f, w, o, &rows, pc);
	profile_rows_release(&rows);
	r = 0;
out:
	free(pc);
	profile_release(&prof);
	return r;
}

/* ------------------------------------------------------------ the system calls */

static void syscalls_text(FILE *f, struct walk *w, const struct export_report_opts *o, const struct sysstats *st,
                          const struct sysstats_result *res)
{
	bool per_thread = o->flags & PROFILE_PER_THREAD;
	char a[32], b[32], c[32], d[32], e[32], g[32];
	size_t i;

	fprintf(f,
	        "# layerprof report --syscalls: %llu calls, %llu errors, %zu syscalls, %u threads, %llu events lost\n",
	        (unsigned long long)st->calls, (unsigned long long)st->errors, res->nrows, w->nstreams - w->nother,
	        (unsigned long long)w->lost);
	if (!w->syscalls)
		fprintf(f, "# no system calls in this trace (record with --syscalls)\n");
	fprintf(f, "#\n");
	fprintf(f, "%10s %8s %12s %12s %12s %12s %12s %12s  %s\n", "Calls", "Errors", "Total", "Avg", "Min", "Max",
	        "p50", "p99", "Syscall");
	fprintf(f, "%10s %8s %12s %12s %12s %12s %12s %12s  %s\n", "========", "======", "==========", "==========",
	        "==========", "==========", "==========", "==========", "=======");
	for (i = 0; i < res->nrows; i++) {
		const struct sysstats_row *r = &res->rows[i];

		fprintf(f, "%10llu %8llu %12s %12s %12s %12s %12s %12s  %s", (unsigned long long)r->calls,
		        (unsigned long long)r->errors, options_format_duration(r->total_ns, a, sizeof(a)),
		        options_format_duration(r->timed ? r->total_ns / r->timed : 0, b, sizeof(b)),
		        options_format_duration(r->min_ns, c, sizeof(c)),
		        options_format_duration(r->max_ns, d, sizeof(d)),
		        options_format_duration(r->p50_ns, e, sizeof(e)),
		        options_format_duration(r->p99_ns, g, sizeof(g)), r->name);
		if (r->unfinished)
			fprintf(f, " (%llu unfinished)", (unsigned long long)r->unfinished);
		fprintf(f, "\n");
	}
	fprintf(f, "\n# by function\n");
	fprintf(f, "%10s %8s %12s  %s%-16s %s\n", "Calls", "Errors", "Total", per_thread ? "TID     " : "", "Syscall",
	        "Function");
	fprintf(f, "%10s %8s %12s  %s%-16s %s\n", "========", "======", "==========", per_thread ? "======  " : "",
	        "=======", "========");
	for (i = 0; i < res->nfns; i++) {
		const struct sysstats_fn *fn = &res->fns[i];

		fprintf(f, "%10llu %8llu %12s  ", (unsigned long long)fn->calls, (unsigned long long)fn->errors,
		        options_format_duration(fn->total_ns, a, sizeof(a)));
		if (per_thread)
			fprintf(f, "%-6u  ", fn->tid);
		fprintf(f, "%-16s %s\n", fn->syscall, fn->name);
	}
	if (w->lost)
		fprintf(f, "\n# %llu events lost: the numbers are incomplete\n", (unsigned long long)w->lost);
}

static void syscalls_json(FILE *f, struct walk *w, const struct export_report_opts *o, const struct sysstats *st,
                          const struct sysstats_result *res)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir);
	json_u64(&j, "lost_events", w->lost);
	json_u64(&j, "calls", st->calls);
	json_u64(&j, "errors", st->errors);
	json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
	sysstats_json(&j, res, o->flags & PROFILE_PER_THREAD);
	json_object_end(&j);
	json_finish(&j);
}

static int write_syscalls(struct walk *w, const struct export_report_opts *o, FILE *f)
{
	struct walk_ops ops = { 0 };
	struct sysstats st;
	struct sysstats_result res;

	sysstats_init(&st, w, (o->flags & PROFILE_PER_THREAD) ? SYSSTATS_PER_THREAD : 0);
	sysstats_walk_ops(&st, &ops);
	if (walk_run(w, &ops) || st.oom || sysstats_collect(&st, &res)) {
		sysstats_release(&st);
		return -ENOMEM;
	}
	if (o->fmt == EXPORT_REPORT_JSON)
		syscalls_json(f, w, o, &st, &res);
	else
		syscalls_text(f, w, o, &st, &res);
	sysstats_result_release(&res);
	sysstats_release(&st);
	return 0;
}

/* ------------------------------------------------------------ the heap */

uint64_t export_report_origin(struct walk *w)
{
	char buf[32];

	if (walk_meta(w, "start_monotonic_ns", buf, sizeof(buf)))
		return strtoull(buf, NULL, 10);
	return w->first_ns;
}

static int write_memory(struct walk *w, const struct export_report_opts *eo, FILE *f)
{
	struct heapview_opts o = { .at_peak = false };
	struct heapfeed feed = { 0 };
	struct heap h = { 0 };
	int r;

	r = heapfeed_pass(w, &h, &feed, 0);
	o.origin_ns = export_report_origin(w);
	if (!r && (eo->at_peak || eo->has_at)) {
		/* again, up to the moment asked for */
		o.state_ns = eo->at_peak ? h.peak_ns : o.origin_ns + eo->at_ns;
		heapfeed_release(&feed);
		heap_release(&h);
		r = heapfeed_pass(w, &h, &feed, o.state_ns ? o.state_ns : 1);
		o.at_peak = eo->at_peak;
	}
	if (r)
		goto out;
	switch (eo->fmt) {
	case EXPORT_REPORT_JSON: {
		struct json j;

		json_init(&j, f);
		json_object_begin(&j, NULL);
		json_str(&j, "trace", w->dir);
		json_u64(&j, "lost_events", w->lost);
		json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
		json_u64(&j, "origin_ns", o.origin_ns);
		heapview_json(&j, w, &h, &feed, &o);
		json_object_end(&j);
		json_finish(&j);
		break;
	}
	case EXPORT_REPORT_XML:
		r = export_xml_memory(w, &h, &feed, &o, f);
		break;
	case EXPORT_REPORT_HTML:
		r = export_html_memory(w, &h, &feed, &o, f);
		break;
	default:
		heapview_text(f, w, &h, &feed, &o);
		break;
	}
out:
	heapfeed_release(&feed);
	heap_release(&h);
	return r;
}

/* ------------------------------------------------------------ XML and HTML */

static int write_full(struct walk *w, const struct export_report_opts *o, FILE *f)
{
	struct reportdata rd;
	int r;

	if (reportdata_build(&rd, w, o->flags, &o->order))
		return -ENOMEM;
	r = o->fmt == EXPORT_REPORT_XML ? export_xml(&rd, f) : export_html(&rd, f);
	reportdata_release(&rd);
	return r;
}

int export_report_write(struct walk *w, const struct export_report_opts *o, FILE *f)
{
	int r;

	if (o->what == EXPORT_REPORT_MEMORY)
		r = write_memory(w, o, f);
	else if ((o->what == EXPORT_REPORT_LAYERS || o->what == EXPORT_REPORT_KERNEL) &&
	         (o->fmt == EXPORT_REPORT_TEXT || o->fmt == EXPORT_REPORT_JSON))
		r = export_kernel_write(w, o->what == EXPORT_REPORT_LAYERS, o->fmt == EXPORT_REPORT_JSON, f);
	else if (o->fmt == EXPORT_REPORT_XML || o->fmt == EXPORT_REPORT_HTML)
		r = write_full(w, o, f);
	else if (o->what == EXPORT_REPORT_SYSCALLS)
		r = write_syscalls(w, o, f);
	else
		r = write_profile(w, o, f);
	if (r)
		return r;
	return ferror(f) ? -EIO : 0;
}
