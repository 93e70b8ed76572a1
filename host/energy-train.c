/* layerprof energy train: random mixes of layerprof-work's basis segments
 * run measured (events counted from outside, a power meter over each
 * run), then the model fitted to them (paper 003, section 5): mean watts
 * as a linear function of event rates, insignificant events eliminated,
 * cross-validated; saved as JSON and printed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/energy.h"
#include "host/lib/energy/emodel.h"
#include "host/lib/energy/power.h"
#include "host/lib/energy/randprog.h"
#include "host/lib/util/outfile.h"
#include "host/runmeasure.h"

/* The candidates when --events is not given: the generic hardware events
 * and the software ones the paper's model may use. */
#define TRAIN_EVENTS_DEFAULT                                                                        \
	"instructions,cycles,cache-references,cache-misses,branches,branch-misses,L1-dcache-loads," \
	"L1-dcache-load-misses,LLC-loads,LLC-load-misses,task-clock,context-switches,cpu-migrations,page-faults"
/* layerprof-work --list's output, at most. */
#define TRAIN_LIST_MAX (64u * 1024u)
/* The segment that idles. */
#define TRAIN_IDLE_SEGMENT "sleep"
/* Passes of one program, at most (ENERGY_EVENTS_MAX / LP_COUNTERS_MAX). */
#define TRAIN_PASSES_MAX ((ENERGY_EVENTS_MAX + LP_COUNTERS_MAX - 1) / LP_COUNTERS_MAX)

static const char train_usage[] =
    "usage: layerprof energy train [options]\n"
    "\n"
    "Runs random programs (mixes of layerprof-work's basis segments on 1 to N\n"
    "threads), each measured: its events counted from outside, the power meter\n"
    "read over its run.  Then fits the machine's power as a linear function of\n"
    "the event rates (backward elimination of insignificant events, k-fold\n"
    "cross-validation), writes the model and prints it.  See docs/energy.md.\n"
    "\n"
    "  -o, --output FILE       the model (default energy-model.json)\n"
    "      --power SPEC        the meter (default auto; see 'energy sources';\n"
    "                          cmd:COMMAND or csv:FILE for an external one)\n"
    "      --power-interval MS a reading every MS ms (default 100)\n"
    "      --programs N        random programs run (default 60)\n"
    "      --seconds S         each one's length (default 0.5)\n"
    "      --seed N            the generator's seed (default 1)\n"
    "      --events LIST       candidate events (default: those of instructions,\n"
    "                          cycles, cache-references, cache-misses, branches,\n"
    "                          branch-misses, L1-dcache-loads, L1-dcache-load-misses,\n"
    "                          LLC-loads, LLC-load-misses, task-clock, context-switches,\n"
    "                          cpu-migrations, page-faults this machine counts); more\n"
    "                          than 12: each program runs once per 12\n"
    "      --alpha A           significance level of the elimination (default 0.05)\n"
    "      --folds K           cross-validation folds, 0 none (default 5)\n"
    "      --threads N         threads per program: 1 to N, one in eight up to 2N\n"
    "                          (default: the online CPUs)\n"
    "      --data FILE         also write the observations (rates, watts) as CSV\n"
    "      --dry-run           list the programs and stop\n"
    "      --list-segments     list layerprof-work's segments and stop\n"
    "  -h, --help              this text\n"
    "\n"
    "layerprof-work is looked for beside layerprof ($LAYERPROF_WORK overrides).\n"
    "Exit status: 0 ok, 1 no power meter, a program or the fit failed, 2 usage.\n";

struct train {
	const char *output, *power_spec, *events, *data;
	unsigned interval_ms;
	uint32_t programs, folds, threads;
	double seconds, alpha;
	uint64_t seed;
	bool dry_run, list_segments;
	char work[PATH_MAX];
	/* the segments, from layerprof-work --list: names point into list */
	char *list;
	const char *names[RANDPROG_POOL_MAX];
	const char *descs[RANDPROG_POOL_MAX]; /* their one-line descriptions */
	uint32_t nnames;
	int idle;
	/* the candidates this machine counts, and the passes they need */
	char cand[ENERGY_EVENTS_MAX][EMODEL_NAME_MAX];
	uint32_t ncand, npasses;
	char unavailable[2048]; /* the others, and why */
	char pass[TRAIN_PASSES_MAX][LP_COUNTERS_MAX * EMODEL_NAME_MAX];
	/* the observations */
	double *x, *y;
	uint32_t n;
	struct power_source *ps;
	FILE *data_f;
};

