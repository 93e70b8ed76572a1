/* The OS-call timing suite run for the host (OSCAL, docs/protocol.md): the
 * agent starts its own layerprof-oscal with the options the host chose
 * from a fixed set, reads the suite's output from a pipe in the poll loop
 * and sends it on as OSCALDATA frames, then the exit as STATUS.  One run
 * at a time; it lasts as long as the host that asked for it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/exepath.h"
#include "common/launch.h"

extern char **environ;

/* The longest values taken: patterns and the names of a resumed run. */
#define OSCAL_CALLS_MAX 4096u
#define OSCAL_SKIP_MAX 60000u
#define OSCAL_NUMBER_DIGITS 9 /* reps and warmup: what an int holds */

/* The suite's options a host may give, in the order of its command line. */
enum oscal_key {
	OSCAL_KEY_CALLS,
	OSCAL_KEY_QUICK,
	OSCAL_KEY_REPS,
	OSCAL_KEY_WARMUP,
	OSCAL_KEY_SKIP,
	OSCAL_KEY_LIST, /* the entries only, nothing measured */
	OSCAL_KEYS
};

static const char *const oscal_keys[OSCAL_KEYS] = { "calls", "quick", "reps", "warmup", "skip", "list" };
static const char *const oscal_options[OSCAL_KEYS] = { "--calls", "--quick", "--reps", "--warmup", "--skip", "--list" };

/* Whether the suite at path is the agent's to run: a regular file that
 * only the agent's user or root may change, in a directory only they may
 * change (an agent run by root must not run what another user can
 * replace).  Returns 0, or -EPERM / -errno with the reason in why. */
static int suite_trusted(const struct agent *a, const char *path, char *why, size_t size)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	if (stat(path, &st) || access(path, X_OK)) {
		snprintf(why, size, "%s", strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || (st.st_uid != a->uid && st.st_uid) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(why, size, "not a file only uid %u or root may change", a->uid);
		return -EPERM;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	if (stat(dir, &st) || (st.st_uid != a->uid && st.st_uid) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(why, size, "its directory may be changed by other users than uid %u and root", a->uid);
		return -EPERM;
	}
	return 0;
}

void oscal_init(struct agent *a)
{
	static const char *const rel[] = { "/" OSCAL_PROGRAM, "/../oscal/" OSCAL_PROGRAM };
	struct oscal_run *o = &a->oscal;
	const char *env = getenv(OSCAL_ENV);
	char dir[PATH_MAX], why[200];

	memset(o, 0, sizeof(*o));
	o->out_fd = o->err_fd = -1;
	a->oscal_path[0] = '\0';
	if (env && env[0]) {
		if (!realpath(env, a->oscal_path) || suite_trusted(a, a->oscal_path, why, sizeof(why))) {
			fprintf(stderr,
			        "layerprofd: warning: %s='%s' is not a program the agent can run (%s): no oscal\n",
			        OSCAL_ENV, env, a->oscal_path[0] ? why : strerror(errno));
			a->oscal_path[0] = '\0';
		}
		return;
	}
	if (exepath_dir(dir, sizeof(dir)) || exepath_find(dir, rel, sizeof(rel) / sizeof(rel[0]), a->oscal_path))
		a->oscal_path[0] = '\0';
	else if (suite_trusted(a, a->oscal_path, why, sizeof(why))) {
		fprintf(stderr, "layerprofd: warning: not running '%s' (%s): no oscal\n", a->oscal_path, why);
		a->oscal_path[0] = '\0';
	}
}

bool oscal_available(const struct agent *a)
{
	return a->oscal_path[0] != '\0';
}

/* Copies what a peer sent, for the log and for messages: printable ASCII,
 * anything else as '?', cut to fit. */
static void printable(char *out, size_t size, const char *p, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 1 < size; i++)
		out[n++] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
	out[n] = '\0';
}

/* True when every byte of v[len] is in the set allowed. */
static bool only_of(const char *v, size_t len, const char *allowed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char ch = v[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (ch && strchr(allowed, ch))))
			return false;
	}
	return true;
}

/* A decimal number of 1 to OSCAL_NUMBER_DIGITS digits, at least min. */
static bool number(const char *v, size_t len, unsigned long min)
{
	unsigned long n = 0;
	size_t i;

	if (!len || len > OSCAL_NUMBER_DIGITS)
		return false;
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		n = n * 10 + (unsigned long)(v[i] - '0');
	}
	return n >= min;
}

