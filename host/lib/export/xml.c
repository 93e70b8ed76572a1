/* The report as XML (see export/xml.h and docs/report.xsd). */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/export/xml.h"
#include "host/lib/util/escape.h"
#include "layerprof/format.h"

void xml_attr_str(FILE *f, const char *name, const char *value)
{
	fprintf(f, " %s=\"", name);
	escape_xml(f, value);
	fputc('"', f);
}

void xml_attr_u64(FILE *f, const char *name, uint64_t value)
{
	fprintf(f, " %s=\"%" PRIu64 "\"", name, value);
}

void xml_attr_bool(FILE *f, const char *name, bool value)
{
	fprintf(f, " %s=\"%s\"", name, value ? "true" : "false");
}

/* As report --format json writes a number that is not whole. */
void xml_attr_f64(FILE *f, const char *name, double value)
{
	if (isfinite(value))
		fprintf(f, " %s=\"%.6g\"", name, value);
	else
		fprintf(f, " %s=\"NaN\"", name);
}

void xml_attr_hex(FILE *f, const char *name, uint64_t value)
{
	fprintf(f, " %s=\"0x%" PRIx64 "\"", name, value);
}

/* The META chunk's key=value lines, one element each. */
static void put_meta(FILE *f, const struct walk *w)
{
	const char *p = w->meta;

	while (*p) {
		const char *nl = strchr(p, '\n'), *eq;
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char key[128], value[sizeof(w->meta)];

		eq = memchr(p, '=', len);
		if (eq && (size_t)(eq - p) < sizeof(key) && eq > p) {
			memcpy(key, p, (size_t)(eq - p));
			key[eq - p] = '\0';
			memcpy(value, eq + 1, len - (size_t)(eq - p) - 1);
			value[len - (size_t)(eq - p) - 1] = '\0';
			fputs("    <meta", f);
			xml_attr_str(f, "key", key);
			xml_attr_str(f, "value", value);
			fputs("/>\n", f);
		}
		p += len + (nl ? 1 : 0);
	}
}

void export_xml_trace(FILE *f, const struct walk *w)
{
	fputs("  <trace", f);
	xml_attr_str(f, "path", w->dir ? w->dir : "");
	xml_attr_u64(f, "events", w->events);
	xml_attr_u64(f, "lost-events", w->lost);
	xml_attr_u64(f, "syscall-events", w->syscalls);
	if (w->kernel_events)
		xml_attr_u64(f, "kernel-events", w->kernel_events);
	xml_attr_u64(f, "first-ns", w->first_ns);
	xml_attr_u64(f, "last-ns", w->last_ns);
	xml_attr_bool(f, "complete", w->r.state == READER_OK && w->r.seen_end);
	xml_attr_bool(f, "filtered-at-record", w->filtered_at_record);
	if (w->r.state == READER_DAMAGED)
		xml_attr_str(f, "damage", w->r.damage);
	fputs(">\n", f);
	put_meta(f, w);
	fputs("  </trace>\n", f);
}

static void put_threads(FILE *f, const struct walk *w)
{
	uint32_t i;

	fputs("  <threads>\n", f);
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		if (s->other)
			continue; /* another process's (--kernel-system), not the program's */
		fputs("    <thread", f);
		xml_attr_u64(f, "pid", s->pid);
		xml_attr_u64(f, "tid", s->tid);
		xml_attr_u64(f, "image", s->image);
		xml_attr_str(f, "comm", s->comm);
		xml_attr_u64(f, "calls", s->calls);
		xml_attr_u64(f, "syscalls", s->syscalls);
		xml_attr_u64(f, "lost-events", s->lost);
		xml_attr_u64(f, "first-ns", s->first_ns);
		xml_attr_u64(f, "last-ns", s->last_ns);
		if (s->parent_pid)
			xml_attr_u64(f, "parent-pid", s->parent_pid);
		xml_attr_bool(f, "after-exec", s->after_exec);
		if (s->exited && s->status == LP_EXIT_STATUS_UNKNOWN)
			xml_attr_bool(f, "exit-status-unknown", true);
		else if (s->exited)
			xml_attr_u64(f, "exit-status", s->status);
		xml_attr_bool(f, "selected", s->selected);
		fputs("/>\n", f);
	}
	fputs("  </threads>\n", f);
}

