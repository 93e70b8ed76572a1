/* Printing call graphs and path trees (see cgout.h); the forms are those of
 * docs/callgraph.md, which changes with this file. */
#include "host/lib/callgraph/cgout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/trace/cxxname.h"
#include "host/lib/util/json.h"
#include "host/lib/util/options.h"

/* Room for one display name: C++ names demangled run long. */
#define CGOUT_NAME_MAX 4096

static const char *const reach_names[] = { "root", "direct", "address", "none" };
static const char *const edge_kind_names[] = { "call", "tail", "indirect" };
static const char *const func_kind_names[] = { "symbol", "unnamed", "import" };
/* The names of enum cg_func_flags, bit by bit. */
static const char *const flag_names[] = {
	"thumb", "address-taken", "crt", "part", "exported", "ifunc", "entry", "main", "init",
};

static const char *reach_name(unsigned r)
{
	return r < sizeof(reach_names) / sizeof(reach_names[0]) ? reach_names[r] : "none";
}

static const char *edge_kind_name(unsigned k)
{
	return k < sizeof(edge_kind_names) / sizeof(edge_kind_names[0]) ? edge_kind_names[k] : "call";
}

static const char *func_kind_name(unsigned k)
{
	return k < sizeof(func_kind_names) / sizeof(func_kind_names[0]) ? func_kind_names[k] : "symbol";
}

static const char *hex(uint64_t v, char *buf, size_t size)
{
	snprintf(buf, size, "0x%" PRIx64, v);
	return buf;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

int cgout_parse_format(const char *s, enum cgout_format *fmt)
{
	if (!strcmp(s, "text"))
		*fmt = CGOUT_TEXT;
	else if (!strcmp(s, "dot"))
		*fmt = CGOUT_DOT;
	else if (!strcmp(s, "json"))
		*fmt = CGOUT_JSON;
	else
		return -EINVAL;
	return 0;
}

const char *cgout_func_name(const struct cg_object *o, uint32_t func, unsigned opts, char *buf, size_t size)
{
	const struct cg_func *fn;
	const char *d;
	size_t n;

	if (!o || func >= o->nfuncs)
		return "*indirect*";
	fn = &o->funcs[func];
	if (!fn->name)
		return "?";
	if (!(opts & CGOUT_DEMANGLE))
		return fn->name;
	if (fn->kind != CG_FUNC_IMPORT || !fn->import)
		return cxxname_demangle(fn->name, buf, size);
	/* "NAME@plt": NAME demangled, the suffix kept */
	d = cxxname_demangle(fn->import, buf, size);
	if (d != buf)
		return fn->name;
	n = strlen(fn->import);
	if (!strncmp(fn->name, fn->import, n)) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, "%s", fn->name + n);
	}
	return buf;
}

const char *cgout_object_name(const struct cg_object *o)
{
	const char *slash;

	if (o->soname && *o->soname)
		return o->soname;
	if (!o->path)
		return "?";
	slash = strrchr(o->path, '/');
	return slash && slash[1] ? slash + 1 : o->path;
}

static const char *object_type(const struct cg_object *o)
{
	return o->shared ? "shared" : o->pie ? "pie" : "exec";
}

/* The counts of "summary" and of the text header. */
struct summary {
	uint64_t named, unnamed, imports, calls, tail, indirect, unreachable, address_only;
};

static void summarize(const struct cg_object *o, struct summary *sm)
{
	memset(sm, 0, sizeof(*sm));
	for (uint32_t i = 0; i < o->nfuncs; i++) {
		const struct cg_func *fn = &o->funcs[i];

		if (fn->kind == CG_FUNC_IMPORT) {
			sm->imports++;
			continue;
		}
		if (fn->kind == CG_FUNC_UNNAMED)
			sm->unnamed++;
		else
			sm->named++;
		if (fn->reach == CG_REACH_NONE)
			sm->unreachable++;
		else if (fn->reach == CG_REACH_ADDRESS)
			sm->address_only++;
	}
	for (uint32_t i = 0; i < o->nedges; i++) {
		if (o->edges[i].kind == CG_EDGE_INDIRECT)
			sm->indirect++;
		else
			sm->calls++;
		if (o->edges[i].kind == CG_EDGE_TAIL)
			sm->tail++;
	}
}

