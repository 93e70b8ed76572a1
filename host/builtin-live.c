/* layerprof live: profiles a program on a target through its agent
 * (layerprofd, docs/protocol.md) and shows the flat profile while the trace
 * arrives.  This file is the command: options, the commands typed on stdin
 * or as keys, the terminal and the loop; the session with the agent is
 * host/lib/live/session.c, the view host/lib/live/view.c. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/lib/live/netclient.h"
#include "host/lib/live/opts.h"
#include "host/lib/live/session.h"
#include "host/lib/live/view.h"
#include "host/lib/util/options.h"
#include "systrace/systrace.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define LIVE_DEFAULT_INTERVAL_NS NS_PER_S
#define LIVE_MIN_INTERVAL_NS (10 * NS_PER_MS)
#define LIVE_LINE_MAX 4096                 /* one command line */
#define LIVE_WORDS_MAX 64                  /* words in one command */
#define LIVE_SNAPSHOT_NAME "heap.snapshot" /* written into a saved trace with --memory */

static const char live_usage[] =
    "usage: layerprof live [options] -- <program> [<args>]\n"
    "   or: layerprof live [options] --attach PID [--dynamic[=LIST]]\n"
    "\n"
    "Profiles a program on a target through its agent (layerprofd) and shows the\n"
    "flat profile as the trace arrives: the program is started by the agent, or an\n"
    "attachable program that runs already is traced (with --dynamic, any running\n"
    "program, through uprobes the agent takes out again when the session ends).\n"
    "\n"
    "  -c, --connect ADDR    the agent: HOST:PORT, [IPV6]:PORT (a token needed) or\n"
    "                        unix:PATH (default: this user's agent, unix:" LP_WIRE_UNIX_DIR_FMT "/" LP_WIRE_UNIX_NAME
    ",\n"
    "                        %u the uid)\n"
    "      --token-file F    authenticate with the token in F (first line)\n"
    "  -p, --attach PID      trace a running program instead of starting one\n"
    "  -i, --interval DUR    refresh the view every DUR (default 1s)\n"
    "  -o, --save DIR        write everything received as a trace directory\n"
    "  -d, --duration DUR    end the session after DUR\n"
    "      --format FMT      text (default) or json: one JSON object per refresh\n"
    "      --stopped         start with tracing off (command 'start' turns it on)\n"
    "      --udp             take the events by the agent's UDP channel: datagrams\n"
    "                        lost on the way are counted as lost events\n"
    "      --flush DUR       the agent sends what it holds at least every DUR\n"
    "                        (default a quarter of --interval, 5ms to 1s)\n"
    "  -F, --only FUNC       only calls inside FUNC (glob; repeatable)\n"
    "  -N, --exclude FUNC    leave out FUNC and what it calls (glob; repeatable)\n"
    "      --depth N         only calls up to N levels deep\n"
    "      --min-time DUR    leave out calls shorter than DUR (e.g. 10us)\n"
    "      --syscalls[=HOW]  trace the system calls too: auto (default), bpf,\n"
    "                        tracepoint or ptrace; shown by 'view syscalls'\n"
    "      --syscall-filter LIST  only these syscalls (e.g. 'read,write,open*')\n"
    "      --kernel[=LIST]   record kernel events too (the agent's tracepoints, as\n"
    "                        record --kernel): kept in --save's trace, shown by\n"
    "                        'view layers'\n"
    "      --kernel-filter F  in-kernel filter for the kernel events\n"
    "      --kernel-functions LIST  kernel functions traced through kprobes too\n"
    "      --kernel-system   other processes' kernel events too, kept apart (as\n"
    "                        record --kernel-system)\n"
    "      --dynamic[=LIST]  the program was built without -finstrument-functions:\n"
    "                        the agent traces every function of its symbol table\n"
    "                        (or those LIST's globs name; a library's as\n"
    "                        FILE:GLOB), as record --dynamic; with --attach,\n"
    "                        by uprobes on the running program (agent as root)\n"
    "      --libcalls        and every call into a shared library through the\n"
    "                        program's PLT, as record --libcalls (not with --attach)\n"
    "  -m, --memory          trace heap operations too (the agent preloads\n"
    "                        liblayerprof-mem.so): live objects per call site,\n"
    "                        growth, illegal releases; shown by 'view memory'\n"
    "      --mem-depth N     frames per heap call stack (default 16, 1 to 64)\n"
    "      --keep-alive      an illegal release is recorded and kept from libc,\n"
    "                        so the program survives it\n"
    "      --mem-fold DUR    blocks released within DUR (e.g. 1ms) are only counted\n"
    "                        per call stack by the agent, as record --mem-fold does\n"
    "      --view VIEW       flat (default), paths, syscalls, memory or layers\n"
    "      --path-nodes N    call paths kept by the paths view (default 65536);\n"
    "                        calls on paths beyond are counted as folded\n"
    "  -h, --help            this text\n"
    "\n"
    "Filters are applied by the runtime on the target; a filtered profile shows\n"
    "flat counts and times only (self time is unknown: callees may be missing).\n"
    "\n"
    "Commands, as lines on stdin (or keys on a terminal: s, t, f, w, v, m, q):\n"
    "  start | stop          turn tracing on or off\n"
    "  filter OPTIONS        new filters (-F, -N, --depth, --min-time); 'filter clear'\n"
    "  save DIR              save the trace from here on (with what was kept so far);\n"
    "                        with --memory, DIR/" LIVE_SNAPSHOT_NAME " gets the heap at the end\n"
    "  view flat|paths|syscalls|memory|layers  the table shown (key v: the next one)\n"
    "  mem                   the memory view (key m)\n"
    "  snapshot FILE         write the heap state now to FILE (see memdiff)\n"
    "  quit                  end the session (the program goes on untraced; one\n"
    "                        attached by --dynamic has its probes taken out)\n"
    "\n"
    "Exit status: 0 the session ended (program exited, quit, --duration), 1 connection\n"
    "or agent failure, 2 usage.\n";

