/* layerprof energy check: programs run one after another, each measured
 * with the model's events, and the model's prediction of their power and
 * energy printed beside what a meter measured over the same span (when
 * one is given): how well the model holds for programs it was not trained
 * on. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "host/builtin.h"
#include "host/energy.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/energy/power.h"
#include "host/lib/util/json.h"
#include "host/runmeasure.h"

/* Programs one check runs, at most. */
#define CHECK_PROGS_MAX 64u
/* The width of the program column. */
#define CHECK_NAME_WIDTH 40

static const char check_usage[] =
    "usage: layerprof energy check --model FILE [options] -- PROG [ARGS] [--and PROG [ARGS]]...\n"
    "\n"
    "Runs each program (one after another; their output is discarded), counting\n"
    "the model's events from outside, and prints the power and energy the model\n"
    "predicts; with --power also what the meter measured over the same span (from\n"
    "its reading just before the program starts to its reading just after it\n"
    "ends) and the model's error.  See docs/energy.md.\n"
    "\n"
    "      --model FILE        the model (from energy train)\n"
    "      --power SPEC        a meter to compare with (see 'energy sources';\n"
    "                          cmd:COMMAND or csv:FILE for an external one)\n"
    "      --power-interval MS a reading every MS ms (default 100)\n"
    "      --timeout S         a program still running after S seconds is killed\n"
    "      --format FMT        text (default) or json\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 ok, 1 a bad model, no meter, events the machine cannot count, a\n"
    "program that cannot start, 2 usage.\n";

/* One program's outcome. */
struct check_row {
	char *const *argv;
	struct runmeasure rm;
	double seconds; /* the span the watts and joules are over */
	double pred_w, pred_j;
};

struct check {
	const char *model_path, *power_spec;
	unsigned interval_ms;
	double timeout_s;
	bool json;
	struct emodel m;
	char events[LP_COUNTERS_MAX * EMODEL_NAME_MAX];
	struct power_source *ps;
	struct check_row rows[CHECK_PROGS_MAX];
	uint32_t nrows;
};

/* The model's events, joined; more than one run can count: refused. */
static int check_events(struct check *c)
{
	size_t len = 0;

	if (c->m.nterms > LP_COUNTERS_MAX) {
		fprintf(stderr, "layerprof energy: model '%s' has %u events: at most %u are counted at once\n",
		        c->model_path, c->m.nterms, LP_COUNTERS_MAX);
		return LP_EXIT_FAILURE;
	}
	c->events[0] = '\0';
	for (uint32_t i = 0; i < c->m.nterms; i++)
		len += (size_t)snprintf(c->events + len, sizeof(c->events) - len, "%s%s", i ? "," : "",
		                        c->m.terms[i].name);
	return 0;
}

/* A warning when the model was made on another kind of machine. */
static void check_machine(const struct check *c)
{
	struct emodel here;

	memset(&here, 0, sizeof(here));
	emodel_describe_machine(&here);
	/* a model that does not say its CPU differs only by its architecture */
	if (strcmp(here.machine.arch, c->m.machine.arch) ||
	    (c->m.machine.cpu[0] && strcmp(here.machine.cpu, c->m.machine.cpu)))
		fprintf(stderr,
		        "layerprof energy: warning: model '%s' was made on another machine (%s, %s; this one is %s, "
		        "%s): its predictions may not hold here\n",
		        c->model_path, c->m.machine.arch, c->m.machine.cpu, here.machine.arch, here.machine.cpu);
}

