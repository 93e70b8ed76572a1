/* layerprof oscal run: layerprof-oscal run (oscal-suite.c), its output
 * lines fed one by one into a calibration (run_line: the one place lines
 * enter, whatever their source), progress on stderr, the calibration
 * analysed and written; an interrupted run written as such and resumed
 * later. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/lib/live/netclient.h"
#include "host/lib/live/oscalremote.h"
#include "host/lib/util/json.h"
#include "host/oscal.h"

/* One line of the suite's output, at most (a sample line holds reps
 * numbers). */
#define RUN_LINE_MAX (1u << 20)
/* Arguments of the suite, at most. */
#define RUN_ARGS_MAX 16u
/* After SIGTERM, how long the suite has to end before SIGKILL (ms). */
#define RUN_TERM_GRACE_MS 5000
/* The suite's default repetitions and warm-up runs (layerprof-oscal's). */
#define RUN_REPS_MAX 100000u
#define RUN_WARMUP_MAX 10000u
/* The exit code of an interrupted run (128 + SIGINT, as a shell's). */
#define RUN_EXIT_INTERRUPTED 130

static const char run_usage[] =
    "usage: layerprof oscal run [options]\n"
    "\n"
    "Runs the suite layerprof-oscal on this machine (or under a runner such as\n"
    "qemu-user), reads its measurements, computes each entry's statistics and\n"
    "model, and writes them with the raw samples to a calibration file.  An\n"
    "interrupted run (Ctrl-C, SIGTERM) writes what ended; --resume goes on.\n"
    "See docs/oscal.md.\n"
    "\n"
    "  -o, --output FILE     the calibration (default oscal.cal; with --resume: that file)\n"
    "      --calls PATTERNS  only entries whose name or call matches one of the\n"
    "                        comma-separated globs ('read,write,pthread_*')\n"
    "      --quick           fewer parameter values, 20 repetitions, 3 warm-up runs\n"
    "      --reps N          repetitions per parameter value (default the suite's: 100)\n"
    "      --warmup N        warm-up runs per parameter value (default the suite's: 10)\n"
    "      --threshold F     the spread (sd / mean) a cluster may keep (default 0.1)\n"
    "      --resume FILE     go on with an interrupted run: its settings, the entries\n"
    "                        that did not end\n"
    "      --runner 'CMD ARGS'  run the suite under CMD (words split at spaces, no\n"
    "                        shell): qemu-aarch64-static -L /usr/aarch64-linux-gnu\n"
    "      --format FMT      the summary: text or json (default text)\n"
    "      --connect HOST:PORT  run the agent's suite on its device (layerprofd;\n"
    "                        unix:PATH too), as layerprof live connects\n"
    "      --token-file F    the agent's token (first line of F)\n"
    "  -h, --help            this text\n"
    "\n"
    "layerprof-oscal is looked for beside layerprof ($LAYERPROF_OSCAL overrides).\n"
    "Exit status: 0 ok, 1 the suite could not run or the file not be written,\n"
    "2 usage, 130 interrupted (the file written, incomplete).\n";

/* run's options, all of them: what the command line gave. */
struct run_opts {
	const char *output;
	const char *calls;
	bool quick;
	uint32_t reps, warmup; /* 0: the suite's default */
	double threshold;
	bool threshold_set;
	const char *resume;
	const char *runner;
	enum oscal_format format;
	const char *connect, *token_file; /* the agent's suite (oscalremote.h) */
};

struct run {
	struct run_opts o;
	struct oscal_suite suite;
	/* the entries --list gave that --calls takes, in the suite's order */
	struct oscal_listed *listed;
	uint32_t nlisted;
	/* the calibration the lines are fed to */
	struct oscal_cal cal;
	/* --resume: the file's, and the names of its entries that ended */
	struct oscal_cal old;
	bool have_old;
	/* progress: entries begun and ended by this run's lines; those the
	 * resumed file had */
	uint32_t begun, ended, base;
	bool tty, progress_open;
	char err[512]; /* what a bad line was */
	char source[sizeof(((struct oscal_cal *)0)->source)];
	const char *output;
};

static volatile sig_atomic_t run_interrupted;