static void put_profile(FILE *f, const struct reportdata *rd)
{
	char order[128];
	uint64_t calls = 0;
	size_t i;

	for (i = 0; i < rd->rows.n; i++)
		calls += rd->rows.row[i].calls;
	fputs("  <profile", f);
	xml_attr_bool(f, "per-thread", rd->flags & PROFILE_PER_THREAD);
	xml_attr_str(f, "sort", reportdata_order_name(&rd->order, order, sizeof(order)));
	xml_attr_u64(f, "functions", rd->rows.n);
	xml_attr_u64(f, "calls", calls);
	fputs(">\n", f);
	for (i = 0; i < rd->rows.n; i++) {
		const struct profile_row *r = &rd->rows.row[i];

		fputs("    <function", f);
		xml_attr_str(f, "name", r->name);
		xml_attr_u64(f, "calls", r->calls);
		xml_attr_u64(f, "total-ns", r->total_ns);
		xml_attr_u64(f, "self-ns", r->self_ns);
		xml_attr_u64(f, "avg-ns", profile_row_avg(r));
		xml_attr_u64(f, "min-ns", r->min_ns == UINT64_MAX ? 0 : r->min_ns);
		xml_attr_u64(f, "max-ns", r->max_ns);
		if (rd->flags & PROFILE_PER_THREAD) {
			xml_attr_u64(f, "tid", r->tid);
			xml_attr_u64(f, "pid", r->pid);
		}
		if (r->file) {
			xml_attr_str(f, "file", r->file);
			xml_attr_u64(f, "line", r->line);
		}
		fputs("/>\n", f);
	}
	fputs("  </profile>\n", f);
}

/* One thread's tree as a flat list in depth-first order: each node has an
 * id (its position, from 1) and the id of its parent (none at the top). */
static int put_tree(FILE *f, struct reportdata *rd, const struct walk_stream *s, const struct calltree_stream *t)
{
	struct calltree_iter it;
	uint32_t i, depth, id = 0, *ids = NULL, idcap = 0;
	char name[1024];
	int r = 0;

	fputs("    <call-tree", f);
	xml_attr_u64(f, "pid", s->pid);
	xml_attr_u64(f, "tid", s->tid);
	xml_attr_u64(f, "image", s->image);
	xml_attr_str(f, "comm", s->comm);
	xml_attr_u64(f, "lost-events", s->lost);
	xml_attr_u64(f, "nodes", t->n - 1);
	fputs(">\n", f);
	if (calltree_iter_init(&it, t))
		return -ENOMEM;
	while ((i = calltree_iter_next(&it, &depth))) {
		const struct calltree_node *nd = &t->nodes[i];

		if (depth >= idcap) {
			uint32_t cap = idcap ? 2 * idcap : 64;
			uint32_t *n = realloc(ids, cap * sizeof(*n));

			if (!n) {
				r = -ENOMEM;
				break;
			}
			ids = n;
			idcap = cap;
		}
		ids[depth] = ++id;
		fputs("      <node", f);
		xml_attr_u64(f, "id", id);
		if (depth)
			xml_attr_u64(f, "parent", ids[depth - 1]);
		xml_attr_u64(f, "depth", depth);
		xml_attr_str(f, "name", calltree_node_name(rd->w, s, nd, false, name, sizeof(name)));
		if (CALLTREE_IS_SYSCALL(nd->addr)) {
			xml_attr_bool(f, "syscall", true);
			xml_attr_u64(f, "errors", nd->errors);
		}
		if (CALLTREE_IS_KERNEL(nd->addr))
			xml_attr_bool(f, "kernel", true);
		xml_attr_u64(f, "calls", nd->calls);
		xml_attr_u64(f, "total-ns", nd->total_ns);
		xml_attr_u64(f, "self-ns", nd->self_ns);
		xml_attr_u64(f, "min-ns", nd->min_ns == UINT64_MAX ? 0 : nd->min_ns);
		xml_attr_u64(f, "max-ns", nd->max_ns);
		fputs("/>\n", f);
	}
	if (it.oom)
		r = -ENOMEM;
	calltree_iter_release(&it);
	free(ids);
	fputs("    </call-tree>\n", f);
	return r;
}

