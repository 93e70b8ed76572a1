/* layerprof energy sources: the power and energy sources this machine
 * shows (RAPL domains, hwmon sensors, batteries), as a table or JSON,
 * with --read one reading of each. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/builtin.h"
#include "host/energy-sources.h"
#include "host/lib/energy/power.h"
#include "host/lib/util/json.h"

/* An energy counter is read twice, this far apart, for its mean power. */
#define SOURCES_READ_SPAN_MS 100u

static const char sources_usage[] = "usage: layerprof energy sources [--format text|json] [--read]\n"
                                    "\n"
                                    "Lists the power and energy sources of this machine that layerprof reads\n"
                                    "(record --power, energy train and check): RAPL domains (powercap), hwmon\n"
                                    "power and energy sensors, batteries; their names are what --power takes.\n"
                                    "An external meter needs no listing: --power cmd:COMMAND or csv:FILE.\n"
                                    "\n"
                                    "      --format FMT      text (default) or json\n"
                                    "      --read            also one reading of each, in watts (an energy counter\n"
                                    "                        is read twice, 100 ms apart)\n"
                                    "  -h, --help            this text\n"
                                    "\n"
                                    "Exit status: 0 ok, 1 no source on this machine, 2 usage.\n";

/* One reading of d: its watts, or a negative errno with err set. */
static int sources_read_one(const struct power_desc *d, double *watts, char *err, size_t errlen)
{
	struct power_source *ps = power_open(d->name, err, errlen);
	struct power_sample s;
	int r;

	if (!ps)
		return -EIO;
	r = power_read(ps, &s, err, errlen);
	if (r == 1) {
		struct timespec ts = { 0, (long)SOURCES_READ_SPAN_MS * 1000000L };

		nanosleep(&ts, NULL);
		r = power_read(ps, &s, err, errlen);
	}
	power_close(ps);
	if (r < 0)
		return r;
	*watts = s.watts;
	return 0;
}

static const char *sources_reads(const struct power_desc *d)
{
	return d->energy ? "energy" : "power";
}

static void sources_text(const struct power_desc *v, int n, const double *watts, const int *rr)
{
	int wname = 4, wlabel = 5;

	for (int i = 0; i < n; i++) {
		int a = (int)strlen(v[i].name), b = (int)strlen(v[i].label);

		wname = a > wname ? a : wname;
		wlabel = b > wlabel ? b : wlabel;
	}
	printf("%-*s  %-7s  %-6s  %-*s  %-8s  %s%s\n", wname, "NAME", "KIND", "READS", wlabel, "LABEL", "READABLE",
	       watts ? "WATTS     " : "", "PATH");
	for (int i = 0; i < n; i++) {
		char w[32] = "";

		if (watts && !rr[i])
			snprintf(w, sizeof(w), "%-10.3f", watts[i]);
		else if (watts)
			snprintf(w, sizeof(w), "%-10s", "-");
		printf("%-*s  %-7s  %-6s  %-*s  %-8s  %s%s\n", wname, v[i].name, power_kind_name(v[i].kind),
		       sources_reads(&v[i]), wlabel, v[i].label[0] ? v[i].label : "-", v[i].readable ? "yes" : "no", w,
		       v[i].path);
	}
}

static void sources_json(const struct power_desc *v, int n, const double *watts, const int *rr)
{
	struct json j;

	json_init(&j, stdout);
	json_array_begin(&j, NULL);
	for (int i = 0; i < n; i++) {
		json_object_begin(&j, NULL);
		json_str(&j, "name", v[i].name);
		json_str(&j, "kind", power_kind_name(v[i].kind));
		json_str(&j, "reads", sources_reads(&v[i]));
		json_str(&j, "label", v[i].label);
		json_str(&j, "path", v[i].path);
		json_bool(&j, "readable", v[i].readable);
		if (v[i].energy && v[i].range_uj)
			json_u64(&j, "range_uj", v[i].range_uj);
		else if (v[i].energy)
			json_null(&j, "range_uj");
		if (watts && !rr[i])
			json_f64(&j, "watts", watts[i]);
		else if (watts)
			json_null(&j, "watts");
		json_object_end(&j);
	}
	json_array_end(&j);
	json_finish(&j);
}

int energy_sources_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "read", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct power_desc *v = NULL;
	double *watts = NULL;
	int *rr = NULL;
	bool json = false, rd = false;
	int c, n, code = LP_EXIT_OK;
	char why[600];

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof energy: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'r':
			rd = true;
			break;
		case 'h':
			fputs(sources_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(sources_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "layerprof energy: sources takes no operand ('%s')\n", argv[optind]);
		return LP_EXIT_USAGE;
	}
	v = calloc(POWER_SOURCES_MAX, sizeof(*v));
	watts = calloc(POWER_SOURCES_MAX, sizeof(*watts));
	rr = calloc(POWER_SOURCES_MAX, sizeof(*rr));
	if (!v || !watts || !rr) {
		fprintf(stderr, "layerprof energy: out of memory\n");
		code = LP_EXIT_FAILURE;
		goto out;
	}
	n = power_list(NULL, v, POWER_SOURCES_MAX);
	if (n < 0) {
		fprintf(stderr, "layerprof energy: cannot list the power sources under '%s': %s\n", power_sysfs_root(),
		        strerror(-n));
		code = LP_EXIT_FAILURE;
		goto out;
	}
	for (int i = 0; rd && i < n; i++) {
		char err[600];

		rr[i] = v[i].readable ? sources_read_one(&v[i], &watts[i], err, sizeof(err)) : -EACCES;
		if (rr[i] && v[i].readable)
			fprintf(stderr, "layerprof energy: %s\n", err);
	}
	if (json)
		sources_json(v, n, rd ? watts : NULL, rr);
	else if (n)
		sources_text(v, n, rd ? watts : NULL, rr);
	if (!n) {
		power_none_why(NULL, why, sizeof(why));
		fprintf(stderr, "layerprof energy: %s\n", why);
		code = LP_EXIT_FAILURE;
	}
out:
	free(v);
	free(watts);
	free(rr);
	return code;
}