static void run_on_signal(int sig)
{
	run_interrupted = sig;
}

/* ------------------------------------------------------------ feeding */

static void run_progress_end(struct run *r)
{
	if (r->tty && r->progress_open)
		fprintf(stderr, "\r%*s\r", 79, "");
	r->progress_open = false;
}

/* One line of the suite's output (without its newline) into the
 * calibration, with the progress it means: "[k/N] name" on stderr when an
 * entry begins.  The shape of a line callback (ctx: the struct run), so
 * that the lines may come from elsewhere than a local child.  Returns 0,
 * or -errno with r->err saying what was wrong. */
static int run_line(void *ctx, const char *text)
{
	struct run *r = ctx;
	int e;

	e = oscal_cal_feed(&r->cal, text, r->err, sizeof(r->err));
	if (e)
		return e;
	if (!strncmp(text, "entry ", 6)) {
		const char *name = text + 6;
		size_t w = strcspn(name, " ");

		r->begun++;
		if (r->tty) {
			fprintf(stderr, "\r[%u/%u] %-60.*s", r->base + r->begun, r->nlisted, (int)(w < 60 ? w : 60),
			        name);
			r->progress_open = true;
		} else {
			fprintf(stderr, "[%u/%u] %.*s\n", r->base + r->begun, r->nlisted, (int)w, name);
		}
	} else if (run_interrupted && !strncmp(text, "fail ", 5)) {
		/* the entry the stop cut short, if the suite says so: not ended,
		 * it runs again when resumed */
		char name[OSCAL_NAME_MAX];
		struct oscal_entry *cut;

		snprintf(name, sizeof(name), "%.*s", (int)strcspn(text + 5, " "), text + 5);
		cut = oscal_cal_find(&r->cal, name);
		if (cut)
			cut->status = OSCAL_PENDING;
	} else if (!strncmp(text, "end ", 4) || !strncmp(text, "skip ", 5) || !strncmp(text, "fail ", 5)) {
		r->ended++;
	}
	return 0;
}

/* Reads the suite's lines from fd into run_line until its end, an error
 * or an interrupt (then the suite's group is stopped).  Returns 0, or
 * -errno after the message (the suite's group killed). */
static int run_read(struct run *r, int fd, pid_t pid)
{
	char *buf = malloc(RUN_LINE_MAX + 1);
	size_t len = 0;
	bool stopping = false, killed = false;
	struct timespec t0 = { 0, 0 };
	int ret = 0;

	if (!buf) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		kill(-pid, SIGKILL);
		return -ENOMEM;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t k;
		char *nl;

		if (run_interrupted && !stopping) {
			/* the suite cleans up its directory on SIGTERM */
			kill(-pid, SIGTERM);
			stopping = true;
			clock_gettime(CLOCK_MONOTONIC, &t0);
		}
		if (stopping && !killed) {
			struct timespec t;

			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > RUN_TERM_GRACE_MS) {
				kill(-pid, SIGKILL);
				killed = true;
			}
		}
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		k = read(fd, buf + len, RUN_LINE_MAX - len);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			break; /* the end (an error here is the suite's end too) */
		len += (size_t)k;
		buf[len] = '\0';
		while ((nl = memchr(buf, '\n', len))) {
			*nl = '\0';
			/* after an interrupt the lines that still come are kept: what
			 * ended is the suite's word */
			if (ret == 0 && (ret = run_line(r, buf)) != 0) {
				run_progress_end(r);
				fprintf(stderr, "layerprof oscal: the suite's output: %s\n", r->err);
				kill(-pid, SIGKILL);
				killed = stopping = true;
			}
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
		}
		if (len == RUN_LINE_MAX && !ret) {
			run_progress_end(r);
			fprintf(stderr, "layerprof oscal: the suite's output: a line longer than %u bytes\n",
			        RUN_LINE_MAX);
			kill(-pid, SIGKILL);
			killed = stopping = true;
			ret = -E2BIG;
			len = 0;
		} else if (len == RUN_LINE_MAX) {
			len = 0;
		}
	}
	/* a last line without its newline is a line cut short: left out */
	free(buf);
	return ret;
}

