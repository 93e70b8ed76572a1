/* The JSON API of the web UI's server (see serve/api.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/serve/api.h"
#include "host/lib/util/json.h"
#include "layerprof/format.h"

#define QUERY_TEXT_MAX 256 /* a search string */

static struct json *json_new(FILE *out)
{
	struct json *j = malloc(sizeof(*j));

	if (j)
		json_init(j, out);
	return j;
}

/* ------------------------------------------------------------ summary */

static void put_threads(struct servemodel *m, struct json *j)
{
	const struct serve_info *in = &m->info;
	uint32_t i;

	json_array_begin(j, "threads");
	for (i = 0; i < in->nthreads; i++) {
		const struct serve_thread *s = &in->threads[i];
		const struct calltree_stream *t = calltree_stream(&m->tree, s->id);

		json_object_begin(j, NULL);
		json_u64(j, "id", s->id);
		json_u64(j, "pid", s->pid);
		json_u64(j, "tid", s->tid);
		json_u64(j, "image", s->image);
		json_str(j, "comm", s->comm);
		json_u64(j, "calls", s->calls);
		json_u64(j, "syscalls", s->syscalls);
		json_u64(j, "lost_events", s->lost);
		json_u64(j, "first_ns", s->first_ns - in->first_ns);
		json_u64(j, "last_ns", s->last_ns - in->first_ns);
		json_u64(j, "nodes", t ? t->n - 1 : 0);
		if (s->parent_pid)
			json_u64(j, "parent_pid", s->parent_pid);
		json_bool(j, "after_exec", s->after_exec);
		if (s->exited && s->status == LP_EXIT_STATUS_UNKNOWN)
			json_null(j, "exit_status"); /* ended, how is not known */
		else if (s->exited)
			json_u64(j, "exit_status", s->status);
		json_object_end(j);
	}
	json_array_end(j);
}

/* Processes: one entry per pid, in order of first appearance. */
static void put_processes(struct servemodel *m, struct json *j)
{
	const struct serve_info *in = &m->info;
	uint32_t i, k;

	json_array_begin(j, "processes");
	for (i = 0; i < in->nthreads; i++) {
		const struct serve_thread *s = &in->threads[i];
		uint32_t threads = 0, images = 0, status = 0;
		uint64_t calls = 0, lost = 0;
		bool seen = false, exited = false;

		for (k = 0; k < i && !seen; k++)
			seen = in->threads[k].pid == s->pid;
		if (seen)
			continue;
		for (k = i; k < in->nthreads; k++) {
			const struct serve_thread *o = &in->threads[k];
			bool new_image = true;
			uint32_t e;

			if (o->pid != s->pid)
				continue;
			threads++;
			calls += o->calls;
			lost += o->lost;
			for (e = i; e < k; e++)
				if (in->threads[e].pid == o->pid && in->threads[e].image == o->image)
					new_image = false;
			images += new_image;
			if (o->exited) {
				exited = true;
				status = o->status;
			}
		}
		json_object_begin(j, NULL);
		json_u64(j, "pid", s->pid);
		json_str(j, "comm", s->comm);
		json_u64(j, "threads", threads);
		json_u64(j, "images", images);
		json_u64(j, "calls", calls);
		json_u64(j, "lost_events", lost);
		if (s->parent_pid)
			json_u64(j, "parent_pid", s->parent_pid);
		if (exited && status == LP_EXIT_STATUS_UNKNOWN)
			json_null(j, "exit_status");
		else if (exited)
			json_u64(j, "exit_status", status);
		json_object_end(j);
	}
	json_array_end(j);
}

static int get_summary(struct servemodel *m, struct json *j)
{
	const struct serve_info *in = &m->info;
	uint64_t calls = 0;
	uint32_t i;

	for (i = 0; i < in->nthreads; i++)
		calls += in->threads[i].calls;
	json_object_begin(j, NULL);
	json_str(j, "trace", m->dir ? m->dir : "");
	json_bool(j, "live", m->live);
	json_u64(j, "generation", m->generation);
	json_u64(j, "events", in->events);
	json_u64(j, "calls", calls);
	json_u64(j, "lost_events", in->lost);
	json_u64(j, "syscall_events", in->syscall_events);
	json_u64(j, "duration_ns", in->last_ns > in->first_ns ? in->last_ns - in->first_ns : 0);
	json_u64(j, "first_ns", in->first_ns);
	json_u64(j, "functions", m->rows.n);
	json_bool(j, "complete", in->complete);
	if (in->damaged)
		json_str(j, "damage", in->damage);
	json_bool(j, "filtered_at_record", in->filtered_at_record);
	json_bool(j, "source_filtered", in->source_filtered);
	json_str(j, "command", in->command);
	json_str(j, "host", in->host);
	json_u64(j, "load_ms", m->load_ns / 1000000);
	json_bool(j, "from_index", m->from_index);
	json_bool(j, "heap", m->heap.has_heap);
	json_bool(j, "kernel", m->kern.has_kernel);
	json_u64(j, "kernel_events", m->kern.kernel_events);
	json_bool(j, "sync", m->sync.has_sync);
	json_u64(j, "sync_events", m->sync.events);
	json_bool(j, "exports", !m->live && m->dir);
	put_threads(m, j);
	put_processes(m, j);
	json_object_end(j);
	return HTTP_OK;
}