/* The edges of fn, or none when its range is not within o's. */
static uint32_t edges_of(const struct cg_object *o, const struct cg_func *fn, uint32_t *first)
{
	*first = fn->edges;
	if (fn->edges > o->nedges || fn->nedges > o->nedges - fn->edges)
		return 0;
	return fn->nedges;
}

/* The definition an import is linked to, or NULL. */
static const struct cg_object *linked(const struct cg_set *s, const struct cg_func *fn)
{
	if (fn->kind != CG_FUNC_IMPORT || fn->link_obj >= s->n || fn->link_func >= s->objs[fn->link_obj]->nfuncs)
		return NULL;
	return s->objs[fn->link_obj];
}

static uint32_t objects_shown(const struct cg_set *s, unsigned opts)
{
	return opts & CGOUT_ALL ? s->n : s->n ? 1 : 0;
}

/* ---- the graph as text ---- */

static void text_flags(FILE *f, unsigned flags)
{
	bool first = true;

	for (unsigned b = 0; b < sizeof(flag_names) / sizeof(flag_names[0]); b++) {
		if (!(flags & (1u << b)))
			continue;
		fprintf(f, "%s%s", first ? " [" : " ", flag_names[b]);
		first = false;
	}
	if (!first)
		fputc(']', f);
}

static void text_link(FILE *f, const struct cg_set *s, const struct cg_func *fn, unsigned opts, char *buf)
{
	const struct cg_object *lo = linked(s, fn);

	if (lo)
		fprintf(f, " -> %s:%s", cgout_object_name(lo),
		        cgout_func_name(lo, fn->link_func, opts, buf, CGOUT_NAME_MAX));
}

/* The functions of one reach ("Unreachable:", "Address taken only:"). */
static void text_list(FILE *f, const struct cg_object *o, unsigned reach, const char *title, unsigned opts, char *buf)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < o->nfuncs; i++) {
		const struct cg_func *fn = &o->funcs[i];
		char a[24];

		if (fn->kind == CG_FUNC_IMPORT || fn->reach != reach)
			continue;
		if (!n++)
			fprintf(f, "%s\n", title);
		fprintf(f, "  %s %s %" PRIu64 " bytes\n", cgout_func_name(o, i, opts, buf, CGOUT_NAME_MAX),
		        hex(fn->addr, a, sizeof(a)), fn->size);
	}
	if (!n)
		fprintf(f, "%s none\n", title);
}

