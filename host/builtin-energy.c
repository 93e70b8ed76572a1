/* layerprof energy: the subcommands' table (sources, train, check) and
 * what train and check share (energy.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ctrnames.h"
#include "common/exepath.h"
#include "host/builtin.h"
#include "host/energy.h"
#include "host/recctr.h"

static const struct builtin_sub energy_subs[] = {
	{ "sources", energy_sources_cmd, "the machine's power and energy sensors (RAPL, hwmon, battery)" },
	{ "train", energy_train_cmd, "fit a model of this machine's power from event rates, with a meter" },
	{ "check", energy_check_cmd, "run programs: the model's prediction beside a meter's measurement" },
};

#define ENERGY_NSUBS (sizeof(energy_subs) / sizeof(energy_subs[0]))

static const char energy_intro[] = "Energy without a meter: a linear model of the machine's power from event rates,\n"
                                   "trained once against a meter, then applied to counts (report --energy, tune).\n"
                                   "See docs/energy.md.\n";

int cmd_energy(int argc, char **argv)
{
	return builtin_subcommand("energy", energy_intro, energy_subs, ENERGY_NSUBS, argc, argv);
}

int energy_work_path(char *out)
{
	static const char *const rel[] = { "/layerprof-work", "/../workload/layerprof-work" };

	return builtin_program_path(ENERGY_WORK_ENV, rel, sizeof(rel) / sizeof(rel[0]), out);
}

/* Appends "; " and text to buf (cut to fit). */
static void append_reason(char *buf, size_t size, const char *text)
{
	size_t len = strlen(buf);

	if (!text[0] || len + 1 >= size)
		return;
	snprintf(buf + len, size - len, "%s%s", len ? "; " : "", text);
}

/* One group of at most LP_COUNTERS_MAX names, probed. */
static int probe_group(const char *group, char (*names)[EMODEL_NAME_MAX], uint32_t *n, char *unavailable,
                       size_t unavailable_size, char *err, size_t errlen)
{
	struct recctr rc;
	char why[2600];
	int r;

	memset(&rc, 0, sizeof(rc));
	r = recctr_option(&rc, group, err, errlen);
	if (r)
		return r;
	/* nothing of layerprof runs in the programs: no gates to read them */
	rc.no_gates = true;
	r = recctr_probe(&rc, why, sizeof(why));
	append_reason(unavailable, unavailable_size, rc.unavailable);
	if (r)
		return 0; /* none of this group: rc.unavailable says why */
	for (uint32_t i = 0; i < rc.n; i++)
		snprintf(names[(*n)++], EMODEL_NAME_MAX, "%s", rc.set[i].name);
	return 0;
}

int energy_probe(const char *list, char (*names)[EMODEL_NAME_MAX], uint32_t *n, char *unavailable,
                 size_t unavailable_size, char *err, size_t errlen)
{
	char group[LP_COUNTERS_MAX * CTRNAME_MAX];
	const char *p = list;
	uint32_t in_group = 0, total = 0;
	size_t len = 0;
	int r;

	*n = 0;
	unavailable[0] = group[0] = '\0';
	while (*p) {
		const char *end = strchr(p, ',');
		size_t w = end ? (size_t)(end - p) : strlen(p);

		if (++total > ENERGY_EVENTS_MAX) {
			snprintf(err, errlen, "more than %u events", ENERGY_EVENTS_MAX);
			return -E2BIG;
		}
		if (w >= CTRNAME_MAX) {
			snprintf(err, errlen, "event name '%.*s...' is too long", 32, p);
			return -EINVAL;
		}
		len += (size_t)snprintf(group + len, sizeof(group) - len, "%s%.*s", in_group ? "," : "", (int)w, p);
		p += w;
		if (*p == ',')
			p++;
		if (++in_group == LP_COUNTERS_MAX || !*p) {
			r = probe_group(group, names, n, unavailable, unavailable_size, err, errlen);
			if (r)
				return r;
			group[0] = '\0';
			len = 0;
			in_group = 0;
		}
	}
	if (!total) {
		snprintf(err, errlen, "no event given");
		return -EINVAL;
	}
	/* the same event twice, in two groups */
	for (uint32_t i = 0; i < *n; i++)
		for (uint32_t k = i + 1; k < *n; k++)
			if (!strcmp(names[i], names[k])) {
				snprintf(err, errlen, "event '%s' is given twice", names[i]);
				return -EINVAL;
			}
	return 0;
}

int energy_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end || errno || v < min || v > max) {
		fprintf(stderr, "layerprof energy: invalid %s '%s': a number from %u to %u\n", opt, arg, min, max);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

int energy_parse_u64(const char *opt, const char *arg, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (arg[0] < '0' || arg[0] > '9' || *end || errno) {
		fprintf(stderr, "layerprof energy: invalid %s '%s': a number from 0 to %llu\n", opt, arg,
		        (unsigned long long)UINT64_MAX);
		return -EINVAL;
	}
	*out = (uint64_t)v;
	return 0;
}

int energy_parse_f64(const char *opt, const char *arg, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v < min || v > max) {
		fprintf(stderr, "layerprof energy: invalid %s '%s': a number from %g to %g\n", opt, arg, min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}
