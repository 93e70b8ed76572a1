/* layerprof oscal: OS and C-library call timing (paper 004), one command
 * with four subcommands: run (oscal-run.c; the suite as a child and list
 * in oscal-suite.c), report (oscal-report.c,
 * its HTML page in oscal-html.c), compare (oscal-compare.c), dispatched by
 * builtin-oscal.c, which also holds what they share: finding
 * layerprof-oscal, reading a calibration, the --calls patterns, option
 * values, output files.  Messages go to stderr as "layerprof oscal: ...";
 * the subcommands return the exit code (host/builtin.h). */
#ifndef LP_HOST_OSCAL_H
#define LP_HOST_OSCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#include "host/lib/oscal/oscal.h"

/* The command of the table in layerprof.c: argv[0] is "oscal". */
int cmd_oscal(int argc, char **argv);
/* The subcommands: argv[0] is the subcommand's name. */
int oscal_run_cmd(int argc, char **argv);
int oscal_list_cmd(int argc, char **argv);
int oscal_report_cmd(int argc, char **argv);
int oscal_compare_cmd(int argc, char **argv);

/* The path of layerprof-oscal in $LAYERPROF_OSCAL overrides where it is
 * looked for (a cross-built suite run under --runner, another tree). */
#define OSCAL_SUITE_ENV "LAYERPROF_OSCAL"
/* The calibration run writes when -o is not given. */
#define OSCAL_DEFAULT_FILE "oscal.cal"

/* Finds layerprof-oscal: $LAYERPROF_OSCAL, else beside the running
 * layerprof (installed: <prefix>/bin), else in the build tree
 * (build/oscal beside build/host).  Writes its path into out (PATH_MAX
 * bytes).  Returns 0 or -errno (the message is the caller's). */
int oscal_suite_path(char *out);

/* ------------------------------------------------------------ the suite as a child (oscal-suite.c) */

/* Words of --runner, at most. */
#define OSCAL_RUNNER_WORDS 32u

/* layerprof-oscal and the runner it runs under. */
struct oscal_suite {
	char path[PATH_MAX];
	char runner_buf[1024];
	char *runner[OSCAL_RUNNER_WORDS + 1]; /* the words, in runner_buf */
	uint32_t nrunner;
};

/* An entry of the suite's --list. */
struct oscal_listed {
	char name[OSCAL_NAME_MAX];
	char call[OSCAL_NAME_MAX];
	char rest[OSCAL_TEXT_MAX + 4 * OSCAL_NAME_MAX]; /* cond group param unit description */
};

/* Splits runner (NULL: none) into its words (at spaces and tabs; no
 * shell) and finds the suite (oscal_suite_path).  Returns 0, or the exit
 * code after the message (LP_EXIT_USAGE: a bad runner). */
int oscal_suite_init(struct oscal_suite *s, const char *runner);
/* Starts the runner's words, the suite and args (NULL-terminated) in a
 * process group of its own (SIGINT, SIGTERM, SIGPIPE at their defaults,
 * stdin /dev/null), its stdout into *fd (the caller closes it).  Returns
 * the pid, or -errno after the message. */
pid_t oscal_suite_spawn(const struct oscal_suite *s, char *const *args, int *fd);
/* Waits for pid (EINTR retried).  Returns its wait status. */
int oscal_suite_reap(pid_t pid);
/* Says how the suite ended when that was not exit 0.  Returns 0 when it
 * was, else -EIO after the message. */
int oscal_suite_status_bad(const struct oscal_suite *s, int status);
/* Runs the suite's --list and keeps the entries the --calls patterns take
 * (NULL: all), in its order: *out (the caller frees it), *n.  Returns 0,
 * or -errno after the message (-ENOENT: none matches). */
int oscal_suite_list(const struct oscal_suite *s, const char *calls, struct oscal_listed **out, uint32_t *n);
/* The entries of a --list's text (cut into lines in place) that the
 * --calls patterns take, as oscal_suite_list gives them; who names the
 * suite in messages (the agent's, for run --connect).  Returns 0, or
 * -errno after the message (-ENOENT: none matches). */
int oscal_listed_parse(char *text, const char *who, const char *calls, struct oscal_listed **out, uint32_t *n);

/* ------------------------------------------------------------ the calibration file run writes (builtin-oscal.c) */

/* Whether an existing path may be replaced by a calibration: its
 * directory writable and the path absent, empty, or a regular file that
 * is a calibration (a link, a directory, another file are refused).
 * Returns 0 or -errno after the message. */
int oscal_file_check(const char *path);
/* Writes cal to path: an exclusive temporary beside it, renamed over it
 * (a link there is replaced, never followed).  Returns 0 or -errno after
 * the message. */
int oscal_file_write(const struct oscal_cal *cal, const char *path);

/* The output formats of report, compare and run's summary. */
enum oscal_format {
	OSCAL_FMT_TEXT = 0,
	OSCAL_FMT_JSON,
	OSCAL_FMT_HTML,
};

/* --format's value: 0, or -EINVAL after the message (html only when
 * html_ok). */
int oscal_parse_format(const char *arg, bool html_ok, enum oscal_format *out);
/* Option values: 0, or -EINVAL after printing "layerprof oscal: invalid
 * OPT 'ARG': ..." on stderr. */
int oscal_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out);
int oscal_parse_f64(const char *opt, const char *arg, double min, double max, double *out);

/* Whether the comma-separated fnmatch patterns (NULL or "": all) take an
 * entry of this name or call. */
bool oscal_calls_match(const char *patterns, const char *name, const char *call);

/* Reads the calibration at path into cal (oscal_cal_read, then
 * oscal_cal_analyse when the file holds no models).  Returns 0 or -errno
 * after the message "layerprof oscal: ..." (cal released). */
int oscal_load(const char *path, struct oscal_cal *cal);

/* Opens the output of report and compare: stdout when path is NULL or
 * "-", else outfile_open's file.  NULL after the message. */
FILE *oscal_output_open(const char *path);
/* Closes what oscal_output_open gave (flushes stdout).  Returns 0, or
 * -EIO after the message naming path. */
int oscal_output_close(FILE *f, const char *path);

/* Times in ns for a table: "0.84", "23.5", "1203", "87262"; "-" for NaN. */
const char *oscal_fmt_ns(double ns, char *buf, size_t size);
/* The model as one line: "constant 1203 ns", "linear 0.052 ns/B x bytes +
 * 310 ns", "piecewise 2", "none". */
const char *oscal_model_text(const struct oscal_entry *e, char *buf, size_t size);
/* One piece of a model: "0.052 ns/B x bytes + 310 ns" (x: U+00D7), "7 ns"
 * when its slope is 0. */
const char *oscal_piece_text(const struct oscal_entry *e, const struct oscal_piece *p, char *buf, size_t size);
/* The outlier rule and the fitting procedure, said in one line each (the
 * reports' headers). */
extern const char oscal_outlier_rule[];

/* oscal-report.c: the text report's first lines (the file, machine,
 * clock, settings, outlier rule, threshold, entries), which run prints
 * too. */
void oscal_report_header(FILE *f, const struct oscal_cal *c, const char *path);

/* oscal-html.c: the report as one self-contained page.  Returns 0 or
 * -EIO. */
int oscal_html_write(FILE *f, const struct oscal_cal *cal, const char *path, const char *calls);

#endif