/* Runs layerprof-work --list into t->list (bounded) and splits it into
 * names.  Returns 0, or -errno after the message. */
static int train_segments(struct train *t)
{
	char *argv[] = { t->work, (char *)"--list", NULL };
	size_t len = 0;
	int fd[2], status = 0;
	pid_t pid;
	ssize_t k;
	char *p;

	t->list = malloc(TRAIN_LIST_MAX + 1);
	if (!t->list || pipe2(fd, O_CLOEXEC)) {
		int e = t->list ? errno : ENOMEM;

		fprintf(stderr, "layerprof energy: cannot run '%s': %s\n", t->work, strerror(e));
		return -e;
	}
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		execv(t->work, argv);
		_exit(127);
	}
	close(fd[1]);
	while (pid > 0 && (k = read(fd[0], t->list + len, TRAIN_LIST_MAX - len)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		len += (size_t)k;
		if (len == TRAIN_LIST_MAX) {
			kill(pid, SIGKILL); /* a list this long is no list of ours */
			break;
		}
	}
	close(fd[0]);
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	t->list[len] = '\0';
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "layerprof energy: '%s --list' failed\n", t->work);
		return -EIO;
	}
	t->idle = -1;
	for (p = t->list; *p && t->nnames < RANDPROG_POOL_MAX;) {
		char *eol = strchr(p, '\n'), *sp;

		if (eol)
			*eol = '\0';
		sp = strchr(p, ' ');
		if (sp)
			*sp++ = '\0';
		if (strlen(p) >= EMODEL_NAME_MAX) {
			fprintf(stderr, "layerprof energy: '%s --list' gave a name too long: '%.40s...'\n", t->work, p);
			return -EIO;
		}
		if (*p) {
			if (!strcmp(p, TRAIN_IDLE_SEGMENT))
				t->idle = (int)t->nnames;
			t->descs[t->nnames] = sp ? sp + strspn(sp, " ") : "";
			t->names[t->nnames++] = p;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	if (!t->nnames) {
		fprintf(stderr, "layerprof energy: '%s --list' gave no segment\n", t->work);
		return -EIO;
	}
	return 0;
}

static uint32_t online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (uint32_t)n : 1;
}

/* The candidates, probed, split into passes.  0 or the exit code. */
static int train_candidates(struct train *t)
{
	char unavailable[2048], err[512];
	uint32_t i;
	int r;

	r = energy_probe(t->events ? t->events : TRAIN_EVENTS_DEFAULT, t->cand, &t->ncand, unavailable,
	                 sizeof(unavailable), err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof energy: --events: %s\n", err);
		return LP_EXIT_USAGE;
	}
	if (!t->ncand) {
		fprintf(stderr, "layerprof energy: no candidate event can be counted here (%s)\n", unavailable);
		return LP_EXIT_FAILURE;
	}
	snprintf(t->unavailable, sizeof(t->unavailable), "%s", unavailable);
	t->npasses = (t->ncand + LP_COUNTERS_MAX - 1) / LP_COUNTERS_MAX;
	for (i = 0; i < t->ncand; i++) {
		char *pass = t->pass[i / LP_COUNTERS_MAX];
		size_t len = strlen(pass);

		size_t w = strlen(t->cand[i]);

		/* room: LP_COUNTERS_MAX names of less than EMODEL_NAME_MAX */
		if (len)
			pass[len++] = ',';
		memcpy(pass + len, t->cand[i], w + 1);
	}
	return 0;
}

/* What train_candidates found, said once the run is sure to go on. */
static void train_say_candidates(const struct train *t)
{
	if (t->unavailable[0])
		fprintf(stderr, "layerprof energy: warning: candidates this machine cannot count, left out: %s\n",
		        t->unavailable);
	if (t->npasses > 1)
		fprintf(stderr,
		        "layerprof energy: %u candidates, at most %u counted at once: each program runs %u times "
		        "(the mean of the runs' watts)\n",
		        t->ncand, LP_COUNTERS_MAX, t->npasses);
}