static void put_syscalls(FILE *f, const struct reportdata *rd)
{
	size_t i;

	fputs("  <syscalls", f);
	xml_attr_u64(f, "calls", rd->st.calls);
	xml_attr_u64(f, "errors", rd->st.errors);
	fputs(">\n", f);
	for (i = 0; i < rd->sys.nrows; i++) {
		const struct sysstats_row *r = &rd->sys.rows[i];

		fputs("    <syscall", f);
		xml_attr_str(f, "name", r->name);
		xml_attr_u64(f, "nr", r->nr);
		xml_attr_str(f, "arch", sys_arch_name((enum sys_arch)r->arch));
		xml_attr_u64(f, "calls", r->calls);
		xml_attr_u64(f, "errors", r->errors);
		xml_attr_u64(f, "unfinished", r->unfinished);
		xml_attr_u64(f, "total-ns", r->total_ns);
		xml_attr_u64(f, "avg-ns", r->timed ? r->total_ns / r->timed : 0);
		xml_attr_u64(f, "min-ns", r->min_ns);
		xml_attr_u64(f, "max-ns", r->max_ns);
		xml_attr_u64(f, "p50-ns", r->p50_ns);
		xml_attr_u64(f, "p99-ns", r->p99_ns);
		fputs("/>\n", f);
	}
	fputs("    <by-function>\n", f);
	for (i = 0; i < rd->sys.nfns; i++) {
		const struct sysstats_fn *fn = &rd->sys.fns[i];

		fputs("      <call", f);
		xml_attr_str(f, "function", fn->name);
		xml_attr_str(f, "syscall", fn->syscall);
		if (rd->flags & PROFILE_PER_THREAD)
			xml_attr_u64(f, "tid", fn->tid);
		xml_attr_u64(f, "calls", fn->calls);
		xml_attr_u64(f, "errors", fn->errors);
		xml_attr_u64(f, "total-ns", fn->total_ns);
		fputs("/>\n", f);
	}
	fputs("    </by-function>\n  </syscalls>\n", f);
}

/* ------------------------------------------------------------ the kernel layer */

/* A klayer_parts as report --layers --format json has it, "-" for "_"
 * and the off-CPU states as off-cpu-R-ns ... off-cpu-other-ns. */
static void put_parts(FILE *f, uint64_t total, const struct klayer_parts *p)
{
	xml_attr_u64(f, "total-ns", total);
	xml_attr_u64(f, "user-ns", p->ns[KL_USER]);
	xml_attr_u64(f, "syscall-ns", p->ns[KL_SYSCALL]);
	xml_attr_u64(f, "off-cpu-ns", klayer_off_ns(p));
	xml_attr_u64(f, "off-cpu-R-ns", p->ns[KL_OFF_R]);
	xml_attr_u64(f, "off-cpu-S-ns", p->ns[KL_OFF_S]);
	xml_attr_u64(f, "off-cpu-D-ns", p->ns[KL_OFF_D]);
	xml_attr_u64(f, "off-cpu-other-ns", p->ns[KL_OFF_OTHER]);
	xml_attr_u64(f, "irq-ns", p->ns[KL_IRQ]);
	xml_attr_u64(f, "softirq-ns", p->ns[KL_SOFTIRQ]);
	xml_attr_u64(f, "page-faults", p->faults);
	xml_attr_u64(f, "context-switches", p->switches_vol + p->switches_invol);
	xml_attr_u64(f, "voluntary-switches", p->switches_vol);
	xml_attr_u64(f, "involuntary-switches", p->switches_invol);
	xml_attr_u64(f, "irqs", p->irqs);
	xml_attr_u64(f, "softirqs", p->softirqs);
	xml_attr_u64(f, "syscalls", p->syscalls);
}

static uint64_t parts_total(const struct klayer_parts *p)
{
	uint64_t t = 0;

	for (int m = 0; m < KL_MODES; m++)
		t += p->ns[m];
	return t;
}