static void text_object(FILE *f, const struct cg_set *s, const struct cg_object *o, unsigned opts, char *buf,
                        char *buf2)
{
	struct summary sm;
	char a[24];
	uint64_t nimports = 0;

	summarize(o, &sm);
	fprintf(f,
	        "%s: %s %s, entry %s, %" PRIu64 " %s, %" PRIu64 " %s, %" PRIu64 " %s (%" PRIu64 " tail), %" PRIu64
	        " indirect %s, %" PRIu64 " unreachable, %" PRIu64 " address taken only\n",
	        o->path ? o->path : "?", cg_machine_name(o->machine), object_type(o), hex(o->entry, a, sizeof(a)),
	        sm.named + sm.unnamed, plural(sm.named + sm.unnamed, "function", "functions"), sm.imports,
	        plural(sm.imports, "import", "imports"), sm.calls, plural(sm.calls, "call", "calls"), sm.tail,
	        sm.indirect, plural(sm.indirect, "site", "sites"), sm.unreachable, sm.address_only);
	if (o->soname)
		fprintf(f, "soname %s\n", o->soname);
	if (o->nneeded) {
		fprintf(f, "needs");
		for (uint32_t i = 0; i < o->nneeded; i++)
			fprintf(f, " %s", o->needed[i] ? o->needed[i] : "?");
		fputc('\n', f);
	}
	if (o->stripped) {
		/* unnamed ones the file still names (_start, main found from
		 * the entry point, _init and _fini from DT_INIT and DT_FINI)
		 * apart from the sub_<addr> ones */
		uint64_t sub = 0;

		for (uint32_t i = 0; i < o->nfuncs; i++)
			if (o->funcs[i].kind == CG_FUNC_UNNAMED && o->funcs[i].name &&
			    !strncmp(o->funcs[i].name, "sub_", 4))
				sub++;
		fprintf(f, "stripped: %" PRIu64 " %s named from .dynsym, ", sm.named,
		        plural(sm.named, "function", "functions"));
		if (sm.unnamed > sub)
			fprintf(f, "%" PRIu64 " from the entry point and the dynamic section, ", sm.unnamed - sub);
		fprintf(f, "%" PRIu64 " unnamed (sub_<addr>)\n", sub);
	}
	if (o->undecodable)
		fprintf(f, "%" PRIu32 " %s could not be decoded\n", o->undecodable,
		        plural(o->undecodable, "instruction", "instructions"));
	fputc('\n', f);
	for (uint32_t i = 0; i < o->nfuncs; i++) {
		const struct cg_func *fn = &o->funcs[i];
		uint32_t first, n;

		if (fn->kind == CG_FUNC_IMPORT) {
			nimports++;
			continue;
		}
		fprintf(f, "%s %s %" PRIu64 " bytes, %s", cgout_func_name(o, i, opts, buf, CGOUT_NAME_MAX),
		        hex(fn->addr, a, sizeof(a)), fn->size, reach_name(fn->reach));
		text_flags(f, fn->flags);
		fputc('\n', f);
		n = edges_of(o, fn, &first);
		for (uint32_t k = first; k < first + n; k++) {
			const struct cg_edge *e = &o->edges[k];

			if (e->kind == CG_EDGE_INDIRECT || e->callee >= o->nfuncs) {
				fprintf(f, "  indirect at %s\n", hex(e->site, a, sizeof(a)));
				continue;
			}
			fprintf(f, "  %s %s at %s", edge_kind_name(e->kind),
			        cgout_func_name(o, e->callee, opts, buf, CGOUT_NAME_MAX), hex(e->site, a, sizeof(a)));
			text_link(f, s, &o->funcs[e->callee], opts, buf2);
			fputc('\n', f);
		}
	}
	fputc('\n', f);
	if (nimports) {
		fprintf(f, "Imports:\n");
		for (uint32_t i = 0; i < o->nfuncs; i++) {
			const struct cg_func *fn = &o->funcs[i];

			if (fn->kind != CG_FUNC_IMPORT)
				continue;
			fprintf(f, "  %s %s", cgout_func_name(o, i, opts, buf, CGOUT_NAME_MAX),
			        hex(fn->addr, a, sizeof(a)));
			text_link(f, s, fn, opts, buf2);
			fputc('\n', f);
		}
	} else {
		fprintf(f, "Imports: none\n");
	}
	text_list(f, o, CG_REACH_NONE, "Unreachable:", opts, buf);
	text_list(f, o, CG_REACH_ADDRESS, "Address taken only:", opts, buf);
}

/* ---- the graph as JSON ---- */

