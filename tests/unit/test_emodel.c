/* Unit test of the energy model's file and arithmetic (host/lib/energy/
 * emodel.c): a model saved and loaded again is the same to the bit
 * (awkward numbers, NaN statistics, escaped strings), bad files are each
 * refused with their message, binding names the missing events and
 * accepts another name of an event, and energy and power are the
 * documented formulas exactly. */
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "host/lib/energy/emodel.h"
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

/* Bitwise equality, so that NaN equals NaN and -0 differs from 0. */
static int same_f64(double a, double b)
{
	return !memcmp(&a, &b, sizeof(a));
}

#define CHECK_F64(a, b)                                                                \
	do {                                                                           \
		if (!CHECK(same_f64((a), (b))))                                        \
			printf("  got %.17g, want %.17g\n", (double)(a), (double)(b)); \
	} while (0)

static void check_term(const struct emodel_term *a, const struct emodel_term *b)
{
	CHECK_STR(a->name, b->name);
	CHECK_F64(a->coef, b->coef);
	CHECK_F64(a->se, b->se);
	CHECK_F64(a->t, b->t);
	CHECK_F64(a->p, b->p);
	CHECK_STR(a->why, b->why);
}

static void check_same(const struct emodel *a, const struct emodel *b)
{
	uint32_t i;

	CHECK_EQ_U64(a->version, b->version);
	CHECK_STR(a->source, b->source);
	CHECK_STR(a->created, b->created);
	CHECK_STR(a->machine.arch, b->machine.arch);
	CHECK_STR(a->machine.cpu, b->machine.cpu);
	CHECK_STR(a->machine.kernel, b->machine.kernel);
	CHECK_STR(a->machine.host, b->machine.host);
	CHECK_EQ_U64(a->machine.cpus, b->machine.cpus);
	check_term(&a->c0, &b->c0);
	if (CHECK_EQ_U64(a->nterms, b->nterms))
		for (i = 0; i < a->nterms; i++)
			check_term(&a->terms[i], &b->terms[i]);
	if (CHECK_EQ_U64(a->ndropped, b->ndropped))
		for (i = 0; i < a->ndropped; i++)
			check_term(&a->dropped[i], &b->dropped[i]);
	CHECK_F64(a->fit.r2, b->fit.r2);
	CHECK_F64(a->fit.adj_r2, b->fit.adj_r2);
	CHECK_F64(a->fit.f, b->fit.f);
	CHECK_F64(a->fit.f_p, b->fit.f_p);
	CHECK_F64(a->fit.rmse, b->fit.rmse);
	CHECK_EQ_U64(a->fit.n, b->fit.n);
	CHECK_F64(a->fit.alpha, b->fit.alpha);
	CHECK_EQ_U64(a->cv.folds, b->cv.folds);
	CHECK_F64(a->cv.mean_abs_pct, b->cv.mean_abs_pct);
	CHECK_F64(a->cv.max_abs_pct, b->cv.max_abs_pct);
	CHECK_EQ_U64(a->training.programs, b->training.programs);
	CHECK_F64(a->training.seconds, b->training.seconds);
	CHECK_EQ_U64(a->training.seed, b->training.seed);
	CHECK_EQ_U64(a->training.segments, b->training.segments);
}

static void term(struct emodel_term *t, const char *name, double coef, double se, double tv, double p)
{
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->coef = coef;
	t->se = se;
	t->t = tv;
	t->p = p;
}

