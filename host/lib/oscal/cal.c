/* A calibration in memory (oscal.h): the suite protocol's lines fed into
 * it, its entries looked up, and each measured entry analysed (the
 * statistics, the outliers, the spread flag, the clusters and model).
 *
 * The timer's overhead (the clock record's overhead_ns) is subtracted
 * from each time as it is fed (clamped at 0), so that the samples in
 * memory and in the file are net and analysing twice changes nothing; a
 * resumed run's samples get that run's overhead.  Per entry the analysis
 * takes each series' outliers (oscal_outlier_limit over that series)
 * out of the fit; spread_high is set when one series without its
 * outliers has sd / mean above the threshold, or when the fit found
 * clusters by time. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/lib/oscal/oscal.h"
#include "host/lib/oscal/oscal_impl.h"

size_t oscal_cap(size_t n)
{
	size_t c = 16;

	while (c < n)
		c *= 2;
	return c;
}

int oscal_grow(void **arr, size_t n, size_t size)
{
	void *p;

	if (*arr && oscal_cap(n + 1) == oscal_cap(n))
		return 0;
	p = realloc(*arr, oscal_cap(n + 1) * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

void oscal_cal_init(struct oscal_cal *cal)
{
	time_t now = time(NULL);
	struct tm tm;

	memset(cal, 0, sizeof(*cal));
	cal->version = OSCAL_VERSION;
	if (gmtime_r(&now, &tm))
		strftime(cal->created, sizeof(cal->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(cal->source, sizeof(cal->source), "local");
	cal->settings.threshold = OSCAL_THRESHOLD;
}

static void entry_release(struct oscal_entry *e)
{
	uint32_t i;

	for (i = 0; i < e->nseries; i++)
		free(e->series[i].ns);
	free(e->series);
	e->series = NULL;
	e->nseries = 0;
}

void oscal_cal_release(struct oscal_cal *cal)
{
	uint32_t i;

	if (!cal)
		return;
	for (i = 0; i < cal->nentries; i++)
		entry_release(&cal->entries[i]);
	free(cal->entries);
	cal->entries = NULL;
	cal->nentries = 0;
	cal->nsamples = 0;
}

struct oscal_entry *oscal_cal_find(const struct oscal_cal *cal, const char *name)
{
	uint32_t i;

	for (i = 0; i < cal->nentries; i++)
		if (!strcmp(cal->entries[i].name, name))
			return &cal->entries[i];
	return NULL;
}

const struct oscal_entry *oscal_cal_find_call(const struct oscal_cal *cal, const char *call, const char *cond)
{
	const struct oscal_entry *first = NULL;
	uint32_t i;

	for (i = 0; i < cal->nentries; i++) {
		const struct oscal_entry *e = &cal->entries[i];

		if (strcmp(e->call, call))
			continue;
		if (cond && *cond) {
			if (!strcmp(e->cond, cond))
				return e;
			continue;
		}
		if (!e->cond[0])
			return e;
		if (!first)
			first = e;
	}
	return first;
}

/* ------------------------------------------------------------ the suite protocol */

/* Keys whose value is the rest of the line (the protocol puts text last). */
static bool text_key(const char *key, size_t len)
{
	static const char *const keys[] = { "cpu", "desc", "reason" };
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == len && !memcmp(keys[i], key, len))
			return true;
	return false;
}

/* One key=value field of a record.  The value is not NUL-terminated. */
struct field {
	const char *key, *val;
	size_t klen, vlen;
};

/* The next field at *s (past the spaces), advancing *s; false at the end
 * of the line. */
static bool next_field(const char **s, struct field *f)
{
	const char *p = *s, *eq, *end;

	while (*p == ' ')
		p++;
	if (!*p)
		return false;
	end = strchr(p, ' ');
	if (!end)
		end = p + strlen(p);
	eq = memchr(p, '=', (size_t)(end - p));
	f->key = p;
	if (!eq) {
		f->klen = (size_t)(end - p);
		f->val = end;
		f->vlen = 0;
	} else {
		f->klen = (size_t)(eq - p);
		f->val = eq + 1;
		if (text_key(p, f->klen))
			end = eq + 1 + strlen(eq + 1);
		f->vlen = (size_t)(end - f->val);
	}
	*s = end;
	return true;
}

