/* The output of `layerprof tune`: text table, JSON, HTML with inline SVG. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/tune/tunereport.h"
#include "host/lib/util/escape.h"
#include "host/lib/util/json.h"

/* The plot's size in SVG units, and a heat map cell's. */
#define PLOT_W 720
#define PLOT_H 260
#define PLOT_MARGIN 48
#define CELL 36

static bool has_energy(const struct tune *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (!t->entries[i].failed && !isnan(t->entries[i].med_joules))
			return true;
	return false;
}

static const char *objective_unit(const struct tune *t)
{
	return t->o.objective == TUNE_TIME ? "s" : t->o.objective == TUNE_ENERGY ? "J" : "J*s";
}

double tunereport_gain(const struct tune *t, bool energy)
{
	const struct tune_entry *b, *x;
	double base, best;

	if (t->best == UINT32_MAX || t->baseline == UINT32_MAX)
		return NAN;
	b = &t->entries[t->baseline];
	x = &t->entries[t->best];
	base = energy ? b->med_joules : b->med_seconds;
	best = energy ? x->med_joules : x->med_seconds;
	if (isnan(base) || isnan(best) || base <= 0)
		return NAN;
	return 100.0 * (base - best) / base;
}

static const char *status_text(const struct tune *t, uint32_t i, char *buf, size_t size)
{
	const struct tune_entry *e = &t->entries[i];

	if (e->failed)
		snprintf(buf, size, "%s: %s", e->timed_out ? "timed out" : "failed", e->why);
	else
		snprintf(buf, size, "%s%s%s", i == t->best ? "best" : "", i == t->best && i == t->baseline ? ", " : "",
		         i == t->baseline ? "baseline" : "");
	return buf;
}

static void text_header(FILE *f, const struct tune *t)
{
	fprintf(f, "# tune: %s, objective %s, %u run%s each (up to %u), noise %.1f%%",
	        tune_strategy_name(t->o.strategy), tune_objective_name(t->o.objective), t->o.repeat,
	        t->o.repeat == 1 ? "" : "s", t->o.max_repeat, 100.0 * t->noise);
	fprintf(f, " (--noise %.1f%%, the baseline's spread %.1f%%)\n", t->o.noise_pct, 100.0 * t->baseline_spread);
	for (uint32_t k = 0; k < t->sp->nprogs; k++) {
		if (t->sp->nprogs > 1)
			fprintf(f, "# command %u:", k + 1);
		else
			fprintf(f, "# command:");
		for (char **w = t->sp->progs[k]; *w; w++)
			fprintf(f, " %s", *w);
		fputc('\n', f);
	}
	if (t->o.strategy == TUNE_PRODCONS)
		fprintf(f, "# verdict of the first configuration under record --sync: %s\n", t->verdict);
}