static void train_print_programs(const struct train *t)
{
	struct randprog_gen g;
	struct randprog p;
	char mix[RANDPROG_SEGS_MAX * (EMODEL_NAME_MAX + 8)];

	randprog_init(&g, t->seed, t->nnames, t->threads, t->idle);
	for (uint32_t i = 0; i < t->programs; i++) {
		randprog_next(&g, &p);
		randprog_mix(&p, t->names, mix, sizeof(mix));
		printf("%3u  --threads %-3u %s\n", i + 1, p.threads, mix);
	}
}

/* One program, each pass run measured: its row of rates and its watts.
 * Returns 1 when it counts, 0 when it is left out (said why), or the
 * exit code's negative. */
static int train_run(struct train *t, uint32_t i, const struct randprog *p, const char *mix)
{
	char secs[32], threads[16], err[1024];
	char *argv[] = { t->work, (char *)"--seconds", secs, (char *)"--threads", threads, (char *)mix, NULL };
	char *const *argvs[1] = { argv };
	double *row = t->x + (size_t)t->n * t->ncand, watts = 0;
	struct runmeasure_opts o;
	struct runmeasure rm;
	uint32_t k, c, base = 0;

	snprintf(secs, sizeof(secs), "%.6g", t->seconds);
	snprintf(threads, sizeof(threads), "%u", p->threads);
	memset(&o, 0, sizeof(o));
	o.power = t->ps;
	o.power_interval_ms = t->interval_ms;
	o.quiet = true;
	o.timeout_s = 10 * t->seconds + 60;
	for (k = 0; k < t->npasses; k++) {
		double span;

		o.counters = t->pass[k];
		if (runmeasure_run(argvs, 1, &o, &rm, err, sizeof(err))) {
			fprintf(stderr, "layerprof energy: program %u: %s\n", i + 1, err);
			return -LP_EXIT_FAILURE;
		}
		if (rm.timed_out || !WIFEXITED(rm.status[0]) || WEXITSTATUS(rm.status[0])) {
			fprintf(stderr, "layerprof energy: warning: program %u (%s) %s: left out\n", i + 1, mix,
			        rm.timed_out ? "did not end in time" : "failed");
			return 0;
		}
		span = (double)rm.power_span_ns * 1e-9;
		if (!(span > 0)) {
			fprintf(stderr, "layerprof energy: warning: program %u: the meter's span is empty: left out\n",
			        i + 1);
			return 0;
		}
		/* this pass's events, by name: the candidates in pass order */
		for (c = 0; c < rm.n; c++)
			for (uint32_t j = base; j < t->ncand && j < base + LP_COUNTERS_MAX; j++)
				if (!strcmp(rm.names[c], t->cand[j]))
					row[j] = (double)rm.counts[c] / span;
		base += LP_COUNTERS_MAX;
		watts += rm.mean_watts;
	}
	t->y[t->n] = watts / t->npasses;
	if (t->data_f) {
		fprintf(t->data_f, "%u,%u,\"%s\",%.9g", i + 1, p->threads, mix, t->y[t->n]);
		for (c = 0; c < t->ncand; c++)
			fprintf(t->data_f, ",%.9g", row[c]);
		fputc('\n', t->data_f);
	}
	t->n++;
	return 1;
}

