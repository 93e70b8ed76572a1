/* Unit test of the possible-path tree (cg_paths_build) on call graphs made
 * in memory, no ELF file needed: direct and mutual recursion, the depth
 * limit and the node budget with their cut counts, the indirect node,
 * imports as leaves or followed into a library, a chain deeper than any C
 * stack; and the text forms of the tree (cgout_paths, with coverage's
 * marks) and of the graph (cgout_graph). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/lib/callgraph/cgout.h"
#include "host/lib/callgraph/cgraph.h"

/* The program: main calls fact (twice), even, puts@plt, has two indirect
 * sites, and tail-calls deep1; fact calls itself; even and odd call each
 * other; deep1 -> deep2 -> deep3 -> deep4, which calls the instrumentation's
 * __cyg_profile_func_enter (never a path). */
enum { MAIN, FACT, EVEN, ODD, PUTS_PLT, DEEP1, DEEP2, DEEP3, DEEP4, CYG_PLT, NFUNCS };

static struct cg_func app_funcs[NFUNCS] = {
	[MAIN] = { .name = "main", .addr = 0x1000, .size = 0x100, .edges = 0, .nedges = 8 },
	[FACT] = { .name = "fact", .addr = 0x1100, .size = 0x40, .edges = 8, .nedges = 1 },
	[EVEN] = { .name = "even", .addr = 0x1140, .size = 0x40, .edges = 9, .nedges = 1 },
	[ODD] = { .name = "odd", .addr = 0x1180, .size = 0x40, .edges = 10, .nedges = 1 },
	[PUTS_PLT] = { .name = "puts@plt",
	               .import = "puts",
	               .addr = 0x11c0,
	               .size = 0x10,
	               .kind = CG_FUNC_IMPORT,
	               .edges = 11 },
	[DEEP1] = { .name = "deep1", .addr = 0x1200, .size = 0x10, .edges = 11, .nedges = 1 },
	[DEEP2] = { .name = "deep2", .addr = 0x1210, .size = 0x10, .edges = 12, .nedges = 1 },
	[DEEP3] = { .name = "_Z5deep3i", .addr = 0x1220, .size = 0x10, .edges = 13, .nedges = 1 },
	[DEEP4] = { .name = "deep4", .addr = 0x1230, .size = 0x10, .edges = 14, .nedges = 1 },
	[CYG_PLT] = { .name = "__cyg_profile_func_enter@plt",
	              .import = "__cyg_profile_func_enter",
	              .addr = 0x1240,
	              .size = 0x10,
	              .kind = CG_FUNC_IMPORT,
	              .edges = 15 },
};

static struct cg_edge app_edges[] = {
	{ .site = 0x1004, .caller = MAIN, .callee = FACT, .kind = CG_EDGE_CALL },
	{ .site = 0x1008, .caller = MAIN, .callee = EVEN, .kind = CG_EDGE_CALL },
	{ .site = 0x100c, .caller = MAIN, .callee = CG_NONE, .kind = CG_EDGE_INDIRECT },
	{ .site = 0x1010, .caller = MAIN, .callee = FACT, .kind = CG_EDGE_CALL },
	{ .site = 0x1014, .caller = MAIN, .callee = PUTS_PLT, .kind = CG_EDGE_CALL },
	{ .site = 0x1018, .caller = MAIN, .callee = CG_NONE, .kind = CG_EDGE_INDIRECT },
	{ .site = 0x101c, .caller = MAIN, .callee = PUTS_PLT, .kind = CG_EDGE_TAIL },
	{ .site = 0x1020, .caller = MAIN, .callee = DEEP1, .kind = CG_EDGE_TAIL },
	{ .site = 0x1104, .caller = FACT, .callee = FACT, .kind = CG_EDGE_CALL },
	{ .site = 0x1144, .caller = EVEN, .callee = ODD, .kind = CG_EDGE_CALL },
	{ .site = 0x1184, .caller = ODD, .callee = EVEN, .kind = CG_EDGE_TAIL },
	{ .site = 0x1204, .caller = DEEP1, .callee = DEEP2, .kind = CG_EDGE_CALL },
	{ .site = 0x1214, .caller = DEEP2, .callee = DEEP3, .kind = CG_EDGE_CALL },
	{ .site = 0x1224, .caller = DEEP3, .callee = DEEP4, .kind = CG_EDGE_CALL },
	{ .site = 0x1234, .caller = DEEP4, .callee = CYG_PLT, .kind = CG_EDGE_CALL },
};