/* Checks one value; an empty calls or skip counts as not given.  Returns 0,
 * 1 (leave the option out) or -EINVAL with the reason in err. */
static int check_value(enum oscal_key k, const char *v, size_t len, char *err, size_t errlen)
{
	char shown[80];

	printable(shown, sizeof(shown), v, len);
	switch (k) {
	case OSCAL_KEY_CALLS:
		if (!len)
			return 1;
		/* fnmatch patterns of entry and call names: no path, no blank,
		 * nothing a shell or the suite's option parser would read */
		if (len > OSCAL_CALLS_MAX || !only_of(v, len, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_-,*?[]!")) {
			snprintf(
			    err, errlen,
			    "invalid calls '%s': comma-separated patterns of letters, digits and _ - * ? [ ] !, at "
			    "most %u bytes",
			    shown, OSCAL_CALLS_MAX);
			return -EINVAL;
		}
		return 0;
	case OSCAL_KEY_SKIP:
		if (!len)
			return 1;
		if (len > OSCAL_SKIP_MAX || !only_of(v, len, "_-,")) {
			snprintf(
			    err, errlen,
			    "invalid skip '%s': comma-separated entry names of a-z, 0-9, _ and -, at most %u bytes",
			    shown, OSCAL_SKIP_MAX);
			return -EINVAL;
		}
		return 0;
	case OSCAL_KEY_QUICK:
	case OSCAL_KEY_LIST:
		if (len != 1 || (v[0] != '0' && v[0] != '1')) {
			snprintf(err, errlen, "invalid %s '%s': 0 or 1", oscal_keys[k], shown);
			return -EINVAL;
		}
		return v[0] == '0';
	case OSCAL_KEY_REPS:
	case OSCAL_KEY_WARMUP:
		if (!number(v, len, k == OSCAL_KEY_REPS)) {
			snprintf(err, errlen, "invalid %s '%s': a whole number, %s to 999999999", oscal_keys[k], shown,
			         k == OSCAL_KEY_REPS ? "1" : "0");
			return -EINVAL;
		}
		return 0;
	default:
		break;
	}
	return -EINVAL;
}

/* The suite's command line from the request's key=value lines, only
 * from the known keys and checked values: argv[OSCAL_ARGV_MAX] points
 * into buf (as big as the payload) and to static strings.  Returns the
 * number of arguments or -EINVAL with the reason in err. */
#define OSCAL_ARGV_MAX (2 * OSCAL_KEYS + 2)
static int build_argv(const struct agent *a, const uint8_t *payload, size_t len, char *buf, char **argv, char *err,
                      size_t errlen)
{
	const char *val[OSCAL_KEYS] = { 0 };
	size_t vlen[OSCAL_KEYS] = { 0 }, at = 0, used = 0;
	bool seen[OSCAL_KEYS] = { false };
	int argc = 0;

	if (memchr(payload, '\0', len)) {
		snprintf(err, errlen, "the options must be key=value lines of text");
		return -EINVAL;
	}
	while (at < len) {
		const char *line = (const char *)payload + at, *nl = memchr(line, '\n', len - at), *eq;
		size_t llen = nl ? (size_t)(nl - line) : len - at;
		char shown[80];
		int k, r;

		at += llen + (nl ? 1 : 0);
		if (!llen)
			continue;
		eq = memchr(line, '=', llen);
		if (!eq) {
			printable(shown, sizeof(shown), line, llen);
			snprintf(err, errlen, "option '%s' is not key=value", shown);
			return -EINVAL;
		}
		for (k = 0; k < OSCAL_KEYS; k++)
			if (strlen(oscal_keys[k]) == (size_t)(eq - line) &&
			    !memcmp(line, oscal_keys[k], (size_t)(eq - line)))
				break;
		if (k == OSCAL_KEYS) {
			printable(shown, sizeof(shown), line, (size_t)(eq - line));
			snprintf(err, errlen, "unknown option '%s' (calls, quick, reps, warmup, skip, list)", shown);
			return -EINVAL;
		}
		if (seen[k]) {
			snprintf(err, errlen, "option '%s' given twice", oscal_keys[k]);
			return -EINVAL;
		}
		seen[k] = true;
		r = check_value((enum oscal_key)k, eq + 1, llen - (size_t)(eq - line) - 1, err, errlen);
		if (r < 0)
			return r;
		if (r == 0) {
			val[k] = eq + 1;
			vlen[k] = llen - (size_t)(eq - line) - 1;
		}
	}
	argv[argc++] = (char *)a->oscal_path;
	for (int k = 0; k < OSCAL_KEYS; k++) {
		if (!val[k])
			continue;
		/* the option, then its value as the next word (the suite takes
		 * that word as the value whatever it begins with) */
		argv[argc++] = (char *)oscal_options[k];
		if (k == OSCAL_KEY_QUICK || k == OSCAL_KEY_LIST)
			continue;
		memcpy(buf + used, val[k], vlen[k]);
		buf[used + vlen[k]] = '\0';
		argv[argc++] = buf + used;
		used += vlen[k] + 1;
	}
	argv[argc] = NULL;
	return argc;
}

static void refuse(struct conn *c, const char *why)
{
	char msg[700];
	int n = snprintf(msg, sizeof(msg), "OSCAL: %s", why);

	agent_log("host %s: oscal refused: %s", c->peer, why);
	conn_queue(c, LP_FRAME_ERROR, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* A pipe for one of the suite's outputs: the agent's end non-blocking,
 * both close-on-exec (the child's is dup'd onto its stdout or stderr). */
static int output_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	if (fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)) {
		int r = -errno;

		close(fds[0]);
		close(fds[1]);
		return r;
	}
	return 0;
}

/* Starts the suite with argv; its output pipes become o's. */
static int suite_spawn(struct agent *a, char **argv, char *err, size_t errlen)
{
	struct oscal_run *o = &a->oscal;
	struct launch_cmd cmd = { .path = a->oscal_path, .argv = argv, .envp = environ, .stdin_null = true };
	int out[2], errp[2], r;
	enum launch_step step;
	pid_t pid;

	r = output_pipe(out);
	if (r) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(-r));
		return r;
	}
	r = output_pipe(errp);
	if (r) {
		close(out[0]);
		close(out[1]);
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(-r));
		return r;
	}
	cmd.stdout_fd = out[1];
	cmd.stderr_fd = errp[1];
	cmd.new_group = true;
	/* the agent ignores SIGPIPE; an ignored signal stays so across exec */
	sigemptyset(&cmd.reset);
	sigaddset(&cmd.reset, SIGPIPE);
	pid = launch_spawn(&cmd, &step);
	close(out[1]);
	close(errp[1]);
	if (pid < 0) {
		close(out[0]);
		close(errp[0]);
		if (step == LAUNCH_EXEC)
			snprintf(err, errlen, "cannot run '%.300s': %s", a->oscal_path, strerror(-pid));
		else
			snprintf(err, errlen, "cannot %s: %s", step == LAUNCH_PIPE ? "create a pipe" : "fork",
			         strerror(-pid));
		return pid;
	}
	memset(o, 0, sizeof(*o));
	o->pid = pid;
	o->out_fd = out[0];
	o->err_fd = errp[0];
	return 0;
}

