/* Unit test of the calibration library (host/lib/oscal): statistics of
 * known vectors, models recovered from synthetic series of known forms
 * (seeded noise), the suite protocol's records and errors, the
 * calibration file's round trip and its refusal of malformed files, and
 * the comparison's K. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/lib/oscal/oscal.h"
#include "tests/unit/check.h"

static char dir[64];

static const char *file_in(const char *name)
{
	static char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void write_file(const char *name, const char *text)
{
	FILE *f = fopen(file_in(name), "w");

	if (!CHECK(f))
		return;
	fputs(text, f);
	fclose(f);
}

/* The whole of a file (malloc'd), or NULL. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	*len = (size_t)n;
	fclose(f);
	return buf;
}

static int same_files(const char *a, const char *b);

/* Feeds lines separated by '\n'; returns the first error (0 if none). */
static int feed_text(struct oscal_cal *cal, const char *text, char *err, size_t errlen)
{
	char line[4096];
	const char *p = text;
	int r;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		memcpy(line, p, n);
		line[n] = '\0';
		r = oscal_cal_feed(cal, line, err, errlen);
		if (r)
			return r;
		p += n + (nl ? 1 : 0);
	}
	return 0;
}

static const char suite_text[] =
    "layerprof-oscal 1\n"
    "machine arch=x86_64 cpus=2 kernel=6.1.0 libc=glibc-2.36 host=box cpu=Some CPU @ 2GHz\n"
    "clock name=monotonic resolution_ns=1 overhead_ns=20\n"
    "settings quick=1 reps=4 warmup=3 calls=-\n"
    "entry read call=read cond=file group=file param=bytes unit=B reps=4 warmup=3 "
    "desc=read(2) of a regular file\n"
    "sample read 1 320 322 321 323\n"
    "sample read 1024 420 422 421 423\n"
    "sample read 4096 720 722 721 723\n"
    "end read\n"
    "entry kill-none call=kill cond=none group=signal param=- unit=- reps=4 warmup=3 desc=-\n"
    "sample kill-none 0 1020 1021 1022 1023\n"
    "end kill-none\n"
    "entry mq-send call=mq_send cond=- group=ipc param=bytes unit=B reps=4 warmup=3 desc=x\n"
    "skip mq-send reason=mq_open: Function not implemented (no mqueue)\n"
    "done measured=2 skipped=1 failed=0\n";

static void test_smoke(void)
{
	struct oscal_cal cal, back;
	char err[256] = "";
	const struct oscal_entry *e;
	char *a, *b;
	size_t la, lb;
	FILE *f;

	oscal_cal_init(&cal);
	CHECK_EQ_U64(feed_text(&cal, suite_text, err, sizeof(err)), 0);
	if (err[0])
		printf("  %s\n", err);
	CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);
	e = oscal_cal_find(&cal, "read");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->model.form, OSCAL_LINEAR);
		CHECK(e->model.pieces[0].m > 0);
	}
	f = fopen(file_in("a.cal"), "w");
	CHECK_EQ_U64(oscal_cal_write(f, &cal), 0);
	fclose(f);
	CHECK_EQ_U64(oscal_cal_read(file_in("a.cal"), &back, err, sizeof(err)), 0);
	f = fopen(file_in("b.cal"), "w");
	CHECK_EQ_U64(oscal_cal_write(f, &back), 0);
	fclose(f);
	a = slurp(file_in("a.cal"), &la);
	b = slurp(file_in("b.cal"), &lb);
	CHECK(a && b && la == lb && !memcmp(a, b, la));
	free(a);
	free(b);
	oscal_cal_release(&back);
	oscal_cal_release(&cal);
}

/* ------------------------------------------------------------ helpers */

/* splitmix64: the test's own seeded generator (rand() differs by libc). */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static double rng_unit(void)
{
	return (double)(rng_next() >> 11) / (double)(1ull << 52) - 1.0;
}

/* A time with relative noise of at most rel, rounded to whole ns as the
 * suite prints them. */
static double noisy(double t, double rel)
{
	return floor(t * (1 + rel * rng_unit()) + 0.5);
}

static int near(double got, double want, double rel)
{
	int ok = fabs(got - want) <= rel * fabs(want);

	if (!ok)
		printf("  got %.9g, want %.9g within %g %%\n", got, want, rel * 100);
	return ok;
}

/* Bitwise equality, so that NaN equals NaN. */
static int same_f64(double a, double b)
{
	return !memcmp(&a, &b, sizeof(a));
}

#define CHECK_F64(a, b)                                                                \
	do {                                                                           \
		if (!CHECK(same_f64((a), (b))))                                        \
			printf("  got %.17g, want %.17g\n", (double)(a), (double)(b)); \
	} while (0)

/* One line fed; the result code. */
static int feed1(struct oscal_cal *cal, const char *line, char *err, size_t errlen)
{
	err[0] = '\0';
	return oscal_cal_feed(cal, line, err, errlen);
}

