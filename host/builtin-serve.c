/* layerprof serve: the web UI.  Serves a page (compiled in) and a JSON API
 * answered from aggregates built in one pass over a trace, or fed by a
 * live session with an agent; see host/lib/serve_*.h. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/auth.h"
#include "host/builtin.h"
#include "host/lib/live/netclient.h"
#include "host/lib/serve/index.h"

#ifndef LP_HAVE_MICROHTTPD
int cmd_serve(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "layerprof serve: this layerprof was built without libmicrohttpd (install "
	                "libmicrohttpd-dev and build again)\n");
	return LP_EXIT_FAILURE;
}
#else
#include "host/lib/serve/http.h"
#include "host/lib/serve/live.h"
#include "host/lib/serve/model.h"

static const char serve_usage[] =
    "usage: layerprof serve [options] [<trace dir>]\n"
    "   or: layerprof serve [options] --connect HOST:PORT (-- <program> [<args>] | --attach PID)\n"
    "\n"
    "Serves the web UI for a trace (default layerprof.data): flat profile, call\n"
    "trees, flame graph, per-thread timeline, system calls and coverage against the\n"
    "binaries' static call graph, in a browser.  With --connect, a live session with\n"
    "an agent (layerprofd) instead: the page starts and stops tracing, sets filters\n"
    "and shows the profile as it grows.\n"
    "\n"
    "  -p, --port N          listen on port N (default 8642; 0: any free port)\n"
    "  -b, --bind ADDR       listen on ADDR (default 127.0.0.1); any address but\n"
    "                        loopback needs --token-file\n"
    "      --token-file F    require the token in F (first line) of every request:\n"
    "                        header " SERVEHTTP_TOKEN_HEADER ", or open /auth?token=... once;\n"
    "                        with --connect, the agent's token too\n"
    "  -c, --connect ADDR    live: the agent at HOST:PORT, [IPV6]:PORT or unix:PATH\n"
    "      --agent-token-file F  live: the agent's token, when not the same file\n"
    "      --attach PID      live: trace a running program instead of starting one\n"
    "      --stopped         live: start with tracing off (the page's Start turns it on)\n"
    "      --udp             live: receive the events by UDP (losses counted)\n"
    "      --syscalls[=HOW]  live: trace system calls too (auto, bpf, tracepoint, ptrace)\n"
    "      --syscall-filter LIST  live: only these syscalls (comma-separated, globs)\n"
    "      --kernel[=LIST]   live: record kernel events too (as record --kernel)\n"
    "      --kernel-filter F  live: an in-kernel filter for them\n"
    "      --kernel-functions LIST  live: kernel functions traced through kprobes too\n"
    "      --kernel-system   live: other processes' kernel events too, kept apart\n"
    "      --dynamic[=LIST]  live: a program built without instrumentation, its\n"
    "                        functions traced as record --dynamic does; with\n"
    "                        --attach, a running one's, by uprobes (agent as root)\n"
    "  -m, --memory          live: trace heap operations too (the Heap tab)\n"
    "      --mem-depth N     live, with --memory: frames per heap call stack (1-64)\n"
    "      --keep-alive      live, with --memory: an illegal free is recorded and not\n"
    "                        passed to libc\n"
    "      --mem-fold DUR    live, with --memory: blocks released within DUR are only\n"
    "                        counted per call stack (as record --mem-fold)\n"
    "  -i, --interval DUR    live: push updates to the page every DUR (default 1s)\n"
    "  -o, --save DIR        live: keep the session's trace in DIR (else in a temporary\n"
    "                        directory removed at exit; the exports read it)\n"
    "      --no-index        neither read nor write the trace's index (<trace dir>/" SERVEINDEX_FILE ")\n"
    "      --reindex         read the whole trace even when its index is current\n"
    "  -h, --help            this text\n"
    "\n"
    "The first serve of a trace reads every event once and keeps what the page\n"
    "needs in <trace dir>/" SERVEINDEX_FILE "; later ones start from it at once (it is\n"
    "rebuilt when the trace changes).\n"
    "\n"
    "Prints the page's address, then serves until interrupted (Ctrl-C).\n"
    "\n"
    "Exit status: 0 stopped by a signal, 1 failure (address in use, agent), 2 usage,\n"
    "3 trace missing, empty, not a trace or of another version.\n";

static volatile sig_atomic_t quit_signal;

static void on_signal(int sig)
{
	quit_signal = sig;
}

static int load_token(const char *path, char *token, size_t size)
{
	bool warn = false;
	int r = auth_token_load(path, token, size, &warn);

	if (r == -EINVAL) {
		fprintf(stderr, "layerprof serve: token file '%s' holds no usable token (one line of 1 to %u bytes)\n",
		        path, AUTH_TOKEN_MAX);
		return r;
	}
	if (r < 0) {
		fprintf(stderr, "layerprof serve: cannot read token file '%s': %s\n", path, strerror(-r));
		return r;
	}
	if (auth_token_weak(token, (size_t)r)) {
		fprintf(stderr,
		        "layerprof serve: the token in '%s' is too weak (%d characters, about %u bits; at least %u "
		        "characters and %u bits): make one with layerprof config --gen-token FILE\n",
		        path, r, auth_token_bits(token, (size_t)r), AUTH_TOKEN_MIN_LEN, AUTH_TOKEN_MIN_BITS);
		explicit_bzero(token, size);
		return -EINVAL;
	}
	if (warn)
		fprintf(stderr, "layerprof serve: warning: token file '%s' is readable by other users\n", path);
	return r;
}

static void print_url(const struct servehttp *h)
{
	if (h->token)
		printf("layerprof serve: %s  (token required: open %sauth?token=<the token> once)\n", h->url, h->url);
	else
		printf("layerprof serve: %s\n", h->url);
	fflush(stdout);
}

/* servelive_io.ready: the agent's and the page's addresses. */
static void on_live_ready(void *ctx, const struct servehttp *h, const char *peer, const char *agent)
{
	(void)ctx;
	printf("layerprof serve: live session with %s (%s)\n", peer, agent);
	print_url(h);
}