/* ------------------------------------------------------------ the flat profile */

struct sort_spec {
	enum profile_key key;
	bool asc;
};

/* as the profile sorts, but a row without a finished call has the minimum
 * 0 that the answer shows for it */
static uint64_t row_key(const struct profile_row *r, enum profile_key k)
{
	if (k == PROFILE_MIN && r->min_ns == UINT64_MAX)
		return 0;
	return profile_row_key(r, k);
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct profile_row *x = *(const struct profile_row *const *)a;
	const struct profile_row *y = *(const struct profile_row *const *)b;
	const struct sort_spec *sp = ctx;
	int c = 0;

	if (sp->key == PROFILE_NAME) {
		c = strcmp(x->name, y->name);
	} else {
		uint64_t p = row_key(x, sp->key), q = row_key(y, sp->key);

		c = p < q ? -1 : p > q;
		if (!c)
			return strcmp(x->name, y->name);
	}
	return sp->asc ? c : -c;
}

static void lower(const char *s, char *out, size_t size)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < size; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	out[i] = '\0';
}

static bool contains(const char *hay, const char *needle_lower)
{
	size_t n = strlen(needle_lower);

	for (; *hay; hay++) {
		size_t i;

		for (i = 0; i < n && hay[i] && tolower((unsigned char)hay[i]) == needle_lower[i]; i++)
			;
		if (i == n)
			return true;
	}
	return !n;
}

static void put_row(struct json *j, const struct profile_row *r)
{
	json_object_begin(j, NULL);
	json_str(j, "name", r->name);
	json_u64(j, "calls", r->calls);
	json_u64(j, "total_ns", r->total_ns);
	json_u64(j, "self_ns", r->self_ns);
	json_u64(j, "avg_ns", profile_row_avg(r));
	json_u64(j, "min_ns", r->min_ns == UINT64_MAX ? 0 : r->min_ns);
	json_u64(j, "max_ns", r->max_ns);
	if (r->file) {
		json_str(j, "file", r->file);
		json_u64(j, "line", r->line);
	}
	json_object_end(j);
}

static int get_profile(struct servemodel *m, const struct serve_query *q, struct json *j, FILE *out)
{
	static const char *const keys[] = { "total", "self", "calls", "avg", "min", "max", "name" };
	const char *sort = q->get(q->ctx, "sort"), *dir = q->get(q->ctx, "dir"), *text = q->get(q->ctx, "q");
	struct sort_spec sp = { PROFILE_TOTAL, false };
	const struct profile_row **v;
	char needle[QUERY_TEXT_MAX];
	uint64_t offset, limit;
	size_t i, n = 0;

	if (sort) {
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]) && strcmp(sort, keys[i]); i++)
			;
		if (i == sizeof(keys) / sizeof(keys[0]))
			return servequery_error(out, HTTP_BAD_REQUEST,
			                        "sort: total, self, calls, avg, min, max or name");
		sp.key = (enum profile_key)i;
		sp.asc = sp.key == PROFILE_NAME;
	}
	if (dir && strcmp(dir, "asc") && strcmp(dir, "desc"))
		return servequery_error(out, HTTP_BAD_REQUEST, "dir: asc or desc");
	if (dir)
		sp.asc = !strcmp(dir, "asc");
	if (!servequery_u64(q, "offset", 0, UINT32_MAX, &offset) ||
	    !servequery_u64(q, "limit", SERVEAPI_ROWS_MAX, SERVEAPI_ROWS_MAX, &limit))
		return servequery_error(out, HTTP_BAD_REQUEST, "offset and limit: numbers (limit at most 100000)");
	if (text && strlen(text) >= QUERY_TEXT_MAX)
		return servequery_error(out, HTTP_BAD_REQUEST, "q: too long");
	lower(text ? text : "", needle, sizeof(needle));
	v = malloc((m->rows.n + 1) * sizeof(*v));
	if (!v)
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	for (i = 0; i < m->rows.n; i++)
		if (contains(m->rows.row[i].name, needle))
			v[n++] = &m->rows.row[i];
	qsort_r(v, n, sizeof(*v), row_cmp, &sp);
	json_object_begin(j, NULL);
	json_str(j, "sort", keys[sp.key]);
	json_str(j, "dir", sp.asc ? "asc" : "desc");
	json_u64(j, "total_rows", n);
	json_u64(j, "offset", offset);
	json_u64(j, "lost_events", m->info.lost);
	json_array_begin(j, "functions");
	for (i = offset; i < n && i < offset + limit; i++)
		put_row(j, v[i]);
	json_array_end(j);
	json_object_end(j);
	free(v);
	return HTTP_OK;
}