static void put_layers(FILE *f, const struct reportdata *rd)
{
	const struct klayer_result *r = &rd->layers;
	size_t i;

	fputs("  <layers", f);
	xml_attr_bool(f, "has-kernel", rd->has_kernel);
	xml_attr_bool(f, "has-syscalls", rd->w->syscalls > 0);
	xml_attr_u64(f, "kernel-events", r->kernel_events);
	xml_attr_u64(f, "undecodable-kernel-events", r->undecodable);
	fputs(">\n", f);
	for (i = 0; i < r->nfuncs; i++) {
		const struct klayer_func *fn = &r->funcs[i];

		fputs("    <function", f);
		xml_attr_str(f, "name", fn->name);
		xml_attr_u64(f, "calls", fn->calls);
		put_parts(f, fn->total_ns, &fn->incl);
		fputs(">\n      <self", f);
		put_parts(f, parts_total(&fn->self), &fn->self);
		fputs("/>\n    </function>\n", f);
	}
	for (i = 0; i < r->nthreads; i++) {
		const struct klayer_thread *t = &r->threads[i];

		fputs("    <thread", f);
		xml_attr_u64(f, "pid", t->pid);
		xml_attr_u64(f, "tid", t->tid);
		xml_attr_str(f, "comm", t->comm);
		put_parts(f, t->last_ns > t->first_ns ? t->last_ns - t->first_ns : 0, &t->parts);
		fputs("/>\n", f);
	}
	fputs("  </layers>\n", f);
}

static void put_keyrows(FILE *f, const char *elem, const char *what, const struct klayer_keyrow *rows, size_t n)
{
	fprintf(f, "    <%s>\n", elem);
	for (size_t i = 0; i < n; i++) {
		fputs("      <count", f);
		xml_attr_str(f, "event", rows[i].event);
		xml_attr_str(f, what, rows[i].what);
		xml_attr_u64(f, "count", rows[i].count);
		fputs("/>\n", f);
	}
	fprintf(f, "    </%s>\n", elem);
}

static void put_kernel(FILE *f, const struct reportdata *rd)
{
	const struct klayer_result *r = &rd->layers;
	char st[2] = "?";
	size_t i;

	fputs("  <kernel", f);
	xml_attr_u64(f, "kernel-events", r->kernel_events);
	xml_attr_u64(f, "undecodable-kernel-events", r->undecodable);
	xml_attr_u64(f, "context-switches", r->switches);
	xml_attr_u64(f, "page-faults", r->faults);
	xml_attr_u64(f, "wakeups-given", r->wakeups);
	fputs(">\n    <events>\n", f);
	for (i = 0; i < r->nevents; i++) {
		fputs("      <event", f);
		xml_attr_str(f, "name", r->events[i].name);
		xml_attr_u64(f, "count", r->events[i].count);
		fputs("/>\n", f);
	}
	fputs("    </events>\n", f);
	put_keyrows(f, "by-thread", "tid", r->by_thread, r->nby_thread);
	put_keyrows(f, "by-function", "function", r->by_func, r->nby_func);
	put_keyrows(f, "by-syscall", "syscall", r->by_syscall, r->nby_syscall);
	fputs("    <off-cpu>\n", f);
	for (i = 0; i < r->nwaits; i++) {
		const struct klayer_wait *wt = &r->waits[i];

		st[0] = wt->state;
		fputs("      <wait", f);
		xml_attr_str(f, "syscall", wt->syscall);
		xml_attr_str(f, "state", st);
		xml_attr_u64(f, "count", wt->count);
		xml_attr_u64(f, "total-ns", wt->total_ns);
		xml_attr_u64(f, "max-ns", wt->max_ns);
		xml_attr_u64(f, "unknown-wakers", wt->unknown_wakers);
		fputs(wt->nwakers ? ">\n" : "/>\n", f);
		for (uint32_t k = 0; k < wt->nwakers; k++) {
			fputs("        <waker", f);
			xml_attr_str(f, "who", wt->wakers[k].who);
			xml_attr_u64(f, "count", wt->wakers[k].count);
			fputs("/>\n", f);
		}
		if (wt->nwakers)
			fputs("      </wait>\n", f);
	}
	fputs("    </off-cpu>\n    <block>\n", f);
	for (i = 0; i < r->nblocks; i++) {
		fputs("      <requests", f);
		xml_attr_str(f, "syscall", r->blocks[i].syscall);
		xml_attr_u64(f, "issued", r->blocks[i].issued);
		xml_attr_u64(f, "completed", r->blocks[i].completed);
		xml_attr_u64(f, "total-ns", r->blocks[i].total_ns);
		xml_attr_u64(f, "max-ns", r->blocks[i].max_ns);
		fputs("/>\n", f);
	}
	fputs("    </block>\n  </kernel>\n", f);
}