struct serve_opts {
	const char *bind;
	unsigned long port;
	const char *token_file;
	unsigned index_flags; /* enum servemodel_flags */
	struct servelive_opts live;
};

static int serve_trace(const char *dir, const struct serve_opts *o, const char *token, const sigset_t *wait_mask)
{
	struct servemodel m;
	struct servehttp h;
	char err[512];
	int r, code = LP_EXIT_OK;

	if (isatty(STDERR_FILENO))
		fprintf(stderr, "reading %s...\n", dir);
	r = servemodel_load(&m, dir, o->index_flags, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof serve: %s\n", err);
		servemodel_release(&m);
		return r == -ENOMEM ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
	}
	if (m.info.damaged)
		fprintf(stderr, "layerprof serve: trace '%s' is damaged: %s; the page shows the readable part\n", dir,
		        m.info.damage);
	else if (!m.info.complete)
		fprintf(stderr,
		        "layerprof serve: warning: trace '%s' has no end record: the recording was interrupted\n", dir);
	if (m.index_note[0])
		fprintf(stderr, "layerprof serve: %s\n", m.index_note);
	r = servehttp_start(&h, &m, NULL, o->bind, (unsigned)o->port, token, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof serve: %s\n", err);
		servehttp_stop(&h);
		servemodel_release(&m);
		return r == -EPERM ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
	}
	printf("layerprof serve: trace '%s': %llu events, %u threads, %llu lost, %s in %llu ms\n", dir,
	       (unsigned long long)m.info.events, m.info.nthreads, (unsigned long long)m.info.lost,
	       m.from_index ? "index read" : "read", (unsigned long long)(m.load_ns / 1000000));
	print_url(&h);
	while (!quit_signal)
		sigsuspend(wait_mask);
	servehttp_stop(&h);
	servemodel_release(&m);
	return code;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "agent-token-file", required_argument, NULL, 'A' },
		{ "interval", required_argument, NULL, 'i' },
		{ "save", required_argument, NULL, 'o' },
		{ "no-index", no_argument, NULL, 'X' },
		{ "reindex", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		LIVEOPTS_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct serve_opts o = { .bind = SERVEHTTP_DEFAULT_BIND, .port = SERVEHTTP_DEFAULT_PORT };
	struct sigaction sa = { .sa_handler = on_signal };
	const char *dir = "layerprof.data";
	char token[AUTH_TOKEN_MAX + 2], *end;
	char err[LP_ERROR_MAX];
	sigset_t stop, wait_mask;
	int c, code;

	servelive_opts_init(&o.live);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:b:c:i:o:hm", longopts, NULL)) != -1) {
		if (c == 'c')
			c = LIVEOPT_CONNECT;
		else if (c == 'm')
			c = LIVEOPT_MEMORY;
		switch (c) {
		case 'p':
			errno = 0;
			o.port = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || o.port > 65535) {
				fprintf(stderr, "layerprof serve: invalid --port '%s': expected 0 to 65535\n", optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case 'b':
			o.bind = optarg;
			break;
		case 'T':
			o.token_file = optarg;
			break;
		case 'X':
			o.index_flags |= SERVEMODEL_NO_INDEX;
			break;
		case 'R':
			o.index_flags |= SERVEMODEL_REINDEX;
			break;
		case 'h':
			fputs(serve_usage, stdout);
			return LP_EXIT_OK;
		default:
			code = servelive_opts_parse(&o.live, c, optarg, err, sizeof(err));
			if (code == 1)
				break;
			if (code == 0)
				fputs(serve_usage, stderr);
			else
				fprintf(stderr, "layerprof serve: %s\n", err);
			return LP_EXIT_USAGE;
		}
	}
	if (o.live.live.connect) {
		if (!o.live.live.token_file)
			o.live.live.token_file = o.token_file;
		if (servelive_opts_check(&o.live, argv + optind, argc - optind, err, sizeof(err))) {
			fprintf(stderr, "layerprof serve: %s\n", err);
			return LP_EXIT_USAGE;
		}
	} else {
		if (servelive_opts_any(&o.live)) {
			fprintf(stderr,
			        "layerprof serve: --attach, --stopped, --udp, --syscalls, --memory, --interval and "
			        "--save go with --connect\n");
			return LP_EXIT_USAGE;
		}
		if (optind < argc)
			dir = argv[optind++];
		if (optind < argc) {
			fprintf(stderr, "layerprof serve: one trace at a time ('%s' is extra)\n", argv[optind]);
			return LP_EXIT_USAGE;
		}
	}
	if (!servehttp_is_loopback(o.bind) && !o.token_file) {
		fprintf(stderr,
		        "layerprof serve: refusing to listen on %s without a token: anyone who reaches it could "
		        "read the trace (and drive a live session); give --token-file F\n",
		        o.bind);
		return LP_EXIT_USAGE;
	}
	if (o.token_file && load_token(o.token_file, token, sizeof(token)) < 0)
		return LP_EXIT_FAILURE;
	/* the signals that end us are blocked, so that the server's threads
	 * (which inherit the mask) never take them; the main thread waits
	 * for them with the mask it had */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &wait_mask);
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGHUP);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.live.live.connect) {
		const struct lp_warner say = { layerprof_warn, (void *)"serve" };
		const struct servelive_io io = { &say, on_live_ready, NULL };
		int r = servelive_run(&o.live, o.bind, (unsigned)o.port, o.token_file ? token : NULL, &quit_signal,
		                      &wait_mask, &io, err, sizeof(err));

		if (r && err[0])
			fprintf(stderr, "layerprof serve: %s\n", err);
		code = !r ? LP_EXIT_OK : r == -EINVAL ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
	} else
		code = serve_trace(dir, &o, o.token_file ? token : NULL, &wait_mask);
	explicit_bzero(token, sizeof(token));
	return code;
}
#endif