/* The suite's arguments for this run into args (NULL-terminated), their
 * text in store.  The entries the resumed file has are skipped. */
static int run_args(struct run *r, char **args, char *store, size_t size)
{
	size_t used = 0;
	uint32_t n = 0;

#define ARG(...)                                                           \
	do {                                                               \
		int w_ = snprintf(store + used, size - used, __VA_ARGS__); \
		if (w_ < 0 || (size_t)w_ >= size - used)                   \
			return -E2BIG;                                     \
		args[n++] = store + used;                                  \
		used += (size_t)w_ + 1;                                    \
	} while (0)
	if (r->o.quick)
		ARG("--quick");
	if (r->o.reps) {
		ARG("--reps");
		ARG("%u", r->o.reps);
	}
	if (r->o.warmup) {
		ARG("--warmup");
		ARG("%u", r->o.warmup);
	}
	if (r->o.calls && *r->o.calls) {
		ARG("--calls");
		ARG("%s", r->o.calls);
	}
	if (r->have_old && r->old.nentries) {
		ARG("--skip");
		args[n++] = store + used;
		for (uint32_t i = 0; i < r->old.nentries; i++) {
			int w = snprintf(store + used, size - used, "%s%s", i ? "," : "", r->old.entries[i].name);

			if (w < 0 || (size_t)w >= size - used)
				return -E2BIG;
			used += (size_t)w;
		}
		used++;
	}
#undef ARG
	args[n] = NULL;
	return 0;
}

/* ------------------------------------------------------------ the agent's suite (--connect) */

static void run_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "layerprof oscal: %s\n", msg);
}

/* The agent's suite with args (as oscal_suite_spawn's), each line to
 * line(ctx, text).  Returns 0, -EINTR when interrupted, -ECHILD after the
 * message when the suite failed or the agent went (what ended may be
 * kept), or -errno after the message (r->err, when set, is line's). */
static int run_remote(struct run *r, char *const *args, int (*line)(void *ctx, const char *text), void *ctx)
{
	struct oscal_remote_opts ro = { .addr = r->o.connect,
		                        .token_file = r->o.token_file,
		                        .warn = { run_warn, NULL },
		                        .stop = &run_interrupted };
	char err[LP_ERROR_MAX] = "";
	int st;

	r->err[0] = '\0';
	st = oscal_remote_run(&ro, args, line, ctx, err, sizeof(err));
	if (st == 0 || st == -EINTR)
		return st;
	run_progress_end(r);
	if (st < 0 && r->err[0])
		fprintf(stderr, "layerprof oscal: the suite's output: %s\n", r->err);
	else if (st < 0)
		fprintf(stderr, "layerprof oscal: %s\n", err[0] ? err : strerror(-st));
	else
		fprintf(stderr, "layerprof oscal: the suite on the agent at %s failed (exit %d)%s%s\n", r->o.connect,
		        st, err[0] ? ": " : "", err);
	return st > 0 || st == -ECONNRESET || st == -ETIMEDOUT ? -ECHILD : st;
}

/* The suite's --list as text: one line callback's lines. */
struct run_text {
	char *buf;
	size_t len, max;
};

static int run_text_line(void *ctx, const char *text)
{
	struct run_text *t = ctx;
	size_t n = strlen(text);

	if (t->len + n + 1 > t->max)
		return -E2BIG;
	memcpy(t->buf + t->len, text, n);
	t->buf[t->len + n] = '\n';
	t->len += n + 1;
	return 0;
}

/* The agent's suite's --list into r->listed, as oscal_suite_list.
 * Returns 0, or -errno after the message (-ENOENT: none matches). */
static int run_remote_list(struct run *r)
{
	char *args[] = { (char *)"--list", NULL };
	struct run_text t = { .buf = malloc(RUN_LINE_MAX + 1), .max = RUN_LINE_MAX };
	int e;

	if (!t.buf) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return -ENOMEM;
	}
	e = run_remote(r, args, run_text_line, &t);
	t.buf[t.len] = '\0';
	if (!e)
		e = oscal_listed_parse(t.buf, r->suite.path, r->o.calls, &r->listed, &r->nlisted);
	else
		e = e == -EINTR ? e : -EIO;
	free(t.buf);
	return e;
}

