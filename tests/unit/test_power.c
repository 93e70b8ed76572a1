/* Unit test of the power sources (host/lib/energy/power*.c): each sysfs
 * kind read from a made-up tree ($LAYERPROF_SYSFS) with exact names,
 * paths and values, an energy counter's wrap, "auto" and "rapl", a meter
 * command (numbers with units, garbage, a failing command, a slow one
 * killed, LAYERPROF_POWER_PIDS), a meter's CSV log (wall-clock and
 * monotonic seconds, a header, bad lines), the meter's energy over a span
 * (a constant 7 W command, an energy counter growing at 3 W), the
 * integration's arithmetic, and power samples in a trace (LP_CHUNK_POWER
 * written, walked and integrated). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host/lib/energy/power.h"
#include "host/lib/energy/powerimpl.h"
#include "host/lib/energy/powertrace.h"
#include "host/lib/trace/walk.h"
#include "tests/unit/check.h"

static char root[PATH_MAX];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* root/rel, with its directories made, holding text and a newline. */
static void put(const char *tree, const char *rel, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	for (char *p = path + strlen(tree) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(path, 0755) && errno != EEXIST)
				die(path);
			*p = '/';
		}
	/* whole or not at all: a reader never sees it empty */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	fprintf(f, "%s\n", text);
	if (fclose(f) || rename(tmp, path))
		die(path);
}

static const char *tree_path(const char *tree, const char *rel)
{
	static char buf[2 * PATH_MAX + 2];

	snprintf(buf, sizeof(buf), "%s/%s", tree, rel);
	return buf;
}

/* The tree of docs: a RAPL package with a core subzone, an INA226 with a
 * power and an energy sensor (and a chip without any), BAT0 with
 * power_now, BAT1 with current and voltage, and mains that is no battery. */
static void make_tree(const char *t)
{
	mkdir(t, 0755);
	put(t, "class/powercap/intel-rapl/enabled", "1");
	put(t, "class/powercap/intel-rapl:0/name", "package-0");
	put(t, "class/powercap/intel-rapl:0/energy_uj", "1000000");
	put(t, "class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850");
	put(t, "class/powercap/intel-rapl:0:0/name", "core");
	put(t, "class/powercap/intel-rapl:0:0/energy_uj", "500");
	put(t, "class/powercap/intel-rapl:0:0/max_energy_range_uj", "262143328850");
	put(t, "class/hwmon/hwmon0/name", "ina226");
	put(t, "class/hwmon/hwmon0/power1_input", "2500000");
	put(t, "class/hwmon/hwmon0/power1_label", "VDD_IN");
	put(t, "class/hwmon/hwmon0/energy1_input", "77");
	put(t, "class/hwmon/hwmon1/name", "coretemp");
	put(t, "class/hwmon/hwmon1/temp1_input", "40000");
	put(t, "class/power_supply/BAT0/type", "Battery");
	put(t, "class/power_supply/BAT0/power_now", "9000000");
	put(t, "class/power_supply/BAT1/type", "Battery");
	put(t, "class/power_supply/BAT1/current_now", "-1500000");
	put(t, "class/power_supply/BAT1/voltage_now", "12000000");
	put(t, "class/power_supply/AC/type", "Mains");
}

static void want_desc(const struct power_desc *d, enum power_kind kind, const char *name, const char *label,
                      const char *tree, const char *rel, bool energy, uint64_t range)
{
	CHECK_EQ_U64(d->kind, kind);
	CHECK_STR(d->name, name);
	CHECK_STR(d->label, label);
	CHECK_STR(d->path, tree_path(tree, rel));
	CHECK_EQ_U64(d->energy, energy);
	CHECK_EQ_U64(d->range_uj, range);
	CHECK(d->readable);
}