/* The library: puts calls write; write calls back into the program's
 * main through an import (a callback, to check recursion across objects). */
enum { LIB_PUTS, LIB_WRITE, LIB_MAIN_PLT, LIB_NFUNCS };

static struct cg_func lib_funcs[LIB_NFUNCS] = {
	[LIB_PUTS] = { .name = "puts", .addr = 0x500, .size = 0x40, .edges = 0, .nedges = 1 },
	[LIB_WRITE] = { .name = "write", .addr = 0x540, .size = 0x40, .edges = 1, .nedges = 1 },
	[LIB_MAIN_PLT] = { .name = "main@plt",
	                   .import = "main",
	                   .addr = 0x580,
	                   .size = 0x10,
	                   .kind = CG_FUNC_IMPORT,
	                   .edges = 2 },
};

static struct cg_edge lib_edges[] = {
	{ .site = 0x504, .caller = LIB_PUTS, .callee = LIB_WRITE, .kind = CG_EDGE_CALL },
	{ .site = 0x544, .caller = LIB_WRITE, .callee = LIB_MAIN_PLT, .kind = CG_EDGE_CALL },
};

static struct cg_object app = {
	.path = "./app",
	.machine = CG_MACHINE_X86_64,
	.funcs = app_funcs,
	.nfuncs = NFUNCS,
	.edges = app_edges,
	.nedges = sizeof(app_edges) / sizeof(app_edges[0]),
	.main = MAIN,
};

static struct cg_object lib = {
	.path = "/lib/libc.so.6",
	.soname = "libc.so.6",
	.machine = CG_MACHINE_X86_64,
	.shared = true,
	.funcs = lib_funcs,
	.nfuncs = LIB_NFUNCS,
	.edges = lib_edges,
	.nedges = sizeof(lib_edges) / sizeof(lib_edges[0]),
	.main = CG_NONE,
};

static struct cg_object *objs[2] = { &app, &lib };
static struct cg_set set = { .objs = objs, .n = 2, .cap = 2 };

static void unlink_all(void)
{
	for (uint32_t i = 0; i < NFUNCS; i++)
		app_funcs[i].link_obj = app_funcs[i].link_func = CG_NONE;
	for (uint32_t i = 0; i < LIB_NFUNCS; i++)
		lib_funcs[i].link_obj = lib_funcs[i].link_func = CG_NONE;
}

static void link_all(void)
{
	unlink_all();
	app_funcs[PUTS_PLT].link_obj = 1;
	app_funcs[PUTS_PLT].link_func = LIB_PUTS;
	lib_funcs[LIB_MAIN_PLT].link_obj = 0;
	lib_funcs[LIB_MAIN_PLT].link_func = MAIN;
}

/* The tree in one line: each node "depth name" (obj:name outside object
 * 0) then its marks: R recursive, T tail, I indirect, +N cut; "|" between
 * nodes.  Also checks that each node's parent is the last node before it
 * one level up, as preorder has it. */
static void tree_string(const struct cg_paths *p, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (uint32_t i = 0; i < p->n && len < size; i++) {
		const struct cg_path_node *nd = &p->nodes[i];
		uint32_t want = CG_NONE;
		const char *name = "?";

		for (uint32_t k = i; k-- > 0;)
			if (p->nodes[k].depth + 1 == nd->depth) {
				want = k;
				break;
			}
		CHECK_EQ_U64(nd->parent, want);
		if (nd->flags & CG_PATH_INDIRECT)
			name = "*";
		else if (nd->obj < set.n && nd->func < set.objs[nd->obj]->nfuncs)
			name = set.objs[nd->obj]->funcs[nd->func].name;
		len += (size_t)snprintf(out + len, size - len, "%s%u %s%s%s%s%s", i ? "|" : "", nd->depth,
		                        nd->obj ? "lib:" : "", name, nd->flags & CG_PATH_RECURSIVE ? " R" : "",
		                        nd->parent != CG_NONE && nd->kind == CG_EDGE_TAIL ? " T" : "",
		                        nd->kind == CG_EDGE_INDIRECT ? " I" : "");
		if (nd->cut && len < size)
			len += (size_t)snprintf(out + len, size - len, " +%u", nd->cut);
	}
}