static void make_model(struct emodel *m)
{
	emodel_init(m);
	snprintf(m->source, sizeof(m->source), "cmd:python3 \"meter.py\" \\ caf\xc3\xa9");
	emodel_describe_machine(m);
	term(&m->c0, "const", 1.5, 0.01, 150, 1e-300);
	term(&m->terms[0], "task-clock", 2e-9, 1.0 / 3 * 1e-11, 600.0000000000001, 0);
	term(&m->terms[1], "page-faults", 4e-5, DBL_MIN, 0.1, DBL_TRUE_MIN);
	term(&m->terms[2], "instructions", -2.5e-10, DBL_MAX, -0.0, 0.049999999999999996);
	m->nterms = 3;
	term(&m->dropped[0], "cpu-migrations", NAN, NAN, NAN, NAN);
	snprintf(m->dropped[0].why, sizeof(m->dropped[0].why), "constant in the training data");
	term(&m->dropped[1], "context-switches", 1e-7, 3e-7, 0.333, 0.74);
	snprintf(m->dropped[1].why, sizeof(m->dropped[1].why), "insignificant (p=0.74)");
	m->ndropped = 2;
	m->fit.r2 = 0.99912345678901234;
	m->fit.adj_r2 = 0.998;
	m->fit.f = 12345.678;
	m->fit.f_p = 1.1102230246251565e-16;
	m->fit.rmse = 0.0123;
	m->fit.n = 60;
	m->fit.alpha = 0.05;
	m->cv.folds = 5;
	m->cv.mean_abs_pct = 0.7;
	m->cv.max_abs_pct = 2.25;
	m->training.programs = 60;
	m->training.seconds = 0.5;
	m->training.seed = UINT64_MAX;
	m->training.segments = 31;
}

