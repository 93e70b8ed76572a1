/* OS and C-library call timing (paper 004): a platform characterised once
 * by layerprof-oscal's suite (oscal/), each call summarised and modelled,
 * two platforms compared, a program's run time estimated from its trace.
 *
 * The data flow: layerprof-oscal prints its measurements as lines (the
 * suite protocol, docs/oscal.md); oscal_cal_feed takes them one by one
 * into a struct oscal_cal; oscal_cal_analyse computes each entry's
 * statistics, clusters and model; oscal_cal_write keeps the whole as a
 * versioned JSON calibration file (raw samples included, so that a file
 * can be analysed again) and oscal_cal_read takes it back.
 *
 * An entry is one call in one operating condition ("kill" to itself, to
 * another task, to no task: three entries of call "kill", conditions
 * "self", "other", "none"): the paper's one model per value of an
 * enumerated parameter.  Its numeric parameter (bytes, waiters, ...), when
 * it has one, is the x of its series; an entry without one has x = 0.
 *
 * The model (the paper's section 4.2, oscal_fit): all points one cluster;
 * while a cluster's spread (the sd of its residuals from its best fit,
 * relative to its mean time) is above the threshold, it is split (along x
 * at the break that lowers the residuals most when the entry has a
 * parameter; by the largest gap of times otherwise) up to
 * OSCAL_CLUSTERS_MAX clusters; each cluster is then fitted constant and
 * linear by least squares and the one with the smaller mean absolute
 * error kept (linear only when it lowers that error by more than
 * OSCAL_LINEAR_GAIN).  One cluster along x: constant or linear; several
 * along x: piecewise-linear.  Clusters by time (no parameter): the model
 * is the constant of all points, the clusters are reported (a hidden
 * parameter, the paper's "state dependent" calls) and the entry is
 * flagged spread_high.
 *
 * Not thread-safe; every function that allocates says how it fails. */
#ifndef LP_OSCAL_H
#define LP_OSCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OSCAL_FORMAT "layerprof-oscal-cal"
#define OSCAL_VERSION 1u
#define OSCAL_PROTOCOL 1u      /* the suite protocol's version (first line) */
#define OSCAL_NAME_MAX 64      /* entry, call, condition, group, parameter names */
#define OSCAL_TEXT_MAX 160     /* descriptions and reasons */
#define OSCAL_BINS 30u         /* histogram bins (the paper's 30) */
#define OSCAL_CLUSTERS_MAX 5u  /* clusters of one entry */
#define OSCAL_PIECES_MAX 5u    /* pieces of a piecewise-linear model */
#define OSCAL_THRESHOLD 0.10   /* default spread threshold (sd / mean) */
#define OSCAL_LINEAR_GAIN 0.05 /* linear kept over constant: mean abs error lower by 5 % */
#define OSCAL_ENTRIES_MAX 1024u
#define OSCAL_SAMPLES_MAX (1u << 22) /* samples of all entries together */

enum oscal_status {
	OSCAL_MEASURED = 0,
	OSCAL_SKIPPED, /* not measured: not permitted or not available here (reason) */
	OSCAL_FAILED,  /* the call failed while measured (reason) */
	OSCAL_PENDING, /* announced, not finished (an interrupted run) */
};

enum oscal_form {
	OSCAL_NONE = 0, /* no model (not measured, or too few points) */
	OSCAL_CONSTANT,
	OSCAL_LINEAR,
	OSCAL_PIECEWISE,
};

struct oscal_stats {
	uint64_t n;
	double mean, sd, min, max;
	double p50, p90, p99;    /* nearest rank */
	uint64_t outliers;       /* samples past the outlier rule (oscal_outlier_limit), left out of the model */
	double hist_lo, hist_hi; /* the histogram spans [min, max] in OSCAL_BINS equal bins */
	uint64_t hist[OSCAL_BINS];
};

/* One parameter value's repetitions (ns, after the timer's overhead is
 * subtracted: never below 0). */
struct oscal_series {
	double x;
	double *ns;
	uint32_t n;
	struct oscal_stats st;
};

/* A piece of a model: time = m * x + q for x in [x0, x1] (ns; constant:
 * m = 0).  The first piece also holds below x0, the last above x1. */
