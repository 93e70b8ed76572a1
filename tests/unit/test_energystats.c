/* Unit test of the energy statistics (host/lib/analysis/energystats) and of
 * `report --energy` (host/lib/export/energyreport, the builtin): synthetic
 * traces of function events with counter records (encoder_counter), fed
 * through walk_begin/walk_feed beside ctrstats, and a model with known
 * coefficients: each function's self and inclusive time (nested calls,
 * recursion counted once), the energy of the program, its CPUs, threads and
 * functions by the formulas of energystats.h, the threads' sum and the
 * difference from the program, the sort orders; then the same traces as
 * files through energyreport_write and `layerprof report --energy` (text,
 * json; a trace without counters, a model needing events the trace lacks,
 * a model of another architecture, bad options).
 *
 * usage: test_energystats [<path of layerprof>] */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/ctrevent.h"
#include "common/encoder.h"
#include "host/lib/analysis/ctrstats.h"
#include "host/lib/analysis/energystats.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/export/energyreport.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/jsonread.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"
#include "tests/unit/ctrtrace.h"

/* The functions the traces call: named by the symbolizer from this
 * executable's own symbols. */
#define BODY __asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop")
__attribute__((noinline, used)) void en_main(void)
{
	BODY;
}
__attribute__((noinline, used)) void en_outer(void)
{
	BODY;
}
__attribute__((noinline, used)) void en_inner(void)
{
	BODY;
}
__attribute__((noinline, used)) void en_recurse(void)
{
	BODY;
}

#define FN(f) ((uint64_t)(uintptr_t)(f))
#define V(...) ((const uint64_t[]){ __VA_ARGS__ })

/* The model of the tests: c0 2 W, 4 CPUs; 1e-6 J per task-clock ns, 1e-3 J
 * per page fault. */
#define C0 2.0
#define CPUS 4u
#define K_CLOCK 1e-6
#define K_FAULT 1e-3

static const char *layerprof;
static char root[256];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* The energy the formulas give: c0 * seconds * share + the counts'. */
static double joules(uint64_t ns, double share, uint64_t clock, uint64_t faults)
{
	return C0 * ((double)ns / 1e9) * share + K_CLOCK * (double)clock + K_FAULT * (double)faults;
}

/* Equal but for rounding. */
static int near(double got, double want, const char *what)
{
	if (fabs(got - want) <= 1e-12 * (fabs(want) > 1 ? fabs(want) : 1))
		return CHECK(1);
	CHECK(0);
	printf("  %s: got %.17g, want %.17g\n", what, got, want);
	return 0;
}

static void model_init(struct emodel *m, const char *arch)
{
	memset(m, 0, sizeof(*m));
	m->version = EMODEL_VERSION;
	snprintf(m->machine.arch, sizeof(m->machine.arch), "%s", arch);
	snprintf(m->machine.cpu, sizeof(m->machine.cpu), "test cpu");
	m->machine.cpus = CPUS;
	snprintf(m->c0.name, sizeof(m->c0.name), "const");
	m->c0.coef = C0;
	snprintf(m->terms[0].name, sizeof(m->terms[0].name), "task-clock");
	m->terms[0].coef = K_CLOCK;
	snprintf(m->terms[1].name, sizeof(m->terms[1].name), "page-faults");
	m->terms[1].coef = K_FAULT;
	m->nterms = 2;
}

/* ------------------------------------------------------------ traces */

static void put_cpu(struct trace *t, uint64_t ns, uint8_t kind, uint32_t cpu, const uint64_t *v)
{
	struct ctrevent c = { .kind = kind, .cpu = cpu, .n = 2 };

	memcpy(c.values, v, 2 * sizeof(v[0]));
	encoder_counter(t->e, ns, &c);
}

static void enter(struct trace *t, uint64_t ns, uint64_t fn, const uint64_t *v)
{
	encoder_entry(t->e, ns, fn);
	put(t, ns, LP_CTR_ENTRY, fn, 2, v);
}

static void leave(struct trace *t, uint64_t ns, uint64_t fn, const uint64_t *v)
{
	encoder_exit(t->e, ns, fn);
	put(t, ns, LP_CTR_EXIT, fn, 2, v);
}

/* Thread 10: main { outer { inner; inner } } from ns 1 to 1001; the
 * numbers are task-clock and page-faults. */
