/* layerprof oscal report: a calibration's statistics and models per
 * entry, as a text table, as JSON (the analysis without the raw samples)
 * or as one HTML page (oscal-html.c). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/util/json.h"
#include "host/oscal.h"

static const char report_usage[] = "usage: layerprof oscal report [options] FILE.cal\n"
                                   "\n"
                                   "A calibration's entries: count, mean, sd, min, percentiles, max of their\n"
                                   "times, the model (constant, linear or piecewise-linear in the parameter),\n"
                                   "its r2 and mean relative error, the flags of a large spread.  JSON gives\n"
                                   "the whole analysis without the raw samples; HTML one page with each\n"
                                   "entry's 30-bin histogram and its series with the model.\n"
                                   "\n"
                                   "      --format FMT      text, json or html (default text)\n"
                                   "  -o, --output FILE     write there (default stdout)\n"
                                   "      --calls PATTERNS  only entries whose name or call matches one of the\n"
                                   "                        comma-separated globs\n"
                                   "  -h, --help            this text\n"
                                   "\n"
                                   "Exit status: 0 ok, 1 a missing or bad calibration, or a write error, 2 usage.\n";

/* The columns of a number of display characters (UTF-8: continuation
 * bytes take none). */
static size_t display_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

void oscal_report_header(FILE *f, const struct oscal_cal *c, const char *path)
{
	uint32_t n[4] = { 0, 0, 0, 0 };
	char b[32];

	for (uint32_t i = 0; i < c->nentries; i++)
		n[c->entries[i].status <= OSCAL_PENDING ? c->entries[i].status : OSCAL_PENDING]++;
	fprintf(f, "calibration %s: created %s, source %s, %s\n", path, c->created, c->source,
	        c->complete ? "complete" : "incomplete (an interrupted run: --resume goes on)");
	fprintf(f, "machine: host %s, %s, %u CPUs, Linux %s, %s, cpu %s\n", c->machine.host, c->machine.arch,
	        c->machine.cpus, c->machine.kernel, c->machine.libc, c->machine.cpu[0] ? c->machine.cpu : "-");
	fprintf(f, "clock: %s, resolution %g ns, overhead %s ns a read pair (subtracted from every sample)\n",
	        c->clock.name, c->clock.resolution_ns, oscal_fmt_ns(c->clock.overhead_ns, b, sizeof(b)));
	fprintf(f, "settings: %u repetitions and %u warm-up runs per parameter value, quick %s, calls %s\n",
	        c->settings.reps, c->settings.warmup, c->settings.quick ? "yes" : "no",
	        c->settings.calls[0] ? c->settings.calls : "all");
	fprintf(f, "outliers: %s\n", oscal_outlier_rule);
	fprintf(f,
	        "threshold: a cluster is split while its spread (sd of its residuals / mean) is above %g, "
	        "at most %u clusters\n",
	        c->settings.threshold, OSCAL_CLUSTERS_MAX);
	fprintf(f, "entries: %u: %u measured, %u skipped, %u failed%s\n", c->nentries, n[OSCAL_MEASURED],
	        n[OSCAL_SKIPPED], n[OSCAL_FAILED], n[OSCAL_PENDING] ? " (and some pending)" : "");
}

/* The flags of an entry: "spread", "clusters=N", "outliers=N"; "-". */
static const char *entry_flags(const struct oscal_entry *e, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	if (e->spread_high)
		used += (size_t)snprintf(buf + used, size - used, "spread");
	if (e->nclusters > 1 && used < size)
		used += (size_t)snprintf(buf + used, size - used, "%sclusters=%u", used ? "," : "", e->nclusters);
	if (e->st.outliers && used < size)
		snprintf(buf + used, size - used, "%soutliers=%llu", used ? "," : "",
		         (unsigned long long)e->st.outliers);
	if (!buf[0])
		snprintf(buf, size, "-");
	return buf;
}

