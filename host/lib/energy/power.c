/* Power sources: opening one by its spec, reading it, and what every kind
 * shares (watts from text, the sample vectors, integration over a span).
 * The kinds themselves are in powersys.c (sysfs) and powerext.c (a
 * command, a CSV log). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/energy/powerimpl.h"

const char *power_sysfs_root(void)
{
	const char *env = getenv("LAYERPROF_SYSFS");

	return env && *env ? env : "/sys";
}

const char *power_kind_name(enum power_kind kind)
{
	switch (kind) {
	case POWER_RAPL:
		return "rapl";
	case POWER_HWMON:
		return "hwmon";
	case POWER_BATTERY:
		return "battery";
	case POWER_CMD:
		return "cmd";
	case POWER_CSV:
		return "csv";
	}
	return "?";
}

void power_none_why(const char *sysfs, char *buf, size_t size)
{
	snprintf(buf, size,
	         "no power source on this machine (no RAPL domain under %s/class/powercap, no hwmon power or energy "
	         "sensor, no battery); give an external meter with --power cmd:COMMAND or csv:FILE",
	         sysfs ? sysfs : power_sysfs_root());
}

/* A source's name from its kind's prefix and what follows, cut with "..."
 * when too long for POWER_NAME_MAX. */
static void power_set_name(struct power_source *ps, const char *prefix, const char *rest)
{
	size_t plen = strlen(prefix), rlen = strlen(rest), room = sizeof(ps->name) - 1 - plen;

	memcpy(ps->name, prefix, plen);
	if (rlen > room) {
		memcpy(ps->name + plen, rest, room - 3);
		memcpy(ps->name + plen + room - 3, "...", 4);
	} else {
		memcpy(ps->name + plen, rest, rlen + 1);
	}
}

struct power_source *power_open(const char *spec, char *err, size_t errlen)
{
	struct power_source *ps;
	int r;

	if (!spec || !*spec) {
		snprintf(err, errlen,
		         "empty power source: auto, a name `layerprof energy sources` lists, "
		         "cmd:COMMAND or csv:FILE");
		return NULL;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&ps->lock, NULL);
	if (!strncmp(spec, "cmd:", 4)) {
		ps->kind = POWER_CMD;
		power_set_name(ps, "cmd:", spec + 4);
		r = powerext_open_cmd(ps, spec + 4, err, errlen);
	} else if (!strncmp(spec, "csv:", 4)) {
		ps->kind = POWER_CSV;
		power_set_name(ps, "csv:", spec + 4);
		r = powerext_open_csv(ps, spec + 4, err, errlen);
	} else {
		r = powersys_open(ps, spec, err, errlen);
	}
	if (r) {
		power_close(ps);
		return NULL;
	}
	return ps;
}

const char *power_name(const struct power_source *ps)
{
	return ps->name;
}

bool power_can_read(const struct power_source *ps)
{
	return ps->kind != POWER_CSV;
}

void power_source_set_pids(struct power_source *ps, const int *pids, size_t n)
{
	char buf[POWER_PIDS_MAX];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char one[16];
		int w = snprintf(one, sizeof(one), "%s%d", i ? "," : "", pids[i]);

		if (w < 0 || len + (size_t)w >= sizeof(buf))
			break;
		memcpy(buf + len, one, (size_t)w + 1);
		len += (size_t)w;
	}
	pthread_mutex_lock(&ps->lock);
	memcpy(ps->pids, buf, len + 1);
	pthread_mutex_unlock(&ps->lock);
}

int power_read(struct power_source *ps, struct power_sample *s, char *err, size_t errlen)
{
	switch (ps->kind) {
	case POWER_CMD:
		return powerext_read_cmd(ps, s, err, errlen);
	case POWER_CSV:
		snprintf(err, errlen, "%s is a meter's log: it is read after the run, not sample by sample", ps->name);
		return -EOPNOTSUPP;
	default:
		return powersys_read(ps, s, err, errlen);
	}
}

void power_close(struct power_source *ps)
{
	if (!ps)
		return;
	pthread_mutex_destroy(&ps->lock);
	free(ps->command);
	free(ps->csv);
	free(ps);
}

int power_parse_watts(const char *text, double *watts)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {
		{ "", 1 }, { "W", 1 }, { "mW", 1e-3 }, { "uW", 1e-6 }, { "\xc2\xb5W", 1e-6 }, { "kW", 1e3 },
	};
	const char *p = text;
	char *end;
	double v;

	while (*p == ' ' || *p == '\t')
		p++;
	/* strtod also takes "inf", "nan" and hex: only decimal numbers */
	if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == '+'))
		return -EINVAL;
	errno = 0;
	v = strtod(p, &end);
	if (end == p || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	p = end;
	while (*p == ' ' || *p == '\t')
		p++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].unit);
		const char *q = p + n;

		if (strncmp(p, units[i].unit, n))
			continue;
		while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')
			q++;
		if (*q)
			continue;
		*watts = v * units[i].scale;
		return 0;
	}
	return -EINVAL;
}

int power_samples_push(struct power_sample **v, uint32_t *n, uint32_t *cap, uint64_t *dropped,
                       const struct power_sample *s)
{
	if (*n >= POWER_SAMPLES_MAX) {
		(*dropped)++;
		return 0;
	}
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 256;
		struct power_sample *nv;

		if (ncap > POWER_SAMPLES_MAX)
			ncap = POWER_SAMPLES_MAX;
		nv = realloc(*v, (size_t)ncap * sizeof(**v));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = *s;
	return 0;
}

/* The power at ns on the line through a and b. */
static double power_at(const struct power_sample *a, const struct power_sample *b, uint64_t ns)
{
	if (b->ns == a->ns)
		return b->watts;
	return a->watts + (b->watts - a->watts) * ((double)ns - (double)a->ns) / ((double)b->ns - (double)a->ns);
}

/* The integral over the part of [lo, hi] within [t0, t1] of the line
 * through a and b (a constant when a == b), in J. */
static double power_piece(const struct power_sample *a, const struct power_sample *b, uint64_t lo, uint64_t hi,
                          uint64_t t0, uint64_t t1)
{
	uint64_t x0 = lo > t0 ? lo : t0, x1 = hi < t1 ? hi : t1;

	if (x1 <= x0)
		return 0;
	return (power_at(a, b, x0) + power_at(a, b, x1)) / 2 * (double)(x1 - x0) * 1e-9;
}

double power_integrate(const struct power_sample *s, uint32_t n, uint64_t t0_ns, uint64_t t1_ns)
{
	double j = 0;

	if (!n)
		return -1;
	if (t1_ns <= t0_ns)
		return 0;
	j += power_piece(&s[0], &s[0], 0, s[0].ns, t0_ns, t1_ns);
	for (uint32_t i = 0; i + 1 < n; i++)
		j += power_piece(&s[i], &s[i + 1], s[i].ns, s[i + 1].ns, t0_ns, t1_ns);
	j += power_piece(&s[n - 1], &s[n - 1], s[n - 1].ns, UINT64_MAX, t0_ns, t1_ns);
	return j;
}