void export_xml_lost(FILE *f, const struct walk *w)
{
	uint32_t i;

	fputs("  <lost-events", f);
	xml_attr_u64(f, "total", w->lost);
	fputs(">\n", f);
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		if (!s->lost)
			continue;
		fputs("    <lost", f);
		xml_attr_u64(f, "pid", s->pid);
		xml_attr_u64(f, "tid", s->tid);
		xml_attr_u64(f, "image", s->image);
		xml_attr_u64(f, "count", s->lost);
		fputs("/>\n", f);
	}
	fputs("  </lost-events>\n", f);
}

int export_xml(struct reportdata *rd, FILE *f)
{
	struct walk *w = rd->w;
	uint32_t i;
	int r = 0;

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<layerprof-report format-version=\"%d\" generator=\"layerprof\">\n", EXPORT_XML_FORMAT_VERSION);
	export_xml_trace(f, w);
	put_threads(f, w);
	put_profile(f, rd);
	fputs("  <call-trees>\n", f);
	for (i = 0; i < w->nstreams && !r; i++) {
		const struct calltree_stream *t = calltree_stream(&rd->ct, w->streams[i]->index);

		if (t)
			r = put_tree(f, rd, w->streams[i], t);
	}
	fputs("  </call-trees>\n", f);
	if (w->syscalls)
		put_syscalls(f, rd);
	if (rd->has_layers)
		put_layers(f, rd);
	if (rd->has_kernel)
		put_kernel(f, rd);
	export_xml_lost(f, w);
	fputs("</layerprof-report>\n", f);
	if (r)
		return r;
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------------ the heap */

static void put_counts(FILE *f, const struct heap *h, const struct heap_counts *c)
{
	struct heap_growth g;

	heap_growth(h, c, &g);
	xml_attr_u64(f, "live-objects", c->live_objects);
	xml_attr_u64(f, "live-bytes", c->live_bytes);
	xml_attr_u64(f, "peak-bytes", c->peak_bytes);
	xml_attr_u64(f, "peak-objects", c->peak_objects);
	xml_attr_u64(f, "peak-ns", c->peak_ns);
	xml_attr_u64(f, "at-peak-objects", c->at_peak_objects);
	xml_attr_u64(f, "at-peak-bytes", c->at_peak_bytes);
	xml_attr_u64(f, "allocs", c->allocs);
	xml_attr_u64(f, "frees", c->frees);
	xml_attr_u64(f, "failed", c->failed);
	xml_attr_u64(f, "bytes-allocated", c->bytes_allocated);
	xml_attr_u64(f, "bytes-freed", c->bytes_freed);
	xml_attr_u64(f, "folded", c->folded);
	xml_attr_u64(f, "folded-bytes", c->folded_bytes);
	xml_attr_u64(f, "listed", c->listed);
	xml_attr_u64(f, "listed-bytes", c->listed_bytes);
	xml_attr_u64(f, "unfreed-objects", c->unfreed_objects);
	xml_attr_u64(f, "unfreed-bytes", c->unfreed_bytes);
	xml_attr_bool(f, "growing", g.growing);
	xml_attr_f64(f, "growth-bytes-per-s", g.samples >= HEAP_GROWTH_MIN_SAMPLES ? g.rate_bps : 0);
	xml_attr_f64(f, "growth-confidence", g.confidence);
	xml_attr_f64(f, "growth-p", g.p_value);
	xml_attr_u64(f, "growth-samples", g.samples);
}

static void put_site_ref(FILE *f, const struct heap *h, uint32_t site)
{
	const struct heap_site *s = &h->sites[site];

	xml_attr_str(f, "function", s->function);
	xml_attr_str(f, "call-site", s->key);
	if (s->file)
		xml_attr_str(f, "file", s->file);
	xml_attr_u64(f, "line", s->line);
}

