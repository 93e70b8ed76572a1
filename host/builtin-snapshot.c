/* layerprof snapshot: the heap state of a trace at one moment, written to a
 * snapshot file (docs/snapshot.md) for memdiff. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/snapshot.h"
#include "host/lib/live/netclient.h"
#include "host/lib/live/session.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/options.h"
#include "host/lib/util/outfile.h"

#define NS_PER_MS 1000000ull
#define SNAPSHOT_WINDOW_DEFAULT_NS 1000000000ull /* how long --connect takes in the stream */
#define SNAPSHOT_WINDOW_MAX_NS (3600ull * 1000000000ull)
#define SNAPSHOT_FLUSH_MS 50u /* the agent's flush period while taking in */

static const char snapshot_usage[] = "usage: layerprof snapshot [options] -o FILE [<trace dir>]\n"
                                     "   or: layerprof snapshot --connect HOST:PORT [options] PID -o FILE\n"
                                     "\n"
                                     "Writes the heap state of a trace recorded with --memory (default\n"
                                     "layerprof.data) to FILE: per call site the live objects and bytes, with a\n"
                                     "stack, and totals.  Compare two snapshots with 'layerprof memdiff'.\n"
                                     "\n"
                                     "  -o, --output FILE     the snapshot file ('-': standard output)\n"
                                     "      --at TIME         the state TIME after the recording began (e.g. 1.5s,\n"
                                     "                        200ms); default: the end of the trace\n"
                                     "      --at-peak         the state when the heap was largest\n"
                                     "  -c, --connect ADDR    attach through the agent at ADDR to the running\n"
                                     "                        process PID (started with liblayerprof-mem.so\n"
                                     "                        preloaded), take in its heap operations for a\n"
                                     "                        moment, write the state and leave it running\n"
                                     "      --token-file F    authenticate with the token in F\n"
                                     "  -w, --window DUR      with --connect: how long to take in (default 1s)\n"
                                     "  -h, --help            this text\n"
                                     "\n"
                                     "A program started with the interposers and the agent's attach directory\n"
                                     "keeps a table of its live blocks and lists it when tracing begins (on its\n"
                                     "first heap operation after the attach): the snapshot then holds the whole\n"
                                     "heap.  Without the table (LAYERPROF_MEM_TABLE=0), or when the program made\n"
                                     "no heap operation in the window, it holds what was seen since the attach\n"
                                     "(the file says so: \"partial\": true), and releases of older blocks are\n"
                                     "counted as released_unknown, not as illegal.\n"
                                     "\n"
                                     "Exit status: 0 ok, 1 cannot write, agent or connection failure, no heap\n"
                                     "operations from PID, 2 usage, 3 trace missing, empty, damaged or of\n"
                                     "another version.\n";

static volatile sig_atomic_t snapshot_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	snapshot_interrupted = 1;
}

/* Runs the session's loop until it ends; after window_ns of RUNNING (or
 * an interrupt) it says goodbye. */
static void connect_loop(struct livesession *ls, uint64_t window_ns)
{
	uint64_t running_since = 0;

	while (ls->state < LIVESESSION_DONE) {
		struct pollfd pfd = { .fd = ls->nc.fd, .events = POLLIN };
		uint64_t now = livesession_now(), next = livesession_next_tick(ls);
		int r;

		if (ls->state == LIVESESSION_RUNNING && !running_since) {
			running_since = now;
			fprintf(stderr,
			        "layerprof snapshot: attached to process %" PRIu32
			        ": taking in heap operations for %.3f s\n",
			        ls->pid, (double)window_ns / 1e9);
		}
		if (ls->state == LIVESESSION_RUNNING && (snapshot_interrupted || now - running_since >= window_ns)) {
			livesession_close(ls);
			continue;
		}
		if (ls->state == LIVESESSION_RUNNING && running_since + window_ns < next)
			next = running_since + window_ns;
		r = poll(&pfd, 1, next <= now ? 0 : (int)((next - now + NS_PER_MS - 1) / NS_PER_MS));
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "layerprof snapshot: poll: %s\n", strerror(errno));
			ls->state = LIVESESSION_FAILED;
			break;
		}
		if (r > 0)
			livesession_receive(ls);
		if (ls->state < LIVESESSION_DONE)
			livesession_tick(ls, livesession_now());
	}
}

static void on_connect_say(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "layerprof snapshot: %s\n", msg);
}