/* Feeds the header records of a suite run with overhead ns. */
static void feed_header(struct oscal_cal *cal, double overhead)
{
	char err[256], line[256];

	CHECK_EQ_U64(feed1(cal, "layerprof-oscal 1", err, sizeof(err)), 0);
	CHECK_EQ_U64(
	    feed1(cal, "machine arch=x86_64 cpus=2 kernel=6.1 libc=glibc-2.36 host=h cpu=A CPU", err, sizeof(err)), 0);
	snprintf(line, sizeof(line), "clock name=monotonic resolution_ns=1 overhead_ns=%g", overhead);
	CHECK_EQ_U64(feed1(cal, line, err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(cal, "settings quick=0 reps=50 warmup=10 calls=-", err, sizeof(err)), 0);
}

/* Feeds one entry: its x values xs[0..nx) with reps times each from
 * f(x) times scale with noise rel (the generator seeded with seed). */
static void feed_entry_fn(struct oscal_cal *cal, const char *name, const char *call, const char *cond,
                          const char *group, const char *param, const double *xs, size_t nx, uint32_t reps,
                          double (*f)(double), double scale, double rel, uint64_t seed)
{
	char err[256], *line = malloc(64 + reps * 24u);
	size_t i, len;
	uint32_t k;

	rng_state = seed;
	snprintf(line, 512, "entry %s call=%s cond=%s group=%s param=%s unit=- reps=%u warmup=1 desc=-", name, call,
	         cond, group, param, reps);
	CHECK_EQ_U64(feed1(cal, line, err, sizeof(err)), 0);
	for (i = 0; i < nx; i++) {
		len = (size_t)sprintf(line, "sample %s %.17g", name, xs[i]);
		for (k = 0; k < reps; k++)
			len += (size_t)sprintf(line + len, " %.17g", scale * noisy(f(xs[i]), rel));
		if (!CHECK_EQ_U64(feed1(cal, line, err, sizeof(err)), 0))
			printf("  %s\n", err);
	}
	snprintf(line, 512, "end %s", name);
	CHECK_EQ_U64(feed1(cal, line, err, sizeof(err)), 0);
	free(line);
}

/* ------------------------------------------------------------ statistics */

static void test_stats(void)
{
	double v[31], w[] = { 100, 100, 100, 100, 101, 99, 100, 5000 }, one = 42;
	struct oscal_stats st;
	uint32_t i;

	/* 30, 29, ..., 0: the histogram's bins are 1 ns wide exactly */
	for (i = 0; i < 31; i++)
		v[i] = 30 - i;
	CHECK_EQ_U64(oscal_stats_compute(v, 31, &st), 0);
	CHECK_EQ_U64(st.n, 31);
	CHECK_F64(st.mean, 15);
	CHECK_F64(st.sd, sqrt(2480.0 / 30));
	CHECK_F64(st.min, 0);
	CHECK_F64(st.max, 30);
	CHECK_F64(st.p50, 15); /* rank ceil(15.5) = 16 */
	CHECK_F64(st.p90, 27); /* rank ceil(27.9) = 28 */
	CHECK_F64(st.p99, 30); /* rank ceil(30.69) = 31 */
	CHECK_EQ_U64(st.outliers, 0);
	CHECK_F64(st.hist_lo, 0);
	CHECK_F64(st.hist_hi, 30);
	for (i = 0; i < OSCAL_BINS - 1; i++)
		CHECK_EQ_U64(st.hist[i], 1);
	CHECK_EQ_U64(st.hist[OSCAL_BINS - 1], 2); /* 29 and the maximum */
	CHECK_F64(v[0], 30);                      /* not changed */
	/* median 100, MAD 0 raised to 5 % of the median: limit 100 + 10 x 5 */
	CHECK_F64(oscal_outlier_limit(w, 8), 150);
	CHECK_EQ_U64(oscal_stats_compute(w, 8, &st), 0);
	CHECK_EQ_U64(st.outliers, 1);
	CHECK_F64(st.p50, 100);
	CHECK_F64(st.p99, 5000);
	CHECK_EQ_U64(st.hist[0], 7);
	CHECK_EQ_U64(st.hist[29], 1);
	/* MAD: |v - 15| sorted, the 16th of 31 is 8: 15 + 80 */
	CHECK_F64(oscal_outlier_limit(v, 31), 95);
	/* MAD floor of 1 ns below a median of 0 */
	w[0] = w[1] = w[2] = 0;
	CHECK_F64(oscal_outlier_limit(w, 3), 10);
	CHECK_EQ_U64(oscal_stats_compute(&one, 1, &st), 0);
	CHECK_F64(st.sd, 0);
	CHECK_F64(st.p50, 42);
	CHECK_F64(st.p99, 42);
	CHECK_EQ_U64(st.hist[0], 1);
	CHECK_EQ_U64(oscal_stats_compute(&one, 0, &st), 0);
	CHECK_EQ_U64(st.n, 0);
}

/* ------------------------------------------------------------ models */

static double f_const(double x)
{
	(void)x;
	return 1000;
}

static double f_linear(double x)
{
	return 300 + 0.05 * x;
}

/* slope 1 up to x = 1000, then a step (a switch to another method, as
 * malloc's to mmap) and slope 5 */
static double f_kink(double x)
{
	return x <= 1000 ? 200 + x : 2000 + 5 * (x - 1000);
}

static void test_models(void)
{
	static const double xs_lin[] = { 1, 16, 256, 1024, 4096, 16384, 65536 };
	double xs_kink[20], xs0[] = { 0 };
	struct oscal_point pts[4];
	struct oscal_cluster c[OSCAL_CLUSTERS_MAX];
	struct oscal_model m;
	struct oscal_cal cal;
	const struct oscal_entry *e;
	uint32_t i, nc;

	for (i = 0; i < 20; i++)
		xs_kink[i] = 100.0 * (i + 1);
	oscal_cal_init(&cal);
	feed_header(&cal, 0);
	feed_entry_fn(&cal, "getpid", "getpid", "-", "process", "-", xs0, 1, 200, f_const, 1, 0.02, 1);
	feed_entry_fn(&cal, "fstat", "fstat", "-", "file", "bytes", xs_lin, 7, 50, f_const, 1, 0.02, 2);
	feed_entry_fn(&cal, "read", "read", "file", "file", "bytes", xs_lin, 7, 50, f_linear, 1, 0.03, 3);
	feed_entry_fn(&cal, "kinked", "kinked", "-", "memory", "bytes", xs_kink, 20, 30, f_kink, 1, 0.01, 4);
	CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);

	e = oscal_cal_find(&cal, "getpid");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->model.form, OSCAL_CONSTANT);
		CHECK(near(e->model.pieces[0].q, 1000, 0.01));
		CHECK_EQ_U64(e->nclusters, 1);
		CHECK(!e->spread_high);
		CHECK(isnan(e->model.r2));
		CHECK_EQ_U64(e->model.points, 200);
		CHECK(e->model.mean_rel < 0.02);
	}
	e = oscal_cal_find(&cal, "fstat"); /* a parameter that does not matter */
	if (CHECK(e)) {
		CHECK_EQ_U64(e->model.form, OSCAL_CONSTANT);
		CHECK(near(e->model.pieces[0].q, 1000, 0.01));
		CHECK_F64(e->model.pieces[0].x0, 1);
		CHECK_F64(e->model.pieces[0].x1, 65536);
	}
	e = oscal_cal_find(&cal, "read");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->model.form, OSCAL_LINEAR);
		CHECK_EQ_U64(e->model.npieces, 1);
		CHECK(near(e->model.pieces[0].m, 0.05, 0.02));
		CHECK(near(e->model.pieces[0].q, 300, 0.02));
		CHECK(e->model.r2 > 0.99);
		CHECK_EQ_U64(e->nseries, 7);
		CHECK_EQ_U64(e->st.n, 350);
		CHECK(near(oscal_model_eval(&e->model, 2048), 300 + 0.05 * 2048, 0.02));
	}
	e = oscal_cal_find(&cal, "kinked");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->model.form, OSCAL_PIECEWISE);
		CHECK_EQ_U64(e->model.npieces, 2);
		CHECK_EQ_U64(e->nclusters, 2);
		CHECK_F64(e->model.pieces[0].x0, 100);
		CHECK_F64(e->model.pieces[0].x1, 1000); /* the break */
		CHECK_F64(e->model.pieces[1].x0, 1100);
		CHECK_F64(e->model.pieces[1].x1, 2000);
		CHECK(near(e->model.pieces[0].m, 1, 0.02));
		CHECK(near(e->model.pieces[1].m, 5, 0.02));
		CHECK_F64(e->clusters[0].x1, 1000);
		CHECK_EQ_U64(e->clusters[0].n, 300);
		CHECK_EQ_U64(e->clusters[1].n, 300);
		CHECK(e->model.r2 > 0.99);
	}
	oscal_cal_release(&cal);

	/* the paper's kill: one constant model per condition */
	oscal_cal_init(&cal);
	feed_header(&cal, 0);
	feed_entry_fn(&cal, "kill-self", "kill", "self", "signal", "-", xs0, 1, 100, f_const, 0.9, 0.01, 5);
	feed_entry_fn(&cal, "kill-other", "kill", "other", "signal", "-", xs0, 1, 100, f_const, 3, 0.01, 6);
	feed_entry_fn(&cal, "kill-none", "kill", "none", "signal", "-", xs0, 1, 100, f_const, 0.7, 0.01, 7);
	CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);
	e = oscal_cal_find_call(&cal, "kill", "self");
	if (CHECK(e)) {
		CHECK_STR(e->name, "kill-self");
		CHECK(near(oscal_model_eval(&e->model, 0), 900, 0.01));
	}
	e = oscal_cal_find_call(&cal, "kill", "other");
	if (CHECK(e)) {
		CHECK_STR(e->name, "kill-other");
		CHECK_EQ_U64(e->model.form, OSCAL_CONSTANT);
		CHECK(near(oscal_model_eval(&e->model, 12345), 3000, 0.01));
	}
	e = oscal_cal_find_call(&cal, "kill", "none");
	if (CHECK(e)) {
		CHECK_STR(e->name, "kill-none");
		CHECK(near(e->model.pieces[0].q, 700, 0.01));
	}
	e = oscal_cal_find_call(&cal, "kill", NULL); /* no entry without a condition: the first */
	CHECK(e && !strcmp(e->name, "kill-self"));
	e = oscal_cal_find_call(&cal, "kill", "");
	CHECK(e && !strcmp(e->name, "kill-self"));
	CHECK(!oscal_cal_find_call(&cal, "kill", "nobody"));
	CHECK(!oscal_cal_find_call(&cal, "raise", NULL));
	CHECK(!oscal_cal_find(&cal, "kill"));

	/* two peaks without a parameter: two clusters by time, flagged */
	{
		char err[256], line[8192];
		size_t len;

		rng_state = 8;
		CHECK_EQ_U64(
		    feed1(&cal, "entry task-create call=pthread_create group=process param=-", err, sizeof(err)), 0);
		len = (size_t)sprintf(line, "sample task-create 0");
		for (i = 0; i < 100; i++)
			len += (size_t)sprintf(line + len, " %.0f", noisy(i % 2 ? 3000 : 1000, 0.01));
		CHECK_EQ_U64(feed1(&cal, line, err, sizeof(err)), 0);
		CHECK_EQ_U64(feed1(&cal, "end task-create", err, sizeof(err)), 0);
		CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);
		e = oscal_cal_find(&cal, "task-create");
		if (CHECK(e)) {
			CHECK(e->spread_high);
			CHECK_EQ_U64(e->nclusters, 2);
			CHECK_EQ_U64(e->clusters[0].n, 50);
			CHECK_EQ_U64(e->clusters[1].n, 50);
			CHECK(near(e->clusters[0].mean, 1000, 0.01));
			CHECK(near(e->clusters[1].mean, 3000, 0.01));
			CHECK(e->clusters[0].hi < e->clusters[1].lo);
			CHECK_F64(e->clusters[1].x0, 0);
			CHECK_EQ_U64(e->model.form, OSCAL_CONSTANT);
			CHECK(near(e->model.pieces[0].q, 2000, 0.01));
		}
		e = oscal_cal_find(&cal, "kill-self");
		CHECK(e && !e->spread_high);
	}
	oscal_cal_release(&cal);

	/* oscal_fit directly: no points; points in any order give one answer */
	CHECK_EQ_U64(oscal_fit(pts, 0, true, 0.1, 0, c, &nc, &m), (uint64_t)-EINVAL);
	CHECK_EQ_U64(m.form, OSCAL_NONE);
	CHECK(isnan(oscal_model_eval(&m, 1)));
	pts[0] = (struct oscal_point){ 10, 110 };
	pts[1] = (struct oscal_point){ 0, 100 };
	pts[2] = (struct oscal_point){ 30, 130 };
	pts[3] = (struct oscal_point){ 20, 120 };
	CHECK_EQ_U64(oscal_fit(pts, 4, true, 0.1, 0, c, &nc, &m), 0);
	CHECK_EQ_U64(m.form, OSCAL_LINEAR);
	CHECK_F64(m.pieces[0].m, 1);
	CHECK_F64(m.pieces[0].q, 100);
	CHECK_F64(m.r2, 1);
	CHECK_F64(m.mean_abs_ns, 0);
	CHECK_EQ_U64(m.points, 4);
	CHECK_EQ_U64(nc, 1);
	CHECK_F64(c[0].x0, 0);
	CHECK_F64(c[0].x1, 30);
	CHECK_F64(c[0].lo, 100);
	CHECK_F64(c[0].hi, 130);
	CHECK_F64(c[0].mean, 115);
	/* the same points without a parameter: one constant */
	CHECK_EQ_U64(oscal_fit(pts, 4, false, 0.2, 0, c, &nc, &m), 0);
	CHECK_EQ_U64(m.form, OSCAL_CONSTANT);
	CHECK_F64(m.pieces[0].q, 115);
	CHECK_EQ_U64(nc, 1);
	/* sd 12.9 over 115 is above 0.1: split at the first of the equal
	 * gaps; 110, 120, 130 (sd 10 over 120) stay together */
	CHECK_EQ_U64(oscal_fit(pts, 4, false, 0.1, 0, c, &nc, &m), 0);
	CHECK_EQ_U64(nc, 2);
	CHECK_F64(c[0].hi, 100);
	CHECK_F64(c[1].lo, 110);
	CHECK_F64(m.pieces[0].q, 115);

	/* the kinked series shuffled: the same clusters and model to the bit */
	{
		struct oscal_point *a = malloc(400 * sizeof(*a)), *b = malloc(400 * sizeof(*b));
		struct oscal_cluster ca[OSCAL_CLUSTERS_MAX], cb[OSCAL_CLUSTERS_MAX];
		struct oscal_model ma, mb;
		uint32_t na, nb;

		rng_state = 21;
		for (i = 0; i < 400; i++) {
			a[i].x = 100.0 * (1 + i % 20);
			a[i].ns = noisy(f_kink(a[i].x), 0.01);
			b[i] = a[i];
		}
		for (i = 399; i > 0; i--) {
			uint32_t j = (uint32_t)(rng_next() % (i + 1));
			struct oscal_point t = b[i];

			b[i] = b[j];
			b[j] = t;
		}
		CHECK_EQ_U64(oscal_fit(a, 400, true, 0.1, 0, ca, &na, &ma), 0);
		CHECK_EQ_U64(oscal_fit(b, 400, true, 0.1, 0, cb, &nb, &mb), 0);
		CHECK_EQ_U64(na, 2);
		CHECK_EQ_U64(nb, na);
		CHECK(!memcmp(&ma, &mb, sizeof(ma)));
		CHECK(!memcmp(ca, cb, na * sizeof(ca[0])));
		CHECK_F64(ma.pieces[0].x1, 1000);
		/* one x value only: nothing to split along x, one constant */
		for (i = 0; i < 400; i++)
			a[i].x = 7;
		CHECK_EQ_U64(oscal_fit(a, 400, true, 0.1, 0, ca, &na, &ma), 0);
		CHECK_EQ_U64(na, 1);
		CHECK_EQ_U64(ma.form, OSCAL_CONSTANT);
		CHECK_F64(ma.pieces[0].x0, 7);
		CHECK_F64(ma.pieces[0].x1, 7);
		free(a);
		free(b);
	}

	/* evaluation: below, inside, between and above the pieces */
	memset(&m, 0, sizeof(m));
	m.form = OSCAL_PIECEWISE;
	m.npieces = 2;
	m.pieces[0] = (struct oscal_piece){ 10, 20, 2, 100 }; /* 120 .. 140 */
	m.pieces[1] = (struct oscal_piece){ 40, 50, 0, 300 }; /* 300 */
	CHECK_F64(oscal_model_eval(&m, 0), 100);
	CHECK_F64(oscal_model_eval(&m, 15), 130);
	CHECK_F64(oscal_model_eval(&m, 30), 220); /* halfway from 140 to 300 */
	CHECK_F64(oscal_model_eval(&m, 45), 300);
	CHECK_F64(oscal_model_eval(&m, 1e6), 300);
	m.pieces[0].q = -100; /* a line below 0 is 0 */
	CHECK_F64(oscal_model_eval(&m, 0), 0);
	CHECK_STR(oscal_form_name(OSCAL_NONE), "none");
	CHECK_STR(oscal_form_name(OSCAL_CONSTANT), "constant");
	CHECK_STR(oscal_form_name(OSCAL_LINEAR), "linear");
	CHECK_STR(oscal_form_name(OSCAL_PIECEWISE), "piecewise");
}