struct oscal_piece {
	double x0, x1, m, q;
};

struct oscal_model {
	enum oscal_form form;
	struct oscal_piece pieces[OSCAL_PIECES_MAX];
	uint32_t npieces;
	double r2;          /* over the points the model was fitted on (NaN for a constant's) */
	double mean_abs_ns; /* mean |model - point| over those points */
	double mean_rel;    /* mean |model - point| / point */
	uint64_t points;    /* points fitted (the outliers left out) */
};

/* A cluster of the fitting procedure: its points' x range and times. */
struct oscal_cluster {
	double x0, x1; /* along x (both 0 for clusters by time) */
	double lo, hi; /* times, ns */
	uint64_t n;
	double mean, sd;
};

struct oscal_entry {
	char name[OSCAL_NAME_MAX];  /* unique: "read", "kill-self", "sem-post-waiters" */
	char call[OSCAL_NAME_MAX];  /* the function or system call: "read", "kill", "sem_post" */
	char cond[OSCAL_NAME_MAX];  /* the enumerated condition ("self"), "" none */
	char group[OSCAL_NAME_MAX]; /* file, memory, process, sync, ipc, signal, time */
	char param[OSCAL_NAME_MAX]; /* the numeric parameter ("bytes", "waiters"), "" none */
	char unit[OSCAL_NAME_MAX];  /* its unit ("B", "tasks"), "" none */
	char desc[OSCAL_TEXT_MAX];
	enum oscal_status status;
	char reason[OSCAL_TEXT_MAX]; /* skipped or failed: why */
	struct oscal_series *series; /* by x ascending */
	uint32_t nseries;
	uint32_t warmup, reps; /* the suite's warm-up runs (not kept) and repetitions per x */
	/* oscal_cal_analyse's: */
	struct oscal_stats st; /* all samples */
	bool spread_high;      /* sd / mean above the threshold over all samples of one x */
	struct oscal_cluster clusters[OSCAL_CLUSTERS_MAX];
	uint32_t nclusters;
	struct oscal_model model;
};

struct oscal_cal {
	uint32_t version;
	char created[32]; /* ISO 8601, UTC */
	char source[128]; /* "local", "agent HOST:PORT", "qemu-aarch64 ..." (the run's) */
	bool complete;    /* every entry the run asked for ended (measured, skipped or failed) */
	struct {
		char arch[32], kernel[128], libc[64], host[64], cpu[128];
		uint32_t cpus;
	} machine;
	struct {
		char name[32];        /* "monotonic", "monotonic_raw", "cntvct", ... */
		double resolution_ns; /* clock_getres */
		double overhead_ns;   /* one timer read pair with nothing between, median: subtracted */
	} clock;
	struct {
		bool quick;
		uint32_t reps, warmup; /* defaults of the run (an entry may say otherwise) */
		double threshold;      /* the fitting's spread threshold */
		char calls[256];       /* the --calls patterns, "" all */
	} settings;
	struct oscal_entry *entries;
	uint32_t nentries;
	/* the suite protocol's state while feeding */
	bool header_seen;
	uint64_t nsamples;
};

/* ------------------------------------------------------------ statistics and models (stats.c, model.c) */

/* The statistics of v[0..n) (n >= 1; v is not changed).  Returns 0 or
 * -ENOMEM. */
int oscal_stats_compute(const double *v, size_t n, struct oscal_stats *st);
/* The outlier rule: a sample above median + 10 x MAD (MAD: the median
 * absolute deviation; at least 5 % of the median) is an outlier, left out
 * of the model but kept in the statistics.  The limit for v[0..n). */
double oscal_outlier_limit(const double *v, size_t n);

/* A point of a series for the fit: x and one time. */
struct oscal_point {
	double x, ns;
};

/* The paper's procedure over p[0..n) (any order; the caller has left
 * the outliers out): clusters into c (at most OSCAL_CLUSTERS_MAX, *nc),
 * the model into m.  threshold: the spread a cluster may keep (sd of the
 * residuals / mean time, the mean taken as floor_ns when below it: the
 * clock's noise, 0 none).  has_param: whether x is a parameter (else all
 * x are 0 and clusters are by time).  Returns 0, -EINVAL (n == 0) or
 * -ENOMEM. */
