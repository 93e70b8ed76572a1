/* report --counters as text, JSON and XML (see export/ctrreport.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/export/ctrreport.h"
#include "host/lib/export/xml.h"
#include "host/lib/util/escape.h"
#include "layerprof/format.h"

/* META counters.unavailable: "name: reason; name: reason". */
#define CTRREPORT_UNAVAILABLE_MAX 32u

struct unavailable {
	char name[CTRSTATS_NAME_MAX];
	char reason[256];
};

/* Copies s to buf of size, cut to fit. */
static void copy_cut(char *buf, size_t size, const char *s)
{
	size_t n = strlen(s);

	if (n >= size)
		n = size - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

/* Splits META counters.unavailable into names and reasons; returns how
 * many (at most CTRREPORT_UNAVAILABLE_MAX). */
static uint32_t unavailable_parse(const struct walk *w, struct unavailable *out)
{
	char buf[sizeof(w->meta)];
	char *p = buf;
	uint32_t n = 0;

	if (!walk_meta(w, "counters.unavailable", buf, sizeof(buf)))
		return 0;
	while (*p && n < CTRREPORT_UNAVAILABLE_MAX) {
		char *end = strstr(p, "; "), *colon;

		if (end)
			*end = '\0';
		colon = strstr(p, ": ");
		if (colon)
			*colon = '\0';
		while (*p == ' ')
			p++;
		if (*p) {
			copy_cut(out[n].name, sizeof(out[n].name), p);
			copy_cut(out[n].reason, sizeof(out[n].reason), colon ? colon + 2 : "");
			n++;
		}
		if (!end)
			break;
		p = end + 2;
	}
	return n;
}

/* META counters.read: how function entries and exits were read. */
static const char *read_method(const struct walk *w, char *buf, size_t size)
{
	const char *v = walk_meta(w, "counters.read", buf, size);

	return v && *v ? v : NULL;
}

/* META counters.scope: "user" (only user space counted, as
 * perf_event_paranoid allowed) or "all". */
static const char *count_scope(const struct walk *w, char *buf, size_t size)
{
	const char *v = walk_meta(w, "counters.scope", buf, size);

	return v && *v ? v : NULL;
}

static const char *read_method_text(const char *m)
{
	if (!strcmp(m, "rdpmc"))
		return "rdpmc (in user space, no system call)";
	if (!strcmp(m, "read"))
		return "read(2) (a system call at each function entry and exit)";
	if (!strcmp(m, "none"))
		return "none (no values at function entry and exit: program and threads only)";
	return m;
}

static const char *key_text(const struct ctrstats_result *res, const struct ctrstats_key *k, char *buf, size_t size)
{
	switch (k->kind) {
	case CTRSTATS_KEY_CALLS:
		return "calls";
	case CTRSTATS_KEY_NAME:
		return "name";
	case CTRSTATS_KEY_METRIC:
		snprintf(buf, size, "%s", res->metrics[k->index].name);
		return buf;
	default:
		if (!res->n)
			return k->kind == CTRSTATS_KEY_SELF ? "self" : "incl";
		snprintf(buf, size, "%s:%s", k->kind == CTRSTATS_KEY_SELF ? "self" : "incl", res->names[k->index]);
		return buf;
	}
}

/* ------------------------------------------------------------ text */

/* A counter column's width: its name, at least 12. */
static int col_width(const char *name, int extra)
{
	int n = (int)strlen(name) + extra;

	return n < 12 ? 12 : n;
}

static void text_metric(FILE *f, const struct ctrstats_metric *m, const uint64_t *v, int width)
{
	char buf[32];
	double x;

	if (!ctrstats_metric_value(m, v, &x))
		snprintf(buf, sizeof(buf), "-");
	else if (m->kind == CTRSTATS_RATIO)
		snprintf(buf, sizeof(buf), "%.2f%%", 100.0 * x);
	else
		snprintf(buf, sizeof(buf), "%.3f", x);
	fprintf(f, " %*s", width, buf);
}

/* Says which of val's counters were multiplexed, and how much they were
 * scaled up; who names whose values they are. */
static void text_scaled(FILE *f, const struct ctrstats_result *res, const struct ctrstats_values *val, const char *who)
{
	uint32_t i;

	for (i = 0; i < res->n; i++) {
		double x;

		if (!ctrstats_scale(val, i, &x) || x == 1.0)
			continue;
		if (x == 0.0)
			fprintf(f,
			        "# %s: %s was not counted (enabled %" PRIu64
			        " ns, running 0): its value means nothing\n",
			        who, res->names[i], val->enabled[i]);
		else
			fprintf(
			    f, "# %s: %s was multiplexed: counted %.1f%% of the time enabled, its value scaled x%.2f\n",
			    who, res->names[i], 100.0 / x, x);
	}
	if ((val->flags & LP_CTR_SCALED) && !val->has_times)
		fprintf(f, "# %s: values were scaled (a counter was multiplexed)\n", who);
}

static void text_program(FILE *f, const struct ctrstats_result *res)
{
	uint32_t i;

	fprintf(f, "\n## program (%s)\n",
	        res->from_process ? "the recorder's totals of the program, its threads and children"
	                          : "the sum of its threads' values");
	if (!res->has_program) {
		fprintf(f, "# no values\n");
		return;
	}
	fprintf(f, "%20s  %s\n%20s  %s\n", "Value", "Counter", "==========", "=======");
	for (i = 0; i < res->n; i++)
		fprintf(f, "%20" PRIu64 "  %s\n", res->program.v[i], res->names[i]);
	for (i = 0; i < res->nmetrics; i++) {
		text_metric(f, &res->metrics[i], res->program.v, 19);
		fprintf(f, "  %s\n", res->metrics[i].name);
	}
	text_scaled(f, res, &res->program, "program");
}

static void text_cpus(FILE *f, const struct ctrstats_result *res)
{
	uint32_t i, c;

	if (!res->ncpus)
		return;
	fprintf(f, "\n## per CPU (the program's)\n%5s", "CPU");
	for (i = 0; i < res->n; i++)
		fprintf(f, " %*s", col_width(res->names[i], 0), res->names[i]);
	fputc('\n', f);
	for (c = 0; c < res->ncpus; c++) {
		fprintf(f, "%5u", res->cpus[c].cpu);
		for (i = 0; i < res->n; i++)
			fprintf(f, " %*" PRIu64, col_width(res->names[i], 0), res->cpus[c].val.v[i]);
		fputc('\n', f);
	}
	/* their times say where the program ran (running: on that CPU), not
	 * multiplexing: the recorder never scales them */
}

static void text_threads(FILE *f, const struct ctrstats_result *res)
{
	uint32_t i, t;

	fprintf(f, "\n## threads (values from the thread's first record to its END)\n%8s %8s %-16s", "PID", "TID",
	        "Comm");
	for (i = 0; i < res->n; i++)
		fprintf(f, " %*s", col_width(res->names[i], 0), res->names[i]);
	for (i = 0; i < res->nmetrics; i++)
		fprintf(f, " %*s", col_width(res->metrics[i].name, 0), res->metrics[i].name);
	fputc('\n', f);
	for (t = 0; t < res->nthreads; t++) {
		const struct ctrstats_thread_row *r = &res->threads[t];

		fprintf(f, "%8u %8u %-16s", r->s->pid, r->s->tid, r->s->comm);
		for (i = 0; i < res->n; i++)
			fprintf(f, " %*" PRIu64, col_width(res->names[i], 0), r->val.v[i]);
		for (i = 0; i < res->nmetrics; i++)
			text_metric(f, &res->metrics[i], r->val.v, col_width(res->metrics[i].name, 0));
		fputc('\n', f);
	}
	for (t = 0; t < res->nthreads; t++) {
		const struct ctrstats_thread_row *r = &res->threads[t];
		char who[32];

		snprintf(who, sizeof(who), "thread %u", r->s->tid);
		if (!r->has_end)
			fprintf(f, "# %s: its end was not recorded: values up to its last record\n", who);
		text_scaled(f, res, &r->val, who);
	}
}

static void text_functions(FILE *f, const struct ctrreport_opts *o, const struct ctrstats_result *res)
{
	char hdr[2 * CTRSTATS_NAME_MAX + 16];
	size_t r;
	uint32_t i;

	fprintf(f, "\n## functions (inclusive: from entry to exit; self: less the direct callees)\n");
	fprintf(f, "%10s", "Calls");
	for (i = 0; i < res->n; i++) {
		snprintf(hdr, sizeof(hdr), "incl:%s", res->names[i]);
		fprintf(f, " %*s", col_width(res->names[i], 5), hdr);
		snprintf(hdr, sizeof(hdr), "self:%s", res->names[i]);
		fprintf(f, " %*s", col_width(res->names[i], 5), hdr);
	}
	for (i = 0; i < res->nmetrics; i++)
		fprintf(f, " %*s", col_width(res->metrics[i].name, 0), res->metrics[i].name);
	fprintf(f, "  %sFunction\n", o->per_thread ? "TID     " : "");
	for (r = 0; r < res->nfns; r++) {
		const struct ctrstats_fn_row *fn = &res->fns[r];

		fprintf(f, "%10" PRIu64, fn->calls);
		for (i = 0; i < res->n; i++) {
			fprintf(f, " %*" PRIu64, col_width(res->names[i], 5), fn->incl[i]);
			fprintf(f, " %*" PRIu64, col_width(res->names[i], 5), fn->self[i]);
		}
		for (i = 0; i < res->nmetrics; i++)
			text_metric(f, &res->metrics[i], fn->incl, col_width(res->metrics[i].name, 0));
		fputs("  ", f);
		if (o->per_thread)
			fprintf(f, "%-6u  ", fn->tid);
		fprintf(f, "%s", fn->name);
		if (fn->unwound)
			fprintf(f, " (%" PRIu64 " left by longjmp)", fn->unwound);
		fputc('\n', f);
	}
}

static void text_limits(FILE *f, const struct walk *w, const struct ctrstats *st)
{
	if (st->unmatched_exits)
		fprintf(f, "# %" PRIu64 " exits without an open call of their function: left out\n",
		        st->unmatched_exits);
	if (st->unwound)
		fprintf(f,
		        "# %" PRIu64
		        " calls left by a longjmp: no counts of their own, their callers' self holds them\n",
		        st->unwound);
	if (st->open_at_end)
		fprintf(f, "# %" PRIu64 " calls still open when their thread's values ended: ended with those values\n",
		        st->open_at_end);
	if (st->deep_dropped)
		fprintf(f, "# %" PRIu64 " calls deeper than %u: left out\n", st->deep_dropped, CTRSTATS_DEPTH_MAX);
	if (st->fns_dropped)
		fprintf(f, "# %" PRIu64 " calls of functions over the first %u: left out\n", st->fns_dropped,
		        CTRSTATS_FUNCS_MAX);
	if (st->threads_dropped)
		fprintf(f, "# %" PRIu64 " records of threads over the first %u: left out\n", st->threads_dropped,
		        CTRSTATS_THREADS_MAX);
	if (st->cpus_dropped)
		fprintf(f, "# %" PRIu64 " records of CPUs over the first %u: left out\n", st->cpus_dropped,
		        CTRSTATS_CPUS_MAX);
	if (w->counter_malformed)
		fprintf(f, "# %" PRIu64 " malformed counter records: left out\n", w->counter_malformed);
	if (w->lost)
		fprintf(f, "# %" PRIu64 " events lost: the numbers are incomplete\n", w->lost);
	if (w->r.lost_cause[0])
		fprintf(f, "# %s\n", w->r.lost_cause);
}

static void write_text(FILE *f, struct walk *w, const struct ctrreport_opts *o, const struct ctrstats *st,
                       const struct ctrstats_result *res)
{
	struct unavailable un[CTRREPORT_UNAVAILABLE_MAX];
	uint32_t nun = unavailable_parse(w, un), i;
	char buf[64], kbuf[160];
	const char *m = read_method(w, buf, sizeof(buf));

	fprintf(f,
	        "# layerprof report --counters: %u counters, %u threads, %zu functions, %" PRIu64
	        " counter records, %" PRIu64 " events lost\n",
	        res->n, res->nthreads, res->nfns, st->records, w->lost);
	fprintf(f, "# counters:");
	for (i = 0; i < res->n; i++)
		fprintf(f, "%s %s", i ? "," : "", res->names[i]);
	fputc('\n', f);
	for (i = 0; i < nun; i++)
		fprintf(f, "# unavailable: %s: %s\n", un[i].name, un[i].reason[0] ? un[i].reason : "(no reason given)");
	if (m)
		fprintf(f, "# read at function entry and exit: %s\n", read_method_text(m));
	if ((m = count_scope(w, buf, sizeof(buf))) && !strcmp(m, "user"))
		fprintf(f, "# counted in user space only (perf_event_paranoid): the kernel's part is left out\n");
	if (st->scaled_records)
		fprintf(f, "# scaled values in %" PRIu64 " of the records: a counter was multiplexed\n",
		        st->scaled_records);
	fprintf(f, "# functions sorted by");
	for (i = 0; i < (uint32_t)o->order.nkeys; i++)
		fprintf(f, "%s %s", i ? "," : "", key_text(res, &o->order.keys[i], kbuf, sizeof(kbuf)));
	fputc('\n', f);
	text_program(f, res);
	text_cpus(f, res);
	text_threads(f, res);
	text_functions(f, o, res);
	text_limits(f, w, st);
}

/* ------------------------------------------------------------ JSON */

static void json_values(struct json *j, const char *key, const struct ctrstats_result *res, const uint64_t *v)
{
	json_object_begin(j, key);
	for (uint32_t i = 0; i < res->n; i++)
		json_u64(j, res->names[i], v[i]);
	json_object_end(j);
}

/* The metrics of v by name; null where an input is 0. */
static void json_derived(struct json *j, const char *key, const struct ctrstats_result *res, const uint64_t *v)
{
	json_object_begin(j, key);
	for (uint32_t i = 0; i < res->nmetrics; i++) {
		double x;

		if (ctrstats_metric_value(&res->metrics[i], v, &x))
			json_f64(j, res->metrics[i].name, x);
		else
			json_null(j, res->metrics[i].name);
	}
	json_object_end(j);
}

/* "values", "scaled", the times when known (with scale: and the scale
 * factors), "derived".  A CPU's times say where the program ran, not how
 * much a counter was multiplexed: no scale factors. */
static void json_valueset(struct json *j, const struct ctrstats_result *res, const struct ctrstats_values *val,
                          bool scale)
{
	json_values(j, "values", res, val->v);
	json_bool(j, "scaled", (val->flags & LP_CTR_SCALED) != 0);
	if (val->has_times) {
		json_values(j, "enabled_ns", res, val->enabled);
		json_values(j, "running_ns", res, val->running);
	}
	if (val->has_times && scale) {
		json_object_begin(j, "scale");
		for (uint32_t i = 0; i < res->n; i++) {
			double x = 1.0;

			ctrstats_scale(val, i, &x);
			json_f64(j, res->names[i], x);
		}
		json_object_end(j);
	}
	json_derived(j, "derived", res, val->v);
}

void ctrreport_json_members(struct json *j, struct walk *w, const struct ctrstats *st,
                            const struct ctrstats_result *res, bool per_thread)
{
	struct unavailable un[CTRREPORT_UNAVAILABLE_MAX];
	uint32_t nun = unavailable_parse(w, un), i;
	char buf[64];
	const char *m = read_method(w, buf, sizeof(buf));
	size_t r;

	json_array_begin(j, "counters");
	for (i = 0; i < res->n; i++)
		json_str(j, NULL, res->names[i]);
	json_array_end(j);
	json_array_begin(j, "unavailable");
	for (i = 0; i < nun; i++) {
		json_object_begin(j, NULL);
		json_str(j, "name", un[i].name);
		json_str(j, "reason", un[i].reason);
		json_object_end(j);
	}
	json_array_end(j);
	if (m)
		json_str(j, "read", m);
	else
		json_null(j, "read");
	if ((m = count_scope(w, buf, sizeof(buf))))
		json_str(j, "scope", m);
	else
		json_null(j, "scope");
	json_u64(j, "counter_records", st->records);
	json_u64(j, "scaled_records", st->scaled_records);
	json_array_begin(j, "metrics");
	for (i = 0; i < res->nmetrics; i++) {
		const struct ctrstats_metric *mt = &res->metrics[i];

		json_object_begin(j, NULL);
		json_str(j, "name", mt->name);
		json_str(j, "kind", mt->kind == CTRSTATS_IPC ? "ipc" : mt->kind == CTRSTATS_MPKI ? "mpki" : "ratio");
		json_str(j, "numerator", res->names[mt->num]);
		json_str(j, "denominator", res->names[mt->den]);
		json_object_end(j);
	}
	json_array_end(j);
	if (res->has_program) {
		json_object_begin(j, "program");
		json_str(j, "source", res->from_process ? "process" : "threads");
		json_valueset(j, res, &res->program, true);
		json_object_end(j);
	} else {
		json_null(j, "program");
	}
	json_array_begin(j, "cpus");
	for (i = 0; i < res->ncpus; i++) {
		json_object_begin(j, NULL);
		json_u64(j, "cpu", res->cpus[i].cpu);
		json_valueset(j, res, &res->cpus[i].val, false);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "threads");
	for (i = 0; i < res->nthreads; i++) {
		const struct ctrstats_thread_row *t = &res->threads[i];

		json_object_begin(j, NULL);
		json_u64(j, "pid", t->s->pid);
		json_u64(j, "tid", t->s->tid);
		json_u64(j, "image", t->s->image);
		json_str(j, "comm", t->s->comm);
		json_bool(j, "has_begin", t->has_begin);
		json_bool(j, "has_end", t->has_end);
		json_u64(j, "records", t->records);
		json_valueset(j, res, &t->val, true);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "functions");
	for (r = 0; r < res->nfns; r++) {
		const struct ctrstats_fn_row *fn = &res->fns[r];

		json_object_begin(j, NULL);
		json_str(j, "name", fn->name);
		json_u64(j, "calls", fn->calls);
		json_u64(j, "ended", fn->ended);
		json_u64(j, "unwound", fn->unwound);
		if (per_thread) {
			json_u64(j, "tid", fn->tid);
			json_u64(j, "pid", fn->pid);
		}
		if (fn->file) {
			json_str(j, "file", fn->file);
			json_u64(j, "line", fn->line);
		}
		json_values(j, "inclusive", res, fn->incl);
		json_values(j, "self", res, fn->self);
		json_derived(j, "derived", res, fn->incl);
		json_derived(j, "self_derived", res, fn->self);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_begin(j, "left_out");
	json_u64(j, "unmatched_exits", st->unmatched_exits);
	json_u64(j, "unwound_calls", st->unwound);
	json_u64(j, "open_at_end", st->open_at_end);
	json_u64(j, "deep_calls", st->deep_dropped);
	json_u64(j, "function_calls_over_cap", st->fns_dropped);
	json_u64(j, "thread_records_over_cap", st->threads_dropped);
	json_u64(j, "cpu_records_over_cap", st->cpus_dropped);
	json_u64(j, "malformed_records", w->counter_malformed);
	json_object_end(j);
}

static void write_json(FILE *f, struct walk *w, const struct ctrreport_opts *o, const struct ctrstats *st,
                       const struct ctrstats_result *res)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir ? w->dir : "");
	json_u64(&j, "lost_events", w->lost);
	json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
	ctrreport_json_members(&j, w, st, res, o->per_thread);
	json_object_end(&j);
	json_finish(&j);
}