enum live_prompt { PROMPT_NONE, PROMPT_FILTER, PROMPT_SAVE };

struct live {
	/* options */
	uint64_t interval_ns, duration_ns, flush_ns;
	bool json, stopped;
	enum liveview_mode mode; /* the table shown: flat profile, call paths or syscalls */
	uint32_t path_nodes;
	const char *save_at_start;
	/* the session with the agent */
	struct livesession ls;
	uint64_t next_draw;
	/* the terminal and stdin */
	struct liveview view;
	bool tty_in, tty_out, raw;
	struct termios saved_tio;
	bool stdin_open;
	char line[LIVE_LINE_MAX];
	size_t line_len;
	bool line_too_long;
	enum live_prompt prompt;
	char note[512];
	struct lp_warner said; /* on_say, for messages of its own */
};

static volatile sig_atomic_t quit_signal, resized;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		resized = 1;
	else
		quit_signal = sig;
}

/* A message about the session: shown in the view on a terminal, else
 * printed to stderr at once. */
static void on_say(void *ctx, const char *msg)
{
	struct live *lv = ctx;

	snprintf(lv->note, sizeof(lv->note), "%s", msg);
	if (!lv->tty_out) {
		fprintf(stderr, "layerprof live: %s\n", lv->note);
		fflush(stderr);
	}
}

/* ------------------------------------------------------------ the view */

static void live_draw(struct live *lv, bool final)
{
	struct liveview_info in = { 0 };
	char desc[512];

	livesession_collect_exits(&lv->ls);
	livesession_view_info(&lv->ls, &in, desc, sizeof(desc));
	if (lv->ls.mem.on) {
		if (final)
			livemem_finish(&lv->ls.mem);
		else
			livemem_settle(&lv->ls.mem, livesession_now());
		in.mem = &lv->ls.mem;
	}
	in.final = final;
	in.note = lv->note;
	in.mode = lv->mode;
	if (lv->prompt != PROMPT_NONE) {
		in.prompt = lv->prompt == PROMPT_FILTER ? "filter> " : "save to> ";
		in.line = lv->line;
		in.line_len = lv->line_len;
	}
	if (liveview_draw(&lv->view, &lv->ls.w, &in))
		error_warn(&lv->said, "out of memory drawing the profile");
}

