/* The host's side of OSCAL (docs/protocol.md): the OS-call timing suite
 * layerprof-oscal run by an agent on its device, its output lines handed
 * to the caller as a local run's would be (`layerprof oscal run
 * --connect`).  Connects and authenticates as `layerprof live` does
 * (netclient_open).  Not thread-safe. */
#ifndef LP_OSCALREMOTE_H
#define LP_OSCALREMOTE_H

#include <signal.h>
#include <stddef.h>

#include "host/lib/util/error.h"

/* The longest line of the suite's output taken (a sample line holds
 * every repetition of one parameter value). */
#define OSCAL_REMOTE_LINE_MAX (8u << 20)
/* The OSCAL frame's options, at most (the agent's bound). */
#define OSCAL_REMOTE_REQUEST_MAX 65536u

struct oscal_remote_opts {
	const char *addr;       /* the agent: HOST:PORT, [IPV6]:PORT or unix:PATH */
	const char *token_file; /* its token (first line of the file), or NULL */
	struct lp_warner warn;  /* warnings while connecting (a token file others may read) */
	/* NULL, or a flag a signal handler sets: once nonzero, the run is
	 * given up (the agent stops the suite) and -EINTR returned.  Looked
	 * at every OSCAL_REMOTE_TICK_MS at least. */
	const volatile sig_atomic_t *stop;
};

#define OSCAL_REMOTE_TICK_MS 200

/* Runs the suite on the agent at o->addr (live's connection and
 * authentication rules) with the suite arguments args (NULL-terminated,
 * only --calls/--quick/--reps/--warmup/--skip, each value as the next
 * argument or after '=', and --list: the entries alone), calling line(ctx, text) for each output line
 * (text without its '\n', valid during the call).  A nonzero return of
 * line (a negative errno, the caller's message kept by the caller) ends
 * the run there (the agent stops the suite) and is returned.
 * Returns the suite's exit status (0..255; 128 + N when signal N ended
 * it), with err holding the last line the suite wrote on stderr ("" when
 * none); or -errno with err: -EINVAL a bad argument, -EACCES the token
 * file or the agent refused the connection, -EOPNOTSUPP an agent without
 * the capability `oscal`, -EBUSY the agent runs the suite for another
 * request, -ENOENT the agent has no suite, -EINTR o->stop was set,
 * -ETIMEDOUT the agent stopped answering, -ECONNRESET it closed the
 * connection, other codes when connecting failed. */
int oscal_remote_run(const struct oscal_remote_opts *o, char *const *args, int (*line)(void *ctx, const char *text),
                     void *ctx, char *err, size_t errlen);

#endif
