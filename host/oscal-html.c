/* layerprof oscal report --format html: one self-contained page (inline
 * CSS and SVG, no script, no external resource): the calibration's header,
 * the table of the text report, and per measured entry its 30-bin
 * histogram and, when it has a parameter, its series' means with the
 * model's line(s). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/util/escape.h"
#include "host/oscal.h"

/* The charts' sizes in px. */
#define HIST_W 360.0
#define HIST_H 110.0
#define PLOT_W 360.0
#define PLOT_H 160.0
#define PLOT_PAD 8.0
/* Points of a model's line per piece. */
#define MODEL_STEPS 32
/* A parameter spanning this ratio or more is drawn on a log axis. */
#define LOG_AXIS_RATIO 16.0

static const char html_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
    "<title>layerprof oscal: ";
static const char html_style[] =
    "</title>\n<style>\n"
    "body{font-family:sans-serif;margin:1.5em;color:#222}\n"
    "table{border-collapse:collapse;font-size:0.85em}\n"
    "th,td{padding:2px 6px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}\n"
    "th:first-child,td:first-child,td.l,th.l{text-align:left}\n"
    "section{display:inline-block;vertical-align:top;margin:0.6em;padding:0.4em;border:1px solid #ccc}\n"
    "section h3{margin:0.1em 0;font-size:1em}\n"
    "section p{margin:0.2em 0;font-size:0.8em;max-width:44em}\n"
    "svg{display:block;margin:0.3em 0}\n"
    ".bar{fill:#4a7ab5}\n.pt{fill:#c0392b}\n.model{fill:none;stroke:#27ae60;stroke-width:1.5}\n"
    ".axis{stroke:#888;stroke-width:1}\ntext{font-size:10px;fill:#555}\n"
    ".skip{color:#a60}\n.fail{color:#c00}\n"
    "</style>\n</head>\n<body>\n";

static void put_ns(FILE *f, double ns)
{
	char b[32];

	fputs(oscal_fmt_ns(ns, b, sizeof(b)), f);
}

static void html_header(FILE *f, const struct oscal_cal *c, const char *path)
{
	char b[32];

	fputs("<h1>layerprof oscal: ", f);
	escape_xml(f, path);
	fputs("</h1>\n<table>\n<tr><td>created</td><td class=\"l\">", f);
	escape_xml(f, c->created);
	fputs("</td></tr>\n<tr><td>source</td><td class=\"l\">", f);
	escape_xml(f, c->source);
	fprintf(f, "%s</td></tr>\n<tr><td>machine</td><td class=\"l\">",
	        c->complete ? "" : " (incomplete: an interrupted run)");
	escape_xml(f, c->machine.host);
	fputs(", ", f);
	escape_xml(f, c->machine.arch);
	fprintf(f, ", %u CPUs, Linux ", c->machine.cpus);
	escape_xml(f, c->machine.kernel);
	fputs(", ", f);
	escape_xml(f, c->machine.libc);
	fputs(", ", f);
	escape_xml(f, c->machine.cpu);
	fputs("</td></tr>\n<tr><td>clock</td><td class=\"l\">", f);
	escape_xml(f, c->clock.name);
	fprintf(f, ", resolution %g ns, overhead %s ns a read pair (subtracted from every sample)</td></tr>\n",
	        c->clock.resolution_ns, oscal_fmt_ns(c->clock.overhead_ns, b, sizeof(b)));
	fprintf(f,
	        "<tr><td>settings</td><td class=\"l\">%u repetitions and %u warm-up runs per parameter value, "
	        "quick %s, calls ",
	        c->settings.reps, c->settings.warmup, c->settings.quick ? "yes" : "no");
	escape_xml(f, c->settings.calls[0] ? c->settings.calls : "all");
	fputs("</td></tr>\n<tr><td>outliers</td><td class=\"l\">", f);
	escape_xml(f, oscal_outlier_rule);
	fprintf(f,
	        "</td></tr>\n<tr><td>threshold</td><td class=\"l\">a cluster is split while its spread (sd of its "
	        "residuals / mean) is above %g, at most %u clusters</td></tr>\n</table>\n",
	        c->settings.threshold, OSCAL_CLUSTERS_MAX);
}

/* The entry's anchor: "e-" and its name (names are [a-z0-9_-]; anything
 * else escaped all the same). */
static void put_anchor(FILE *f, const struct oscal_entry *e)
{
	fputs("e-", f);
	escape_xml(f, e->name);
}

