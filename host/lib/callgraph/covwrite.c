/* layerprof coverage's output: the coverage of a trace as text (tables and
 * the marked path tree) or as one JSON document (docs/coverage.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/callgraph/cgout.h"
#include "host/lib/callgraph/coverage.h"
#include "host/lib/callgraph/coverage_impl.h"
#include "host/lib/util/json.h"

/* Objects whose never-run functions the text merges (the rest are left
 * out of that list; JSON has them all). */
#define COV_TEXT_OBJECTS 1024u

static int never_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct cg_func *funcs = ctx, *a = &funcs[*(const uint32_t *)pa], *b = &funcs[*(const uint32_t *)pb];

	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int dyn_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct coverage *c = ctx;
	const struct cov_rpair *a = &c->pairs[*(const uint32_t *)pa], *b = &c->pairs[*(const uint32_t *)pb];
	int d;

	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	d = strcmp(c->objs[a->o1].names[a->f1], c->objs[b->o1].names[b->f1]);
	if (!d)
		d = strcmp(c->objs[a->o2].names[a->f2], c->objs[b->o2].names[b->f2]);
	return d ? d : cov_rpair_cmp(a, b);
}

void cov_sort_lists(struct coverage *c)
{
	uint32_t i;

	for (i = 0; i < c->nobjs; i++)
		qsort_r(c->objs[i].never, c->objs[i].nnever, sizeof(uint32_t), never_cmp, c->set.objs[i]->funcs);
	qsort_r(c->dyn, c->ndyn, sizeof(uint32_t), dyn_cmp, c);
}

/* 100 * run / total with one decimal; 0 when total is 0. */
static double percent(const struct cov_count *n)
{
	return n->total ? (double)(uint64_t)(1000.0 * n->run / n->total + 0.5) / 10 : 0.0;
}

static const char *reach_name(unsigned reach)
{
	static const char *const names[] = { "root", "direct", "address", "none" };

	return reach < sizeof(names) / sizeof(names[0]) ? names[reach] : "none";
}

/* How cgout shows the path tree: marked, names as ours. */
static unsigned cgout_opts(const struct coverage *c)
{
	return CGOUT_MARKS | (c->flags & COVERAGE_DEMANGLE ? CGOUT_DEMANGLE : 0);
}

static const char *fname(const struct coverage *c, uint32_t obj, uint32_t func)
{
	return c->objs[obj].names[func];
}

static void count_json(struct json *j, const char *key, const struct cov_count *n)
{
	json_object_begin(j, key);
	json_u64(j, "total", n->total);
	json_u64(j, "run", n->run);
	json_fixed(j, "percent", percent(n), 1);
	json_object_end(j);
}

static void hex_json(struct json *j, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	json_str(j, key, buf);
}

static const char *edge_kind(unsigned kind)
{
	return kind == CG_EDGE_TAIL ? "tail" : kind == CG_EDGE_INDIRECT ? "indirect" : "call";
}