/* Builds from root of object obj and checks the tree and its counts. */
static void paths_are(uint32_t obj, uint32_t root, uint32_t depth, uint32_t max_nodes, unsigned flags, const char *want,
                      uint32_t n, uint32_t recursive, uint64_t cut_nodes, uint64_t cut_paths, const char *file,
                      int line)
{
	struct cg_paths p;
	char got[2048];
	int r = cg_paths_build(&set, obj, root, depth, max_nodes, flags, &p);

	check_eq_u64((uint64_t)r, 0, file, line, "cg_paths_build", "0");
	tree_string(&p, got, sizeof(got));
	check_str(got, want, file, line, "tree");
	check_eq_u64(p.n, n, file, line, "nodes", "n");
	check_eq_u64(p.recursive, recursive, file, line, "recursive", "recursive");
	check_eq_u64(p.cut_nodes, cut_nodes, file, line, "cut_nodes", "cut_nodes");
	check_eq_u64(p.cut_paths, cut_paths, file, line, "cut_paths", "cut_paths");
	check_eq_u64(p.max_depth, depth, file, line, "max_depth", "depth");
	check_eq_u64(p.max_nodes, max_nodes, file, line, "max_nodes", "max_nodes");
	CHECK(p.n <= p.cap || !p.n);
	CHECK(p.cap <= max_nodes);
	cg_paths_release(&p);
	CHECK(p.nodes == NULL && p.n == 0);
}

#define PATHS_ARE(obj, root, depth, max, flags, want, n, rec, cn, cp) \
	paths_are((obj), (root), (depth), (max), (flags), (want), (n), (rec), (cn), (cp), __FILE__, __LINE__)

#define FULL_TREE                                                                                         \
	"0 main|1 fact|2 fact R|1 even|2 odd|3 even R T|1 puts@plt|1 deep1 T|2 deep2|3 _Z5deep3i|4 deep4" \
	"|1 * I"

static void test_whole(void)
{
	unlink_all();
	/* fact once (its second call is the same callee), recursion marked and
	 * not expanded, the import a leaf, the indirect node last */
	PATHS_ARE(0, MAIN, 8, 100000, 0, FULL_TREE, 12, 2, 0, 0);
	/* linked but not followed: the same tree */
	link_all();
	PATHS_ARE(0, MAIN, 8, 100000, 0, FULL_TREE, 12, 2, 0, 0);
	/* followed: puts@plt becomes libc's puts, whose write calls back
	 * into main, already on the path */
	PATHS_ARE(0, MAIN, 8, 100000, CG_PATH_LIBS,
	          "0 main|1 fact|2 fact R|1 even|2 odd|3 even R T|1 lib:puts|2 lib:write|3 main R|1 deep1 T|2 deep2"
	          "|3 _Z5deep3i|4 deep4|1 * I",
	          14, 3, 0, 0);
	/* from the library: into the program and back */
	PATHS_ARE(1, LIB_PUTS, 8, 100000, CG_PATH_LIBS,
	          "0 lib:puts|1 lib:write|2 main|3 fact|4 fact R|3 even|4 odd|5 even R T|3 lib:puts R|3 deep1 T"
	          "|4 deep2|5 _Z5deep3i|6 deep4|3 * I",
	          14, 3, 0, 0);
	/* without following, the library's import is a leaf */
	PATHS_ARE(1, LIB_PUTS, 8, 100000, 0, "0 lib:puts|1 lib:write|2 lib:main@plt", 3, 0, 0, 0);
	unlink_all();
	/* an unlinked import is a leaf even when following */
	PATHS_ARE(0, PUTS_PLT, 8, 100000, CG_PATH_LIBS, "0 puts@plt", 1, 0, 0, 0);
	PATHS_ARE(0, MAIN, 8, 100000, CG_PATH_LIBS, FULL_TREE, 12, 2, 0, 0);
}

static void test_roots(void)
{
	unlink_all();
	/* the instrumentation's call is no path, nor a cut one at the limit */
	PATHS_ARE(0, DEEP4, 8, 100000, 0, "0 deep4", 1, 0, 0, 0);
	PATHS_ARE(0, DEEP4, 0, 100000, 0, "0 deep4", 1, 0, 0, 0);
	/* as a root it is a leaf like any import */
	PATHS_ARE(0, CYG_PLT, 8, 100000, 0, "0 __cyg_profile_func_enter@plt", 1, 0, 0, 0);
	/* mutual recursion from either side */
	PATHS_ARE(0, EVEN, 8, 100000, 0, "0 even|1 odd|2 even R T", 3, 1, 0, 0);
	PATHS_ARE(0, ODD, 8, 100000, 0, "0 odd|1 even T|2 odd R", 3, 1, 0, 0);
	/* direct recursion at the root */
	PATHS_ARE(0, FACT, 8, 100000, 0, "0 fact|1 fact R", 2, 1, 0, 0);
}