static bool key_is(const struct field *f, const char *key)
{
	return strlen(key) == f->klen && !memcmp(f->key, key, f->klen);
}

/* The next space-separated word at *s into w[size]; false at the end of the
 * line (*len 0) or when it does not fit (*len its length). */
static bool next_word(const char **s, char *w, size_t size, size_t *len)
{
	const char *p = *s, *end;

	*len = 0;
	while (*p == ' ')
		p++;
	if (!*p)
		return false;
	end = strchr(p, ' ');
	if (!end)
		end = p + strlen(p);
	*len = (size_t)(end - p);
	*s = end;
	if (*len >= size)
		return false;
	memcpy(w, p, *len);
	w[*len] = '\0';
	return true;
}

/* A name value ("-" is empty): printable, no space, shorter than size. */
static int set_name(char *dst, size_t size, const struct field *f, char *err, size_t errlen)
{
	size_t i;

	if (f->vlen == 1 && f->val[0] == '-') {
		dst[0] = '\0';
		return 0;
	}
	if (f->vlen >= size) {
		snprintf(err, errlen, "%.*s '%.40s...' is too long (at most %zu bytes)", (int)f->klen, f->key, f->val,
		         size - 1);
		return -EINVAL;
	}
	for (i = 0; i < f->vlen; i++)
		if ((unsigned char)f->val[i] <= ' ' || (unsigned char)f->val[i] >= 0x7f) {
			snprintf(err, errlen, "%.*s '%.*s' holds a character that is not printable ASCII", (int)f->klen,
			         f->key, (int)f->vlen, f->val);
			return -EINVAL;
		}
	memcpy(dst, f->val, f->vlen);
	dst[f->vlen] = '\0';
	return 0;
}