/* ------------------------------------------------------------ syscalls */

static int get_syscalls(struct servemodel *m, struct json *j)
{
	const struct sysstats_result *res = &m->sysres;
	uint64_t calls = 0, errors = 0;
	size_t i;

	for (i = 0; i < res->nrows; i++) {
		calls += res->rows[i].calls;
		errors += res->rows[i].errors;
	}
	json_object_begin(j, NULL);
	json_u64(j, "calls", calls);
	json_u64(j, "errors", errors);
	sysstats_json(j, res, false);
	json_object_end(j);
	return HTTP_OK;
}

/* ------------------------------------------------------------ call trees */

static void put_node(struct servemodel *m, const struct calltree_stream *t, uint32_t i, struct json *j)
{
	const struct calltree_node *nd = &t->nodes[i];

	json_object_begin(j, NULL);
	json_u64(j, "id", i);
	json_str(j, "name", i ? names_get(&m->names, nd->name) : "");
	calltree_node_json(j, nd);
	json_u64(j, "children", nd->nchildren);
	json_u64(j, "syscalls", nd->sys_calls);
	json_object_end(j);
}

/* The thread named by the query's "thread" (a walk_stream.index). */
static const struct calltree_stream *query_tree(struct servemodel *m, const struct serve_query *q, uint64_t *index)
{
	if (!servequery_u64(q, "thread", UINT32_MAX, UINT32_MAX - 1, index))
		return NULL;
	return calltree_stream(&m->tree, (uint32_t)*index);
}

static int get_tree(struct servemodel *m, const struct serve_query *q, struct json *j, FILE *out)
{
	const struct calltree_stream *t;
	uint64_t index, node;
	uint32_t *kids, n, i, path[64], depth = 0;

	t = query_tree(m, q, &index);
	if (!t)
		return servequery_error(out, HTTP_NOT_FOUND, "no such thread");
	if (!servequery_u64(q, "node", 0, UINT32_MAX, &node) || node >= t->named)
		return servequery_error(out, HTTP_NOT_FOUND, "no such node");
	kids = calltree_children(t, (uint32_t)node, &n);
	if (!kids && n)
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	json_object_begin(j, NULL);
	json_u64(j, "thread", index);
	json_u64(j, "node", node);
	json_str(j, "name", node ? names_get(&m->names, t->nodes[node].name) : "");
	/* the path from the root (the innermost 64 ancestors) */
	for (i = (uint32_t)node; i && depth < 64; i = t->nodes[i].parent)
		path[depth++] = i;
	json_array_begin(j, "path");
	while (depth)
		json_u64(j, NULL, path[--depth]);
	json_array_end(j);
	json_array_begin(j, "children");
	for (i = 0; i < n && i < SERVEAPI_CHILDREN_MAX; i++)
		if (kids[i] < t->named)
			put_node(m, t, kids[i], j);
	json_array_end(j);
	json_u64(j, "more", n > SERVEAPI_CHILDREN_MAX ? n - SERVEAPI_CHILDREN_MAX : 0);
	json_object_end(j);
	free(kids);
	return HTTP_OK;
}

/* ------------------------------------------------------------ search */