/* ------------------------------------------------------------ commands */

/* Starts saving: what was kept first, then what follows. */
static void command_save(struct live *lv, const char *dir)
{
	struct livesave *sv = &lv->ls.save;
	size_t kept = sv->kept_len;
	bool dropped = sv->kept_dropped;

	if (livesave_active(sv)) {
		error_warn(&lv->said, "already saving to '%s'", sv->dir);
		return;
	}
	if (livesave_open(sv, dir)) {
		error_warn(&lv->said, "cannot save: %s", sv->error);
		return;
	}
	if (dropped)
		error_warn(&lv->said,
		           "saving to '%s' from now on: the first chunks received were not kept (over %u MiB)", dir,
		           LIVESAVE_KEEP_MAX >> 20);
	else if (kept)
		error_warn(&lv->said, "saving to '%s': what was received so far (%zu bytes) and what follows", dir,
		           kept);
	else if (lv->ls.session)
		error_warn(&lv->said, "saving to '%s'", dir); /* else said when the session begins */
}

/* Writes the heap state now (settled up to the merge's horizon). */
static void command_snapshot(struct live *lv, const char *path)
{
	struct livesession *ls = &lv->ls;
	struct livemem_snapinfo si = { .target = ls->addr };
	char err[600], command[1024], buf[32];

	if (!ls->mem.on) {
		error_warn(&lv->said, "snapshot: no heap operations traced in this session (live --memory)");
		return;
	}
	livemem_settle(&ls->mem, livesession_now());
	si.command = walk_meta(&ls->w, "command", command, sizeof(command));
	si.origin_ns =
	    walk_meta(&ls->w, "start_monotonic_ns", buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : ls->w.first_ns;
	if (livemem_snapshot(&ls->mem, path, &si, err, sizeof(err)))
		error_warn(&lv->said, "snapshot: %s", err);
	else
		error_warn(&lv->said,
		           "snapshot: the heap state (%" PRIu64 " live blocks, %" PRIu64 " bytes) written to '%s'",
		           ls->mem.h.live_objects, ls->mem.h.live_bytes, path);
}

static void command_filter(struct live *lv, const char *line)
{
	char *buf = malloc(strlen(line) + 1), *words[LIVE_WORDS_MAX];
	struct filter_opts opts;
	char desc[512], err[512];
	int n;

	if (!buf) {
		error_warn(&lv->said, "out of memory");
		return;
	}
	n = liveopts_split_words(line, buf, words, LIVE_WORDS_MAX, true);
	if (n < 0) {
		error_warn(&lv->said, "filter: unbalanced quotes or too many words");
		free(buf);
		return;
	}
	if (n == 1) {
		livefilter_describe(&lv->ls.filter, desc, sizeof(desc));
		error_warn(&lv->said, "filters: %s", lv->ls.filter.active ? desc : "none");
		free(buf);
		return;
	}
	if (n == 2 && !strcmp(words[1], "clear")) {
		memset(&opts, 0, sizeof(opts));
		livesession_set_filters(&lv->ls, &opts, NULL);
		free(buf);
		return;
	}
	if (livefilter_parse(n, words, &opts, err, sizeof(err))) {
		if (err[0])
			error_warn(&lv->said, "%s", err);
		free(buf);
		return;
	}
	livesession_set_filters(&lv->ls, &opts, buf);
}

static void command_run(struct live *lv, const char *line)
{
	char buf[LIVE_LINE_MAX], *words[LIVE_WORDS_MAX];
	int n = liveopts_split_words(line, buf, words, LIVE_WORDS_MAX, true);

	if (n <= 0) {
		if (n < 0)
			error_warn(&lv->said, "unbalanced quotes or too many words");
		return;
	}
	if (!strcmp(words[0], "start") || !strcmp(words[0], "stop")) {
		if (n > 1)
			error_warn(&lv->said, "%s takes no arguments", words[0]);
		else if (lv->ls.state == LIVESESSION_RUNNING &&
		         !livesession_set_tracing(&lv->ls, !strcmp(words[0], "start")))
			error_warn(&lv->said, "tracing %s", lv->ls.tracing ? "on" : "off");
	} else if (!strcmp(words[0], "filter")) {
		command_filter(lv, line);
	} else if (!strcmp(words[0], "save")) {
		if (n != 2)
			error_warn(&lv->said, "usage: save DIR");
		else
			command_save(lv, words[1]);
	} else if (!strcmp(words[0], "snapshot")) {
		if (n != 2)
			error_warn(&lv->said, "usage: snapshot FILE");
		else
			command_snapshot(lv, words[1]);
	} else if (!strcmp(words[0], "view") || !strcmp(words[0], "mem")) {
		static const char *const what[] = { "flat profile", "hot call paths", "system calls", "memory",
			                            "time per layer" };

		if (!strcmp(words[0], "mem") ? n != 1 : (n != 2 || liveview_mode_parse(words[1], &lv->mode))) {
			error_warn(&lv->said, "usage: view flat|paths|syscalls|memory|layers, or mem");
		} else {
			if (!strcmp(words[0], "mem"))
				lv->mode = LIVEVIEW_MEMORY;
			error_warn(&lv->said, "view: %s", what[lv->mode]);
			if (lv->mode == LIVEVIEW_SYSCALLS && !lv->ls.sys_backend[0])
				error_warn(&lv->said,
				           "view: system calls: none traced in this session (live --syscalls)");
			if (lv->mode == LIVEVIEW_MEMORY && !lv->ls.mem.on)
				error_warn(&lv->said,
				           "view: memory: no heap operations traced in this session (live --memory)");
			if (lv->mode == LIVEVIEW_LAYERS && !lv->ls.kernel)
				error_warn(&lv->said, "view: layers: no kernel events in this session (live --kernel)");
		}
	} else if (!strcmp(words[0], "quit") || !strcmp(words[0], "q") || !strcmp(words[0], "exit")) {
		livesession_close(&lv->ls);
	} else if (!strcmp(words[0], "help")) {
		error_warn(&lv->said, "commands: start, stop, filter OPTIONS, filter clear, save DIR, view "
		                      "flat|paths|syscalls|memory|layers, mem, snapshot FILE, quit");
	} else {
		error_warn(&lv->said,
		           "unknown command '%s' (start, stop, filter OPTIONS, filter clear, save DIR, view, mem, "
		           "snapshot FILE, quit)",
		           words[0]);
	}
}
/* One key on a terminal in raw mode: a command, or editing of a prompt. */
static void on_key(struct live *lv, unsigned char k)
{
	char cmd[LIVE_LINE_MAX + 16];

	if (lv->prompt != PROMPT_NONE) {
		if (k == '\r' || k == '\n') {
			snprintf(cmd, sizeof(cmd), "%s %.*s", lv->prompt == PROMPT_FILTER ? "filter" : "save",
			         (int)lv->line_len, lv->line);
			lv->prompt = PROMPT_NONE;
			lv->line_len = 0;
			command_run(lv, cmd);
		} else if (k == 0x7f || k == '\b') {
			if (lv->line_len)
				lv->line_len--;
		} else if (k == 0x1b) {
			lv->prompt = PROMPT_NONE; /* escape: never mind */
			lv->line_len = 0;
		} else if (k >= 0x20 && k < 0x7f && lv->line_len < sizeof(lv->line) - 1) {
			lv->line[lv->line_len++] = (char)k;
		}
		return;
	}
	switch (k) {
	case 's':
		command_run(lv, "start");
		break;
	case 't':
		command_run(lv, "stop");
		break;
	case 'f':
		lv->prompt = PROMPT_FILTER;
		break;
	case 'w':
		lv->prompt = PROMPT_SAVE;
		break;
	case 'm':
		command_run(lv, "mem");
		break;
	case 'v': {
		/* the next view: flat, paths, syscalls and memory (when
		 * traced), flat */
		enum liveview_mode next = lv->mode == LIVEVIEW_FLAT       ? LIVEVIEW_PATHS
		                          : lv->mode == LIVEVIEW_PATHS    ? LIVEVIEW_SYSCALLS
		                          : lv->mode == LIVEVIEW_SYSCALLS ? LIVEVIEW_MEMORY
		                          : lv->mode == LIVEVIEW_MEMORY   ? LIVEVIEW_LAYERS
		                                                          : LIVEVIEW_FLAT;
		if (next == LIVEVIEW_SYSCALLS && !lv->ls.sys_backend[0])
			next = LIVEVIEW_MEMORY;
		if (next == LIVEVIEW_MEMORY && !lv->ls.mem.on)
			next = LIVEVIEW_LAYERS;
		if (next == LIVEVIEW_LAYERS && !lv->ls.kernel)
			next = LIVEVIEW_FLAT;
		snprintf(cmd, sizeof(cmd), "view %s", liveview_mode_name(next));
		command_run(lv, cmd);
		break;
	}
	case 'q':
		command_run(lv, "quit");
		break;
	default:
		break;
	}
}

/* Takes what stdin holds: keys on a terminal, command lines otherwise. */
static void on_stdin(struct live *lv)
{
	char buf[1024];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	ssize_t i;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		lv->stdin_open = false; /* no more commands; the session goes on */
		return;
	}
	for (i = 0; i < n; i++) {
		if (lv->raw) {
			on_key(lv, (unsigned char)buf[i]);
			continue;
		}
		if (buf[i] != '\n') {
			if (lv->line_len < sizeof(lv->line) - 1)
				lv->line[lv->line_len++] = buf[i];
			else
				lv->line_too_long = true;
			continue;
		}
		lv->line[lv->line_len] = '\0';
		if (lv->line_too_long)
			error_warn(&lv->said, "command line too long (at most %d bytes)", LIVE_LINE_MAX - 1);
		else
			command_run(lv, lv->line);
		lv->line_len = 0;
		lv->line_too_long = false;
	}
	if (lv->raw && lv->tty_out)
		live_draw(lv, false);
}