static void put_stack(FILE *f, struct walk *w, const struct heap *h, uint32_t stack, const char *indent)
{
	const struct heap_stack *s = stack < h->nstacks ? &h->stacks[stack] : NULL;
	struct heapview_frame fr;
	uint32_t i;

	fprintf(f, "%s<stack>\n", indent);
	for (i = 0; s && i < s->n; i++) {
		heapview_frame(w, s->image, s->ips[i], &fr);
		fprintf(f, "%s  <frame", indent);
		xml_attr_hex(f, "address", fr.addr);
		xml_attr_str(f, "name", fr.name);
		if (fr.function)
			xml_attr_str(f, "function", fr.function);
		if (fr.file)
			xml_attr_str(f, "file", fr.file);
		xml_attr_u64(f, "line", fr.line);
		fputs("/>\n", f);
	}
	fprintf(f, "%s</stack>\n", indent);
}

static void put_heap_totals(FILE *f, struct walk *w, const struct heap *h, const struct heapfeed *feed)
{
	char name[64];
	unsigned k;
	char *p;

	fputs("    <totals", f);
	xml_attr_u64(f, "operations", h->ops);
	xml_attr_u64(f, "live-objects", h->live_objects);
	xml_attr_u64(f, "live-bytes", h->live_bytes);
	xml_attr_u64(f, "peak-bytes", h->peak_bytes);
	xml_attr_u64(f, "peak-objects", h->peak_objects);
	xml_attr_u64(f, "peak-ns", h->peak_ns);
	xml_attr_u64(f, "allocs", h->allocs);
	xml_attr_u64(f, "frees", h->frees);
	xml_attr_u64(f, "failed", h->failed);
	xml_attr_u64(f, "bytes-allocated", h->bytes_allocated);
	xml_attr_u64(f, "bytes-freed", h->bytes_freed);
	xml_attr_u64(f, "folded", h->folded);
	xml_attr_u64(f, "folded-bytes", h->folded_bytes);
	xml_attr_u64(f, "fold-records", h->folds);
	xml_attr_u64(f, "unfreed-objects", h->unfreed_objects);
	xml_attr_u64(f, "unfreed-bytes", h->unfreed_bytes);
	xml_attr_u64(f, "illegal", heapview_illegal_total(h));
	for (k = 0; k < HEAP_ILLEGAL_KINDS; k++) {
		snprintf(name, sizeof(name), "%s", heap_illegal_name((enum heap_illegal_kind)k));
		for (p = name; *p; p++)
			if (*p == '_')
				*p = '-';
		xml_attr_u64(f, name, h->illegal_counts[k]);
	}
	xml_attr_u64(f, "illegal-not-shown", h->illegal_dropped);
	xml_attr_u64(f, "overlaps", h->overlap_count);
	xml_attr_u64(f, "illegal-after-loss", h->illegal_after_loss);
	xml_attr_u64(f, "overlaps-after-loss", h->overlaps_after_loss);
	xml_attr_u64(f, "null-releases", h->null_releases);
	xml_attr_u64(f, "kept-releases", h->kept_releases);
	xml_attr_u64(f, "dropped-at-exec", h->dropped_at_exec);
	xml_attr_bool(f, "partial", h->partial);
	xml_attr_u64(f, "released-unknown", h->released_unknown);
	xml_attr_u64(f, "reallocs-unknown", h->reallocs_unknown);
	xml_attr_u64(f, "listings", h->listings);
	xml_attr_u64(f, "listings-incomplete", h->listings_incomplete);
	xml_attr_u64(f, "listed-objects", h->listed_objects);
	xml_attr_u64(f, "listed-bytes", h->listed_bytes);
	xml_attr_u64(f, "listed-dropped", h->listed_dropped);
	xml_attr_u64(f, "released-unseen", h->released_unseen);
	xml_attr_u64(f, "malformed-events", w->mem_malformed);
	xml_attr_u64(f, "unknown-stacks", w->mem_unknown_stacks);
	xml_attr_u64(f, "dropped-stacks", w->mem_stacks_dropped);
	xml_attr_u64(f, "forgotten-stacks", w->mem_stacks_forgotten);
	xml_attr_u64(f, "late-events", feed ? feed->late : 0);
	xml_attr_bool(f, "out-of-memory", h->oom);
	xml_attr_u64(f, "sample-interval-ns", h->step_ns);
	fputs("/>\n", f);
}