/* ------------------------------------------------------------ XML */

static void attr_metric(FILE *f, const char *name, const struct ctrstats_metric *m, const uint64_t *v)
{
	double x;

	if (ctrstats_metric_value(m, v, &x))
		fprintf(f, " %s=\"%.6g\"", name, x);
}

/* <value> per counter and <derived> per metric with a value; scale as
 * json_valueset's. */
static void xml_valueset(FILE *f, const struct ctrstats_result *res, const struct ctrstats_values *val, bool scale,
                         const char *indent)
{
	uint32_t i;

	for (i = 0; i < res->n; i++) {
		double x;

		fprintf(f, "%s<value", indent);
		xml_attr_str(f, "counter", res->names[i]);
		xml_attr_u64(f, "count", val->v[i]);
		if (val->has_times) {
			xml_attr_u64(f, "enabled-ns", val->enabled[i]);
			xml_attr_u64(f, "running-ns", val->running[i]);
		}
		if (scale && ctrstats_scale(val, i, &x))
			fprintf(f, " scale=\"%.6g\"", x);
		fputs("/>\n", f);
	}
	for (i = 0; i < res->nmetrics; i++) {
		double x;

		if (!ctrstats_metric_value(&res->metrics[i], val->v, &x))
			continue;
		fprintf(f, "%s<derived", indent);
		xml_attr_str(f, "metric", res->metrics[i].name);
		fprintf(f, " value=\"%.6g\"/>\n", x);
	}
}

