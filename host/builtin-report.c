/* layerprof report: the flat profile, per function (optionally per thread):
 * calls, total (inclusive, recursion counted once), self, avg, min, max. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/lib/analysis/profile.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/export/ctrreport.h"
#include "host/lib/export/energyreport.h"
#include "host/lib/export/report.h"
#include "host/lib/export/syncreport.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/options.h"
#include "host/lib/util/outfile.h"

static const char report_usage[] =
    "usage: layerprof report [options] [<trace dir>]\n"
    "\n"
    "Flat profile of a trace (default "
    "layerprof.data"
    "): per function its calls and\n"
    "total (inclusive), self, average, minimum and maximum time per call.\n"
    "\n"
    "  -s, --sort KEYS       sort by total, self, calls, avg, min, max or name;\n"
    "                        comma-separated, first key first (default total);\n"
    "                        with --counters: incl:COUNTER, self:COUNTER, COUNTER,\n"
    "                        a metric (IPC, ...), calls or name (default: incl of\n"
    "                        the first counter)\n"
    "  -t, --per-thread      one row per function and thread\n"
    "      --syscalls        the system calls instead: per syscall its calls, errors\n"
    "                        and times (total, avg, min, max, p50, p99), and per\n"
    "                        function the syscalls it made\n"
    "      --memory          the heap instead (record --memory): per call site and\n"
    "                        function the live objects and bytes, peak, allocations,\n"
    "                        growth; illegal releases, overlaps, unfreed at exit\n"
    "                        (text or json)\n"
    "      --layers          time per layer instead: per function (inclusive and\n"
    "                        self) and per thread, the time running its own code,\n"
    "                        in system calls, off the CPU by state (preempted,\n"
    "                        sleeping, blocked), in irqs and softirqs, with page\n"
    "                        faults and context switches (record --kernel,\n"
    "                        --syscalls; text or json)\n"
    "      --kernel          the kernel events instead (record --kernel): per type,\n"
    "                        thread, function and syscall; off-CPU time per reason\n"
    "                        with who woke the thread; block requests per syscall\n"
    "      --counters        the counters instead (record --counters): the program's\n"
    "                        totals and per CPU, per thread, per function (inclusive\n"
    "                        and self), with IPC, misses per 1000 instructions and\n"
    "                        miss ratios where the counters are there (text, json, xml)\n"
    "      --sync            the synchronisation instead (record --sync): per lock its\n"
    "                        acquisitions, contention, wait (total, max, p99) and\n"
    "                        hold times; per condition and semaphore who waits and\n"
    "                        who signals; barriers, joins, per-thread waits, the\n"
    "                        producer/consumer balance, futex waits of other code\n"
    "                        (text, json or xml; --sort wait, ops, avg, max, hold,\n"
    "                        contended, name)\n"
    "      --energy          the energy instead (record --counters), estimated with\n"
    "                        --model: per program (with the meter's joules when\n"
    "                        recorded with --power), CPU, thread and function\n"
    "                        (inclusive and self) in joules and mean watts (text or\n"
    "                        json; --sort incl, self or calls)\n"
    "      --model FILE      the energy model (energy train's JSON) for --energy\n"
    "      --at-peak         with --memory: the state when the heap was largest\n"
    "      --at TIME         with --memory: the state TIME after the recording began\n"
    "                        (e.g. 1.5s, 200ms)\n"
    "      --format FMT      text (default), json, xml (docs/report.xsd) or html (one\n"
    "                        self-contained page); xml and html hold the flat profile,\n"
    "                        the call trees and the system calls together (with\n"
    "                        --memory: the heap, with a growth chart)\n"
    "  -o, --output FILE     write to FILE (default: standard output)\n" FILTER_HELP
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 1 failure (also --energy with a bad model file or a\n"
    "trace without the counters the model needs), 2 usage (also --counters or\n"
    "--sync on a trace without them), 3 trace missing, empty, damaged or of\n"
    "another version.\n";

/* Output buffer: the documents are written in many small pieces. */
#define REPORT_OUT_BUFFER (1u << 20)

/* Points stdout at -o's file out (none: left as it is), never through a
 * link another user planted beside it.  0, or the exit code with the
 * message said (the walk is the caller's, released by it). */