static void json_object_graph(struct json *j, const struct cg_set *s, const struct cg_object *o, unsigned opts,
                              char *buf)
{
	struct summary sm;
	char a[24];

	summarize(o, &sm);
	json_object_begin(j, NULL);
	json_str(j, "path", o->path ? o->path : "");
	json_str(j, "machine", cg_machine_name(o->machine));
	json_str(j, "type", object_type(o));
	json_bool(j, "stripped", o->stripped);
	json_str(j, "entry", hex(o->entry, a, sizeof(a)));
	if (o->soname)
		json_str(j, "soname", o->soname);
	else
		json_null(j, "soname");
	json_array_begin(j, "needed");
	for (uint32_t i = 0; i < o->nneeded; i++)
		json_str(j, NULL, o->needed[i] ? o->needed[i] : "");
	json_array_end(j);
	json_array_begin(j, "functions");
	for (uint32_t i = 0; i < o->nfuncs; i++) {
		const struct cg_func *fn = &o->funcs[i];

		json_object_begin(j, NULL);
		json_u64(j, "id", i);
		json_str(j, "name", cgout_func_name(o, i, opts, buf, CGOUT_NAME_MAX));
		json_str(j, "addr", hex(fn->addr, a, sizeof(a)));
		json_u64(j, "size", fn->size);
		json_str(j, "kind", func_kind_name(fn->kind));
		json_str(j, "reach", reach_name(fn->reach));
		json_array_begin(j, "flags");
		for (unsigned b = 0; b < sizeof(flag_names) / sizeof(flag_names[0]); b++)
			if (fn->flags & (1u << b))
				json_str(j, NULL, flag_names[b]);
		json_array_end(j);
		if (fn->kind == CG_FUNC_IMPORT && fn->import)
			json_str(j, "import", fn->import);
		else
			json_null(j, "import");
		if (linked(s, fn)) {
			json_object_begin(j, "link");
			json_u64(j, "object", fn->link_obj);
			json_u64(j, "function", fn->link_func);
			json_object_end(j);
		} else {
			json_null(j, "link");
		}
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "calls");
	for (uint32_t i = 0; i < o->nedges; i++) {
		const struct cg_edge *e = &o->edges[i];

		json_object_begin(j, NULL);
		json_u64(j, "caller", e->caller);
		if (e->kind == CG_EDGE_INDIRECT || e->callee >= o->nfuncs)
			json_null(j, "callee");
		else
			json_u64(j, "callee", e->callee);
		json_str(j, "kind", edge_kind_name(e->kind));
		json_str(j, "site", hex(e->site, a, sizeof(a)));
		json_object_end(j);
	}
	json_array_end(j);
	json_object_begin(j, "summary");
	json_u64(j, "functions", sm.named + sm.unnamed);
	json_u64(j, "unnamed", sm.unnamed);
	json_u64(j, "imports", sm.imports);
	json_u64(j, "calls", sm.calls);
	json_u64(j, "tail", sm.tail);
	json_u64(j, "indirect", sm.indirect);
	json_u64(j, "unreachable", sm.unreachable);
	json_u64(j, "address_only", sm.address_only);
	json_u64(j, "undecodable", o->undecodable);
	json_object_end(j);
	json_object_end(j);
}

/* ---- the graph as DOT ---- */

/* A DOT quoted string: a JSON string literal is one (" and \ escaped the
 * same way), and the shared escaper keeps it valid UTF-8. */
static void dot_string(FILE *f, const char *s)
{
	json_write_string(f, s);
}

/* seen[2 * callee + kind] == caller + 1 once an edge of that kind from
 * caller to callee is drawn: one arrow per pair and kind. */