int tunereport_text(FILE *f, const struct tune *t)
{
	bool energy = has_energy(t);
	int w[TUNE_PARAMS_MAX];
	char buf[TUNE_WHY_MAX + 32], cfg[512];
	double g;

	text_header(f, t);
	for (uint32_t p = 0; p < t->sp->nparams; p++) {
		const struct tune_param *pa = &t->sp->params[p];

		w[p] = (int)strlen(pa->name);
		for (uint32_t v = 0; v < pa->nvalues; v++)
			if ((int)strlen(pa->values[v]) > w[p])
				w[p] = (int)strlen(pa->values[v]);
	}
	fprintf(f, "%4s", "#");
	for (uint32_t p = 0; p < t->sp->nparams; p++)
		fprintf(f, "  %*s", w[p], t->sp->params[p].name);
	fprintf(f, "  %10s", "time (s)");
	if (energy)
		fprintf(f, "  %10s", "energy (J)");
	fprintf(f, "  %10s  %4s  %6s  %s\n", "objective", "runs", "spread", "status");
	for (uint32_t i = 0; i < t->n; i++) {
		const struct tune_entry *e = &t->entries[i];

		fprintf(f, "%4u", i + 1);
		for (uint32_t p = 0; p < t->sp->nparams; p++)
			fprintf(f, "  %*s", w[p], t->sp->params[p].values[e->c.idx[p]]);
		if (e->failed) {
			fprintf(f, "  %10s", "-");
			if (energy)
				fprintf(f, "  %10s", "-");
			fprintf(f, "  %10s  %4u  %6s  %s\n", "-", e->n + 1, "-", status_text(t, i, buf, sizeof(buf)));
			continue;
		}
		fprintf(f, "  %10.6f", e->med_seconds);
		if (energy)
			fprintf(f, "  %10.4f", e->med_joules);
		status_text(t, i, buf, sizeof(buf));
		fprintf(f, "  %10.6g  %4u  %5.1f%%%s%s\n", e->med_obj, e->n, 100.0 * e->spread, buf[0] ? "  " : "",
		        buf);
	}
	if (t->best != UINT32_MAX) {
		const struct tune_entry *b = &t->entries[t->best], *base = &t->entries[t->baseline];

		fprintf(f, "best:     %s  time %.6f s", tune_space_format(t->sp, &b->c, cfg, sizeof(cfg)),
		        b->med_seconds);
		if (energy)
			fprintf(f, "  energy %.4f J", b->med_joules);
		fprintf(f, "  objective %.6g %s\n", b->med_obj, objective_unit(t));
		fprintf(f, "baseline: %s  time %.6f s", tune_space_format(t->sp, &base->c, cfg, sizeof(cfg)),
		        base->med_seconds);
		if (energy)
			fprintf(f, "  energy %.4f J", base->med_joules);
		fprintf(f, "  objective %.6g %s\n", base->med_obj, objective_unit(t));
		fprintf(f, "gain over the baseline: time %.1f%%", tunereport_gain(t, false));
		g = tunereport_gain(t, true);
		if (!isnan(g))
			fprintf(f, ", energy %.1f%%", g);
		fputc('\n', f);
	}
	fprintf(f, "%u configurations, %llu runs; stopped: %s\n", t->n, (unsigned long long)t->runs, t->stop);
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------------- JSON */

static void json_entry(struct json *j, const char *key, const struct tune *t, uint32_t i)
{
	const struct tune_entry *e = &t->entries[i];

	json_object_begin(j, key);
	json_u64(j, "n", i + 1);
	json_object_begin(j, "params");
	for (uint32_t p = 0; p < t->sp->nparams; p++)
		json_str(j, t->sp->params[p].name, t->sp->params[p].values[e->c.idx[p]]);
	json_object_end(j);
	if (e->failed) {
		json_null(j, "time_s");
		json_null(j, "energy_j");
		json_null(j, "objective");
	} else {
		json_f64(j, "time_s", e->med_seconds);
		json_f64(j, "energy_j", e->med_joules); /* null without energy */
		json_f64(j, "objective", e->med_obj);
	}
	json_u64(j, "runs", e->failed ? e->n + 1 : e->n);
	json_f64(j, "spread_pct", 100.0 * e->spread);
	json_str(j, "status", e->failed ? (e->timed_out ? "timed out" : "failed") : "ok");
	if (e->failed)
		json_str(j, "why", e->why);
	json_object_end(j);
}

int tunereport_json(FILE *f, const struct tune *t)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "strategy", tune_strategy_name(t->o.strategy));
	json_str(&j, "objective", tune_objective_name(t->o.objective));
	json_u64(&j, "repeat", t->o.repeat);
	json_u64(&j, "max_repeat", t->o.max_repeat);
	json_f64(&j, "noise_pct", 100.0 * t->noise);
	json_f64(&j, "baseline_spread_pct", 100.0 * t->baseline_spread);
	json_array_begin(&j, "commands");
	for (uint32_t k = 0; k < t->sp->nprogs; k++) {
		json_array_begin(&j, NULL);
		for (char **w = t->sp->progs[k]; *w; w++)
			json_str(&j, NULL, *w);
		json_array_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "params");
	for (uint32_t p = 0; p < t->sp->nparams; p++) {
		json_object_begin(&j, NULL);
		json_str(&j, "name", t->sp->params[p].name);
		json_u64(&j, "command", t->sp->params[p].prog);
		json_array_begin(&j, "values");
		for (uint32_t v = 0; v < t->sp->params[p].nvalues; v++)
			json_str(&j, NULL, t->sp->params[p].values[v]);
		json_array_end(&j);
		json_object_end(&j);
	}
	json_array_end(&j);
	if (t->o.strategy == TUNE_PRODCONS) {
		json_object_begin(&j, "verdict");
		json_str(&j, "line", t->verdict);
		if (t->slow == 0 || t->slow == 1)
			json_str(&j, "slow", t->slow ? "consumers" : "producers");
		else
			json_null(&j, "slow");
		json_object_end(&j);
	}
	json_array_begin(&j, "configs");
	for (uint32_t i = 0; i < t->n; i++)
		json_entry(&j, NULL, t, i);
	json_array_end(&j);
	if (t->best != UINT32_MAX) {
		json_entry(&j, "best", t, t->best);
		json_entry(&j, "baseline", t, t->baseline);
		json_object_begin(&j, "gain");
		json_f64(&j, "time_pct", tunereport_gain(t, false));
		json_f64(&j, "energy_pct", tunereport_gain(t, true));
		json_object_end(&j);
	}
	json_u64(&j, "configurations", t->n);
	json_u64(&j, "runs", t->runs);
	json_bool(&j, "budget_hit", t->budget_hit);
	json_str(&j, "stop", t->stop);
	json_object_end(&j);
	json_finish(&j);
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------------- HTML */