/* ------------------------------------------------------------ the suite protocol */

/* line must be refused with code and a message holding needle. */
static void check_refused(struct oscal_cal *cal, const char *line, int code, const char *needle)
{
	char err[256];
	int r = feed1(cal, line, err, sizeof(err));
	int ok = CHECK_EQ_U64(r, (uint64_t)code);

	if (!CHECK(strstr(err, needle)) || !ok)
		printf("  line '%.80s': %d '%s'\n", line, r, err);
}

static void test_feed(void)
{
	struct oscal_cal cal;
	const struct oscal_entry *e;
	char err[256], *line;
	size_t len;
	uint32_t i;

	oscal_cal_init(&cal);
	CHECK_EQ_U64(cal.version, OSCAL_VERSION);
	CHECK_F64(cal.settings.threshold, OSCAL_THRESHOLD);
	CHECK_EQ_U64(strlen(cal.created), 20);
	CHECK_STR(cal.source, "local");
	CHECK_EQ_U64(feed1(&cal, "", err, sizeof(err)), 0); /* empty lines pass */
	check_refused(&cal, "machine arch=x", -EINVAL, "not the suite's first line");
	check_refused(&cal, "layerprof-oscal 2", -EINVAL, "protocol version 2");
	check_refused(&cal, "layerprof-oscal", -EINVAL, "no protocol version");
	check_refused(&cal, "layerprof-oscal 1x", -EINVAL, "no protocol version");
	CHECK_EQ_U64(feed1(&cal, "layerprof-oscal 1", err, sizeof(err)), 0);
	CHECK(cal.header_seen);
	check_refused(&cal, "bogus a=b", -EINVAL, "unknown record 'bogus'");
	check_refused(&cal, "averyveryverylongrecordname", -EINVAL, "unknown record");
	CHECK_EQ_U64(feed1(&cal,
	                   "machine arch=aarch64 cpus=4 kernel=6.6.1-rt libc=musl-1.2 host=dev future=1 "
	                   "cpu=Cortex-A53 r0p4  (4 cores)",
	                   err, sizeof(err)),
	             0);
	CHECK_STR(cal.machine.arch, "aarch64");
	CHECK_EQ_U64(cal.machine.cpus, 4);
	CHECK_STR(cal.machine.kernel, "6.6.1-rt");
	CHECK_STR(cal.machine.libc, "musl-1.2");
	CHECK_STR(cal.machine.host, "dev");
	CHECK_STR(cal.machine.cpu, "Cortex-A53 r0p4  (4 cores)");
	check_refused(&cal, "machine cpus=four", -EINVAL, "cpus 'four' is not a count");
	check_refused(&cal, "machine cpus=-1", -EINVAL, "is not a count");
	check_refused(&cal, "machine cpus=99999999999", -EINVAL, "is not a count");
	check_refused(&cal, "machine arch=x\x01y", -EINVAL, "not printable");
	check_refused(&cal, "clock resolution_ns=1e999", -EINVAL, "is not a number");
	check_refused(&cal, "clock overhead_ns=nan", -EINVAL, "is not a number");
	check_refused(&cal, "clock overhead_ns=-3", -EINVAL, "out of range");
	CHECK_EQ_U64(feed1(&cal, "clock name=monotonic resolution_ns=1 overhead_ns=20.5", err, sizeof(err)), 0);
	CHECK_STR(cal.clock.name, "monotonic");
	CHECK_F64(cal.clock.resolution_ns, 1);
	CHECK_F64(cal.clock.overhead_ns, 20.5);
	CHECK_EQ_U64(feed1(&cal, "settings quick=1 reps=20 warmup=3 calls=read,pthread_*", err, sizeof(err)), 0);
	CHECK(cal.settings.quick);
	CHECK_EQ_U64(cal.settings.reps, 20);
	CHECK_EQ_U64(cal.settings.warmup, 3);
	CHECK_STR(cal.settings.calls, "read,pthread_*");
	check_refused(&cal, "settings reps=1.5", -EINVAL, "reps '1.5' is not a count");

	/* entries */
	check_refused(&cal, "entry", -EINVAL, "without a name");
	check_refused(&cal, "entry Read call=read", -EINVAL, "is not [a-z0-9_-]");
	check_refused(&cal, "entry a-name-that-is-far-too-long-for-the-calibration-to-keep-it-at-all-x", -EINVAL,
	              "is not [a-z0-9_-]");
	check_refused(&cal,
	              "entry read call=re\xc3\xa4"
	              "d",
	              -EINVAL, "not printable");
	check_refused(&cal, "entry read reps=x", -EINVAL, "reps 'x' is not a count");
	CHECK_EQ_U64(cal.nentries, 0); /* a refused entry is not kept */
	CHECK_EQ_U64(feed1(&cal, "entry getpid", err, sizeof(err)), 0);
	e = oscal_cal_find(&cal, "getpid");
	if (CHECK(e)) {
		CHECK_STR(e->call, "getpid"); /* no call: the name */
		CHECK_STR(e->cond, "");
		CHECK_EQ_U64(e->reps, 20); /* the settings' */
		CHECK_EQ_U64(e->warmup, 3);
		CHECK_EQ_U64(e->status, OSCAL_PENDING);
	}
	CHECK_EQ_U64(feed1(&cal,
	                   "entry read call=read cond=file group=file param=bytes unit=B reps=4 warmup=2 "
	                   "desc=read(2) of a regular file  in the page cache",
	                   err, sizeof(err)),
	             0);
	e = oscal_cal_find(&cal, "read");
	if (CHECK(e)) {
		CHECK_STR(e->call, "read");
		CHECK_STR(e->cond, "file");
		CHECK_STR(e->group, "file");
		CHECK_STR(e->param, "bytes");
		CHECK_STR(e->unit, "B");
		CHECK_EQ_U64(e->reps, 4);
		CHECK_EQ_U64(e->warmup, 2);
		CHECK_STR(e->desc, "read(2) of a regular file  in the page cache");
	}
	/* samples: net of the overhead, at least 0, series by x */
	CHECK_EQ_U64(feed1(&cal, "sample read 4096 1020.5 1030.5", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "sample read 1 320.5 10 330", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "sample read 4096 1040.5", err, sizeof(err)), 0);
	e = oscal_cal_find(&cal, "read");
	if (CHECK(e) && CHECK_EQ_U64(e->nseries, 2)) {
		CHECK_F64(e->series[0].x, 1);
		CHECK_EQ_U64(e->series[0].n, 3);
		CHECK_F64(e->series[0].ns[0], 300);
		CHECK_F64(e->series[0].ns[1], 0);
		CHECK_F64(e->series[0].ns[2], 309.5);
		CHECK_F64(e->series[1].x, 4096);
		CHECK_EQ_U64(e->series[1].n, 3);
		CHECK_F64(e->series[1].ns[2], 1020);
	}
	CHECK_EQ_U64(cal.nsamples, 6);
	check_refused(&cal, "sample", -EINVAL, "without an entry name");
	check_refused(&cal, "sample nosuch 1 2", -EINVAL, "unknown entry 'nosuch'");
	check_refused(&cal, "sample read", -EINVAL, "without x");
	check_refused(&cal, "sample read one 2", -EINVAL, "x 'one' is not a number");
	check_refused(&cal, "sample read 8", -EINVAL, "without times");
	check_refused(&cal, "sample read 8 12a", -EINVAL, "time '12a' is not a number");
	check_refused(&cal, "sample read 8 -5", -EINVAL, "time '-5'");
	check_refused(&cal, "sample read 8 1e300", -EINVAL, "time '1e300'");
	check_refused(&cal, "sample read 8 inf", -EINVAL, "time 'inf'");
	check_refused(&cal, "sample read 8 1 123456789012345678901234567890123456789012345678901234567890123456789",
	              -EINVAL, "too long");
	CHECK_EQ_U64(feed1(&cal, "end read", err, sizeof(err)), 0);
	e = oscal_cal_find(&cal, "read");
	CHECK(e && e->status == OSCAL_MEASURED);
	check_refused(&cal, "sample read 1 2", -EINVAL, "which has ended");
	check_refused(&cal, "end read", -EINVAL, "which has ended");
	check_refused(&cal, "end nosuch", -EINVAL, "unknown entry");
	check_refused(&cal, "skip nosuch reason=x", -EINVAL, "unknown entry");
	check_refused(&cal, "entry read", -EINVAL, "appears twice");
	CHECK_EQ_U64(
	    feed1(&cal, "entry mq-send call=mq_send cond=- group=ipc param=bytes unit=B desc=-", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "skip mq-send reason=mq_open: Function not implemented (no mqueue)", err, sizeof(err)),
	             0);
	e = oscal_cal_find(&cal, "mq-send");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->status, OSCAL_SKIPPED);
		CHECK_STR(e->reason, "mq_open: Function not implemented (no mqueue)");
		CHECK_STR(e->cond, "");
		CHECK_STR(e->desc, "");
	}
	check_refused(&cal, "entry mq-send", -EINVAL, "appears twice");
	CHECK_EQ_U64(feed1(&cal, "entry fsync call=fsync group=file", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "sample fsync 0 5000", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "fail fsync", err, sizeof(err)), 0);
	e = oscal_cal_find(&cal, "fsync");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->status, OSCAL_FAILED);
		CHECK_STR(e->reason, "no reason given");
		CHECK_EQ_U64(e->nseries, 1); /* kept, but never modelled */
	}
	CHECK_EQ_U64(feed1(&cal, "entry empty", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "end empty", err, sizeof(err)), 0);
	e = oscal_cal_find(&cal, "empty");
	CHECK(e && e->status == OSCAL_FAILED && !strcmp(e->reason, "no samples"));
	/* getpid still pending: done leaves the run incomplete */
	CHECK_EQ_U64(feed1(&cal, "done measured=1 skipped=1 failed=2", err, sizeof(err)), 0);
	CHECK(!cal.complete);
	/* a resumed run measures a failed entry again */
	CHECK_EQ_U64(feed1(&cal, "layerprof-oscal 1", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "clock name=monotonic resolution_ns=1 overhead_ns=0", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "entry fsync call=fsync group=file", err, sizeof(err)), 0);
	CHECK_EQ_U64(cal.nsamples, 6);
	CHECK_EQ_U64(feed1(&cal, "sample fsync 0 4000 4100", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "end fsync", err, sizeof(err)), 0);
	CHECK_EQ_U64(cal.nsamples, 8);
	e = oscal_cal_find(&cal, "fsync");
	CHECK(e && e->status == OSCAL_MEASURED && e->series[0].n == 2 && e->series[0].ns[0] == 4000);
	CHECK_EQ_U64(feed1(&cal, "end getpid", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "done measured=2 skipped=0 failed=0", err, sizeof(err)), 0);
	CHECK(cal.complete);
	CHECK_EQ_U64(cal.nentries, 5);
	CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);
	oscal_cal_release(&cal);
	oscal_cal_release(NULL);

	/* an interrupted run: analyse makes the pending entry failed */
	oscal_cal_init(&cal);
	feed_header(&cal, 0);
	CHECK_EQ_U64(feed1(&cal, "entry getpid", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&cal, "sample getpid 0 50 51", err, sizeof(err)), 0);
	CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);
	e = oscal_cal_find(&cal, "getpid");
	if (CHECK(e)) {
		CHECK_EQ_U64(e->status, OSCAL_FAILED);
		CHECK_STR(e->reason, "interrupted");
		CHECK_EQ_U64(e->st.n, 2); /* statistics, no model */
		CHECK_EQ_U64(e->model.form, OSCAL_NONE);
	}
	oscal_cal_release(&cal);

	/* the bounds: entries, then samples */
	oscal_cal_init(&cal);
	feed_header(&cal, 0);
	line = malloc(16 + 2 * 4096);
	for (i = 0; i < OSCAL_ENTRIES_MAX; i++) {
		char l[64];

		snprintf(l, sizeof(l), "entry e%u", i);
		if (!CHECK_EQ_U64(feed1(&cal, l, err, sizeof(err)), 0))
			break;
	}
	check_refused(&cal, "entry one-too-many", -E2BIG, "more than 1024 entries");
	len = (size_t)sprintf(line, "sample e0 0");
	for (i = 0; i < 4096; i++)
		len += (size_t)sprintf(line + len, " 1");
	for (i = 0; i < OSCAL_SAMPLES_MAX / 4096; i++)
		if (!CHECK_EQ_U64(feed1(&cal, line, err, sizeof(err)), 0))
			break;
	CHECK_EQ_U64(cal.nsamples, OSCAL_SAMPLES_MAX);
	check_refused(&cal, "sample e1 0 1", -E2BIG, "more than 4194304 samples");
	free(line);
	oscal_cal_release(&cal);
}