int oscal_request(struct agent *a, struct conn *c, const struct wire_frame *f)
{
	char *argv[OSCAL_ARGV_MAX], *buf, err[600];
	int argc;

	if (!oscal_available(a)) {
		refuse(c, "no suite: " OSCAL_PROGRAM " is not beside the agent (or set " OSCAL_ENV
		          " in the agent's environment)");
		return 0;
	}
	if (a->oscal.pid) {
		refuse(c, "busy: a suite run is under way");
		return 0;
	}
	/* again now: the file may have changed since the agent started */
	if (suite_trusted(a, a->oscal_path, err, sizeof(err))) {
		char msg[700];

		snprintf(msg, sizeof(msg), "no suite: not running '%.300s': %.200s", a->oscal_path, err);
		refuse(c, msg);
		return 0;
	}
	if (f->len > OSCAL_REQUEST_MAX) {
		refuse(c, "the options are too long");
		return 0;
	}
	buf = malloc(f->len + 1);
	if (!buf) {
		refuse(c, "out of memory");
		return 0;
	}
	argc = build_argv(a, f->payload, f->len, buf, argv, err, sizeof(err));
	if (argc < 0 || suite_spawn(a, argv, err, sizeof(err))) {
		free(buf);
		refuse(c, err);
		return 0;
	}
	agent_log("host %s: oscal suite started (pid %d, %d arguments)", c->peer, (int)a->oscal.pid, argc - 1);
	free(buf);
	return 0;
}

