/* The options of a live session that `layerprof live` and `layerprof serve
 * --connect` share: the agent, the target (a program to start or a
 * process to attach), and what is traced besides functions (system calls,
 * heap operations, the UDP channel).  One parser and one set of rules, so
 * the two commands take the same words and refuse the same combinations. */
#ifndef LP_LIVEOPTS_H
#define LP_LIVEOPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/memopts.h"

struct livesession;

/* getopt_long codes of the shared long options (above the filters' codes,
 * options.h).  The commands map their own short options to these. */
enum liveopt_code {
	LIVEOPT_CONNECT = 0x1100,
	LIVEOPT_ATTACH,
	LIVEOPT_STOPPED,
	LIVEOPT_UDP,
	LIVEOPT_SYSCALLS,
	LIVEOPT_SYSCALL_FILTER,
	LIVEOPT_MEMORY,
	LIVEOPT_MEM_DEPTH,
	LIVEOPT_KEEP_ALIVE,
	LIVEOPT_MEM_FOLD,
	LIVEOPT_KERNEL,
	LIVEOPT_KERNEL_FILTER,
	LIVEOPT_KERNEL_FUNCTIONS,
	LIVEOPT_KERNEL_SYSTEM,
	LIVEOPT_DYNAMIC,
	LIVEOPT_LIBCALLS,
};

#define LIVEOPTS_LONG_OPTIONS                                                                                         \
	{ "connect", required_argument, NULL, LIVEOPT_CONNECT },                                                      \
	    { "attach", required_argument, NULL, LIVEOPT_ATTACH }, { "stopped", no_argument, NULL, LIVEOPT_STOPPED }, \
	    { "udp", no_argument, NULL, LIVEOPT_UDP }, { "syscalls", optional_argument, NULL, LIVEOPT_SYSCALLS },     \
	    { "syscall-filter", required_argument, NULL, LIVEOPT_SYSCALL_FILTER },                                    \
	    { "memory", no_argument, NULL, LIVEOPT_MEMORY },                                                          \
	    { "mem-depth", required_argument, NULL, LIVEOPT_MEM_DEPTH },                                              \
	    { "mem-fold", required_argument, NULL, LIVEOPT_MEM_FOLD },                                                \
	    { "kernel", optional_argument, NULL, LIVEOPT_KERNEL },                                                    \
	    { "kernel-filter", required_argument, NULL, LIVEOPT_KERNEL_FILTER },                                      \
	    { "kernel-functions", required_argument, NULL, LIVEOPT_KERNEL_FUNCTIONS },                                \
	    { "kernel-system", no_argument, NULL, LIVEOPT_KERNEL_SYSTEM },                                            \
	    { "dynamic", optional_argument, NULL, LIVEOPT_DYNAMIC },                                                  \
	    { "libcalls", no_argument, NULL, LIVEOPT_LIBCALLS },                                                      \
	{                                                                                                             \
		"keep-alive", no_argument, NULL, LIVEOPT_KEEP_ALIVE                                                   \
	}

struct liveopts {
	const char *connect;    /* HOST:PORT of the agent */
	const char *token_file; /* the agent's token, or NULL */
	long attach_pid;        /* 0: start argv */
	char **argv;            /* the program to start (borrowed) */
	int argc;
	bool stopped, udp;
	const char *syscalls; /* backend, or NULL: no syscall tracing */
	const char *syscall_filter;
	struct memopts mem; /* --memory, --mem-depth, --keep-alive, --mem-fold */
	const char *kernel; /* --kernel: "default" or the tracepoints; NULL: none */
	const char *kernel_filter;
	const char *kernel_functions;
	bool kernel_system;  /* --kernel-system: other processes' kernel events too */
	const char *dynamic; /* --dynamic: "all" or function globs; NULL: none */
	bool libcalls;       /* --libcalls: calls through the program's PLT too */
	bool any;            /* an option other than --connect was given */
};

void liveopts_init(struct liveopts *o);
/* Parses a shared option (code c, argument arg).  Returns 1 when parsed, 0
 * when c is not a shared option, -EINVAL with err saying why the value is
 * bad. */
int liveopts_parse(struct liveopts *o, int c, const char *arg, char *err, size_t errlen);
/* Checks the options together, with the program argv[0..argc) (argc 0:
 * none).  need_target: a program or --attach is required (serve's page
 * may pick one later).  Returns 0 or -EINVAL with err saying why. */
int liveopts_check(struct liveopts *o, char **argv, int argc, bool need_target, char *err, size_t errlen);
/* Sets the session's fields from the options. */
void liveopts_apply(const struct liveopts *o, struct livesession *ls);

/* Splits a command line into words: blanks (space, tab, CR, LF) separate,
 * 'single' and "double" quotes group and, with backslash, a backslash
 * outside single quotes takes the next character.  Writes the words into
 * buf (as big as line, which may be buf itself) and their starts into
 * words[max].  Returns the number of words or -EINVAL (an open quote, too
 * many words).  For the commands typed to `live` and the filter words the
 * web page sends. */
int liveopts_split_words(const char *line, char *buf, char **words, int max, bool backslash);

#endif