static void report_text(FILE *f, const struct oscal_cal *c, const char *path, const char *calls)
{
	char model[160];
	size_t mw = 5;
	bool pieces = false;

	oscal_report_header(f, c, path);
	for (uint32_t i = 0; i < c->nentries; i++) {
		oscal_model_text(&c->entries[i], model, sizeof(model));
		if (oscal_calls_match(calls, c->entries[i].name, c->entries[i].call) && display_width(model) > mw)
			mw = display_width(model);
	}
	fprintf(f, "\n%-26s %-7s %6s %9s %9s %9s %9s %9s %9s  %-*s %6s %6s  %-12s %s\n", "name", "group", "n", "mean",
	        "sd", "min", "p50", "p99", "max", (int)mw, "model", "r2", "rel", "flags", "status");
	for (uint32_t i = 0; i < c->nentries; i++) {
		const struct oscal_entry *e = &c->entries[i];
		const struct oscal_stats *s = &e->st;
		char v[6][32], flags[64], r2[16], rel[16];

		if (!oscal_calls_match(calls, e->name, e->call))
			continue;
		if (e->status != OSCAL_MEASURED || !s->n) {
			fprintf(f, "%-26s %-7s %6s %9s %9s %9s %9s %9s %9s  %-*s %6s %6s  %-12s %s%s%s\n", e->name,
			        e->group, "-", "-", "-", "-", "-", "-", "-", (int)mw, "-", "-", "-", "-",
			        oscal_status_name(e->status), e->reason[0] ? ": " : "", e->reason);
			continue;
		}
		if (e->model.form == OSCAL_PIECEWISE)
			pieces = true;
		oscal_model_text(e, model, sizeof(model));
		if (isnan(e->model.r2) || e->model.form == OSCAL_NONE)
			snprintf(r2, sizeof(r2), "-");
		else
			snprintf(r2, sizeof(r2), "%.3f", e->model.r2);
		if (e->model.form == OSCAL_NONE)
			snprintf(rel, sizeof(rel), "-");
		else
			snprintf(rel, sizeof(rel), "%.1f%%", 100 * e->model.mean_rel);
		fprintf(f, "%-26s %-7s %6llu %9s %9s %9s %9s %9s %9s  %s%*s %6s %6s  %-12s %s\n", e->name, e->group,
		        (unsigned long long)s->n, oscal_fmt_ns(s->mean, v[0], 32), oscal_fmt_ns(s->sd, v[1], 32),
		        oscal_fmt_ns(s->min, v[2], 32), oscal_fmt_ns(s->p50, v[3], 32), oscal_fmt_ns(s->p99, v[4], 32),
		        oscal_fmt_ns(s->max, v[5], 32), model, (int)(mw - display_width(model)), "", r2, rel,
		        entry_flags(e, flags, sizeof(flags)), oscal_status_name(e->status));
	}
	fprintf(f, "(times in ns; n: samples of all parameter values; rel: the model's mean relative error)\n");
	if (!pieces)
		return;
	fprintf(f, "\npiecewise models:\n");
	for (uint32_t i = 0; i < c->nentries; i++) {
		const struct oscal_entry *e = &c->entries[i];

		if (e->status != OSCAL_MEASURED || e->model.form != OSCAL_PIECEWISE ||
		    !oscal_calls_match(calls, e->name, e->call))
			continue;
		for (uint32_t k = 0; k < e->model.npieces; k++) {
			char piece[160];

			oscal_piece_text(e, &e->model.pieces[k], piece, sizeof(piece));
			fprintf(f, "  %-26s %s %.10g..%.10g: %s\n", k ? "" : e->name, e->param, e->model.pieces[k].x0,
			        e->model.pieces[k].x1, piece);
		}
	}
}

/* ------------------------------------------------------------ JSON */

static void report_json(FILE *f, const struct oscal_cal *c, const char *path, const char *calls)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "format", "layerprof-oscal-report");
	json_u64(&j, "version", 1);
	json_str(&j, "file", path);
	oscal_json_head(&j, c);
	json_str(&j, "outlier_rule", oscal_outlier_rule);
	json_array_begin(&j, "entries");
	for (uint32_t i = 0; i < c->nentries; i++) {
		const struct oscal_entry *e = &c->entries[i];

		if (!oscal_calls_match(calls, e->name, e->call))
			continue;
		oscal_json_entry(&j, e, false);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

enum report_opt_code {
	OPT_FORMAT = 0x2100,
	OPT_CALLS,
};

int oscal_report_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "calls", required_argument, NULL, OPT_CALLS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum oscal_format fmt = OSCAL_FMT_TEXT;
	const char *out = NULL, *calls = NULL;
	struct oscal_cal *cal;
	FILE *f;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if (oscal_parse_format(optarg, true, &fmt))
				return LP_EXIT_USAGE;
			break;
		case 'o':
			out = optarg;
			break;
		case OPT_CALLS:
			calls = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(report_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		if (optind == argc)
			fprintf(stderr, "layerprof oscal: report needs a calibration file\n");
		else
			fprintf(stderr, "layerprof oscal: report takes one calibration file ('%s' is extra)\n",
			        argv[optind + 1]);
		return LP_EXIT_USAGE;
	}
	cal = calloc(1, sizeof(*cal));
	if (!cal) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	if (oscal_load(argv[optind], cal)) {
		free(cal);
		return LP_EXIT_FAILURE;
	}
	f = oscal_output_open(out);
	if (!f) {
		oscal_cal_release(cal);
		free(cal);
		return LP_EXIT_FAILURE;
	}
	r = 0;
	if (fmt == OSCAL_FMT_JSON)
		report_json(f, cal, argv[optind], calls);
	else if (fmt == OSCAL_FMT_HTML)
		r = oscal_html_write(f, cal, argv[optind], calls);
	else
		report_text(f, cal, argv[optind], calls);
	if (oscal_output_close(f, out))
		r = -EIO;
	oscal_cal_release(cal);
	free(cal);
	return r ? LP_EXIT_FAILURE : LP_EXIT_OK;
}