/* Runs the suite with args, its lines into r->cal.  0, -EINTR when
 * interrupted (what ended is fed), or -errno after the message. */
static int run_suite(struct run *r, char **args)
{
	struct sigaction sa, old_int, old_term;
	int fd = -1, rr, status;
	pid_t pid;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = run_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (r->o.connect) {
		rr = run_remote(r, args, run_line, r);
		run_progress_end(r);
		if (!rr && !r->cal.header_seen) {
			fprintf(stderr, "layerprof oscal: '%s' gave no measurement\n", r->suite.path);
			rr = -EIO;
		}
		goto out;
	}
	pid = oscal_suite_spawn(&r->suite, args, &fd);
	if (pid < 0) {
		rr = pid;
		goto out;
	}
	rr = run_read(r, fd, pid);
	close(fd);
	status = oscal_suite_reap(pid);
	run_progress_end(r);
	if (rr)
		goto out;
	if (run_interrupted) {
		rr = -EINTR;
		goto out;
	}
	if (oscal_suite_status_bad(&r->suite, status))
		rr = -ECHILD; /* the suite died: what ended may still be kept */
	else if (!r->cal.header_seen) {
		fprintf(stderr, "layerprof oscal: '%s' gave no measurement\n", r->suite.path);
		rr = -EIO;
	}
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rr;
}

/* ------------------------------------------------------------ merging a resumed run */

/* The suite's position of an entry name (nlisted when not listed). */
static uint32_t run_listed_index(const struct run *r, const char *name)
{
	for (uint32_t i = 0; i < r->nlisted; i++)
		if (!strcmp(r->listed[i].name, name))
			return i;
	return r->nlisted;
}

static const struct run *sort_run;

static int run_cmp_entries(const void *a, const void *b)
{
	uint32_t ia = run_listed_index(sort_run, ((const struct oscal_entry *)a)->name);
	uint32_t ib = run_listed_index(sort_run, ((const struct oscal_entry *)b)->name);

	return ia < ib ? -1 : ia > ib;
}

/* Moves the resumed file's entries into r->cal (each still analysed as
 * it was), in the suite's order.  The entries' arrays move with them:
 * r->old is left without entries.  0 or -ENOMEM / -E2BIG after the
 * message. */
static int run_merge(struct run *r)
{
	struct oscal_cal *c = &r->cal;
	uint32_t n = c->nentries + r->old.nentries;
	struct oscal_entry *e;

	if (n > OSCAL_ENTRIES_MAX) {
		fprintf(stderr, "layerprof oscal: more than %u entries\n", OSCAL_ENTRIES_MAX);
		return -E2BIG;
	}
	e = realloc(c->entries, (n ? n : 1) * sizeof(*e));
	if (!e) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return -ENOMEM;
	}
	c->entries = e;
	memcpy(e + c->nentries, r->old.entries, r->old.nentries * sizeof(*e));
	c->nentries = n;
	c->nsamples += r->old.nsamples;
	r->old.nentries = 0;
	sort_run = r;
	qsort(c->entries, c->nentries, sizeof(*e), run_cmp_entries);
	sort_run = NULL;
	return 0;
}

/* ------------------------------------------------------------ the summary */

static void run_print_text(const struct run *r, const struct oscal_cal *c)
{
	oscal_report_header(stdout, c, r->output);
	if (c->nentries < r->nlisted)
		printf("ended: %u of the %u entries asked for\n", c->nentries, r->nlisted);
	for (uint32_t i = 0; i < c->nentries; i++) {
		const struct oscal_entry *e = &c->entries[i];

		if (e->status == OSCAL_SKIPPED || e->status == OSCAL_FAILED)
			printf("  %-8s %-26s %s\n", oscal_status_name(e->status), e->name, e->reason);
	}
	printf("'layerprof oscal report %s' shows each entry's statistics and model\n", r->output);
}

