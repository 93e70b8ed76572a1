/* What the subcommands that read a trace share: their filter options, the
 * trace operand and opening the trace, each with the same messages and
 * exit codes (see builtin.h). */
#include <errno.h>
#include <stdio.h>

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