/* Sends what is buffered of the suite's stdout: whole lines, or all of
 * it at the end (eof) or when one line fills the buffer.  What the
 * queue refuses stays for the next round.  A host that is gone gets
 * nothing: the bytes are dropped. */
static void send_output(struct agent *a, bool eof)
{
	struct oscal_run *o = &a->oscal;
	size_t n = o->out_len;

	if (!n)
		return;
	if (o->orphaned || !a->conn || !conn_ready(a->conn)) {
		o->out_len = 0;
		return;
	}
	if (!eof && n < sizeof(o->out)) {
		const uint8_t *nl = NULL;

		for (size_t i = n; i > 0; i--) {
			if (o->out[i - 1] == '\n') {
				nl = o->out + i - 1;
				break;
			}
		}
		if (!nl)
			return;
		n = (size_t)(nl - o->out) + 1;
	}
	if (conn_queue(a->conn, LP_FRAME_OSCALDATA, o->out, n))
		return;
	memmove(o->out, o->out + n, o->out_len - n);
	o->out_len -= n;
}

/* Room for another block in the host's queue: the suite waits on its
 * pipe while the host's link is slow, rather than the agent dropping. */
static bool host_has_room(const struct agent *a)
{
	const struct conn *c = a->conn;

	if (!c || !conn_ready(c))
		return true; /* nobody to send to: read and drop */
	return conn_pending(c) < AGENT_OUT_HIGH &&
	       conn_pending(c) + 2 * (LP_WIRE_HEADER_SIZE + OSCAL_BLOCK_MAX) <= c->out_max;
}

void oscal_poll_fds(struct agent *a, struct pollfd *pfd)
{
	struct oscal_run *o = &a->oscal;

	pfd[0].fd = o->out_len < sizeof(o->out) && host_has_room(a) ? o->out_fd : -1;
	pfd[1].fd = o->err_fd;
	pfd[0].events = pfd[1].events = POLLIN;
}

static void read_stdout(struct agent *a)
{
	struct oscal_run *o = &a->oscal;
	ssize_t n;

	send_output(a, false);
	if (o->out_len == sizeof(o->out))
		return;
	n = read(o->out_fd, o->out + o->out_len, sizeof(o->out) - o->out_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(o->out_fd);
		o->out_fd = -1;
		send_output(a, true);
		return;
	}
	o->out_len += (size_t)n;
	send_output(a, false);
}

/* The suite's stderr: each line into the agent's log, the last one kept
 * for the exit's STATUS (a usage error says there what was wrong). */
static void read_stderr(struct agent *a)
{
	struct oscal_run *o = &a->oscal;
	char buf[4096];
	ssize_t n = read(o->err_fd, buf, sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(o->err_fd);
		o->err_fd = -1;
		if (o->err_len)
			memcpy(o->last_err, o->err, o->err_len + 1);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			if (o->err_len) {
				agent_log("oscal suite: %s", o->err);
				memcpy(o->last_err, o->err, o->err_len + 1);
			}
			o->err_len = 0;
			o->err[0] = '\0';
			continue;
		}
		if (o->err_len + 1 < sizeof(o->err)) {
			o->err[o->err_len++] = (buf[i] >= 0x20 && buf[i] < 0x7f) ? buf[i] : '?';
			o->err[o->err_len] = '\0';
		}
	}
}