static void put_heap_sites(FILE *f, struct walk *w, const struct heap *h, bool at_peak)
{
	uint32_t *idx, n, i;

	idx = heapview_sorted_sites(h, at_peak, &n);
	fputs("    <sites>\n", f);
	for (i = 0; idx && i < n; i++) {
		fputs("      <site", f);
		put_site_ref(f, h, idx[i]);
		put_counts(f, h, &h->sites[idx[i]].c);
		fputs(">\n", f);
		put_stack(f, w, h, h->sites[idx[i]].stack, "        ");
		fputs("      </site>\n", f);
	}
	fputs("    </sites>\n", f);
	free(idx);
	idx = heapview_sorted_fns(h, at_peak, &n);
	fputs("    <functions>\n", f);
	for (i = 0; idx && i < n; i++) {
		fputs("      <function", f);
		xml_attr_str(f, "name", h->fns[idx[i]].name);
		put_counts(f, h, &h->fns[idx[i]].c);
		fputs("/>\n", f);
	}
	fputs("    </functions>\n", f);
	free(idx);
}

static void put_heap_illegal(FILE *f, struct walk *w, const struct heap *h)
{
	uint32_t i;

	fputs("    <illegal-releases>\n", f);
	for (i = 0; i < h->nillegal; i++) {
		const struct heap_illegal *il = &h->illegal[i];

		fputs("      <release", f);
		xml_attr_str(f, "kind", heap_illegal_name(il->kind));
		xml_attr_str(f, "operation", heap_op_name(il->op));
		put_site_ref(f, h, il->site);
		xml_attr_hex(f, "ptr", il->ptr);
		xml_attr_u64(f, "time-ns", il->ns);
		xml_attr_u64(f, "pid", il->pid);
		xml_attr_u64(f, "tid", il->tid);
		xml_attr_u64(f, "count", il->count);
		xml_attr_bool(f, "kept", il->kept);
		xml_attr_bool(f, "after-loss", il->after_loss);
		fputs(">\n", f);
		put_stack(f, w, h, il->stack, "        ");
		if (il->has_block) {
			fputs("        <block", f);
			xml_attr_hex(f, "ptr", il->block_ptr);
			xml_attr_u64(f, "size", il->block_size);
			xml_attr_str(f, "operation", heap_op_name(il->alloc_op));
			put_site_ref(f, h, il->alloc_site);
			xml_attr_u64(f, "time-ns", il->alloc_ns);
			fputs(">\n", f);
			put_stack(f, w, h, il->alloc_stack, "          ");
			fputs("        </block>\n", f);
		}
		if (il->has_free) {
			fputs("        <first-release", f);
			xml_attr_str(f, "operation", heap_op_name(il->free_op));
			put_site_ref(f, h, il->free_site);
			xml_attr_u64(f, "time-ns", il->free_ns);
			xml_attr_u64(f, "tid", il->free_tid);
			fputs(">\n", f);
			put_stack(f, w, h, il->free_stack, "          ");
			fputs("        </first-release>\n", f);
		}
		fputs("      </release>\n", f);
	}
	fputs("    </illegal-releases>\n", f);
}

static void put_heap_overlaps(FILE *f, struct walk *w, const struct heap *h)
{
	uint32_t i;

	fputs("    <overlaps>\n", f);
	for (i = 0; i < h->noverlaps; i++) {
		const struct heap_overlap *ov = &h->overlaps[i];

		fputs("      <overlap", f);
		xml_attr_str(f, "operation", heap_op_name(ov->op));
		xml_attr_hex(f, "ptr", ov->ptr);
		xml_attr_u64(f, "size", ov->size);
		put_site_ref(f, h, ov->site);
		xml_attr_u64(f, "time-ns", ov->ns);
		xml_attr_u64(f, "pid", ov->pid);
		xml_attr_u64(f, "tid", ov->tid);
		xml_attr_bool(f, "after-loss", ov->after_loss);
		fputs(">\n", f);
		put_stack(f, w, h, ov->stack, "        ");
		fputs("        <live-block", f);
		xml_attr_hex(f, "ptr", ov->old_ptr);
		xml_attr_u64(f, "size", ov->old_size);
		xml_attr_str(f, "operation", heap_op_name(ov->old_op));
		put_site_ref(f, h, ov->old_site);
		xml_attr_u64(f, "time-ns", ov->old_ns);
		fputs(">\n", f);
		put_stack(f, w, h, ov->old_stack, "          ");
		fputs("        </live-block>\n      </overlap>\n", f);
	}
	fputs("    </overlaps>\n", f);
}

