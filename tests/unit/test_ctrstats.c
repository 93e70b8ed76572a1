/* Unit test of the counter statistics (host/lib/analysis/ctrstats) and of
 * `report --counters` (host/lib/export/ctrreport, the builtin): synthetic
 * traces of counter records written with encoder_counter, fed through
 * walk_begin/walk_feed, with exact expected counts: nested functions (self
 * and inclusive), recursion, calls a longjmp left, exits without an
 * entry, calls open at the thread's end, two threads, per-CPU and process
 * totals, multiplexed (scaled) values, IPC, MPKI and miss ratios for
 * chosen numbers and none without their inputs; then the same traces as
 * files through `layerprof report --counters` (text, json, xml against
 * docs/report.xsd when xmllint is there), and a trace without counters
 * refused with exit status 2.
 *
 * usage: test_ctrstats [<path of layerprof>] */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/ctrevent.h"
#include "common/encoder.h"
#include "host/lib/analysis/ctrstats.h"
#include "host/lib/export/ctrreport.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/jsonread.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"
#include "tests/unit/ctrtrace.h"

/* The functions the traces call: named by the symbolizer from this
 * executable's own symbols. */
#define BODY __asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop")
__attribute__((noinline, used)) void ctr_main(void)
{
	BODY;
}
__attribute__((noinline, used)) void ctr_outer(void)
{
	BODY;
}
__attribute__((noinline, used)) void ctr_inner(void)
{
	BODY;
}
__attribute__((noinline, used)) void ctr_recurse(void)
{
	BODY;
}
__attribute__((noinline, used)) void ctr_stray(void)
{
	BODY;
}

#define FN(f) ((uint64_t)(uintptr_t)(f))

static const char *layerprof;
static char root[256];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* ------------------------------------------------------------ traces */

/* A function's entry or exit: the function event, then its counters. */
static void enter(struct trace *t, uint64_t ns, uint64_t fn, uint32_t n, const uint64_t *v)
{
	encoder_entry(t->e, ns, fn);
	put(t, ns, LP_CTR_ENTRY, fn, n, v);
}

static void leave(struct trace *t, uint64_t ns, uint64_t fn, uint32_t n, const uint64_t *v)
{
	encoder_exit(t->e, ns, fn);
	put(t, ns, LP_CTR_EXIT, fn, n, v);
}

/* An END (or CPU, PROCESS) record with times: running[i] of enabled[i]. */
static void put_times(struct trace *t, uint64_t ns, uint8_t kind, uint32_t cpu, uint32_t n, const uint64_t *v,
                      const uint64_t *enabled, const uint64_t *running, bool scaled)
{
	struct ctrevent c = { .kind = kind, .cpu = cpu, .n = n, .flags = LP_CTR_HAS_TIMES };

	if (scaled)
		c.flags |= LP_CTR_SCALED;
	memcpy(c.values, v, n * sizeof(v[0]));
	memcpy(c.enabled, enabled, n * sizeof(v[0]));
	memcpy(c.running, running, n * sizeof(v[0]));
	encoder_counter(t->e, ns, &c);
}

#define V(...) ((const uint64_t[]){ __VA_ARGS__ })

/* A fed walk with the statistics built and collected. */
struct fed {
	struct walk w;
	struct ctrstats st;
	struct ctrstats_result res;
	int collect;
	char err[256];
};

static void feed(struct fed *f, struct trace *t, unsigned flags, const char *sort)
{
	struct walk_ops ops = { 0 };
	struct ctrstats_order order;
	char err[256];

	memset(f, 0, sizeof(*f));
	if (walk_open(&f->w, NULL, NULL, err, sizeof(err)))
		die("walk_open");
	ctrstats_init(&f->st, &f->w, flags);
	ctrstats_walk_ops(&f->st, &ops);
	CHECK_EQ_U64(walk_begin(&f->w, &ops), 0);
	for (uint32_t i = 0; i < t->n; i++)
		CHECK_EQ_U64(walk_feed(&f->w, t->type[i], t->payload[i], t->len[i]), 0);
	walk_end(&f->w);
	CHECK(!f->st.oom);
	if (sort)
		CHECK_EQ_U64(ctrstats_order_parse(&order, sort), 0);
	else
		ctrstats_order_default(&order);
	f->collect = ctrstats_collect(&f->st, &order, &f->res, f->err, sizeof(f->err));
}

static void fed_release(struct fed *f)
{
	ctrstats_result_release(&f->res);
	ctrstats_release(&f->st);
	walk_release(&f->w);
}

static const struct ctrstats_fn_row *fn_row(const struct fed *f, const char *name, uint32_t tid)
{
	for (size_t i = 0; i < f->res.nfns; i++)
		if (!strcmp(f->res.fns[i].name, name) && (!tid || f->res.fns[i].tid == tid))
			return &f->res.fns[i];
	printf("  no function row '%s'\n", name);
	return NULL;
}

