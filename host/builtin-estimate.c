/* layerprof estimate: a program's run time on a characterised platform
 * (a calibration of layerprof oscal run) from its trace, its system and C
 * library calls replaced by their models (host/lib/oscal/estimate.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/estimate-recorder.h"
#include "host/lib/oscal/estimate.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"
#include "host/lib/util/options.h"

static const char estimate_usage[] =
    "usage: layerprof estimate --cal FILE [options] [<trace dir>]\n"
    "       layerprof estimate --calibrate-recorder [--libcalls] [--reps N] [--keep DIR] [-o FILE]\n"
    "\n"
    "Estimates a program's run time on the platform a calibration characterises\n"
    "(layerprof oscal run) from its trace (default layerprof.data), recorded with\n"
    "--syscalls and/or --libcalls: each system call and C library call the\n"
    "calibration models takes the model's time at its parameter (bytes, ...)\n"
    "instead of its measured time, thread by thread; calls that wait for another\n"
    "task or for time keep their measured time; with the scheduler's switches in\n"
    "the trace (record --kernel), the time a thread was preempted is taken off.\n"
    "Prints the trace's measured span, the estimate without the call models (their\n"
    "time taken as 0) and with them, and per call name what was modelled and what\n"
    "was not.  See docs/estimate.md.\n"
    "\n"
    "      --cal FILE        the calibration (layerprof oscal run -o FILE)\n"
    "      --measured DUR    the program's measured run time (\"1.25s\", \"850ms\"):\n"
    "                        the estimates' errors against it\n"
    "      --overhead DUR[,DUR]  the recorder's cost per system call [, per C library\n"
    "                        call] outside the calls' measured times, taken off the\n"
    "                        time line (default: the least gap between two\n"
    "                        consecutive calls of a thread in the trace; 0ns: none)\n"
    "      --recorder FILE   the recorder's costs per call from a recorder calibration\n"
    "                        (refused for a trace of another machine or mode)\n"
    "      --calibrate-recorder  record the call suite (layerprof-oscal) with record\n"
    "                        --syscalls, or with --libcalls --dynamic --libcalls\n"
    "                        --syscalls, and write the recorder's costs per call\n"
    "                        (JSON) for --recorder; --reps N timed calls per entry\n"
    "                        (default 2000), --keep DIR keeps the trace and output\n"
    "      --calls           list every call with its entry, x and times (json: \"calls\")\n"
    "      --format FMT      text (default) or json\n"
    "  -o, --output FILE     write there instead of stdout\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 1 no calibration, a bad one, or a failure, 2 usage, 3 trace\n"
    "missing, empty, damaged, of another version, or without system or C library calls.\n";

enum {
	OPT_CAL = 256,
	OPT_MEASURED,
	OPT_CALLS,
	OPT_FORMAT,
	OPT_OVERHEAD,
	OPT_RECORDER,
	OPT_CALIBRATE,
	OPT_LIBCALLS,
	OPT_REPS,
	OPT_KEEP,
};

/* --overhead SYS[,LIB]: LIB defaults to SYS.  Returns 0 or -EINVAL. */
static int parse_overhead(const char *arg, struct estimate_opts *o)
{
	char buf[64];
	const char *comma = strchr(arg, ',');
	uint64_t a, b;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%.*s", comma ? (int)(comma - arg) : (int)strlen(arg), arg);
	if (options_parse_duration(buf, &a))
		return -EINVAL;
	b = a;
	if (comma && options_parse_duration(comma + 1, &b))
		return -EINVAL;
	o->overhead_given = true;
	o->overhead_sys_ns = (double)a;
	o->overhead_lib_ns = (double)b;
	return 0;
}

struct calls_out {
	FILE *f;
	bool json;
	uint64_t n, t0;
};