static void test_depth(void)
{
	unlink_all();
	/* depth 0: the root alone, its 5 children cut (fact, even, puts@plt,
	 * deep1, and the indirect node) */
	PATHS_ARE(0, MAIN, 0, 100000, 0, "0 main +5", 1, 0, 1, 5);
	PATHS_ARE(0, MAIN, 1, 100000, 0, "0 main|1 fact +1|1 even +1|1 puts@plt|1 deep1 T +1|1 * I", 6, 0, 3, 3);
	/* a recursive node at the limit is marked, not cut */
	PATHS_ARE(0, MAIN, 2, 100000, 0, "0 main|1 fact|2 fact R|1 even|2 odd +1|1 puts@plt|1 deep1 T|2 deep2 +1|1 * I",
	          9, 1, 2, 2);
	PATHS_ARE(0, MAIN, 3, 100000, 0,
	          "0 main|1 fact|2 fact R|1 even|2 odd|3 even R T|1 puts@plt|1 deep1 T|2 deep2|3 _Z5deep3i +1|1 * I",
	          11, 2, 1, 1);
	PATHS_ARE(0, MAIN, 4, 100000, 0, FULL_TREE, 12, 2, 0, 0);
	PATHS_ARE(0, MAIN, UINT32_MAX, 100000, 0, FULL_TREE, 12, 2, 0, 0);
}

static void test_budget(void)
{
	unlink_all();
	PATHS_ARE(0, MAIN, 8, 0, 0, "", 0, 0, 0, 0);
	PATHS_ARE(0, MAIN, 8, 1, 0, "0 main +5", 1, 0, 1, 5);
	/* even is the 4th node: its callee odd and main's three children left
	 * (puts@plt, deep1, the indirect node) are cut */
	PATHS_ARE(0, MAIN, 8, 4, 0, "0 main +3|1 fact|2 fact R|1 even +1", 4, 1, 2, 4);
	PATHS_ARE(0, MAIN, 8, 11, 0,
	          "0 main +1|1 fact|2 fact R|1 even|2 odd|3 even R T|1 puts@plt|1 deep1 T|2 deep2|3 _Z5deep3i|4 deep4",
	          11, 2, 1, 1);
	PATHS_ARE(0, MAIN, 8, 12, 0, FULL_TREE, 12, 2, 0, 0);
	/* both limits at once */
	PATHS_ARE(0, MAIN, 1, 3, 0, "0 main +3|1 fact +1|1 even +1", 3, 0, 3, 5);
}

static void test_bad(void)
{
	struct cg_paths p;

	CHECK_EQ_U64(cg_paths_build(&set, 2, 0, 8, 10, 0, &p), (uint64_t)-EINVAL);
	CHECK_EQ_U64(p.n, 0);
	CHECK_EQ_U64(cg_paths_build(&set, 0, NFUNCS, 8, 10, 0, &p), (uint64_t)-EINVAL);
	CHECK_EQ_U64(p.n, 0);
	cg_paths_release(&p);
	cg_paths_release(NULL);
}

/* A chain f0 -> f1 -> ... deeper than a recursive walk could go on a C
 * stack, and a function calling many: the walk's own stacks hold them. */
