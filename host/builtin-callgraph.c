/* layerprof callgraph: the static call graph of an ELF program or library
 * (and, with --libs, of the libraries it needs), or the tree of call paths
 * possible from one of its functions, read from the files alone. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"

#ifdef LP_HAVE_CAPSTONE

#include "host/lib/callgraph/cgout.h"
#include "host/lib/callgraph/cgraph.h"
#include "host/lib/trace/cxxname.h"

/* --paths defaults and the largest budget taken (a node is 40 bytes). */
#define CALLGRAPH_DEPTH 8u
#define CALLGRAPH_MAX_NODES 100000u
#define CALLGRAPH_MAX_NODES_LIMIT 10000000u
/* Room for a demangled name compared with --root. */
#define CALLGRAPH_NAME_MAX 4096

static const char callgraph_usage[] =
    "usage: layerprof callgraph [options] <file>\n"
    "       layerprof callgraph --paths [--root NAME] [--depth N] [--max-nodes N] [options] <file>\n"
    "\n"
    "The static call graph of an ELF program or shared library (x86-64, aarch64,\n"
    "32-bit ARM and Thumb, read on any host), from the file alone: its functions,\n"
    "their direct calls, tail calls, calls through the PLT to other objects, and\n"
    "indirect call sites (target unknown), and which functions no root (entry\n"
    "point, main, init/fini arrays, exported functions) reaches.  With --paths,\n"
    "the tree of call paths possible from one function instead, recursion shown\n"
    "once and marked.  The forms are described in docs/callgraph.md.\n"
    "\n"
    "      --libs            also read the shared libraries it needs (as the\n"
    "                        dynamic linker finds them) and link its imports to\n"
    "                        their definitions; --paths follows them\n"
    "      --sysroot DIR     look for those libraries under DIR (a target's root)\n"
    "      --format FMT      text (default), dot or json\n"
    "      --no-demangle     C++ names as their symbols\n"
    "      --paths           the tree of possible call paths\n"
    "      --root NAME       its root: a function's name or address (0x...);\n"
    "                        default main, else the entry point's function\n"
    "      --depth N         levels below the root (default 8)\n"
    "      --max-nodes N     nodes at most (default 100000, at most 10000000)\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 1 the file cannot be read, 2 usage (or no such root).\n";

enum callgraph_opt {
	OPT_LIBS = 0x100,
	OPT_SYSROOT,
	OPT_FORMAT,
	OPT_NO_DEMANGLE,
	OPT_PATHS,
	OPT_ROOT,
	OPT_DEPTH_N,
	OPT_MAX_NODES,
};