static void put_heap_processes(FILE *f, const struct heap *h)
{
	uint32_t i;

	fputs("    <processes>\n", f);
	for (i = 0; i < h->nprocs; i++) {
		const struct heap_proc *p = &h->procs[i];

		if (!p->ops && !p->inherited_objects)
			continue;
		fputs("      <process", f);
		xml_attr_u64(f, "pid", p->pid);
		xml_attr_u64(f, "image", p->image);
		if (p->has_parent)
			xml_attr_u64(f, "parent-image", p->parent_image);
		xml_attr_u64(f, "operations", p->ops);
		xml_attr_u64(f, "live-objects", p->live_objects);
		xml_attr_u64(f, "live-bytes", p->live_bytes);
		xml_attr_u64(f, "peak-bytes", p->peak_bytes);
		xml_attr_u64(f, "peak-ns", p->peak_ns);
		xml_attr_u64(f, "inherited-objects", p->inherited_objects);
		xml_attr_u64(f, "inherited-bytes", p->inherited_bytes);
		xml_attr_bool(f, "exited", p->exited);
		if (p->exited && p->exit_status == LP_EXIT_STATUS_UNKNOWN)
			xml_attr_bool(f, "exit-status-unknown", true);
		else if (p->exited)
			xml_attr_u64(f, "exit-status", p->exit_status);
		xml_attr_bool(f, "execed", p->execed);
		xml_attr_u64(f, "unfreed-objects", p->unfreed_objects);
		xml_attr_u64(f, "unfreed-bytes", p->unfreed_bytes);
		fputs("/>\n", f);
	}
	fputs("    </processes>\n", f);
}

static void put_heap_growth(FILE *f, const struct heap *h)
{
	uint64_t t[HEAP_SERIES_LEN], v[HEAP_SERIES_LEN];
	uint32_t n = heapview_series(h, NULL, HEAP_SERIES_LEN, t, v), i;

	fputs("    <growth", f);
	xml_attr_u64(f, "interval-ns", h->step_ns);
	xml_attr_u64(f, "first-ns", h->first_ns);
	fputs(">\n", f);
	for (i = 0; i < n; i++) {
		fputs("      <sample", f);
		xml_attr_u64(f, "time-ns", t[i]);
		xml_attr_u64(f, "live-bytes", v[i]);
		fputs("/>\n", f);
	}
	fputs("    </growth>\n", f);
}

int export_xml_memory(struct walk *w, const struct heap *h, const struct heapfeed *feed, const struct heapview_opts *o,
                      FILE *f)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<layerprof-report format-version=\"%d\" generator=\"layerprof\">\n", EXPORT_XML_FORMAT_VERSION);
	export_xml_trace(f, w);
	fputs("  <memory", f);
	xml_attr_bool(f, "at-peak", o->at_peak);
	xml_attr_u64(f, "state-ns", o->at_peak ? h->peak_ns : o->state_ns ? o->state_ns : h->now_ns);
	xml_attr_u64(f, "origin-ns", o->origin_ns);
	xml_attr_bool(f, "heap-events", w->mem_ops != 0);
	fputs(">\n", f);
	put_heap_totals(f, w, h, feed);
	put_heap_sites(f, w, h, o->at_peak);
	put_heap_illegal(f, w, h);
	put_heap_overlaps(f, w, h);
	put_heap_processes(f, h);
	put_heap_growth(f, h);
	fputs("  </memory>\n", f);
	export_xml_lost(f, w);
	fputs("</layerprof-report>\n", f);
	return ferror(f) ? -EIO : 0;
}
