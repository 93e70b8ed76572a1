/* Unit test of the optimiser's library (host/lib/tune): the parameter
 * space (ranges, lists, their errors with exact messages, the
 * substitution of {NAME}, configurations), and the strategies and the
 * noise rule with a made-up measure whose values are known, so that the
 * order of every search is exact: greedy, grid, budget, pattern from the
 * middle and from a corner with its step halving, corun (the longer of
 * two costs), producer-consumer with a verdict given here (consumers
 * slow: their threads, then tiles N/n, then the threads again), a failing
 * configuration passed over, the noise set by the baseline's spread and
 * the repeats run while a difference is within twice the noise. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/tune/tune.h"
#include "tests/unit/check.h"

static long argi(char *const *argv, int i)
{
	return strtol(argv[i], NULL, 10);
}

/* The made-up measure: the cost of a configuration from its words. */
struct fake {
	int mode;          /* 0 costsurface X Y; 1 corun; 2 producer-consumer; 3 jitter */
	long fail_x;       /* mode 0: X of a configuration that fails (0: none) */
	unsigned calls;    /* runs */
	const double *jit; /* mode 3: relative jitter of each run in turn */
	unsigned njit;
};

static double surface(long x, long y)
{
	return 20 + 8 * ((x - 3) * (x - 3) + (y - 2) * (y - 2));
}

static int fake_measure(void *ctx, char *const *const *argvs, uint32_t n, struct tune_sample *out, char *err,
                        size_t errlen)
{
	struct fake *f = ctx;
	double ms = 0;

	(void)err;
	(void)errlen;
	switch (f->mode) {
	case 0:
	case 3:
		ms = surface(argi(argvs[0], 1), argi(argvs[0], 2));
		if (f->fail_x && argi(argvs[0], 1) == f->fail_x) {
			out->failed = true;
			snprintf(out->why, sizeof(out->why), "fake exited with status 1");
		}
		if (f->mode == 3)
			ms *= 1 + f->jit[f->calls % f->njit];
		break;
	case 1: /* costsurface A 1 and costsurface 3 B at once: the longer */
		ms = fmax(surface(argi(argvs[0], 1), argi(argvs[0], 2)), surface(argi(argvs[1], 1), argi(argvs[1], 2)));
		CHECK_EQ_U64(n, 2);
		break;
	case 2: {
		long p = argi(argvs[0], 1), c = argi(argvs[0], 2), t = argi(argvs[0], 3);

		ms = 100 + 30 * labs(c - 3) + 5 * labs(p - 1) + (double)labs(t - 60) / 4;
		break;
	}
	}
	f->calls++;
	out->seconds = ms / 1000;
	return 0;
}

static int fake_verdict(void *ctx, char *const *argv, int *slow, char *line, size_t linelen, char *err, size_t errlen)
{
	(void)ctx;
	(void)err;
	(void)errlen;
	CHECK(!strcmp(argv[1], "1") && !strcmp(argv[2], "1") && !strcmp(argv[3], "240"));
	*slow = 1;
	snprintf(line, linelen, "consumer side (tid 2) is slow");
	return 0;
}

static char warned[512];

static void warn_fn(void *ctx, const char *msg)
{
	(void)ctx;
	snprintf(warned, sizeof(warned), "%s", msg);
}

/* The configurations tried as "X,Y X,Y ...". */
static const char *tried(const struct tune *t, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < t->n && n < size; i++) {
		n += (size_t)snprintf(buf + n, size - n, "%s", i ? " " : "");
		for (uint32_t p = 0; p < t->sp->nparams && n < size; p++)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", p ? "," : "",
			                      t->sp->params[p].values[t->entries[i].c.idx[p]]);
	}
	return buf;
}

static const char *best(const struct tune *t, char *buf, size_t size)
{
	return tune_space_format(t->sp, &t->entries[t->best].c, buf, size);
}

