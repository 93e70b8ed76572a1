/* layerprof oscal run and list: layerprof-oscal run (no shell; a runner
 * such as qemu-user before it), its output lines fed one by one into a
 * calibration, progress on stderr, the calibration analysed and written;
 * an interrupted run written as such and resumed later. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/lib/util/json.h"
#include "host/lib/util/outfile.h"
#include "host/oscal.h"

extern char **environ;

/* One line of the suite's output, at most (a sample line holds reps
 * numbers). */
#define RUN_LINE_MAX (1u << 20)
/* layerprof-oscal --list's output, at most. */
#define RUN_LIST_MAX (1u << 20)
/* Words of --runner, at most. */
#define RUN_RUNNER_WORDS 32u
/* Arguments of the suite, at most (with the runner's). */
#define RUN_ARGS_MAX (RUN_RUNNER_WORDS + 16u)
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
    "  -h, --help            this text\n"
    "\n"
    "layerprof-oscal is looked for beside layerprof ($LAYERPROF_OSCAL overrides).\n"
    "Exit status: 0 ok, 1 the suite could not run or the file not be written,\n"
    "2 usage, 130 interrupted (the file written, incomplete).\n";

static const char list_usage[] = "usage: layerprof oscal list [--calls PATTERNS]\n"
                                 "\n"
                                 "The suite's entries (layerprof-oscal --list): name, call, condition,\n"
                                 "group, parameter, unit, description; '-' for none.\n";

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
};

/* An entry of the suite's --list. */
struct run_listed {
	char name[OSCAL_NAME_MAX];
	char call[OSCAL_NAME_MAX];
	char rest[OSCAL_TEXT_MAX + 4 * OSCAL_NAME_MAX]; /* cond group param unit description */
};