static int get_search(struct servemodel *m, const struct serve_query *q, struct json *j, FILE *out)
{
	const char *text = q->get(q->ctx, "q");
	char needle[QUERY_TEXT_MAX];
	uint8_t *match;
	uint64_t limit, found = 0, more = 0;
	uint32_t k, i, id;
	size_t r;

	if (!text || !*text)
		return servequery_error(out, HTTP_BAD_REQUEST, "q: the text to find");
	if (strlen(text) >= QUERY_TEXT_MAX)
		return servequery_error(out, HTTP_BAD_REQUEST, "q: too long");
	if (!servequery_u64(q, "limit", 200, SERVEAPI_SEARCH_MAX, &limit))
		return servequery_error(out, HTTP_BAD_REQUEST, "limit: a number up to 1000");
	lower(text, needle, sizeof(needle));
	/* which names match, once: nodes far outnumber names */
	match = calloc(m->names.n + 1, 1);
	if (!match)
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	for (id = 0; id < m->names.n; id++)
		match[id] = names_match(&m->names, id, needle);
	json_object_begin(j, NULL);
	json_str(j, "q", text);
	json_array_begin(j, "functions");
	for (r = 0; r < m->rows.n; r++)
		if (contains(m->rows.row[r].name, needle))
			put_row(j, &m->rows.row[r]);
	json_array_end(j);
	json_array_begin(j, "nodes");
	for (k = 0; k < m->tree.nstreams; k++) {
		const struct calltree_stream *t = m->tree.streams[k];

		if (!t)
			continue;
		for (i = 1; i < t->named; i++) {
			uint32_t path[64], depth = 0, p;

			if (t->nodes[i].name >= m->names.n || !match[t->nodes[i].name])
				continue;
			if (found == limit) {
				more++;
				continue;
			}
			found++;
			for (p = i; p && depth < 64; p = t->nodes[p].parent)
				path[depth++] = p;
			json_object_begin(j, NULL);
			json_u64(j, "thread", k);
			json_u64(j, "id", i);
			json_str(j, "name", names_get(&m->names, t->nodes[i].name));
			json_u64(j, "calls", t->nodes[i].calls);
			json_u64(j, "total_ns", t->nodes[i].total_ns);
			json_bool(j, "path_cut", p != 0);
			json_array_begin(j, "path");
			while (depth)
				json_u64(j, NULL, path[--depth]);
			json_array_end(j);
			json_object_end(j);
		}
	}
	json_array_end(j);
	json_u64(j, "more", more);
	json_object_end(j);
	free(match);
	return HTTP_OK;
}

/* ------------------------------------------------------------ the flame graph */

/* A flame graph: every thread's calls (/api/flame), or the time off the
 * CPU charged to the call paths the threads left it on (offcpu: calls are
 * then the waits). */
static int get_flame(struct servemodel *m, const struct flame *f, bool offcpu, const struct serve_query *q,
                     struct json *j, FILE *out)
{
	uint64_t node, min_ppm, max_depth, min_ns, hidden = 0;
	uint32_t *queue, *depth, head = 0, tail = 0, c;

	if (!servequery_u64(q, "node", 0, UINT32_MAX, &node) || node >= f->paths.n)
		return servequery_error(out, HTTP_NOT_FOUND, "no such node");
	if (!servequery_u64(q, "min", 1000, 1000000, &min_ppm) || !servequery_u64(q, "depth", 256, 4096, &max_depth))
		return servequery_error(out, HTTP_BAD_REQUEST, "min: parts per million of the root; depth: up to 4096");
	min_ns = f->nodes[node].total_ns / 1000000 * min_ppm;
	queue = malloc(SERVEAPI_FLAME_NODES_MAX * sizeof(*queue));
	depth = malloc(SERVEAPI_FLAME_NODES_MAX * sizeof(*depth));
	if (!queue || !depth) {
		free(queue);
		free(depth);
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	}
	json_object_begin(j, NULL);
	if (offcpu) {
		json_bool(j, "kernel", true);
		json_u64(j, "waits", f->nodes[node].calls);
		json_u64(j, "dropped", m->kern.tracks.dropped_points);
	}
	json_u64(j, "root", node);
	json_u64(j, "total_ns", f->nodes[node].total_ns);
	/* ancestors, for the way back */
	json_array_begin(j, "ancestors");
	for (c = (uint32_t)node; c;) {
		c = f->paths.nodes[c].parent;
		json_object_begin(j, NULL);
		json_u64(j, "id", c);
		json_str(j, "name", c ? names_get(&m->names, f->nodes[c].name) : "all");
		json_object_end(j);
	}
	json_array_end(j);
	/* [id, parent id, name, total, self, calls, syscall, kernel, sync]: breadth
	 * first, so that a parent comes before its children */
	json_array_begin(j, "nodes");
	queue[tail] = (uint32_t)node;
	depth[tail++] = 0;
	while (head < tail) {
		uint32_t i = queue[head], d = depth[head++];
		const struct flame_node *nd = &f->nodes[i];

		json_array_begin(j, NULL);
		json_u64(j, NULL, i);
		json_u64(j, NULL, i == node ? 0 : f->paths.nodes[i].parent);
		json_str(j, NULL, i ? names_get(&m->names, nd->name) : "all");
		json_u64(j, NULL, nd->total_ns);
		json_u64(j, NULL, nd->self_ns);
		json_u64(j, NULL, nd->calls);
		json_u64(j, NULL, nd->kind == FLAME_SYSCALL);
		json_u64(j, NULL, nd->kind == FLAME_KERNEL);
		json_u64(j, NULL, nd->kind == FLAME_SYNC);
		json_array_end(j);
		for (c = f->paths.nodes[i].first_child; c; c = f->paths.nodes[c].next_sibling) {
			if (f->nodes[c].total_ns < min_ns || f->nodes[c].total_ns == 0 || d + 1 > max_depth ||
			    tail == SERVEAPI_FLAME_NODES_MAX) {
				hidden++;
				continue;
			}
			queue[tail] = c;
			depth[tail++] = d + 1;
		}
	}
	json_array_end(j);
	json_u64(j, "hidden", hidden);
	json_object_end(j);
	free(queue);
	free(depth);
	return HTTP_OK;
}

