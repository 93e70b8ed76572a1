/* The calibration file: a calibration kept as JSON and read back.
 *
 * The format (version 1; every time in ns, every number written so that
 * it reads back exactly, NaN as null):
 *
 *   {"format":"layerprof-oscal-cal", "version":1, "created":ISO 8601 UTC,
 *    "source":"local" | "agent HOST:PORT" | ..., "complete":bool (every
 *    entry the run asked for ended),
 *    "machine":{"arch","cpus","kernel","libc","host","cpu"},
 *    "clock":{"name","resolution_ns","overhead_ns" (subtracted from each
 *             sample already)},
 *    "settings":{"quick","reps","warmup","threshold" (the fit's spread
 *                threshold),"calls" (the --calls patterns, "" all)},
 *    "entries":[{"name","call","cond","group","param","unit","desc",
 *      "status":"measured"|"skipped"|"failed"|"pending","reason",
 *      "reps","warmup",
 *      "series":[{"x", "ns":[times net of the overhead], "stats":S}],
 *      "stats":S (all samples; "outliers" is the sum of the series'),
 *      "spread_high":bool,
 *      "clusters":[{"x0","x1","lo","hi","n","mean","sd"}],
 *      "model":{"form":"none"|"constant"|"linear"|"piecewise",
 *               "pieces":[{"x0","x1","m","q"}] (time = m x + q),
 *               "r2","mean_abs_ns","mean_rel","points"}}]}
 *
 *   S = {"n","mean","sd","min","max","p50","p90","p99","outliers",
 *        "hist":{"lo","hi","counts":[30 counts]}}
 *
 * sd is the sample standard deviation (n - 1); the percentiles are nearest
 * rank; the histogram's 30 bins are equal over [min, max] (bin b holds
 * [lo + b w, lo + (b + 1) w), the last also max; all in bin 0 when min =
 * max).  An entry without a parameter has one series at x = 0, and its
 * clusters (by time) have x0 = x1 = 0.  "clusters" and "model" are empty
 * ([] and "none") for entries not measured.  "r2" is null for a constant.
 *
 * The same calibration is written to the same bytes but for "created".
 * Reading refuses anything else with one message naming the file
 * (unknown members are ignored; absent ones take their defaults, but an
 * entry needs "name", "call" and "status", a series "x" and at least one
 * time, at most 1e15 ns); a file whose measured entries have no "model"
 * (written by hand, or by a tool that kept only the samples) is analysed
 * as it is read. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/oscal/oscal.h"
#include "host/lib/oscal/oscal_impl.h"
#include "host/lib/util/json.h"
#include "host/lib/util/jsonread.h"

static const char *const status_names[] = { "measured", "skipped", "failed", "pending" };

const char *oscal_status_name(enum oscal_status s)
{
	return (unsigned)s < 4 ? status_names[s] : "failed";
}

/* ------------------------------------------------------------ writing */

static void write_stats(struct json *j, const char *key, const struct oscal_stats *st)
{
	uint32_t b;

	json_object_begin(j, key);
	json_u64(j, "n", st->n);
	json_f64_exact(j, "mean", st->mean);
	json_f64_exact(j, "sd", st->sd);
	json_f64_exact(j, "min", st->min);
	json_f64_exact(j, "max", st->max);
	json_f64_exact(j, "p50", st->p50);
	json_f64_exact(j, "p90", st->p90);
	json_f64_exact(j, "p99", st->p99);
	json_u64(j, "outliers", st->outliers);
	json_object_begin(j, "hist");
	json_f64_exact(j, "lo", st->hist_lo);
	json_f64_exact(j, "hi", st->hist_hi);
	json_array_begin(j, "counts");
	for (b = 0; b < OSCAL_BINS; b++)
		json_u64(j, NULL, st->hist[b]);
	json_array_end(j);
	json_object_end(j);
	json_object_end(j);
}