static void terminal_raw(struct live *lv)
{
	struct termios t;

	if (!lv->tty_in || tcgetattr(STDIN_FILENO, &lv->saved_tio))
		return;
	t = lv->saved_tio;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (!tcsetattr(STDIN_FILENO, TCSANOW, &t))
		lv->raw = true;
}

static void terminal_restore(struct live *lv)
{
	if (lv->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &lv->saved_tio);
	lv->raw = false;
	if (lv->tty_out && !lv->json)
		fputs("\n", stdout);
}

/* ------------------------------------------------------------ the loop */

/* What the poll loop should wait for next, in ms. */
static int next_timeout(const struct live *lv, uint64_t now)
{
	const struct livesession *ls = &lv->ls;
	uint64_t next = livesession_next_tick(ls);

	if (ls->state == LIVESESSION_RUNNING && lv->next_draw < next)
		next = lv->next_draw;
	if (lv->duration_ns && ls->t0 + lv->duration_ns < next)
		next = ls->t0 + lv->duration_ns;
	return next <= now ? 0 : (int)((next - now + NS_PER_MS - 1) / NS_PER_MS);
}

/* The timers: the session's, --duration, the refresh. */
static void on_time(struct live *lv, uint64_t now)
{
	struct livesession *ls = &lv->ls;

	livesession_tick(ls, now);
	if (ls->state == LIVESESSION_RUNNING && lv->duration_ns && now - ls->t0 >= lv->duration_ns) {
		error_warn(&lv->said, "--duration reached");
		livesession_close(ls);
	}
	if (ls->state == LIVESESSION_RUNNING && now >= lv->next_draw) {
		live_draw(lv, false);
		lv->next_draw = now + lv->interval_ns;
	}
}