static int report_redirect(const char *out)
{
	FILE *f;

	if (!out)
		return LP_EXIT_OK;
	f = outfile_open(out);
	if (!f || fflush(stdout) || dup2(fileno(f), STDOUT_FILENO) < 0) {
		fprintf(stderr, "layerprof report: cannot write '%s': %s\n", out, outfile_strerror(errno));
		if (f)
			fclose(f);
		return LP_EXIT_FAILURE;
	}
	fclose(f);
	return LP_EXIT_OK;
}

/* After a document was written to stdout (which points at -o's file; out
 * names it, NULL: the real standard output, and it is removed when writing
 * fails) with the writer's result r: prints any error and the trace's
 * condition, and returns the exit code: 0, 1 (memory, writing) or 3
 * (damaged trace: the readable part is in the report). */
static int report_finish(struct walk *w, int r, const char *out)
{
	int code, werr = 0;

	if (r == -ENOMEM) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", w->dir);
		if (out)
			unlink(out);
		return LP_EXIT_FAILURE;
	}
	code = layerprof_trace_condition(w, "report");
	if (fflush(stdout))
		werr = errno;
	if (r == -EIO && !werr)
		werr = EIO;
	if (werr) {
		fprintf(stderr, "layerprof report: cannot write '%s': %s\n", out ? out : "standard output",
		        strerror(werr));
		if (out)
			unlink(out);
		code = LP_EXIT_FAILURE;
	}
	return code;
}

static int report_write(struct walk *w, const struct export_report_opts *o, const char *out)
{
	setvbuf(stdout, NULL, _IOFBF, REPORT_OUT_BUFFER);
	return report_finish(w, export_report_write(w, o, stdout), out);
}

/* report --counters: its options from report's.  Returns 0 or the exit
 * code after printing why. */
static int counters_opts(struct ctrreport_opts *co, const struct export_report_opts *o, const char *sort, bool others)
{
	memset(co, 0, sizeof(*co));
	if (others) {
		fprintf(stderr, "layerprof report: --counters goes alone: not with --memory, --syscalls, --layers, "
		                "--kernel, --at-peak or --at\n");
		return LP_EXIT_USAGE;
	}
	if (o->fmt == EXPORT_REPORT_HTML) {
		fprintf(stderr, "layerprof report: --counters is text, json or xml\n");
		return LP_EXIT_USAGE;
	}
	co->fmt = o->fmt;
	co->per_thread = (o->flags & PROFILE_PER_THREAD) != 0;
	if (!sort) {
		ctrstats_order_default(&co->order);
	} else if (ctrstats_order_parse(&co->order, sort)) {
		fprintf(stderr,
		        "layerprof report: invalid --sort '%s': use incl:COUNTER, self:COUNTER, COUNTER, a metric, "
		        "calls, name\n",
		        sort);
		return LP_EXIT_USAGE;
	}
	return LP_EXIT_OK;
}

/* Writes report --counters to stdout, as report_write the others; a trace
 * without counter values, or a sort key naming none of its counters, is
 * refused with LP_EXIT_USAGE and nothing written. */
static int counters_write(struct walk *w, const struct ctrreport_opts *co, const char *out)
{
	char err[256] = "";
	int r;

	setvbuf(stdout, NULL, _IOFBF, REPORT_OUT_BUFFER);
	r = ctrreport_write(w, co, stdout, err, sizeof(err));
	if (r == -ENODATA || r == -EINVAL) {
		fprintf(stderr, "layerprof report: %s%s\n", r == -EINVAL ? "invalid --sort: " : "", err);
		if (out)
			unlink(out);
		return LP_EXIT_USAGE;
	}
	return report_finish(w, r, out);
}

/* report --sync: its own pass and document (export/syncreport.c).  The
 * other modes and --per-thread are refused; --sort takes its keys. */