/* The range of the objective over the entries that ran. */
static void obj_range(const struct tune *t, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (uint32_t i = 0; i < t->n; i++)
		if (!t->entries[i].failed) {
			*lo = fmin(*lo, t->entries[i].med_obj);
			*hi = fmax(*hi, t->entries[i].med_obj);
		}
	if (*hi <= *lo)
		*hi = *lo + (*lo > 0 ? *lo * 0.1 : 1.0);
}

/* The objective per configuration in the order tried. */
static void svg_order(FILE *f, const struct tune *t)
{
	double lo, hi, x, y, dx;
	bool pen = false;

	obj_range(t, &lo, &hi);
	dx = t->n > 1 ? (double)(PLOT_W - 2 * PLOT_MARGIN) / (t->n - 1) : 0;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\">\n", PLOT_W,
	        PLOT_H);
	fprintf(f, "<title>objective per configuration, in the order tried</title>\n");
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", PLOT_MARGIN,
	        PLOT_H - PLOT_MARGIN, PLOT_W - PLOT_MARGIN, PLOT_H - PLOT_MARGIN);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", PLOT_MARGIN, PLOT_MARGIN / 2,
	        PLOT_MARGIN, PLOT_H - PLOT_MARGIN);
	fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"11\">%.4g</text>\n", PLOT_MARGIN / 2 + 4, hi);
	fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"11\">%.4g</text>\n", PLOT_H - PLOT_MARGIN, lo);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">configuration (order tried)</text>\n", PLOT_W / 2 - 60,
	        PLOT_H - 12);
	fprintf(f, "<text x=\"%d\" y=\"12\" font-size=\"11\">objective (%s)</text>\n", PLOT_MARGIN, objective_unit(t));
	fprintf(f, "<polyline fill=\"none\" stroke=\"#36c\" points=\"");
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->entries[i].failed)
			continue;
		x = PLOT_MARGIN + dx * i;
		y = PLOT_H - PLOT_MARGIN - (t->entries[i].med_obj - lo) / (hi - lo) * (PLOT_H - 1.5 * PLOT_MARGIN);
		fprintf(f, "%s%.1f,%.1f", pen ? " " : "", x, y);
		pen = true;
	}
	fprintf(f, "\"/>\n");
	for (uint32_t i = 0; i < t->n; i++) {
		const struct tune_entry *e = &t->entries[i];
		char cfg[512];

		x = PLOT_MARGIN + dx * i;
		y = e->failed ? PLOT_H - PLOT_MARGIN
		              : PLOT_H - PLOT_MARGIN - (e->med_obj - lo) / (hi - lo) * (PLOT_H - 1.5 * PLOT_MARGIN);
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"%s><title>%u: ", x, y,
		        i == t->best ? 7 : 4,
		        e->failed      ? "#999"
		        : i == t->best ? "#d22"
		                       : "#36c",
		        i == t->best ? " class=\"best\"" : "", i + 1);
		escape_xml(f, tune_space_format(t->sp, &e->c, cfg, sizeof(cfg)));
		if (e->failed)
			fprintf(f, " failed</title></circle>\n");
		else
			fprintf(f, " %.6g %s</title></circle>\n", e->med_obj, objective_unit(t));
	}
	if (t->best != UINT32_MAX)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#d22\">best</text>\n",
		        PLOT_MARGIN + dx * t->best - 10, PLOT_H - PLOT_MARGIN + 16);
	fprintf(f, "</svg>\n");
}