static void run_print_json(const struct run *r, const struct oscal_cal *c, bool complete)
{
	static const enum oscal_status kinds[] = { OSCAL_MEASURED, OSCAL_SKIPPED, OSCAL_FAILED };
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_str(&j, "file", r->output);
	json_bool(&j, "complete", complete);
	json_u64(&j, "listed", r->nlisted);
	json_u64(&j, "ended", c->nentries);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		json_array_begin(&j, oscal_status_name(kinds[k]));
		for (uint32_t i = 0; i < c->nentries; i++) {
			const struct oscal_entry *e = &c->entries[i];

			if (e->status != kinds[k])
				continue;
			if (kinds[k] == OSCAL_MEASURED) {
				json_str(&j, NULL, e->name);
				continue;
			}
			json_object_begin(&j, NULL);
			json_str(&j, "name", e->name);
			json_str(&j, "reason", e->reason);
			json_object_end(&j);
		}
		json_array_end(&j);
	}
	json_object_end(&j);
	json_finish(&j);
}

/* ------------------------------------------------------------ options */

enum run_opt_code {
	OPT_CALLS = 0x2000,
	OPT_QUICK,
	OPT_REPS,
	OPT_WARMUP,
	OPT_THRESHOLD,
	OPT_RESUME,
	OPT_RUNNER,
	OPT_FORMAT,
	OPT_CONNECT,
	OPT_TOKEN_FILE,
};

/* run's options into o.  Returns 0 to go on, else the exit code with
 * *stop set (--help: 0). */
static int run_options(struct run_opts *o, int argc, char **argv, bool *stop)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "calls", required_argument, NULL, OPT_CALLS },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "reps", required_argument, NULL, OPT_REPS },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "resume", required_argument, NULL, OPT_RESUME },
		{ "runner", required_argument, NULL, OPT_RUNNER },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "connect", required_argument, NULL, OPT_CONNECT },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case OPT_CALLS:
			if (!*optarg || strlen(optarg) >= sizeof(((struct oscal_cal *)0)->settings.calls)) {
				fprintf(stderr, "layerprof oscal: invalid --calls '%.64s': 1 to %zu characters\n",
				        optarg, sizeof(((struct oscal_cal *)0)->settings.calls) - 1);
				return LP_EXIT_USAGE;
			}
			o->calls = optarg;
			break;
		case OPT_QUICK:
			o->quick = true;
			break;
		case OPT_REPS:
			if (oscal_parse_u32("--reps", optarg, 2, RUN_REPS_MAX, &o->reps))
				return LP_EXIT_USAGE;
			break;
		case OPT_WARMUP:
			if (oscal_parse_u32("--warmup", optarg, 1, RUN_WARMUP_MAX, &o->warmup))
				return LP_EXIT_USAGE;
			break;
		case OPT_THRESHOLD:
			if (oscal_parse_f64("--threshold", optarg, 0.001, 10, &o->threshold))
				return LP_EXIT_USAGE;
			o->threshold_set = true;
			break;
		case OPT_RESUME:
			o->resume = optarg;
			break;
		case OPT_RUNNER:
			o->runner = optarg;
			break;
		case OPT_FORMAT:
			if (oscal_parse_format(optarg, false, &o->format))
				return LP_EXIT_USAGE;
			break;
		case OPT_CONNECT:
			o->connect = optarg;
			break;
		case OPT_TOKEN_FILE:
			o->token_file = optarg;
			break;
		case 'h':
			fputs(run_usage, stdout);
			*stop = true;
			return LP_EXIT_OK;
		default:
			fputs(run_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "layerprof oscal: run takes no operand ('%s')\n", argv[optind]);
		return LP_EXIT_USAGE;
	}
	if (o->connect && netclient_check_address(o->connect)) {
		fprintf(stderr,
		        "layerprof oscal: invalid --connect '%s': expected HOST:PORT, [IPV6]:PORT or unix:PATH\n",
		        o->connect);
		return LP_EXIT_USAGE;
	}
	if (o->connect && o->runner) {
		fprintf(stderr, "layerprof oscal: --connect runs the agent's suite: no --runner\n");
		return LP_EXIT_USAGE;
	}
	if (o->token_file && !o->connect) {
		fprintf(stderr, "layerprof oscal: --token-file goes with --connect\n");
		return LP_EXIT_USAGE;
	}
	if (o->resume && (o->calls || o->quick || o->reps || o->warmup || o->threshold_set)) {
		fprintf(stderr,
		        "layerprof oscal: --resume takes the settings of '%s': no --calls, --quick, --reps, "
		        "--warmup or --threshold\n",
		        o->resume);
		return LP_EXIT_USAGE;
	}
	return 0;
}