static int report_sync(const char *dir, const struct filter_opts *fopts, const struct export_report_opts *o,
                       const char *sort, bool other_mode, const char *out)
{
	struct syncreport_opts so = { .fmt = o->fmt };
	struct walk w;
	int code, r;

	if (other_mode || o->at_peak || o->has_at || (o->flags & PROFILE_PER_THREAD)) {
		fprintf(stderr, "layerprof report: --sync goes alone (not with --memory, --syscalls, --layers, "
		                "--kernel, --counters, --at, --at-peak or --per-thread)\n");
		return LP_EXIT_USAGE;
	}
	if (o->fmt == EXPORT_REPORT_HTML) {
		fprintf(stderr, "layerprof report: --sync is text, json or xml\n");
		return LP_EXIT_USAGE;
	}
	if (sort && syncstats_order_parse(&so.order, sort)) {
		fprintf(stderr,
		        "layerprof report: invalid --sort '%s' with --sync: use wait, ops, avg, max, hold, "
		        "contended, name\n",
		        sort);
		return LP_EXIT_USAGE;
	}
	code = builtin_trace_open("report", &w, dir, fopts);
	if (code)
		return code;
	code = report_redirect(out);
	if (code) {
		walk_release(&w);
		return code;
	}
	setvbuf(stdout, NULL, _IOFBF, REPORT_OUT_BUFFER);
	r = syncreport_write(&w, &so, stdout);
	if (r == -ENODATA || r == -ENOMEM) {
		/* nothing written: no document left behind */
		if (out)
			unlink(out);
		code = layerprof_trace_condition(&w, "report");
		if (r == -ENOMEM) {
			fprintf(stderr, "layerprof report: out of memory reading '%s'\n", w.dir);
			code = LP_EXIT_FAILURE;
		} else if (!code) {
			/* as for a mode the trace was not recorded for: a usage error */
			fprintf(stderr,
			        "layerprof report: the trace has no synchronisation events: record with --sync\n");
			code = LP_EXIT_USAGE;
		}
		walk_release(&w);
		return code;
	}
	code = report_finish(&w, r, out);
	walk_release(&w);
	return code;
}

/* report --energy: the model applied to the trace's counters
 * (export/energyreport.c).  The other modes are refused; --sort takes
 * incl, self or calls; a bad model or a trace without the counters the
 * model needs is a failure (1), with nothing written. */