/* snapshot --connect: attach, take in, write, leave the program running. */
static int snapshot_connect(const char *addr, const char *token_file, long pid, uint64_t window_ns, const char *out)
{
	struct livesession *ls = calloc(1, sizeof(*ls));
	struct sigaction sa = { .sa_handler = on_interrupt };
	struct livemem_snapinfo si = { .target = addr };
	char err[600], buf[32];
	int code = LP_EXIT_FAILURE, r;

	if (!ls || livesession_init(ls)) {
		fprintf(stderr, "layerprof snapshot: out of memory\n");
		goto out;
	}
	ls->addr = addr;
	ls->token_file = token_file;
	ls->attach_pid = pid;
	ls->memory = true;
	ls->flush_ms = SNAPSHOT_FLUSH_MS;
	ls->say = on_connect_say;
	/* the session's own errors have always said "layerprof live:" here */
	ls->complain = (struct lp_warner){ layerprof_warn, (void *)"live" };
	r = livesession_connect(ls);
	if (r) {
		code = r == -EINVAL ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
		goto out;
	}
	if (livesession_start(ls, true))
		goto out;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	connect_loop(ls, window_ns);
	if (!ls->session)
		goto out; /* said why */
	walk_end(&ls->w);
	ls->walk_ended = true;
	livemem_finish(&ls->mem);
	if (ls->state == LIVESESSION_FAILED)
		fprintf(stderr, "layerprof snapshot: the session failed: the snapshot holds what came before\n");
	if (!ls->w.mem_ops && !strcmp(ls->mem.agent_mem, "none")) {
		fprintf(stderr,
		        "layerprof snapshot: process %ld sent no heap operations: it was not started with "
		        "liblayerprof-mem.so preloaded (LD_PRELOAD=liblayerprof.so:liblayerprof-mem.so)\n",
		        pid);
		goto out;
	}
	if (!ls->w.mem_ops)
		fprintf(stderr, "layerprof snapshot: warning: no heap operations from process %ld in the window\n",
		        pid);
	si.origin_ns =
	    walk_meta(&ls->w, "start_monotonic_ns", buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : ls->w.first_ns;
	/* si.command stays NULL: an attached program's command line is not known */
	if (livemem_snapshot(&ls->mem, out, &si, err, sizeof(err))) {
		fprintf(stderr, "layerprof snapshot: %s\n", err);
		goto out;
	}
	if (ls->mem.h.listings && !ls->mem.h.partial)
		fprintf(stderr,
		        "layerprof snapshot: process %ld: %" PRIu64 " live blocks (%" PRIu64 " bytes), %" PRIu64
		        " of them from before the attach (listed by the program); %" PRIu64
		        " events lost; written to '%s'\n",
		        pid, ls->mem.h.live_objects, ls->mem.h.live_bytes, ls->mem.h.listed_objects,
		        livesession_lost(ls), out);
	else
		fprintf(stderr,
		        "layerprof snapshot: process %ld: %" PRIu64 " live blocks (%" PRIu64
		        " bytes) allocated since the attach; %" PRIu64 " releases of older blocks; %" PRIu64
		        " events lost; written to '%s'\n"
		        "layerprof snapshot: partial: %s\n",
		        pid, ls->mem.h.live_objects, ls->mem.h.live_bytes, ls->mem.h.released_unknown,
		        livesession_lost(ls), out,
		        ls->mem.h.listings ? "the program's live-block table was full, its heap listing is incomplete"
		        : ls->w.mem_ops
		            ? "the program keeps no live-block table (LAYERPROF_MEM_TABLE=0, or it was started "
		              "without the agent's attach directory): blocks allocated before the attach "
		              "are unknown"
		            : "no heap operation in the window: the program lists its heap on its first one");
	code = ls->state == LIVESESSION_FAILED ? LP_EXIT_FAILURE : LP_EXIT_OK;
out:
	if (ls)
		livesession_release(ls);
	free(ls);
	return code;
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "at", required_argument, NULL, 'A' },
		{ "at-peak", no_argument, NULL, 'P' },
		{ "connect", required_argument, NULL, 'c' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "window", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct snapshot_meta m = { .source = "trace" };
	const char *dir = "layerprof.data", *out = NULL, *addr = NULL, *token_file = NULL;
	uint64_t window_ns = SNAPSHOT_WINDOW_DEFAULT_NS;
	bool has_window = false;
	struct heapfeed feed = { 0 };
	struct heap h = { 0 };
	struct walk w;
	bool at_peak = false, has_at = false;
	uint64_t at_ns = 0;
	char buf[32], command[1024];
	FILE *f = NULL;
	int c, r, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:c:w:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			addr = optarg;
			break;
		case 'T':
			token_file = optarg;
			break;
		case 'w':
			if (options_parse_duration(optarg, &window_ns) || !window_ns ||
			    window_ns > SNAPSHOT_WINDOW_MAX_NS) {
				fprintf(stderr,
				        "layerprof snapshot: invalid --window '%s': a duration such as 2s, up to 1h\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			has_window = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'A':
			if (options_parse_duration(optarg, &at_ns)) {
				fprintf(stderr, "layerprof snapshot: invalid --at '%s': a time such as 1.5s or 200ms\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			has_at = true;
			break;
		case 'P':
			at_peak = true;
			break;
		case 'h':
			fputs(snapshot_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(snapshot_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (addr || token_file || has_window) {
		char *end;
		long pid;

		if (!addr || optind + 1 != argc || !out || at_peak || has_at) {
			fprintf(stderr, "layerprof snapshot: %s\n",
			        !addr               ? "--token-file and --window need --connect"
			        : optind >= argc    ? "--connect needs the PID of the process"
			        : optind + 1 < argc ? "one process at a time"
			        : !out              ? "say where to write with -o FILE"
			                            : "--at and --at-peak are for a trace, not --connect");
			return LP_EXIT_USAGE;
		}
		errno = 0;
		pid = strtol(argv[optind], &end, 10);
		if (errno || *end || pid <= 0 || pid > INT_MAX) {
			fprintf(stderr, "layerprof snapshot: invalid PID '%s'\n", argv[optind]);
			return LP_EXIT_USAGE;
		}
		if (netclient_check_address(addr)) {
			fprintf(stderr,
			        "layerprof snapshot: invalid --connect '%s': expected HOST:PORT, [IPV6]:PORT or "
			        "unix:PATH\n",
			        addr);
			return LP_EXIT_USAGE;
		}
		return snapshot_connect(addr, token_file, pid, window_ns, out);
	}
	if (optind < argc)
		dir = argv[optind++];
	if (optind < argc || !out || (at_peak && has_at)) {
		if (optind < argc)
			fprintf(stderr, "layerprof snapshot: one trace at a time ('%s' is extra)\n", argv[optind]);
		else if (!out)
			fprintf(stderr, "layerprof snapshot: say where to write with -o FILE\n");
		else
			fprintf(stderr, "layerprof snapshot: --at-peak or --at, not both\n");
		return LP_EXIT_USAGE;
	}
	code = builtin_trace_open("snapshot", &w, dir, NULL);
	if (code)
		return code;
	r = heapfeed_pass(&w, &h, &feed, 0);
	m.origin_ns = walk_meta(&w, "start_monotonic_ns", buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : w.first_ns;
	m.time_ns = h.now_ns;
	if (!r && (at_peak || has_at)) {
		m.time_ns = at_peak ? h.peak_ns : m.origin_ns + at_ns;
		heapfeed_release(&feed);
		heap_release(&h);
		r = heapfeed_pass(&w, &h, &feed, m.time_ns ? m.time_ns : 1);
	}
	if (r) {
		fprintf(stderr, "layerprof snapshot: out of memory reading '%s'\n", dir);
		code = LP_EXIT_FAILURE;
		goto out;
	}
	code = layerprof_trace_condition(&w, "snapshot");
	m.trace = dir;
	m.command = walk_meta(&w, "command", command, sizeof(command));
	f = strcmp(out, "-") ? outfile_open(out) : stdout;
	if (!f) {
		fprintf(stderr, "layerprof snapshot: cannot create '%s': %s\n", out, outfile_strerror(errno));
		code = LP_EXIT_FAILURE;
		goto out;
	}
	r = snapshot_write(f, &w, &h, &m);
	if (f != stdout && fclose(f))
		r = -EIO;
	if (r) {
		fprintf(stderr, "layerprof snapshot: cannot write '%s': %s\n", out, strerror(-r));
		code = LP_EXIT_FAILURE;
	}
out:
	heapfeed_release(&feed);
	heap_release(&h);
	walk_release(&w);
	return code;
}
