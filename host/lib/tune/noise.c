/* The measurements of `layerprof tune` and the rule that decides with
 * them: each configuration run --repeat times, its median; a candidate
 * better only by more than the noise (the larger of --noise and the
 * baseline's own spread); more repeats, up to --max-repeat, while a
 * difference is within twice the noise. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/tune/tune.h"

void tune_init(struct tune *t, struct tune_space *sp, const struct tune_opts *o)
{
	memset(t, 0, sizeof(*t));
	t->sp = sp;
	t->o = *o;
	t->best = t->baseline = UINT32_MAX;
	t->slow = -1;
	t->noise = o->noise_pct / 100.0;
}

void tune_release(struct tune *t)
{
	free(t->entries);
	t->entries = NULL;
	t->n = t->cap = 0;
}

uint32_t tune_find(const struct tune *t, const struct tune_config *c)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (!memcmp(&t->entries[i].c, c, sizeof(*c)))
			return i;
	return UINT32_MAX;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, uint32_t n)
{
	double s[TUNE_REPEAT_MAX];

	if (!n)
		return NAN;
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), dbl_cmp);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

/* The spread of an entry's runs: twice their median absolute deviation
 * over their median.  For two runs that is (max - min) / median; of three,
 * one run far off the other two (a start delayed by another process) does
 * not count, so one outlier cannot make the noise, and with it every
 * decision of the search, as wide as itself. */
static void entry_summarise(struct tune_entry *e)
{
	double dev[TUNE_REPEAT_MAX];

	e->med_seconds = median(e->seconds, e->n);
	e->med_joules = median(e->joules, e->n);
	e->med_obj = median(e->obj, e->n);
	for (uint32_t i = 0; i < e->n; i++)
		dev[i] = fabs(e->obj[i] - e->med_obj);
	e->spread = e->n && e->med_obj > 0 ? 2.0 * median(dev, e->n) / e->med_obj : 0.0;
}

/* One more run of entry i. */
static int entry_run(struct tune *t, uint32_t i, char *err, size_t errlen)
{
	struct tune_entry *e = &t->entries[i];
	char *argvs_store[TUNE_PROGS_MAX] = { NULL };
	char **argvs[TUNE_PROGS_MAX];
	struct tune_sample s;
	char cfg[512];
	int r = 0;

	if (e->n == TUNE_REPEAT_MAX || e->failed)
		return 0;
	for (uint32_t k = 0; k < t->sp->nprogs; k++) {
		argvs[k] = tune_space_argv(t->sp, &e->c, k);
		if (!argvs[k]) {
			r = error_set(err, errlen, -errno, "%s",
			              errno == E2BIG ? "a substituted word is too long" : "out of memory");
			goto out;
		}
		argvs_store[k] = (char *)argvs[k];
	}
	memset(&s, 0, sizeof(s));
	s.joules = NAN;
	r = t->o.measure(t->o.measure_ctx, (char *const *const *)argvs, t->sp->nprogs, &s, err, errlen);
	if (r)
		goto out;
	t->runs++;
	if (s.failed) {
		e->failed = true;
		e->timed_out = s.timed_out;
		memcpy(e->why, s.why, sizeof(e->why));
		e->why[sizeof(e->why) - 1] = '\0';
		/* the baseline's failure ends the search: tune_run says it */
		if (t->baseline != UINT32_MAX)
			error_warn(t->o.warn, "%s failed: %s", tune_space_format(t->sp, &e->c, cfg, sizeof(cfg)),
			           e->why);
		goto out;
	}
	e->seconds[e->n] = s.seconds;
	e->joules[e->n] = s.joules;
	e->obj[e->n] = t->o.objective == TUNE_TIME     ? s.seconds
	               : t->o.objective == TUNE_ENERGY ? s.joules
	                                               : s.joules * s.seconds;
	e->n++;
	entry_summarise(e);
out:
	for (uint32_t k = 0; k < t->sp->nprogs; k++)
		free(argvs_store[k]);
	return r;
}

int tune_eval(struct tune *t, const struct tune_config *c, char *err, size_t errlen)
{
	uint32_t i = tune_find(t, c), budget = t->o.budget ? t->o.budget : TUNE_CONFIGS_MAX;
	int r;

	if (i != UINT32_MAX)
		return (int)i;
	if (t->n >= budget || t->n >= TUNE_CONFIGS_MAX) {
		t->budget_hit = true;
		return -ENOSPC;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 32;
		void *ne = realloc(t->entries, cap * sizeof(*t->entries));

		if (!ne)
			return error_set(err, errlen, -ENOMEM, "out of memory");
		t->entries = ne;
		t->cap = cap;
	}
	i = t->n++;
	memset(&t->entries[i], 0, sizeof(t->entries[i]));
	t->entries[i].c = *c;
	for (uint32_t k = 0; k < t->o.repeat && !t->entries[i].failed; k++) {
		r = entry_run(t, i, err, errlen);
		if (r)
			return r;
	}
	if (t->o.progress)
		t->o.progress(t->o.progress_ctx, t->sp, &t->entries[i]);
	return (int)i;
}

int tune_improves(struct tune *t, uint32_t cand, uint32_t inc, char *err, size_t errlen)
{
	for (;;) {
		const struct tune_entry *c = &t->entries[cand], *b = &t->entries[inc];
		double d;
		uint32_t more;
		int r;

		if (c->failed || cand == inc)
			return 0;
		if (b->failed)
			return 1;
		/* relative to the incumbent; an objective of 0 (a model with
		 * nothing but zeros) compares as is */
		d = b->med_obj > 0 ? (b->med_obj - c->med_obj) / b->med_obj : b->med_obj - c->med_obj;
		if (fabs(d) > 2 * t->noise || (c->n >= t->o.max_repeat && b->n >= t->o.max_repeat))
			return d > t->noise;
		more = c->n <= b->n && c->n < t->o.max_repeat ? cand : inc;
		r = entry_run(t, more, err, errlen);
		if (r)
			return r;
	}
}

uint32_t tune_pick(const struct tune *t, const uint32_t *idx, uint32_t n)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t i = 0; i < n; i++)
		if (!t->entries[idx[i]].failed &&
		    (best == UINT32_MAX || t->entries[idx[i]].med_obj < t->entries[best].med_obj))
			best = idx[i];
	if (best == UINT32_MAX)
		return best;
	for (uint32_t i = 0; i < n; i++)
		if (!t->entries[idx[i]].failed &&
		    t->entries[idx[i]].med_obj <= t->entries[best].med_obj * (1.0 + t->noise))
			return idx[i];
	return best;
}

static const char *const objective_names[] = { "time", "energy", "edp" };
static const char *const strategy_names[] = { "grid", "greedy", "pattern", "corun", "producer-consumer" };

const char *tune_objective_name(enum tune_objective o)
{
	return (unsigned)o < 3 ? objective_names[o] : "?";
}

const char *tune_strategy_name(enum tune_strategy s)
{
	return (unsigned)s < 5 ? strategy_names[s] : "?";
}

int tune_objective_parse(const char *s, enum tune_objective *o)
{
	for (unsigned i = 0; i < 3; i++)
		if (!strcmp(s, objective_names[i])) {
			*o = (enum tune_objective)i;
			return 0;
		}
	return -EINVAL;
}

int tune_strategy_parse(const char *s, enum tune_strategy *st)
{
	for (unsigned i = 0; i < 5; i++)
		if (!strcmp(s, strategy_names[i])) {
			*st = (enum tune_strategy)i;
			return 0;
		}
	return -EINVAL;
}