static void put_call(void *ctx, const struct estimate_call *c)
{
	struct calls_out *o = ctx;

	if (o->json) {
		fprintf(o->f, "%s{\"pid\":%u,\"tid\":%u,\"name\":", o->n ? "," : "", c->pid, c->tid);
		json_write_string(o->f, c->name);
		fputs(",\"call\":", o->f);
		json_write_string(o->f, c->call);
		fputs(",\"entry\":", o->f);
		json_write_string(o->f, c->entry);
		fprintf(o->f,
		        ",\"libcall\":%s,\"fate\":\"%s\",\"enter_ns\":%llu,\"exit_ns\":%llu,\"x\":%.17g,"
		        "\"measured_ns\":%.17g,\"model_ns\":%.17g}",
		        c->libcall ? "true" : "false", estimate_fate_name(c->fate), (unsigned long long)c->enter_ns,
		        (unsigned long long)c->exit_ns, c->x, c->measured_ns, c->model_ns);
	} else {
		fprintf(o->f, "  %7u %-16s %-12s %-20s x=%-10.0f %12.0f ns -> %12.0f ns\n", c->tid, c->name,
		        estimate_fate_name(c->fate), c->entry[0] ? c->entry : "-", c->x, c->measured_ns, c->model_ns);
	}
	o->n++;
}

static int copy_out(FILE *from, FILE *to)
{
	char buf[65536];
	size_t n;

	rewind(from);
	while ((n = fread(buf, 1, sizeof(buf), from)) > 0)
		if (fwrite(buf, 1, n, to) != n)
			return -EIO;
	return ferror(from) ? -EIO : 0;
}

static void fmt_dur(double ns, char *buf, size_t size)
{
	options_format_duration(ns > 0 ? (uint64_t)llround(ns) : 0, buf, size);
}

static void print_text(FILE *f, const struct estimate *e, const char *dir, const char *calpath,
                       const struct oscal_cal *cal, bool has_measured, uint64_t measured)
{
	char a[32], b[32];
	uint32_t i;
	bool first = true;

	fprintf(f, "trace %s: %u threads, %llu system calls, %llu C library calls\n", dir, e->nthreads,
	        (unsigned long long)e->syscalls, (unsigned long long)e->libcalls);
	fprintf(f, "calibration %s: %s, %s, %s\n\n", calpath, cal->machine.arch[0] ? cal->machine.arch : "-",
	        cal->machine.host[0] ? cal->machine.host : "-", cal->source[0] ? cal->source : "-");
	fmt_dur(e->span_ns, a, sizeof(a));
	fprintf(f, "  measured span (trace)       %12s\n", a);
	fmt_dur(e->overhead_sys_ns, a, sizeof(a));
	fmt_dur(e->overhead_lib_ns, b, sizeof(b));
	fprintf(f, "  recorder's cost per call    %12s (system call), %s (C library call), taken off\n", a, b);
	if (e->switches) {
		uint64_t n = 0;

		for (i = 0; i < e->nthreads; i++)
			n += e->threads[i].preemptions;
		fmt_dur(e->preempted_ns, a, sizeof(a));
		fprintf(f, "  preempted (runnable)        %12s (%llu times, outside modelled calls), taken off\n", a,
		        (unsigned long long)n);
	} else {
		fprintf(f, "  preempted (runnable)        %12s (record --kernel to take it off)\n", "not recorded");
	}
	fmt_dur(e->without_ns, a, sizeof(a));
	fprintf(f, "  estimate without the models %12s", a);
	if (has_measured)
		fprintf(f, "   error %+.1f %%", 100.0 * (e->without_ns - (double)measured) / (double)measured);
	fmt_dur(e->estimate_ns, a, sizeof(a));
	fprintf(f, "\n  estimate with the models    %12s", a);
	if (has_measured)
		fprintf(f, "   error %+.1f %%", 100.0 * (e->estimate_ns - (double)measured) / (double)measured);
	fputc('\n', f);
	if (has_measured) {
		fmt_dur((double)measured, a, sizeof(a));
		fprintf(f, "  measured run (--measured)   %12s\n", a);
	}
	for (i = 0; i < e->nrows; i++) {
		const struct estimate_row *r = &e->rows[i];

		if (r->fate != ESTIMATE_MODELLED)
			continue;
		if (first)
			fprintf(f, "\nmodelled calls      %10s %12s %12s  %s\n", "calls", "measured", "model", "entry");
		first = false;
		fmt_dur(r->measured_ns, a, sizeof(a));
		fmt_dur(r->model_ns, b, sizeof(b));
		fprintf(f, "  %-18s %10llu %12s %12s  %s\n", r->name, (unsigned long long)r->count, a, b, r->entry);
	}
	first = true;
	for (i = 0; i < e->nrows; i++) {
		const struct estimate_row *r = &e->rows[i];

		if (r->fate == ESTIMATE_MODELLED)
			continue;
		if (first)
			fprintf(f, "\nnot modelled (measured time kept) %10s %12s  %s\n", "calls", "measured", "why");
		first = false;
		fmt_dur(r->measured_ns, a, sizeof(a));
		fprintf(f, "  %-32s %10llu %12s  %s\n", r->name, (unsigned long long)r->count, a,
		        estimate_fate_name(r->fate));
	}
}