/* The suite's lines with bytes changed, fed one by one: each is taken or
 * refused with a message; never a crash, and what was taken analyses and
 * writes (run under ASan). */
static void test_feed_garbled(void)
{
	static const char junk[] = "=- \t0123456789.eE+xn\xff";
	char line[512], err[256];
	const char *p;
	uint32_t round, refused = 0, taken = 0;
	FILE *f;

	rng_state = 77;
	for (round = 0; round < 200; round++) {
		struct oscal_cal cal;

		oscal_cal_init(&cal);
		for (p = suite_text; *p;) {
			const char *nl = strchr(p, '\n');
			size_t n = (size_t)(nl - p), k;

			memcpy(line, p, n);
			line[n] = '\0';
			p = nl + 1;
			if (n && rng_next() % 3 == 0)
				for (k = 0; k < 1 + rng_next() % 3; k++)
					line[rng_next() % n] = junk[rng_next() % (sizeof(junk) - 1)];
			line[strlen(line)] = '\0';
			err[0] = '\0';
			if (oscal_cal_feed(&cal, line, err, sizeof(err))) {
				if (CHECK(err[0]))
					refused++;
			} else
				taken++;
		}
		CHECK_EQ_U64(oscal_cal_analyse(&cal), 0);
		f = fopen(file_in("garbled-feed.cal"), "w");
		CHECK_EQ_U64(oscal_cal_write(f, &cal), 0);
		fclose(f);
		oscal_cal_release(&cal);
		/* what the feeder took, the reader takes back, to the byte */
		if (CHECK_EQ_U64(oscal_cal_read(file_in("garbled-feed.cal"), &cal, err, sizeof(err)), 0)) {
			f = fopen(file_in("garbled-feed2.cal"), "w");
			CHECK_EQ_U64(oscal_cal_write(f, &cal), 0);
			fclose(f);
			oscal_cal_release(&cal);
			CHECK(same_files("garbled-feed.cal", "garbled-feed2.cal"));
		} else
			printf("  %s\n", err);
	}
	CHECK(refused > 100);
	CHECK(taken > 1000);
}