/* Runs row r's program.  0 or the exit code. */
static int check_run(struct check *c, struct check_row *row)
{
	char *const *argvs[1] = { row->argv };
	struct runmeasure_opts o;
	uint32_t map[EMODEL_TERMS_MAX];
	char err[1024];
	uint64_t span;

	memset(&o, 0, sizeof(o));
	o.counters = c->events;
	o.power = c->ps;
	o.power_interval_ms = c->interval_ms;
	o.quiet = true;
	o.timeout_s = c->timeout_s;
	if (runmeasure_run(argvs, 1, &o, &row->rm, err, sizeof(err))) {
		fprintf(stderr, "layerprof energy: %s\n", err);
		return LP_EXIT_FAILURE;
	}
	if (emodel_bind(&c->m, (const char(*)[EMODEL_NAME_MAX])row->rm.names, row->rm.n, map, err, sizeof(err))) {
		fprintf(stderr, "layerprof energy: %s\n", err);
		return LP_EXIT_FAILURE;
	}
	/* beside a meter, over its span: the same joules the meter saw */
	span = row->rm.has_power ? row->rm.power_span_ns : row->rm.span_ns;
	row->seconds = (double)span * 1e-9;
	row->pred_w = span ? emodel_power(&c->m, map, row->rm.counts, span) : NAN;
	row->pred_j = emodel_energy(&c->m, map, row->rm.counts, span, 1.0);
	return 0;
}

static void status_text(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "?");
}

static double error_pct(const struct check_row *row)
{
	if (!row->rm.has_power || !(row->rm.joules > 0))
		return NAN;
	return (row->pred_j - row->rm.joules) / row->rm.joules * 100.0;
}

static void check_text(const struct check *c)
{
	printf("model %s: const", c->model_path);
	for (uint32_t i = 0; i < c->m.nterms; i++)
		printf(" + %s", c->m.terms[i].name);
	printf(" (trained against %s)\n", c->m.source);
	if (c->ps)
		printf("meter %s\n\n", power_name(c->ps));
	else
		printf("no meter: predictions only (give one with --power)\n\n");
	printf("%-*s %-9s %8s %9s %9s", CHECK_NAME_WIDTH, "program", "status", "seconds", "model W", "model J");
	if (c->ps)
		printf(" %9s %9s %8s", "meter W", "meter J", "error");
	putchar('\n');
	for (uint32_t i = 0; i < c->nrows; i++) {
		const struct check_row *row = &c->rows[i];
		char name[CHECK_NAME_WIDTH + 1], st[32];
		size_t len = 0;

		name[0] = '\0';
		for (char *const *a = row->argv; *a && len < sizeof(name); a++) {
			/* the program by its file's name, its arguments whole */
			const char *w = a == row->argv && strrchr(*a, '/') ? strrchr(*a, '/') + 1 : *a;

			len += (size_t)snprintf(name + len, sizeof(name) - len, "%s%s", len ? " " : "", w);
		}
		if (len >= sizeof(name)) /* cut */
			memcpy(name + sizeof(name) - 4, "...", 4);
		status_text(row->rm.status[0], st, sizeof(st));
		printf("%-*s %-9s %8.3f %9.4g %9.4g", CHECK_NAME_WIDTH, name, row->rm.timed_out ? "timed out" : st,
		       row->seconds, row->pred_w, row->pred_j);
		if (c->ps)
			printf(" %9.4g %9.4g %+7.1f%%", row->rm.mean_watts, row->rm.joules, error_pct(row));
		putchar('\n');
	}
}

static void json_num(struct json *j, const char *key, double v)
{
	if (isfinite(v))
		json_f64(j, key, v);
	else
		json_null(j, key);
}