static void print_json(FILE *f, const struct estimate *e, const char *dir, const char *calpath, bool has_measured,
                       uint64_t measured, FILE *calls)
{
	struct json j;
	uint32_t i;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", dir);
	json_str(&j, "calibration", calpath);
	json_u64(&j, "threads_count", e->nthreads);
	json_u64(&j, "syscalls", e->syscalls);
	json_u64(&j, "libcalls", e->libcalls);
	json_u64(&j, "start_ns", e->t0);
	json_u64(&j, "end_ns", e->t1);
	json_f64_exact(&j, "span_ns", e->span_ns);
	json_f64_exact(&j, "gap_sys_ns", e->gap_sys_ns);
	json_f64_exact(&j, "gap_lib_ns", e->gap_lib_ns);
	json_f64_exact(&j, "overhead_sys_ns", e->overhead_sys_ns);
	json_f64_exact(&j, "overhead_lib_ns", e->overhead_lib_ns);
	json_bool(&j, "switches", e->switches);
	json_f64_exact(&j, "preempted_ns", e->preempted_ns);
	json_f64_exact(&j, "without_ns", e->without_ns);
	json_f64_exact(&j, "estimate_ns", e->estimate_ns);
	if (has_measured) {
		json_u64(&j, "measured_ns", measured);
		json_f64_exact(&j, "error_without", (e->without_ns - (double)measured) / (double)measured);
		json_f64_exact(&j, "error", (e->estimate_ns - (double)measured) / (double)measured);
	}
	json_array_begin(&j, "modelled");
	for (i = 0; i < e->nrows; i++) {
		const struct estimate_row *r = &e->rows[i];

		if (r->fate != ESTIMATE_MODELLED)
			continue;
		json_object_begin(&j, NULL);
		json_str(&j, "name", r->name);
		json_str(&j, "entry", r->entry);
		json_u64(&j, "count", r->count);
		json_f64_exact(&j, "measured_ns", r->measured_ns);
		json_f64_exact(&j, "model_ns", r->model_ns);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "unmodelled");
	for (i = 0; i < e->nrows; i++) {
		const struct estimate_row *r = &e->rows[i];

		if (r->fate == ESTIMATE_MODELLED)
			continue;
		json_object_begin(&j, NULL);
		json_str(&j, "name", r->name);
		json_str(&j, "why", estimate_fate_name(r->fate));
		json_u64(&j, "count", r->count);
		json_f64_exact(&j, "measured_ns", r->measured_ns);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "threads");
	for (i = 0; i < e->nthreads; i++) {
		const struct estimate_thread *t = &e->threads[i];

		json_object_begin(&j, NULL);
		json_u64(&j, "pid", t->pid);
		json_u64(&j, "tid", t->tid);
		json_i64(&j, "creator_tid", t->creator >= 0 ? (int64_t)e->threads[t->creator].tid : -1);
		json_u64(&j, "first_ns", t->first_ns);
		json_u64(&j, "last_ns", t->last_ns);
		json_u64(&j, "modelled", t->modelled);
		json_u64(&j, "calls", t->calls);
		json_f64_exact(&j, "overhead_ns", t->overhead);
		json_f64_exact(&j, "preempted_ns", t->preempted);
		json_u64(&j, "preemptions", t->preemptions);
		json_f64_exact(&j, "delta_ns", t->delta);
		json_f64_exact(&j, "delta_without_ns", t->delta_wo);
		json_f64_exact(&j, "start_ns", t->start);
		json_f64_exact(&j, "end_ns", t->end);
		json_f64_exact(&j, "start_without_ns", t->start_wo);
		json_f64_exact(&j, "end_without_ns", t->end_wo);
		json_object_end(&j);
	}
	json_array_end(&j);
	if (calls) {
		fputs(",\"calls\":[", f);
		copy_out(calls, f);
		fputc(']', f);
	}
	json_object_end(&j);
	json_finish(&j);
}