static void test_list(const char *t)
{
	struct power_desc v[POWER_SOURCES_MAX];
	int n = power_list(t, v, POWER_SOURCES_MAX);

	if (!CHECK_EQ_U64(n, 6))
		return;
	want_desc(&v[0], POWER_RAPL, "rapl:package-0", "", t, "class/powercap/intel-rapl:0/energy_uj", true,
	          262143328850ull);
	want_desc(&v[1], POWER_RAPL, "rapl:package-0:core", "", t, "class/powercap/intel-rapl:0:0/energy_uj", true,
	          262143328850ull);
	want_desc(&v[2], POWER_HWMON, "hwmon:ina226:power1", "VDD_IN", t, "class/hwmon/hwmon0/power1_input", false, 0);
	want_desc(&v[3], POWER_HWMON, "hwmon:ina226:energy1", "", t, "class/hwmon/hwmon0/energy1_input", true, 0);
	want_desc(&v[4], POWER_BATTERY, "battery:BAT0", "", t, "class/power_supply/BAT0/power_now", false, 0);
	want_desc(&v[5], POWER_BATTERY, "battery:BAT1", "", t, "class/power_supply/BAT1/current_now", false, 0);
	/* the bound on out */
	CHECK_EQ_U64(power_list(t, v, 2), 2);
	CHECK_STR(v[1].name, "rapl:package-0:core");
}

static struct power_source *open_ok(const char *spec, const char *name)
{
	char err[600] = "";
	struct power_source *ps = power_open(spec, err, sizeof(err));

	if (!CHECK(ps)) {
		printf("  power_open('%s'): %s\n", spec, err);
		return NULL;
	}
	CHECK_STR(power_name(ps), name);
	return ps;
}

/* One reading of a power (not energy) source: its watts. */
static double read_watts(struct power_source *ps)
{
	struct power_sample s = { 0, -1 };
	char err[600] = "";
	int r = power_read(ps, &s, err, sizeof(err));

	if (!CHECK_EQ_U64(r, 0))
		printf("  %s\n", err);
	return s.watts;
}

static void test_kinds(const char *t)
{
	struct power_source *ps;
	struct power_sample a, b;
	char err[600];

	setenv("LAYERPROF_SYSFS", t, 1);
	CHECK_STR(power_sysfs_root(), t);
	ps = open_ok("hwmon:ina226:power1", "hwmon:ina226:power1");
	if (ps)
		CHECK(read_watts(ps) == 2.5);
	power_close(ps);
	/* a chip's first sensor */
	ps = open_ok("hwmon:ina226", "hwmon:ina226:power1");
	power_close(ps);
	ps = open_ok("battery:BAT0", "battery:BAT0");
	if (ps)
		CHECK(read_watts(ps) == 9.0);
	power_close(ps);
	/* 1.5 A (negative: discharging) x 12 V */
	ps = open_ok("battery:BAT1", "battery:BAT1");
	if (ps)
		CHECK(read_watts(ps) == 18.0);
	power_close(ps);
	/* an energy counter: the first reading 0 W (1), then the mean power */
	ps = open_ok("rapl:package-0", "rapl:package-0");
	if (ps) {
		CHECK(power_can_read(ps));
		CHECK_EQ_U64(power_read(ps, &a, err, sizeof(err)), 1);
		CHECK(a.watts == 0);
		put(t, "class/powercap/intel-rapl:0/energy_uj", "3000000"); /* 2 J later */
		sleep_ms(10);
		CHECK_EQ_U64(power_read(ps, &b, err, sizeof(err)), 0);
		CHECK(b.ns > a.ns);
		CHECK(fabs(b.watts * (double)(b.ns - a.ns) * 1e-9 - 2.0) < 1e-9);
		/* it wraps at max_energy_range_uj: 262143328850 - 3000000 + 1000 µJ */
		put(t, "class/powercap/intel-rapl:0/energy_uj", "1000");
		sleep_ms(10);
		a = b;
		CHECK_EQ_U64(power_read(ps, &b, err, sizeof(err)), 0);
		CHECK(fabs(b.watts * (double)(b.ns - a.ns) * 1e-9 - (262143328850.0 - 3000000 + 1000) * 1e-6) < 1e-3);
	}
	power_close(ps);
	/* a wrap at an unknown range counts from 0 */
	ps = open_ok("hwmon:ina226:energy1", "hwmon:ina226:energy1");
	if (ps) {
		CHECK_EQ_U64(power_read(ps, &a, err, sizeof(err)), 1);
		put(t, "class/hwmon/hwmon0/energy1_input", "20");
		sleep_ms(5);
		CHECK_EQ_U64(power_read(ps, &b, err, sizeof(err)), 0);
		CHECK(fabs(b.watts * (double)(b.ns - a.ns) * 1e-9 - 20e-6) < 1e-12);
	}
	power_close(ps);
	put(t, "class/hwmon/hwmon0/energy1_input", "77");
	put(t, "class/powercap/intel-rapl:0/energy_uj", "1000000");
	/* a file that holds no number */
	put(t, "class/hwmon/hwmon0/power1_input", "n/a");
	ps = open_ok("hwmon:ina226:power1", "hwmon:ina226:power1");
	if (ps) {
		CHECK_EQ_U64(power_read(ps, &a, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "power1_input': not a number") != NULL);
	}
	power_close(ps);
	put(t, "class/hwmon/hwmon0/power1_input", "2500000");
	/* no such name */
	CHECK(!power_open("hwmon:nope", err, sizeof(err)));
	CHECK_STR(err, "no power source 'hwmon:nope' on this machine (`layerprof energy sources` lists them; an "
	               "external meter is cmd:COMMAND or csv:FILE)");
	CHECK(!power_open("", err, sizeof(err)));
}

