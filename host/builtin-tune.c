/* layerprof tune: the automatic optimiser.  Runs a command (or, with
 * --corun, several at once) under configurations of its {NAME}
 * parameters and searches for the best for time, energy or their product
 * (host/lib/tune/).  Time is measured here (tune/spawn.c); energy through
 * runmeasure, with an energy model applied to the counts or a power
 * source's joules.  The producer-consumer strategy asks `record --sync`
 * (this very executable) which side is slow. */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/energy/power.h"
#include "host/lib/tune/spawn.h"
#include "host/lib/tune/tune.h"
#include "host/lib/tune/tunereport.h"
#include "host/lib/tune/verdict.h"
#include "host/lib/util/outfile.h"
#include "host/runmeasure.h"

static const char tune_usage[] =
    "usage: layerprof tune --param NAME=RANGE ... [options] -- CMD ARGS...\n"
    "       layerprof tune --corun --param NAME=RANGE ... -- CMD ARGS... --and [--param NAME=RANGE ...] [--] CMD "
    "ARGS...\n"
    "\n"
    "Runs CMD under configurations of its parameters ({NAME} in its words is\n"
    "replaced by the value; no shell) and searches for the best one for the\n"
    "objective.  Each configuration runs --repeat times (the median counts); a\n"
    "configuration is better only by more than the noise.  Every configuration\n"
    "tried is printed, then the best, the baseline and the gain over it.  See\n"
    "docs/tune.md.\n"
    "\n"
    "      --param NAME=A..B[:STEP]  integers from A to B (step STEP, default 1)\n"
    "      --param NAME=v1,v2,...    these values, in this order\n"
    "      --strategy S      grid (all, in order), greedy (from each first value,\n"
    "                        one step up while it improves; the default), pattern\n"
    "                        (compass search with step halving, for large spaces),\n"
    "                        corun (greedy over the commands run at once: --corun),\n"
    "                        producer-consumer (--producers, --consumers, --tile)\n"
    "      --objective O     time (default: wall seconds, the first start to the\n"
    "                        last end), energy (joules) or edp (joules x seconds)\n"
    "      --model M         energy from the model M (energy train) applied to\n"
    "                        the events counted over each run\n"
    "      --power SPEC      energy from a power source (energy sources)\n"
    "      --repeat K        runs of each configuration (default 3)\n"
    "      --max-repeat K    runs at most while a difference is within twice the\n"
    "                        noise (default 7)\n"
    "      --noise PCT       the least noise assumed (default 2); the baseline's\n"
    "                        own spread when larger\n"
    "      --budget N        configurations at most\n"
    "      --baseline CFG    NAME=V,... to compare with (default: the strategy's\n"
    "                        first configuration); pattern starts there\n"
    "      --corun           several commands run at once, separated by --and;\n"
    "                        the parameters given before a command are its own\n"
    "      --producers NAME, --consumers NAME, --tile NAME\n"
    "                        the producer-consumer strategy's parameters: the\n"
    "                        threads of each side, and the tile size (its first\n"
    "                        value is the untiled size N; N/2, N/3, ... are tried)\n"
    "      --sync-output DIR keep the record --sync trace of producer-consumer\n"
    "      --timeout S       a run still going after S seconds is killed (failed)\n"
    "      --format FMT      text (default) or json\n"
    "      --html FILE       also a page with the table and SVG plots\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 1 a command could not run, the baseline failed, no power\n"
    "source or a bad model, 2 usage.\n";

/* How each run is measured. */
struct measure_ctx {
	double timeout_s;
	bool energy; /* through runmeasure: model or power */
	struct emodel *model;
	uint32_t map[EMODEL_TERMS_MAX];
	char events[EMODEL_TERMS_MAX * EMODEL_NAME_MAX];
	struct power_source *power;
};

static void tune_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "layerprof tune: %s\n", msg);
}

static void tune_progress(void *ctx, const struct tune_space *sp, const struct tune_entry *e)
{
	char cfg[512];

	(void)ctx;
	if (!e->failed)
		fprintf(stderr, "layerprof tune: %s: %.6f s\n", tune_space_format(sp, &e->c, cfg, sizeof(cfg)),
		        e->med_seconds);
}