int cmd_estimate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cal", required_argument, NULL, OPT_CAL },
		{ "measured", required_argument, NULL, OPT_MEASURED },
		{ "calls", no_argument, NULL, OPT_CALLS },
		{ "overhead", required_argument, NULL, OPT_OVERHEAD },
		{ "recorder", required_argument, NULL, OPT_RECORDER },
		{ "calibrate-recorder", no_argument, NULL, OPT_CALIBRATE },
		{ "libcalls", no_argument, NULL, OPT_LIBCALLS },
		{ "reps", required_argument, NULL, OPT_REPS },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = "layerprof.data", *calpath = NULL, *outpath = NULL, *recpath = NULL, *keep = NULL;
	bool json = false, list = false, has_measured = false, calibrate = false, libcalls = false;
	unsigned long reps = 2000;
	char *end;
	struct recorder_cal rc;
	uint64_t measured = 0;
	struct oscal_cal cal;
	struct estimate e;
	struct walk w;
	struct filter_opts fopts = { 0 };
	struct calls_out co = { 0 };
	struct estimate_opts eo = { 0 };
	char err[512], hint[128];
	FILE *out = stdout;
	int c, code, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CAL:
			calpath = optarg;
			break;
		case OPT_MEASURED:
			if (options_parse_duration(optarg, &measured) || !measured) {
				fprintf(stderr, "layerprof estimate: invalid --measured '%s': %s\n", optarg,
				        measured ? options_duration_hint(optarg, hint, sizeof(hint))
				                 : "a duration above 0, e.g. 1.25s");
				return LP_EXIT_USAGE;
			}
			has_measured = true;
			break;
		case OPT_CALLS:
			list = true;
			break;
		case OPT_OVERHEAD:
			if (parse_overhead(optarg, &eo)) {
				fprintf(stderr,
				        "layerprof estimate: invalid --overhead '%s': a duration, or two "
				        "separated by a comma (\"800ns,150ns\")\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case OPT_RECORDER:
			recpath = optarg;
			break;
		case OPT_CALIBRATE:
			calibrate = true;
			break;
		case OPT_LIBCALLS:
			libcalls = true;
			break;
		case OPT_REPS:
			errno = 0;
			reps = strtoul(optarg, &end, 10);
			if (errno || *end || !reps || reps > 100000) {
				fprintf(stderr, "layerprof estimate: invalid --reps '%s': 1 to 100000\n", optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case OPT_KEEP:
			keep = optarg;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof estimate: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'h':
			fputs(estimate_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(estimate_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (calibrate) {
		if (optind < argc || calpath || recpath || eo.overhead_given) {
			fprintf(stderr, "layerprof estimate: --calibrate-recorder takes no trace, --cal, --recorder "
			                "or --overhead\n");
			return LP_EXIT_USAGE;
		}
		return recorder_calibrate(libcalls, (unsigned)reps, keep, outpath);
	}
	if (libcalls || keep) {
		fprintf(stderr, "layerprof estimate: --libcalls and --keep go with --calibrate-recorder\n");
		return LP_EXIT_USAGE;
	}
	if (recpath && eo.overhead_given) {
		fprintf(stderr, "layerprof estimate: --recorder and --overhead: give one\n");
		return LP_EXIT_USAGE;
	}
	if (builtin_trace_operand("estimate", argc, argv, optind, &dir))
		return LP_EXIT_USAGE;
	if (!calpath) {
		fprintf(stderr, "layerprof estimate: no calibration: give --cal FILE (layerprof oscal run -o FILE)\n");
		return LP_EXIT_FAILURE;
	}
	oscal_cal_init(&cal);
	r = oscal_cal_read(calpath, &cal, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof estimate: %s\n", err);
		oscal_cal_release(&cal);
		return LP_EXIT_FAILURE;
	}
	if (recpath) {
		if (recorder_cal_read(recpath, &rc, err, sizeof(err))) {
			fprintf(stderr, "layerprof estimate: %s\n", err);
			oscal_cal_release(&cal);
			return LP_EXIT_FAILURE;
		}
		eo.overhead_given = true;
		eo.overhead_sys_ns = rc.overhead_sys_ns > 0 ? rc.overhead_sys_ns : 0;
		eo.overhead_lib_ns = rc.overhead_lib_ns > 0 ? rc.overhead_lib_ns : 0;
	}
	code = builtin_trace_open("estimate", &w, dir, &fopts);
	if (code) {
		oscal_cal_release(&cal);
		return code;
	}
	if (list) {
		co.f = tmpfile();
		co.json = json;
		if (!co.f) {
			fprintf(stderr, "layerprof estimate: cannot make a temporary file: %s\n", strerror(errno));
			code = LP_EXIT_FAILURE;
			goto out;
		}
		eo.on_call = put_call;
		eo.ctx = &co;
	}
	estimate_init(&e, &cal, &eo);
	r = estimate_run(&e, &w, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof estimate: %s: %s\n", dir, err);
		code = r == -ENODATA ? LP_EXIT_TRACE : LP_EXIT_FAILURE;
		goto out_e;
	}
	if (recpath) {
		char host[128], arch[32];
		const char *mode = e.libcalls ? "libcalls" : "syscalls";

		if (!walk_meta(&w, "host", host, sizeof(host)))
			host[0] = '\0';
		if (!walk_meta(&w, "arch", arch, sizeof(arch)))
			arch[0] = '\0';
		if (strcmp(mode, rc.mode) || strcmp(host, rc.host) || strcmp(arch, rc.arch)) {
			fprintf(
			    stderr,
			    "layerprof estimate: recorder calibration '%s' is for %s, %s, record %s; the trace is of "
			    "%s, %s, record %s\n",
			    recpath, rc.host, rc.arch, rc.mode, host, arch, mode);
			code = LP_EXIT_FAILURE;
			goto out_e;
		}
	}
	code = layerprof_trace_condition(&w, "estimate");
	if (outpath) {
		int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

		out = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!out) {
			fprintf(stderr, "layerprof estimate: cannot write '%s': %s\n", outpath, strerror(errno));
			if (fd >= 0)
				close(fd);
			out = stdout;
			code = LP_EXIT_FAILURE;
			goto out_e;
		}
	}
	if (json) {
		print_json(out, &e, dir, calpath, has_measured, measured, co.f);
	} else {
		print_text(out, &e, dir, calpath, &cal, has_measured, measured);
		if (co.f) {
			fprintf(out, "\ncalls\n  %7s %-16s %-12s %-20s %-12s %15s    %12s\n", "tid", "name", "fate",
			        "entry", "x", "measured", "model");
			copy_out(co.f, out);
		}
	}
	if (fflush(out) || ferror(out)) {
		fprintf(stderr, "layerprof estimate: cannot write %s\n", outpath ? outpath : "the output");
		code = LP_EXIT_FAILURE;
	}
out_e:
	estimate_release(&e);
out:
	if (out != stdout)
		fclose(out);
	if (co.f)
		fclose(co.f);
	walk_release(&w);
	oscal_cal_release(&cal);
	return code;
}