int oscal_fit(const struct oscal_point *p, size_t n, bool has_param, double threshold, double floor_ns,
              struct oscal_cluster *c, uint32_t *nc, struct oscal_model *m);
/* The floor of oscal_cal_analyse's fits: OSCAL_FLOOR_PAIRS read pairs of
 * the calibration's clock (a time under it is mostly the clock's own
 * granularity and jitter). */
#define OSCAL_FLOOR_PAIRS 5.0
/* The model's time at x (ns); NaN for OSCAL_NONE. */
double oscal_model_eval(const struct oscal_model *m, double x);
/* "constant", "linear", "piecewise", "none". */
const char *oscal_form_name(enum oscal_form f);
/* "measured", "skipped", "failed", "pending" (the file's words). */
const char *oscal_status_name(enum oscal_status s);

/* ------------------------------------------------------------ a calibration (cal.c, calfile.c) */

/* An empty calibration: version OSCAL_VERSION, created now, threshold
 * OSCAL_THRESHOLD. */
void oscal_cal_init(struct oscal_cal *cal);
void oscal_cal_release(struct oscal_cal *cal);
/* One line of the suite protocol (without its newline).  Returns 0, or
 * -EINVAL with err saying what is wrong (an unknown record, a sample of an
 * unknown entry, a number that is not one, a first line that is not the
 * protocol's), or -E2BIG past OSCAL_ENTRIES_MAX / OSCAL_SAMPLES_MAX, or
 * -ENOMEM. */
int oscal_cal_feed(struct oscal_cal *cal, const char *line, char *err, size_t errlen);
/* Entry by name, or by call and condition (cond "" or NULL: the entry of
 * that call without a condition, else its first); NULL when none. */
struct oscal_entry *oscal_cal_find(const struct oscal_cal *cal, const char *name);
const struct oscal_entry *oscal_cal_find_call(const struct oscal_cal *cal, const char *call, const char *cond);
/* Each measured entry's statistics (per series and all), outliers,
 * spread flag, clusters and model, with cal->settings.threshold.  Entries
 * still pending become failed ("interrupted").  Returns 0 or -ENOMEM. */
int oscal_cal_analyse(struct oscal_cal *cal);
/* Writes cal as JSON (docs/oscal.md).  Returns 0 or -EIO. */
int oscal_cal_write(FILE *f, const struct oscal_cal *cal);
/* The members a calibration file and the reports share, written into an
 * object that j has open: the header's (created, source, complete,
 * machine, clock, settings), and one entry as an array element (its raw
 * samples, each series' "ns", only with samples). */
struct json;
void oscal_json_head(struct json *j, const struct oscal_cal *cal);
void oscal_json_entry(struct json *j, const struct oscal_entry *e, bool samples);
/* Reads a calibration file (the raw samples and everything analysed).
 * Returns 0, or -errno with err naming the file and what is wrong ("'x'
 * is not a layerprof calibration", "... version 2 is newer than this
 * layerprof reads (1)", "... entry 3: no name"). */
int oscal_cal_read(const char *path, struct oscal_cal *cal, char *err, size_t errlen);

/* ------------------------------------------------------------ comparing two platforms (compare.c) */

/* The ratio K of one entry measured in both, b over a (the paper's Table
 * 5): at each x both measured, b's model over a's model, and their mean;
 * kmin and kmax over those x. */
struct oscal_k {
	const struct oscal_entry *a, *b;
	double k, kmin, kmax;
	uint32_t points;
};

struct oscal_compare {
	struct oscal_k *rows; /* in a's order; entries with a model in both */
	uint32_t nrows;
	uint32_t only_a, only_b, unmodelled; /* entries left out, and why */
	/* over the rows' k: mean, min, max, sd, sd / mean */
	double k, kmin, kmax, sd, sd_rel;
	/* the same over the entries of each group ("file", ...) */
	struct {
		char group[OSCAL_NAME_MAX];
		uint32_t n;
		double k, kmin, kmax, sd;
	} groups[16];
	uint32_t ngroups;
};

/* Returns 0 or -ENOMEM; release with oscal_compare_release. */
int oscal_compare(const struct oscal_cal *a, const struct oscal_cal *b, struct oscal_compare *out);
void oscal_compare_release(struct oscal_compare *c);

#endif