static void test_auto(const char *base)
{
	char t[PATH_MAX], want[PATH_MAX + 600], err[600];
	struct power_source *ps;

	/* the docs' tree: the package */
	ps = open_ok("auto", "rapl:package-0");
	power_close(ps);
	/* two packages: summed, as "rapl" */
	snprintf(t, sizeof(t), "%s/two", base);
	mkdir(t, 0755);
	put(t, "class/powercap/intel-rapl:0/name", "package-0");
	put(t, "class/powercap/intel-rapl:0/energy_uj", "100");
	put(t, "class/powercap/intel-rapl:1/name", "package-1");
	put(t, "class/powercap/intel-rapl:1/energy_uj", "200");
	setenv("LAYERPROF_SYSFS", t, 1);
	ps = open_ok("auto", "rapl");
	if (ps) {
		struct power_sample a, b;

		CHECK_EQ_U64(power_read(ps, &a, err, sizeof(err)), 1);
		put(t, "class/powercap/intel-rapl:0/energy_uj", "1000100");
		put(t, "class/powercap/intel-rapl:1/energy_uj", "2000200");
		sleep_ms(5);
		CHECK_EQ_U64(power_read(ps, &b, err, sizeof(err)), 0);
		CHECK(fabs(b.watts * (double)(b.ns - a.ns) * 1e-9 - 3.0) < 1e-9);
	}
	power_close(ps);
	ps = open_ok("rapl", "rapl");
	power_close(ps);
	/* no RAPL: the first hwmon sensor; then a battery */
	snprintf(t, sizeof(t), "%s/hw", base);
	mkdir(t, 0755);
	put(t, "class/hwmon/hwmon3/name", "ina3221");
	put(t, "class/hwmon/hwmon3/power2_input", "1000");
	put(t, "class/power_supply/BAT0/type", "Battery");
	put(t, "class/power_supply/BAT0/power_now", "1");
	setenv("LAYERPROF_SYSFS", t, 1);
	ps = open_ok("auto", "hwmon:ina3221:power2");
	if (ps)
		CHECK(read_watts(ps) == 0.001);
	power_close(ps);
	CHECK(!power_open("rapl", err, sizeof(err)));
	snprintf(want, sizeof(want), "no readable RAPL package domain under %s/class/powercap", t);
	CHECK_STR(err, want);
	snprintf(t, sizeof(t), "%s/bat", base);
	mkdir(t, 0755);
	put(t, "class/power_supply/BAT2/type", "Battery");
	put(t, "class/power_supply/BAT2/power_now", "4200000");
	setenv("LAYERPROF_SYSFS", t, 1);
	ps = open_ok("auto", "battery:BAT2");
	if (ps)
		CHECK(read_watts(ps) == 4.2);
	power_close(ps);
	/* a source that cannot be read (as root: a directory where the
	 * value is) is listed, and not opened */
	snprintf(t, sizeof(t), "%s/unreadable", base);
	mkdir(t, 0755);
	put(t, "class/powercap/intel-rapl:0/name", "package-0");
	put(t, "class/powercap/intel-rapl:0/energy_uj/x", "");
	setenv("LAYERPROF_SYSFS", t, 1);
	{
		struct power_desc v[4];

		CHECK_EQ_U64(power_list(NULL, v, 4), 1);
		CHECK(!v[0].readable);
	}
	CHECK(!power_open("auto", err, sizeof(err)));
	snprintf(want, sizeof(want),
	         "no readable power source: rapl:package-0 ('%s/class/powercap/intel-rapl:0/energy_uj') cannot be read "
	         "by this user (RAPL's energy_uj is root's alone since Linux 5.10: run as root, or let this user read "
	         "it)",
	         t);
	CHECK_STR(err, want);
	CHECK(!power_open("rapl:package-0", err, sizeof(err)));
	snprintf(want, sizeof(want),
	         "power source rapl:package-0: cannot read '%s/class/powercap/intel-rapl:0/energy_uj' (RAPL's "
	         "energy_uj is root's alone since Linux 5.10: run as root, or let this user read it)",
	         t);
	CHECK_STR(err, want);
	/* nothing at all */
	snprintf(t, sizeof(t), "%s/none", base);
	mkdir(t, 0755);
	setenv("LAYERPROF_SYSFS", t, 1);
	CHECK(!power_open("auto", err, sizeof(err)));
	power_none_why(NULL, want, sizeof(want));
	CHECK_STR(err, want);
	snprintf(t, sizeof(t),
	         "no power source on this machine (no RAPL domain under %s/none/class/powercap, no "
	         "hwmon power or energy sensor, no battery); give an external meter with --power "
	         "cmd:COMMAND or csv:FILE",
	         base);
	CHECK_STR(want, t);
	{
		struct power_desc v[4];

		CHECK_EQ_U64(power_list(NULL, v, 4), 0);
	}
}