static void check_json(const struct check *c)
{
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_str(&j, "model", c->model_path);
	if (c->ps)
		json_str(&j, "power", power_name(c->ps));
	else
		json_null(&j, "power");
	json_array_begin(&j, "programs");
	for (uint32_t i = 0; i < c->nrows; i++) {
		const struct check_row *row = &c->rows[i];
		int st = row->rm.status[0];

		json_object_begin(&j, NULL);
		json_array_begin(&j, "argv");
		for (char *const *a = row->argv; *a; a++)
			json_str(&j, NULL, *a);
		json_array_end(&j);
		if (WIFEXITED(st))
			json_i64(&j, "exit", WEXITSTATUS(st));
		else
			json_null(&j, "exit");
		if (WIFSIGNALED(st))
			json_i64(&j, "signal", WTERMSIG(st));
		else
			json_null(&j, "signal");
		json_bool(&j, "timed_out", row->rm.timed_out);
		json_num(&j, "seconds", row->seconds);
		json_object_begin(&j, "counts");
		for (uint32_t k = 0; k < row->rm.n; k++)
			json_u64(&j, row->rm.names[k], row->rm.counts[k]);
		json_object_end(&j);
		json_object_begin(&j, "model");
		json_num(&j, "watts", row->pred_w);
		json_num(&j, "joules", row->pred_j);
		json_object_end(&j);
		if (row->rm.has_power) {
			json_object_begin(&j, "meter");
			json_num(&j, "watts", row->rm.mean_watts);
			json_num(&j, "joules", row->rm.joules);
			json_u64(&j, "samples", row->rm.nsamples);
			json_object_end(&j);
		} else {
			json_null(&j, "meter");
		}
		json_num(&j, "error_pct", error_pct(row));
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

/* The options into c, the programs from argv[optind..] split at "--and".
 * Returns 0 to go on, else the exit code with *stop set (--help: 0). */
static int check_options(struct check *c, int argc, char **argv, bool *stop)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "power", required_argument, NULL, 'P' },
		{ "power-interval", required_argument, NULL, 'I' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t v;
	int ch, i;

	*stop = true;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'm':
			c->model_path = optarg;
			break;
		case 'P':
			c->power_spec = optarg;
			break;
		case 'I':
			if (energy_parse_u32("--power-interval", optarg, 1, 60000, &v))
				return LP_EXIT_USAGE;
			c->interval_ms = v;
			break;
		case 'T':
			if (energy_parse_f64("--timeout", optarg, 0.001, 1e6, &c->timeout_s))
				return LP_EXIT_USAGE;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof energy: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			c->json = !strcmp(optarg, "json");
			break;
		case 'h':
			fputs(check_usage, stdout);
			return LP_EXIT_OK;
		default:
			fputs(check_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (!c->model_path) {
		fprintf(stderr, "layerprof energy: check needs --model FILE (made by energy train)\n");
		return LP_EXIT_USAGE;
	}
	/* PROG ARGS --and PROG ARGS ...: each "--and" ends a program's argv */
	for (i = optind; i < argc;) {
		if (c->nrows == CHECK_PROGS_MAX) {
			fprintf(stderr, "layerprof energy: more than %u programs\n", CHECK_PROGS_MAX);
			return LP_EXIT_USAGE;
		}
		if (!strcmp(argv[i], "--and")) {
			fprintf(stderr, "layerprof energy: '--and' with no program before it\n");
			return LP_EXIT_USAGE;
		}
		c->rows[c->nrows++].argv = argv + i;
		while (i < argc && strcmp(argv[i], "--and"))
			i++;
		if (i < argc) {
			argv[i++] = NULL;
			if (i == argc) {
				fprintf(stderr, "layerprof energy: '--and' with no program after it\n");
				return LP_EXIT_USAGE;
			}
		}
	}
	if (!c->nrows) {
		fprintf(stderr, "layerprof energy: check needs a program: -- PROG [ARGS]\n");
		return LP_EXIT_USAGE;
	}
	*stop = false;
	return 0;
}

int energy_check_cmd(int argc, char **argv)
{
	struct check *c = calloc(1, sizeof(*c));
	char err[1024];
	bool stop;
	int r;

	if (!c) {
		fprintf(stderr, "layerprof energy: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	r = check_options(c, argc, argv, &stop);
	if (stop)
		goto out;
	if (emodel_load(&c->m, c->model_path, err, sizeof(err))) {
		fprintf(stderr, "layerprof energy: %s\n", err);
		r = LP_EXIT_FAILURE;
		goto out;
	}
	r = check_events(c);
	if (r)
		goto out;
	check_machine(c);
	if (c->power_spec) {
		c->ps = power_open(c->power_spec, err, sizeof(err));
		if (!c->ps) {
			fprintf(stderr, "layerprof energy: --power: %s\n", err);
			r = LP_EXIT_FAILURE;
			goto out;
		}
	}
	for (uint32_t i = 0; i < c->nrows && !r; i++)
		r = check_run(c, &c->rows[i]);
	if (r)
		goto out;
	if (c->json)
		check_json(c);
	else
		check_text(c);
	if (fflush(stdout)) {
		fprintf(stderr, "layerprof energy: cannot write the output: %s\n", strerror(errno));
		r = LP_EXIT_FAILURE;
	}
out:
	power_close(c->ps);
	free(c);
	return r;
}