/* A text value ("-" is empty), cut to size at a character's start. */
static void set_text(char *dst, size_t size, const struct field *f)
{
	size_t n = f->vlen;

	if (n == 1 && f->val[0] == '-')
		n = 0;
	if (n >= size) {
		n = size - 1;
		while (n && ((unsigned char)f->val[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, f->val, n);
	dst[n] = '\0';
}

/* A decimal number, the whole of s[0..len); false when it is none or not
 * finite. */
static bool parse_f64(const char *s, size_t len, double *v)
{
	char buf[64], *end;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!(buf[0] == '-' || buf[0] == '.' || (buf[0] >= '0' && buf[0] <= '9')))
		return false;
	errno = 0;
	*v = strtod(buf, &end);
	return *end == '\0' && isfinite(*v) && errno != ERANGE;
}

static int set_f64(double *dst, const struct field *f, char *err, size_t errlen)
{
	if (!parse_f64(f->val, f->vlen, dst)) {
		snprintf(err, errlen, "%.*s '%.*s' is not a number", (int)f->klen, f->key,
		         (int)(f->vlen > 40 ? 40 : f->vlen), f->val);
		return -EINVAL;
	}
	return 0;
}

static int set_u32(uint32_t *dst, const struct field *f, char *err, size_t errlen)
{
	double v;

	if (!parse_f64(f->val, f->vlen, &v) || v < 0 || v > UINT32_MAX || v != floor(v)) {
		snprintf(err, errlen, "%.*s '%.*s' is not a count", (int)f->klen, f->key,
		         (int)(f->vlen > 40 ? 40 : f->vlen), f->val);
		return -EINVAL;
	}
	*dst = (uint32_t)v;
	return 0;
}

static int feed_machine(struct oscal_cal *cal, const char *s, char *err, size_t errlen)
{
	struct field f;
	int r = 0;

	while (!r && next_field(&s, &f)) {
		if (key_is(&f, "arch"))
			r = set_name(cal->machine.arch, sizeof(cal->machine.arch), &f, err, errlen);
		else if (key_is(&f, "cpus"))
			r = set_u32(&cal->machine.cpus, &f, err, errlen);
		else if (key_is(&f, "kernel"))
			r = set_name(cal->machine.kernel, sizeof(cal->machine.kernel), &f, err, errlen);
		else if (key_is(&f, "libc"))
			r = set_name(cal->machine.libc, sizeof(cal->machine.libc), &f, err, errlen);
		else if (key_is(&f, "host"))
			r = set_name(cal->machine.host, sizeof(cal->machine.host), &f, err, errlen);
		else if (key_is(&f, "cpu"))
			set_text(cal->machine.cpu, sizeof(cal->machine.cpu), &f);
	}
	return r;
}

static int feed_clock(struct oscal_cal *cal, const char *s, char *err, size_t errlen)
{
	struct field f;
	int r = 0;

	while (!r && next_field(&s, &f)) {
		if (key_is(&f, "name"))
			r = set_name(cal->clock.name, sizeof(cal->clock.name), &f, err, errlen);
		else if (key_is(&f, "resolution_ns"))
			r = set_f64(&cal->clock.resolution_ns, &f, err, errlen);
		else if (key_is(&f, "overhead_ns")) {
			r = set_f64(&cal->clock.overhead_ns, &f, err, errlen);
			if (!r && (cal->clock.overhead_ns < 0 || cal->clock.overhead_ns > OSCAL_NS_MAX)) {
				snprintf(err, errlen, "overhead_ns %g is out of range", cal->clock.overhead_ns);
				r = -EINVAL;
			}
		}
	}
	return r;
}

static int feed_settings(struct oscal_cal *cal, const char *s, char *err, size_t errlen)
{
	struct field f;
	uint32_t quick = 0;
	int r = 0;

	while (!r && next_field(&s, &f)) {
		if (key_is(&f, "quick")) {
			r = set_u32(&quick, &f, err, errlen);
			cal->settings.quick = quick != 0;
		} else if (key_is(&f, "reps"))
			r = set_u32(&cal->settings.reps, &f, err, errlen);
		else if (key_is(&f, "warmup"))
			r = set_u32(&cal->settings.warmup, &f, err, errlen);
		else if (key_is(&f, "calls")) {
			if (f.vlen >= sizeof(cal->settings.calls)) {
				snprintf(err, errlen, "calls is too long (at most %zu bytes)",
				         sizeof(cal->settings.calls) - 1);
				r = -EINVAL;
			} else
				set_text(cal->settings.calls, sizeof(cal->settings.calls), &f);
		}
	}
	return r;
}

/* An entry name: lowercase letters, digits, '_' and '-'. */
static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

bool oscal_name_ok(const char *s)
{
	return name_ok(s);
}

/* The entry named by the record's second word (s advanced past it). */
static struct oscal_entry *record_entry(struct oscal_cal *cal, const char **s, const char *rec, char *name, char *err,
                                        size_t errlen)
{
	struct oscal_entry *e;
	size_t len;

	if (!next_word(s, name, OSCAL_NAME_MAX, &len)) {
		snprintf(err, errlen, len ? "%s record: entry name too long" : "%s record without an entry name", rec);
		return NULL;
	}
	e = oscal_cal_find(cal, name);
	if (!e)
		snprintf(err, errlen, "%s record of unknown entry '%s'", rec, name);
	return e;
}

static int feed_entry(struct oscal_cal *cal, const char *s, char *err, size_t errlen)
{
	struct oscal_entry n, *e;
	struct field f;
	size_t len = 0;
	uint32_t i;
	int r = 0;

	memset(&n, 0, sizeof(n));
	if (!next_word(&s, n.name, sizeof(n.name), &len) || !name_ok(n.name)) {
		snprintf(err, errlen,
		         len ? "entry name '%.*s' is not [a-z0-9_-], at most %d bytes" : "entry record without a name",
		         (int)(len > 64 ? 64 : len), s - len, OSCAL_NAME_MAX - 1);
		return -EINVAL;
	}
	n.status = OSCAL_PENDING;
	n.reps = cal->settings.reps;
	n.warmup = cal->settings.warmup;
	n.model.r2 = NAN;
	while (!r && next_field(&s, &f)) {
		if (key_is(&f, "call"))
			r = set_name(n.call, sizeof(n.call), &f, err, errlen);
		else if (key_is(&f, "cond"))
			r = set_name(n.cond, sizeof(n.cond), &f, err, errlen);
		else if (key_is(&f, "group"))
			r = set_name(n.group, sizeof(n.group), &f, err, errlen);
		else if (key_is(&f, "param"))
			r = set_name(n.param, sizeof(n.param), &f, err, errlen);
		else if (key_is(&f, "unit"))
			r = set_name(n.unit, sizeof(n.unit), &f, err, errlen);
		else if (key_is(&f, "reps"))
			r = set_u32(&n.reps, &f, err, errlen);
		else if (key_is(&f, "warmup"))
			r = set_u32(&n.warmup, &f, err, errlen);
		else if (key_is(&f, "desc"))
			set_text(n.desc, sizeof(n.desc), &f);
	}
	if (r)
		return r;
	if (!n.call[0])
		memcpy(n.call, n.name, sizeof(n.call));
	e = oscal_cal_find(cal, n.name);
	if (e) {
		/* a resumed run measures again what an interrupted one left */
		if (e->status != OSCAL_PENDING && e->status != OSCAL_FAILED) {
			snprintf(err, errlen, "entry '%s' appears twice", n.name);
			return -EINVAL;
		}
		for (i = 0; i < e->nseries; i++)
			cal->nsamples -= e->series[i].n;
		entry_release(e);
	} else {
		if (cal->nentries >= OSCAL_ENTRIES_MAX) {
			snprintf(err, errlen, "more than %u entries", OSCAL_ENTRIES_MAX);
			return -E2BIG;
		}
		if (oscal_grow((void **)&cal->entries, cal->nentries, sizeof(*cal->entries))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		e = &cal->entries[cal->nentries++];
	}
	*e = n;
	return 0;
}

/* The series of e at x, made when new (the series stay by x ascending). */
static struct oscal_series *series_at(struct oscal_entry *e, double x)
{
	uint32_t i;

	for (i = 0; i < e->nseries && e->series[i].x < x; i++)
		;
	if (i < e->nseries && e->series[i].x == x)
		return &e->series[i];
	if (oscal_grow((void **)&e->series, e->nseries, sizeof(*e->series)))
		return NULL;
	memmove(&e->series[i + 1], &e->series[i], (e->nseries - i) * sizeof(*e->series));
	memset(&e->series[i], 0, sizeof(e->series[i]));
	e->series[i].x = x;
	e->nseries++;
	return &e->series[i];
}

static int feed_sample(struct oscal_cal *cal, const char *s, char *err, size_t errlen)
{
	char name[OSCAL_NAME_MAX], w[64];
	struct oscal_entry *e = record_entry(cal, &s, "sample", name, err, errlen);
	struct oscal_series *se;
	const char *times;
	size_t len, n = 0;
	double x, t;

	if (!e)
		return -EINVAL;
	if (e->status != OSCAL_PENDING) {
		snprintf(err, errlen, "sample of entry '%s', which has ended", name);
		return -EINVAL;
	}
	if (!next_word(&s, w, sizeof(w), &len) || !parse_f64(w, len, &x) || fabs(x) > OSCAL_NS_MAX) {
		snprintf(err, errlen, len ? "sample of '%s': x '%.40s' is not a number" : "sample of '%s' without x",
		         name, len < sizeof(w) ? w : "(too long)");
		return -EINVAL;
	}
	/* the whole line checked first: a refused line adds nothing */
	times = s;
	while (next_word(&s, w, sizeof(w), &len)) {
		if (!parse_f64(w, len, &t) || t < 0 || t > OSCAL_NS_MAX) {
			snprintf(err, errlen, "sample of '%s' at x %g: time '%s' is not a number of ns", name, x, w);
			return -EINVAL;
		}
		n++;
	}
	if (len) {
		snprintf(err, errlen, "sample of '%s' at x %g: a time is too long", name, x);
		return -EINVAL;
	}
	if (!n) {
		snprintf(err, errlen, "sample of '%s' at x %g without times", name, x);
		return -EINVAL;
	}
	if (cal->nsamples + n > OSCAL_SAMPLES_MAX) {
		snprintf(err, errlen, "more than %u samples", OSCAL_SAMPLES_MAX);
		return -E2BIG;
	}
	se = series_at(e, x);
	if (!se) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s = times;
	while (next_word(&s, w, sizeof(w), &len)) {
		if (oscal_grow((void **)&se->ns, se->n, sizeof(*se->ns))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		parse_f64(w, len, &t);
		/* kept net of the timer's overhead, so that a calibration read
		 * back and analysed again gives the same */
		t -= cal->clock.overhead_ns;
		se->ns[se->n++] = t > 0 ? t : 0;
		cal->nsamples++;
	}
	return 0;
}

static int feed_end(struct oscal_cal *cal, const char *s, const char *rec, char *err, size_t errlen)
{
	char name[OSCAL_NAME_MAX];
	struct oscal_entry *e = record_entry(cal, &s, rec, name, err, errlen);
	struct field f;

	if (!e)
		return -EINVAL;
	if (e->status != OSCAL_PENDING) {
		snprintf(err, errlen, "%s record of entry '%s', which has ended", rec, name);
		return -EINVAL;
	}
	if (!strcmp(rec, "end")) {
		e->status = e->nseries ? OSCAL_MEASURED : OSCAL_FAILED;
		if (!e->nseries)
			snprintf(e->reason, sizeof(e->reason), "no samples");
		return 0;
	}
	e->status = !strcmp(rec, "skip") ? OSCAL_SKIPPED : OSCAL_FAILED;
	while (next_field(&s, &f))
		if (key_is(&f, "reason"))
			set_text(e->reason, sizeof(e->reason), &f);
	if (!e->reason[0])
		snprintf(e->reason, sizeof(e->reason), "no reason given");
	return 0;
}

static int feed_done(struct oscal_cal *cal)
{
	uint32_t i;

	cal->complete = true;
	for (i = 0; i < cal->nentries; i++)
		if (cal->entries[i].status == OSCAL_PENDING)
			cal->complete = false;
	return 0;
}

int oscal_cal_feed(struct oscal_cal *cal, const char *line, char *err, size_t errlen)
{
	const char *s = line;
	char rec[16];
	size_t len = 0;
	unsigned long v;
	char *end;

	if (!next_word(&s, rec, sizeof(rec), &len)) {
		if (!len)
			return 0; /* an empty line */
		snprintf(err, errlen, "unknown record '%.40s'", line);
		return -EINVAL;
	}
	if (!strcmp(rec, "layerprof-oscal")) {
		while (*s == ' ')
			s++;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (end == s || *end || errno || *s == '-' || *s == '+') {
			snprintf(err, errlen, "the suite's first line '%.60s' has no protocol version", line);
			return -EINVAL;
		}
		if (v != OSCAL_PROTOCOL) {
			snprintf(err, errlen, "the suite speaks protocol version %lu, this layerprof reads %u", v,
			         OSCAL_PROTOCOL);
			return -EINVAL;
		}
		cal->header_seen = true;
		return 0;
	}
	if (!cal->header_seen) {
		snprintf(err, errlen, "'%.60s' is not the suite's first line (layerprof-oscal %u)", line,
		         OSCAL_PROTOCOL);
		return -EINVAL;
	}
	if (!strcmp(rec, "machine"))
		return feed_machine(cal, s, err, errlen);
	if (!strcmp(rec, "clock"))
		return feed_clock(cal, s, err, errlen);
	if (!strcmp(rec, "settings"))
		return feed_settings(cal, s, err, errlen);
	if (!strcmp(rec, "entry"))
		return feed_entry(cal, s, err, errlen);
	if (!strcmp(rec, "sample"))
		return feed_sample(cal, s, err, errlen);
	if (!strcmp(rec, "end") || !strcmp(rec, "skip") || !strcmp(rec, "fail"))
		return feed_end(cal, s, rec, err, errlen);
	if (!strcmp(rec, "done"))
		return feed_done(cal);
	snprintf(err, errlen, "unknown record '%s'", rec);
	return -EINVAL;
}

/* ------------------------------------------------------------ analysis */

static void entry_clear_analysis(struct oscal_entry *e)
{
	memset(&e->st, 0, sizeof(e->st));
	e->spread_high = false;
	memset(e->clusters, 0, sizeof(e->clusters));
	e->nclusters = 0;
	memset(&e->model, 0, sizeof(e->model));
	e->model.r2 = NAN;
}

static int entry_analyse(struct oscal_entry *e, double threshold, double floor_ns)
{
	struct oscal_point *pts = NULL;
	double *all = NULL;
	size_t n = 0, np = 0, k;
	uint64_t outliers = 0;
	uint32_t i;
	int r = 0;

	entry_clear_analysis(e);
	for (i = 0; i < e->nseries; i++) {
		r = oscal_stats_compute(e->series[i].ns, e->series[i].n, &e->series[i].st);
		if (r)
			return r;
		n += e->series[i].n;
	}
	if (!n)
		return 0;
	all = malloc(n * sizeof(*all));
	pts = malloc(n * sizeof(*pts));
	if (!all || !pts) {
		r = -ENOMEM;
		goto out;
	}
	n = 0;
	for (i = 0; i < e->nseries; i++) {
		const struct oscal_series *se = &e->series[i];
		double lim, sum = 0, sd = 0;
		size_t first = np;

		memcpy(all + n, se->ns, se->n * sizeof(*all));
		n += se->n;
		lim = oscal_outlier_limit(se->ns, se->n);
		for (k = 0; k < se->n; k++)
			if (se->ns[k] <= lim) {
				pts[np].x = e->param[0] ? se->x : 0;
				pts[np++].ns = se->ns[k];
				sum += se->ns[k];
			}
		outliers += se->n - (np - first);
		/* the spread of the series without its outliers */
		if (np > first + 1) {
			double mean = sum / (double)(np - first);

			for (k = first; k < np; k++)
				sd += (pts[k].ns - mean) * (pts[k].ns - mean);
			sd = sqrt(sd / (double)(np - first - 1));
			if (mean > 0 || floor_ns > 0 ? sd / fmax(mean, floor_ns) > threshold : sd > 0)
				e->spread_high = true;
		}
	}
	r = oscal_stats_compute(all, n, &e->st);
	if (r)
		goto out;
	e->st.outliers = outliers;
	if (e->status != OSCAL_MEASURED || !np)
		goto out;
	r = oscal_fit(pts, np, e->param[0] != '\0', threshold, floor_ns, e->clusters, &e->nclusters, &e->model);
	if (!r && !e->param[0] && e->nclusters > 1)
		e->spread_high = true;
out:
	free(all);
	free(pts);
	return r;
}

int oscal_cal_analyse(struct oscal_cal *cal)
{
	double threshold = cal->settings.threshold;
	double floor_ns = cal->clock.overhead_ns > 0 ? OSCAL_FLOOR_PAIRS * cal->clock.overhead_ns : 0;
	uint32_t i;
	int r;

	if (!(threshold > 0)) /* NaN too */
		threshold = cal->settings.threshold = OSCAL_THRESHOLD;
	for (i = 0; i < cal->nentries; i++) {
		struct oscal_entry *e = &cal->entries[i];

		if (e->status == OSCAL_PENDING) {
			e->status = OSCAL_FAILED;
			snprintf(e->reason, sizeof(e->reason), "interrupted");
		}
		r = entry_analyse(e, threshold, floor_ns);
		if (r)
			return r;
	}
	return 0;
}