static void object_json(struct json *j, const struct coverage *c, uint32_t i)
{
	const struct cg_object *o = c->set.objs[i];
	const struct cov_obj *co = &c->objs[i];
	uint32_t f, e;

	json_object_begin(j, NULL);
	json_str(j, "path", co->path);
	count_json(j, "functions", &co->funcs);
	count_json(j, "calls", &co->edges);
	json_array_begin(j, "function_list");
	for (f = 0; f < o->nfuncs; f++) {
		if (!coverage_counted(c, &o->funcs[f]))
			continue;
		json_object_begin(j, NULL);
		json_str(j, "name", fname(c, i, f));
		hex_json(j, "addr", o->funcs[f].addr);
		json_u64(j, "size", o->funcs[f].size);
		json_str(j, "reach", reach_name(o->funcs[f].reach));
		json_bool(j, "run", co->calls[f] > 0);
		json_u64(j, "calls", co->calls[f]);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "call_list");
	for (e = 0; e < o->nedges; e++) {
		const struct cg_edge *ed = &o->edges[e];
		uint64_t n;

		if (!coverage_edge_counted(c, i, ed))
			continue;
		n = coverage_edge_calls(c, i, ed);
		json_object_begin(j, NULL);
		json_str(j, "caller", fname(c, i, ed->caller));
		json_str(j, "callee", fname(c, i, ed->callee));
		json_str(j, "kind", edge_kind(ed->kind));
		hex_json(j, "site", ed->site);
		json_bool(j, "run", n > 0);
		json_u64(j, "calls", n);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "never_run");
	for (f = 0; f < co->nnever; f++) {
		const struct cg_func *fn = &o->funcs[co->never[f]];

		json_object_begin(j, NULL);
		json_str(j, "name", fname(c, i, co->never[f]));
		hex_json(j, "addr", fn->addr);
		json_u64(j, "size", fn->size);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "dynamic_calls");
	for (e = 0; e < c->ndyn; e++) {
		const struct cov_rpair *q = &c->pairs[c->dyn[e]];

		if (q->o1 != i)
			continue;
		json_object_begin(j, NULL);
		json_str(j, "caller", fname(c, q->o1, q->f1));
		json_str(j, "callee", fname(c, q->o2, q->f2));
		json_u64(j, "calls", q->calls);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

int coverage_write_json(FILE *f, const struct coverage *c)
{
	struct json j;
	uint32_t i;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", c->trace);
	json_array_begin(&j, "objects");
	for (i = 0; i < c->nobjs; i++)
		object_json(&j, c, i);
	json_array_end(&j);
	json_object_begin(&j, "total");
	count_json(&j, "functions", &c->total.funcs);
	count_json(&j, "calls", &c->total.edges);
	json_object_end(&j);
	json_u64(&j, "unmatched", c->unmatched);
	if (c->has_paths)
		cgout_paths_json(&j, "paths", &c->set, &c->paths, cgout_opts(c));
	else if (c->want_paths)
		json_null(&j, "paths");
	json_object_end(&j);
	json_finish(&j);
	return ferror(f) ? -EIO : 0;
}

static void row_text(FILE *f, int width, const char *name, const struct cov_count *fn, const struct cov_count *ed)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "%" PRIu32 "/%" PRIu32, fn->run, fn->total);
	snprintf(b, sizeof(b), "%" PRIu32 "/%" PRIu32, ed->run, ed->total);
	fprintf(f, "%-*s  %19s  %5.1f%%  %15s  %5.1f%%\n", width, name, a, percent(fn), b, percent(ed));
}

/* The never-run functions of all objects, largest first (each object's
 * list is so already: they are merged); the number written. */
static uint32_t never_text(FILE *f, const struct coverage *c)
{
	uint32_t at[COV_TEXT_OBJECTS] = { 0 }, i, n = 0;

	for (;;) {
		const struct cg_func *bf = NULL;
		uint32_t best = 0;

		for (i = 0; i < c->nobjs && i < COV_TEXT_OBJECTS; i++) {
			const struct cg_func *fn;

			if (at[i] == c->objs[i].nnever)
				continue;
			fn = &c->set.objs[i]->funcs[c->objs[i].never[at[i]]];
			if (!bf || fn->size > bf->size) {
				best = i;
				bf = fn;
			}
		}
		if (!bf)
			return n;
		fprintf(f, "  %8" PRIu64 "  %s  %s\n", bf->size, fname(c, best, c->objs[best].never[at[best]]),
		        c->objs[best].path);
		at[best]++;
		n++;
	}
}

int coverage_write_text(FILE *f, const struct coverage *c)
{
	int width = (int)strlen("object");
	uint32_t i, k;

	for (i = 0; i < c->nobjs; i++)
		if ((int)strlen(c->objs[i].path) > width)
			width = (int)strlen(c->objs[i].path);
	fprintf(f, "%-*s  %19s  %6s  %15s  %6s\n", width, "object", "functions run/total", "%", "calls run/total", "%");
	for (i = 0; i < c->nobjs; i++)
		row_text(f, width, c->objs[i].path, &c->objs[i].funcs, &c->objs[i].edges);
	row_text(f, width, "total", &c->total.funcs, &c->total.edges);
	if (c->unmatched)
		fprintf(f, "%" PRIu64 " traced function address%s in no function of the objects\n", c->unmatched,
		        c->unmatched == 1 ? "" : "es");
	fputs("\nNever run, largest first:\n", f);
	if (!never_text(f, c))
		fputs("  none\n", f);
	fputs("\nCalls that ran but are not in the static graph:\n", f);
	if (!c->ndyn)
		fputs("  none\n", f);
	for (k = 0; k < c->ndyn; k++) {
		const struct cov_rpair *q = &c->pairs[c->dyn[k]];

		fprintf(f, "  %8" PRIu64 "  %s -> %s\n", q->calls, fname(c, q->o1, q->f1), fname(c, q->o2, q->f2));
	}
	if (c->has_paths) {
		fputs("\nCall paths from ", f);
		fputs(fname(c, c->prog, c->root), f);
		fputs(" (* ran):\n", f);
		cgout_paths(f, &c->set, &c->paths, CGOUT_TEXT, cgout_opts(c));
	}
	return ferror(f) ? -EIO : 0;
}
