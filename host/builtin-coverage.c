/* layerprof coverage: a trace set beside the static call graph of the
 * binaries it ran: functions and calls that ran or never ran, calls
 * outside the graph, and the possible call paths with those that ran. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"

#ifdef LP_HAVE_CAPSTONE
#include "host/lib/callgraph/coverage.h"
#include "host/lib/util/error.h"

static const char coverage_usage[] =
    "usage: layerprof coverage [options] [<trace dir>]\n"
    "\n"
    "Sets a trace (default layerprof.data; from -finstrument-functions or record\n"
    "--dynamic) beside the static call graph of every binary it ran code of: per\n"
    "object the functions and static calls that ran, with percentages; the\n"
    "functions that never ran, largest first; the calls that ran but are not in\n"
    "the static graph (function pointers, callbacks, inlined callers).  See\n"
    "docs/coverage.md.\n"
    "\n"
    "      --paths           also the tree of possible call paths from the root,\n"
    "                        each marked with whether it ran and how often\n"
    "      --root NAME       the root of --paths (default main, else the entry point)\n"
    "      --depth N         levels of --paths below the root (default 8)\n"
    "      --max-nodes N     nodes of --paths at most (default 100000)\n"
    "      --sysroot DIR     read the binaries under DIR (a target's root file system)\n"
    "      --format FMT      text (default) or json\n"
    "      --no-demangle     C++ names as the symbol tables have them\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 1 a binary could not be read (what could be computed is\n"
    "still printed) or out of memory, 2 usage, 3 trace missing, empty, damaged or\n"
    "of another version.\n";

/* A number option's value: 1 to max. */
static int parse_count(const char *opt, const char *arg, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end || errno || v < 1 || v > max) {
		fprintf(stderr, "layerprof coverage: invalid %s '%s': a number from 1 to %u\n", opt, arg, max);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

int cmd_coverage(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "paths", no_argument, NULL, 'P' },
		{ "root", required_argument, NULL, 'r' },
		{ "depth", required_argument, NULL, 'd' },
		{ "max-nodes", required_argument, NULL, 'm' },
		{ "sysroot", required_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct lp_warner warn = { layerprof_warn, (void *)"coverage" };
	struct coverage_opts o = { .flags = COVERAGE_DEMANGLE, .warn = &warn };
	const char *dir = "layerprof.data";
	struct coverage *c = NULL;
	char err[LP_ERROR_MAX];
	bool json = false, path_opts = false;
	int ch, r, code;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'P':
			o.paths = true;
			break;
		case 'r':
			o.root = optarg;
			path_opts = true;
			break;
		case 'd':
			if (parse_count("--depth", optarg, 1000000, &o.depth))
				return LP_EXIT_USAGE;
			path_opts = true;
			break;
		case 'm':
			if (parse_count("--max-nodes", optarg, 100000000, &o.max_nodes))
				return LP_EXIT_USAGE;
			path_opts = true;
			break;
		case 's':
			o.sysroot = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof coverage: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'D':
			o.flags &= ~COVERAGE_DEMANGLE;
			break;
		case 'h':
			fputs(coverage_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(coverage_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (path_opts && !o.paths) {
		fprintf(stderr, "layerprof coverage: --root, --depth and --max-nodes go with --paths\n");
		return LP_EXIT_USAGE;
	}
	if (builtin_trace_operand("coverage", argc, argv, optind, &dir))
		return LP_EXIT_USAGE;
	r = coverage_build(dir, &o, &c, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof coverage: %s\n", err);
		if (r == -EINVAL)
			return LP_EXIT_USAGE; /* --root names no function of the program */
		return r == -ENOMEM || r == -E2BIG ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
	}
	r = json ? coverage_write_json(stdout, c) : coverage_write_text(stdout, c);
	code = coverage_unread(c) ? LP_EXIT_FAILURE : LP_EXIT_OK;
	if (r || fflush(stdout)) {
		fprintf(stderr, "layerprof coverage: cannot write the output: %s\n", strerror(r ? -r : errno));
		code = LP_EXIT_FAILURE;
	} else if (coverage_condition(c, err, sizeof(err))) {
		fprintf(stderr, "layerprof coverage: %s\n", err);
		code = LP_EXIT_TRACE;
	}
	coverage_free(c);
	return code;
}

#else

int cmd_coverage(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "layerprof coverage: built without capstone (install libcapstone-dev and rebuild)\n");
	return LP_EXIT_FAILURE;
}

#endif