static void html_table(FILE *f, const struct oscal_cal *c, const char *calls)
{
	fputs("<h2>Entries</h2>\n<table>\n<tr><th>name</th><th>group</th><th>n</th><th>mean</th><th>sd</th>"
	      "<th>min</th><th>p50</th><th>p99</th><th>max</th><th class=\"l\">model</th><th>r2</th>"
	      "<th>rel</th><th class=\"l\">flags</th><th class=\"l\">status</th></tr>\n",
	      f);
	for (uint32_t i = 0; i < c->nentries; i++) {
		const struct oscal_entry *e = &c->entries[i];
		const struct oscal_stats *s = &e->st;
		char model[160];

		if (!oscal_calls_match(calls, e->name, e->call))
			continue;
		fputs("<tr><td>", f);
		if (e->status == OSCAL_MEASURED && s->n) {
			fputs("<a href=\"#", f);
			put_anchor(f, e);
			fputs("\">", f);
			escape_xml(f, e->name);
			fputs("</a>", f);
		} else {
			escape_xml(f, e->name);
		}
		fputs("</td><td class=\"l\">", f);
		escape_xml(f, e->group);
		if (e->status != OSCAL_MEASURED || !s->n) {
			fprintf(f, "</td><td colspan=\"11\"></td><td class=\"l %s\">%s: ",
			        e->status == OSCAL_SKIPPED ? "skip" : "fail", oscal_status_name(e->status));
			escape_xml(f, e->reason);
			fputs("</td></tr>\n", f);
			continue;
		}
		fprintf(f, "</td><td>%llu</td>", (unsigned long long)s->n);
		{
			const double v[6] = { s->mean, s->sd, s->min, s->p50, s->p99, s->max };

			for (int k = 0; k < 6; k++) {
				fputs("<td>", f);
				put_ns(f, v[k]);
				fputs("</td>", f);
			}
		}
		fputs("<td class=\"l\">", f);
		escape_xml(f, oscal_model_text(e, model, sizeof(model)));
		if (e->model.form == OSCAL_PIECEWISE)
			for (uint32_t k = 0; k < e->model.npieces; k++) {
				char piece[160];

				fprintf(f, "<br>%.10g..%.10g: ", e->model.pieces[k].x0, e->model.pieces[k].x1);
				escape_xml(f, oscal_piece_text(e, &e->model.pieces[k], piece, sizeof(piece)));
			}
		fputs("</td><td>", f);
		if (e->model.form == OSCAL_NONE || isnan(e->model.r2))
			fputs("-", f);
		else
			fprintf(f, "%.3f", e->model.r2);
		fputs("</td><td>", f);
		if (e->model.form == OSCAL_NONE)
			fputs("-", f);
		else
			fprintf(f, "%.1f%%", 100 * e->model.mean_rel);
		fprintf(f, "</td><td class=\"l\">%s%s", e->spread_high ? "spread " : "",
		        e->nclusters > 1 ? "clusters=" : "");
		if (e->nclusters > 1)
			fprintf(f, "%u", e->nclusters);
		if (e->st.outliers)
			fprintf(f, " outliers=%llu", (unsigned long long)e->st.outliers);
		fputs("</td><td class=\"l\">measured</td></tr>\n", f);
	}
	fputs("</table>\n<p>Times in ns; n: the samples of all parameter values; rel: the model's mean relative "
	      "error.</p>\n",
	      f);
}

/* The histogram: OSCAL_BINS bars of class "bar", each with its range and
 * count as a title. */
static void html_hist(FILE *f, const struct oscal_stats *s)
{
	uint64_t top = 1;
	double bw = HIST_W / OSCAL_BINS, step = (s->hist_hi - s->hist_lo) / OSCAL_BINS;

	for (uint32_t b = 0; b < OSCAL_BINS; b++)
		if (s->hist[b] > top)
			top = s->hist[b];
	fprintf(f, "<svg class=\"hist\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n", HIST_W,
	        HIST_H + 14, HIST_W, HIST_H + 14);
	for (uint32_t b = 0; b < OSCAL_BINS; b++) {
		double h = HIST_H * (double)s->hist[b] / (double)top;

		fprintf(
		    f,
		    "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"><title>%.6g..%.6g ns: "
		    "%llu</title></rect>\n",
		    b * bw, HIST_H - h, bw > 1 ? bw - 1 : bw, h, s->hist_lo + b * step, s->hist_lo + (b + 1) * step,
		    (unsigned long long)s->hist[b]);
	}
	fprintf(f, "<line class=\"axis\" x1=\"0\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>\n", HIST_H, HIST_W, HIST_H);
	fprintf(f, "<text x=\"0\" y=\"%.0f\">%.6g ns</text>", HIST_H + 12, s->hist_lo);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.6g ns</text>\n</svg>\n", HIST_W, HIST_H + 12,
	        s->hist_hi);
}

/* The x axis of a series chart. */
struct axis {
	double lo, hi;
	bool log;
};

static double axis_pos(const struct axis *a, double x)
{
	double t;

	if (a->hi <= a->lo)
		return PLOT_PAD + (PLOT_W - 2 * PLOT_PAD) / 2;
	t = a->log ? (log(x) - log(a->lo)) / (log(a->hi) - log(a->lo)) : (x - a->lo) / (a->hi - a->lo);
	return PLOT_PAD + t * (PLOT_W - 2 * PLOT_PAD);
}