static void nested_trace(struct trace *t, const char *extra)
{
	trace_init(t, "task-clock,page-faults", extra);
	thread_begin(t, 10, 10);
	put(t, 1, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(t, 101, FN(en_main), V(100, 1));
	enter(t, 201, FN(en_outer), V(200, 2));
	enter(t, 301, FN(en_inner), V(300, 3));
	leave(t, 401, FN(en_inner), V(360, 5));
	enter(t, 501, FN(en_inner), V(400, 5));
	leave(t, 601, FN(en_inner), V(440, 6));
	leave(t, 701, FN(en_outer), V(500, 8));
	leave(t, 901, FN(en_main), V(1000, 10));
	put(t, 1001, LP_CTR_END, 0, 2, V(1100, 11));
	thread_flush(t);
}

/* Threads 20 (1 to 30, then the recorder's totals at 40 and 41 in its
 * stream) and 21 (2 to 32) of pid 20 each call inner once. */
static void threads_trace(struct trace *t)
{
	trace_init(t, "task-clock,page-faults", NULL);
	thread_begin(t, 20, 20);
	put(t, 1, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(t, 10, FN(en_inner), V(10, 1));
	leave(t, 20, FN(en_inner), V(40, 3));
	put(t, 30, LP_CTR_END, 0, 2, V(100, 5));
	thread_flush(t);
	thread_begin(t, 20, 21);
	put(t, 2, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(t, 12, FN(en_inner), V(5, 0));
	leave(t, 22, FN(en_inner), V(25, 1));
	put(t, 32, LP_CTR_END, 0, 2, V(50, 2));
	thread_flush(t);
	thread_begin(t, 20, 20);
	put_cpu(t, 40, LP_CTR_CPU, 1, V(300, 12));
	put_cpu(t, 40, LP_CTR_CPU, 0, V(200, 8));
	put_cpu(t, 41, LP_CTR_PROCESS, 0, V(500, 20));
	thread_flush(t);
}

/* ------------------------------------------------------------ the statistics */

/* A fed walk with both builders and the results. */
struct fed {
	struct walk w;
	struct ctrstats st;
	struct energystats es;
	struct ctrstats_result res;
	struct energystats_result er;
	struct emodel m;
	uint32_t map[EMODEL_TERMS_MAX];
	int r;
};

static void feed(struct fed *f, struct trace *t, bool per_thread, enum energystats_sort sort)
{
	struct walk_ops ops = { 0 }, eops = { 0 };
	struct ctrstats_order order;
	char err[256];

	memset(f, 0, sizeof(*f));
	model_init(&f->m, "x86_64");
	if (walk_open(&f->w, NULL, NULL, err, sizeof(err)))
		die("walk_open");
	ctrstats_init(&f->st, &f->w, per_thread ? CTRSTATS_PER_THREAD : 0);
	energystats_init(&f->es, &f->w, per_thread ? ENERGYSTATS_PER_THREAD : 0);
	ctrstats_walk_ops(&f->st, &ops);
	energystats_walk_ops(&f->es, &eops);
	walk_chain(&ops, &eops);
	CHECK_EQ_U64(walk_begin(&f->w, &ops), 0);
	for (uint32_t i = 0; i < t->n; i++)
		CHECK_EQ_U64(walk_feed(&f->w, t->type[i], t->payload[i], t->len[i]), 0);
	walk_end(&f->w);
	CHECK(!f->st.oom && !f->es.oom);
	ctrstats_order_default(&order);
	f->r = ctrstats_collect(&f->st, &order, &f->res, err, sizeof(err));
	if (!f->r)
		f->r = emodel_bind(&f->m, (const char(*)[EMODEL_NAME_MAX])f->res.names, f->res.n, f->map, err,
		                   sizeof(err));
	if (!f->r)
		f->r = energystats_collect(&f->es, &f->m, f->map, &f->res, sort, &f->er);
	CHECK_EQ_U64(f->r, 0);
}

static void fed_release(struct fed *f)
{
	energystats_result_release(&f->er);
	ctrstats_result_release(&f->res);
	energystats_release(&f->es);
	ctrstats_release(&f->st);
	walk_release(&f->w);
}

static const struct energystats_fn_row *fn_row(const struct fed *f, const char *name, uint32_t tid)
{
	for (size_t i = 0; i < f->er.nfns; i++)
		if (!strcmp(f->er.fns[i].fn->name, name) && (!tid || f->er.fns[i].fn->tid == tid))
			return &f->er.fns[i];
	printf("  no function row '%s'\n", name);
	CHECK(0);
	return NULL;
}

/* A function's times and its energy from them and its counts. */
static void check_fn(const struct fed *f, const char *name, uint32_t tid, uint64_t incl_ns, uint64_t self_ns,
                     const uint64_t *incl, const uint64_t *self)
{
	const struct energystats_fn_row *r = fn_row(f, name, tid);

	if (!r)
		return;
	if (!CHECK_EQ_U64(r->incl.ns, incl_ns) || !CHECK_EQ_U64(r->self.ns, self_ns))
		printf("  times of %s\n", name);
	near(r->incl.joules, joules(incl_ns, 1.0 / CPUS, incl[0], incl[1]), name);
	near(r->self.joules, joules(self_ns, 1.0 / CPUS, self[0], self[1]), name);
	near(r->self.constant, C0 * ((double)self_ns / 1e9) / CPUS, name);
	near(r->incl.watts, r->incl.joules / ((double)incl_ns / 1e9), name);
}

static void test_nested(void)
{
	struct trace t;
	struct fed f;
	double prog;

	nested_trace(&t, NULL);
	feed(&f, &t, false, ENERGYSTATS_SORT_INCL);
	if (f.r)
		goto out;
	CHECK_EQ_U64(f.er.cpus, CPUS);
	/* from the first event (the MAP and BEGIN at 1) to the END at 1001 */
	CHECK_EQ_U64(f.er.t0_ns, 1);
	CHECK_EQ_U64(f.er.t1_ns, 1001);
	CHECK_EQ_U64(f.er.nfns, 3);
	check_fn(&f, "en_inner", 0, 200, 200, V(100, 3), V(100, 3));
	check_fn(&f, "en_outer", 0, 500, 300, V(300, 6), V(200, 3));
	check_fn(&f, "en_main", 0, 800, 300, V(900, 9), V(600, 3));
	/* by inclusive energy */
	CHECK_STR(f.er.fns[0].fn->name, "en_main");
	CHECK_STR(f.er.fns[1].fn->name, "en_outer");
	CHECK_STR(f.er.fns[2].fn->name, "en_inner");
	/* no PROCESS record: the program is its thread's counts, over 1000 ns */
	CHECK(f.er.has_program);
	prog = joules(1000, 1.0, 1100, 11);
	near(f.er.program.joules, prog, "program");
	near(f.er.program.constant, C0 * 1000e-9, "program's constant");
	near(f.er.program.watts, prog / 1000e-9, "program's watts");
	if (CHECK_EQ_U64(f.er.nthreads, 1)) {
		CHECK_EQ_U64(f.er.threads_rows[0].e.ns, 1000);
		near(f.er.threads_rows[0].e.joules, joules(1000, 1.0 / CPUS, 1100, 11), "thread 10");
	}
	/* the difference: the constant of the 3 CPUs the thread did not use */
	near(f.er.threads.joules, joules(1000, 1.0 / CPUS, 1100, 11), "threads");
	near(f.er.rest_constant, C0 * 1000e-9 * 3 / CPUS, "rest constant");
	near(f.er.rest_events, 0, "rest events");
	CHECK_EQ_U64(f.er.ncpus, 0);
	CHECK_EQ_U64(f.es.untimed_rows, 0);
	fed_release(&f);

	/* by self energy: main (600, 3; 300 ns), outer (200, 3; 300 ns), inner */
	feed(&f, &t, false, ENERGYSTATS_SORT_SELF);
	if (!f.r && CHECK_EQ_U64(f.er.nfns, 3)) {
		CHECK_STR(f.er.fns[0].fn->name, "en_main");
		CHECK_STR(f.er.fns[1].fn->name, "en_outer");
		CHECK_STR(f.er.fns[2].fn->name, "en_inner");
	}
	fed_release(&f);
	/* by calls: inner (2), then main and outer (1) by inclusive energy */
	feed(&f, &t, false, ENERGYSTATS_SORT_CALLS);
	if (!f.r && CHECK_EQ_U64(f.er.nfns, 3)) {
		CHECK_STR(f.er.fns[0].fn->name, "en_inner");
		CHECK_STR(f.er.fns[1].fn->name, "en_main");
		CHECK_STR(f.er.fns[2].fn->name, "en_outer");
	}
out:
	fed_release(&f);
	trace_release(&t);
}

static void test_recursion(void)
{
	struct trace t;
	struct fed f;

	trace_init(&t, "task-clock,page-faults", NULL);
	thread_begin(&t, 10, 10);
	put(&t, 1, LP_CTR_BEGIN, 0, 2, V(0, 0));
	enter(&t, 10, FN(en_recurse), V(0, 0));
	enter(&t, 20, FN(en_recurse), V(10, 0));
	enter(&t, 30, FN(en_recurse), V(30, 1));
	leave(&t, 40, FN(en_recurse), V(40, 1));  /* 10 ns, self 10 */
	leave(&t, 50, FN(en_recurse), V(70, 2));  /* 30 ns, self 20 */
	leave(&t, 60, FN(en_recurse), V(100, 2)); /* 50 ns, self 20 */
	put(&t, 70, LP_CTR_END, 0, 2, V(120, 3));
	thread_flush(&t);
	feed(&f, &t, false, ENERGYSTATS_SORT_INCL);
	/* the outermost call's time and counts once; self of all three */
	if (!f.r)
		check_fn(&f, "en_recurse", 0, 50, 50, V(100, 2), V(100, 2));
	fed_release(&f);
	trace_release(&t);
}

static void test_threads(void)
{
	struct trace t;
	struct fed f;
	double life;

	threads_trace(&t);
	feed(&f, &t, false, ENERGYSTATS_SORT_INCL);
	if (f.r)
		goto out;
	/* the program: the recorder's counts over 1 to 41 */
	CHECK_EQ_U64(f.er.t1_ns - f.er.t0_ns, 40);
	near(f.er.program.joules, joules(40, 1.0, 500, 20), "program");
	if (CHECK_EQ_U64(f.er.ncpus, 2)) {
		CHECK_EQ_U64(f.er.cpus_rows[0].c->cpu, 0);
		near(f.er.cpus_rows[0].e.joules, joules(40, 1.0 / CPUS, 200, 8), "CPU 0");
		near(f.er.cpus_rows[1].e.joules, joules(40, 1.0 / CPUS, 300, 12), "CPU 1");
	}
	/* thread 20 lives 1 to 41 (the totals are in its stream), 21 2 to 32 */
	if (CHECK_EQ_U64(f.er.nthreads, 2)) {
		CHECK_EQ_U64(f.er.threads_rows[0].t->s->tid, 20);
		CHECK_EQ_U64(f.er.threads_rows[0].e.ns, 40);
		near(f.er.threads_rows[0].e.joules, joules(40, 1.0 / CPUS, 100, 5), "thread 20");
		CHECK_EQ_U64(f.er.threads_rows[1].e.ns, 30);
		near(f.er.threads_rows[1].e.joules, joules(30, 1.0 / CPUS, 50, 2), "thread 21");
	}
	life = 70e-9;
	near(f.er.threads.joules, joules(70, 1.0 / CPUS, 150, 7), "threads");
	near(f.er.rest_constant, C0 * 40e-9 - C0 * life / CPUS, "rest constant");
	near(f.er.rest_events, K_CLOCK * 350 + K_FAULT * 13, "rest events");
	near(f.er.program.joules - f.er.threads.joules, f.er.rest_constant + f.er.rest_events, "difference");
	check_fn(&f, "en_inner", 0, 20, 20, V(50, 3), V(50, 3));
	fed_release(&f);

	/* one row per function and thread */
	feed(&f, &t, true, ENERGYSTATS_SORT_INCL);
	if (!f.r && CHECK_EQ_U64(f.er.nfns, 2)) {
		check_fn(&f, "en_inner", 20, 10, 10, V(30, 2), V(30, 2));
		check_fn(&f, "en_inner", 21, 10, 10, V(20, 1), V(20, 1));
	}
out:
	fed_release(&f);
	trace_release(&t);
}

static void test_measured(void)
{
	struct energystats_result er = { .t0_ns = 0, .t1_ns = 2000000000 };

	er.program.joules = 11.0;
	CHECK(energystats_measured_add(&er, "rapl:package-0", 10.0));
	CHECK_EQ_U64(er.nmeasured, 1);
	CHECK_STR(er.measured[0].source, "rapl:package-0");
	near(er.measured[0].watts, 5.0, "measured watts");
	near(er.measured[0].error_pct, 10.0, "error");
	for (uint32_t i = 1; i < ENERGYSTATS_MEASURED_MAX; i++)
		CHECK(energystats_measured_add(&er, "x", 1.0));
	CHECK(!energystats_measured_add(&er, "x", 1.0));
}

/* ------------------------------------------------------------ reports from files */

/* energyreport_write with model m into memory; returns its value, *out the
 * text. */
static int report_to(const char *dir, const struct emodel *m, enum export_report_format fmt, char **out, char *err,
                     size_t errlen)
{
	struct energyreport_opts o = { .fmt = fmt, .model = m, .model_path = "m.json" };
	size_t len = 0;
	struct walk w;
	FILE *f;
	int r;

	*out = NULL;
	if (walk_open(&w, dir, NULL, err, errlen))
		die("walk_open");
	f = open_memstream(out, &len);
	if (!f)
		die("open_memstream");
	r = energyreport_write(&w, &o, f, err, errlen);
	fclose(f);
	walk_release(&w);
	return r;
}

/* energyreport_other_machine on a trace of arch (NULL: no key) and a
 * model of model_arch. */
static bool other_machine(const char *arch, const char *model_arch)
{
	char meta[128], buf[256];
	struct emodel m;
	struct walk w;
	bool other;
	int n;

	model_init(&m, model_arch);
	if (walk_open(&w, NULL, NULL, buf, sizeof(buf)))
		die("walk_open");
	n = snprintf(meta, sizeof(meta), "layerprof=test\n%s%s%s", arch ? "arch=" : "", arch ? arch : "",
	             arch ? "\n" : "");
	CHECK_EQ_U64(walk_begin(&w, NULL), 0);
	CHECK_EQ_U64(walk_feed(&w, LP_CHUNK_META, (const uint8_t *)meta, (size_t)n), 0);
	walk_end(&w);
	other = energyreport_other_machine(&w, &m, buf, sizeof(buf));
	walk_release(&w);
	return other;
}

static void test_other_machine(void)
{
	CHECK(!other_machine("x86_64", "x86_64"));
	CHECK(other_machine("x86_64", "aarch64"));
	CHECK(!other_machine("aarch64", "arm64"));
	CHECK(!other_machine("arm", "armv7l"));
	CHECK(other_machine("arm", "aarch64"));
	/* nothing known of the trace's machine */
	CHECK(!other_machine("generic", "aarch64"));
	CHECK(!other_machine(NULL, "aarch64"));
}

static void test_report_files(void)
{
	char dir[512], err[512], *out;
	struct json_object *j, *o;
	struct emodel m;
	struct trace t;

	model_init(&m, "x86_64");
	trace_init(&t, NULL, NULL);
	thread_begin(&t, 30, 30);
	encoder_entry(t.e, 10, FN(en_main));
	encoder_exit(t.e, 20, FN(en_main));
	thread_flush(&t);
	trace_write(root, &t, "plain", dir, sizeof(dir));
	trace_release(&t);
	CHECK_EQ_U64(report_to(dir, &m, EXPORT_REPORT_TEXT, &out, err, sizeof(err)), -ENODATA);
	CHECK(strstr(err, "was not recorded with --counters") != NULL);
	CHECK(out && !*out);
	free(out);

	nested_trace(&t, "arch=x86_64\n");
	trace_write(root, &t, "nested", dir, sizeof(dir));
	trace_release(&t);
	CHECK_EQ_U64(report_to(dir, &m, EXPORT_REPORT_JSON, &out, err, sizeof(err)), 0);
	j = out ? jsonread_parse(out, strlen(out), err, sizeof(err)) : NULL;
	if (CHECK(j != NULL)) {
		o = jsonread_get(jsonread_get(j, "program"), "estimated");
		near(jsonread_f64(jsonread_get(o, "joules"), 0), round(joules(1000, 1.0, 1100, 11) * 1e9) / 1e9,
		     "json program");
		CHECK_EQ_U64(jsonread_u64(jsonread_get(o, "ns"), 0), 1000);
		CHECK_EQ_U64(jsonread_count(jsonread_get(j, "warnings")), 0);
		o = jsonread_at(jsonread_get(j, "functions"), 0);
		CHECK_STR(jsonread_str(jsonread_get(o, "name")), "en_main");
		CHECK_EQ_U64(jsonread_u64(jsonread_get(jsonread_get(o, "self"), "ns"), 0), 300);
		jsonread_release(j);
	}
	free(out);
	CHECK_EQ_U64(report_to(dir, &m, EXPORT_REPORT_TEXT, &out, err, sizeof(err)), 0);
	CHECK(out && strstr(out, "each thread's constant share is c0 / 4 × its lifetime (the paper's division"));
	CHECK(out && strstr(out, "the constant of CPUs no thread of the program used"));
	CHECK(out && !strstr(out, "warning"));
	free(out);

	/* another architecture: said, the report made */
	model_init(&m, "aarch64");
	CHECK_EQ_U64(report_to(dir, &m, EXPORT_REPORT_TEXT, &out, err, sizeof(err)), 0);
	CHECK(out && strstr(out, "# warning: the model was made on aarch64 (test cpu), the trace recorded on x86_64"));
	free(out);

	/* another name of the same architecture: no warning */
	model_init(&m, "amd64");
	CHECK_EQ_U64(report_to(dir, &m, EXPORT_REPORT_TEXT, &out, err, sizeof(err)), 0);
	CHECK(out && !strstr(out, "warning"));
	free(out);
	model_init(&m, "aarch64");

	/* events the trace lacks */
	snprintf(m.terms[1].name, sizeof(m.terms[1].name), "instructions");
	CHECK_EQ_U64(report_to(dir, &m, EXPORT_REPORT_TEXT, &out, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "the model needs instructions") != NULL);
	if (!CHECK(strstr(err, "task-clock, page-faults (record it with --counters=task-clock,instructions)")))
		printf("  %s\n", err);
	CHECK(out && !*out);
	free(out);
}

/* Runs layerprof with args; returns its exit status, *out its output. */
static int run(const char *args, char **out)
{
	char cmd[2048];
	size_t len, cap = 65536;
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
	char args[1024], model[512], err[256], *out;
	struct json_object *j;
	struct emodel m;

	model_init(&m, "x86_64");
	snprintf(model, sizeof(model), "%s/model.json", root);
	if (!CHECK_EQ_U64(emodel_save(&m, model, err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	snprintf(args, sizeof(args), "report --energy --model %s --format json -s self %s/nested", model, root);
	CHECK_EQ_U64(run(args, &out), 0);
	j = jsonread_parse(out, strlen(out), err, sizeof(err));
	if (CHECK(j != NULL)) {
		CHECK_STR(jsonread_str(jsonread_get(j, "sort")), "self");
		near(jsonread_f64(jsonread_get(jsonread_get(jsonread_get(j, "program"), "estimated"), "joules"), 0),
		     round(joules(1000, 1.0, 1100, 11) * 1e9) / 1e9, "command's program");
		jsonread_release(j);
	} else {
		printf("  %s\n", out);
	}
	free(out);
	snprintf(args, sizeof(args), "report --energy --model %s %s/plain", model, root);
	CHECK_EQ_U64(run(args, &out), 1);
	CHECK(strstr(out, "layerprof report: the trace '") && strstr(out, "' was not recorded with --counters\n"));
	free(out);
	snprintf(args, sizeof(args), "report --energy %s/nested", root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	snprintf(args, sizeof(args), "report --model %s %s/nested", model, root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	snprintf(args, sizeof(args), "report --energy --model %s --counters %s/nested", model, root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	snprintf(args, sizeof(args), "report --energy --model %s --format xml %s/nested", model, root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	snprintf(args, sizeof(args), "report --energy --model %s -s avg %s/nested", model, root);
	CHECK_EQ_U64(run(args, &out), 2);
	free(out);
	snprintf(args, sizeof(args), "report --energy --model %s/nope.json %s/nested", root, root);
	CHECK_EQ_U64(run(args, &out), 1);
	free(out);
	snprintf(args, sizeof(args), "report --energy --model %s %s/missing", model, root);
	CHECK_EQ_U64(run(args, &out), 3);
	free(out);
	/* a model of another architecture: a warning, the report made */
	model_init(&m, "aarch64");
	if (CHECK_EQ_U64(emodel_save(&m, model, err, sizeof(err)), 0)) {
		snprintf(args, sizeof(args), "report --energy --model %s %s/nested", model, root);
		CHECK_EQ_U64(run(args, &out), 0);
		CHECK(strstr(out, "layerprof report: warning: the model was made on aarch64") != NULL);
		free(out);
	}
}

int main(int argc, char **argv)
{
	char cmd[600];

	layerprof = argc > 1 ? argv[1] : NULL;
	snprintf(root, sizeof(root), "/tmp/lp-energystats-XXXXXX");
	if (!mkdtemp(root))
		die("mkdtemp");
	test_nested();
	test_recursion();
	test_threads();
	test_measured();
	test_other_machine();
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