static const struct ctrstats_thread_row *thread_row(const struct fed *f, uint32_t tid)
{
	for (uint32_t i = 0; i < f->res.nthreads; i++)
		if (f->res.threads[i].s->tid == tid)
			return &f->res.threads[i];
	printf("  no thread row %u\n", tid);
	return NULL;
}

static void check_counts(const uint64_t *got, const uint64_t *want, uint32_t n, const char *what)
{
	for (uint32_t i = 0; i < n; i++)
		if (!CHECK_EQ_U64(got[i], want[i]))
			printf("  %s, counter %u\n", what, i);
}

static const struct ctrstats_metric *metric(const struct ctrstats_result *res, const char *name)
{
	for (uint32_t i = 0; i < res->nmetrics; i++)
		if (!strcmp(res->metrics[i].name, name))
			return &res->metrics[i];
	return NULL;
}

/* ------------------------------------------------------------ the nested trace */

#define NESTED_COUNTERS "instructions,cycles,cache-misses,cache-references"

/* Thread 10: main { outer { inner; inner } }, then END; the numbers are
 * instructions, cycles, cache-misses, cache-references. */
static void nested_trace(struct trace *t)
{
	trace_init(t, NESTED_COUNTERS,
	           "counters.read=read\ncounters.scope=user\ncounters.unavailable=LLC-loads: not supported; "
	           "bus-cycles: no PMU\n");
	thread_begin(t, 10, 10);
	put(t, 100, LP_CTR_BEGIN, 0, 4, V(5, 10, 0, 0));
	enter(t, 200, FN(ctr_main), 4, V(100, 200, 1, 10));
	enter(t, 300, FN(ctr_outer), 4, V(150, 300, 2, 20));
	enter(t, 400, FN(ctr_inner), 4, V(200, 400, 3, 30));
	leave(t, 500, FN(ctr_inner), 4, V(260, 500, 5, 40));
	enter(t, 600, FN(ctr_inner), 4, V(300, 600, 5, 45));
	leave(t, 700, FN(ctr_inner), 4, V(340, 700, 6, 50));
	leave(t, 800, FN(ctr_outer), 4, V(400, 800, 8, 60));
	leave(t, 900, FN(ctr_main), 4, V(1000, 2000, 10, 100));
	put_times(t, 1000, LP_CTR_END, 0, 4, V(1105, 2110, 11, 110), V(900, 900, 900, 900), V(900, 900, 900, 900),
	          false);
	thread_flush(t);
}

static void test_nested(void)
{
	struct trace t;
	struct fed f;
	const struct ctrstats_fn_row *r;
	const struct ctrstats_thread_row *th;
	const struct ctrstats_metric *m;
	double x;

	nested_trace(&t);
	feed(&f, &t, 0, "self:instructions");
	if (!CHECK_EQ_U64(f.collect, 0))
		goto out;
	CHECK_EQ_U64(f.res.n, 4);
	CHECK_STR(f.res.names[2], "cache-misses");
	CHECK_EQ_U64(f.res.nfns, 3);
	if ((r = fn_row(&f, "ctr_inner", 0))) {
		CHECK_EQ_U64(r->calls, 2);
		CHECK_EQ_U64(r->ended, 2);
		check_counts(r->incl, V(100, 200, 3, 15), 4, "inner inclusive");
		check_counts(r->self, V(100, 200, 3, 15), 4, "inner self");
	}
	if ((r = fn_row(&f, "ctr_outer", 0))) {
		CHECK_EQ_U64(r->calls, 1);
		check_counts(r->incl, V(250, 500, 6, 40), 4, "outer inclusive");
		check_counts(r->self, V(150, 300, 3, 25), 4, "outer self");
	}
	if ((r = fn_row(&f, "ctr_main", 0))) {
		CHECK_EQ_U64(r->calls, 1);
		check_counts(r->incl, V(900, 1800, 9, 90), 4, "main inclusive");
		check_counts(r->self, V(650, 1300, 3, 50), 4, "main self");
		CHECK(r->file != NULL && strstr(r->file, "test_ctrstats.c"));
		/* IPC 900/1800, MPKI 1000 * 9/900, ratio 9/90: exact in binary */
		CHECK((m = metric(&f.res, "IPC")) && ctrstats_metric_value(m, r->incl, &x) && x == 0.5);
		CHECK((m = metric(&f.res, "cache-misses MPKI")) && ctrstats_metric_value(m, r->incl, &x) && x == 10.0);
		CHECK((m = metric(&f.res, "cache-misses ratio")) && ctrstats_metric_value(m, r->incl, &x) && x == 0.1);
	}
	CHECK_EQ_U64(f.res.nmetrics, 3);
	/* sorted by self instructions: main 650, outer 150, inner 100 */
	CHECK_STR(f.res.fns[0].name, "ctr_main");
	CHECK_STR(f.res.fns[1].name, "ctr_outer");
	CHECK_STR(f.res.fns[2].name, "ctr_inner");
	if ((th = thread_row(&f, 10))) {
		CHECK(th->has_begin && th->has_end);
		check_counts(th->val.v, V(1100, 2100, 11, 110), 4, "thread 10");
		CHECK(th->val.has_times);
		CHECK(ctrstats_scale(&th->val, 0, &x) && x == 1.0);
		CHECK(!(th->val.flags & LP_CTR_SCALED));
	}
	/* no PROCESS record: the program is its threads */
	CHECK(f.res.has_program && !f.res.from_process);
	check_counts(f.res.program.v, V(1100, 2100, 11, 110), 4, "program");
	CHECK_EQ_U64(f.st.unmatched_exits, 0);
	CHECK_EQ_U64(f.st.unwound, 0);
	CHECK_EQ_U64(f.st.open_at_end, 0);
	CHECK_EQ_U64(f.st.records, 10);
out:
	fed_release(&f);
	trace_release(&t);
}