static void test_round_trip(void)
{
	static struct emodel a, b;
	char err[256];
	struct stat st;
	DIR *d;
	struct dirent *e;
	int entries = 0;

	make_model(&a);
	if (!CHECK_EQ_U64(emodel_save(&a, file_in("m.json"), err, sizeof(err)), 0))
		printf("  %s\n", err);
	if (!CHECK_EQ_U64(emodel_load(&b, file_in("m.json"), err, sizeof(err)), 0))
		printf("  %s\n", err);
	check_same(&a, &b);
	CHECK_STR(b.c0.name, "const");

	/* saved again over the old one: replaced, no temporary left */
	a.c0.coef = 0.1;
	CHECK_EQ_U64(emodel_save(&a, file_in("m.json"), err, sizeof(err)), 0);
	CHECK_EQ_U64(emodel_load(&b, file_in("m.json"), err, sizeof(err)), 0);
	CHECK_F64(b.c0.coef, 0.1);
	CHECK(!stat(file_in("m.json"), &st) && S_ISREG(st.st_mode));
	d = opendir(dir);
	if (CHECK(d)) {
		while ((e = readdir(d)))
			entries += strncmp(e->d_name, "m.json", 6) == 0;
		closedir(d);
	}
	CHECK_EQ_U64(entries, 1);

	/* a directory that does not exist */
	CHECK_EQ_U64(emodel_save(&a, "/nonexistent-dir/m.json", err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "cannot write energy model '/nonexistent-dir/m.json': No such file or directory");
}

/* A hand-written model: absent statistics are NaN, absent "dropped" is none. */
static void test_minimal(void)
{
	static struct emodel m;
	char err[256];

	write_file("min.json", "{\"format\":\"layerprof-energy-model\",\"version\":1,\"machine\":{\"cpus\":4},"
	                       "\"const\":{\"coef\":2},\"terms\":[{\"event\":\"task-clock\",\"coef\":1e-9},"
	                       "{\"event\":\"page-faults\",\"coef\":3.5e-5}]}");
	if (!CHECK_EQ_U64(emodel_load(&m, file_in("min.json"), err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	CHECK_EQ_U64(m.version, 1);
	CHECK_EQ_U64(m.machine.cpus, 4);
	CHECK_STR(m.machine.arch, "");
	CHECK_F64(m.c0.coef, 2.0);
	CHECK(isnan(m.c0.se));
	CHECK_EQ_U64(m.nterms, 2);
	CHECK_STR(m.terms[1].name, "page-faults");
	CHECK_F64(m.terms[1].coef, 3.5e-5);
	CHECK(isnan(m.terms[1].p));
	CHECK_EQ_U64(m.ndropped, 0);
	CHECK(isnan(m.fit.r2));
	CHECK_EQ_U64(m.cv.folds, 0);
}

static void bad(const char *name, const char *text, int want, const char *msg_fmt)
{
	static struct emodel m;
	char err[512], msg[512];

	write_file(name, text);
	snprintf(msg, sizeof(msg), msg_fmt, file_in(name));
	if (!CHECK_EQ_U64(emodel_load(&m, file_in(name), err, sizeof(err)), want))
		printf("  (file %s)\n", name);
	CHECK_STR(err, msg);
}

#define HEAD "{\"format\":\"layerprof-energy-model\",\"version\":1,\"machine\":{\"cpus\":2},\"const\":{\"coef\":1}"

static void test_bad_files(void)
{
	static struct emodel m;
	char err[256], text[512];

	bad("nojson.json", "watts = 3 + 2x", -EINVAL, "'%s' is not valid JSON: unexpected character at byte 0");
	bad("trail.json", HEAD ",\"terms\":[]} x", -EINVAL, "'%s' is not valid JSON: unexpected character at byte 99");
	bad("format.json", "{\"format\":\"layerprof-heap-snapshot\",\"version\":1}", -EINVAL,
	    "'%s' is not a layerprof energy model (its \"format\" is not \"layerprof-energy-model\")");
	bad("array.json", "[1,2]", -EINVAL,
	    "'%s' is not a layerprof energy model (its \"format\" is not \"layerprof-energy-model\")");
	bad("noversion.json", "{\"format\":\"layerprof-energy-model\"}", -EINVAL, "energy model '%s' has no version");
	bad("newer.json", "{\"format\":\"layerprof-energy-model\",\"version\":2}", -EINVAL,
	    "energy model '%s' is of version 2, newer than this layerprof reads (1)");
	bad("nocpus.json", "{\"format\":\"layerprof-energy-model\",\"version\":1,\"const\":{\"coef\":1},\"terms\":[]}",
	    -EINVAL, "energy model '%s' has no machine.cpus (the CPUs it was made on, at least 1)");
	bad("noconst.json",
	    "{\"format\":\"layerprof-energy-model\",\"version\":1,\"machine\":{\"cpus\":2},\"terms\":[]}", -EINVAL,
	    "energy model '%s' has no constant (const.coef, in W)");
	bad("noterms.json", HEAD "}", -EINVAL, "energy model '%s' has no terms array");
	bad("nocoef.json", HEAD ",\"terms\":[{\"event\":\"cycles\",\"coef\":1e-9},{\"event\":\"instructions\"}]}",
	    -EINVAL, "energy model '%s': term 'instructions' has no coefficient");
	bad("strcoef.json", HEAD ",\"terms\":[{\"event\":\"cycles\",\"coef\":\"1e-9\"}]}", -EINVAL,
	    "energy model '%s': term 'cycles' has no coefficient");
	bad("noname.json", HEAD ",\"terms\":[{\"coef\":1e-9}]}", -EINVAL,
	    "energy model '%s': term 1 has no event name");
	bad("constname.json", HEAD ",\"terms\":[{\"event\":\"const\",\"coef\":1}]}", -EINVAL,
	    "energy model '%s': term 1 has the name 'const', which is no event");
	bad("twice.json", HEAD ",\"terms\":[{\"event\":\"cycles\",\"coef\":1},{\"event\":\"cycles\",\"coef\":2}]}",
	    -EINVAL, "energy model '%s': event 'cycles' appears twice in terms");
	snprintf(text, sizeof(text), HEAD ",\"terms\":[{\"event\":\"%064d\",\"coef\":1}]}", 7);
	bad("longname.json", text, -EINVAL,
	    "energy model '%s': term name '0000000000000000000000000000000000000000...' is too long (at most 63 "
	    "bytes)");
	bad("longcpu.json",
	    "{\"format\":\"layerprof-energy-model\",\"version\":1,\"machine\":{\"cpus\":2,\"arch\":"
	    "\"x86_64-x86_64-x86_64-x86_64-x86_64\"}}",
	    -EINVAL,
	    "energy model '%s': machine.arch 'x86_64-x86_64-x86_64-x86_64-x86_64' is too long (at most 31 bytes)");
	bad("numsource.json", "{\"format\":\"layerprof-energy-model\",\"version\":1,\"source\":3}", -EINVAL,
	    "energy model '%s' has no source (a string)");

	CHECK_EQ_U64(emodel_load(&m, file_in("absent.json"), err, sizeof(err)), -ENOENT);
	snprintf(text, sizeof(text), "cannot open '%s': No such file or directory", file_in("absent.json"));
	CHECK_STR(err, text);
}

static void test_bind(void)
{
	static struct emodel m;
	static const char names[4][EMODEL_NAME_MAX] = { "cs", "page-faults", "task-clock", "faults" };
	static const char few[2][EMODEL_NAME_MAX] = { "task-clock", "cpu-clock" };
	uint32_t map[4] = { 9, 9, 9, 9 };
	char err[256];

	emodel_init(&m);
	m.machine.cpus = 2;
	term(&m.terms[0], "task-clock", 1, 0, 0, 0);
	term(&m.terms[1], "context-switches", 1, 0, 0, 0);
	term(&m.terms[2], "page-faults", 1, 0, 0, 0);
	m.nterms = 3;
	CHECK_EQ_U64(emodel_bind(&m, names, 4, map, err, sizeof(err)), 0);
	CHECK_EQ_U64(map[0], 2);
	CHECK_EQ_U64(map[1], 0); /* "cs" is context-switches */
	CHECK_EQ_U64(map[2], 1); /* the same name before an alias ("faults") */

	CHECK_EQ_U64(emodel_bind(&m, few, 2, map, err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "the model needs context-switches, page-faults; the trace has task-clock, cpu-clock");
	CHECK_EQ_U64(emodel_bind(&m, few, 0, map, err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "the model needs task-clock, context-switches, page-faults; the trace has no counters");

	m.nterms = 0; /* a constant alone needs no counter */
	CHECK_EQ_U64(emodel_bind(&m, few, 0, map, err, sizeof(err)), 0);
}

static void test_arithmetic(void)
{
	static struct emodel m;
	static const uint32_t map[3] = { 2, 0, 1 };
	static const uint64_t v[3] = { 1024, 7, 8 };
	double want;

	emodel_init(&m);
	m.machine.cpus = 2;
	m.c0.coef = 1.5;
	term(&m.terms[0], "task-clock", 0.25, 0, 0, 0);        /* v[2] = 8 */
	term(&m.terms[1], "page-faults", 1.0 / 1024, 0, 0, 0); /* v[0] = 1024 */
	term(&m.terms[2], "context-switches", 1e-3, 0, 0, 0);  /* v[1] = 7 */
	m.nterms = 3;
	/* 1.5 W x 2 s x 1/2 + 0.25 x 8 + 1024 / 1024 + 7e-3 */
	CHECK_F64(emodel_energy(&m, map, v, 2000000000, 0.5), 1.5 + 2 + 1 + 1e-3 * 7);
	CHECK_F64(emodel_energy(&m, map, v, 2000000000, 1), 3.0 + 2 + 1 + 1e-3 * 7);
	/* 1.5 + 0.25 x 4/s + 512/s / 1024 + 1e-3 x 3.5/s */
	CHECK_F64(emodel_power(&m, map, v, 2000000000), 1.5 + 1 + 0.5 + 1e-3 * 3.5);
	/* a span that is no whole number of seconds: the same formula */
	want = 1.5 * (123456789.0 / 1e9) * (1.0 / 3);
	want += 0.25 * 8;
	want += 1.0 / 1024 * 1024;
	want += 1e-3 * 7;
	CHECK_F64(emodel_energy(&m, map, v, 123456789, 1.0 / 3), want);
	want = 1.5;
	want += 0.25 * (8 / (123456789.0 / 1e9));
	want += 1.0 / 1024 * (1024 / (123456789.0 / 1e9));
	want += 1e-3 * (7 / (123456789.0 / 1e9));
	CHECK_F64(emodel_power(&m, map, v, 123456789), want);
	CHECK(isnan(emodel_power(&m, map, v, 0)));
	CHECK_F64(emodel_energy(&m, map, v, 0, 1), 2.0 + 1 + 1e-3 * 7);
}

static void test_machine(void)
{
	static struct emodel m;
	struct utsname u;

	emodel_init(&m);
	emodel_describe_machine(&m);
	if (CHECK(!uname(&u))) {
		CHECK_STR(m.machine.arch, u.machine);
		CHECK_STR(m.machine.kernel, u.release);
	}
	CHECK_EQ_U64(m.machine.cpus, (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	CHECK(m.created[0] && strlen(m.created) == 20 && m.created[19] == 'Z');
	printf("machine: %s, '%s', %s, %u CPUs\n", m.machine.arch, m.machine.cpu, m.machine.kernel, m.machine.cpus);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_emodel.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_round_trip();
	test_minimal();
	test_bad_files();
	test_bind();
	test_arithmetic();
	test_machine();
	if (!check_failed) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("could not remove %s\n", dir);
	}
	return check_summary();
}