static void live_loop(struct live *lv)
{
	struct livesession *ls = &lv->ls;

	while (ls->state < LIVESESSION_DONE) {
		struct pollfd pfd[3] = { { .fd = ls->nc.fd, .events = POLLIN },
			                 { .fd = -1, .events = POLLIN },
			                 { .fd = ls->udp.fd, .events = POLLIN } };
		uint64_t now = livesession_now();
		int r;

		if (quit_signal) {
			quit_signal = 0;
			if (ls->state == LIVESESSION_CLOSING)
				break;
			error_warn(&lv->said, "interrupted: ending the session");
			livesession_close(ls);
			continue;
		}
		if (resized) {
			resized = 0;
			if (lv->tty_out && !lv->json && ls->state == LIVESESSION_RUNNING)
				live_draw(lv, false);
		}
		if (lv->stdin_open && ls->state == LIVESESSION_RUNNING)
			pfd[1].fd = STDIN_FILENO;
		r = poll(pfd, 3, next_timeout(lv, now));
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "layerprof live: poll: %s\n", strerror(errno));
			ls->state = LIVESESSION_FAILED;
			break;
		}
		/* datagrams first: the STATUS that counts them comes by TCP */
		if (r > 0 && (pfd[2].revents & (POLLIN | POLLERR)))
			livesession_receive_udp(ls);
		if (r > 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			livesession_receive(ls);
		if (r > 0 && ls->state == LIVESESSION_RUNNING && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
			on_stdin(lv);
		if (ls->state < LIVESESSION_DONE)
			on_time(lv, livesession_now());
	}
}