/* ------------------------------------------------------------ recursion, longjmp */

static void test_recursion(void)
{
	struct trace t;
	struct fed f;
	const struct ctrstats_fn_row *r;

	trace_init(&t, "instructions", NULL);
	thread_begin(&t, 10, 10);
	put(&t, 1, LP_CTR_BEGIN, 0, 1, V(0));
	enter(&t, 10, FN(ctr_recurse), 1, V(0));
	enter(&t, 20, FN(ctr_recurse), 1, V(10));
	enter(&t, 30, FN(ctr_recurse), 1, V(30));
	leave(&t, 40, FN(ctr_recurse), 1, V(40));  /* innermost: 10, self 10 */
	leave(&t, 50, FN(ctr_recurse), 1, V(70));  /* middle: 60, self 50 */
	leave(&t, 60, FN(ctr_recurse), 1, V(100)); /* outer: 100, self 40 */
	put(&t, 70, LP_CTR_END, 0, 1, V(120));
	thread_flush(&t);
	feed(&f, &t, 0, NULL);
	if (CHECK_EQ_U64(f.collect, 0) && (r = fn_row(&f, "ctr_recurse", 0))) {
		CHECK_EQ_U64(r->calls, 3);
		CHECK_EQ_U64(r->incl[0], 100); /* the outermost call only */
		CHECK_EQ_U64(r->self[0], 100);
	}
	/* no cycles: no IPC, no metric at all */
	CHECK_EQ_U64(f.res.nmetrics, 0);
	fed_release(&f);
	trace_release(&t);
}

/* main { outer { inner <longjmp to main> } }, main's exit; an exit
 * without an entry; then outer entered and left open at the END. */