/* ------------------------------------------------------------ the timeline */

static int get_timeline(struct servemodel *m, const struct serve_query *q, struct json *j, FILE *out)
{
	const struct serve_info *in = &m->info;
	uint64_t index, t0, t1, px, span = in->last_ns > in->first_ns ? in->last_ns - in->first_ns : 1;
	int r;

	if (!servequery_u64(q, "thread", UINT32_MAX, UINT32_MAX - 1, &index) ||
	    !calltree_stream(&m->tree, (uint32_t)index))
		return servequery_error(out, HTTP_NOT_FOUND, "no such thread");
	if (!servequery_u64(q, "t0", 0, UINT64_MAX / 2, &t0) ||
	    !servequery_u64(q, "t1", span + 1, UINT64_MAX / 2, &t1) ||
	    !servequery_u64(q, "px", 1000, TIMELINE_PX_MAX, &px) || t1 <= t0 || !px)
		return servequery_error(out, HTTP_BAD_REQUEST, "t0 < t1 (ns from the start), px up to 16384");
	servemodel_live_settle(m); /* a live session: the chunk last fed is indexed */
	json_object_begin(j, NULL);
	json_u64(j, "thread", index);
	json_u64(j, "t0", t0);
	json_u64(j, "t1", t1);
	r = timeline_window(&m->tl, servemodel_name, m, &m->names, (uint32_t)index, in->first_ns, t0, t1, (uint32_t)px,
	                    j);
	json_object_end(j);
	/* a failure half way: the caller sends an error instead */
	return r ? -HTTP_SERVER_ERROR : HTTP_OK;
}

int serveapi_get(struct servemodel *m, const char *what, const struct serve_query *q, FILE *out)
{
	long start = ftell(out);
	struct json *j;
	int status;

	if (servemodel_refresh(m))
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	j = json_new(out);
	if (!j)
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	if (!strcmp(what, "summary"))
		status = get_summary(m, j);
	else if (!strcmp(what, "profile"))
		status = get_profile(m, q, j, out);
	else if (!strcmp(what, "syscalls"))
		status = get_syscalls(m, j);
	else if (!strcmp(what, "tree"))
		status = get_tree(m, q, j, out);
	else if (!strcmp(what, "search"))
		status = get_search(m, q, j, out);
	else if (!strcmp(what, "flame"))
		status = get_flame(m, &m->flame, false, q, j, out);
	else if (!strcmp(what, "offcpu_flame"))
		status = m->kern.has_kernel ? get_flame(m, &m->kern.offcpu, true, q, j, out) : servekernel_none(m, j);
	else if (!strcmp(what, "sync_tracks"))
		status = synctrack_answer(m, q, j, out);
	else if (!strcmp(what, "timeline"))
		status = get_timeline(m, q, j, out);
	else if (!strcmp(what, "heap") || !strcmp(what, "heap/growth"))
		/* (a live session's heap is answered by its control: serve/live.c) */
		status = serveheap_answer(&m->heap, what,
		                          "no heap events in this trace: the heap view needs a trace recorded "
		                          "with --memory",
		                          q, out);
	else if ((status = servekernel_answer(m, what, q, j, out)) == -HTTP_NOT_FOUND)
		status = servequery_error(out, HTTP_NOT_FOUND, "no such API");
	free(j);
	if (status < 0) {
		fseek(out, start, SEEK_SET);
		status = servequery_error(out, -status, "cannot read the trace again");
	}
	return status;
}
