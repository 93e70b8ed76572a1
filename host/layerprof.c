/* layerprof: the host command.  Dispatches to one file per subcommand. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/builtin.h"

#define LAYERPROF_VERSION "0.1.0"

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
	{ "dump", cmd_dump, "write a trace as Chrome trace JSON or folded stacks" },
	{ "live", cmd_live, "profile a program on a target through its agent, live" },
	{ "config", cmd_config, "print what a build needs: --wrap-flags for the memory tracer" },
	{ "snapshot", cmd_snapshot, "the heap state of a trace at one moment, to a file" },
	{ "memdiff", cmd_memdiff, "what grew on the heap between two snapshots, per call site" },
	{ "serve", cmd_serve, "web UI: a trace (or a live session) in a browser" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: layerprof [--version] [--help] <command> [<args>]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'layerprof <command> --help' describes a command.\n");
}

const char *layerprof_exe_dir(void)
{
	static char dir[PATH_MAX];
	ssize_t n;
	char *slash;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return "";
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return dir;
}

int main(int argc, char **argv)
{
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
		printf("layerprof %s\n", LAYERPROF_VERSION);
		return LP_EXIT_OK;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "layerprof: '%s' is not a layerprof command\n", argv[1]);
	usage(stderr);
	return LP_EXIT_USAGE;
}