/* Whether an entry did not end: announced, not finished (an interrupted
 * run's last one, in a file another run wrote). */
static bool run_unfinished(const struct oscal_entry *e)
{
	return e->status == OSCAL_PENDING || (e->status == OSCAL_FAILED && !strcmp(e->reason, "interrupted"));
}

/* Frees what an entry holds, as oscal_cal_release does, by releasing a
 * calibration made of a copy of it alone. */
static void run_drop_entry(const struct oscal_entry *e)
{
	struct oscal_cal one;

	oscal_cal_init(&one);
	one.entries = malloc(sizeof(*e));
	if (!one.entries)
		return; /* its memory is lost, nothing else */
	memcpy(one.entries, e, sizeof(*e));
	one.nentries = 1;
	oscal_cal_release(&one);
}

/* Leaves out of c the entries that did not end (freed). */
static void run_drop_unfinished(struct oscal_cal *c)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < c->nentries; i++) {
		if (run_unfinished(&c->entries[i])) {
			run_drop_entry(&c->entries[i]);
			continue;
		}
		if (k != i)
			c->entries[k] = c->entries[i];
		k++;
	}
	c->nentries = k;
}

/* --resume: the file read, its settings taken, its unfinished entries
 * left out (they run again).  0 or the exit code. */
static int run_resume_load(struct run *r)
{
	struct oscal_cal *o = &r->old;

	if (oscal_load(r->o.resume, o))
		return LP_EXIT_FAILURE;
	r->have_old = true;
	r->o.quick = o->settings.quick;
	r->o.calls = o->settings.calls[0] ? o->settings.calls : NULL;
	r->o.reps = o->settings.reps;
	r->o.warmup = o->settings.warmup;
	r->o.threshold = o->settings.threshold;
	r->o.threshold_set = true;
	/* an entry that was interrupted ran only in part: it runs again */
	run_drop_unfinished(o);
	return 0;
}

/* ------------------------------------------------------------ run */