void oscal_input(struct agent *a, const struct pollfd *pfd)
{
	struct oscal_run *o = &a->oscal;

	if (o->out_fd >= 0 && pfd[0].fd == o->out_fd && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
		read_stdout(a);
	else if (o->out_len)
		send_output(a, o->out_fd < 0); /* the queue may take it now */
	if (o->err_fd >= 0 && pfd[1].fd == o->err_fd && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
		read_stderr(a);
}

/* The exit told to the host that asked, after all its output, and the
 * place freed for the next run.  Returns false while the host's queue
 * cannot take the rest yet (the next round tries again). */
static bool finish(struct agent *a)
{
	struct oscal_run *o = &a->oscal;
	char msg[OSCAL_ERRLINE_MAX + 128];
	int n, code = -1;

	if (WIFEXITED(o->status))
		code = WEXITSTATUS(o->status);
	else if (WIFSIGNALED(o->status))
		code = 128 + WTERMSIG(o->status);
	if (!o->orphaned && a->conn && conn_ready(a->conn)) {
		send_output(a, true);
		if (o->out_len)
			return false;
		n = snprintf(msg, sizeof(msg), "event=oscal_exit\nstatus=%d\n", code);
		if (WIFSIGNALED(o->status))
			n += snprintf(msg + n, sizeof(msg) - (size_t)n, "signal=%d\n", WTERMSIG(o->status));
		if (o->last_err[0])
			n += snprintf(msg + n, sizeof(msg) - (size_t)n, "stderr=%s\n", o->last_err);
		if (conn_queue(a->conn, LP_FRAME_STATUS, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1))
			return false;
	}
	agent_log("oscal suite (pid %d) ended with status %d%s", (int)o->pid, code,
	          o->orphaned ? ", stopped as its host left" : "");
	if (o->out_fd >= 0)
		close(o->out_fd);
	if (o->err_fd >= 0)
		close(o->err_fd);
	memset(o, 0, sizeof(*o));
	o->out_fd = o->err_fd = -1;
	return true;
}

/* The suite is reaped: the rest of its process group goes too (a child
 * it forked and had no time to reap).  Called while the suite's pid is
 * still held, as a zombie, so the group's number names no one else. */
static void exited(struct agent *a, int status)
{
	struct oscal_run *o = &a->oscal;

	kill(-o->pid, SIGKILL);
	o->exited = true;
	o->status = status;
	o->exit_ns = agent_now_ns() + OSCAL_EOF_GRACE_NS;
}

bool oscal_reaped(struct agent *a, pid_t pid, int status)
{
	if (!a->oscal.pid || pid != a->oscal.pid || a->oscal.exited)
		return false;
	exited(a, status);
	return true;
}

void oscal_check(struct agent *a)
{
	struct oscal_run *o = &a->oscal;
	uint64_t now = agent_now_ns();

	if (!o->pid)
		return;
	if (!o->exited) {
		siginfo_t si;

		/* looked at before it is reaped: the group is killed while
		 * its leader's pid is still taken */
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, (id_t)o->pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == o->pid) {
			int status;

			kill(-o->pid, SIGKILL);
			if (waitpid(o->pid, &status, WNOHANG) == o->pid)
				exited(a, status);
		} else if (o->orphaned && now >= o->kill_ns) {
			kill(-o->pid, SIGKILL);
			o->kill_ns = now + OSCAL_STOP_GRACE_NS;
		}
	}
	if (!o->exited)
		return;
	/* its output to the end, unless something it left holds the pipe */
	if ((o->out_fd >= 0 || o->err_fd >= 0) && now < o->exit_ns)
		return;
	finish(a);
}

void oscal_host_gone(struct agent *a)
{
	struct oscal_run *o = &a->oscal;

	if (!o->pid || o->orphaned)
		return;
	o->orphaned = true;
	o->out_len = 0;
	if (o->exited)
		return;
	/* SIGTERM first: the suite removes its files; SIGKILL if it dawdles */
	kill(-o->pid, SIGTERM);
	o->kill_ns = agent_now_ns() + OSCAL_STOP_GRACE_NS;
	agent_log("oscal suite (pid %d): its host left: stopping it", (int)o->pid);
}

void oscal_release(struct agent *a)
{
	struct oscal_run *o = &a->oscal;
	uint64_t end;
	int status = SIGKILL; /* as a wait status: killed by it (if waitpid fails) */

	if (!o->pid)
		return;
	oscal_host_gone(a);
	end = agent_now_ns() + OSCAL_STOP_GRACE_NS;
	while (!o->exited && agent_now_ns() < end) {
		struct pollfd pfd[2];

		oscal_poll_fds(a, pfd);
		if (poll(pfd, 2, 20) > 0)
			oscal_input(a, pfd);
		oscal_check(a);
	}
	if (!o->exited) {
		kill(-o->pid, SIGKILL);
		while (waitpid(o->pid, &status, 0) < 0 && errno == EINTR)
			;
		o->exited = true;
		o->status = status;
	}
	finish(a); /* orphaned: nothing is queued, it always ends */
}
