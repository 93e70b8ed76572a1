/* The subcommands of the layerprof command, one file each. */
#ifndef LP_BUILTIN_H
#define LP_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>
#include "host/lib/util/error.h"

struct filter_opts;
struct walk;

/* Exit codes shared by the subcommands. */
enum lp_exit {
	LP_EXIT_OK = 0,
	LP_EXIT_FAILURE = 1, /* could not do the work (I/O, resources) */
	LP_EXIT_USAGE = 2,   /* bad command line */
	LP_EXIT_TRACE = 3,   /* trace missing, empty, not a trace, wrong version, damaged */
};

int cmd_record(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_live(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_memdiff(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_flow(int argc, char **argv);
int cmd_callgraph(int argc, char **argv);
int cmd_coverage(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_estimate(int argc, char **argv);

/* A struct lp_warner fn (host/lib/util/error.h) whose ctx is the command's
 * name ("live"): prints msg as "layerprof <cmd>: <msg>" on stderr, as the
 * commands print every message of host/lib. */
void layerprof_warn(void *cmd, const char *msg);
/* Prints the condition of the trace w walked (walk_condition: warnings,
 * damage) for cmd and returns the exit code it means: 0, or LP_EXIT_TRACE
 * when the trace is damaged. */
int layerprof_trace_condition(const struct walk *w, const char *cmd);
/* options_filter_parse with its message printed for cmd: 1, 0, or -EINVAL
 * after printing. */
int layerprof_filter_parse(struct filter_opts *f, int code, const char *arg, const char *cmd);

/* The directory of the running layerprof executable (for finding the
 * runtime library).  Returns "" when unknown. */
const char *layerprof_exe_dir(void);

/* builtin-common.c: what the subcommands that read a trace share.  The
 * default: of their option switch; whether code was a filter option
 * (parsed into *f).  When it was not one, prints usage to stderr; after a
 * bad value, the message layerprof_filter_parse printed stands alone. */
bool builtin_filter_option(struct filter_opts *f, int code, const char *arg, const char *cmd, const char *usage);
/* Takes the one trace operand argv[first] (when there is one) into *dir,
 * which keeps its default otherwise.  Returns LP_EXIT_OK, or LP_EXIT_USAGE
 * after saying which operand is extra. */
int builtin_trace_operand(const char *cmd, int argc, char **argv, int first, const char **dir);

/* A subcommand of a command that has several (energy, oscal). */
struct builtin_sub {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0] is the subcommand's name */
	const char *summary;
};
/* Runs the subcommand argv[1] of cmd ("energy") among subs[0..n).  For
 * --help, -h or help prints the usage (intro, the subcommands with their
 * summaries) on stdout and returns LP_EXIT_OK; without a subcommand prints
 * it on stderr, and for an unknown one says so in one line: LP_EXIT_USAGE. */
int builtin_subcommand(const char *cmd, const char *intro, const struct builtin_sub *subs, size_t n, int argc,
                       char **argv);
/* A program layerprof runs (layerprof-work, layerprof-oscal): the path in
 * the environment variable env when it is set (it must be executable),
 * else the first of rel[0..n) beside the running layerprof that exists
 * (exepath_find).  Writes it into out (PATH_MAX bytes).  Returns 0 or
 * -errno (the message is the caller's). */
int builtin_program_path(const char *env, const char *const *rel, size_t n, char *out);
/* walk_open with the subcommand's message on failure.  Returns LP_EXIT_OK,
 * LP_EXIT_TRACE (missing, empty, damaged, another version) or
 * LP_EXIT_FAILURE (out of memory). */
int builtin_trace_open(const char *cmd, struct walk *w, const char *dir, const struct filter_opts *fopts);

#endif