static void xml_header(FILE *f, struct walk *w, const struct ctrstats *st, const struct ctrstats_result *res)
{
	struct unavailable un[CTRREPORT_UNAVAILABLE_MAX];
	uint32_t nun = unavailable_parse(w, un), i;
	char buf[64];
	const char *m = read_method(w, buf, sizeof(buf));

	fputs("  <counters", f);
	if (m)
		xml_attr_str(f, "read", m);
	if ((m = count_scope(w, buf, sizeof(buf))))
		xml_attr_str(f, "scope", m);
	xml_attr_u64(f, "records", st->records);
	xml_attr_u64(f, "scaled-records", st->scaled_records);
	xml_attr_u64(f, "unmatched-exits", st->unmatched_exits);
	xml_attr_u64(f, "unwound-calls", st->unwound);
	xml_attr_u64(f, "open-at-end", st->open_at_end);
	xml_attr_u64(f, "deep-calls", st->deep_dropped);
	xml_attr_u64(f, "function-calls-over-cap", st->fns_dropped);
	xml_attr_u64(f, "thread-records-over-cap", st->threads_dropped);
	xml_attr_u64(f, "cpu-records-over-cap", st->cpus_dropped);
	xml_attr_u64(f, "malformed-records", w->counter_malformed);
	fputs(">\n", f);
	for (i = 0; i < res->n; i++) {
		fputs("    <counter", f);
		xml_attr_u64(f, "index", i);
		xml_attr_str(f, "name", res->names[i]);
		fputs("/>\n", f);
	}
	for (i = 0; i < nun; i++) {
		fputs("    <unavailable", f);
		xml_attr_str(f, "name", un[i].name);
		xml_attr_str(f, "reason", un[i].reason);
		fputs("/>\n", f);
	}
	for (i = 0; i < res->nmetrics; i++) {
		const struct ctrstats_metric *mt = &res->metrics[i];

		fputs("    <metric", f);
		xml_attr_str(f, "name", mt->name);
		xml_attr_str(f, "kind",
		             mt->kind == CTRSTATS_IPC    ? "ipc"
		             : mt->kind == CTRSTATS_MPKI ? "mpki"
		                                         : "ratio");
		xml_attr_str(f, "numerator", res->names[mt->num]);
		xml_attr_str(f, "denominator", res->names[mt->den]);
		fputs("/>\n", f);
	}
}

