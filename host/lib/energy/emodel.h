/* The energy model (paper 003, section 5): a machine's power as a linear
 * function of event rates,
 *
 *   watts = c0 + sum_i coef_i * (count_i / seconds),
 *
 * so the energy of any span with counts count_i is
 *
 *   joules = c0 * seconds * share + sum_i coef_i * count_i,
 *
 * where share is 1 for the whole machine and, for one thread or one CPU,
 * 1 / cpus: the constant is divided equally among the CPUs, as the paper
 * does (the counts already belong to the thread or CPU).  Trained by
 * `energy train` (emodel_fit, with GSL), kept as versioned JSON, applied
 * by `report --energy`, `energy check` and `tune --objective energy`. */
#ifndef LP_ENERGY_EMODEL_H
#define LP_ENERGY_EMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMODEL_FORMAT "layerprof-energy-model"
#define EMODEL_VERSION 1u
/* Events a model may be fitted from (candidates) or keep (terms). */
#define EMODEL_TERMS_MAX 64u
#define EMODEL_NAME_MAX 64

/* One coefficient with what the regression said of it. */
struct emodel_term {
	char name[EMODEL_NAME_MAX]; /* a perf event name ("instructions"); "const" for c0 */
	double coef;                /* W per (event/s), that is J per event; W for the constant */
	double se;                  /* its standard error */
	double t, p;                /* t statistic, two-sided p-value */
	/* for a dropped candidate: why ("insignificant (p=0.41)", "constant
	 * in the training data", "collinear with instructions") */
	char why[96];
};

struct emodel {
	uint32_t version;
	char source[96];  /* the power source it was trained against */
	char created[32]; /* ISO 8601, UTC */
	struct {
		char arch[32];    /* uname machine */
		char cpu[128];    /* /proc/cpuinfo's model name (or Hardware/CPU part) */
		char kernel[128]; /* uname release */
		char host[64];    /* uname nodename */
		uint32_t cpus;    /* online CPUs: the constant's divisor per thread */
	} machine;
	struct emodel_term c0; /* the constant (name "const") */
	struct emodel_term terms[EMODEL_TERMS_MAX];
	uint32_t nterms;
	struct emodel_term dropped[EMODEL_TERMS_MAX]; /* candidates eliminated, in elimination order */
	uint32_t ndropped;
	struct {
		double r2, adj_r2;
		double f, f_p; /* the model's F test (adequacy) and its p-value */
		double rmse;   /* W */
		uint32_t n;    /* observations */
		double alpha;  /* significance level of the elimination */
	} fit;
	struct {
		uint32_t folds;      /* k of the k-fold cross-validation; 0: not done */
		double mean_abs_pct; /* mean |predicted - measured| / measured over held-out programs, % */
		double max_abs_pct;  /* the worst held-out program, % */
	} cv;
	struct {
		uint32_t programs; /* random programs run */
		double seconds;    /* each one's length */
		uint64_t seed;
		uint32_t segments; /* basis segments the generator drew from */
	} training;
};

/* Empties m for a new model: version EMODEL_VERSION, created now (UTC),
 * c0 named "const", no terms, the statistics NaN (unknown). */
void emodel_init(struct emodel *m);

/* Reads a model file.  0, or -errno with err naming the file and what is
 * wrong ("'m.json' is not a layerprof energy model", "... version 2 is
 * newer than this layerprof reads", "... term 'x' has no coefficient"). */
int emodel_load(struct emodel *m, const char *path, char *err, size_t errlen);
/* Writes it as JSON (replacing path: written to a new file beside it,
 * then renamed).  0 or -errno with err. */
int emodel_save(const struct emodel *m, const char *path, char *err, size_t errlen);

/* Which of names[0..n) each term of m is: map[t] = the index of term t's
 * event in names (the same name, else another name of the same event:
 * "cs" for "context-switches").  Returns 0, or -ENOENT with err listing
 * the events the model needs that names lack ("the model needs
 * instructions, cache-misses; the trace has task-clock"). */
int emodel_bind(const struct emodel *m, const char (*names)[EMODEL_NAME_MAX], uint32_t n, uint32_t *map, char *err,
                size_t errlen);
/* Energy (J) of a span of span_ns with counts v (indexed through map) and
 * share of the constant (1, or 1 / machine.cpus for one thread or CPU). */
double emodel_energy(const struct emodel *m, const uint32_t *map, const uint64_t *v, uint64_t span_ns, double share);
/* Mean power (W) of the same span: c0 + sum coef * (count / seconds), the
 * model's own formula; NaN when span_ns is 0. */
double emodel_power(const struct emodel *m, const uint32_t *map, const uint64_t *v, uint64_t span_ns);

/* Fills m's machine description from this machine (uname, /proc/cpuinfo,
 * the online CPUs). */
void emodel_describe_machine(struct emodel *m);

/* The training data of emodel_fit: n observations of k candidate rates. */
struct emodel_data {
	uint32_t n, k;
	const double *x;                      /* n x k, row-major: events per second */
	const double *y;                      /* n: mean watts */
	const char (*names)[EMODEL_NAME_MAX]; /* k */
};

/* Fits the model (only with GSL: LP_HAVE_GSL): first drops candidates
 * constant in the data or collinear with earlier ones, then ordinary least
 * squares with backward elimination (the least significant term goes while
 * its p-value is above alpha), then folds-fold cross-validation of the
 * whole procedure (folds 0: none).  Fills c0, terms, dropped, fit, cv; the
 * rest of m is left as it was.  0, or -EINVAL with err (fewer observations
 * than terms + 2, no variation in y), -ENOMEM. */
int emodel_fit(struct emodel *m, const struct emodel_data *d, double alpha, uint32_t folds, char *err, size_t errlen);

#endif