/* Every program, measured.  0 or the exit code. */
static int train_measure(struct train *t)
{
	struct randprog_gen g;
	struct randprog p;
	char mix[RANDPROG_SEGS_MAX * (EMODEL_NAME_MAX + 8)];
	bool tty = isatty(STDERR_FILENO);
	int r;

	t->x = calloc((size_t)t->programs * t->ncand, sizeof(*t->x));
	t->y = calloc(t->programs, sizeof(*t->y));
	if (!t->x || !t->y) {
		fprintf(stderr, "layerprof energy: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	if (t->data_f) {
		fprintf(t->data_f, "program,threads,mix,watts");
		for (uint32_t c = 0; c < t->ncand; c++)
			fprintf(t->data_f, ",%s", t->cand[c]);
		fputc('\n', t->data_f);
	}
	randprog_init(&g, t->seed, t->nnames, t->threads, t->idle);
	for (uint32_t i = 0; i < t->programs; i++) {
		randprog_next(&g, &p);
		randprog_mix(&p, t->names, mix, sizeof(mix));
		if (tty)
			fprintf(stderr, "\rprogram %u/%u: %u thread%s, %-60.60s", i + 1, t->programs, p.threads,
			        p.threads == 1 ? "" : "s", mix);
		r = train_run(t, i, &p, mix);
		if (r < 0) {
			if (tty)
				fputc('\n', stderr);
			return -r;
		}
	}
	if (tty)
		fprintf(stderr, "\r%*s\r", 100, "");
	return 0;
}

static void print_term(const struct emodel_term *e, bool constant)
{
	char p[32];

	if (e->p < 1e-300)
		snprintf(p, sizeof(p), "<1e-300");
	else
		snprintf(p, sizeof(p), "%.3g", e->p);
	printf("  %-24s %14.6g%s %12.4g %10.4g %10s\n", e->name, e->coef, constant ? " W" : "  ", e->se, e->t, p);
}

static void train_print(const struct train *t, const struct emodel *m)
{
	printf("energy model of %s (%s, %u CPUs, Linux %s), trained against %s\n", m->machine.host,
	       m->machine.cpu[0] ? m->machine.cpu : m->machine.arch, m->machine.cpus, m->machine.kernel, m->source);
	printf("%u programs of %g s (seed %llu, %u segments), %u candidate events\n\n", m->training.programs,
	       m->training.seconds, (unsigned long long)m->training.seed, m->training.segments, t->ncand);
	printf("  %-24s %14s   %12s %10s %10s\n", "term", "coefficient", "std error", "t", "p");
	print_term(&m->c0, true);
	for (uint32_t i = 0; i < m->nterms; i++)
		print_term(&m->terms[i], false);
	printf("  (a coefficient is joules per event: watts per event per second)\n");
	if (m->ndropped) {
		printf("\ndropped:\n");
		for (uint32_t i = 0; i < m->ndropped; i++)
			printf("  %-24s %s\n", m->dropped[i].name, m->dropped[i].why);
	}
	printf("\nR2 %.4f, adjusted R2 %.4f, F %.4g (p %.3g), RMSE %.4g W, %u observations, alpha %g\n", m->fit.r2,
	       m->fit.adj_r2, m->fit.f, m->fit.f_p, m->fit.rmse, m->fit.n, m->fit.alpha);
	if (m->cv.folds)
		printf("cross-validation, %u folds: mean error %.2f %%, worst %.2f %%\n", m->cv.folds,
		       m->cv.mean_abs_pct, m->cv.max_abs_pct);
	printf("written to %s\n", t->output);
}

/* The fit, the machine, the file.  0 or the exit code. */
static int train_fit(struct train *t)
{
#ifdef LP_HAVE_GSL
	struct emodel *m = malloc(sizeof(*m));
	struct emodel_data d;
	char err[1024];
	int r;

	if (!m) {
		fprintf(stderr, "layerprof energy: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	emodel_init(m);
	emodel_describe_machine(m);
	snprintf(m->source, sizeof(m->source), "%s", power_name(t->ps));
	m->training.programs = t->programs;
	m->training.seconds = t->seconds;
	m->training.seed = t->seed;
	m->training.segments = t->nnames;
	d.n = t->n;
	d.k = t->ncand;
	d.x = t->x;
	d.y = t->y;
	d.names = (const char(*)[EMODEL_NAME_MAX])t->cand;
	r = emodel_fit(m, &d, t->alpha, t->folds, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof energy: cannot fit the model: %s\n", err);
		free(m);
		return LP_EXIT_FAILURE;
	}
	r = emodel_save(m, t->output, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof energy: %s\n", err);
		free(m);
		return LP_EXIT_FAILURE;
	}
	train_print(t, m);
	free(m);
	return fflush(stdout) ? LP_EXIT_FAILURE : LP_EXIT_OK;
#else
	(void)t;
	(void)train_print;
	return LP_EXIT_FAILURE;
#endif
}

/* The options into t.  Returns 0 to go on, else the exit code with *stop
 * set (--help: 0). */
static int train_options(struct train *t, int argc, char **argv, bool *stop)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "power", required_argument, NULL, 'P' },
		{ "power-interval", required_argument, NULL, 'I' },
		{ "programs", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "events", required_argument, NULL, 'e' },
		{ "alpha", required_argument, NULL, 'a' },
		{ "folds", required_argument, NULL, 'k' },
		{ "threads", required_argument, NULL, 't' },
		{ "data", required_argument, NULL, 'd' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "list-segments", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			t->output = optarg;
			break;
		case 'P':
			t->power_spec = optarg;
			break;
		case 'I':
			if (energy_parse_u32("--power-interval", optarg, 1, 60000, &v))
				return LP_EXIT_USAGE;
			t->interval_ms = v;
			break;
		case 'n':
			if (energy_parse_u32("--programs", optarg, 1, 100000, &t->programs))
				return LP_EXIT_USAGE;
			break;
		case 's':
			if (energy_parse_f64("--seconds", optarg, 0.01, 3600, &t->seconds))
				return LP_EXIT_USAGE;
			break;
		case 'S':
			if (energy_parse_u64("--seed", optarg, &t->seed))
				return LP_EXIT_USAGE;
			break;
		case 'e':
			t->events = optarg;
			break;
		case 'a':
			if (energy_parse_f64("--alpha", optarg, 1e-12, 0.5, &t->alpha))
				return LP_EXIT_USAGE;
			break;
		case 'k':
			if (energy_parse_u32("--folds", optarg, 0, 1000, &t->folds))
				return LP_EXIT_USAGE;
			if (t->folds == 1) {
				fprintf(stderr, "layerprof energy: invalid --folds '1': 0 (none) or at least 2\n");
				return LP_EXIT_USAGE;
			}
			break;
		case 't':
			if (energy_parse_u32("--threads", optarg, 1, 128, &t->threads))
				return LP_EXIT_USAGE;
			break;
		case 'd':
			t->data = optarg;
			break;
		case 'D':
			t->dry_run = true;
			break;
		case 'L':
			t->list_segments = true;
			break;
		case 'h':
			fputs(train_usage, stdout);
			*stop = true;
			return LP_EXIT_OK;
		default:
			fputs(train_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "layerprof energy: train takes no operand ('%s')\n", argv[optind]);
		return LP_EXIT_USAGE;
	}
	return 0;
}

int energy_train_cmd(int argc, char **argv)
{
	struct train *t = calloc(1, sizeof(*t));
	char err[1024];
	bool stop = false;
	int r;

	if (!t) {
		fprintf(stderr, "layerprof energy: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	t->output = "energy-model.json";
	t->programs = 60;
	t->seconds = 0.5;
	t->seed = 1;
	t->alpha = 0.05;
	t->folds = 5;
	t->threads = online_cpus();
	r = train_options(t, argc, argv, &stop);
	if (r || stop)
		goto out;
	r = energy_work_path(t->work);
	if (r) {
		fprintf(stderr, "layerprof energy: cannot find layerprof-work (set %s to its path): %s\n",
		        ENERGY_WORK_ENV, strerror(-r));
		r = LP_EXIT_FAILURE;
		goto out;
	}
	r = train_segments(t) ? LP_EXIT_FAILURE : 0;
	if (r)
		goto out;
	if (t->list_segments) {
		for (uint32_t i = 0; i < t->nnames; i++)
			printf("%-20s %s\n", t->names[i], t->descs[i]);
		goto out;
	}
	if (t->dry_run) {
		train_print_programs(t);
		goto out;
	}
	r = train_candidates(t);
	if (r)
		goto out;
#ifndef LP_HAVE_GSL
	fprintf(stderr, "layerprof energy: energy train needs GSL: this layerprof was built without it\n");
	r = LP_EXIT_FAILURE;
	goto out;
#endif
	t->ps = power_open(t->power_spec ? t->power_spec : "auto", err, sizeof(err));
	if (!t->ps) {
		fprintf(stderr, "layerprof energy: %s (training needs a power meter; give one with --power)\n", err);
		r = LP_EXIT_FAILURE;
		goto out;
	}
	train_say_candidates(t);
	if (t->data) {
		/* never through a link another user planted */
		t->data_f = outfile_open(t->data);
		if (!t->data_f) {
			fprintf(stderr, "layerprof energy: cannot write '%s': %s\n", t->data, outfile_strerror(errno));
			r = LP_EXIT_FAILURE;
			goto out;
		}
	}
	r = train_measure(t);
	if (t->data_f && fclose(t->data_f)) {
		fprintf(stderr, "layerprof energy: cannot write '%s': %s\n", t->data, strerror(errno));
		r = r ? r : LP_EXIT_FAILURE;
	}
	t->data_f = NULL;
	if (!r)
		r = train_fit(t);
out:
	power_close(t->ps);
	free(t->x);
	free(t->y);
	free(t->list);
	free(t);
	return r;
}