int oscal_run_cmd(int argc, char **argv)
{
	struct run *r = calloc(1, sizeof(*r));
	char store[16384];
	char *args[RUN_ARGS_MAX];
	bool stop = false, complete, interrupted, died = false;
	int ret;

	if (!r) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	oscal_cal_init(&r->cal);
	r->o.threshold = OSCAL_THRESHOLD;
	ret = run_options(&r->o, argc, argv, &stop);
	if (ret || stop)
		goto out;
	r->output = r->o.output ? r->o.output : r->o.resume ? r->o.resume : OSCAL_DEFAULT_FILE;
	if (r->o.connect)
		/* the agent's suite, on its device: nothing to find here */
		snprintf(r->suite.path, sizeof(r->suite.path), "layerprof-oscal on the agent at %s", r->o.connect);
	else
		ret = oscal_suite_init(&r->suite, r->o.runner);
	if (ret)
		goto out;
	ret = LP_EXIT_FAILURE;
	if (r->o.resume && run_resume_load(r))
		goto out;
	if (oscal_file_check(r->output))
		goto out;
	if (r->o.connect) {
		snprintf(r->source, sizeof(r->source), "agent %s", r->o.connect);
	} else if (r->suite.nrunner) {
		/* the runner and the suite: the platform the file describes */
		size_t used = 0;

		for (uint32_t i = 0; i < r->suite.nrunner; i++)
			used += (size_t)snprintf(r->source + used, sizeof(r->source) - used, "%s ", r->suite.runner[i]);
		snprintf(r->source + used, sizeof(r->source) - used, "%s", r->suite.path);
	} else {
		snprintf(r->source, sizeof(r->source), "local");
	}
	if (r->have_old && strcmp(r->old.source, r->source)) {
		fprintf(stderr, "layerprof oscal: '%s' was measured by '%s', this run would be '%s': not resumed\n",
		        r->o.resume, r->old.source, r->source);
		goto out;
	}
	if (r->o.connect)
		ret = run_remote_list(r);
	else
		ret = oscal_suite_list(&r->suite, r->o.calls, &r->listed, &r->nlisted);
	if (ret) {
		ret = ret == -ENOENT && r->o.calls ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
		goto out;
	}
	r->tty = isatty(STDERR_FILENO);
	r->base = r->have_old ? r->old.nentries : 0;
	if (run_args(r, args, store, sizeof(store))) {
		fprintf(stderr, "layerprof oscal: too many entries to skip\n");
		ret = LP_EXIT_FAILURE;
		goto out;
	}
	if (r->base < r->nlisted) {
		ret = run_suite(r, args);
		/* a suite that died after some entries ended: those are kept,
		 * as an interrupted run's (a long run on a device is not lost) */
		if (ret == -ECHILD && r->cal.header_seen && r->ended) {
			died = true;
			ret = -EINTR;
		}
		if (ret && ret != -EINTR) {
			ret = LP_EXIT_FAILURE;
			goto out;
		}
	} else {
		/* nothing left: the file as it was, complete */
		ret = 0;
	}
	if (r->have_old && !r->cal.header_seen) {
		/* nothing of this run's header (nothing left, or stopped at once):
		 * the machine and clock are the file's */
		r->cal.machine = r->old.machine;
		r->cal.clock = r->old.clock;
	} else if (r->have_old && r->old.machine.host[0] &&
	           (strcmp(r->cal.machine.host, r->old.machine.host) ||
	            strcmp(r->cal.machine.arch, r->old.machine.arch))) {
		fprintf(stderr, "layerprof oscal: '%s' was measured on %s (%s), this run on %s (%s): not resumed\n",
		        r->o.resume, r->old.machine.host, r->old.machine.arch, r->cal.machine.host,
		        r->cal.machine.arch);
		ret = LP_EXIT_FAILURE;
		goto out;
	}
	interrupted = ret == -EINTR;
	/* what did not end is not kept: a resumed run measures it whole */
	run_drop_unfinished(&r->cal);
	complete = !interrupted;
	snprintf(r->cal.source, sizeof(r->cal.source), "%s", r->source);
	r->cal.settings.threshold = r->o.threshold;
	r->cal.complete = complete;
	if (r->have_old) {
		/* the settings the whole run was made with, not the last part's
		 * --skip */
		r->cal.settings.quick = r->old.settings.quick;
		r->cal.settings.reps = r->old.settings.reps;
		r->cal.settings.warmup = r->old.settings.warmup;
		memcpy(r->cal.settings.calls, r->old.settings.calls, sizeof(r->cal.settings.calls));
		memcpy(r->cal.created, r->old.created, sizeof(r->cal.created));
	} else if (r->o.calls) {
		snprintf(r->cal.settings.calls, sizeof(r->cal.settings.calls), "%s", r->o.calls);
	}
	if (oscal_cal_analyse(&r->cal)) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		ret = LP_EXIT_FAILURE;
		goto out;
	}
	if (r->have_old && run_merge(r)) {
		ret = LP_EXIT_FAILURE;
		goto out;
	}
	if (oscal_file_write(&r->cal, r->output)) {
		ret = LP_EXIT_FAILURE;
		goto out;
	}
	if (died) {
		fprintf(stderr,
		        "layerprof oscal: %u of %u entries ended before the suite did; resume with --resume %s\n",
		        r->cal.nentries, r->nlisted, r->output);
		ret = LP_EXIT_FAILURE;
	} else if (interrupted) {
		fprintf(stderr, "layerprof oscal: interrupted: %u of %u entries ended; resume with --resume %s\n",
		        r->cal.nentries, r->nlisted, r->output);
		ret = RUN_EXIT_INTERRUPTED;
	} else {
		ret = LP_EXIT_OK;
	}
	if (r->o.format == OSCAL_FMT_JSON)
		run_print_json(r, &r->cal, complete);
	else
		run_print_text(r, &r->cal);
	if (fflush(stdout) && !ret)
		ret = LP_EXIT_FAILURE;
out:
	oscal_cal_release(&r->cal);
	if (r->have_old)
		oscal_cal_release(&r->old);
	free(r->listed);
	free(r);
	return ret;
}