/* Two parameters: the objective over their plane, tried cells coloured
 * from green (low) to red (high), the best outlined. */
static void svg_heat(FILE *f, const struct tune *t)
{
	const struct tune_param *a = &t->sp->params[0], *b = &t->sp->params[1];
	int w = PLOT_MARGIN + CELL * (int)b->nvalues + 8, h = PLOT_MARGIN + CELL * (int)a->nvalues + 8;
	double lo, hi;

	obj_range(t, &lo, &hi);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\">\n", w, h);
	fprintf(f, "<title>objective over ");
	escape_xml(f, a->name);
	fprintf(f, " (rows) and ");
	escape_xml(f, b->name);
	fprintf(f, " (columns)</title>\n");
	/* the corner names the rows' and the columns' parameters */
	fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"11\" font-weight=\"bold\">", PLOT_MARGIN - 22);
	escape_xml(f, a->name);
	fprintf(f, " \\ ");
	escape_xml(f, b->name);
	fprintf(f, "</text>\n");
	for (uint32_t v = 0; v < b->nvalues; v++) {
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">", PLOT_MARGIN + CELL * (int)v + 4,
		        PLOT_MARGIN - 6);
		escape_xml(f, b->values[v]);
		fprintf(f, "</text>\n");
	}
	for (uint32_t u = 0; u < a->nvalues; u++) {
		fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"11\">", PLOT_MARGIN + CELL * (int)u + CELL / 2 + 4);
		escape_xml(f, a->values[u]);
		fprintf(f, "</text>\n");
		for (uint32_t v = 0; v < b->nvalues; v++) {
			struct tune_config c = { { 0 } };
			uint32_t i;
			char fill[16] = "#ddd";

			c.idx[0] = (uint16_t)u;
			c.idx[1] = (uint16_t)v;
			i = tune_find(t, &c);
			if (i != UINT32_MAX && !t->entries[i].failed) {
				double s = (t->entries[i].med_obj - lo) / (hi - lo);

				snprintf(fill, sizeof(fill), "#%02x%02x40", (int)(60 + 195 * s), (int)(200 - 150 * s));
			}
			fprintf(f,
			        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"%s\" "
			        "stroke-width=\"%d\">",
			        PLOT_MARGIN + CELL * (int)v, PLOT_MARGIN + CELL * (int)u, CELL - 2, CELL - 2, fill,
			        i == t->best ? "#000" : "#fff", i == t->best ? 3 : 1);
			if (i != UINT32_MAX && !t->entries[i].failed)
				fprintf(f, "<title>%.6g %s (#%u)</title>", t->entries[i].med_obj, objective_unit(t),
				        i + 1);
			fprintf(f, "</rect>\n");
		}
	}
	fprintf(f, "</svg>\n");
}

