/* The report as XML (see export_xml.h and docs/report.xsd). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/escape.h"
#include "host/lib/export_xml.h"

static void attr_str(FILE *f, const char *name, const char *value)
{
	fprintf(f, " %s=\"", name);
	escape_xml(f, value);
	fputc('"', f);
}

static void attr_u64(FILE *f, const char *name, uint64_t value)
{
	fprintf(f, " %s=\"%" PRIu64 "\"", name, value);
}

static void attr_bool(FILE *f, const char *name, bool value)
{
	fprintf(f, " %s=\"%s\"", name, value ? "true" : "false");
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
			attr_str(f, "key", key);
			attr_str(f, "value", value);
			fputs("/>\n", f);
		}
		p += len + (nl ? 1 : 0);
	}
}

static void put_trace(FILE *f, const struct walk *w)
{
	fputs("  <trace", f);
	attr_str(f, "path", w->dir ? w->dir : "");
	attr_u64(f, "events", w->events);
	attr_u64(f, "lost-events", w->lost);
	attr_u64(f, "syscall-events", w->syscalls);
	attr_u64(f, "first-ns", w->first_ns);
	attr_u64(f, "last-ns", w->last_ns);
	attr_bool(f, "complete", w->r.state == READER_OK && w->r.seen_end);
	attr_bool(f, "filtered-at-record", w->filtered_at_record);
	if (w->r.state == READER_DAMAGED)
		attr_str(f, "damage", w->r.damage);
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

		fputs("    <thread", f);
		attr_u64(f, "pid", s->pid);
		attr_u64(f, "tid", s->tid);
		attr_u64(f, "image", s->image);
		attr_str(f, "comm", s->comm);
		attr_u64(f, "calls", s->calls);
		attr_u64(f, "syscalls", s->syscalls);
		attr_u64(f, "lost-events", s->lost);
		attr_u64(f, "first-ns", s->first_ns);
		attr_u64(f, "last-ns", s->last_ns);
		if (s->parent_pid)
			attr_u64(f, "parent-pid", s->parent_pid);
		attr_bool(f, "after-exec", s->after_exec);
		if (s->exited)
			attr_u64(f, "exit-status", s->status);
		attr_bool(f, "selected", s->selected);
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
	attr_bool(f, "per-thread", rd->flags & PROFILE_PER_THREAD);
	attr_str(f, "sort", reportdata_order_name(&rd->order, order, sizeof(order)));
	attr_u64(f, "functions", rd->rows.n);
	attr_u64(f, "calls", calls);
	fputs(">\n", f);
	for (i = 0; i < rd->rows.n; i++) {
		const struct profile_row *r = &rd->rows.row[i];

		fputs("    <function", f);
		attr_str(f, "name", r->name);
		attr_u64(f, "calls", r->calls);
		attr_u64(f, "total-ns", r->total_ns);
		attr_u64(f, "self-ns", r->self_ns);
		attr_u64(f, "avg-ns", profile_row_avg(r));
		attr_u64(f, "min-ns", r->min_ns == UINT64_MAX ? 0 : r->min_ns);
		attr_u64(f, "max-ns", r->max_ns);
		if (rd->flags & PROFILE_PER_THREAD) {
			attr_u64(f, "tid", r->tid);
			attr_u64(f, "pid", r->pid);
		}
		if (r->file) {
			attr_str(f, "file", r->file);
			attr_u64(f, "line", r->line);
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
	attr_u64(f, "pid", s->pid);
	attr_u64(f, "tid", s->tid);
	attr_u64(f, "image", s->image);
	attr_str(f, "comm", s->comm);
	attr_u64(f, "lost-events", s->lost);
	attr_u64(f, "nodes", t->n - 1);
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
		attr_u64(f, "id", id);
		if (depth)
			attr_u64(f, "parent", ids[depth - 1]);
		attr_u64(f, "depth", depth);
		attr_str(f, "name", calltree_node_name(rd->w, s, nd, false, name, sizeof(name)));
		if (CALLTREE_IS_SYSCALL(nd->addr)) {
			attr_bool(f, "syscall", true);
			attr_u64(f, "errors", nd->errors);
		}
		attr_u64(f, "calls", nd->calls);
		attr_u64(f, "total-ns", nd->total_ns);
		attr_u64(f, "self-ns", nd->self_ns);
		attr_u64(f, "min-ns", nd->min_ns == UINT64_MAX ? 0 : nd->min_ns);
		attr_u64(f, "max-ns", nd->max_ns);
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
	attr_u64(f, "calls", rd->st.calls);
	attr_u64(f, "errors", rd->st.errors);
	fputs(">\n", f);
	for (i = 0; i < rd->sys.nrows; i++) {
		const struct sysstats_row *r = &rd->sys.rows[i];

		fputs("    <syscall", f);
		attr_str(f, "name", r->name);
		attr_u64(f, "nr", r->nr);
		attr_str(f, "arch", sys_arch_name((enum sys_arch)r->arch));
		attr_u64(f, "calls", r->calls);
		attr_u64(f, "errors", r->errors);
		attr_u64(f, "unfinished", r->unfinished);
		attr_u64(f, "total-ns", r->total_ns);
		attr_u64(f, "avg-ns", r->timed ? r->total_ns / r->timed : 0);
		attr_u64(f, "min-ns", r->min_ns);
		attr_u64(f, "max-ns", r->max_ns);
		attr_u64(f, "p50-ns", r->p50_ns);
		attr_u64(f, "p99-ns", r->p99_ns);
		fputs("/>\n", f);
	}
	fputs("    <by-function>\n", f);
	for (i = 0; i < rd->sys.nfns; i++) {
		const struct sysstats_fn *fn = &rd->sys.fns[i];

		fputs("      <call", f);
		attr_str(f, "function", fn->name);
		attr_str(f, "syscall", fn->syscall);
		if (rd->flags & PROFILE_PER_THREAD)
			attr_u64(f, "tid", fn->tid);
		attr_u64(f, "calls", fn->calls);
		attr_u64(f, "errors", fn->errors);
		attr_u64(f, "total-ns", fn->total_ns);
		fputs("/>\n", f);
	}
	fputs("    </by-function>\n  </syscalls>\n", f);
}

static void put_lost(FILE *f, const struct walk *w)
{
	uint32_t i;

	fputs("  <lost-events", f);
	attr_u64(f, "total", w->lost);
	fputs(">\n", f);
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		if (!s->lost)
			continue;
		fputs("    <lost", f);
		attr_u64(f, "pid", s->pid);
		attr_u64(f, "tid", s->tid);
		attr_u64(f, "image", s->image);
		attr_u64(f, "count", s->lost);
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
	put_trace(f, w);
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
	put_lost(f, w);
	fputs("</layerprof-report>\n", f);
	if (r)
		return r;
	return ferror(f) ? -EIO : 0;
}
