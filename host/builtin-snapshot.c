/* layerprof snapshot: the heap state of a trace at one moment, written to a
 * snapshot file (docs/snapshot.md) for memdiff. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/heap.h"
#include "host/lib/heapfeed.h"
#include "host/lib/snapshot.h"
#include "host/lib/walk.h"

static const char snapshot_usage[] = "usage: layerprof snapshot [options] -o FILE [<trace dir>]\n"
                                     "\n"
                                     "Writes the heap state of a trace recorded with --memory (default\n"
                                     "layerprof.data) to FILE: per call site the live objects and bytes, with a\n"
                                     "stack, and totals.  Compare two snapshots with 'layerprof memdiff'.\n"
                                     "\n"
                                     "  -o, --output FILE     the snapshot file ('-': standard output)\n"
                                     "      --at TIME         the state TIME after the recording began (e.g. 1.5s,\n"
                                     "                        200ms); default: the end of the trace\n"
                                     "      --at-peak         the state when the heap was largest\n"
                                     "  -h, --help            this text\n"
                                     "\n"
                                     "Exit status: 0 ok, 1 cannot write, 2 usage, 3 trace missing, empty, damaged or\n"
                                     "of another version.\n";

/* Applies the trace's heap operations up to stop_ns (0: all). */
static int heap_pass(struct walk *w, struct heap *h, struct heapfeed *feed, uint64_t stop_ns)
{
	struct walk_ops ops = { 0 };

	if (heap_init(h) || heapfeed_init(feed, w, h))
		return -ENOMEM;
	feed->stop_ns = stop_ns;
	heapfeed_walk_ops(feed, &ops);
	if (walk_run_by_time(w, &ops))
		return -ENOMEM;
	heapfeed_flush(feed, stop_ns ? stop_ns : w->last_ns);
	heap_settle(h);
	return h->oom || feed->oom ? -ENOMEM : 0;
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "at", required_argument, NULL, 'A' },
		{ "at-peak", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct snapshot_meta m = { .source = "trace" };
	const char *dir = "layerprof.data", *out = NULL;
	struct heapfeed feed = { 0 };
	struct heap h = { 0 };
	struct walk w;
	bool at_peak = false, has_at = false;
	uint64_t at_ns = 0;
	char err[512], buf[32], command[1024];
	FILE *f = NULL;
	int c, r, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'A':
			if (parse_duration(optarg, &at_ns)) {
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
	r = walk_open(&w, dir, NULL, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof snapshot: %s\n", err);
		return r == -ENOMEM ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
	}
	r = heap_pass(&w, &h, &feed, 0);
	m.origin_ns = walk_meta(&w, "start_monotonic_ns", buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : w.first_ns;
	m.time_ns = h.now_ns;
	if (!r && (at_peak || has_at)) {
		m.time_ns = at_peak ? h.peak_ns : m.origin_ns + at_ns;
		heapfeed_release(&feed);
		heap_release(&h);
		r = heap_pass(&w, &h, &feed, m.time_ns ? m.time_ns : 1);
	}
	if (r) {
		fprintf(stderr, "layerprof snapshot: out of memory reading '%s'\n", dir);
		code = LP_EXIT_FAILURE;
		goto out;
	}
	code = walk_report_condition(&w, "snapshot");
	m.trace = dir;
	m.command = walk_meta(&w, "command", command, sizeof(command));
	f = strcmp(out, "-") ? fopen(out, "w") : stdout;
	if (!f) {
		fprintf(stderr, "layerprof snapshot: cannot create '%s': %s\n", out, strerror(errno));
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
