/* What the subcommands that read a trace share: their filter options, the
 * trace operand and opening the trace, each with the same messages and
 * exit codes (see builtin.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/exepath.h"
#include "host/builtin.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/options.h"

#define BUILTIN_ERR_MAX 512u

bool builtin_filter_option(struct filter_opts *f, int code, const char *arg, const char *cmd, const char *usage)
{
	int r = layerprof_filter_parse(f, code, arg, cmd);

	if (r == 0)
		fputs(usage, stderr);
	return r == 1;
}

int builtin_trace_operand(const char *cmd, int argc, char **argv, int first, const char **dir)
{
	if (first < argc)
		*dir = argv[first++];
	if (first < argc) {
		fprintf(stderr, "layerprof %s: one trace at a time ('%s' is extra)\n", cmd, argv[first]);
		return LP_EXIT_USAGE;
	}
	return LP_EXIT_OK;
}

int builtin_trace_open(const char *cmd, struct walk *w, const char *dir, const struct filter_opts *fopts)
{
	char err[BUILTIN_ERR_MAX];
	int r = walk_open(w, dir, fopts, err, sizeof(err));

	if (!r)
		return LP_EXIT_OK;
	fprintf(stderr, "layerprof %s: %s\n", cmd, err);
	return r == -ENOMEM ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
}

static void subcommand_usage(FILE *f, const char *cmd, const char *intro, const struct builtin_sub *subs, size_t n)
{
	fprintf(f, "usage: layerprof %s <subcommand> [<args>]\n\n%s\nsubcommands:\n", cmd, intro);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-8s %s\n", subs[i].name, subs[i].summary);
	fprintf(f, "\n'layerprof %s <subcommand> --help' describes one.\n", cmd);
}

int builtin_subcommand(const char *cmd, const char *intro, const struct builtin_sub *subs, size_t n, int argc,
                       char **argv)
{
	size_t i;

	if (argc < 2) {
		subcommand_usage(stderr, cmd, intro, subs, n);
		return LP_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		subcommand_usage(stdout, cmd, intro, subs, n);
		return LP_EXIT_OK;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(argv[1], subs[i].name))
			return subs[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "layerprof %s: '%s' is not a%s %s subcommand (", cmd, argv[1],
	        strchr("aeiou", cmd[0]) ? "n" : "", cmd);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", subs[i].name);
	fprintf(stderr, ")\n");
	return LP_EXIT_USAGE;
}

int builtin_program_path(const char *env, const char *const *rel, size_t n, char *out)
{
	const char *path = getenv(env);

	if (path && *path) {
		if (access(path, X_OK))
			return -errno;
		if (strlen(path) >= PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(out, path, strlen(path) + 1);
		return 0;
	}
	return exepath_find(layerprof_exe_dir(), rel, n, out);
}
