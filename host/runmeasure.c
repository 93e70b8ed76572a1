/* Running programs measured from outside (see runmeasure.h): their events
 * counted with recctr's totals, a power meter over their span. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/launch.h"
#include "common/progpath.h"
#include "host/lib/energy/power.h"
#include "host/recctr.h"
#include "host/runmeasure.h"

extern char **environ;

/* How often the end of the programs is looked for when the kernel has no
 * pidfd_open (before Linux 5.3). */
#define RUNMEASURE_POLL_NS 1000000L

/* One run: what the held hooks share. */
struct run {
	char *const *const *argvs;
	uint32_t nprogs;
	const struct runmeasure_opts *o;
	char paths[RUNMEASURE_PROGS_MAX][PATH_MAX];
	struct recctr ctr[RUNMEASURE_PROGS_MAX]; /* each program's totals */
	bool counting;
	pid_t pids[RUNMEASURE_PROGS_MAX];
	bool started[RUNMEASURE_PROGS_MAX]; /* its exec succeeded */
	bool ended[RUNMEASURE_PROGS_MAX];
	struct power_meter *meter;
	uint64_t t0;    /* when the programs were let go */
	uint32_t next;  /* the program the next held hook is for */
	sigset_t reset; /* the signals set back to default in the programs */
	char *err;
	size_t errlen;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run_spawn(struct run *run, uint32_t i);

/* The launch_cmd.held hook of program next: it waits before its exec.  Its
 * counters are opened (counting from its exec), then the next program is
 * started the same way from here, so that every program waits until all
 * are forked; the last one's hook starts the meter.  The programs then go
 * in reverse order, each as soon as the one after it has made its exec:
 * they start within a few milliseconds of one another. */
static int run_held(void *ctx, pid_t pid)
{
	struct run *run = ctx;
	uint32_t i = run->next;
	int r;

	run->pids[i] = pid;
	if (run->counting) {
		r = recctr_open_totals(&run->ctr[i], pid, true, run->err, run->errlen);
		if (r)
			return r;
	}
	if (i + 1 < run->nprogs)
		return run_spawn(run, i + 1);
	if (run->o->power) {
		power_source_set_pids(run->o->power, run->pids, run->nprogs);
		run->meter = power_meter_start(run->o->power, run->o->power_interval_ms, run->err, run->errlen);
		if (!run->meter)
			return -EIO;
	}
	run->t0 = now_ns();
	return 0;
}

/* Starts program i (and, from its held hook, those after it).  Returns 0
 * or -errno with run->err set; on failure none of i.. is left running. */
static int run_spawn(struct run *run, uint32_t i)
{
	struct launch_cmd cmd;
	enum launch_step step;
	pid_t pid;

	memset(&cmd, 0, sizeof(cmd));
	cmd.path = run->paths[i];
	cmd.argv = run->argvs[i];
	cmd.envp = environ;
	cmd.stdin_null = run->o->quiet;
	cmd.reset = run->reset;
	cmd.held = run_held;
	cmd.held_ctx = run;
	run->next = i;
	pid = launch_spawn(&cmd, &step);
	if (pid >= 0) {
		run->started[i] = true;
		return 0;
	}
	/* launch_spawn reaped program i; those after it may be running */
	for (uint32_t k = i + 1; k < run->nprogs; k++)
		if (run->started[k]) {
			kill(run->pids[k], SIGKILL);
			while (waitpid(run->pids[k], NULL, 0) < 0 && errno == EINTR)
				;
			run->started[k] = false;
		}
	switch (step) {
	case LAUNCH_HELD:
		break; /* the hook said why */
	case LAUNCH_EXEC:
		snprintf(run->err, run->errlen, "cannot run '%s': %s", run->argvs[i][0], strerror((int)-pid));
		break;
	default:
		snprintf(run->err, run->errlen, "cannot %s for '%s': %s",
		         step == LAUNCH_PIPE ? "create a pipe" : "fork", run->argvs[i][0], strerror((int)-pid));
		break;
	}
	return (int)pid;
}

/* Whether program i has ended (its thread group is gone), leaving it a
 * zombie: until it is reaped its /proc entry still holds its times and
 * faults, for a meter that reads them at its last reading. */
static bool run_ended(const struct run *run, uint32_t i)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)run->pids[i], &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno != EINTR; /* ECHILD: someone else reaped it */
	return si.si_pid == run->pids[i];
}