static int dot_object(FILE *f, const struct cg_set *s, uint32_t oi, unsigned opts, char *buf)
{
	const struct cg_object *o = s->objs[oi];
	uint32_t *seen = calloc(o->nfuncs ? 2 * (size_t)o->nfuncs : 1, sizeof(*seen));

	if (!seen)
		return -ENOMEM;
	fprintf(f, "\tsubgraph \"cluster_%" PRIu32 "\" {\n\t\tlabel=", oi);
	dot_string(f, o->path ? o->path : "?");
	fprintf(f, ";\n");
	for (uint32_t i = 0; i < o->nfuncs; i++) {
		const struct cg_func *fn = &o->funcs[i];

		fprintf(f, "\t\t\"o%" PRIu32 "_%" PRIu32 "\" [label=", oi, i);
		dot_string(f, cgout_func_name(o, i, opts, buf, CGOUT_NAME_MAX));
		if (fn->kind == CG_FUNC_IMPORT)
			fprintf(f, ", shape=box");
		else if (fn->reach == CG_REACH_NONE)
			fprintf(f, ", color=grey, fontcolor=grey, style=dashed");
		else if (fn->reach == CG_REACH_ADDRESS)
			fprintf(f, ", style=dotted");
		fprintf(f, "];\n");
	}
	fprintf(f, "\t}\n");
	for (uint32_t i = 0; i < o->nfuncs; i++) {
		const struct cg_func *fn = &o->funcs[i];
		uint32_t first, n = edges_of(o, fn, &first);
		bool indirect = false;
		const struct cg_object *lo = linked(s, fn);

		for (uint32_t k = first; k < first + n; k++) {
			const struct cg_edge *e = &o->edges[k];
			unsigned kind = e->kind == CG_EDGE_TAIL;

			if (e->kind == CG_EDGE_INDIRECT || e->callee >= o->nfuncs) {
				indirect = true;
				continue;
			}
			if (seen[2 * (size_t)e->callee + kind] == i + 1)
				continue;
			seen[2 * (size_t)e->callee + kind] = i + 1;
			fprintf(f, "\t\"o%" PRIu32 "_%" PRIu32 "\" -> \"o%" PRIu32 "_%" PRIu32 "\"%s;\n", oi, i, oi,
			        e->callee, kind ? " [style=dashed]" : "");
		}
		if (indirect)
			fprintf(f,
			        "\t\"o%" PRIu32 "_%" PRIu32 "_ind\" [label=\"?\", shape=circle];\n"
			        "\t\"o%" PRIu32 "_%" PRIu32 "\" -> \"o%" PRIu32 "_%" PRIu32 "_ind\" [style=dotted];\n",
			        oi, i, oi, i, oi, i);
		/* a linked import to its definition, when that object is drawn */
		if (lo && ((opts & CGOUT_ALL) || fn->link_obj == 0))
			fprintf(f, "\t\"o%" PRIu32 "_%" PRIu32 "\" -> \"o%" PRIu32 "_%" PRIu32 "\" [color=blue];\n", oi,
			        i, fn->link_obj, fn->link_func);
	}
	free(seen);
	return 0;
}

int cgout_graph(FILE *f, const struct cg_set *s, enum cgout_format fmt, unsigned opts)
{
	char *buf = malloc(2 * CGOUT_NAME_MAX);
	uint32_t n = objects_shown(s, opts);
	int r = 0;

	if (!buf)
		return -ENOMEM;
	if (fmt == CGOUT_JSON) {
		struct json j;

		json_init(&j, f);
		json_object_begin(&j, NULL);
		json_array_begin(&j, "objects");
		for (uint32_t i = 0; i < n; i++)
			json_object_graph(&j, s, s->objs[i], opts, buf);
		json_array_end(&j);
		json_array_begin(&j, "missing");
		for (uint32_t i = 0; i < s->nmissing; i++)
			json_str(&j, NULL, s->missing[i]);
		json_array_end(&j);
		json_object_end(&j);
		json_finish(&j);
	} else if (fmt == CGOUT_DOT) {
		fprintf(f, "digraph callgraph {\n\tnode [fontname=\"monospace\"];\n");
		for (uint32_t i = 0; i < n && !r; i++)
			r = dot_object(f, s, i, opts, buf);
		fprintf(f, "}\n");
	} else {
		for (uint32_t i = 0; i < n; i++) {
			if (i)
				fputc('\n', f);
			text_object(f, s, s->objs[i], opts, buf, buf + CGOUT_NAME_MAX);
		}
		if (s->nmissing && (opts & CGOUT_ALL)) {
			fputc('\n', f);
			for (uint32_t i = 0; i < s->nmissing; i++)
				fprintf(f, "missing: %s\n", s->missing[i]);
		}
	}
	free(buf);
	if (!r && ferror(f))
		r = -EIO;
	return r;
}