static int report_energy(const char *dir, const struct filter_opts *fopts, const struct export_report_opts *o,
                         const char *sort, const char *model, bool other_mode, const char *out)
{
	struct energyreport_opts eo = { .fmt = o->fmt, .per_thread = (o->flags & PROFILE_PER_THREAD) != 0 };
	static struct emodel m; /* large: not on the stack */
	char err[1024] = "";
	struct walk w;
	int code, r;

	if (other_mode || o->at_peak || o->has_at) {
		fprintf(stderr, "layerprof report: --energy goes alone (not with --memory, --syscalls, --layers, "
		                "--kernel, --counters, --sync, --at or --at-peak)\n");
		return LP_EXIT_USAGE;
	}
	if (!model) {
		fprintf(stderr, "layerprof report: --energy needs --model FILE (made by layerprof energy train)\n");
		return LP_EXIT_USAGE;
	}
	if (o->fmt != EXPORT_REPORT_TEXT && o->fmt != EXPORT_REPORT_JSON) {
		fprintf(stderr, "layerprof report: --energy is text or json\n");
		return LP_EXIT_USAGE;
	}
	if (sort && energyreport_sort_parse(&eo.sort, sort)) {
		fprintf(stderr, "layerprof report: invalid --sort '%s' with --energy: use incl, self, calls\n", sort);
		return LP_EXIT_USAGE;
	}
	if (emodel_load(&m, model, err, sizeof(err))) {
		fprintf(stderr, "layerprof report: %s\n", err);
		return LP_EXIT_FAILURE;
	}
	eo.model = &m;
	eo.model_path = model;
	code = builtin_trace_open("report", &w, dir, fopts);
	if (code)
		return code;
	code = report_redirect(out);
	if (code) {
		walk_release(&w);
		return code;
	}
	setvbuf(stdout, NULL, _IOFBF, REPORT_OUT_BUFFER);
	r = energyreport_write(&w, &eo, stdout, err, sizeof(err));
	if (r == -ENODATA || r == -ENOENT) {
		/* nothing written: no document left behind */
		if (out)
			unlink(out);
		code = layerprof_trace_condition(&w, "report");
		if (!code) {
			fprintf(stderr, "layerprof report: %s\n", err);
			code = LP_EXIT_FAILURE;
		}
		walk_release(&w);
		return code;
	}
	/* the trace's META is known once it was read */
	if (!r && energyreport_other_machine(&w, &m, err, sizeof(err)))
		fprintf(stderr, "layerprof report: warning: %s\n", err);
	code = report_finish(&w, r, out);
	walk_release(&w);
	return code;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "per-thread", no_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "syscalls", no_argument, NULL, 'Y' },
		{ "memory", no_argument, NULL, 'M' },
		{ "layers", no_argument, NULL, 'L' },
		{ "kernel", no_argument, NULL, 'K' },
		{ "at-peak", no_argument, NULL, 'P' },
		{ "at", required_argument, NULL, 'A' },
		{ "counters", no_argument, NULL, 'C' },
		{ "sync", no_argument, NULL, 'W' },
		{ "energy", no_argument, NULL, 'E' },
		{ "model", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct export_report_opts o = { .fmt = EXPORT_REPORT_TEXT, .order = { .keys = { PROFILE_TOTAL }, .nkeys = 1 } };
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data", *out = NULL;
	bool syscalls = false, memory = false, layers = false, kernel = false;
	bool counters = false, sync = false, energy = false;
	const char *sort = NULL, *model = NULL;
	struct ctrreport_opts co;
	struct walk w;
	int c, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:tho:F:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sort = optarg; /* parsed below: --counters sorts by its own keys */
			break;
		case 't':
			o.flags |= PROFILE_PER_THREAD;
			break;
		case 'Y':
			syscalls = true;
			break;
		case 'M':
			memory = true;
			break;
		case 'L':
			layers = true;
			break;
		case 'K':
			kernel = true;
			break;
		case 'C':
			counters = true;
			break;
		case 'W':
			sync = true;
			break;
		case 'E':
			energy = true;
			break;
		case 'm':
			model = optarg;
			break;
		case 'P':
			o.at_peak = true;
			break;
		case 'A':
			if (options_parse_duration(optarg, &o.at_ns)) {
				fprintf(stderr, "layerprof report: invalid --at '%s': a time such as 1.5s or 200ms\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			o.has_at = true;
			break;
		case 'f':
			o.fmt = export_report_format_parse(optarg);
			if (o.fmt == EXPORT_REPORT_NONE) {
				fprintf(stderr, "layerprof report: invalid --format '%s': text, json, xml or html\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return LP_EXIT_OK;
		default:
			if (builtin_filter_option(&fopts, c, optarg, "report", report_usage))
				break;
			return LP_EXIT_USAGE;
		}
	}
	if (builtin_trace_operand("report", argc, argv, optind, &dir))
		return LP_EXIT_USAGE;
	if (model && !energy) {
		fprintf(stderr, "layerprof report: --model goes with --energy\n");
		return LP_EXIT_USAGE;
	}
	if (energy)
		return report_energy(dir, &fopts, &o, sort, model,
		                     memory || syscalls || layers || kernel || counters || sync, out);
	if (sync)
		return report_sync(dir, &fopts, &o, sort, memory || syscalls || layers || kernel || counters, out);
	if (sort && !counters && profile_order_parse(&o.order, sort)) {
		fprintf(stderr, "layerprof report: invalid --sort '%s': use total, self, calls, avg, min, max, name\n",
		        sort);
		return LP_EXIT_USAGE;
	}
	if ((o.at_peak || o.has_at) && !memory) {
		fprintf(stderr, "layerprof report: --at-peak and --at go with --memory\n");
		return LP_EXIT_USAGE;
	}
	if (o.at_peak && o.has_at) {
		fprintf(stderr, "layerprof report: --at-peak or --at, not both\n");
		return LP_EXIT_USAGE;
	}
	if (memory + syscalls + layers + kernel > 1) {
		fprintf(stderr, "layerprof report: one of --memory, --syscalls, --layers and --kernel\n");
		return LP_EXIT_USAGE;
	}
	if ((layers || kernel) && (o.fmt == EXPORT_REPORT_XML || o.fmt == EXPORT_REPORT_HTML)) {
		fprintf(stderr, "layerprof report: --layers and --kernel are text or json\n");
		return LP_EXIT_USAGE;
	}
	if (counters &&
	    (code = counters_opts(&co, &o, sort, memory || syscalls || layers || kernel || o.at_peak || o.has_at)))
		return code;
	o.what = memory     ? EXPORT_REPORT_MEMORY
	         : syscalls ? EXPORT_REPORT_SYSCALLS
	         : layers   ? EXPORT_REPORT_LAYERS
	         : kernel   ? EXPORT_REPORT_KERNEL
	                    : EXPORT_REPORT_PROFILE;
	code = builtin_trace_open("report", &w, dir, &fopts);
	if (code)
		return code;
	code = report_redirect(out);
	if (code) {
		walk_release(&w);
		return code;
	}
	code = counters ? counters_write(&w, &co, out) : report_write(&w, &o, out);
	walk_release(&w);
	return code;
}