static int write_xml(FILE *f, struct walk *w, const struct ctrreport_opts *o, const struct ctrstats *st,
                     const struct ctrstats_result *res)
{
	uint32_t i;
	size_t r;

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<layerprof-report format-version=\"%d\" generator=\"layerprof\">\n", EXPORT_XML_FORMAT_VERSION);
	export_xml_trace(f, w);
	xml_header(f, w, st, res);
	if (res->has_program) {
		fputs("    <program", f);
		xml_attr_str(f, "source", res->from_process ? "process" : "threads");
		xml_attr_bool(f, "scaled", (res->program.flags & LP_CTR_SCALED) != 0);
		fputs(">\n", f);
		xml_valueset(f, res, &res->program, true, "      ");
		fputs("    </program>\n", f);
	}
	fputs("    <cpus>\n", f);
	for (i = 0; i < res->ncpus; i++) {
		fputs("      <cpu", f);
		xml_attr_u64(f, "cpu", res->cpus[i].cpu);
		xml_attr_bool(f, "scaled", (res->cpus[i].val.flags & LP_CTR_SCALED) != 0);
		fputs(">\n", f);
		xml_valueset(f, res, &res->cpus[i].val, false, "        ");
		fputs("      </cpu>\n", f);
	}
	fputs("    </cpus>\n    <threads>\n", f);
	for (i = 0; i < res->nthreads; i++) {
		const struct ctrstats_thread_row *t = &res->threads[i];

		fputs("      <thread", f);
		xml_attr_u64(f, "pid", t->s->pid);
		xml_attr_u64(f, "tid", t->s->tid);
		xml_attr_u64(f, "image", t->s->image);
		xml_attr_str(f, "comm", t->s->comm);
		xml_attr_bool(f, "has-begin", t->has_begin);
		xml_attr_bool(f, "has-end", t->has_end);
		xml_attr_u64(f, "records", t->records);
		xml_attr_bool(f, "scaled", (t->val.flags & LP_CTR_SCALED) != 0);
		fputs(">\n", f);
		xml_valueset(f, res, &t->val, true, "        ");
		fputs("      </thread>\n", f);
	}
	fputs("    </threads>\n    <functions>\n", f);
	for (r = 0; r < res->nfns; r++) {
		const struct ctrstats_fn_row *fn = &res->fns[r];

		fputs("      <function", f);
		xml_attr_str(f, "name", fn->name);
		xml_attr_u64(f, "calls", fn->calls);
		xml_attr_u64(f, "ended", fn->ended);
		xml_attr_u64(f, "unwound", fn->unwound);
		if (o->per_thread) {
			xml_attr_u64(f, "tid", fn->tid);
			xml_attr_u64(f, "pid", fn->pid);
		}
		if (fn->file) {
			xml_attr_str(f, "file", fn->file);
			xml_attr_u64(f, "line", fn->line);
		}
		fputs(">\n", f);
		for (i = 0; i < res->n; i++) {
			fputs("        <value", f);
			xml_attr_str(f, "counter", res->names[i]);
			xml_attr_u64(f, "inclusive", fn->incl[i]);
			xml_attr_u64(f, "self", fn->self[i]);
			fputs("/>\n", f);
		}
		for (i = 0; i < res->nmetrics; i++) {
			double x;

			if (!ctrstats_metric_value(&res->metrics[i], fn->incl, &x) &&
			    !ctrstats_metric_value(&res->metrics[i], fn->self, &x))
				continue;
			fputs("        <derived", f);
			xml_attr_str(f, "metric", res->metrics[i].name);
			attr_metric(f, "inclusive", &res->metrics[i], fn->incl);
			attr_metric(f, "self", &res->metrics[i], fn->self);
			fputs("/>\n", f);
		}
		fputs("      </function>\n", f);
	}
	fputs("    </functions>\n  </counters>\n", f);
	export_xml_lost(f, w);
	fputs("</layerprof-report>\n", f);
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------------ the pass */

int ctrreport_write(struct walk *w, const struct ctrreport_opts *o, FILE *f, char *err, size_t errlen)
{
	struct ctrreport_opts opts = *o;
	struct walk_ops ops = { 0 };
	struct ctrstats st;
	struct ctrstats_result res;
	int r;

	ctrstats_init(&st, w, o->per_thread ? CTRSTATS_PER_THREAD : 0);
	ctrstats_walk_ops(&st, &ops);
	r = walk_run(w, &ops);
	if (r || st.oom) {
		r = r ? r : -ENOMEM;
		goto out;
	}
	if (!w->counter_events) {
		snprintf(err, errlen, "the trace has no counter values: record with --counters");
		r = -ENODATA;
		goto out;
	}
	r = ctrstats_collect(&st, &opts.order, &res, err, errlen);
	if (r)
		goto out;
	if (o->fmt == EXPORT_REPORT_JSON)
		write_json(f, w, &opts, &st, &res);
	else if (o->fmt == EXPORT_REPORT_XML)
		r = write_xml(f, w, &opts, &st, &res);
	else
		write_text(f, w, &opts, &st, &res);
	ctrstats_result_release(&res);
	if (!r && ferror(f))
		r = -EIO;
out:
	ctrstats_release(&st);
	return r;
}