/* ------------------------------------------------------------ the file */

/* A calibration with every kind of entry, analysed. */
static void make_cal(struct oscal_cal *cal, double scale, double scale_signal)
{
	static const double xs[] = { 1, 64, 4096, 65536 }, xs_kink[] = { 100, 200, 300, 400, 1100, 1200, 1300 },
	                    xs0[] = { 0 };
	char err[256];

	oscal_cal_init(cal);
	feed_header(cal, 0);
	feed_entry_fn(cal, "read", "read", "file", "file", "bytes", xs, 4, 30, f_linear, scale, 0.03, 11);
	feed_entry_fn(cal, "write", "write", "file", "file", "bytes", xs_kink, 7, 20, f_kink, scale, 0.01, 12);
	feed_entry_fn(cal, "kill-self", "kill", "self", "signal", "-", xs0, 1, 40, f_const, scale_signal, 0.02, 13);
	feed_entry_fn(cal, "kill-none", "kill", "none", "signal", "-", xs0, 1, 40, f_const, 0.5 * scale_signal, 0.2,
	              14);
	CHECK_EQ_U64(feed1(cal,
	                   "entry mq-send call=mq_send group=ipc param=bytes unit=B desc=\"quoted\" \\ and \xc3\xa9",
	                   err, sizeof(err)),
	             0);
	CHECK_EQ_U64(feed1(cal, "skip mq-send reason=mq_open: Function not implemented", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(cal, "done measured=4 skipped=1 failed=0", err, sizeof(err)), 0);
	snprintf(cal->source, sizeof(cal->source), "agent dev:7070");
	snprintf(cal->created, sizeof(cal->created), "2026-11-29T12:00:00Z");
	CHECK_EQ_U64(oscal_cal_analyse(cal), 0);
}

static int write_cal(const struct oscal_cal *cal, const char *name)
{
	FILE *f = fopen(file_in(name), "w");
	int r;

	if (!f)
		return -errno;
	r = oscal_cal_write(f, cal);
	fclose(f);
	return r;
}

static int same_files(const char *a, const char *b)
{
	size_t la, lb;
	char *ta = slurp(file_in(a), &la), *tb = slurp(file_in(b), &lb);
	int same = ta && tb && la == lb && !memcmp(ta, tb, la);

	free(ta);
	free(tb);
	return same;
}

static void test_round_trip(void)
{
	struct oscal_cal cal, back, again;
	const struct oscal_entry *e, *f;
	char err[256] = "";
	uint32_t i;

	make_cal(&cal, 1, 1);
	CHECK_EQ_U64(write_cal(&cal, "rt1.cal"), 0);
	if (!CHECK_EQ_U64(oscal_cal_read(file_in("rt1.cal"), &back, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		oscal_cal_release(&cal);
		return;
	}
	CHECK_EQ_U64(write_cal(&back, "rt2.cal"), 0);
	CHECK(same_files("rt1.cal", "rt2.cal"));
	CHECK_STR(back.created, "2026-11-29T12:00:00Z");
	CHECK_STR(back.source, "agent dev:7070");
	CHECK(back.complete);
	CHECK_STR(back.machine.cpu, "A CPU");
	CHECK_EQ_U64(back.nentries, cal.nentries);
	for (i = 0; i < cal.nentries && i < back.nentries; i++) {
		e = &cal.entries[i];
		f = &back.entries[i];
		CHECK_STR(f->name, e->name);
		CHECK_STR(f->desc, e->desc);
		CHECK_EQ_U64(f->status, e->status);
		CHECK_EQ_U64(f->model.form, e->model.form);
		CHECK_F64(f->model.r2, e->model.r2);
		CHECK_F64(f->model.pieces[0].m, e->model.pieces[0].m);
		CHECK_F64(f->st.sd, e->st.sd);
		CHECK_EQ_U64(f->nclusters, e->nclusters);
	}
	e = oscal_cal_find(&back, "write");
	CHECK(e && e->model.form == OSCAL_PIECEWISE);
	e = oscal_cal_find(&back, "kill-none");
	CHECK(e && e->spread_high);
	e = oscal_cal_find(&back, "mq-send");
	CHECK(e && !strcmp(e->desc, "\"quoted\" \\ and \xc3\xa9"));
	/* analysed again after reading: the same file */
	CHECK_EQ_U64(oscal_cal_analyse(&back), 0);
	CHECK_EQ_U64(write_cal(&back, "rt3.cal"), 0);
	CHECK(same_files("rt1.cal", "rt3.cal"));
	/* a file read back can be fed more (a resumed run) */
	CHECK_EQ_U64(feed1(&back, "entry more", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&back, "sample more 0 5 6 7", err, sizeof(err)), 0);
	CHECK_EQ_U64(feed1(&back, "end more", err, sizeof(err)), 0);
	CHECK_EQ_U64(back.nentries, cal.nentries + 1);
	oscal_cal_release(&back);

	/* without the analysis: the reader analyses it */
	write_file("nomodel.cal", "{\"format\":\"layerprof-oscal-cal\",\"version\":1,\"entries\":["
	                          "{\"name\":\"read\",\"call\":\"read\",\"param\":\"bytes\",\"status\":\"measured\","
	                          "\"series\":[{\"x\":0,\"ns\":[100,100]},{\"x\":10,\"ns\":[110,110]},"
	                          "{\"x\":20,\"ns\":[120,120]}]},"
	                          "{\"name\":\"raise\",\"call\":\"raise\",\"status\":\"skipped\",\"reason\":\"no\"}]}");
	if (CHECK_EQ_U64(oscal_cal_read(file_in("nomodel.cal"), &again, err, sizeof(err)), 0)) {
		e = oscal_cal_find(&again, "read");
		if (CHECK(e)) {
			CHECK_EQ_U64(e->model.form, OSCAL_LINEAR);
			CHECK_F64(e->model.pieces[0].m, 1);
			CHECK_F64(e->model.pieces[0].q, 100);
			CHECK_EQ_U64(e->st.n, 6);
			CHECK_F64(e->series[2].st.mean, 120);
		}
		CHECK_F64(again.settings.threshold, OSCAL_THRESHOLD);
		CHECK(!again.complete);
		oscal_cal_release(&again);
	} else
		printf("  %s\n", err);
	oscal_cal_release(&cal);
}

/* path must be refused with a message holding needle. */
static void check_bad_file(const char *name, const char *text, const char *needle)
{
	struct oscal_cal cal;
	char err[512] = "";
	int r, ok;

	write_file(name, text);
	r = oscal_cal_read(file_in(name), &cal, err, sizeof(err));
	ok = CHECK(r < 0);

	if (!CHECK(strstr(err, needle)) || !ok)
		printf("  %s: %d '%s', want '%s'\n", name, r, err, needle);
	if (!r)
		oscal_cal_release(&cal);
	CHECK(!cal.entries && !cal.nentries);
}

#define HEAD "{\"format\":\"layerprof-oscal-cal\",\"version\":1,"
#define ENTRY "{\"name\":\"read\",\"call\":\"read\",\"status\":\"measured\","

static void test_bad_files(void)
{
	struct oscal_cal cal;
	char err[512], *text, *cut;
	size_t len, i;
	uint32_t refused = 0, read_ok = 0;

	CHECK_EQ_U64(oscal_cal_read(file_in("missing.cal"), &cal, err, sizeof(err)), (uint64_t)-ENOENT);
	CHECK(strstr(err, "cannot") && strstr(err, "missing.cal"));
	check_bad_file("empty.cal", "", "empty.cal");
	check_bad_file("garbage.cal", "hello world\n", "garbage.cal");
	check_bad_file("array.cal", "[1,2,3]", "is not a layerprof calibration");
	check_bad_file("other.cal", "{\"format\":\"layerprof-energy-model\",\"version\":1}",
	               "is not a layerprof calibration");
	check_bad_file("newer.cal", "{\"format\":\"layerprof-oscal-cal\",\"version\":2,\"entries\":[]}",
	               "newer.cal': version 2 is newer than this layerprof reads (1)");
	check_bad_file("huge-version.cal", "{\"format\":\"layerprof-oscal-cal\",\"version\":1e300,\"entries\":[]}",
	               "no version");
	check_bad_file("strver.cal", "{\"format\":\"layerprof-oscal-cal\",\"version\":\"1\",\"entries\":[]}",
	               "no version");
	check_bad_file("noentries.cal", HEAD "\"machine\":{}}", "no \"entries\" array");
	check_bad_file("entriesobj.cal", HEAD "\"entries\":{}}", "\"entries\" is not an array");
	check_bad_file("entrynum.cal", HEAD "\"entries\":[3]}", "entry 1: not an object");
	check_bad_file("noname.cal", HEAD "\"entries\":[{\"call\":\"x\"}]}", "entry 1: no name");
	check_bad_file("badname.cal", HEAD "\"entries\":[{\"name\":\"a b\",\"call\":\"x\",\"status\":\"skipped\"}]}",
	               "not [a-z0-9_-]");
	check_bad_file("twice.cal",
	               HEAD "\"entries\":[{\"name\":\"a\",\"call\":\"x\",\"status\":\"skipped\"},"
	                    "{\"name\":\"a\",\"call\":\"x\",\"status\":\"skipped\"}]}",
	               "entry 2 ('a'): the name appears twice");
	check_bad_file("nocall.cal", HEAD "\"entries\":[{\"name\":\"a\",\"status\":\"skipped\"}]}",
	               "\"call\" is not a string");
	check_bad_file("status.cal", HEAD "\"entries\":[{\"name\":\"a\",\"call\":\"a\",\"status\":\"done\"}]}",
	               "its status is none of");
	check_bad_file("longcall.cal",
	               HEAD "\"entries\":[{\"name\":\"a\",\"status\":\"skipped\",\"call\":"
	                    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}]}",
	               "\"call\" is too long");
	check_bad_file("reps.cal", HEAD "\"entries\":[" ENTRY "\"reps\":-1}]}", "\"reps\" is not a count");
	check_bad_file("repsbig.cal", HEAD "\"entries\":[" ENTRY "\"reps\":1e20}]}", "\"reps\" is not a count");
	check_bad_file("repsstr.cal", HEAD "\"entries\":[" ENTRY "\"reps\":\"5\"}]}", "\"reps\" is not a count");
	check_bad_file("noseries.cal", HEAD "\"entries\":[" ENTRY "\"series\":[]}]}", "measured, but it has no series");
	check_bad_file("seriesobj.cal", HEAD "\"entries\":[" ENTRY "\"series\":{}}]}", "\"series\" is not an array");
	check_bad_file("seriesnum.cal", HEAD "\"entries\":[" ENTRY "\"series\":[1]}]}",
	               "a series is not an object with members");
	check_bad_file("nox.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"ns\":[1]}]}]}", "has no \"x\"");
	check_bad_file("strx.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":\"1\",\"ns\":[1]}]}]}",
	               "\"x\" is not a finite number");
	check_bad_file("nons.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":1}]}]}", "has no times");
	check_bad_file("strns.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":1,\"ns\":[1,\"2\"]}]}]}",
	               "is not a number of ns");
	check_bad_file("negns.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":1,\"ns\":[-1]}]}]}",
	               "is not a number of ns");
	check_bad_file("bigns.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":1,\"ns\":[1e20]}]}]}",
	               "is not a number of ns from 0 to 1e15");
	check_bad_file("bigx.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":-1e300,\"ns\":[1]}]}]}",
	               "\"x\" is beyond 1e15");
	check_bad_file("longns.cal",
	               HEAD "\"entries\":[" ENTRY
	                    "\"series\":[{\"x\":1,\"ns\":[123456789012345678901234567890123456789]}]}]}",
	               "longns.cal' is not valid JSON");
	check_bad_file("hugens.cal", HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":1,\"ns\":[1e999]}]}]}",
	               "hugens.cal");
	check_bad_file("order.cal",
	               HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":2,\"ns\":[1]},{\"x\":1,\"ns\":[1]}]}]}",
	               "not by x ascending");
	check_bad_file("form.cal",
	               HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":1,\"ns\":[1]}],\"model\":{\"form\":\"cubic\"}}]}",
	               "the model's \"form\" is none of");
	check_bad_file(
	    "pieces.cal",
	    HEAD
	    "\"entries\":[" ENTRY
	    "\"series\":[{\"x\":1,\"ns\":[1]}],\"model\":{\"form\":\"piecewise\",\"pieces\":[{},{},{},{},{},{}]}}]}",
	    "\"pieces\" has 6 elements, more than 5");
	check_bad_file("nopiece.cal",
	               HEAD "\"entries\":[" ENTRY
	                    "\"series\":[{\"x\":1,\"ns\":[1]}],\"model\":{\"form\":\"linear\",\"pieces\":[]}}]}",
	               "the model has no pieces");
	check_bad_file("noq.cal",
	               HEAD
	               "\"entries\":[" ENTRY
	               "\"series\":[{\"x\":1,\"ns\":[1]}],\"model\":{\"form\":\"linear\",\"pieces\":[{\"m\":1}]}}]}",
	               "has no \"q\"");
	check_bad_file("clusters.cal",
	               HEAD "\"entries\":[" ENTRY
	                    "\"series\":[{\"x\":1,\"ns\":[1]}],\"clusters\":[{},{},{},{},{},{}]}]}",
	               "\"clusters\" has 6 elements");
	check_bad_file("hist.cal",
	               HEAD "\"entries\":[" ENTRY
	                    "\"series\":[{\"x\":1,\"ns\":[1]}],\"stats\":{\"hist\":{\"counts\":[1,-2]}}}]}",
	               "a histogram count is not a count");
	check_bad_file("spread.cal",
	               HEAD "\"entries\":[" ENTRY "\"series\":[{\"x\":1,\"ns\":[1]}],\"spread_high\":1}]}",
	               "\"spread_high\" is not true or false");
	check_bad_file("threshold.cal", HEAD "\"settings\":{\"threshold\":0},\"entries\":[]}",
	               "settings.threshold is not above 0");
	check_bad_file("deep.cal",
	               HEAD "\"entries\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	                    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	               "deep.cal");

	/* a good file cut at every place, and with bytes changed: each read
	 * either succeeds or gives one message; never a crash (run under ASan) */
	text = slurp(file_in("rt1.cal"), &len);
	if (!CHECK(text))
		return;
	cut = malloc(len + 1);
	for (i = 0; i < len; i += 1 + i / 64) {
		FILE *f = fopen(file_in("cut.cal"), "w");
		int r;

		fwrite(text, 1, i, f);
		fclose(f);
		err[0] = '\0';
		r = oscal_cal_read(file_in("cut.cal"), &cal, err, sizeof(err));
		if (!r) {
			read_ok++;
			oscal_cal_release(&cal);
		} else if (CHECK(err[0] && strstr(err, "cut.cal")))
			refused++;
	}
	CHECK_EQ_U64(read_ok, 0); /* every proper prefix of the document is incomplete */
	CHECK(refused > 100);
	rng_state = 99;
	refused = read_ok = 0;
	for (i = 0; i < 400; i++) {
		static const char junk[] = "{}[]\":,-0e9.xn\\ ";
		size_t at = (size_t)(rng_next() % len), k;
		FILE *f;
		int r;

		memcpy(cut, text, len);
		for (k = 0; k < 1 + i % 4; k++)
			cut[(at + k * 7) % len] = junk[rng_next() % (sizeof(junk) - 1)];
		f = fopen(file_in("garbled.cal"), "w");
		fwrite(cut, 1, len, f);
		fclose(f);
		err[0] = '\0';
		r = oscal_cal_read(file_in("garbled.cal"), &cal, err, sizeof(err));
		if (!r) {
			read_ok++;
			oscal_cal_release(&cal);
		} else if (CHECK(err[0] && strstr(err, "garbled.cal")))
			refused++;
	}
	CHECK_EQ_U64(read_ok + refused, 400);
	CHECK(refused > 100);
	free(cut);
	free(text);
}