static void run_kill_left(struct run *run)
{
	for (uint32_t i = 0; i < run->nprogs; i++)
		if (!run->ended[i])
			kill(run->pids[i], SIGKILL);
}

/* Waits until every program has ended, noting each one's end; with a
 * timeout, those still running then are killed. */
static void run_wait(struct run *run, struct runmeasure *out)
{
	struct pollfd pfd[RUNMEASURE_PROGS_MAX];
	uint32_t left = run->nprogs, i;
	uint64_t deadline = 0;
	bool pidfds = true;

	if (run->o->timeout_s > 0)
		deadline = run->t0 + (uint64_t)(run->o->timeout_s * 1e9);
	for (i = 0; i < run->nprogs; i++) {
		pfd[i].fd = pidfds ? (int)syscall(SYS_pidfd_open, run->pids[i], 0) : -1;
		pfd[i].events = POLLIN;
		pidfds = pfd[i].fd >= 0;
	}
	while (left) {
		uint64_t t = now_ns();
		int wait_ms = -1;

		for (i = 0; i < run->nprogs; i++) {
			if (run->ended[i] || !run_ended(run, i))
				continue;
			run->ended[i] = true;
			out->wall_ns[i] = t - run->t0;
			if (pfd[i].fd >= 0)
				close(pfd[i].fd);
			pfd[i].fd = -1;
			left--;
		}
		if (!left)
			break;
		if (deadline && t >= deadline && !out->timed_out) {
			out->timed_out = true;
			run_kill_left(run);
		}
		if (deadline && !out->timed_out)
			wait_ms = (int)((deadline - t) / 1000000u) + 1;
		if (pidfds) {
			poll(pfd, run->nprogs, wait_ms);
		} else {
			struct timespec ts = { 0, RUNMEASURE_POLL_NS };

			nanosleep(&ts, NULL);
		}
	}
	for (i = 0; i < run->nprogs; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
}

/* Reaps program i into out->status[i]. */
static void run_reap(struct run *run, uint32_t i, struct runmeasure *out)
{
	int status = 0;

	while (waitpid(run->pids[i], &status, 0) < 0 && errno == EINTR)
		;
	out->status[i] = status;
}

/* The programs' totals summed into out (they have been reaped).  They are
 * counts as counted, per CPU, never multiplexed (recctr_read_totals): out->
 * scaled stays false. */
static int run_totals(struct run *run, struct runmeasure *out)
{
	struct ctrevent *ev = NULL;
	uint32_t i, k, n;

	for (i = 0; i < run->nprogs; i++) {
		struct recctr *rc = &run->ctr[i];

		free(ev);
		ev = calloc((size_t)rc->ncpus + 1, sizeof(*ev));
		if (!ev) {
			snprintf(run->err, run->errlen, "out of memory");
			return -ENOMEM;
		}
		n = recctr_read_totals(rc, ev);
		if (!n)
			continue;
		for (k = 0; k < out->n && k < ev[n - 1].n; k++)
			out->counts[k] += ev[n - 1].values[k];
	}
	free(ev);
	return 0;
}

/* The events: parsed, probed on this process; the programs' recctrs
 * copied from the probed one (their totals not yet opened). */
static int run_probe(struct run *run, const char *list, struct runmeasure *out)
{
	struct recctr probe;
	uint32_t i;
	int r;

	memset(&probe, 0, sizeof(probe));
	r = recctr_option(&probe, list, run->err, run->errlen);
	if (r)
		return r;
	/* nothing runs in the programs: no gates read the counters */
	probe.no_gates = true;
	r = recctr_probe(&probe, run->err, run->errlen);
	if (r)
		return r;
	out->n = probe.n;
	for (i = 0; i < probe.n; i++)
		snprintf(out->names[i], sizeof(out->names[i]), "%s", probe.set[i].name);
	/* cut to fit, at a character */
	memcpy(out->unavailable, probe.unavailable, sizeof(out->unavailable) - 1);
	out->unavailable[sizeof(out->unavailable) - 1] = '\0';
	for (i = 0; i < run->nprogs; i++) {
		run->ctr[i] = probe;
		run->ctr[i].list = NULL;
	}
	run->counting = true;
	return 0;
}

/* quiet: the caller's stdout and stderr to /dev/null while the programs
 * are forked, so that they inherit it; saved[] restores them. */
static int quiet_begin(int saved[2])
{
	int null;

	saved[0] = saved[1] = -1;
	fflush(NULL);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0)
		return -errno;
	saved[0] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	saved[1] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved[0] < 0 || saved[1] < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0) {
		int e = errno;

		close(null);
		return -e;
	}
	close(null);
	return 0;
}