static void test_space(void)
{
	struct tune_space sp = { 0 };
	struct tune_config c;
	char err[256], buf[256];
	char *cmd[] = { "prog", "-t{T}", "{O}{T}x{{T}}", "{ keep }", "plain", NULL };
	char **argv;

	CHECK(!tune_space_add(&sp, "T=1..10:4", 0, err, sizeof(err)));
	CHECK_EQ_U64(sp.params[0].nvalues, 3);
	CHECK_STR(sp.params[0].values[2], "9");
	CHECK(sp.params[0].numeric && sp.params[0].num[1] == 5);
	CHECK(!tune_space_add(&sp, "O=-O1,-O2", 0, err, sizeof(err)));
	CHECK(!sp.params[1].numeric);
	CHECK_EQ_U64(tune_space_size(&sp), 6);
	CHECK_EQ_U64(tune_space_add(&sp, "T=1", 0, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "parameter T is given twice");
	CHECK_EQ_U64(tune_space_add(&sp, "U=5..1", 0, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "empty range 'U=5..1': 5 is above 1");
	CHECK_EQ_U64(tune_space_add(&sp, "U=1..x", 0, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "invalid range 'U=1..x': A..B or A..B:STEP with integers, STEP above 0");
	CHECK_EQ_U64(tune_space_add(&sp, "U=1..3000", 0, err, sizeof(err)), (uint64_t)-E2BIG);
	CHECK_EQ_U64(tune_space_add(&sp, "9U=1", 0, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_EQ_U64(tune_space_add(&sp, "U=a,,b", 0, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "invalid list 'U=a,,b': an empty value");
	CHECK_EQ_U64(sp.nparams, 2);
	CHECK(!tune_space_add_prog(&sp, cmd, err, sizeof(err)));
	CHECK(!tune_space_check(&sp, err, sizeof(err)));
	CHECK(!tune_space_config_parse(&sp, "O=-O2,T=5", &c, err, sizeof(err)));
	CHECK_STR(tune_space_format(&sp, &c, buf, sizeof(buf)), "T=5 O=-O2");
	argv = tune_space_argv(&sp, &c, 0);
	if (CHECK(argv != NULL)) {
		CHECK_STR(argv[1], "-t5");
		CHECK_STR(argv[2], "-O25x{T}");
		CHECK_STR(argv[3], "{ keep }");
		CHECK_STR(argv[4], "plain");
		CHECK(argv[5] == NULL);
		free(argv);
	}
	CHECK_EQ_U64(tune_space_config_parse(&sp, "T=2,O=-O2", &c, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "T=2 is not among the values of T");
	CHECK_EQ_U64(tune_space_config_parse(&sp, "T=1", &c, err, sizeof(err)), (uint64_t)-EINVAL);
	CHECK_STR(err, "the configuration gives no value of O");
	CHECK_EQ_U64(tune_space_value_add(&sp, 0, "7"), 3);
	CHECK_EQ_U64(tune_space_value_add(&sp, 0, "5"), 1);
	tune_space_release(&sp);

	{
		char *bad[] = { "prog", "{T}", "{Z}", NULL }, *unused[] = { "prog", NULL };

		CHECK(!tune_space_add(&sp, "T=1,2", 0, err, sizeof(err)));
		CHECK(!tune_space_add_prog(&sp, bad, err, sizeof(err)));
		CHECK_EQ_U64(tune_space_check(&sp, err, sizeof(err)), (uint64_t)-EINVAL);
		CHECK_STR(err, "unknown parameter {Z} in '{Z}'");
		sp.progs[0] = unused;
		CHECK_EQ_U64(tune_space_check(&sp, err, sizeof(err)), (uint64_t)-EINVAL);
		CHECK_STR(err, "parameter T is used by no command (write {T} in it)");
		tune_space_release(&sp);
	}
}

/* A search over costsurface X Y with params, returning the tune (release
 * it and its space). */
static int run_surface(struct tune *t, struct tune_space *sp, struct fake *f, struct tune_opts *o, const char *px,
                       const char *py, char **cmd)
{
	char err[256];
	int r;

	memset(sp, 0, sizeof(*sp));
	CHECK(!tune_space_add(sp, px, 0, err, sizeof(err)));
	if (py)
		CHECK(!tune_space_add(sp, py, f->mode == 1 ? 1 : 0, err, sizeof(err)));
	CHECK(!tune_space_add_prog(sp, cmd, err, sizeof(err)));
	if (f->mode == 1)
		CHECK(!tune_space_add_prog(sp, cmd + 4, err, sizeof(err)));
	CHECK(!tune_space_check(sp, err, sizeof(err)));
	o->measure = fake_measure;
	o->measure_ctx = f;
	tune_init(t, sp, o);
	r = tune_run(t, err, sizeof(err));
	if (r)
		printf("tune_run: %s\n", err);
	return r;
}

static void test_strategies(void)
{
	char *cmd[] = { "fake", "{X}", "{Y}", NULL };
	struct tune_opts o = { .strategy = TUNE_GREEDY, .repeat = 1, .max_repeat = 3, .noise_pct = 2 };
	struct tune_space sp;
	struct tune t;
	struct fake f = { 0 };
	char buf[1024];

	/* greedy: (3,1) and (2,2) tie at 28: the first in parameter order */
	CHECK(!run_surface(&t, &sp, &f, &o, "X=1..5", "Y=1..4", cmd));
	CHECK_STR(tried(&t, buf, sizeof(buf)), "1,1 2,1 1,2 3,1 2,2 4,1 3,2 4,2 3,3");
	CHECK_STR(best(&t, buf, sizeof(buf)), "X=3 Y=2");
	CHECK_EQ_U64(t.baseline, 0);
	CHECK_STR(t.stop, "no step up in any parameter improves");
	tune_release(&t);
	tune_space_release(&sp);

	/* grid: in order, the last parameter fastest */
	o.strategy = TUNE_GRID;
	CHECK(!run_surface(&t, &sp, &f, &o, "X=1..3", "Y=1..2", cmd));
	CHECK_STR(tried(&t, buf, sizeof(buf)), "1,1 1,2 2,1 2,2 3,1 3,2");
	CHECK_STR(best(&t, buf, sizeof(buf)), "X=3 Y=2");
	tune_release(&t);
	tune_space_release(&sp);
	o.budget = 4;
	CHECK(!run_surface(&t, &sp, &f, &o, "X=1..5", "Y=1..4", cmd));
	CHECK(t.budget_hit && t.n == 4);
	CHECK_STR(t.stop, "the budget of 4 configurations is spent");
	CHECK_STR(best(&t, buf, sizeof(buf)), "X=1 Y=2");
	tune_release(&t);
	tune_space_release(&sp);
	o.budget = 0;

	/* pattern from the middle: steps of 2, then 1 */
	o.strategy = TUNE_PATTERN;
	CHECK(!run_surface(&t, &sp, &f, &o, "X=1..9", "Y=1..8", cmd));
	CHECK_STR(tried(&t, buf, sizeof(buf)), "5,4 7,4 3,4 5,6 5,2 1,4 3,6 3,2 1,2 4,2 2,2 3,3 3,1");
	CHECK_STR(best(&t, buf, sizeof(buf)), "X=3 Y=2");
	CHECK_STR(t.stop, "no step of 1 in any direction improves");
	tune_release(&t);
	tune_space_release(&sp);
	/* from a corner given as the baseline */
	o.has_baseline = true;
	memset(&o.baseline, 0, sizeof(o.baseline));
	o.baseline.idx[1] = 3; /* X=1 Y=4 */
	CHECK(!run_surface(&t, &sp, &f, &o, "X=1..5", "Y=1..4", cmd));
	CHECK_STR(tried(&t, buf, sizeof(buf)), "1,4 2,4 1,3 3,4 2,3 3,3 2,2 4,3 3,2 4,2 3,1");
	CHECK_STR(best(&t, buf, sizeof(buf)), "X=3 Y=2");
	tune_release(&t);
	tune_space_release(&sp);
	o.has_baseline = false;

	/* a failing configuration: said, marked, never best */
	o.strategy = TUNE_GREEDY;
	o.warn = &(struct lp_warner){ warn_fn, NULL };
	f.fail_x = 3;
	CHECK(!run_surface(&t, &sp, &f, &o, "X=1..5", "Y=1..4", cmd));
	CHECK_STR(tried(&t, buf, sizeof(buf)), "1,1 2,1 1,2 3,1 2,2 3,2 2,3");
	CHECK(t.entries[3].failed);
	CHECK_STR(t.entries[3].why, "fake exited with status 1");
	CHECK_STR(warned, "X=3 Y=2 failed: fake exited with status 1");
	CHECK_STR(best(&t, buf, sizeof(buf)), "X=2 Y=2");
	tune_release(&t);
	tune_space_release(&sp);
	/* the baseline failing ends it */
	{
		char err[256];

		f.fail_x = 1;
		memset(&sp, 0, sizeof(sp));
		CHECK(!tune_space_add(&sp, "X=1..5", 0, err, sizeof(err)));
		CHECK(!tune_space_add(&sp, "Y=1..4", 0, err, sizeof(err)));
		CHECK(!tune_space_add_prog(&sp, cmd, err, sizeof(err)));
		tune_init(&t, &sp, &o);
		CHECK_EQ_U64(tune_run(&t, err, sizeof(err)), (uint64_t)-ECHILD);
		CHECK_STR(err, "the baseline X=1 Y=1 failed: fake exited with status 1");
		tune_release(&t);
		tune_space_release(&sp);
		f.fail_x = 0;
	}
	o.warn = NULL;
}

static void test_corun(void)
{
	char *cmd[] = { "fake", "{A}", "1", NULL, "fake", "3", "{B}", NULL };
	struct tune_opts o = { .strategy = TUNE_CORUN, .repeat = 1, .max_repeat = 3, .noise_pct = 2 };
	struct tune_space sp;
	struct tune t;
	struct fake f = { .mode = 1 };
	char buf[1024];

	CHECK(!run_surface(&t, &sp, &f, &o, "A=1..5", "B=1..4", cmd));
	CHECK_STR(tried(&t, buf, sizeof(buf)), "1,1 2,1 1,2 3,1 2,2 4,1 3,2");
	CHECK_STR(best(&t, buf, sizeof(buf)), "A=3 B=1");
	CHECK_EQ_U64(sp.params[1].prog, 1);
	/* (3,2) ties with (3,1): both run up to --max-repeat before it is decided */
	CHECK_EQ_U64(t.entries[6].n, 3);
	CHECK_EQ_U64(t.entries[3].n, 3);
	tune_release(&t);
	tune_space_release(&sp);
}

static void test_prodcons(void)
{
	char *cmd[] = { "fake", "{P}", "{C}", "{T}", NULL };
	struct tune_opts o = { .strategy = TUNE_PRODCONS,
		               .repeat = 1,
		               .max_repeat = 3,
		               .noise_pct = 2,
		               .producers = 0,
		               .consumers = 1,
		               .tile = 2,
		               .verdict = fake_verdict };
	struct tune_space sp = { 0 };
	struct tune t;
	struct fake f = { .mode = 2 };
	char err[256], buf[1024];

	CHECK(!tune_space_add(&sp, "P=1..3", 0, err, sizeof(err)));
	CHECK(!tune_space_add(&sp, "C=1..4", 0, err, sizeof(err)));
	CHECK(!tune_space_add(&sp, "T=240", 0, err, sizeof(err)));
	CHECK(!tune_space_add_prog(&sp, cmd, err, sizeof(err)));
	o.measure = fake_measure;
	o.measure_ctx = &f;
	tune_init(&t, &sp, &o);
	CHECK(!tune_run(&t, err, sizeof(err)));
	/* consumers slow: C up to 3; tiles 120, 80, 60 better, 48 not; then
	 * the threads again (none better): stop */
	CHECK_STR(tried(&t, buf, sizeof(buf)),
	          "1,1,240 1,2,240 1,3,240 1,4,240 1,3,120 1,3,80 1,3,60 1,3,48 2,3,60 1,4,60 1,2,60");
	CHECK_STR(best(&t, buf, sizeof(buf)), "P=1 C=3 T=60");
	CHECK_STR(t.verdict, "consumer side (tid 2) is slow");
	CHECK_EQ_U64(t.slow, 1);
	/* 11 configurations, the verdict's run, and 4 more: T=48 is 3 % from
	 * the best, within twice the noise, so both ran up to --max-repeat */
	CHECK_EQ_U64(t.runs, 16);
	CHECK_EQ_U64(t.entries[7].n, 3);
	CHECK_EQ_U64(t.entries[6].n, 3);
	CHECK_STR(t.stop, "the threads did not change after the tile");
	tune_release(&t);
	tune_space_release(&sp);
}

static void test_noise(void)
{
	/* the baseline's runs spread by 10 %: the noise is 10 %, not 2 % */
	static const double jit[] = { 0.0, 0.05, -0.05 };
	char *cmd[] = { "fake", "{X}", "2", NULL };
	struct tune_opts o = { .strategy = TUNE_GRID, .repeat = 3, .max_repeat = 5, .noise_pct = 2 };
	struct tune_space sp;
	struct tune t;
	struct fake f = { .mode = 3, .jit = jit, .njit = 3 };
	char err[256];

	memset(&sp, 0, sizeof(sp));
	CHECK(!tune_space_add(&sp, "X=3,2,4", 0, err, sizeof(err)));
	CHECK(!tune_space_add_prog(&sp, cmd, err, sizeof(err)));
	o.measure = fake_measure;
	o.measure_ctx = &f;
	tune_init(&t, &sp, &o);
	CHECK(!tune_run(&t, err, sizeof(err)));
	CHECK(fabs(t.noise - 0.10) < 1e-9);
	CHECK(fabs(t.baseline_spread - 0.10) < 1e-9);
	/* 20 ms against 28 ms: 29 % apart, beyond twice the noise: no more runs */
	CHECK_EQ_U64(t.entries[1].n, 3);
	CHECK_EQ_U64(t.best, 0);
	CHECK(fabs(t.entries[0].med_seconds - 0.020) < 1e-12);
	tune_release(&t);
	/* a space of one configuration: the baseline alone, run once */
	tune_space_release(&sp);
	memset(&sp, 0, sizeof(sp));
	{
		static const double none[] = { 0.0 };
		char *cmd2[] = { "fake", "{X}", "{Y}", NULL };

		f.jit = none;
		f.njit = 1;
		o.repeat = 1;
		o.noise_pct = 2;
		CHECK(!tune_space_add(&sp, "X=3", 0, err, sizeof(err)));
		CHECK(!tune_space_add(&sp, "Y=2", 0, err, sizeof(err)));
		CHECK(!tune_space_add_prog(&sp, cmd2, err, sizeof(err)));
		tune_init(&t, &sp, &o);
		CHECK(!tune_run(&t, err, sizeof(err)));
		CHECK_EQ_U64(t.runs, 1);
		tune_release(&t);
	}
	tune_space_release(&sp);
}

int main(void)
{
	test_space();
	test_strategies();
	test_corun();
	test_prodcons();
	test_noise();
	return check_summary();
}