static void test_long(void)
{
	enum { N = 300000 };
	struct cg_func *f = calloc(N, sizeof(*f));
	struct cg_edge *e = calloc(N, sizeof(*e));
	struct cg_object o = { .path = "chain", .funcs = f, .nfuncs = N, .edges = e, .nedges = N - 1 };
	struct cg_object *one[1] = { &o };
	struct cg_set s = { .objs = one, .n = 1, .cap = 1 };
	struct cg_paths p;
	bool ok = true;

	if (!CHECK(f && e))
		goto out;
	for (uint32_t i = 0; i < N; i++) {
		f[i] = (struct cg_func){ .name = "f", .addr = 16u * i, .size = 16, .edges = i, .nedges = i + 1 < N };
		e[i] = (struct cg_edge){ .site = 16u * i, .caller = i, .callee = i + 1, .kind = CG_EDGE_CALL };
	}
	CHECK_EQ_U64(cg_paths_build(&s, 0, 0, UINT32_MAX, N, 0, &p), 0);
	CHECK_EQ_U64(p.n, N);
	for (uint32_t i = 0; i < p.n && ok; i++)
		ok = p.nodes[i].func == i && p.nodes[i].depth == i && p.nodes[i].parent == (i ? i - 1 : CG_NONE);
	CHECK(ok);
	CHECK_EQ_U64(p.cut_paths, 0);
	cg_paths_release(&p);
	/* the budget stops it: the last node's callee is cut */
	CHECK_EQ_U64(cg_paths_build(&s, 0, 0, UINT32_MAX, 1000, 0, &p), 0);
	CHECK_EQ_U64(p.n, 1000);
	CHECK_EQ_U64(p.cut_nodes, 1);
	CHECK_EQ_U64(p.nodes[999].cut, 1);
	cg_paths_release(&p);
	/* one function calling all the others (duplicates once): a flat tree */
	f[0].nedges = N - 1;
	for (uint32_t i = 1; i < N; i++) {
		f[i].edges = N - 1;
		f[i].nedges = 0;
		e[i - 1].caller = 0;
		e[i - 1].callee = i % 2 ? i : 1;
	}
	CHECK_EQ_U64(cg_paths_build(&s, 0, 0, 8, UINT32_MAX, 0, &p), 0);
	CHECK_EQ_U64(p.n, 1 + N / 2);
	CHECK_EQ_U64(p.nodes[p.n - 1].func, N - 1);
	cg_paths_release(&p);
out:
	free(f);
	free(e);
}

/* The text form, with and without coverage's marks. */
static void test_text(void)
{
	struct cg_paths p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	link_all();
	if (!CHECK(cg_paths_build(&set, 0, MAIN, 2, 100000, CG_PATH_LIBS, &p) == 0))
		return;
	f = open_memstream(&buf, &len);
	if (!CHECK(f))
		return;
	CHECK_EQ_U64(cgout_paths(f, &set, &p, CGOUT_TEXT, CGOUT_DEMANGLE), 0);
	fclose(f);
	CHECK_STR(buf, "main\n"
	               "  fact\n"
	               "    fact [recursive]\n"
	               "  even\n"
	               "    odd [+1 cut]\n"
	               "  libc.so.6:puts\n"
	               "    libc.so.6:write [+1 cut]\n"
	               "  deep1 [tail]\n"
	               "    deep2 [+1 cut]\n"
	               "  *indirect* [indirect]\n"
	               "10 nodes, 1 recursive, 3 paths cut (depth 2, at most 100000 nodes)\n");
	free(buf);
	buf = NULL;
	p.nodes[0].flags |= CG_PATH_RUN;
	p.nodes[0].calls = 1;
	p.nodes[1].flags |= CG_PATH_RUN;
	p.nodes[1].calls = 3;
	f = open_memstream(&buf, &len);
	if (!CHECK(f))
		return;
	CHECK_EQ_U64(cgout_paths(f, &set, &p, CGOUT_TEXT, CGOUT_DEMANGLE | CGOUT_MARKS), 0);
	fclose(f);
	CHECK_STR(buf, "* main (1 call)\n"
	               "*   fact (3 calls)\n"
	               "      fact [recursive]\n"
	               "    even\n"
	               "      odd [+1 cut]\n"
	               "    libc.so.6:puts\n"
	               "      libc.so.6:write [+1 cut]\n"
	               "    deep1 [tail]\n"
	               "      deep2 [+1 cut]\n"
	               "    *indirect* [indirect]\n"
	               "10 nodes, 1 recursive, 3 paths cut (depth 2, at most 100000 nodes)\n");
	free(buf);
	cg_paths_release(&p);
	/* demangled names */
	{
		char name[256];

		CHECK_STR(cgout_func_name(&app, DEEP3, CGOUT_DEMANGLE, name, sizeof(name)), "deep3(int)");
		CHECK_STR(cgout_func_name(&app, DEEP3, 0, name, sizeof(name)), "_Z5deep3i");
		CHECK_STR(cgout_func_name(&app, CG_NONE, CGOUT_DEMANGLE, name, sizeof(name)), "*indirect*");
	}
}

/* Prints with fn into a string; NULL on failure. */
static char *printed(int (*fn)(FILE *, const struct cg_set *, enum cgout_format, unsigned), enum cgout_format fmt,
                     unsigned opts)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	CHECK_EQ_U64(fn(f, &set, fmt, opts), 0);
	fclose(f);
	return buf;
}

