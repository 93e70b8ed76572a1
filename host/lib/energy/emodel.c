/* The energy model (see emodel.h): its JSON file, binding its terms to the
 * events a trace or a run counted, and applying it.  The fit is in
 * regress.c (GSL). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common/ctrnames.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/util/json.h"
#include "host/lib/util/jsonread.h"
#include "host/lib/util/outfile.h"

/* /proc/cpuinfo is read up to this many lines (the first CPU's block
 * names the model; a machine with hundreds of CPUs repeats it). */
#define CPUINFO_LINES_MAX 4096u

static const char const_name[] = "const";

static void stats_unknown(struct emodel_term *t)
{
	t->coef = NAN;
	t->se = NAN;
	t->t = NAN;
	t->p = NAN;
}

void emodel_init(struct emodel *m)
{
	time_t now = time(NULL);
	struct tm tm;

	memset(m, 0, sizeof(*m));
	m->version = EMODEL_VERSION;
	if (gmtime_r(&now, &tm))
		strftime(m->created, sizeof(m->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(m->c0.name, sizeof(m->c0.name), "%s", const_name);
	stats_unknown(&m->c0);
	m->fit.r2 = m->fit.adj_r2 = m->fit.f = m->fit.f_p = m->fit.rmse = m->fit.alpha = NAN;
	m->cv.mean_abs_pct = m->cv.max_abs_pct = NAN;
}

/* --- reading --- */

/* What load knows while it reads: the file's name for the messages. */
struct loader {
	const char *path;
	char *err;
	size_t errlen;
};

/* A string member into dst[size]; absent or null: "" unless required. */
static int load_str(struct loader *l, const struct json_object *obj, const char *key, const char *what, char *dst,
                    size_t size, bool required)
{
	const struct json_object *v = jsonread_get(obj, key);
	const char *s = jsonread_str(v);

	dst[0] = '\0';
	if (!s) {
		if (!required && !v)
			return 0; /* absent or null (json-c's null is no object) */
		snprintf(l->err, l->errlen, "energy model '%s' has no %s (a string)", l->path, what);
		return -EINVAL;
	}
	if (strlen(s) >= size) {
		snprintf(l->err, l->errlen, "energy model '%s': %s '%.40s%s' is too long (at most %zu bytes)", l->path,
		         what, s, strlen(s) > 40 ? "..." : "", size - 1);
		return -EINVAL;
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

/* A number member; absent or null (what NaN is written as): dflt. */
static double load_f64(const struct json_object *obj, const char *key, double dflt)
{
	return jsonread_f64(jsonread_get(obj, key), dflt);
}

static uint32_t load_u32(const struct json_object *obj, const char *key)
{
	uint64_t v = jsonread_u64(jsonread_get(obj, key), 0);

	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* One term: {"event", "coef", "se", "t", "p"} and, dropped, "why".  A kept
 * term must have its coefficient; a dropped one may not (constant or
 * collinear candidates were never fitted). */
static int load_term(struct loader *l, const struct json_object *o, size_t i, bool dropped, struct emodel_term *t)
{
	const char *list = dropped ? "dropped event" : "term";
	const struct json_object *coef;
	char what[64];
	int r;

	memset(t, 0, sizeof(*t));
	if (!jsonread_str(jsonread_get(o, "event"))) {
		snprintf(l->err, l->errlen, "energy model '%s': %s %zu has no event name", l->path, list, i + 1);
		return -EINVAL;
	}
	snprintf(what, sizeof(what), "%s name", list);
	r = load_str(l, o, "event", what, t->name, sizeof(t->name), true);
	if (r)
		return r;
	if (!t->name[0] || !strcmp(t->name, const_name)) {
		snprintf(l->err, l->errlen, "energy model '%s': %s %zu has the name '%s', which is no event", l->path,
		         list, i + 1, t->name);
		return -EINVAL;
	}
	coef = jsonread_get(o, "coef");
	t->coef = jsonread_f64(coef, NAN);
	if (!dropped && isnan(t->coef)) {
		snprintf(l->err, l->errlen, "energy model '%s': term '%s' has no coefficient", l->path, t->name);
		return -EINVAL;
	}
	t->se = load_f64(o, "se", NAN);
	t->t = load_f64(o, "t", NAN);
	t->p = load_f64(o, "p", NAN);
	if (dropped)
		return load_str(l, o, "why", "reason a candidate was dropped", t->why, sizeof(t->why), false);
	return 0;
}

static int load_terms(struct loader *l, const struct json_object *root, bool dropped, struct emodel_term *terms,
                      uint32_t *n)
{
	const char *key = dropped ? "dropped" : "terms";
	const struct json_object *arr = jsonread_get(root, key);
	size_t i, j, count = jsonread_count(arr);
	int r;

	*n = 0;
	if (!arr && dropped)
		return 0;
	if (!jsonread_is_array(arr)) {
		snprintf(l->err, l->errlen, "energy model '%s' has no %s array", l->path, key);
		return -EINVAL;
	}
	if (count > EMODEL_TERMS_MAX) {
		snprintf(l->err, l->errlen, "energy model '%s' has %zu %s, more than %u", l->path, count, key,
		         EMODEL_TERMS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < count; i++) {
		r = load_term(l, jsonread_at(arr, i), i, dropped, &terms[i]);
		if (r)
			return r;
		for (j = 0; j < i; j++)
			if (!strcmp(terms[j].name, terms[i].name)) {
				snprintf(l->err, l->errlen, "energy model '%s': event '%s' appears twice in %s",
				         l->path, terms[i].name, key);
				return -EINVAL;
			}
	}
	*n = (uint32_t)count;
	return 0;
}

static int load_machine(struct loader *l, const struct json_object *o, struct emodel *m)
{
	int r;

	r = load_str(l, o, "arch", "machine.arch", m->machine.arch, sizeof(m->machine.arch), false);
	if (!r)
		r = load_str(l, o, "cpu", "machine.cpu", m->machine.cpu, sizeof(m->machine.cpu), false);
	if (!r)
		r = load_str(l, o, "kernel", "machine.kernel", m->machine.kernel, sizeof(m->machine.kernel), false);
	if (!r)
		r = load_str(l, o, "host", "machine.host", m->machine.host, sizeof(m->machine.host), false);
	if (r)
		return r;
	/* the constant's divisor for one thread or CPU: a model without it
	 * cannot be applied below the whole machine */
	m->machine.cpus = load_u32(o, "cpus");
	if (!m->machine.cpus) {
		snprintf(l->err, l->errlen,
		         "energy model '%s' has no machine.cpus (the CPUs it was made on, at least 1)", l->path);
		return -EINVAL;
	}
	return 0;
}

static int load_root(struct loader *l, const struct json_object *root, struct emodel *m)
{
	const struct json_object *o;
	const char *format = jsonread_str(jsonread_get(root, "format"));
	uint64_t version;
	int r;

	if (!format || strcmp(format, EMODEL_FORMAT)) {
		snprintf(l->err, l->errlen, "'%s' is not a layerprof energy model (its \"format\" is not \"%s\")",
		         l->path, EMODEL_FORMAT);
		return -EINVAL;
	}
	version = jsonread_u64(jsonread_get(root, "version"), 0);
	if (!version) {
		snprintf(l->err, l->errlen, "energy model '%s' has no version", l->path);
		return -EINVAL;
	}
	if (version > EMODEL_VERSION) {
		snprintf(l->err, l->errlen,
		         "energy model '%s' is of version %llu, newer than this layerprof reads (%u)", l->path,
		         (unsigned long long)version, EMODEL_VERSION);
		return -EINVAL;
	}
	m->version = (uint32_t)version;
	r = load_str(l, root, "source", "source", m->source, sizeof(m->source), false);
	if (!r)
		r = load_str(l, root, "created", "created", m->created, sizeof(m->created), false);
	if (!r)
		r = load_machine(l, jsonread_get(root, "machine"), m);
	if (r)
		return r;

	o = jsonread_get(root, "const");
	m->c0.coef = load_f64(o, "coef", NAN);
	if (isnan(m->c0.coef)) {
		snprintf(l->err, l->errlen, "energy model '%s' has no constant (const.coef, in W)", l->path);
		return -EINVAL;
	}
	m->c0.se = load_f64(o, "se", NAN);
	m->c0.t = load_f64(o, "t", NAN);
	m->c0.p = load_f64(o, "p", NAN);
	r = load_terms(l, root, false, m->terms, &m->nterms);
	if (!r)
		r = load_terms(l, root, true, m->dropped, &m->ndropped);
	if (r)
		return r;

	o = jsonread_get(root, "fit");
	m->fit.r2 = load_f64(o, "r2", NAN);
	m->fit.adj_r2 = load_f64(o, "adj_r2", NAN);
	m->fit.f = load_f64(o, "f", NAN);
	m->fit.f_p = load_f64(o, "f_p", NAN);
	m->fit.rmse = load_f64(o, "rmse", NAN);
	m->fit.n = load_u32(o, "n");
	m->fit.alpha = load_f64(o, "alpha", NAN);
	o = jsonread_get(root, "cv");
	m->cv.folds = load_u32(o, "folds");
	m->cv.mean_abs_pct = load_f64(o, "mean_abs_pct", NAN);
	m->cv.max_abs_pct = load_f64(o, "max_abs_pct", NAN);
	o = jsonread_get(root, "training");
	m->training.programs = load_u32(o, "programs");
	m->training.seconds = load_f64(o, "seconds", NAN);
	m->training.seed = jsonread_u64(jsonread_get(o, "seed"), 0);
	m->training.segments = load_u32(o, "segments");
	return 0;
}

int emodel_load(struct emodel *m, const char *path, char *err, size_t errlen)
{
	struct loader l = { path, err, errlen };
	struct json_object *root;
	int r;

	emodel_init(m);
	m->created[0] = '\0';
	root = jsonread_file(path, &r, err, errlen);
	if (!root)
		return r == -EBADMSG ? -EINVAL : r;
	r = load_root(&l, root, m);
	jsonread_release(root);
	return r;
}

/* --- writing --- */

static void save_term(struct json *j, const struct emodel_term *t, bool dropped)
{
	json_object_begin(j, NULL);
	json_str(j, "event", t->name);
	json_f64_exact(j, "coef", t->coef);
	json_f64_exact(j, "se", t->se);
	json_f64_exact(j, "t", t->t);
	json_f64_exact(j, "p", t->p);
	if (dropped)
		json_str(j, "why", t->why);
	json_object_end(j);
}

static void save_doc(FILE *f, const struct emodel *m)
{
	struct json j;
	uint32_t i;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "format", EMODEL_FORMAT);
	json_u64(&j, "version", EMODEL_VERSION);
	json_str(&j, "source", m->source);
	json_str(&j, "created", m->created);
	json_object_begin(&j, "machine");
	json_str(&j, "arch", m->machine.arch);
	json_str(&j, "cpu", m->machine.cpu);
	json_str(&j, "kernel", m->machine.kernel);
	json_str(&j, "host", m->machine.host);
	json_u64(&j, "cpus", m->machine.cpus);
	json_object_end(&j);
	json_object_begin(&j, "training");
	json_u64(&j, "programs", m->training.programs);
	json_f64_exact(&j, "seconds", m->training.seconds);
	json_u64(&j, "seed", m->training.seed);
	json_u64(&j, "segments", m->training.segments);
	json_object_end(&j);
	json_object_begin(&j, "const");
	json_f64_exact(&j, "coef", m->c0.coef);
	json_f64_exact(&j, "se", m->c0.se);
	json_f64_exact(&j, "t", m->c0.t);
	json_f64_exact(&j, "p", m->c0.p);
	json_object_end(&j);
	json_array_begin(&j, "terms");
	for (i = 0; i < m->nterms && i < EMODEL_TERMS_MAX; i++)
		save_term(&j, &m->terms[i], false);
	json_array_end(&j);
	json_array_begin(&j, "dropped");
	for (i = 0; i < m->ndropped && i < EMODEL_TERMS_MAX; i++)
		save_term(&j, &m->dropped[i], true);
	json_array_end(&j);
	json_object_begin(&j, "fit");
	json_f64_exact(&j, "r2", m->fit.r2);
	json_f64_exact(&j, "adj_r2", m->fit.adj_r2);
	json_f64_exact(&j, "f", m->fit.f);
	json_f64_exact(&j, "f_p", m->fit.f_p);
	json_f64_exact(&j, "rmse", m->fit.rmse);
	json_u64(&j, "n", m->fit.n);
	json_f64_exact(&j, "alpha", m->fit.alpha);
	json_object_end(&j);
	json_object_begin(&j, "cv");
	json_u64(&j, "folds", m->cv.folds);
	json_f64_exact(&j, "mean_abs_pct", m->cv.mean_abs_pct);
	json_f64_exact(&j, "max_abs_pct", m->cv.max_abs_pct);
	json_object_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

static int write_doc(FILE *f, void *m)
{
	save_doc(f, m);
	return 0;
}

int emodel_save(const struct emodel *m, const char *path, char *err, size_t errlen)
{
	int r = outfile_replace(path, write_doc, (void *)m);

	if (r)
		snprintf(err, errlen, "cannot write energy model '%.200s': %s", path, strerror(-r));
	return r;
}

/* --- applying --- */

/* Whether a and b are names of one event ("cs", "context-switches"). */
static bool same_event(const char *a, const char *b)
{
	struct ctrname ca, cb;

	if (!strcmp(a, b))
		return true;
	return !ctrname_lookup(a, &ca) && !ctrname_lookup(b, &cb) && ca.type == cb.type && ca.config == cb.config;
}

/* Appends ", s" (or s first) to buf[size] at *len, as far as it fits. */
static void list_add(char *buf, size_t size, size_t *len, const char *s)
{
	int n;

	if (*len >= size)
		return;
	n = snprintf(buf + *len, size - *len, "%s%s", *len ? ", " : "", s);
	if (n > 0)
		*len += (size_t)n;
}

int emodel_bind(const struct emodel *m, const char (*names)[EMODEL_NAME_MAX], uint32_t n, uint32_t *map, char *err,
                size_t errlen)
{
	char need[1024], have[1024];
	size_t nlen = 0, hlen = 0;
	uint32_t t, i;

	need[0] = have[0] = '\0';
	for (t = 0; t < m->nterms; t++) {
		for (i = 0; i < n && !same_event(m->terms[t].name, names[i]); i++)
			;
		map[t] = i;
		if (i == n)
			list_add(need, sizeof(need), &nlen, m->terms[t].name);
	}
	if (!nlen)
		return 0;
	for (i = 0; i < n; i++)
		list_add(have, sizeof(have), &hlen, names[i]);
	snprintf(err, errlen, "the model needs %s; the trace has %s", need, n ? have : "no counters");
	return -ENOENT;
}

double emodel_energy(const struct emodel *m, const uint32_t *map, const uint64_t *v, uint64_t span_ns, double share)
{
	double joules = m->c0.coef * ((double)span_ns / 1e9) * share;
	uint32_t t;

	for (t = 0; t < m->nterms; t++)
		joules += m->terms[t].coef * (double)v[map[t]];
	return joules;
}

double emodel_power(const struct emodel *m, const uint32_t *map, const uint64_t *v, uint64_t span_ns)
{
	double seconds = (double)span_ns / 1e9, watts = m->c0.coef;
	uint32_t t;

	if (!span_ns)
		return NAN;
	for (t = 0; t < m->nterms; t++)
		watts += m->terms[t].coef * ((double)v[map[t]] / seconds);
	return watts;
}

/* --- the machine --- */

/* src into dst[size], cut to fit (uname's and cpuinfo's may be longer than ours). */
static void copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The value of "key<spaces/tabs>: value" when line holds key, else NULL;
 * the trailing newline is cut. */
static const char *cpuinfo_value(char *line, const char *key)
{
	size_t n = strlen(key);
	char *p, *end;

	if (strncmp(line, key, n) || (line[n] != ' ' && line[n] != '\t' && line[n] != ':'))
		return NULL;
	p = strchr(line + n, ':');
	if (!p)
		return NULL;
	p++;
	while (*p == ' ' || *p == '\t')
		p++;
	end = p + strlen(p);
	while (end > p && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return p;
}

/* The CPU's name from /proc/cpuinfo: x86's "model name", else what other
 * architectures give ("Hardware", "cpu model", "uarch", "Processor"), else
 * Arm's implementer and part numbers. */
static void describe_cpu(char *cpu, size_t size)
{
	static const char *const keys[] = { "model name", "Hardware", "cpu model", "uarch", "Processor" };
	char found[sizeof(keys) / sizeof(keys[0])][128], impl[32] = "", part[32] = "", line[512];
	const char *v;
	unsigned lines = 0, k;
	FILE *f = fopen("/proc/cpuinfo", "re");

	memset(found, 0, sizeof(found));
	cpu[0] = '\0';
	if (!f)
		return;
	while (lines++ < CPUINFO_LINES_MAX && fgets(line, sizeof(line), f)) {
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!found[k][0] && (v = cpuinfo_value(line, keys[k])))
				copy_cut(found[k], sizeof(found[k]), v);
		if (!impl[0] && (v = cpuinfo_value(line, "CPU implementer")))
			copy_cut(impl, sizeof(impl), v);
		if (!part[0] && (v = cpuinfo_value(line, "CPU part")))
			copy_cut(part, sizeof(part), v);
	}
	fclose(f);
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (found[k][0]) {
			copy_cut(cpu, size, found[k]);
			return;
		}
	if (impl[0] || part[0])
		snprintf(cpu, size, "CPU implementer %s part %s", impl[0] ? impl : "?", part[0] ? part : "?");
}

void emodel_describe_machine(struct emodel *m)
{
	struct utsname u;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(&m->machine, 0, sizeof(m->machine));
	if (!uname(&u)) {
		copy_cut(m->machine.arch, sizeof(m->machine.arch), u.machine);
		copy_cut(m->machine.kernel, sizeof(m->machine.kernel), u.release);
		copy_cut(m->machine.host, sizeof(m->machine.host), u.nodename);
	}
	describe_cpu(m->machine.cpu, sizeof(m->machine.cpu));
	m->machine.cpus = cpus > 0 && (unsigned long long)cpus <= UINT32_MAX ? (uint32_t)cpus : 1;
}