static void test_parse(void)
{
	static const struct {
		const char *text;
		int r;
		double watts;
	} cases[] = {
		{ "12.5", 0, 12.5 },         { "12.5\n", 0, 12.5 }, { " 7 W", 0, 7 },
		{ "250 mW", 0, 0.25 },       { "250mW", 0, 0.25 },  { "1500 uW", 0, 1.5e-3 },
		{ "3\xc2\xb5W", 0, 3e-6 },   { "1.5kW", 0, 1500 },  { "0", 0, 0 },
		{ "garbage", -EINVAL, 0 },   { "", -EINVAL, 0 },    { "-3", -EINVAL, 0 },
		{ "nan", -EINVAL, 0 },       { "inf", -EINVAL, 0 }, { "5 V", -EINVAL, 0 },
		{ "5 W extra", -EINVAL, 0 }, { "1e3", 0, 1000 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double w = -1;
		int r = power_parse_watts(cases[i].text, &w);

		if (!CHECK_EQ_U64(r, cases[i].r))
			printf("  ('%s')\n", cases[i].text);
		else if (!r && !CHECK(fabs(w - cases[i].watts) < 1e-12 * (1 + cases[i].watts)))
			printf("  ('%s' gave %g)\n", cases[i].text, w);
	}
}

/* cmd:COMMAND read once: r, watts and the message. */
static int cmd_once(const char *command, double *watts, char *err, size_t errlen)
{
	char spec[512];
	struct power_source *ps;
	struct power_sample s = { 0, -1 };
	int r;

	snprintf(spec, sizeof(spec), "cmd:%s", command);
	ps = power_open(spec, err, errlen);
	if (!CHECK(ps))
		return -999;
	CHECK_STR(power_name(ps), spec);
	r = power_read(ps, &s, err, errlen);
	*watts = s.watts;
	power_close(ps);
	return r;
}

static void test_cmd(void)
{
	struct power_source *ps;
	char err[600];
	double w;
	uint64_t t0;
	int pids[2] = { 12, 34 };

	CHECK_EQ_U64(cmd_once("printf 12.5", &w, err, sizeof(err)), 0);
	CHECK(w == 12.5);
	CHECK_EQ_U64(cmd_once("printf '250 mW\\nmore\\n'", &w, err, sizeof(err)), 0);
	CHECK(w == 0.25);
	CHECK_EQ_U64(cmd_once("echo garbage", &w, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "meter command 'echo garbage' printed 'garbage', not watts (a number, or one followed by W, mW "
	               "or uW)");
	CHECK_EQ_U64(cmd_once("true", &w, err, sizeof(err)), -ENODATA);
	CHECK_STR(err, "meter command 'true' printed nothing (it should print watts)");
	CHECK_EQ_U64(cmd_once("echo 5; echo 'no meter here' >&2; exit 3", &w, err, sizeof(err)), -EIO);
	CHECK_STR(err,
	          "meter command 'echo 5; echo 'no meter here' >&2; exit 3' failed (exit status 3): no meter here");
	CHECK_EQ_U64(cmd_once("exit 4", &w, err, sizeof(err)), -EIO);
	CHECK_STR(err, "meter command 'exit 4' failed (exit status 4)");
	/* output past the bound is read and dropped */
	CHECK_EQ_U64(cmd_once("echo 3; head -c 100000 /dev/zero", &w, err, sizeof(err)), 0);
	CHECK(w == 3);
	/* slow: killed after 2 s, with what it started */
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_EQ_U64(cmd_once("sleep 30; echo 1", &w, err, sizeof(err)), -ETIME);
	CHECK_STR(err, "meter command 'sleep 30; echo 1' took more than 2 s: killed");
	CHECK(now_ns(CLOCK_MONOTONIC) - t0 < 10000000000ull);
	/* the programs measured, for the command to look at */
	ps = power_open("cmd:echo ${LAYERPROF_POWER_PIDS-none} | sed 's/none/0/; s/12,34/1/'", err, sizeof(err));
	if (CHECK(ps)) {
		CHECK(read_watts(ps) == 0);
		power_source_set_pids(ps, pids, 2);
		CHECK(read_watts(ps) == 1);
		power_source_set_pids(ps, NULL, 0);
		CHECK(read_watts(ps) == 0);
	}
	power_close(ps);
	CHECK(!power_open("cmd:", err, sizeof(err)));
	CHECK_STR(err, "cmd: needs a command that prints watts (cmd:COMMAND)");
	/* a long command's name is cut */
	{
		char spec[300];

		memset(spec, 'x', sizeof(spec) - 1);
		memcpy(spec, "cmd:echo 1 #", 12);
		spec[sizeof(spec) - 1] = '\0';
		ps = power_open(spec, err, sizeof(err));
		if (CHECK(ps)) {
			CHECK_EQ_U64(strlen(power_name(ps)), POWER_NAME_MAX - 1);
			CHECK(!strcmp(power_name(ps) + POWER_NAME_MAX - 4, "..."));
			CHECK(read_watts(ps) == 1);
		}
		power_close(ps);
	}
}

static void test_integrate(void)
{
	const struct power_sample s[] = { { 1000000000ull, 2 }, { 3000000000ull, 4 } };

	/* held before and after, a trapezoid between: 2 x 1 + 3 x 2 + 4 x 2 */
	CHECK(fabs(power_integrate(s, 2, 0, 5000000000ull) - 16) < 1e-12);
	CHECK(fabs(power_integrate(s, 2, 2000000000ull, 3000000000ull) - 3.5) < 1e-12);
	CHECK(fabs(power_integrate(s, 1, 0, 5000000000ull) - 10) < 1e-12);
	CHECK(power_integrate(s, 2, 4000000000ull, 4000000000ull) == 0);
	CHECK(power_integrate(s, 0, 0, 1) == -1);
}

/* A meter over a span of about ms. */
static int meter_span(struct power_source *ps, unsigned interval, unsigned ms, struct power_meter **m,
                      struct power_result *res, char *err, size_t errlen)
{
	*m = power_meter_start(ps, interval, err, errlen);
	if (!CHECK(*m))
		return -1;
	sleep_ms(ms);
	return power_meter_stop(*m, res, err, errlen);
}

static void test_meter_cmd(void)
{
	struct power_source *ps = open_ok("cmd:echo 7", "cmd:echo 7");
	struct power_result res;
	struct power_meter *m;
	struct power_sample copy[4];
	char err[600];
	double span;

	if (!ps)
		return;
	if (CHECK_EQ_U64(meter_span(ps, 20, 500, &m, &res, err, sizeof(err)), 0)) {
		span = (double)(res.t1_ns - res.t0_ns) * 1e-9;
		CHECK(span > 0.4);
		CHECK(res.nsamples >= 2);
		CHECK(fabs(res.joules - 7 * span) <= 0.02 * 7 * span);
		CHECK(fabs(res.mean_watts - 7) < 0.14);
		CHECK_EQ_U64(res.failed, 0);
		CHECK_EQ_U64(res.samples[0].ns, res.t0_ns);
		CHECK_EQ_U64(res.samples[res.nsamples - 1].ns, res.t1_ns);
		CHECK_EQ_U64(power_meter_copy(m, 0, copy, 4), 4);
		CHECK(copy[3].watts == 7 && copy[3].ns > copy[2].ns);
		CHECK_EQ_U64(power_meter_copy(m, res.nsamples, copy, 4), 0);
	} else {
		printf("  %s\n", err);
	}
	power_meter_free(m);
	power_close(ps);
	/* every reading fails */
	ps = open_ok("cmd:exit 1", "cmd:exit 1");
	if (ps) {
		CHECK_EQ_U64(meter_span(ps, 20, 100, &m, &res, err, sizeof(err)), -ENODATA);
		CHECK_STR(err, "no reading of cmd:exit 1: meter command 'exit 1' failed (exit status 1)");
		CHECK(res.failed >= 2);
		CHECK_STR(power_meter_first_error(m), "meter command 'exit 1' failed (exit status 1)");
		power_meter_free(m);
	}
	power_close(ps);
}

/* Writes an energy counter growing at 3 W (from its start) until told. */
struct grower {
	const char *tree;
	volatile int stop;
	uint64_t t0;
};

static void *grow(void *arg)
{
	struct grower *g = arg;

	while (!g->stop) {
		char v[32];

		snprintf(v, sizeof(v), "%llu", (unsigned long long)((now_ns(CLOCK_MONOTONIC) - g->t0) * 3 / 1000));
		put(g->tree, "class/powercap/intel-rapl:0/energy_uj", v);
		sleep_ms(1);
	}
	return NULL;
}

static void test_meter_energy(const char *base)
{
	char t[PATH_MAX], err[600];
	struct grower g;
	struct power_source *ps;
	struct power_result res;
	struct power_meter *m;
	pthread_t th;

	snprintf(t, sizeof(t), "%s/grow", base);
	mkdir(t, 0755);
	put(t, "class/powercap/intel-rapl:0/name", "package-0");
	put(t, "class/powercap/intel-rapl:0/energy_uj", "0");
	setenv("LAYERPROF_SYSFS", t, 1);
	g.tree = t;
	g.stop = 0;
	g.t0 = now_ns(CLOCK_MONOTONIC);
	if (pthread_create(&th, NULL, grow, &g))
		die("pthread_create");
	sleep_ms(20);
	ps = open_ok("auto", "rapl:package-0");
	if (ps && CHECK_EQ_U64(meter_span(ps, 50, 1000, &m, &res, err, sizeof(err)), 0)) {
		double span = (double)(res.t1_ns - res.t0_ns) * 1e-9;

		/* the file lags by up to a ms or two at each end */
		CHECK(fabs(res.joules - 3 * span) <= 0.03 * 3 * span);
		CHECK(res.nsamples >= 2);
		power_meter_free(m);
	}
	g.stop = 1;
	pthread_join(th, NULL);
	power_close(ps);
}

static void test_csv(const char *base, bool monotonic)
{
	char path[PATH_MAX], spec[PATH_MAX + 100], err[600];
	struct power_source *ps;
	struct power_result res;
	struct power_meter *m;
	struct power_sample s;
	uint64_t t0, off;
	FILE *f;

	snprintf(path, sizeof(path), "%s/meter-%s.csv", base, monotonic ? "mono" : "real");
	f = fopen(path, "w");
	if (!f)
		die(path);
	fprintf(f, "%stime,power\n", monotonic ? "#clock=monotonic\n" : "");
	fclose(f);
	snprintf(spec, sizeof(spec), "csv:%s", path);
	ps = open_ok(spec, spec);
	if (!ps)
		return;
	CHECK(!power_can_read(ps));
	CHECK_EQ_U64(power_read(ps, &s, err, sizeof(err)), -EOPNOTSUPP);
	m = power_meter_start(ps, 0, err, sizeof(err));
	if (!CHECK(m)) {
		power_close(ps);
		return;
	}
	t0 = now_ns(CLOCK_MONOTONIC);
	off = monotonic ? 0 : now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC);
	f = fopen(path, "a");
	if (!f)
		die(path);
	/* one before the span and one after it, left out; 5 W within it (and
	 * 9 W at the end), two bad lines */
	fprintf(f, "%.9f,100\n", (double)(t0 + off - 10000000000ull) * 1e-9);
	fprintf(f, "%.9f,5\n", (double)(t0 + off + 50000000) * 1e-9);
	fprintf(f, "not a line\n");
	fprintf(f, "%.9f;5 W\n", (double)(t0 + off + 100000000) * 1e-9);
	fprintf(f, "%.9f,five\n", (double)(t0 + off + 120000000) * 1e-9);
	fprintf(f, "%.9f,9\n", (double)(t0 + off + 150000000) * 1e-9);
	fprintf(f, "%.9f,100\n", (double)(t0 + off + 10000000000ull) * 1e-9);
	fclose(f);
	sleep_ms(200);
	if (CHECK_EQ_U64(power_meter_stop(m, &res, err, sizeof(err)), 0)) {
		double before = (double)(t0 + 100000000 - res.t0_ns) * 1e-9,
		       after = (double)(res.t1_ns - t0 - 150000000) * 1e-9;

		CHECK_EQ_U64(res.nsamples, 3);
		CHECK_EQ_U64(res.failed, 2);
		/* 5 W held from the start, to 9 W over 50 ms, 9 W held to the end
		 * (the clocks' offset is known to a few µs) */
		CHECK(fabs(res.joules - (5 * before + 7 * 0.05 + 9 * after)) < 1e-3);
	} else {
		printf("  %s\n", err);
	}
	power_meter_free(m);
	power_close(ps);
	/* a log without a line in the span */
	ps = open_ok(spec, spec);
	if (ps) {
		CHECK_EQ_U64(meter_span(ps, 0, 1, &m, &res, err, sizeof(err)), -ENODATA);
		snprintf(spec, sizeof(spec), "meter log '%s' has no line between the start and the end of the run",
		         path);
		CHECK_STR(err, spec);
		power_meter_free(m);
	}
	power_close(ps);
	snprintf(spec, sizeof(spec), "csv:%s/missing.csv", base);
	CHECK(!power_open(spec, err, sizeof(err)));
	snprintf(spec, sizeof(spec), "cannot read meter log '%s/missing.csv': No such file or directory", base);
	CHECK_STR(err, spec);
}

static void test_trace(void)
{
	struct power_sample s[3] = { { 1000000000ull, 1.5 }, { 1100000000ull, 2.0000004 }, { 1300000000ull, 0 } };
	const char meta[] = "layerprof=0\npower.sources=cmd:meter;x,rapl\npower.interval_ms=100\ncommand=x\n";
	uint8_t buf[POWERTRACE_CHUNK_BYTES(3)], bad[4] = { 9, 1, 0, 0 };
	struct walk_ops ops = { 0 };
	struct powertrace pt;
	struct walk w;
	char err[300];
	size_t len = powertrace_encode(1, s, 3, buf);

	/* 1, 3, then 1e9 ns, 1.5e6 µW (3 + 3 bytes), ... */
	CHECK_EQ_U64(buf[0], 1);
	CHECK_EQ_U64(buf[1], 3);
	powertrace_init(&pt);
	powertrace_walk_ops(&pt, &ops);
	if (walk_open(&w, NULL, NULL, err, sizeof(err)))
		die("walk_open");
	CHECK_EQ_U64(walk_begin(&w, &ops), 0);
	CHECK_EQ_U64(walk_feed(&w, LP_CHUNK_META, (const uint8_t *)meta, sizeof(meta) - 1), 0);
	CHECK_EQ_U64(walk_feed(&w, LP_CHUNK_POWER, buf, len), 0);
	CHECK_EQ_U64(walk_feed(&w, LP_CHUNK_POWER, bad, 2), 0);       /* a source past the bound */
	CHECK_EQ_U64(walk_feed(&w, LP_CHUNK_POWER, buf, len - 1), 0); /* cut short */
	walk_end(&w);
	CHECK(powertrace_finish(&pt, &w));
	CHECK_EQ_U64(pt.nsources, 2);
	CHECK_STR(pt.names[0], "cmd:meter;x");
	CHECK_STR(pt.names[1], "rapl");
	CHECK_EQ_U64(pt.bad_chunks, 2);
	CHECK_EQ_U64(pt.n[0], 0);
	if (CHECK_EQ_U64(pt.n[1], 3)) {
		CHECK_EQ_U64(pt.samples[1][0].ns, 1000000000ull);
		CHECK_EQ_U64(pt.samples[1][2].ns, 1300000000ull);
		CHECK(pt.samples[1][0].watts == 1.5);
		CHECK(pt.samples[1][1].watts == 2.0); /* µW */
		CHECK(pt.samples[1][2].watts == 0);
	}
	/* (1.5 + 2) / 2 x 0.1 + 2 / 2 x 0.2 */
	CHECK(fabs(powertrace_joules(&pt, 1, 1000000000ull, 1300000000ull) - 0.375) < 1e-12);
	CHECK(powertrace_joules(&pt, 0, 0, 1) == -1);
	CHECK(powertrace_joules(&pt, 99, 0, 1) == -1);
	powertrace_release(&pt);
	powertrace_release(&pt);
	walk_release(&w);
}

int main(void)
{
	char base[] = "/tmp/layerprof-test-power-XXXXXX", cmd[PATH_MAX + 16];

	if (!mkdtemp(base))
		die("mkdtemp");
	snprintf(root, sizeof(root), "%s/sys", base);
	make_tree(root);
	test_list(root);
	test_kinds(root);
	test_auto(base);
	test_parse();
	test_cmd();
	test_integrate();
	test_meter_cmd();
	test_meter_energy(base);
	test_csv(base, false);
	test_csv(base, true);
	test_trace();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd))
		printf("cannot remove %s\n", base);
	return check_summary();
}