void oscal_json_entry(struct json *j, const struct oscal_entry *e, bool samples)
{
	uint32_t i, k;

	json_object_begin(j, NULL);
	json_str(j, "name", e->name);
	json_str(j, "call", e->call);
	json_str(j, "cond", e->cond);
	json_str(j, "group", e->group);
	json_str(j, "param", e->param);
	json_str(j, "unit", e->unit);
	json_str(j, "desc", e->desc);
	json_str(j, "status", oscal_status_name(e->status));
	json_str(j, "reason", e->reason);
	json_u64(j, "reps", e->reps);
	json_u64(j, "warmup", e->warmup);
	json_array_begin(j, "series");
	for (i = 0; i < e->nseries; i++) {
		const struct oscal_series *se = &e->series[i];

		json_object_begin(j, NULL);
		json_f64_exact(j, "x", se->x);
		if (samples) {
			json_array_begin(j, "ns");
			for (k = 0; k < se->n; k++)
				json_f64_exact(j, NULL, se->ns[k]);
			json_array_end(j);
		}
		write_stats(j, "stats", &se->st);
		json_object_end(j);
	}
	json_array_end(j);
	write_stats(j, "stats", &e->st);
	json_bool(j, "spread_high", e->spread_high);
	json_array_begin(j, "clusters");
	for (i = 0; i < e->nclusters && i < OSCAL_CLUSTERS_MAX; i++) {
		const struct oscal_cluster *c = &e->clusters[i];

		json_object_begin(j, NULL);
		json_f64_exact(j, "x0", c->x0);
		json_f64_exact(j, "x1", c->x1);
		json_f64_exact(j, "lo", c->lo);
		json_f64_exact(j, "hi", c->hi);
		json_u64(j, "n", c->n);
		json_f64_exact(j, "mean", c->mean);
		json_f64_exact(j, "sd", c->sd);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_begin(j, "model");
	json_str(j, "form", oscal_form_name(e->model.form));
	json_array_begin(j, "pieces");
	for (i = 0; i < e->model.npieces && i < OSCAL_PIECES_MAX; i++) {
		const struct oscal_piece *p = &e->model.pieces[i];

		json_object_begin(j, NULL);
		json_f64_exact(j, "x0", p->x0);
		json_f64_exact(j, "x1", p->x1);
		json_f64_exact(j, "m", p->m);
		json_f64_exact(j, "q", p->q);
		json_object_end(j);
	}
	json_array_end(j);
	json_f64_exact(j, "r2", e->model.r2);
	json_f64_exact(j, "mean_abs_ns", e->model.mean_abs_ns);
	json_f64_exact(j, "mean_rel", e->model.mean_rel);
	json_u64(j, "points", e->model.points);
	json_object_end(j);
	json_object_end(j);
}

void oscal_json_head(struct json *j, const struct oscal_cal *cal)
{
	json_str(j, "created", cal->created);
	json_str(j, "source", cal->source);
	json_bool(j, "complete", cal->complete);
	json_object_begin(j, "machine");
	json_str(j, "arch", cal->machine.arch);
	json_u64(j, "cpus", cal->machine.cpus);
	json_str(j, "kernel", cal->machine.kernel);
	json_str(j, "libc", cal->machine.libc);
	json_str(j, "host", cal->machine.host);
	json_str(j, "cpu", cal->machine.cpu);
	json_object_end(j);
	json_object_begin(j, "clock");
	json_str(j, "name", cal->clock.name);
	json_f64_exact(j, "resolution_ns", cal->clock.resolution_ns);
	json_f64_exact(j, "overhead_ns", cal->clock.overhead_ns);
	json_object_end(j);
	json_object_begin(j, "settings");
	json_bool(j, "quick", cal->settings.quick);
	json_u64(j, "reps", cal->settings.reps);
	json_u64(j, "warmup", cal->settings.warmup);
	json_f64_exact(j, "threshold", cal->settings.threshold);
	json_str(j, "calls", cal->settings.calls);
	json_object_end(j);
}

int oscal_cal_write(FILE *f, const struct oscal_cal *cal)
{
	struct json j;
	uint32_t i;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "format", OSCAL_FORMAT);
	json_u64(&j, "version", OSCAL_VERSION);
	oscal_json_head(&j, cal);
	json_array_begin(&j, "entries");
	for (i = 0; i < cal->nentries; i++)
		oscal_json_entry(&j, &cal->entries[i], true);
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------------ reading */

/* What the reader knows for its messages. */
struct rd {
	const char *path;
	char *err;
	size_t errlen;
	char where[96]; /* "entry 3 ('read')": the object being read */
	bool analyse;   /* a measured entry had no model: analyse all */
};

static int bad(struct rd *r, const char *what)
{
	snprintf(r->err, r->errlen, "calibration '%s'%s%s: %s", r->path, r->where[0] ? ", " : "", r->where, what);
	return -EINVAL;
}

/* A string member into dst[size]; absent: "" unless required. */
static int get_str(struct rd *r, const struct json_object *o, const char *key, char *dst, size_t size, bool required)
{
	const struct json_object *v = jsonread_get(o, key);
	const char *s = jsonread_str(v);
	char msg[128];

	dst[0] = '\0';
	if (!s) {
		if (!v && !required)
			return 0;
		snprintf(msg, sizeof(msg), "\"%s\" is not a string", key);
		return bad(r, msg);
	}
	if (strlen(s) >= size) {
		snprintf(msg, sizeof(msg), "\"%s\" is too long (at most %zu bytes)", key, size - 1);
		return bad(r, msg);
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

/* A number member (null: NaN); absent: dflt unless required. */
static int get_f64(struct rd *r, const struct json_object *o, const char *key, double *dst, double dflt)
{
	const struct json_object *v = jsonread_get(o, key);
	char msg[128];
	double x;

	if (!v) {
		/* absent, or null (json-c's null is no object; NaN is written so) */
		*dst = dflt;
		return 0;
	}
	x = jsonread_f64(v, NAN);
	if (isnan(x) || isinf(x)) {
		snprintf(msg, sizeof(msg), "\"%s\" is not a finite number", key);
		return bad(r, msg);
	}
	*dst = x;
	return 0;
}

/* A count member below max; absent: 0. */
static int get_u64(struct rd *r, const struct json_object *o, const char *key, uint64_t *dst, uint64_t max)
{
	const struct json_object *v = jsonread_get(o, key);
	char msg[128];
	double x;

	*dst = 0;
	if (!v)
		return 0;
	x = jsonread_f64(v, NAN);
	if (!(x >= 0) || x > (double)max || x != floor(x)) {
		snprintf(msg, sizeof(msg), "\"%s\" is not a count (0 to %llu)", key, (unsigned long long)max);
		return bad(r, msg);
	}
	*dst = jsonread_u64(v, 0);
	if (*dst > max)
		return bad(r, msg);
	return 0;
}

static int get_u32(struct rd *r, const struct json_object *o, const char *key, uint32_t *dst)
{
	uint64_t v;
	int e = get_u64(r, o, key, &v, UINT32_MAX);

	*dst = (uint32_t)v;
	return e;
}

static int get_bool(struct rd *r, const struct json_object *o, const char *key, bool *dst)
{
	const struct json_object *v = jsonread_get(o, key);
	char msg[128];

	*dst = false;
	if (!v)
		return 0;
	if (jsonread_bool(v, false) != jsonread_bool(v, true)) {
		snprintf(msg, sizeof(msg), "\"%s\" is not true or false", key);
		return bad(r, msg);
	}
	*dst = jsonread_bool(v, false);
	return 0;
}

/* An array member (absent: NULL, with *n 0) of at most max elements. */
static int get_array(struct rd *r, const struct json_object *o, const char *key, size_t max,
                     const struct json_object **arr, size_t *n)
{
	const struct json_object *v = jsonread_get(o, key);
	char msg[128];

	*arr = NULL;
	*n = 0;
	if (!v)
		return 0;
	if (!jsonread_is_array(v)) {
		snprintf(msg, sizeof(msg), "\"%s\" is not an array", key);
		return bad(r, msg);
	}
	if (jsonread_count(v) > max) {
		snprintf(msg, sizeof(msg), "\"%s\" has %zu elements, more than %zu", key, jsonread_count(v), max);
		return bad(r, msg);
	}
	*arr = v;
	*n = jsonread_count(v);
	return 0;
}

static int get_stats(struct rd *r, const struct json_object *o, struct oscal_stats *st)
{
	const struct json_object *h, *counts;
	size_t n, b;
	int e;

	memset(st, 0, sizeof(*st));
	if (!o)
		return 0;
	e = get_u64(r, o, "n", &st->n, OSCAL_SAMPLES_MAX);
	if (!e)
		e = get_f64(r, o, "mean", &st->mean, 0);
	if (!e)
		e = get_f64(r, o, "sd", &st->sd, 0);
	if (!e)
		e = get_f64(r, o, "min", &st->min, 0);
	if (!e)
		e = get_f64(r, o, "max", &st->max, 0);
	if (!e)
		e = get_f64(r, o, "p50", &st->p50, 0);
	if (!e)
		e = get_f64(r, o, "p90", &st->p90, 0);
	if (!e)
		e = get_f64(r, o, "p99", &st->p99, 0);
	if (!e)
		e = get_u64(r, o, "outliers", &st->outliers, OSCAL_SAMPLES_MAX);
	if (e)
		return e;
	h = jsonread_get(o, "hist");
	e = get_f64(r, h, "lo", &st->hist_lo, 0);
	if (!e)
		e = get_f64(r, h, "hi", &st->hist_hi, 0);
	if (!e)
		e = get_array(r, h, "counts", OSCAL_BINS, &counts, &n);
	if (e)
		return e;
	for (b = 0; b < n; b++) {
		double x = jsonread_f64(jsonread_at(counts, b), NAN);

		if (!(x >= 0) || x > OSCAL_SAMPLES_MAX || x != floor(x))
			return bad(r, "a histogram count is not a count");
		st->hist[b] = (uint64_t)x;
	}
	return 0;
}

static int get_series(struct rd *r, const struct json_object *o, struct oscal_cal *cal, struct oscal_series *se)
{
	const struct json_object *ns;
	size_t n, k;
	int e;

	if (!o || jsonread_count(o) == 0 || jsonread_is_array(o))
		return bad(r, "a series is not an object with members");
	if (!jsonread_get(o, "x"))
		return bad(r, "a series has no \"x\"");
	e = get_f64(r, o, "x", &se->x, 0);
	if (!e && fabs(se->x) > OSCAL_NS_MAX)
		e = bad(r, "a series' \"x\" is beyond 1e15");
	if (!e)
		e = get_array(r, o, "ns", OSCAL_SAMPLES_MAX, &ns, &n);
	if (e)
		return e;
	if (!n)
		return bad(r, "a series has no times (\"ns\")");
	if (cal->nsamples + n > OSCAL_SAMPLES_MAX) {
		snprintf(r->err, r->errlen, "calibration '%s' has more than %u samples", r->path, OSCAL_SAMPLES_MAX);
		return -E2BIG;
	}
	se->ns = malloc(oscal_cap(n) * sizeof(*se->ns));
	if (!se->ns) {
		snprintf(r->err, r->errlen, "cannot read calibration '%s': out of memory", r->path);
		return -ENOMEM;
	}
	for (k = 0; k < n; k++) {
		double t = jsonread_f64(jsonread_at(ns, k), NAN);

		if (!(t >= 0) || t > OSCAL_NS_MAX)
			return bad(r, "a time (\"ns\") is not a number of ns from 0 to 1e15");
		se->ns[se->n++] = t;
	}
	cal->nsamples += n;
	return get_stats(r, jsonread_get(o, "stats"), &se->st);
}

static int get_model(struct rd *r, const struct json_object *o, struct oscal_entry *e)
{
	const struct json_object *arr;
	char form[16];
	size_t n, i;
	int err;

	e->model.r2 = NAN;
	err = get_str(r, o, "form", form, sizeof(form), true);
	if (err)
		return err;
	for (i = OSCAL_NONE; i <= OSCAL_PIECEWISE; i++)
		if (!strcmp(form, oscal_form_name((enum oscal_form)i)))
			break;
	if (i > OSCAL_PIECEWISE)
		return bad(r, "the model's \"form\" is none of none, constant, linear, piecewise");
	e->model.form = (enum oscal_form)i;
	err = get_array(r, o, "pieces", OSCAL_PIECES_MAX, &arr, &n);
	if (err)
		return err;
	if (e->model.form != OSCAL_NONE && !n)
		return bad(r, "the model has no pieces");
	if ((e->model.form == OSCAL_CONSTANT || e->model.form == OSCAL_LINEAR) && n != 1)
		return bad(r, "a constant or linear model has more than one piece");
	for (i = 0; i < n; i++) {
		const struct json_object *p = jsonread_at(arr, i);
		struct oscal_piece *pc = &e->model.pieces[i];

		err = get_f64(r, p, "x0", &pc->x0, 0);
		if (!err)
			err = get_f64(r, p, "x1", &pc->x1, 0);
		if (!err)
			err = get_f64(r, p, "m", &pc->m, 0);
		if (!err)
			err = get_f64(r, p, "q", &pc->q, 0);
		if (err)
			return err;
		if (!jsonread_get(p, "q"))
			return bad(r, "a model piece has no \"q\"");
		if (pc->x1 < pc->x0 || (i && pc->x0 < e->model.pieces[i - 1].x1))
			return bad(r, "the model's pieces are not in order of x");
	}
	e->model.npieces = (uint32_t)n;
	err = get_f64(r, o, "r2", &e->model.r2, NAN);
	if (!err)
		err = get_f64(r, o, "mean_abs_ns", &e->model.mean_abs_ns, 0);
	if (!err)
		err = get_f64(r, o, "mean_rel", &e->model.mean_rel, 0);
	if (!err)
		err = get_u64(r, o, "points", &e->model.points, OSCAL_SAMPLES_MAX);
	return err;
}

static int get_entry(struct rd *r, const struct json_object *o, struct oscal_cal *cal, struct oscal_entry *e,
                     size_t idx)
{
	const struct json_object *arr;
	char status[16];
	size_t n, i;
	int err;

	snprintf(r->where, sizeof(r->where), "entry %zu", idx + 1);
	if (!o || jsonread_is_array(o) || !jsonread_count(o))
		return bad(r, "not an object");
	if (!jsonread_str(jsonread_get(o, "name")))
		return bad(r, "no name");
	err = get_str(r, o, "name", e->name, sizeof(e->name), true);
	if (err)
		return err;
	if (!oscal_name_ok(e->name))
		return bad(r, "its name is not [a-z0-9_-]");
	snprintf(r->where, sizeof(r->where), "entry %zu ('%s')", idx + 1, e->name);
	for (i = 0; i < idx; i++)
		if (!strcmp(cal->entries[i].name, e->name))
			return bad(r, "the name appears twice");
	err = get_str(r, o, "call", e->call, sizeof(e->call), true);
	if (!err)
		err = get_str(r, o, "cond", e->cond, sizeof(e->cond), false);
	if (!err)
		err = get_str(r, o, "group", e->group, sizeof(e->group), false);
	if (!err)
		err = get_str(r, o, "param", e->param, sizeof(e->param), false);
	if (!err)
		err = get_str(r, o, "unit", e->unit, sizeof(e->unit), false);
	if (!err)
		err = get_str(r, o, "desc", e->desc, sizeof(e->desc), false);
	if (!err)
		err = get_str(r, o, "reason", e->reason, sizeof(e->reason), false);
	if (!err)
		err = get_str(r, o, "status", status, sizeof(status), true);
	if (err)
		return err;
	for (i = 0; i < 4; i++)
		if (!strcmp(status, status_names[i]))
			break;
	if (i == 4)
		return bad(r, "its status is none of measured, skipped, failed, pending");
	e->status = (enum oscal_status)i;
	err = get_u32(r, o, "reps", &e->reps);
	if (!err)
		err = get_u32(r, o, "warmup", &e->warmup);
	if (!err)
		err = get_array(r, o, "series", OSCAL_SAMPLES_MAX, &arr, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		/* grown as the series prove good: a file of empty series costs
		 * nothing */
		if (oscal_grow((void **)&e->series, i, sizeof(*e->series))) {
			snprintf(r->err, r->errlen, "cannot read calibration '%s': out of memory", r->path);
			return -ENOMEM;
		}
		memset(&e->series[i], 0, sizeof(e->series[i]));
		err = get_series(r, jsonread_at(arr, i), cal, &e->series[i]);
		e->nseries++;
		if (err)
			return err;
		if (i && !(e->series[i].x > e->series[i - 1].x))
			return bad(r, "its series are not by x ascending");
	}
	if (e->status == OSCAL_MEASURED && !n)
		return bad(r, "measured, but it has no series");
	err = get_stats(r, jsonread_get(o, "stats"), &e->st);
	if (!err)
		err = get_bool(r, o, "spread_high", &e->spread_high);
	if (!err)
		err = get_array(r, o, "clusters", OSCAL_CLUSTERS_MAX, &arr, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		const struct json_object *c = jsonread_at(arr, i);
		struct oscal_cluster *cl = &e->clusters[i];

		err = get_f64(r, c, "x0", &cl->x0, 0);
		if (!err)
			err = get_f64(r, c, "x1", &cl->x1, 0);
		if (!err)
			err = get_f64(r, c, "lo", &cl->lo, 0);
		if (!err)
			err = get_f64(r, c, "hi", &cl->hi, 0);
		if (!err)
			err = get_u64(r, c, "n", &cl->n, OSCAL_SAMPLES_MAX);
		if (!err)
			err = get_f64(r, c, "mean", &cl->mean, 0);
		if (!err)
			err = get_f64(r, c, "sd", &cl->sd, 0);
		if (err)
			return err;
	}
	e->nclusters = (uint32_t)n;
	o = jsonread_get(o, "model");
	if (!o) {
		e->model.r2 = NAN;
		if (e->status == OSCAL_MEASURED)
			r->analyse = true;
		return 0;
	}
	return get_model(r, o, e);
}

static int get_root(struct rd *r, const struct json_object *root, struct oscal_cal *cal)
{
	const struct json_object *o, *arr;
	const char *format = jsonread_str(jsonread_get(root, "format"));
	const struct json_object *ver = jsonread_get(root, "version");
	double version;
	size_t n, i;
	int err;

	if (!format || strcmp(format, OSCAL_FORMAT)) {
		snprintf(r->err, r->errlen, "'%s' is not a layerprof calibration (its \"format\" is not \"%s\")",
		         r->path, OSCAL_FORMAT);
		return -EINVAL;
	}
	version = jsonread_f64(ver, NAN);
	if (!(version >= 1) || version != floor(version) || version > 1e9)
		return bad(r, "no version (a whole number from 1)");
	if (version > OSCAL_VERSION) {
		snprintf(r->err, r->errlen, "calibration '%s': version %.0f is newer than this layerprof reads (%u)",
		         r->path, version, OSCAL_VERSION);
		return -EINVAL;
	}
	cal->version = (uint32_t)version;
	err = get_str(r, root, "created", cal->created, sizeof(cal->created), false);
	if (!err)
		err = get_str(r, root, "source", cal->source, sizeof(cal->source), false);
	if (!err)
		err = get_bool(r, root, "complete", &cal->complete);
	o = jsonread_get(root, "machine");
	if (!err)
		err = get_str(r, o, "arch", cal->machine.arch, sizeof(cal->machine.arch), false);
	if (!err)
		err = get_u32(r, o, "cpus", &cal->machine.cpus);
	if (!err)
		err = get_str(r, o, "kernel", cal->machine.kernel, sizeof(cal->machine.kernel), false);
	if (!err)
		err = get_str(r, o, "libc", cal->machine.libc, sizeof(cal->machine.libc), false);
	if (!err)
		err = get_str(r, o, "host", cal->machine.host, sizeof(cal->machine.host), false);
	if (!err)
		err = get_str(r, o, "cpu", cal->machine.cpu, sizeof(cal->machine.cpu), false);
	o = jsonread_get(root, "clock");
	if (!err)
		err = get_str(r, o, "name", cal->clock.name, sizeof(cal->clock.name), false);
	if (!err)
		err = get_f64(r, o, "resolution_ns", &cal->clock.resolution_ns, 0);
	if (!err)
		err = get_f64(r, o, "overhead_ns", &cal->clock.overhead_ns, 0);
	o = jsonread_get(root, "settings");
	if (!err)
		err = get_bool(r, o, "quick", &cal->settings.quick);
	if (!err)
		err = get_u32(r, o, "reps", &cal->settings.reps);
	if (!err)
		err = get_u32(r, o, "warmup", &cal->settings.warmup);
	if (!err)
		err = get_f64(r, o, "threshold", &cal->settings.threshold, OSCAL_THRESHOLD);
	if (!err && !(cal->settings.threshold > 0))
		err = bad(r, "settings.threshold is not above 0");
	if (!err)
		err = get_str(r, o, "calls", cal->settings.calls, sizeof(cal->settings.calls), false);
	if (!err)
		err = get_array(r, root, "entries", OSCAL_ENTRIES_MAX, &arr, &n);
	if (err)
		return err;
	if (!arr)
		return bad(r, "no \"entries\" array");
	if (n) {
		cal->entries = calloc(oscal_cap(n), sizeof(*cal->entries));
		if (!cal->entries) {
			snprintf(r->err, r->errlen, "cannot read calibration '%s': out of memory", r->path);
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		cal->nentries++;
		err = get_entry(r, jsonread_at(arr, i), cal, &cal->entries[i], i);
		if (err)
			return err;
	}
	cal->header_seen = true;
	return 0;
}

int oscal_cal_read(const char *path, struct oscal_cal *cal, char *err, size_t errlen)
{
	struct rd r = { .path = path, .err = err, .errlen = errlen };
	struct json_object *root;
	int e;

	oscal_cal_init(cal);
	cal->created[0] = '\0';
	root = jsonread_file(path, &e, err, errlen);
	if (!root)
		return e == -EBADMSG ? -EINVAL : e;
	e = get_root(&r, root, cal);
	jsonread_release(root);
	if (!e && r.analyse) {
		e = oscal_cal_analyse(cal);
		if (e)
			snprintf(err, errlen, "cannot analyse calibration '%s': out of memory", path);
	}
	if (e)
		oscal_cal_release(cal);
	return e;
}
