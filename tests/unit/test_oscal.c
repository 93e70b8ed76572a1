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

static __attribute__((unused)) void write_file(const char *name, const char *text)
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
	CHECK_EQ_U64(oscal_fit(pts, 0, true, 0.1, c, &nc, &m), (uint64_t)-EINVAL);
	CHECK_EQ_U64(m.form, OSCAL_NONE);
	CHECK(isnan(oscal_model_eval(&m, 1)));
	pts[0] = (struct oscal_point){ 10, 110 };
	pts[1] = (struct oscal_point){ 0, 100 };
	pts[2] = (struct oscal_point){ 30, 130 };
	pts[3] = (struct oscal_point){ 20, 120 };
	CHECK_EQ_U64(oscal_fit(pts, 4, true, 0.1, c, &nc, &m), 0);
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
	CHECK_EQ_U64(oscal_fit(pts, 4, false, 0.2, c, &nc, &m), 0);
	CHECK_EQ_U64(m.form, OSCAL_CONSTANT);
	CHECK_F64(m.pieces[0].q, 115);
	CHECK_EQ_U64(nc, 1);
	/* sd 12.9 over 115 is above 0.1: split at the first of the equal
	 * gaps; 110, 120, 130 (sd 10 over 120) stay together */
	CHECK_EQ_U64(oscal_fit(pts, 4, false, 0.1, c, &nc, &m), 0);
	CHECK_EQ_U64(nc, 2);
	CHECK_F64(c[0].hi, 100);
	CHECK_F64(c[1].lo, 110);
	CHECK_F64(m.pieces[0].q, 115);

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
	if (!check_failed) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("could not remove %s\n", dir);
	}
	return check_summary();
}