struct run {
	struct run_opts o;
	char suite[PATH_MAX];
	char runner_buf[1024];
	char *runner[RUN_RUNNER_WORDS + 1];
	uint32_t nrunner;
	/* the entries --list gave that --calls takes, in the suite's order */
	struct run_listed *listed;
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

/* ------------------------------------------------------------ the suite as a child */

/* Splits --runner's words into r->runner.  0 or -EINVAL after the
 * message. */
static int run_split_runner(struct run *r)
{
	char *p, *save = NULL;

	if (!r->o.runner)
		return 0;
	if (strlen(r->o.runner) >= sizeof(r->runner_buf)) {
		fprintf(stderr, "layerprof oscal: invalid --runner: longer than %zu bytes\n",
		        sizeof(r->runner_buf) - 1);
		return -EINVAL;
	}
	memcpy(r->runner_buf, r->o.runner, strlen(r->o.runner) + 1);
	for (p = strtok_r(r->runner_buf, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
		if (r->nrunner == RUN_RUNNER_WORDS) {
			fprintf(stderr, "layerprof oscal: invalid --runner: more than %u words\n", RUN_RUNNER_WORDS);
			return -EINVAL;
		}
		r->runner[r->nrunner++] = p;
	}
	if (!r->nrunner) {
		fprintf(stderr, "layerprof oscal: invalid --runner '': no command\n");
		return -EINVAL;
	}
	return 0;
}

/* Starts the runner's words, the suite and args (NULL-terminated) in a
 * process group of its own, its stdout into *fd.  Returns the pid, or
 * -errno after the message. */
static pid_t run_spawn(struct run *r, char *const *args, int *fd)
{
	char *argv[RUN_ARGS_MAX + 1];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t dfl;
	uint32_t n = 0;
	int p[2], e;
	pid_t pid;

	for (uint32_t i = 0; i < r->nrunner; i++)
		argv[n++] = r->runner[i];
	argv[n++] = r->suite;
	for (; *args && n < RUN_ARGS_MAX; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	if (pipe2(p, O_CLOEXEC)) {
		e = errno;
		fprintf(stderr, "layerprof oscal: cannot run '%s': %s\n", argv[0], strerror(e));
		return -e;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawnattr_init(&at);
	/* its own group: a terminal's Ctrl-C reaches layerprof only, which
	 * stops the suite's whole group (its children too) itself */
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
	if (r->nrunner)
		e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	else
		e = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (e) {
		close(p[0]);
		fprintf(stderr, "layerprof oscal: cannot run '%s': %s\n", argv[0], strerror(e));
		return -e;
	}
	*fd = p[0];
	return pid;
}

/* Waits for pid.  Returns its wait status. */
static int run_reap(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Says how the suite ended when that was not exit 0.  Returns 0 when it
 * was. */
static int run_status_bad(const struct run *r, int status)
{
	const char *who = r->nrunner ? r->runner[0] : r->suite;

	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && r->nrunner)
		fprintf(stderr, "layerprof oscal: '%s' could not run the suite '%s' (exit 127)\n", who, r->suite);
	else if (WIFEXITED(status))
		fprintf(stderr, "layerprof oscal: '%s' failed (exit %d)\n", who, WEXITSTATUS(status));
	else
		fprintf(stderr, "layerprof oscal: '%s' was killed by signal %d (%s)\n", who, WTERMSIG(status),
		        strsignal(WTERMSIG(status)));
	return -EIO;
}

/* ------------------------------------------------------------ list */

/* Runs the suite's --list and keeps the entries --calls takes.  Returns
 * 0, or -errno after the message (-ENOENT: none matches). */
static int run_list(struct run *r)
{
	char *args[] = { (char *)"--list", NULL };
	char *buf = malloc(RUN_LIST_MAX + 1), *p;
	size_t len = 0, cap = 0;
	int fd = -1, e = 0;
	ssize_t k;
	pid_t pid;

	if (!buf) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return -ENOMEM;
	}
	pid = run_spawn(r, args, &fd);
	if (pid < 0) {
		free(buf);
		return pid;
	}
	while ((k = read(fd, buf + len, RUN_LIST_MAX - len)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			e = errno;
			break;
		}
		len += (size_t)k;
		if (len == RUN_LIST_MAX) {
			kill(-pid, SIGKILL); /* a list this long is no list of the suite's */
			e = E2BIG;
			break;
		}
	}
	close(fd);
	buf[len] = '\0';
	if (run_status_bad(r, run_reap(pid))) {
		free(buf);
		return -EIO;
	}
	if (e) {
		fprintf(stderr, "layerprof oscal: cannot read '%s --list': %s\n", r->suite, strerror(e));
		free(buf);
		return -e;
	}
	for (p = buf; *p;) {
		char *eol = strchr(p, '\n');
		char name[OSCAL_NAME_MAX], call[OSCAL_NAME_MAX];
		int off = 0;

		if (eol)
			*eol = '\0';
		if (sscanf(p, "%63s %63s %n", name, call, &off) == 2 && off > 0 &&
		    oscal_calls_match(r->o.calls, name, call)) {
			if (r->nlisted == cap) {
				size_t ncap = cap ? 2 * cap : 128;
				void *n =
				    ncap > OSCAL_ENTRIES_MAX ? NULL : realloc(r->listed, ncap * sizeof(*r->listed));

				if (!n) {
					fprintf(stderr, "layerprof oscal: '%s --list': more than %u entries\n",
					        r->suite, OSCAL_ENTRIES_MAX);
					free(buf);
					return -E2BIG;
				}
				r->listed = n;
				cap = ncap;
			}
			snprintf(r->listed[r->nlisted].name, OSCAL_NAME_MAX, "%s", name);
			snprintf(r->listed[r->nlisted].call, OSCAL_NAME_MAX, "%s", call);
			snprintf(r->listed[r->nlisted].rest, sizeof(r->listed[0].rest), "%s", p + off);
			r->nlisted++;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	free(buf);
	if (!r->nlisted) {
		if (r->o.calls)
			fprintf(stderr, "layerprof oscal: no entry matches '%s'\n", r->o.calls);
		else
			fprintf(stderr, "layerprof oscal: '%s --list' gave no entry\n", r->suite);
		return -ENOENT;
	}
	return 0;
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
	pid = run_spawn(r, args, &fd);
	if (pid < 0) {
		rr = pid;
		goto out;
	}
	rr = run_read(r, fd, pid);
	close(fd);
	status = run_reap(pid);
	run_progress_end(r);
	if (rr)
		goto out;
	if (run_interrupted) {
		rr = -EINTR;
		goto out;
	}
	if (run_status_bad(r, status))
		rr = -ECHILD; /* the suite died: what ended may still be kept */
	else if (!r->cal.header_seen) {
		fprintf(stderr, "layerprof oscal: '%s' gave no measurement\n", r->suite);
		rr = -EIO;
	}
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rr;
}

/* ------------------------------------------------------------ the file */

/* Whether an existing path may be replaced by the calibration: absent, or
 * a regular file that is one (a link, a directory, another file is
 * refused).  0 or -errno after the message. */
static int run_check_output(const char *path)
{
	struct stat st;
	char head[256];
	ssize_t k;
	int fd, e;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	/* the directory first: a run of an hour is not made for nothing */
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (slash && !slash[1]) {
		fprintf(stderr, "layerprof oscal: cannot write '%s': no file name\n", path);
		return -EINVAL;
	}
	e = access(dir, W_OK | X_OK) ? errno : lstat(path, &st) ? errno : 0;
	if (e == ENOENT && access(dir, W_OK | X_OK) == 0)
		return 0; /* the file is not there yet */
	if (e) {
		fprintf(stderr, "layerprof oscal: cannot write '%s': %s\n", path, strerror(e));
		return -e;
	}
	if (S_ISLNK(st.st_mode)) {
		fprintf(stderr, "layerprof oscal: '%s' is a symbolic link: not overwritten (remove it first)\n", path);
		return -ELOOP;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "layerprof oscal: '%s' is not a regular file: not overwritten\n", path);
		return -EEXIST;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	k = fd < 0 ? -1 : read(fd, head, sizeof(head) - 1);
	if (fd >= 0)
		close(fd);
	if (k < 0) {
		e = errno;
		fprintf(stderr, "layerprof oscal: cannot read '%s': %s\n", path, strerror(e));
		return -e;
	}
	head[k] = '\0';
	if (k == 0 || strstr(head, "\"format\":\"" OSCAL_FORMAT "\""))
		return 0;
	fprintf(stderr, "layerprof oscal: '%s' exists and is not a layerprof calibration: not overwritten\n", path);
	return -EEXIST;
}

/* Writes cal to path: an exclusive temporary beside it, renamed over it
 * (a link there is replaced, never followed).  0 or -errno after the
 * message. */
static int run_write(const struct oscal_cal *cal, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char dir[PATH_MAX], tmp[PATH_MAX];
	int dirfd = -1, fd, r;
	FILE *f;

	if (!*name) {
		fprintf(stderr, "layerprof oscal: cannot write '%s': no file name\n", path);
		return -EINVAL;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		r = -errno;
		goto fail;
	}
	fd = outfile_tmp_create(dirfd, name, tmp, sizeof(tmp));
	if (fd < 0) {
		r = fd;
		goto fail;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		goto fail;
	}
	r = oscal_cal_write(f, cal);
	errno = 0;
	if (!r && (fflush(f) || ferror(f) || fsync(fileno(f))))
		r = -(errno ? errno : EIO);
	if (fclose(f) && !r)
		r = -errno;
	if (r) {
		unlinkat(dirfd, tmp, 0);
		goto fail;
	}
	r = outfile_tmp_commit(dirfd, tmp, name);
	if (r)
		goto fail;
	close(dirfd);
	return 0;
fail:
	fprintf(stderr, "layerprof oscal: cannot write calibration '%s': %s\n", path, strerror(-r));
	if (dirfd >= 0)
		close(dirfd);
	return r;
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
	ret = LP_EXIT_USAGE;
	if (run_split_runner(r))
		goto out;
	ret = LP_EXIT_FAILURE;
	if (r->o.resume && run_resume_load(r))
		goto out;
	if (run_check_output(r->output))
		goto out;
	if (oscal_suite_path(r->suite)) {
		fprintf(stderr, "layerprof oscal: cannot find layerprof-oscal (set %s to its path): %s\n",
		        OSCAL_SUITE_ENV, strerror(ENOENT));
		goto out;
	}
	if (r->nrunner) {
		/* the runner and the suite: the platform the file describes */
		size_t used = 0;

		for (uint32_t i = 0; i < r->nrunner; i++)
			used += (size_t)snprintf(r->source + used, sizeof(r->source) - used, "%s ", r->runner[i]);
		snprintf(r->source + used, sizeof(r->source) - used, "%s", r->suite);
	} else {
		snprintf(r->source, sizeof(r->source), "local");
	}
	if (r->have_old && strcmp(r->old.source, r->source)) {
		fprintf(stderr, "layerprof oscal: '%s' was measured by '%s', this run would be '%s': not resumed\n",
		        r->o.resume, r->old.source, r->source);
		goto out;
	}
	ret = run_list(r);
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
		r->cal.machine = r->old.machine;
		r->cal.clock = r->old.clock;
		r->cal.header_seen = true;
	}
	if (r->have_old && r->cal.header_seen &&
	    (strcmp(r->cal.machine.host, r->old.machine.host) || strcmp(r->cal.machine.arch, r->old.machine.arch))) {
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
	if (run_write(&r->cal, r->output)) {
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

/* ------------------------------------------------------------ list */

int oscal_list_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "calls", required_argument, NULL, OPT_CALLS },
		{ "runner", required_argument, NULL, OPT_RUNNER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run *r = calloc(1, sizeof(*r));
	int c, ret = LP_EXIT_USAGE;

	if (!r) {
		fprintf(stderr, "layerprof oscal: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CALLS:
			r->o.calls = optarg;
			break;
		case OPT_RUNNER:
			r->o.runner = optarg;
			break;
		case 'h':
			fputs(list_usage, stdout);
			ret = LP_EXIT_OK;
			goto out;
		default:
			fputs(list_usage, stderr);
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "layerprof oscal: list takes no operand ('%s')\n", argv[optind]);
		goto out;
	}
	if (run_split_runner(r))
		goto out;
	ret = LP_EXIT_FAILURE;
	if (oscal_suite_path(r->suite)) {
		fprintf(stderr, "layerprof oscal: cannot find layerprof-oscal (set %s to its path): %s\n",
		        OSCAL_SUITE_ENV, strerror(ENOENT));
		goto out;
	}
	c = run_list(r);
	if (c) {
		ret = c == -ENOENT && r->o.calls ? LP_EXIT_USAGE : LP_EXIT_FAILURE;
		goto out;
	}
	printf("%-28s %-24s %s\n", "name", "call", "cond group param unit description");
	for (uint32_t i = 0; i < r->nlisted; i++)
		printf("%-28s %-24s %s\n", r->listed[i].name, r->listed[i].call, r->listed[i].rest);
	ret = fflush(stdout) ? LP_EXIT_FAILURE : LP_EXIT_OK;
out:
	free(r->listed);
	free(r);
	return ret;
}