/* A decimal number in [min, max] for option opt; false after saying why. */
static bool parse_count(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*arg < '0' || *arg > '9' || *end || errno || v < min || v > max) {
		fprintf(stderr, "layerprof callgraph: invalid %s '%s': a number from %u to %u\n", opt, arg, min, max);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* The function --root names in o: a symbol name as it is in the file, a
 * demangled name (whole, or without its parameters), or an address inside
 * a function.  Without a name: main, else the entry point's function.
 * CG_NONE when none. */
static uint32_t find_root(const struct cg_object *o, const char *name)
{
	char buf[CALLGRAPH_NAME_MAX];
	uint32_t i;

	if (!name) {
		if (o->main < o->nfuncs)
			return o->main;
		for (i = 0; i < o->nfuncs; i++)
			if (o->funcs[i].flags & CG_FUNC_ENTRY)
				return i;
		return CG_NONE;
	}
	i = cg_object_lookup(o, name);
	if (i != CG_NONE)
		return i;
	for (i = 0; i < o->nfuncs; i++) {
		const char *d = cgout_func_name(o, i, CGOUT_DEMANGLE, buf, sizeof(buf));
		struct cxxname cn;

		if (d == o->funcs[i].name)
			continue;
		if (!strcmp(d, name))
			return i;
		cxxname_split(d, &cn);
		if (cn.params - cn.start == strlen(name) && !strncmp(d + cn.start, name, cn.params - cn.start))
			return i;
	}
	if (name[0] == '0' && (name[1] == 'x' || name[1] == 'X')) {
		char *end;
		unsigned long long addr;

		errno = 0;
		addr = strtoull(name + 2, &end, 16);
		if (name[2] && !*end && !errno)
			return cg_object_find(o, addr);
	}
	return CG_NONE;
}

/* The exit code for what printing the output returned (0, -ENOMEM, or a
 * write error), after flushing it and saying what failed. */
static int output_done(int r)
{
	if (!r && fflush(stdout))
		r = errno ? -errno : -EIO;
	if (!r)
		return LP_EXIT_OK;
	if (r == -ENOMEM)
		fprintf(stderr, "layerprof callgraph: out of memory\n");
	else
		fprintf(stderr, "layerprof callgraph: cannot write the output: %s\n", strerror(-r));
	return LP_EXIT_FAILURE;
}

/* Prints the tree of paths from root_name (NULL: the default root) in the
 * first object of s.  Returns the exit code. */
static int print_paths(const struct cg_set *s, const char *root_name, uint32_t depth, uint32_t max_nodes, bool libs,
                       enum cgout_format fmt, unsigned opts)
{
	const struct cg_object *o = s->objs[0];
	uint32_t root = find_root(o, root_name);
	struct cg_paths p;
	int r;

	if (root == CG_NONE) {
		if (root_name)
			fprintf(stderr, "layerprof callgraph: no function '%s' in '%s'\n", root_name, o->path);
		else
			fprintf(stderr,
			        "layerprof callgraph: '%s' has no main and no entry point: name a root with --root\n",
			        o->path);
		return LP_EXIT_USAGE;
	}
	r = cg_paths_build(s, 0, root, depth, max_nodes, libs ? CG_PATH_LIBS : 0, &p);
	if (r) {
		fprintf(stderr, "layerprof callgraph: cannot build the paths of '%s': %s\n", o->path, strerror(-r));
		return LP_EXIT_FAILURE;
	}
	for (uint32_t i = 0; i < s->nmissing; i++)
		fprintf(stderr, "layerprof callgraph: warning: %s\n", s->missing[i]);
	r = cgout_paths(stdout, s, &p, fmt, opts);
	cg_paths_release(&p);
	return output_done(r);
}

int cmd_callgraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "libs", no_argument, NULL, OPT_LIBS },
		{ "sysroot", required_argument, NULL, OPT_SYSROOT },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
		{ "paths", no_argument, NULL, OPT_PATHS },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "depth", required_argument, NULL, OPT_DEPTH_N },
		{ "max-nodes", required_argument, NULL, OPT_MAX_NODES },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sysroot = NULL, *root = NULL, *file, *path_opt = NULL;
	enum cgout_format fmt = CGOUT_TEXT;
	unsigned opts = CGOUT_DEMANGLE;
	uint32_t depth = CALLGRAPH_DEPTH, max_nodes = CALLGRAPH_MAX_NODES;
	bool libs = false, paths = false;
	struct cg_set s;
	char err[512];
	int c, r, code = LP_EXIT_OK;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LIBS:
			libs = true;
			break;
		case OPT_SYSROOT:
			sysroot = optarg;
			break;
		case OPT_FORMAT:
			if (cgout_parse_format(optarg, &fmt)) {
				fprintf(stderr, "layerprof callgraph: invalid --format '%s': text, dot or json\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case OPT_NO_DEMANGLE:
			opts &= ~(unsigned)CGOUT_DEMANGLE;
			break;
		case OPT_PATHS:
			paths = true;
			break;
		case OPT_ROOT:
			root = optarg;
			path_opt = "--root";
			break;
		case OPT_DEPTH_N:
			if (!parse_count("--depth", optarg, 0, UINT32_MAX - 1, &depth))
				return LP_EXIT_USAGE;
			path_opt = "--depth";
			break;
		case OPT_MAX_NODES:
			if (!parse_count("--max-nodes", optarg, 1, CALLGRAPH_MAX_NODES_LIMIT, &max_nodes))
				return LP_EXIT_USAGE;
			path_opt = "--max-nodes";
			break;
		case 'h':
			fputs(callgraph_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(callgraph_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (path_opt && !paths) {
		fprintf(stderr, "layerprof callgraph: %s is for --paths\n", path_opt);
		return LP_EXIT_USAGE;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "layerprof callgraph: %s\n", argc - optind ? "too many operands" : "which file?");
		fputs(callgraph_usage, stderr);
		return LP_EXIT_USAGE;
	}
	file = argv[optind];
	if (libs)
		opts |= CGOUT_ALL;
	if (cg_set_init(&s, sysroot)) {
		fprintf(stderr, "layerprof callgraph: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	err[0] = '\0';
	r = cg_set_add(&s, file, NULL, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof callgraph: cannot read '%s': %s\n", file, err[0] ? err : strerror(-r));
		code = LP_EXIT_FAILURE;
		goto out;
	}
	if (libs) {
		r = cg_set_add_needed(&s);
		if (r) {
			fprintf(stderr, "layerprof callgraph: cannot read the libraries of '%s': %s\n", file,
			        strerror(-r));
			code = LP_EXIT_FAILURE;
			goto out;
		}
		cg_set_link(&s);
	}
	if (paths)
		code = print_paths(&s, root, depth, max_nodes, libs, fmt, opts);
	else
		code = output_done(cgout_graph(stdout, &s, fmt, opts));
out:
	cg_set_release(&s);
	return code;
}

#else

int cmd_callgraph(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "layerprof callgraph: built without capstone (install libcapstone-dev and rebuild)\n");
	return LP_EXIT_FAILURE;
}

#endif