/* The time objective: tune/spawn.c. */
static int measure_time(void *ctx, char *const *const *argvs, uint32_t n, struct tune_sample *out, char *err,
                        size_t errlen)
{
	const struct measure_ctx *m = ctx;

	return tune_spawn_run(argvs, n, m->timeout_s, out, err, errlen);
}

/* Energy: runmeasure counts the model's events (or samples the power
 * source) over the run. */
static int measure_energy(void *ctx, char *const *const *argvs, uint32_t n, struct tune_sample *out, char *err,
                          size_t errlen)
{
	struct measure_ctx *m = ctx;
	struct runmeasure_opts o = {
		.counters = m->model ? m->events : NULL,
		.power = m->model ? NULL : m->power,
		.quiet = true,
		.timeout_s = m->timeout_s,
	};
	struct runmeasure rm;
	int r;

	r = runmeasure_run(argvs, n, &o, &rm, err, errlen);
	if (r)
		return r;
	out->seconds = (double)rm.span_ns / 1e9;
	out->timed_out = rm.timed_out;
	if (rm.timed_out) {
		out->failed = true;
		snprintf(out->why, sizeof(out->why), "still running after %.3g s: killed", m->timeout_s);
	}
	for (uint32_t k = 0; k < rm.nprogs && !out->failed; k++) {
		int st = rm.status[k];

		if (WIFEXITED(st) && !WEXITSTATUS(st))
			continue;
		out->failed = true;
		if (WIFEXITED(st))
			snprintf(out->why, sizeof(out->why), "%s exited with status %d", argvs[k][0], WEXITSTATUS(st));
		else
			snprintf(out->why, sizeof(out->why), "%s was killed by signal %d", argvs[k][0], WTERMSIG(st));
	}
	if (m->model) {
		r = emodel_bind(m->model, (const char(*)[EMODEL_NAME_MAX])rm.names, rm.n, m->map, err, errlen);
		if (r)
			return r;
		out->joules = emodel_energy(m->model, m->map, rm.counts, rm.span_ns, 1.0);
	} else if (rm.has_power) {
		/* the meter's span is a little longer than the programs' (its
		 * first reading before they start, its last after they end):
		 * its mean power over the programs' span */
		out->joules = rm.mean_watts * out->seconds;
	} else {
		return error_set(err, errlen, -ENODATA, "the power source gave no reading");
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* The producer-consumer verdict: the command under `record --sync`, read
 * with the sync analysis. */
static int prodcons_verdict(void *ctx, char *const *argv, int *slow, char *line, size_t linelen, char *err,
                            size_t errlen)
{
	const char *keep = ctx;
	char tmp[PATH_MAX] = "", dir[PATH_MAX], exe[PATH_MAX];
	ssize_t len;
	char *rec[TUNE_ARGS_MAX + 10];
	const char *tmpdir = getenv("TMPDIR");
	struct tune_sample s = { 0 };
	char *const *argvs[1] = { rec };
	size_t n = 0;
	int r;

	if (keep) {
		snprintf(dir, sizeof(dir), "%s", keep);
	} else {
		snprintf(tmp, sizeof(tmp), "%s/layerprof-tune-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
		if (!mkdtemp(tmp))
			return error_set(err, errlen, -errno, "cannot make a directory '%s': %s", tmp, strerror(errno));
		snprintf(dir, sizeof(dir), "%s/sync", tmp);
	}
	/* this very executable, by the path /proc/self/exe leads to (the
	 * messages then name it layerprof) */
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		snprintf(exe, sizeof(exe), "/proc/self/exe");
	else
		exe[len] = '\0';
	rec[n++] = exe;
	rec[n++] = "record";
	rec[n++] = "-q";
	rec[n++] = "--sync";
	rec[n++] = "-o";
	rec[n++] = dir;
	rec[n++] = "--";
	for (size_t i = 0; argv[i] && n < TUNE_ARGS_MAX + 9; i++)
		rec[n++] = argv[i];
	rec[n] = NULL;
	r = tune_spawn_run(argvs, 1, 0, &s, err, errlen);
	if (!r && s.failed)
		r = error_set(err, errlen, -ECHILD, "record --sync of the first configuration failed: %s", s.why);
	if (!r)
		r = tune_verdict_read(dir, slow, line, linelen, err, errlen);
	if (tmp[0])
		nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}

/* A number option: a whole number from lo to hi. */
static int parse_uint(const char *opt, const char *arg, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end || errno || v < lo || v > hi) {
		fprintf(stderr, "layerprof tune: invalid %s '%s': a number from %u to %u\n", opt, arg, lo, hi);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

static int parse_double(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (end == arg || *end || errno || !(*out >= lo && *out <= hi)) {
		fprintf(stderr, "layerprof tune: invalid %s '%s': a number from %g to %g\n", opt, arg, lo, hi);
		return -EINVAL;
	}
	return 0;
}

static int param_index(const struct tune_space *sp, const char *opt, const char *name, uint32_t *out)
{
	for (uint32_t i = 0; i < sp->nparams; i++)
		if (!strcmp(sp->params[i].name, name)) {
			*out = i;
			return 0;
		}
	fprintf(stderr, "layerprof tune: %s %s: no such --param\n", opt, name);
	return -EINVAL;
}

/* The commands after the options: split at --and (with --corun), each
 * later one preceded by its own --param words and an optional --. */
static int split_commands(struct tune_space *sp, char **words, int n, bool corun)
{
	char err[LP_ERROR_MAX];
	int i = 0;

	for (uint32_t k = 0;; k++) {
		int start = i;

		while (i < n && strcmp(words[i], "--and"))
			i++;
		if (i < n && !corun) {
			fprintf(stderr, "layerprof tune: --and goes with --corun (commands run at once)\n");
			return -EINVAL;
		}
		if (i == start) {
			fprintf(stderr, "layerprof tune: %s\n",
			        k ? "no command after --and" : "no command: give it after --");
			return -EINVAL;
		}
		if (i < n)
			words[i++] = NULL; /* ends command k: words is argv, NULL-terminated at n */
		if (tune_space_add_prog(sp, words + start, err, sizeof(err))) {
			fprintf(stderr, "layerprof tune: %s\n", err);
			return -EINVAL;
		}
		if (i >= n)
			return 0;
		/* the next command's parameters */
		while (i < n && !strncmp(words[i], "--param", 7)) {
			const char *spec = words[i][7] == '=' ? words[i] + 8 : NULL;

			if (!spec && (words[i][7] || i + 1 >= n)) {
				fprintf(stderr, "layerprof tune: after --and: --param NAME=RANGE, then the command\n");
				return -EINVAL;
			}
			if (!spec)
				spec = words[++i];
			if (tune_space_add(sp, spec, k + 1, err, sizeof(err))) {
				fprintf(stderr, "layerprof tune: %s\n", err);
				return -EINVAL;
			}
			i++;
		}
		if (i < n && !strcmp(words[i], "--"))
			i++;
	}
}

/* --model / --power: what measure_energy needs.  LP_EXIT_OK or the code. */
static int energy_open(struct measure_ctx *m, const char *model, const char *power)
{
	char err[LP_ERROR_MAX];
	size_t len = 0;

	if (model) {
		m->model = calloc(1, sizeof(*m->model));
		if (!m->model) {
			fprintf(stderr, "layerprof tune: out of memory\n");
			return LP_EXIT_FAILURE;
		}
		if (emodel_load(m->model, model, err, sizeof(err))) {
			fprintf(stderr, "layerprof tune: %s\n", err);
			return LP_EXIT_FAILURE;
		}
		for (uint32_t i = 0; i < m->model->nterms; i++)
			len += (size_t)snprintf(m->events + len, sizeof(m->events) - len, "%s%s", i ? "," : "",
			                        m->model->terms[i].name);
	}
	if (power) {
		m->power = power_open(power, err, sizeof(err));
		if (!m->power) {
			fprintf(stderr, "layerprof tune: %s\n", err);
			return LP_EXIT_FAILURE;
		}
	}
	m->energy = model || power;
	return LP_EXIT_OK;
}

static int write_html(const struct tune *t, const char *path)
{
	FILE *f = outfile_open(path);
	int r;

	if (!f) {
		fprintf(stderr, "layerprof tune: cannot write '%s': %s\n", path, outfile_strerror(errno));
		return LP_EXIT_FAILURE;
	}
	r = tunereport_html(f, t);
	if (fclose(f) || r) {
		fprintf(stderr, "layerprof tune: cannot write '%s': %s\n", path, strerror(r ? -r : errno));
		return LP_EXIT_FAILURE;
	}
	return LP_EXIT_OK;
}

int cmd_tune(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "param", required_argument, NULL, 'p' },
		{ "strategy", required_argument, NULL, 's' },
		{ "objective", required_argument, NULL, 'O' },
		{ "model", required_argument, NULL, 'm' },
		{ "power", required_argument, NULL, 'P' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "max-repeat", required_argument, NULL, 'R' },
		{ "noise", required_argument, NULL, 'n' },
		{ "budget", required_argument, NULL, 'b' },
		{ "baseline", required_argument, NULL, 'B' },
		{ "format", required_argument, NULL, 'f' },
		{ "html", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ "corun", no_argument, NULL, 'c' },
		{ "producers", required_argument, NULL, 'x' },
		{ "consumers", required_argument, NULL, 'y' },
		{ "tile", required_argument, NULL, 'z' },
		{ "sync-output", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct lp_warner warn = { tune_warn, NULL };
	struct tune_opts o = { .strategy = TUNE_GREEDY, .repeat = 3, .noise_pct = 2.0, .tile = UINT32_MAX };
	struct measure_ctx m = { 0 };
	struct tune_space sp = { 0 };
	struct tune t = { 0 };
	const char *model = NULL, *power = NULL, *baseline = NULL, *html = NULL, *sync_out = NULL;
	const char *pnames[3] = { NULL, NULL, NULL };
	char err[LP_ERROR_MAX];
	bool json = false, corun = false, strategy_set = false;
	uint32_t max_repeat = 0;
	int ch, r, code = LP_EXIT_USAGE;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (tune_space_add(&sp, optarg, 0, err, sizeof(err))) {
				fprintf(stderr, "layerprof tune: %s\n", err);
				goto out;
			}
			break;
		case 's':
			if (tune_strategy_parse(optarg, &o.strategy)) {
				fprintf(stderr,
				        "layerprof tune: invalid --strategy '%s': grid, greedy, pattern, corun or "
				        "producer-consumer\n",
				        optarg);
				goto out;
			}
			strategy_set = true;
			break;
		case 'O':
			if (tune_objective_parse(optarg, &o.objective)) {
				fprintf(stderr, "layerprof tune: invalid --objective '%s': time, energy or edp\n",
				        optarg);
				goto out;
			}
			break;
		case 'm':
			model = optarg;
			break;
		case 'P':
			power = optarg;
			break;
		case 'r':
			if (parse_uint("--repeat", optarg, 1, TUNE_REPEAT_MAX, &o.repeat))
				goto out;
			break;
		case 'R':
			if (parse_uint("--max-repeat", optarg, 1, TUNE_REPEAT_MAX, &max_repeat))
				goto out;
			break;
		case 'n':
			if (parse_double("--noise", optarg, 0, 100, &o.noise_pct))
				goto out;
			break;
		case 'b':
			if (parse_uint("--budget", optarg, 1, TUNE_CONFIGS_MAX, &o.budget))
				goto out;
			break;
		case 'B':
			baseline = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof tune: invalid --format '%s': text or json\n", optarg);
				goto out;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'H':
			html = optarg;
			break;
		case 't':
			if (parse_double("--timeout", optarg, 0.001, 1e6, &m.timeout_s))
				goto out;
			break;
		case 'c':
			corun = true;
			break;
		case 'x':
		case 'y':
		case 'z':
			pnames[ch - 'x'] = optarg;
			break;
		case 'S':
			sync_out = optarg;
			break;
		case 'h':
			fputs(tune_usage, stdout);
			code = LP_EXIT_OK;
			goto out;
		default:
			fputs(tune_usage, stderr);
			goto out;
		}
	}
	if (o.strategy == TUNE_CORUN)
		corun = true;
	else if (corun && !strategy_set)
		o.strategy = TUNE_CORUN;
	if (split_commands(&sp, argv + optind, argc - optind, corun))
		goto out;
	if (!sp.nparams) {
		fprintf(stderr, "layerprof tune: give the parameters with --param NAME=RANGE\n");
		goto out;
	}
	if (tune_space_check(&sp, err, sizeof(err))) {
		fprintf(stderr, "layerprof tune: %s\n", err);
		goto out;
	}
	o.max_repeat = max_repeat ? max_repeat : (o.repeat > 7 ? o.repeat : 7);
	if (o.max_repeat < o.repeat) {
		fprintf(stderr, "layerprof tune: --max-repeat %u is below --repeat %u\n", o.max_repeat, o.repeat);
		goto out;
	}
	if (o.objective != TUNE_TIME && !model && !power) {
		fprintf(stderr,
		        "layerprof tune: --objective %s needs an energy model (--model M) or a power source "
		        "(--power SPEC)\n",
		        tune_objective_name(o.objective));
		goto out;
	}
	if (model && power) {
		fprintf(stderr, "layerprof tune: --model or --power, not both\n");
		goto out;
	}
	if (o.strategy == TUNE_PRODCONS) {
		if (!pnames[0] || !pnames[1] || sp.nprogs != 1) {
			fprintf(stderr, "layerprof tune: --strategy producer-consumer needs --producers NAME and "
			                "--consumers NAME (and one command)\n");
			goto out;
		}
		if (param_index(&sp, "--producers", pnames[0], &o.producers) ||
		    param_index(&sp, "--consumers", pnames[1], &o.consumers) ||
		    (pnames[2] && param_index(&sp, "--tile", pnames[2], &o.tile)))
			goto out;
		if (o.producers == o.consumers) {
			fprintf(stderr, "layerprof tune: --producers and --consumers name the same parameter\n");
			goto out;
		}
	} else if (pnames[0] || pnames[1] || pnames[2] || sync_out) {
		fprintf(stderr, "layerprof tune: --producers, --consumers, --tile and --sync-output go with --strategy "
		                "producer-consumer\n");
		goto out;
	}
	if (o.strategy == TUNE_PRODCONS && o.tile != UINT32_MAX &&
	    (!sp.params[o.tile].numeric || sp.params[o.tile].num[0] < 2)) {
		fprintf(stderr,
		        "layerprof tune: --tile %s: its first value must be an integer above 1 (the untiled "
		        "size)\n",
		        sp.params[o.tile].name);
		goto out;
	}
	if (o.strategy == TUNE_GRID && !o.budget && tune_space_size(&sp) > TUNE_CONFIGS_MAX) {
		fprintf(stderr,
		        "layerprof tune: the grid has %llu configurations, more than %u: give a --budget or use "
		        "--strategy pattern\n",
		        (unsigned long long)tune_space_size(&sp), TUNE_CONFIGS_MAX);
		goto out;
	}
	if (baseline) {
		if (tune_space_config_parse(&sp, baseline, &o.baseline, err, sizeof(err))) {
			fprintf(stderr, "layerprof tune: invalid --baseline: %s\n", err);
			goto out;
		}
		o.has_baseline = true;
	}
	code = energy_open(&m, model, power);
	if (code)
		goto out;
	o.measure = m.energy ? measure_energy : measure_time;
	o.measure_ctx = &m;
	o.verdict = prodcons_verdict;
	o.verdict_ctx = (void *)sync_out;
	o.warn = &warn;
	if (isatty(STDERR_FILENO))
		o.progress = tune_progress;
	tune_init(&t, &sp, &o);
	r = tune_run(&t, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof tune: %s\n", err);
		code = LP_EXIT_FAILURE;
		goto out;
	}
	r = json ? tunereport_json(stdout, &t) : tunereport_text(stdout, &t);
	if (r || fflush(stdout)) {
		fprintf(stderr, "layerprof tune: cannot write the output: %s\n", strerror(r ? -r : errno));
		code = LP_EXIT_FAILURE;
		goto out;
	}
	code = html ? write_html(&t, html) : LP_EXIT_OK;
out:
	tune_release(&t);
	tune_space_release(&sp);
	free(m.model);
	power_close(m.power);
	return code;
}