/* ------------------------------------------------------------ compare */

static void test_compare(void)
{
	struct oscal_cal a, b, c;
	struct oscal_compare cmp;
	uint32_t i, g;
	char err[256];

	/* b = 2 x a to the bit: K = 2 exactly everywhere */
	make_cal(&a, 1, 1);
	make_cal(&b, 2, 2);
	CHECK_EQ_U64(oscal_compare(&a, &b, &cmp), 0);
	CHECK_EQ_U64(cmp.nrows, 4);
	CHECK_EQ_U64(cmp.unmodelled, 1); /* mq-send, skipped */
	CHECK_EQ_U64(cmp.only_a, 0);
	CHECK_EQ_U64(cmp.only_b, 0);
	for (i = 0; i < cmp.nrows; i++) {
		CHECK_F64(cmp.rows[i].k, 2);
		CHECK_F64(cmp.rows[i].kmin, 2);
		CHECK_F64(cmp.rows[i].kmax, 2);
		CHECK(cmp.rows[i].a == &a.entries[i] && cmp.rows[i].b == &b.entries[i]);
	}
	CHECK_EQ_U64(cmp.rows[0].points, 4);
	CHECK_EQ_U64(cmp.rows[1].points, 7);
	CHECK_EQ_U64(cmp.rows[2].points, 1);
	CHECK_F64(cmp.k, 2);
	CHECK_F64(cmp.kmin, 2);
	CHECK_F64(cmp.kmax, 2);
	CHECK_F64(cmp.sd, 0);
	CHECK_F64(cmp.sd_rel, 0);
	CHECK_EQ_U64(cmp.ngroups, 2);
	for (g = 0; g < cmp.ngroups; g++) {
		CHECK_F64(cmp.groups[g].k, 2);
		CHECK_F64(cmp.groups[g].sd, 0);
		CHECK_EQ_U64(cmp.groups[g].n, 2);
	}
	oscal_compare_release(&cmp);
	oscal_compare_release(NULL);
	oscal_cal_release(&b);

	/* mixed groups: file x 2, signal x 4 */
	make_cal(&b, 2, 4);
	CHECK_EQ_U64(feed1(&b, "entry only-b", err, sizeof(err)), 0);
	CHECK_EQ_U64(oscal_compare(&a, &b, &cmp), 0);
	CHECK_EQ_U64(cmp.only_b, 1);
	CHECK_F64(cmp.k, 3);
	CHECK_F64(cmp.kmin, 2);
	CHECK_F64(cmp.kmax, 4);
	CHECK_F64(cmp.sd, sqrt(4.0 / 3)); /* 2, 2, 4, 4 around 3 over n - 1 */
	CHECK_F64(cmp.sd_rel, sqrt(4.0 / 3) / 3);
	if (CHECK_EQ_U64(cmp.ngroups, 2)) {
		CHECK_STR(cmp.groups[0].group, "file");
		CHECK_F64(cmp.groups[0].k, 2);
		CHECK_F64(cmp.groups[0].kmin, 2);
		CHECK_F64(cmp.groups[0].kmax, 2);
		CHECK_STR(cmp.groups[1].group, "signal");
		CHECK_F64(cmp.groups[1].k, 4);
		CHECK_F64(cmp.groups[1].sd, 0);
	}
	oscal_compare_release(&cmp);

	/* a file against itself; entries only in one */
	oscal_cal_init(&c);
	CHECK_EQ_U64(oscal_compare(&a, &c, &cmp), 0);
	CHECK_EQ_U64(cmp.nrows, 0);
	CHECK_EQ_U64(cmp.only_a, 5);
	CHECK_F64(cmp.k, 0);
	oscal_compare_release(&cmp);
	CHECK_EQ_U64(oscal_compare(&a, &a, &cmp), 0);
	CHECK_F64(cmp.k, 1);
	CHECK_F64(cmp.sd, 0);
	oscal_compare_release(&cmp);
	oscal_cal_release(&c);
	oscal_cal_release(&b);
	oscal_cal_release(&a);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_oscal.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_smoke();
	test_stats();
	test_models();
	test_feed();
	test_feed_garbled();
	test_round_trip();
	test_bad_files();
	test_compare();
	if (!check_failed) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("could not remove %s\n", dir);
	}
	return check_summary();
}