static void quiet_end(const int saved[2])
{
	for (int k = 0; k < 2; k++)
		if (saved[k] >= 0) {
			dup2(saved[k], k == 0 ? STDOUT_FILENO : STDERR_FILENO);
			close(saved[k]);
		}
}

int runmeasure_run(char *const *const *argvs, uint32_t nprogs, const struct runmeasure_opts *o, struct runmeasure *out,
                   char *err, size_t errlen)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, oldchld;
	struct run *run;
	struct power_result pr;
	int saved[2] = { -1, -1 }, r;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	if (!nprogs || nprogs > RUNMEASURE_PROGS_MAX) {
		snprintf(err, errlen, "%u programs: between 1 and %u run at once", nprogs, RUNMEASURE_PROGS_MAX);
		return -EINVAL;
	}
	run = calloc(1, sizeof(*run));
	if (!run) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* SIGCHLD at its default while the programs run: ignored (SIG_IGN
	 * inherited from a parent), the kernel would reap them before their
	 * wait status could be read */
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGCHLD, &dfl, &oldchld);
	run->argvs = argvs;
	run->nprogs = out->nprogs = nprogs;
	run->o = o;
	run->err = err;
	run->errlen = errlen;
	sigemptyset(&run->reset);
	sigaddset(&run->reset, SIGINT);
	sigaddset(&run->reset, SIGTERM);
	sigaddset(&run->reset, SIGHUP);
	sigaddset(&run->reset, SIGPIPE);
	for (i = 0; i < nprogs; i++) {
		r = progpath_find(argvs[i][0], run->paths[i], sizeof(run->paths[i]));
		if (r) {
			snprintf(err, errlen, "cannot run '%s': %s", argvs[i][0], strerror(-r));
			goto out;
		}
	}
	if (o->counters && *o->counters) {
		r = run_probe(run, o->counters, out);
		if (r)
			goto out;
	}
	if (o->quiet) {
		r = quiet_begin(saved);
		if (r) {
			quiet_end(saved);
			snprintf(err, errlen, "cannot open /dev/null: %s", strerror(-r));
			goto out;
		}
	}
	r = run_spawn(run, 0);
	quiet_end(saved);
	if (r)
		goto out;
	run_wait(run, out);
	for (i = 0; i < nprogs; i++)
		if (out->wall_ns[i] > out->span_ns)
			out->span_ns = out->wall_ns[i];
	if (run->meter) {
		/* before the programs are reaped: a meter that looks at them
		 * sees them whole at its last reading */
		r = power_meter_stop(run->meter, &pr, err, errlen);
		if (r) {
			for (i = 0; i < nprogs; i++)
				run_reap(run, i, out);
			goto out;
		}
		out->has_power = true;
		out->joules = pr.joules;
		out->mean_watts = pr.mean_watts;
		out->nsamples = pr.nsamples;
		out->power_span_ns = pr.t1_ns - pr.t0_ns;
	}
	for (i = 0; i < nprogs; i++)
		run_reap(run, i, out);
	r = run->counting ? run_totals(run, out) : 0;
out:
	for (i = 0; i < nprogs; i++)
		recctr_release(&run->ctr[i]);
	power_meter_free(run->meter);
	free(run);
	sigaction(SIGCHLD, &oldchld, NULL);
	return r;
}