/* ---- the path tree ---- */

/* A node's name: its function's, with "LIB:" before it when it is in
 * another object than the root (text and DOT). */
static const char *node_name(const struct cg_set *s, const struct cg_paths *p, const struct cg_path_node *nd,
                             unsigned opts, bool lib, char *buf, size_t size)
{
	const struct cg_object *o;
	const char *name;

	if (nd->flags & CG_PATH_INDIRECT || nd->obj >= s->n)
		return "*indirect*";
	o = s->objs[nd->obj];
	if (!lib || nd->obj == p->nodes[0].obj)
		return cgout_func_name(o, nd->func, opts, buf, size);
	name = cgout_func_name(o, nd->func, opts, buf + size / 2, size / 2);
	snprintf(buf, size / 2, "%s:%s", cgout_object_name(o), name);
	return buf;
}

static const char *node_kind(const struct cg_path_node *nd)
{
	if (nd->parent == CG_NONE)
		return "root";
	return edge_kind_name(nd->kind);
}

static void paths_node_json(struct json *j, const struct cg_set *s, const struct cg_paths *p,
                            const struct cg_path_node *nd, unsigned opts, char *buf)
{
	json_str(j, "name", node_name(s, p, nd, opts, false, buf, 2 * CGOUT_NAME_MAX));
	json_u64(j, "object", nd->obj);
	if (nd->flags & CG_PATH_INDIRECT)
		json_null(j, "function");
	else
		json_u64(j, "function", nd->func);
	json_str(j, "kind", node_kind(nd));
	json_bool(j, "recursive", nd->flags & CG_PATH_RECURSIVE);
	json_u64(j, "cut", nd->cut);
	if (opts & CGOUT_MARKS) {
		json_bool(j, "run", nd->flags & CG_PATH_RUN);
		json_u64(j, "calls", nd->calls);
	}
}

void cgout_paths_json(struct json *j, const char *key, const struct cg_set *s, const struct cg_paths *p, unsigned opts)
{
	char buf[2 * CGOUT_NAME_MAX];
	uint32_t open = 0;

	json_object_begin(j, key);
	if (p->n && p->nodes[0].obj < s->n) {
		const struct cg_object *o = s->objs[p->nodes[0].obj];

		json_str(j, "root", node_name(s, p, &p->nodes[0], opts, false, buf, sizeof(buf)));
		json_str(j, "object", o->path ? o->path : "");
	} else {
		json_null(j, "root");
		json_null(j, "object");
	}
	json_u64(j, "max_depth", p->max_depth);
	json_u64(j, "max_nodes", p->max_nodes);
	json_u64(j, "nodes", p->n);
	json_u64(j, "cut_nodes", p->cut_nodes);
	json_u64(j, "cut_paths", p->cut_paths);
	json_u64(j, "recursive", p->recursive);
	if (!p->n)
		json_null(j, "tree");
	/* preorder: close the levels deeper than the next node's */
	for (uint32_t i = 0; i < p->n; i++) {
		const struct cg_path_node *nd = &p->nodes[i];

		for (; open > nd->depth; open--) {
			json_array_end(j);
			json_object_end(j);
		}
		json_object_begin(j, i ? NULL : "tree");
		paths_node_json(j, s, p, nd, opts, buf);
		json_array_begin(j, "children");
		open++;
	}
	for (; open; open--) {
		json_array_end(j);
		json_object_end(j);
	}
	json_object_end(j);
}

