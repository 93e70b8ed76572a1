/* layerprof: the host command.  Dispatches to one file per subcommand. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/exepath.h"
#include "host/builtin.h"
#include "host/energy.h"
#include "host/oscal.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/options.h"
#include "lp_version.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", cmd_record, "run a program and record its function calls into a trace" },
	{ "recover", cmd_recover, "finish the trace of a recorder that was killed, from its rings" },
	{ "report", cmd_report, "flat profile: calls, total, self, avg, min, max per function" },
	{ "tree", cmd_tree, "call tree with inclusive/self time and calls per node" },
	{ "replay", cmd_replay, "chronological entries and exits per thread, with durations" },
	{ "flow", cmd_flow, "one call across the layers: its calls, syscalls and kernel events" },
	{ "dump", cmd_dump, "write a trace as Chrome trace JSON or folded stacks" },
	{ "live", cmd_live, "profile a program on a target through its agent, live" },
	{ "config", cmd_config, "print what a build needs: --wrap-flags for the memory tracer" },
	{ "snapshot", cmd_snapshot, "the heap state of a trace at one moment, to a file" },
	{ "memdiff", cmd_memdiff, "what grew on the heap between two snapshots, per call site" },
	{ "serve", cmd_serve, "web UI: a trace (or a live session) in a browser" },
	{ "callgraph", cmd_callgraph, "the static call graph of a binary, and its possible call paths" },
	{ "coverage", cmd_coverage, "a trace against its binaries' static call graph: what never ran" },
	{ "energy", cmd_energy, "power sources, and a model of energy from event counts: train, check" },
	{ "tune", cmd_tune, "search a program's parameters for the best time or energy" },
	{ "oscal", cmd_oscal, "OS and C-library call timing: measure, model, report, compare platforms" },
	{ "estimate", cmd_estimate, "a program's run time on a characterised platform, from its trace" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))
/* Longest word command_distance measures; longer ones suggest nothing. */
#define COMMAND_NAME_MAX 32

/* The edit distance of a and b: insertions, deletions, substitutions and
 * swaps of two neighbours ("reprot" is one from "report"). */
static size_t command_distance(const char *a, const char *b)
{
	size_t d[COMMAND_NAME_MAX + 1][COMMAND_NAME_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, k;

	if (la > COMMAND_NAME_MAX || lb > COMMAND_NAME_MAX)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (k = 0; k <= lb; k++)
		d[0][k] = k;
	for (i = 1; i <= la; i++) {
		for (k = 1; k <= lb; k++) {
			size_t best = d[i - 1][k - 1] + (a[i - 1] != b[k - 1]);

			if (d[i - 1][k] + 1 < best)
				best = d[i - 1][k] + 1;
			if (d[i][k - 1] + 1 < best)
				best = d[i][k - 1] + 1;
			if (i > 1 && k > 1 && a[i - 1] == b[k - 2] && a[i - 2] == b[k - 1] &&
			    d[i - 2][k - 2] + 1 < best)
				best = d[i - 2][k - 2] + 1;
			d[i][k] = best;
		}
	}
	return d[la][lb];
}

/* The command a mistyped word most likely meant: the nearest by edit
 * distance, at most a third of its length away (at least 1, at most 2),
 * and only when no other command is as near.  NULL when none is. */
static const char *command_suggest(const char *word)
{
	size_t best = SIZE_MAX, limit = strlen(word) / 3, i, d;
	const char *found = NULL;

	if (limit < 1)
		limit = 1;
	if (limit > 2)
		limit = 2;
	for (i = 0; i < NCOMMANDS; i++) {
		d = command_distance(word, commands[i].name);
		if (d < best) {
			best = d;
			found = commands[i].name;
		} else if (d == best) {
			found = NULL; /* two as near: no guess */
		}
	}
	return best <= limit ? found : NULL;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: layerprof [--version] [--help] <command> [<args>]\n\ncommands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'layerprof <command> --help' describes a command.\n");
}

void layerprof_warn(void *cmd, const char *msg)
{
	fprintf(stderr, "layerprof %s: %s\n", (const char *)cmd, msg);
}

int layerprof_filter_parse(struct filter_opts *f, int code, const char *arg, const char *cmd)
{
	char err[LP_ERROR_MAX];
	int r = options_filter_parse(f, code, arg, err, sizeof(err));

	if (r < 0)
		layerprof_warn((void *)cmd, err);
	return r;
}

int layerprof_trace_condition(const struct walk *w, const char *cmd)
{
	const struct lp_warner warn = { layerprof_warn, (void *)cmd };
	char err[LP_ERROR_MAX];

	if (walk_condition(w, &warn, err, sizeof(err))) {
		layerprof_warn((void *)cmd, err);
		return LP_EXIT_TRACE;
	}
	return LP_EXIT_OK;
}

const char *layerprof_exe_dir(void)
{
	static char dir[PATH_MAX];

	if (!dir[0])
		exepath_dir(dir, sizeof(dir));
	return dir;
}

/* walk_set_progress's hook: a percentage that rewrites itself on the
 * terminal, erased when the pass is over. */
static void show_progress(const char *dir, int percent)
{
	if (percent < 0)
		fprintf(stderr, "\r%*s\r", (int)strlen(dir) + 16, "");
	else
		fprintf(stderr, "\rreading %s: %3d%%", dir, percent);
}

int main(int argc, char **argv)
{
	const char *guess;
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return LP_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return LP_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("layerprof %s\n", LP_VERSION);
		return LP_EXIT_OK;
	}
	if (isatty(STDERR_FILENO))
		walk_set_progress(show_progress);
	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	guess = command_suggest(argv[1]);
	if (guess) {
		fprintf(stderr, "layerprof: '%s' is not a layerprof command; did you mean '%s'?\n", argv[1], guess);
		return LP_EXIT_USAGE;
	}
	fprintf(stderr, "layerprof: '%s' is not a layerprof command\n", argv[1]);
	usage(stderr);
	return LP_EXIT_USAGE;
}