/* The graph's text (every object) and some of its JSON. */
static void test_graph(void)
{
	char *buf;

	unlink_all();
	app_funcs[PUTS_PLT].link_obj = 1;
	app_funcs[PUTS_PLT].link_func = LIB_PUTS;
	app_funcs[MAIN].flags = CG_FUNC_ENTRY | CG_FUNC_MAIN;
	app_funcs[EVEN].reach = CG_REACH_ADDRESS;
	app_funcs[EVEN].flags = CG_FUNC_ADDRESS_TAKEN;
	app_funcs[ODD].reach = CG_REACH_NONE;
	buf = printed(cgout_graph, CGOUT_TEXT, CGOUT_DEMANGLE | CGOUT_ALL);
	CHECK_STR(buf, "./app: x86-64 exec, entry 0x0, 8 functions, 2 imports, 13 calls (3 tail), 2 indirect sites, 1 "
	               "unreachable, 1 address taken only\n"
	               "\n"
	               "main 0x1000 256 bytes, root [entry main]\n"
	               "  call fact at 0x1004\n"
	               "  call even at 0x1008\n"
	               "  indirect at 0x100c\n"
	               "  call fact at 0x1010\n"
	               "  call puts@plt at 0x1014 -> libc.so.6:puts\n"
	               "  indirect at 0x1018\n"
	               "  tail puts@plt at 0x101c -> libc.so.6:puts\n"
	               "  tail deep1 at 0x1020\n"
	               "fact 0x1100 64 bytes, root\n"
	               "  call fact at 0x1104\n"
	               "even 0x1140 64 bytes, address [address-taken]\n"
	               "  call odd at 0x1144\n"
	               "odd 0x1180 64 bytes, none\n"
	               "  tail even at 0x1184\n"
	               "deep1 0x1200 16 bytes, root\n"
	               "  call deep2 at 0x1204\n"
	               "deep2 0x1210 16 bytes, root\n"
	               "  call deep3(int) at 0x1214\n"
	               "deep3(int) 0x1220 16 bytes, root\n"
	               "  call deep4 at 0x1224\n"
	               "deep4 0x1230 16 bytes, root\n"
	               "  call __cyg_profile_func_enter@plt at 0x1234\n"
	               "\n"
	               "Imports:\n"
	               "  puts@plt 0x11c0 -> libc.so.6:puts\n"
	               "  __cyg_profile_func_enter@plt 0x1240\n"
	               "Unreachable:\n"
	               "  odd 0x1180 64 bytes\n"
	               "Address taken only:\n"
	               "  even 0x1140 64 bytes\n"
	               "\n"
	               "/lib/libc.so.6: x86-64 shared, entry 0x0, 2 functions, 1 import, 2 calls (0 tail), 0 indirect "
	               "sites, 0 unreachable, 0 address taken only\n"
	               "soname libc.so.6\n"
	               "\n"
	               "puts 0x500 64 bytes, root\n"
	               "  call write at 0x504\n"
	               "write 0x540 64 bytes, root\n"
	               "  call main@plt at 0x544\n"
	               "\n"
	               "Imports:\n"
	               "  main@plt 0x580\n"
	               "Unreachable: none\n"
	               "Address taken only: none\n");
	free(buf);
	buf = printed(cgout_graph, CGOUT_JSON, 0);
	CHECK(buf && strstr(buf, "{\"objects\":[{\"path\":\"./app\",\"machine\":\"x86-64\",\"type\":\"exec\","
	                         "\"stripped\":false,\"entry\":\"0x0\",\"soname\":null,\"needed\":[],"));
	CHECK(buf && strstr(buf, "{\"id\":4,\"name\":\"puts@plt\",\"addr\":\"0x11c0\",\"size\":16,\"kind\":"
	                         "\"import\",\"reach\":\"root\",\"flags\":[],\"import\":\"puts\",\"link\":{"
	                         "\"object\":1,\"function\":0}}"));
	CHECK(buf && strstr(buf, "{\"id\":7,\"name\":\"_Z5deep3i\","));
	CHECK(buf && strstr(buf, "{\"caller\":0,\"callee\":null,\"kind\":\"indirect\",\"site\":\"0x100c\"}"));
	CHECK(buf && strstr(buf, "\"summary\":{\"functions\":8,\"unnamed\":0,\"imports\":2,\"calls\":13,"
	                         "\"tail\":3,\"indirect\":2,\"unreachable\":1,\"address_only\":1,"
	                         "\"undecodable\":0}}],\"missing\":[]}\n"));
	free(buf);
}

int main(void)
{
	test_whole();
	test_roots();
	test_depth();
	test_budget();
	test_bad();
	test_long();
	test_text();
	test_graph();
	return check_summary();
}