static void paths_text(FILE *f, const struct cg_set *s, const struct cg_paths *p, unsigned opts)
{
	char buf[2 * CGOUT_NAME_MAX];

	for (uint32_t i = 0; i < p->n; i++) {
		const struct cg_path_node *nd = &p->nodes[i];
		char mark[32];
		int indent = options_indent(nd->depth, mark, sizeof(mark));

		if (opts & CGOUT_MARKS)
			fputs(nd->flags & CG_PATH_RUN ? "* " : "  ", f);
		fprintf(f, "%*s%s%s", indent, "", mark, node_name(s, p, nd, opts, true, buf, sizeof(buf)));
		if (nd->flags & CG_PATH_RECURSIVE)
			fputs(" [recursive]", f);
		if (nd->parent != CG_NONE && nd->kind == CG_EDGE_TAIL)
			fputs(" [tail]", f);
		if (nd->flags & CG_PATH_INDIRECT)
			fputs(" [indirect]", f);
		if (nd->cut)
			fprintf(f, " [+%" PRIu32 " cut]", nd->cut);
		if ((opts & CGOUT_MARKS) && (nd->flags & CG_PATH_RUN))
			fprintf(f, " (%" PRIu64 " %s)", nd->calls, plural(nd->calls, "call", "calls"));
		fputc('\n', f);
	}
	fprintf(f,
	        "%" PRIu32 " %s, %" PRIu32 " recursive, %" PRIu64 " %s cut (depth %" PRIu32 ", at most %" PRIu32
	        " nodes)\n",
	        p->n, plural(p->n, "node", "nodes"), p->recursive, p->cut_paths, plural(p->cut_paths, "path", "paths"),
	        p->max_depth, p->max_nodes);
}

static void paths_dot(FILE *f, const struct cg_set *s, const struct cg_paths *p, unsigned opts)
{
	char buf[2 * CGOUT_NAME_MAX], label[2 * CGOUT_NAME_MAX + 64];

	fprintf(f, "digraph paths {\n\tnode [fontname=\"monospace\"];\n");
	for (uint32_t i = 0; i < p->n; i++) {
		const struct cg_path_node *nd = &p->nodes[i];
		const char *name =
		    nd->flags & CG_PATH_INDIRECT ? "?" : node_name(s, p, nd, opts, true, buf, sizeof(buf));
		char cut[40] = "";

		if (nd->cut)
			snprintf(cut, sizeof(cut), " [+%" PRIu32 " cut]", nd->cut);
		snprintf(label, sizeof(label), "%s%s%s", name, nd->flags & CG_PATH_RECURSIVE ? " [recursive]" : "",
		         cut);
		fprintf(f, "\tn%" PRIu32 " [label=", i);
		dot_string(f, label);
		if (nd->flags & CG_PATH_INDIRECT)
			fprintf(f, ", shape=circle");
		/* recursive dashed; with marks, ran filled, never ran grey */
		if ((opts & CGOUT_MARKS) && !(nd->flags & CG_PATH_RUN))
			fprintf(f, ", color=grey, fontcolor=grey");
		if ((opts & CGOUT_MARKS) && (nd->flags & CG_PATH_RUN))
			fprintf(f, ", fillcolor=palegreen, style=\"filled%s\"",
			        nd->flags & CG_PATH_RECURSIVE ? ",dashed" : "");
		else if (nd->flags & CG_PATH_RECURSIVE)
			fprintf(f, ", style=dashed");
		fprintf(f, "];\n");
		if (nd->parent != CG_NONE)
			fprintf(f, "\tn%" PRIu32 " -> n%" PRIu32 "%s;\n", nd->parent, i,
			        nd->kind == CG_EDGE_TAIL       ? " [style=dashed]"
			        : nd->kind == CG_EDGE_INDIRECT ? " [style=dotted]"
			                                       : "");
	}
	fprintf(f, "}\n");
}

int cgout_paths(FILE *f, const struct cg_set *s, const struct cg_paths *p, enum cgout_format fmt, unsigned opts)
{
	if (fmt == CGOUT_JSON) {
		struct json j;

		json_init(&j, f);
		cgout_paths_json(&j, NULL, s, p, opts);
		json_finish(&j);
	} else if (fmt == CGOUT_DOT) {
		paths_dot(f, s, p, opts);
	} else {
		paths_text(f, s, p, opts);
	}
	return ferror(f) ? -EIO : 0;
}