int tunereport_html(FILE *f, const struct tune *t)
{
	bool energy = has_energy(t);
	char buf[TUNE_WHY_MAX + 32], cfg[512];

	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>layerprof tune</title>\n"
	           "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
	           "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}"
	           "tr.best{background:#fee}</style></head><body>\n");
	fprintf(f, "<h1>layerprof tune: %s, objective %s</h1>\n<p>", tune_strategy_name(t->o.strategy),
	        tune_objective_name(t->o.objective));
	for (uint32_t k = 0; k < t->sp->nprogs; k++) {
		fprintf(f, "%s<code>", k ? "<br>" : "");
		for (char **w = t->sp->progs[k]; *w; w++) {
			escape_xml(f, *w);
			fputc(' ', f);
		}
		fprintf(f, "</code>");
	}
	fprintf(f,
	        "</p>\n<p>%u run%s each (up to %u), noise %.1f%%; %u configurations, %llu runs; stopped: ", t->o.repeat,
	        t->o.repeat == 1 ? "" : "s", t->o.max_repeat, 100.0 * t->noise, t->n, (unsigned long long)t->runs);
	escape_xml(f, t->stop);
	fprintf(f, "</p>\n");
	if (t->o.strategy == TUNE_PRODCONS) {
		fprintf(f, "<p>Verdict of the first configuration under record --sync: ");
		escape_xml(f, t->verdict);
		fprintf(f, "</p>\n");
	}
	if (t->best != UINT32_MAX) {
		double g = tunereport_gain(t, true);

		fprintf(f, "<p>Best: <b>");
		escape_xml(f, tune_space_format(t->sp, &t->entries[t->best].c, cfg, sizeof(cfg)));
		fprintf(f, "</b>; baseline: ");
		escape_xml(f, tune_space_format(t->sp, &t->entries[t->baseline].c, cfg, sizeof(cfg)));
		fprintf(f, "; gain over the baseline: time %.1f%%", tunereport_gain(t, false));
		if (!isnan(g))
			fprintf(f, ", energy %.1f%%", g);
		fprintf(f, "</p>\n");
	}
	svg_order(f, t);
	if (t->sp->nparams == 2)
		svg_heat(f, t);
	fprintf(f, "<table>\n<tr><th>#</th>");
	for (uint32_t p = 0; p < t->sp->nparams; p++) {
		fprintf(f, "<th>");
		escape_xml(f, t->sp->params[p].name);
		fprintf(f, "</th>");
	}
	fprintf(f, "<th>time (s)</th>%s<th>objective (%s)</th><th>runs</th><th>spread</th><th>status</th></tr>\n",
	        energy ? "<th>energy (J)</th>" : "", objective_unit(t));
	for (uint32_t i = 0; i < t->n; i++) {
		const struct tune_entry *e = &t->entries[i];

		fprintf(f, "<tr%s><td>%u</td>", i == t->best ? " class=\"best\"" : "", i + 1);
		for (uint32_t p = 0; p < t->sp->nparams; p++) {
			fprintf(f, "<td>");
			escape_xml(f, t->sp->params[p].values[e->c.idx[p]]);
			fprintf(f, "</td>");
		}
		if (e->failed)
			fprintf(f, "<td>-</td>%s<td>-</td><td>%u</td><td>-</td>", energy ? "<td>-</td>" : "", e->n + 1);
		else {
			fprintf(f, "<td>%.6f</td>", e->med_seconds);
			if (energy)
				fprintf(f, "<td>%.4f</td>", e->med_joules);
			fprintf(f, "<td>%.6g</td><td>%u</td><td>%.1f%%</td>", e->med_obj, e->n, 100.0 * e->spread);
		}
		fprintf(f, "<td style=\"text-align:left\">");
		escape_xml(f, status_text(t, i, buf, sizeof(buf)));
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table>\n</body></html>\n");
	return ferror(f) ? -EIO : 0;
}