/* The summary after the session, on stderr. */
static void live_summary(struct live *lv)
{
	const struct livesession *ls = &lv->ls;
	uint64_t lost = livesession_lost(ls);
	char b[64];

	if (lost)
		fprintf(stderr, "layerprof live: warning: %" PRIu64 " events lost (the last at %s)\n", lost,
		        liveview_when(ls->w.first_ns, ls->lost_at_ns, b, sizeof(b)));
	if (ls->bad_chunks)
		fprintf(stderr, "layerprof live: warning: %" PRIu64 " chunks held undecodable events\n",
		        ls->bad_chunks);
	if (ls->mem.on && ls->session && !ls->w.mem_ops)
		fprintf(stderr, "layerprof live: warning: no heap operations arrived%s\n",
		        !strcmp(ls->mem.agent_mem, "none") ? " (the program has no liblayerprof-mem.so preloaded)"
		                                           : "");
	if (ls->mem.on && ls->mem.h.oom)
		fprintf(stderr, "layerprof live: out of memory: the heap state is incomplete\n");
}

static int parse_options(struct live *lv, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "token-file", required_argument, NULL, 'T' },
		{ "interval", required_argument, NULL, 'i' },
		{ "save", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'f' },
		{ "view", required_argument, NULL, 'V' },
		{ "flush", required_argument, NULL, 'L' },
		{ "path-nodes", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		LIVEOPTS_LONG_OPTIONS,
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct livesession *ls = &lv->ls;
	struct liveopts o;
	char err[LP_ERROR_MAX];
	char *end;
	unsigned long n;
	int c, r;

	liveopts_init(&o);
	o.connect = ls->addr; /* the default agent */
	optind = 1;
	while ((c = getopt_long(argc, argv, "+c:p:i:o:d:hmF:N:", longopts, NULL)) != -1) {
		/* the short forms of shared options */
		if (c == 'c')
			c = LIVEOPT_CONNECT;
		else if (c == 'p')
			c = LIVEOPT_ATTACH;
		else if (c == 'm')
			c = LIVEOPT_MEMORY;
		r = liveopts_parse(&o, c, optarg, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "layerprof live: %s\n", err);
			return -EINVAL;
		}
		if (r == 1)
			continue;
		switch (c) {
		case 'T':
			o.token_file = optarg;
			break;
		case 'i':
			if (options_parse_duration(optarg, &lv->interval_ns) ||
			    lv->interval_ns < LIVE_MIN_INTERVAL_NS) {
				fprintf(stderr,
				        "layerprof live: invalid --interval '%s': expected a duration from 10ms\n",
				        optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			lv->save_at_start = optarg;
			break;
		case 'd':
			if (options_parse_duration(optarg, &lv->duration_ns) || !lv->duration_ns) {
				fprintf(stderr,
				        "layerprof live: invalid --duration '%s': expected a duration like 10s\n",
				        optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof live: invalid --format '%s': text or json\n", optarg);
				return -EINVAL;
			}
			lv->json = !strcmp(optarg, "json");
			break;
		case 'L':
			if (options_parse_duration(optarg, &lv->flush_ns) ||
			    lv->flush_ns < LIVESESSION_FLUSH_MIN_MS * NS_PER_MS ||
			    lv->flush_ns > LIVESESSION_FLUSH_MAX_MS * NS_PER_MS) {
				fprintf(stderr, "layerprof live: invalid --flush '%s': expected 5ms to 1s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'V':
			if (liveview_mode_parse(optarg, &lv->mode)) {
				fprintf(
				    stderr,
				    "layerprof live: invalid --view '%s': flat, paths, syscalls, memory or layers\n",
				    optarg);
				return -EINVAL;
			}
			break;
		case 'P':
			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || *end || !n || n > LIVEPATHS_NODES_MAX) {
				fprintf(stderr, "layerprof live: invalid --path-nodes '%s': expected 1 to %u\n", optarg,
				        LIVEPATHS_NODES_MAX);
				return -EINVAL;
			}
			lv->path_nodes = (uint32_t)n;
			break;
		case 'h':
			fputs(live_usage, stdout);
			return 1;
		case OPT_TID:
			fprintf(stderr, "layerprof live: --tid is not applied on the target; use report --tid on a "
			                "saved trace\n");
			return -EINVAL;
		default:
			r = layerprof_filter_parse(&ls->filter.opts, c, optarg, "live");
			if (r == 1)
				break;
			if (r == 0)
				fputs(live_usage, stderr);
			return -EINVAL;
		}
	}
	if (lv->mode == LIVEVIEW_MEMORY && !o.mem.on) {
		fprintf(stderr, "layerprof live: --view memory needs --memory\n");
		return -EINVAL;
	}
	if (lv->mode == LIVEVIEW_LAYERS && !o.kernel) {
		fprintf(stderr, "layerprof live: --view layers needs --kernel\n");
		return -EINVAL;
	}
	if (liveopts_check(&o, argv + optind, argc - optind, true, err, sizeof(err))) {
		fprintf(stderr, "layerprof live: %s\n", err);
		if (!o.attach_pid && !o.argc)
			fputs(live_usage, stderr);
		return -EINVAL;
	}
	liveopts_apply(&o, ls);
	lv->stopped = o.stopped;
	/* what the view shows is at most a refresh old, plus a quarter */
	if (!lv->flush_ns)
		lv->flush_ns = lv->interval_ns / 4;
	ls->flush_ms = (uint32_t)(lv->flush_ns / NS_PER_MS);
	if (ls->flush_ms < LIVESESSION_FLUSH_MIN_MS)
		ls->flush_ms = LIVESESSION_FLUSH_MIN_MS;
	if (ls->flush_ms > LIVESESSION_FLUSH_MAX_MS)
		ls->flush_ms = LIVESESSION_FLUSH_MAX_MS;
	return 0;
}

/* Ends the saved trace, with an END chunk after a clean end the agent did
 * not close with its own.  Returns 0 or -EIO after saying why. */
static int live_save_close(struct live *lv, bool clean)
{
	struct livesession *ls = &lv->ls;
	struct livesave *sv = &ls->save;
	bool was_saving = livesave_active(sv);
	int r;

	if (was_saving && ls->mem.on) {
		/* the heap at the end beside the trace, for memdiff */
		struct livemem_snapinfo si = { .target = ls->addr };
		char path[PATH_MAX + 32], err[600], command[1024], buf[32];

		snprintf(path, sizeof(path), "%s/" LIVE_SNAPSHOT_NAME, sv->dir);
		si.command = walk_meta(&ls->w, "command", command, sizeof(command));
		si.origin_ns = walk_meta(&ls->w, "start_monotonic_ns", buf, sizeof(buf)) ? strtoull(buf, NULL, 10)
		                                                                         : ls->w.first_ns;
		livemem_finish(&ls->mem);
		if (livemem_snapshot(&ls->mem, path, &si, err, sizeof(err)))
			fprintf(stderr, "layerprof live: heap snapshot: %s\n", err);
	}
	r = livesave_close(sv, clean && !ls->end_seen, ls->w.events);

	if (r)
		fprintf(stderr, "layerprof live: %s\n", sv->error);
	if (was_saving && !clean)
		fprintf(stderr, "layerprof live: the trace received so far is in '%s' (%" PRIu64 " bytes)\n", sv->dir,
		        sv->bytes);
	return r;
}

int cmd_live(int argc, char **argv)
{
	struct live *lv = calloc(1, sizeof(*lv));
	struct sigaction sa = { .sa_handler = on_signal };
	char default_addr[sizeof(LP_WIRE_UNIX_PREFIX) + LP_WIRE_UNIX_PATH_MAX];
	struct livesession *ls;
	int code = LP_EXIT_FAILURE, r;

	if (!lv) {
		fprintf(stderr, "layerprof live: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	ls = &lv->ls;
	lv->said = (struct lp_warner){ .fn = on_say, .ctx = lv };
	lv->interval_ns = LIVE_DEFAULT_INTERVAL_NS;
	if (livesession_init(ls)) {
		fprintf(stderr, "layerprof live: out of memory\n");
		goto out;
	}
	/* this user's agent, on its UNIX socket */
	if (netclient_default_address(default_addr, sizeof(default_addr)))
		default_addr[0] = '\0';
	ls->addr = default_addr;
	ls->say = on_say;
	ls->say_ctx = lv;
	ls->complain = (struct lp_warner){ layerprof_warn, (void *)"live" };
	r = parse_options(lv, argc, argv);
	if (r) {
		code = r > 0 ? LP_EXIT_OK : LP_EXIT_USAGE;
		goto out;
	}
	livepaths_init(&ls->paths, lv->path_nodes);
	r = livesession_connect(ls);
	if (r) {
		code = r == -EINVAL ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
		goto out;
	}
	/* the trace directory is made before anything runs, so that a bad one
	 * stops us first */
	if (lv->save_at_start && livesave_open(&ls->save, lv->save_at_start)) {
		fprintf(stderr, "layerprof live: cannot save: %s\n", ls->save.error);
		goto out;
	}
	if (livesession_start(ls, !lv->stopped))
		goto out;
	lv->next_draw = ls->t0 + lv->interval_ns;

	lv->tty_in = isatty(STDIN_FILENO);
	lv->tty_out = isatty(STDOUT_FILENO) && !lv->json;
	liveview_init(&lv->view, lv->json, lv->tty_out);
	lv->stdin_open = true;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	terminal_raw(lv);
	liveview_clear(&lv->view);
	live_loop(lv);
	terminal_restore(lv);

	if (ls->udp.fd >= 0 && ls->state == LIVESESSION_DONE)
		while (livesession_receive_udp(ls) > 0) /* the last datagrams */
			;
	if (ls->session) {
		walk_end(&ls->w);
		ls->walk_ended = true;
		live_draw(lv, true);
	}
	if (ls->state == LIVESESSION_DONE)
		code = LP_EXIT_OK;
	if (ls->end_seen && !ls->end_asked && !ls->program_ended)
		error_warn(&lv->said, "the agent closed the session");
	if (lv->tty_out && lv->note[0] && ls->state == LIVESESSION_DONE)
		fprintf(stderr, "layerprof live: %s\n", lv->note);
	live_summary(lv);
	if (ls->session && live_save_close(lv, ls->state == LIVESESSION_DONE))
		code = LP_EXIT_FAILURE;
	if (ls->prof.oom || ls->paths.oom) {
		fprintf(stderr, "layerprof live: out of memory: the profile misses some calls\n");
		code = LP_EXIT_FAILURE;
	}
out:
	if (!ls->session)
		livesave_discard(&ls->save); /* nothing ran: no trace either */
	livesession_release(ls);
	free(lv);
	return code;
}
