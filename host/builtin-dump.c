/* layerprof dump: a trace in a format other tools open: Chrome trace event
 * JSON (Perfetto UI, chrome://tracing) or folded stacks (flamegraph.pl,
 * speedscope). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/lib/export/chrome.h"
#include "host/lib/export/folded.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/outfile.h"

/* Output buffer: the exports write many small pieces. */
#define DUMP_OUT_BUFFER (1u << 20)

static const char dump_usage[] =
    "usage: layerprof dump (--chrome | --folded) [options] [<trace dir>]\n"
    "\n"
    "Writes a trace (default layerprof.data) in a format other tools open:\n"
    "\n"
    "      --chrome          Chrome trace event JSON (Perfetto UI, chrome://tracing):\n"
    "                        function calls as B/E events per thread, system calls as\n"
    "                        X events (category syscall), lost events as instant events\n"
    "      --folded          folded stacks, one line per call path with its self time\n"
    "                        in ns (flamegraph.pl, speedscope); syscalls are \"[sys] name\"\n"
    "  -o, --output FILE     write to FILE (default: standard output)\n"
    "      --value WHAT      with --folded: self (time in ns, default) or calls\n"
    "      --per-thread      with --folded: each thread apart, under a first frame\n"
    "                        \"comm-pid/tid\"\n" FILTER_HELP "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 1 cannot write, 2 usage, 3 trace missing, empty, damaged or of\n"
    "another version.\n";

enum dump_format {
	DUMP_NONE,
	DUMP_CHROME,
	DUMP_FOLDED,
};

enum dump_option {
	OPT_CHROME = 0x2000,
	OPT_FOLDED,
	OPT_VALUE,
	OPT_PER_THREAD,
};

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "chrome", no_argument, NULL, OPT_CHROME },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "output", required_argument, NULL, 'o' },
		{ "value", required_argument, NULL, OPT_VALUE },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const struct lp_warner warn = { layerprof_warn, (void *)"dump" };
	enum dump_format fmt = DUMP_NONE;
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data", *out = NULL;
	unsigned folded_flags = 0;
	bool folded_only = false;
	struct walk w;
	FILE *f = stdout;
	int c, r, code, werr = 0;
	uint64_t deeper = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:F:N:", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CHROME:
		case OPT_FOLDED:
			if (fmt != DUMP_NONE) {
				fprintf(stderr, "layerprof dump: one format at a time: --chrome or --folded\n");
				return LP_EXIT_USAGE;
			}
			fmt = c == OPT_CHROME ? DUMP_CHROME : DUMP_FOLDED;
			break;
		case 'o':
			out = optarg;
			break;
		case OPT_VALUE:
			if (strcmp(optarg, "self") && strcmp(optarg, "calls")) {
				fprintf(stderr, "layerprof dump: invalid --value '%s': self or calls\n", optarg);
				return LP_EXIT_USAGE;
			}
			if (!strcmp(optarg, "calls"))
				folded_flags |= EXPORT_FOLDED_CALLS;
			folded_only = true;
			break;
		case OPT_PER_THREAD:
			folded_flags |= EXPORT_FOLDED_PER_THREAD;
			folded_only = true;
			break;
		case 'h':
			fputs(dump_usage, stdout);
			return LP_EXIT_OK;
		default:
			if (builtin_filter_option(&fopts, c, optarg, "dump", dump_usage))
				break;
			return LP_EXIT_USAGE;
		}
	}
	if (fmt == DUMP_NONE) {
		fprintf(stderr, "layerprof dump: say which format: --chrome or --folded\n");
		return LP_EXIT_USAGE;
	}
	if (folded_only && fmt != DUMP_FOLDED) {
		fprintf(stderr, "layerprof dump: --value and --per-thread go with --folded\n");
		return LP_EXIT_USAGE;
	}
	if (builtin_trace_operand("dump", argc, argv, optind, &dir))
		return LP_EXIT_USAGE;
	code = builtin_trace_open("dump", &w, dir, &fopts);
	if (code)
		return code;
	if (out && !(f = outfile_open(out))) {
		fprintf(stderr, "layerprof dump: cannot write '%s': %s\n", out, outfile_strerror(errno));
		walk_release(&w);
		return LP_EXIT_FAILURE;
	}
	setvbuf(f, NULL, _IOFBF, DUMP_OUT_BUFFER);
	r = fmt == DUMP_CHROME ? export_chrome(&w, f, &warn) : export_folded(&w, folded_flags, f, &deeper);
	code = layerprof_trace_condition(&w, "dump");
	if (!r && deeper)
		fprintf(stderr,
		        "layerprof dump: %llu call paths deeper than %u frames count for their ancestor at that depth, "
		        "as a frame '%s'\n",
		        (unsigned long long)deeper, EXPORT_FOLDED_DEPTH_MAX, EXPORT_FOLDED_DEEPER);
	if (fflush(f))
		werr = errno;
	if (f != stdout && fclose(f) && !werr)
		werr = errno;
	if (r == -EIO && !werr)
		werr = EIO;
	if (r == -ENOMEM)
		fprintf(stderr, "layerprof dump: out of memory reading '%s'\n", dir);
	else if (werr)
		fprintf(stderr, "layerprof dump: cannot write '%s': %s\n", out ? out : "standard output",
		        strerror(werr));
	if (r || werr) {
		if (out)
			unlink(out);
		code = LP_EXIT_FAILURE;
	}
	walk_release(&w);
	return code;
}