static void test_longjmp(void)
{
	struct trace t;
	struct fed f;
	const struct ctrstats_fn_row *r;

	trace_init(&t, "instructions,cycles", NULL);
	thread_begin(&t, 10, 10);
	put(&t, 1, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(&t, 10, FN(ctr_main), 2, V(10, 20));
	enter(&t, 20, FN(ctr_outer), 2, V(20, 40));
	enter(&t, 30, FN(ctr_inner), 2, V(30, 60));
	/* longjmp: inner and outer never exit */
	put(&t, 40, LP_CTR_EXIT, FN(ctr_main), 2, V(110, 220));
	put(&t, 50, LP_CTR_EXIT, FN(ctr_stray), 2, V(120, 240));
	enter(&t, 60, FN(ctr_outer), 2, V(130, 260));
	put(&t, 70, LP_CTR_END, 0, 2, V(200, 400));
	thread_flush(&t);
	feed(&f, &t, 0, NULL);
	if (!CHECK_EQ_U64(f.collect, 0))
		goto out;
	if ((r = fn_row(&f, "ctr_main", 0))) {
		CHECK_EQ_U64(r->calls, 1);
		CHECK_EQ_U64(r->ended, 1);
		check_counts(r->incl, V(100, 200), 2, "main inclusive");
		check_counts(r->self, V(100, 200), 2, "main self: the left calls' counts are its own");
	}
	if ((r = fn_row(&f, "ctr_inner", 0))) {
		CHECK_EQ_U64(r->calls, 1);
		CHECK_EQ_U64(r->ended, 0);
		CHECK_EQ_U64(r->unwound, 1);
		check_counts(r->incl, V(0, 0), 2, "inner inclusive");
	}
	if ((r = fn_row(&f, "ctr_outer", 0))) {
		/* one call unwound, one open at the END: ended with its values */
		CHECK_EQ_U64(r->calls, 2);
		CHECK_EQ_U64(r->ended, 1);
		CHECK_EQ_U64(r->unwound, 1);
		check_counts(r->incl, V(70, 140), 2, "outer inclusive");
		check_counts(r->self, V(70, 140), 2, "outer self");
	}
	CHECK_EQ_U64(f.st.unwound, 2);
	CHECK_EQ_U64(f.st.unmatched_exits, 1);
	CHECK_EQ_U64(f.st.open_at_end, 1);
	CHECK_EQ_U64(f.res.nfns, 3); /* the stray exit made no row */
	/* IPC = instructions / cycles = 0.5 for every row */
	CHECK_EQ_U64(f.res.nmetrics, 1);
out:
	fed_release(&f);
	trace_release(&t);
}

/* Recursion deeper than CTRSTATS_DEPTH_MAX: the calls below the bound are
 * left out and counted, their exits taken as theirs, and the calls
 * followed keep exact counts. */
static void test_deep(void)
{
	const uint64_t n = CTRSTATS_DEPTH_MAX + 904;
	const struct ctrstats_fn_row *r;
	struct trace t;
	struct fed f;

	trace_init(&t, "instructions", NULL);
	thread_begin(&t, 10, 10);
	put(&t, 1, LP_CTR_BEGIN, 0, 1, V(0));
	for (uint64_t i = 0; i < n; i++)
		enter(&t, 10 + i, FN(ctr_recurse), 1, V(10 * i));
	for (uint64_t i = n; i-- > 0;)
		leave(&t, 10 + 2 * n - i, FN(ctr_recurse), 1, V(10 * (2 * n - 1 - i)));
	put(&t, 20 + 2 * n, LP_CTR_END, 0, 1, V(10 * 2 * n));
	thread_flush(&t);
	feed(&f, &t, 0, NULL);
	if (CHECK_EQ_U64(f.collect, 0) && (r = fn_row(&f, "ctr_recurse", 0))) {
		CHECK_EQ_U64(r->calls, CTRSTATS_DEPTH_MAX);
		CHECK_EQ_U64(r->ended, CTRSTATS_DEPTH_MAX);
		CHECK_EQ_U64(r->incl[0], 10 * (2 * n - 1));
		CHECK_EQ_U64(r->self[0], 10 * (2 * n - 1));
	}
	CHECK_EQ_U64(f.st.deep_dropped, 904);
	CHECK_EQ_U64(f.st.unmatched_exits, 0);
	CHECK_EQ_U64(f.st.open_at_end, 0);
	fed_release(&f);
	trace_release(&t);
}

/* ------------------------------------------------------------ threads, CPUs, process */

/* Threads 20 and 21 of pid 20 call ctr_inner; 21 has no END.  With
 * process: the recorder's totals per CPU and for the program. */
static void threads_trace(struct trace *t, bool process)
{
	trace_init(t, "task-clock,page-faults", NULL);
	thread_begin(t, 20, 20);
	put(t, 1, LP_CTR_BEGIN, 0, 2, V(1, 0));
	enter(t, 10, FN(ctr_inner), 2, V(11, 1));
	leave(t, 20, FN(ctr_inner), 2, V(41, 3));
	/* multiplexed: page-faults ran 400 of 1000 ns, its value scaled x2.5 */
	put_times(t, 30, LP_CTR_END, 0, 2, V(101, 5), V(1000, 1000), V(1000, 400), true);
	thread_flush(t);
	thread_begin(t, 20, 21);
	put(t, 2, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(t, 12, FN(ctr_inner), 2, V(5, 0));
	leave(t, 22, FN(ctr_inner), 2, V(25, 1));
	put(t, 32, LP_CTR_SAMPLE, 0, 2, V(50, 2));
	thread_flush(t);
	if (process) {
		thread_begin(t, 20, 20);
		put_times(t, 40, LP_CTR_CPU, 1, 2, V(300, 12), V(700, 700), V(700, 700), false);
		put_times(t, 40, LP_CTR_CPU, 0, 2, V(200, 8), V(700, 700), V(0, 700), false);
		put_times(t, 41, LP_CTR_PROCESS, 0, 2, V(500, 20), V(1400, 1400), V(1400, 1400), false);
		thread_flush(t);
	}
}

static void test_threads(void)
{
	struct trace t;
	struct fed f;
	const struct ctrstats_thread_row *th;
	const struct ctrstats_fn_row *r;
	double x;

	threads_trace(&t, false);
	feed(&f, &t, 0, NULL);
	if (!CHECK_EQ_U64(f.collect, 0))
		goto out;
	CHECK_EQ_U64(f.res.nthreads, 2);
	if ((th = thread_row(&f, 20))) {
		CHECK(th->has_end);
		check_counts(th->val.v, V(100, 5), 2, "thread 20");
		CHECK(th->val.flags & LP_CTR_SCALED);
		CHECK(ctrstats_scale(&th->val, 0, &x) && x == 1.0);
		CHECK(ctrstats_scale(&th->val, 1, &x) && x == 2.5);
	}
	if ((th = thread_row(&f, 21))) {
		CHECK(!th->has_end && th->has_begin);
		check_counts(th->val.v, V(50, 2), 2, "thread 21: its last record");
		CHECK(!ctrstats_scale(&th->val, 0, &x)); /* no times */
	}
	CHECK(f.res.has_program && !f.res.from_process);
	check_counts(f.res.program.v, V(150, 7), 2, "program: the threads' sum");
	CHECK(f.res.program.flags & LP_CTR_SCALED);
	CHECK_EQ_U64(f.res.ncpus, 0);
	CHECK_EQ_U64(f.res.nfns, 1);
	if ((r = fn_row(&f, "ctr_inner", 0))) {
		CHECK_EQ_U64(r->calls, 2);
		check_counts(r->incl, V(50, 3), 2, "inner, both threads");
	}
	CHECK_EQ_U64(f.st.scaled_records, 1);
	fed_release(&f);

	/* one row per thread */
	feed(&f, &t, CTRSTATS_PER_THREAD, "calls");
	if (CHECK_EQ_U64(f.collect, 0) && CHECK_EQ_U64(f.res.nfns, 2)) {
		if ((r = fn_row(&f, "ctr_inner", 20)))
			check_counts(r->incl, V(30, 2), 2, "inner, thread 20");
		if ((r = fn_row(&f, "ctr_inner", 21)))
			check_counts(r->incl, V(20, 1), 2, "inner, thread 21");
	}
	fed_release(&f);
	trace_release(&t);

	threads_trace(&t, true);
	feed(&f, &t, 0, NULL);
	if (!CHECK_EQ_U64(f.collect, 0))
		goto out;
	CHECK(f.res.has_program && f.res.from_process);
	check_counts(f.res.program.v, V(500, 20), 2, "program: the recorder's");
	if (CHECK_EQ_U64(f.res.ncpus, 2)) {
		CHECK_EQ_U64(f.res.cpus[0].cpu, 0);
		check_counts(f.res.cpus[0].val.v, V(200, 8), 2, "CPU 0");
		CHECK_EQ_U64(f.res.cpus[1].cpu, 1);
		check_counts(f.res.cpus[1].val.v, V(300, 12), 2, "CPU 1");
		/* task-clock on CPU 0 never ran: not counted */
		CHECK(ctrstats_scale(&f.res.cpus[0].val, 0, &x) && x == 0.0);
	}
	/* the recorder's records are not the main thread's values */
	if ((th = thread_row(&f, 20)))
		check_counts(th->val.v, V(100, 5), 2, "thread 20 with the process records");
out:
	fed_release(&f);
	trace_release(&t);
}

/* Two threads in the same function at the same time (their chunks
 * interleaved in the file): no recursion, each call's inclusive counts. */
static void test_threads_overlap(void)
{
	struct trace t;
	struct fed f;
	const struct ctrstats_fn_row *r;

	trace_init(&t, "task-clock,page-faults", NULL);
	thread_begin(&t, 20, 20);
	put(&t, 1, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(&t, 10, FN(ctr_inner), 2, V(10, 1));
	thread_flush(&t);
	thread_begin(&t, 20, 21);
	put(&t, 2, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(&t, 12, FN(ctr_inner), 2, V(5, 0));
	leave(&t, 22, FN(ctr_inner), 2, V(25, 4));
	thread_flush(&t);
	thread_begin(&t, 20, 20);
	leave(&t, 30, FN(ctr_inner), 2, V(110, 3));
	put(&t, 31, LP_CTR_END, 0, 2, V(111, 3));
	thread_flush(&t);
	feed(&f, &t, 0, NULL);
	if (CHECK_EQ_U64(f.collect, 0) && (r = fn_row(&f, "ctr_inner", 0))) {
		CHECK_EQ_U64(r->calls, 2);
		check_counts(r->incl, V(120, 6), 2, "inner, both threads at once");
		check_counts(r->self, V(120, 6), 2, "inner's self, both threads at once");
	}
	fed_release(&f);
	trace_release(&t);
}

/* ------------------------------------------------------------ metrics and sorting */

static uint32_t metrics_of(const char *list, struct ctrstats_metric *out)
{
	char names[LP_COUNTERS_MAX][CTRSTATS_NAME_MAX];
	char buf[512], *tok, *save = NULL;
	uint32_t n = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok && n < LP_COUNTERS_MAX; tok = strtok_r(NULL, ",", &save))
		snprintf(names[n++], sizeof(names[0]), "%s", tok);
	return ctrstats_metrics(names, n, out);
}

static void test_metrics(void)
{
	struct ctrstats_metric m[CTRSTATS_METRICS_MAX];
	uint64_t v[LP_COUNTERS_MAX] = { 0 };
	double x;

	CHECK_EQ_U64(metrics_of("task-clock,page-faults,context-switches", m), 0);
	/* misses without instructions nor references: nothing */
	CHECK_EQ_U64(metrics_of("cache-misses,cycles", m), 0);
	CHECK_EQ_U64(metrics_of("instructions,cpu-cycles", m), 1);
	CHECK_STR(m[0].name, "IPC");
	CHECK_EQ_U64(m[0].num, 0);
	CHECK_EQ_U64(m[0].den, 1);
	/* IPC without instructions: none */
	CHECK_EQ_U64(metrics_of("cycles,branch-misses,branch-instructions", m), 1);
	CHECK_STR(m[0].name, "branch-misses ratio");
	CHECK_EQ_U64(m[0].den, 2);
	CHECK_EQ_U64(metrics_of("branches,instructions,branch-misses", m), 2);
	CHECK_STR(m[0].name, "branch-misses MPKI");
	CHECK_STR(m[1].name, "branch-misses ratio");
	CHECK_EQ_U64(m[1].den, 0);
	CHECK_EQ_U64(metrics_of("L1-dcache-load-misses,L1-dcache-loads,LLC-load-misses,LLC-stores", m), 1);
	CHECK_STR(m[0].name, "L1-dcache-load-misses ratio");
	CHECK_EQ_U64(
	    metrics_of("LLC-load-misses:u,LLC-loads:u,instructions:u,cycles:u,dTLB-store-misses,dTLB-stores", m), 5);
	CHECK_STR(m[0].name, "IPC");
	CHECK_STR(m[1].name, "LLC-load-misses:u MPKI");
	CHECK_STR(m[2].name, "LLC-load-misses:u ratio");
	CHECK_STR(m[3].name, "dTLB-store-misses MPKI");
	CHECK_STR(m[4].name, "dTLB-store-misses ratio");
	CHECK_EQ_U64(metrics_of("L1-dcache-prefetch-misses,L1-dcache-prefetches", m), 1);

	/* exact values, and none for a zero denominator */
	metrics_of("instructions,cycles,cache-misses,cache-references", m);
	v[0] = 3000, v[1] = 1200, v[2] = 15, v[3] = 60;
	CHECK(ctrstats_metric_value(&m[0], v, &x) && x == 2.5);
	CHECK(ctrstats_metric_value(&m[1], v, &x) && x == 5.0);
	CHECK(ctrstats_metric_value(&m[2], v, &x) && x == 0.25);
	v[0] = 0, v[1] = 0, v[3] = 0;
	CHECK(!ctrstats_metric_value(&m[0], v, &x));
	CHECK(!ctrstats_metric_value(&m[1], v, &x));
	CHECK(!ctrstats_metric_value(&m[2], v, &x));
}

static void test_sort(void)
{
	struct ctrstats_order o;
	struct trace t;
	struct fed f;

	CHECK_EQ_U64(ctrstats_order_parse(&o, "self:cycles,calls,name"), 0);
	CHECK_EQ_U64(o.nkeys, 3);
	CHECK_EQ_U64(o.keys[0].kind, CTRSTATS_KEY_SELF);
	CHECK_STR(o.keys[0].name, "cycles");
	CHECK_EQ_U64(o.keys[1].kind, CTRSTATS_KEY_CALLS);
	CHECK_EQ_U64(ctrstats_order_parse(&o, "self:"), -EINVAL);
	CHECK_EQ_U64(ctrstats_order_parse(&o, ""), -EINVAL);
	CHECK_EQ_U64(ctrstats_order_parse(&o, "self"), 0);

	nested_trace(&t);
	/* inclusive of the first counter (instructions): main, outer, inner */
	feed(&f, &t, 0, NULL);
	if (CHECK_EQ_U64(f.collect, 0) && CHECK_EQ_U64(f.res.nfns, 3)) {
		CHECK_STR(f.res.fns[0].name, "ctr_main");
		CHECK_STR(f.res.fns[2].name, "ctr_inner");
	}
	fed_release(&f);
	feed(&f, &t, 0, "calls");
	if (CHECK_EQ_U64(f.collect, 0))
		CHECK_STR(f.res.fns[0].name, "ctr_inner");
	fed_release(&f);
	/* by a metric: cache-misses ratio inner 0.2, outer 0.15, main 0.1 */
	feed(&f, &t, 0, "cache-misses ratio");
	if (CHECK_EQ_U64(f.collect, 0)) {
		CHECK_STR(f.res.fns[0].name, "ctr_inner");
		CHECK_STR(f.res.fns[1].name, "ctr_outer");
		CHECK_STR(f.res.fns[2].name, "ctr_main");
	}
	fed_release(&f);
	feed(&f, &t, 0, "self:bogus");
	CHECK_EQ_U64(f.collect, -EINVAL);
	CHECK(strstr(f.err, "'bogus' is not a counter") != NULL);
	CHECK_EQ_U64(f.res.nfns, 0);
	fed_release(&f);
	trace_release(&t);
}

/* ------------------------------------------------------------ reports from files */

/* ctrreport_write into memory; returns its value, *out the text. */
static int report_to(const char *dir, enum export_report_format fmt, const char *sort, char **out, char *err,
                     size_t errlen)
{
	struct ctrreport_opts o = { .fmt = fmt };
	size_t len = 0;
	struct walk w;
	FILE *f;
	int r;

	*out = NULL;
	if (walk_open(&w, dir, NULL, err, errlen))
		die("walk_open");
	if (sort)
		ctrstats_order_parse(&o.order, sort);
	else
		ctrstats_order_default(&o.order);
	f = open_memstream(out, &len);
	if (!f)
		die("open_memstream");
	r = ctrreport_write(&w, &o, f, err, errlen);
	fclose(f);
	walk_release(&w);
	return r;
}

static void test_report_files(void)
{
	char dir[512], err[256], *out;
	struct json_object *j, *a, *o;
	struct trace t;

	/* no counters: refused, nothing written */
	trace_init(&t, NULL, NULL);
	thread_begin(&t, 30, 30);
	encoder_entry(t.e, 10, FN(ctr_main));
	encoder_exit(t.e, 20, FN(ctr_main));
	thread_flush(&t);
	trace_write(root, &t, "plain", dir, sizeof(dir));
	trace_release(&t);
	CHECK_EQ_U64(report_to(dir, EXPORT_REPORT_TEXT, NULL, &out, err, sizeof(err)), -ENODATA);
	CHECK_STR(err, "the trace has no counter values: record with --counters");
	CHECK(out && !*out);
	free(out);

	threads_trace(&t, true);
	trace_write(root, &t, "threads", dir, sizeof(dir));
	trace_release(&t);
	CHECK_EQ_U64(report_to(dir, EXPORT_REPORT_JSON, NULL, &out, err, sizeof(err)), 0);
	j = out ? jsonread_parse(out, strlen(out), err, sizeof(err)) : NULL;
	if (CHECK(j != NULL)) {
		CHECK_STR(jsonread_str(jsonread_at(jsonread_get(j, "counters"), 1)), "page-faults");
		o = jsonread_get(j, "program");
		CHECK_STR(jsonread_str(jsonread_get(o, "source")), "process");
		CHECK_EQ_U64(jsonread_u64(jsonread_get(jsonread_get(o, "values"), "task-clock"), 0), 500);
		a = jsonread_get(j, "threads");
		CHECK_EQ_U64(jsonread_count(a), 2);
		o = jsonread_at(a, 0);
		CHECK_EQ_U64(jsonread_u64(jsonread_get(o, "tid"), 0), 20);
		CHECK(jsonread_f64(jsonread_get(jsonread_get(o, "scale"), "page-faults"), 0) == 2.5);
		CHECK(jsonread_bool(jsonread_get(o, "scaled"), false));
		a = jsonread_get(j, "cpus");
		CHECK_EQ_U64(jsonread_count(a), 2);
		/* a CPU's times are not multiplexing: no scale */
		CHECK_EQ_U64(jsonread_u64(jsonread_get(jsonread_get(jsonread_at(a, 0), "running_ns"), "task-clock"), 1),
		             0);
		CHECK(jsonread_get(jsonread_at(a, 0), "scale") == NULL);
		a = jsonread_get(j, "functions");
		o = jsonread_at(a, 0);
		CHECK_STR(jsonread_str(jsonread_get(o, "name")), "ctr_inner");
		CHECK_EQ_U64(jsonread_u64(jsonread_get(jsonread_get(o, "self"), "task-clock"), 0), 50);
		CHECK_EQ_U64(jsonread_count(jsonread_get(j, "metrics")), 0);
		jsonread_release(j);
	}
	free(out);

	nested_trace(&t);
	trace_write(root, &t, "nested", dir, sizeof(dir));
	trace_release(&t);
	CHECK_EQ_U64(report_to(dir, EXPORT_REPORT_JSON, NULL, &out, err, sizeof(err)), 0);
	j = out ? jsonread_parse(out, strlen(out), err, sizeof(err)) : NULL;
	if (CHECK(j != NULL)) {
		CHECK_STR(jsonread_str(jsonread_get(j, "read")), "read");
		CHECK_STR(jsonread_str(jsonread_get(j, "scope")), "user");
		a = jsonread_get(j, "unavailable");
		CHECK_EQ_U64(jsonread_count(a), 2);
		CHECK_STR(jsonread_str(jsonread_get(jsonread_at(a, 1), "name")), "bus-cycles");
		CHECK_STR(jsonread_str(jsonread_get(jsonread_at(a, 1), "reason")), "no PMU");
		o = jsonread_at(jsonread_get(j, "functions"), 0);
		CHECK_STR(jsonread_str(jsonread_get(o, "name")), "ctr_main");
		CHECK(jsonread_f64(jsonread_get(jsonread_get(o, "derived"), "IPC"), 0) == 0.5);
		CHECK(jsonread_f64(jsonread_get(jsonread_get(o, "derived"), "cache-misses MPKI"), 0) == 10.0);
		jsonread_release(j);
	}
	free(out);
	CHECK_EQ_U64(report_to(dir, EXPORT_REPORT_TEXT, NULL, &out, err, sizeof(err)), 0);
	CHECK(out && strstr(out, "# unavailable: LLC-loads: not supported\n"));
	CHECK(out && strstr(out, "# read at function entry and exit: read(2)"));
	if (!CHECK(out && strstr(out, "# counted in user space only")))
		printf("%s\n", out);
	CHECK(out && strstr(out, "0.524  IPC\n"));
	free(out);
	CHECK_EQ_U64(report_to(dir, EXPORT_REPORT_XML, "self:cycles", &out, err, sizeof(err)), 0);
	CHECK(out && strstr(out, "<derived metric=\"IPC\" inclusive=\"0.5\" self=\"0.5\"/>"));
	free(out);
	CHECK_EQ_U64(report_to(dir, EXPORT_REPORT_TEXT, "incl:nope", &out, err, sizeof(err)), -EINVAL);
	free(out);
}

/* Runs layerprof with args; returns its exit status, *out its output. */
static int run(const char *args, char **out)
{
	char cmd[2048];
	size_t len = 0, cap = 65536;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", layerprof, args);
	*out = malloc(cap);
	p = popen(cmd, "r");
	if (!p || !*out)
		die("popen");
	len = fread(*out, 1, cap - 1, p);
	(*out)[len] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static void test_command(void)
{
	char args[1024], *out;

	snprintf(args, sizeof(args), "report --counters %s/plain", root);
	CHECK_EQ_U64(run(args, &out), 2);
	CHECK_STR(out, "layerprof report: the trace has no counter values: record with --counters\n");
	free(out);
	snprintf(args, sizeof(args), "report --counters -s self:instructions %s/nested", root);
	CHECK_EQ_U64(run(args, &out), 0);
	CHECK(strstr(out, "# functions sorted by self:instructions\n") != NULL);
	free(out);
	snprintf(args, sizeof(args), "report --counters -s self:bogus %s/nested", root);
	CHECK_EQ_U64(run(args, &out), 2);
	CHECK(strstr(out, "invalid --sort: 'bogus' is not a counter of the trace") != NULL);
	free(out);
	snprintf(args, sizeof(args), "report --counters --memory %s/nested", root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	snprintf(args, sizeof(args), "report --counters --format html %s/nested", root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	/* the profile's sort keys still go without --counters */
	snprintf(args, sizeof(args), "report -s self %s/nested", root);
	CHECK_EQ_U64(run(args, &out), 0);
	free(out);
	snprintf(args, sizeof(args), "report -s self:instructions %s/nested", root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	/* the XML against the schema */
	if (system("command -v xmllint >/dev/null 2>&1") == 0) {
		char xml[600];

		snprintf(xml, sizeof(xml), "%s/nested.xml", root);
		snprintf(args, sizeof(args), "report --counters --format xml -o %s %s/nested", xml, root);
		CHECK_EQ_U64(run(args, &out), 0);
		free(out);
		snprintf(args, sizeof(args), "xmllint --noout --schema '%s/docs/report.xsd' '%s' 2>&1", LP_SOURCE_DIR,
		         xml);
		if (!CHECK_EQ_U64(system(args), 0))
			printf("  %s\n", args);
		snprintf(args, sizeof(args), "report --counters --format xml -o %s %s/threads", xml, root);
		CHECK_EQ_U64(run(args, &out), 0);
		free(out);
		snprintf(args, sizeof(args), "xmllint --noout --schema '%s/docs/report.xsd' '%s' 2>&1", LP_SOURCE_DIR,
		         xml);
		if (!CHECK_EQ_U64(system(args), 0))
			printf("  %s\n", args);
	} else {
		printf("skip: xmllint is not installed (libxml2-utils): the XML is not checked against the schema\n");
	}
}

int main(int argc, char **argv)
{
	char cmd[600];

	layerprof = argc > 1 ? argv[1] : NULL;
	snprintf(root, sizeof(root), "/tmp/lp-ctrstats-XXXXXX");
	if (!mkdtemp(root))
		die("mkdtemp");
	test_nested();
	test_recursion();
	test_longjmp();
	test_deep();
	test_threads();
	test_threads_overlap();
	test_metrics();
	test_sort();
	test_report_files();
	if (layerprof)
		test_command();
	else
		printf("skip: no layerprof given: the command is not run\n");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		printf("cannot remove %s\n", root);
	return check_summary();
}