/* The series' means as points (class "pt") and the model's line per piece
 * (class "model"), times from 0 at the bottom. */
static void html_series(FILE *f, const struct oscal_entry *e)
{
	struct axis ax = { e->series[0].x, e->series[e->nseries - 1].x, false };
	double top = 0;
	const struct oscal_model *m = &e->model;

	ax.log = ax.lo > 0 && ax.hi / ax.lo >= LOG_AXIS_RATIO;
	for (uint32_t k = 0; k < e->nseries; k++)
		if (e->series[k].st.n && e->series[k].st.mean > top)
			top = e->series[k].st.mean;
	for (uint32_t k = 0; m->form != OSCAL_NONE && k < e->nseries; k++) {
		double v = oscal_model_eval(m, e->series[k].x);

		if (isfinite(v) && v > top)
			top = v;
	}
	if (!(top > 0))
		top = 1;
	top *= 1.05;
#define YPOS(v) (PLOT_H - PLOT_PAD - ((v) / top) * (PLOT_H - 2 * PLOT_PAD))
	fprintf(f, "<svg class=\"series\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n", PLOT_W,
	        PLOT_H + 14, PLOT_W, PLOT_H + 14);
	fprintf(f, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>\n", PLOT_PAD,
	        PLOT_H - PLOT_PAD, PLOT_W - PLOT_PAD, PLOT_H - PLOT_PAD);
	for (uint32_t k = 0; m->form != OSCAL_NONE && k < m->npieces; k++) {
		double x0 = k ? m->pieces[k].x0 : ax.lo, x1 = k + 1 < m->npieces ? m->pieces[k].x1 : ax.hi;

		if (x0 < ax.lo)
			x0 = ax.lo;
		if (x1 > ax.hi)
			x1 = ax.hi;
		fputs("<polyline class=\"model\" points=\"", f);
		for (int s = 0; s <= MODEL_STEPS; s++) {
			double x = ax.log ? exp(log(x0) + (log(x1) - log(x0)) * s / MODEL_STEPS)
			                  : x0 + (x1 - x0) * s / MODEL_STEPS;
			double v = m->pieces[k].m * x + m->pieces[k].q;

			fprintf(f, "%s%.2f,%.2f", s ? " " : "", axis_pos(&ax, x), YPOS(v));
		}
		fputs("\"/>\n", f);
	}
	for (uint32_t k = 0; k < e->nseries; k++) {
		const struct oscal_series *s = &e->series[k];

		if (!s->st.n)
			continue;
		fprintf(f, "<circle class=\"pt\" cx=\"%.2f\" cy=\"%.2f\" r=\"3\"><title>", axis_pos(&ax, s->x),
		        YPOS(s->st.mean));
		escape_xml(f, e->param);
		fprintf(f, " %.6g: mean %.6g ns, sd %.6g ns</title></circle>\n", s->x, s->st.mean, s->st.sd);
	}
#undef YPOS
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">%.6g</text>", PLOT_PAD, PLOT_H + 10, ax.lo);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">", PLOT_W / 2, PLOT_H + 10);
	escape_xml(f, e->param);
	fprintf(f, "%s</text>", ax.log ? " (log)" : "");
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.6g</text>", PLOT_W - PLOT_PAD, PLOT_H + 10,
	        ax.hi);
	fprintf(f, "<text x=\"%.0f\" y=\"10\">%.6g ns</text>\n</svg>\n", PLOT_PAD, top);
}

int oscal_html_write(FILE *f, const struct oscal_cal *c, const char *path, const char *calls)
{
	fputs(html_head, f);
	escape_xml(f, path);
	fputs(html_style, f);
	html_header(f, c, path);
	html_table(f, c, calls);
	fputs("<h2>Distributions and models</h2>\n", f);
	for (uint32_t i = 0; i < c->nentries; i++) {
		const struct oscal_entry *e = &c->entries[i];
		char model[160];

		if (e->status != OSCAL_MEASURED || !e->st.n || !oscal_calls_match(calls, e->name, e->call))
			continue;
		fputs("<section id=\"", f);
		put_anchor(f, e);
		fputs("\">\n<h3>", f);
		escape_xml(f, e->name);
		fputs(" <small>(", f);
		escape_xml(f, e->call);
		if (e->cond[0]) {
			fputs(", ", f);
			escape_xml(f, e->cond);
		}
		fputs(")</small></h3>\n<p>", f);
		escape_xml(f, e->desc);
		fputs("</p>\n<p>", f);
		escape_xml(f, oscal_model_text(e, model, sizeof(model)));
		fprintf(f, "; %llu samples, mean ", (unsigned long long)e->st.n);
		put_ns(f, e->st.mean);
		fputs(" ns, sd ", f);
		put_ns(f, e->st.sd);
		fputs(" ns</p>\n", f);
		html_hist(f, &e->st);
		if (e->param[0] && e->nseries > 1)
			html_series(f, e);
		fputs("</section>\n", f);
	}
	fputs("</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}
