/* Option values shared by the subcommands: filters, durations, sizes. */
#ifndef LP_OPTIONS_H
#define LP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPTIONS_PATTERNS_MAX 64
#define OPTIONS_TIDS_MAX 256

/* -F/--only, -N/--exclude, --depth, --min-time, --tid */
struct filter_opts {
	const char *only[OPTIONS_PATTERNS_MAX];
	/* the option that gave each: "-F" (options_filter_parse), or what the
	 * command sets instead ("--focus"), for messages */
	const char *only_opt[OPTIONS_PATTERNS_MAX];
	size_t n_only;
	const char *exclude[OPTIONS_PATTERNS_MAX];
	size_t n_exclude;
	uint32_t depth;
	uint64_t min_ns;
	uint32_t tids[OPTIONS_TIDS_MAX];
	size_t n_tids;
};

/* The getopt_long codes of the filter options; the subcommands put
 * FILTER_LONG_OPTIONS in their option tables and pass every code they do
 * not know to options_filter_parse. */
enum filter_opt_code {
	OPT_ONLY = 'F',
	OPT_EXCLUDE = 'N',
	OPT_DEPTH = 0x1000,
	OPT_MIN_TIME,
	OPT_TID,
};

#define FILTER_LONG_OPTIONS                                                                                         \
	{ "only", required_argument, NULL, OPT_ONLY }, { "exclude", required_argument, NULL, OPT_EXCLUDE },         \
	    { "depth", required_argument, NULL, OPT_DEPTH }, { "min-time", required_argument, NULL, OPT_MIN_TIME }, \
	{                                                                                                           \
		"tid", required_argument, NULL, OPT_TID                                                             \
	}

/* The filters of calls (record takes these; thread ids are not known
 * before a program runs), then all of them. */
#define FILTER_HELP_FUNCS                                                               \
	"  -F, --only FUNC       only calls inside FUNC (glob; repeatable)\n"           \
	"  -N, --exclude FUNC    leave out FUNC and what it calls (glob; repeatable)\n" \
	"      --depth N         only calls up to N levels deep\n"                      \
	"      --min-time DUR    leave out calls shorter than DUR (e.g. 10us, 2ms, 500ns)\n"
#define FILTER_HELP FILTER_HELP_FUNCS "      --tid TID[,TID]   only these threads\n"

/* Returns 1 when `code` was a filter option (parsed into *f), 0 when it is
 * not one, -EINVAL for a bad value (err says which). */
int options_filter_parse(struct filter_opts *f, int code, const char *arg, char *err, size_t errlen);
bool options_filter_any(const struct filter_opts *f);

/* "10ns", "1.5us", "2ms", "1s" -> ns; a number needs its unit ("0" does
 * not).  Returns 0 or -EINVAL. */
int options_parse_duration(const char *s, uint64_t *ns);
/* What is wrong with a duration options_parse_duration refused, for a message:
 * the units to choose from when s is a bare number, else an example.
 * Writes into buf and returns it. */
const char *options_duration_hint(const char *s, char *buf, size_t size);
/* "4096", "64K", "4M", "1G" -> bytes.  Returns 0 or -EINVAL. */
int options_parse_size(const char *s, uint64_t *bytes);
/* Text output (tree, replay) indents a call by two columns per level up to
 * this many levels; deeper calls keep that indentation and say their level,
 * so that deep recursion does not make lines of megabytes. */
#define TEXT_INDENT_LEVELS 64u
/* The indentation of a call at depth (0: a root) in columns, and in mark
 * what goes before its name: "" or "[depth N] " (N counted from 1, as
 * --depth counts).  mark holds at least 32 bytes. */
int options_indent(uint32_t depth, char *mark, size_t size);
/* Formats ns for people: "123 ns", "4.567 us", "1.234 ms", "2.345 s". */
const char *options_format_duration(uint64_t ns, char *buf, size_t size);

#endif
