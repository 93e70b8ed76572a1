/* `layerprof serve --connect`: a live session with an agent driven from
 * the web page.  The session (live/session.h) feeds the server's model as
 * chunks arrive; the page's control panel sends start, stop, filters, the
 * update period and the target (a program to start or a process to
 * attach) as POST /api/live/<command>; updates are pushed to the page as
 * server-sent events at the period the page set.  One thread (the
 * caller's) runs the session; the HTTP threads reach it under the
 * server's lock. */
#ifndef LP_SERVE_LIVE_H
#define LP_SERVE_LIVE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "host/lib/live/opts.h"
#include "host/lib/util/error.h"

struct servehttp;

#define SERVELIVE_DEFAULT_INTERVAL_NS 1000000000ull
#define SERVELIVE_MIN_INTERVAL_NS 100000000ull   /* 100 ms */
#define SERVELIVE_MAX_INTERVAL_NS 60000000000ull /* 1 min */
#define SERVELIVE_NOTES 8                        /* messages the page is shown */
#define SERVELIVE_ARGS_MAX 256                   /* arguments of a program started from the page */

struct servelive_opts {
	struct liveopts live; /* the agent, the target and what is traced */
	const char *save;     /* trace directory to write, or NULL */
	uint64_t interval_ns;
	bool any; /* a live option was given */
};

void servelive_opts_init(struct servelive_opts *o);
/* Parses a live option (getopt code c: live/opts.h's, 'A' the agent's token
 * file, 'o' --save, 'i' --interval).  Returns 1 when parsed, 0 when c
 * is not a live option, -EINVAL with err saying why the value is bad. */
int servelive_opts_parse(struct servelive_opts *o, int c, const char *arg, char *err, size_t errlen);
bool servelive_opts_any(const struct servelive_opts *o);
/* Checks the options together, with the program to start argv[0..argc).
 * Returns 0 or -EINVAL with err saying why. */
int servelive_opts_check(struct servelive_opts *o, char **argv, int argc, char *err, size_t errlen);

/* What servelive_run tells the command while it runs: say gets the
 * session's notes, warnings and errors as they come (for stderr); ready
 * is called once the page is served, with the server (its url and token)
 * and the agent's address and name. */
struct servelive_io {
	const struct lp_warner *say;
	void (*ready)(void *ctx, const struct servehttp *h, const char *peer, const char *agent);
	void *ctx;
};

/* Connects, serves the page on bind:port (token as servehttp_start) and
 * runs the session until *quit is set; the signals that set it are taken
 * only while waiting, with wait_mask (ppoll).  Returns 0 (the session
 * ended in order); -EINVAL when the agent's address is bad; else -ENOMEM
 * or -EIO, with err saying why when io->say has not said it already ("")
 * (err at least LP_ERROR_MAX bytes keeps every message whole). */
int servelive_run(const struct servelive_opts *o, const char *bind, unsigned port, const char *token,
                  volatile sig_atomic_t *quit, const sigset_t *wait_mask, const struct servelive_io *io, char *err,
                  size_t errlen);

#endif
