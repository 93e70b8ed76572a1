/* External meters: a command run once per reading that prints watts
 * (cmd:), and a meter's log of timestamped watts read after the run
 * (csv:). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/lib/energy/powerimpl.h"

#define POWEREXT_PIDS_ENV "LAYERPROF_POWER_PIDS"
/* The meter command's child runs on a stack of its own until its exec. */
#define POWEREXT_STACK (64u << 10)
/* A CSV line longer than this is a bad line. */
#define POWEREXT_LINE_MAX 512u

extern char **environ;

static uint64_t powerext_now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int powerext_open_cmd(struct power_source *ps, const char *command, char *err, size_t errlen)
{
	if (!*command) {
		snprintf(err, errlen, "cmd: needs a command that prints watts (cmd:COMMAND)");
		return -EINVAL;
	}
	ps->command = strdup(command);
	if (!ps->command) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* What the meter command's runner needs, made before it starts (it is a
 * copy of this process, which may have threads: it makes system calls
 * only). */
struct powerext_child {
	const char *command;
	char **envp;
	int out, err; /* the pipes' write ends */
};

/* fd as the descriptor `to` of the exec'd shell.  Raw system calls, as
 * everywhere in the runner. */
static void powerext_move_fd(int fd, int to)
{
	if (fd == to)
		syscall(SYS_fcntl, fd, F_SETFD, 0);
	else
		syscall(SYS_dup3, fd, to, 0);
}

/* The runner: a child whose exit signal is 0 (a "clone" child: a
 * waitpid(-1, ...) of the caller's, as the recorder's loop makes, never
 * reaps it; an exec would make it an ordinary child again, so it does
 * not exec).  It runs the shell as its own child, in a process group of
 * its own that a timeout kills whole, and ends with the shell's exit
 * status, or 128 + the signal that killed it.  A copy of a process that
 * may have threads, made without the C library knowing (its locks, and a
 * sanitizer's, may be held by threads it does not have): it makes raw
 * system calls only, the shell's child made as fork does it. */
static int powerext_child_main(void *arg)
{
	const struct powerext_child *c = arg;
	char *argv[] = { "sh", "-c", (char *)c->command, NULL };
	/* the kernel's struct sigaction, all zero: SIG_DFL, no flags, no
	 * mask (larger than any architecture's) */
	unsigned long dfl[8] = { 0 }, none = 0;
	long sh, in;
	int st = 0;

	syscall(SYS_setpgid, 0, 0);
	in = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
	if (in >= 0)
		powerext_move_fd((int)in, 0);
	powerext_move_fd(c->out, 1);
	powerext_move_fd(c->err, 2);
	sh = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (sh == 0) {
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				syscall(SYS_rt_sigaction, sig, dfl, NULL, sizeof(none));
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
		syscall(SYS_execve, "/bin/sh", argv, c->envp);
		syscall(SYS_exit_group, 127);
	}
	/* the pipes end when the shell (and what it started) closes them */
	for (int fd = 0; fd < 3; fd++)
		syscall(SYS_close, fd);
	syscall(SYS_close, c->out);
	syscall(SYS_close, c->err);
	if (in > 2)
		syscall(SYS_close, in);
	if (sh < 0)
		syscall(SYS_exit_group, 126);
	while (syscall(SYS_wait4, sh, &st, 0, NULL) < 0)
		if (errno != EINTR)
			syscall(SYS_exit_group, 126);
	syscall(SYS_exit_group, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 126;
}

/* The environment of the command: ours without LAYERPROF_POWER_PIDS, then
 * pids_entry when it is not NULL.  One malloc'd array, entries borrowed. */
static char **powerext_env(char *pids_entry)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ && environ[n])
		n++;
	envp = malloc((n + 2) * sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], POWEREXT_PIDS_ENV "=", sizeof(POWEREXT_PIDS_ENV)))
			envp[k++] = environ[i];
	if (pids_entry)
		envp[k++] = pids_entry;
	envp[k] = NULL;
	return envp;
}

/* Reads what is ready on fd into buf (of len, at most
 * POWER_CMD_OUTPUT_MAX - 1 kept, the rest dropped).  false at its end. */
static bool powerext_drain(int fd, char *buf, size_t *len)
{
	char tmp[1024];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	if (*len < POWER_CMD_OUTPUT_MAX - 1) {
		size_t room = POWER_CMD_OUTPUT_MAX - 1 - *len;
		size_t take = (size_t)n < room ? (size_t)n : room;

		memcpy(buf + *len, tmp, take);
		*len += take;
	}
	buf[*len] = '\0';
	return true;
}

/* The first line of text (up to its newline, at most 200 characters). */
static void powerext_first_line(const char *text, char *out, size_t size)
{
	size_t n = strcspn(text, "\r\n");

	if (n > 200)
		n = 200;
	if (n >= size)
		n = size - 1;
	memcpy(out, text, n);
	out[n] = '\0';
}

/* Runs the command and waits for its end, at most POWER_CMD_TIMEOUT_MS;
 * its output into out, its error output into errout.  Returns 0 with
 * *status its wait status, or -errno with err set. */
static int powerext_run(struct power_source *ps, char *out, char *errout, int *status, uint64_t *mid_ns, char *err,
                        size_t errlen)
{
	char pids_entry[sizeof(POWEREXT_PIDS_ENV) + POWER_PIDS_MAX];
	struct powerext_child c = { .command = ps->command };
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, r = 0;
	size_t olen = 0, elen = 0;
	bool oopen = true, eopen = true;
	uint64_t start, deadline;
	char *stack = NULL;
	sigset_t all, old;
	pid_t pid = -1;

	out[0] = errout[0] = '\0';
	pthread_mutex_lock(&ps->lock);
	snprintf(pids_entry, sizeof(pids_entry), "%s=%s", POWEREXT_PIDS_ENV, ps->pids);
	c.envp = powerext_env(ps->pids[0] ? pids_entry : NULL);
	pthread_mutex_unlock(&ps->lock);
	stack = malloc(POWEREXT_STACK);
	if (!c.envp || !stack) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		r = -errno;
		snprintf(err, errlen, "cannot make a pipe for meter command '%s': %s", ps->command, strerror(errno));
		goto out;
	}
	c.out = po[1];
	c.err = pe[1];
	/* signals stay blocked in the runner: it resets their handlers, and
	 * the shell unblocks them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	start = powerext_now_ns(CLOCK_MONOTONIC);
	pid = clone(powerext_child_main, stack + POWEREXT_STACK, 0, &c);
	if (pid < 0)
		r = -errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if (pid < 0) {
		snprintf(err, errlen, "cannot start meter command '%s': %s", ps->command, strerror(-r));
		goto out;
	}
	deadline = start + (uint64_t)POWER_CMD_TIMEOUT_MS * 1000000ull;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = oopen ? po[0] : -1, .events = POLLIN },
			                 { .fd = eopen ? pe[0] : -1, .events = POLLIN } };
		uint64_t now = powerext_now_ns(CLOCK_MONOTONIC);
		pid_t w;

		if (!oopen && !eopen) {
			w = waitpid(pid, status, __WCLONE | WNOHANG);
			if (w == pid)
				break;
			if (w < 0 && errno != EINTR) {
				r = -errno;
				snprintf(err, errlen, "meter command '%s': %s", ps->command, strerror(errno));
				pid = -1;
				goto out;
			}
		}
		if (now >= deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, status, __WCLONE);
			pid = -1;
			snprintf(err, errlen, "meter command '%s' took more than %u s: killed", ps->command,
			         POWER_CMD_TIMEOUT_MS / 1000);
			r = -ETIME;
			goto out;
		}
		if (!oopen && !eopen) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			continue;
		}
		if (poll(pfd, 2, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "meter command '%s': %s", ps->command, strerror(errno));
			goto out;
		}
		if (oopen && pfd[0].revents)
			oopen = powerext_drain(po[0], out, &olen);
		if (eopen && pfd[1].revents)
			eopen = powerext_drain(pe[0], errout, &elen);
	}
	pid = -1;
	*mid_ns = start + (powerext_now_ns(CLOCK_MONOTONIC) - start) / 2;
out:
	if (pid > 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, status, __WCLONE);
	}
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	free(stack);
	free(c.envp);
	return r;
}

int powerext_read_cmd(struct power_source *ps, struct power_sample *s, char *err, size_t errlen)
{
	char out[POWER_CMD_OUTPUT_MAX], errout[POWER_CMD_OUTPUT_MAX], line[256];
	int status = 0, r;
	uint64_t mid = 0;

	r = powerext_run(ps, out, errout, &status, &mid, err, errlen);
	if (r)
		return r;
	if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status))) {
		char why[64];

		powerext_first_line(errout, line, sizeof(line));
		if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
		else
			snprintf(why, sizeof(why), "exit status %d", WEXITSTATUS(status));
		snprintf(err, errlen, "meter command '%s' failed (%s)%s%s", ps->command, why, line[0] ? ": " : "",
		         line);
		return -EIO;
	}
	powerext_first_line(out, line, sizeof(line));
	if (!line[0]) {
		snprintf(err, errlen, "meter command '%s' printed nothing (it should print watts)", ps->command);
		return -ENODATA;
	}
	if (power_parse_watts(line, &s->watts)) {
		snprintf(err, errlen,
		         "meter command '%s' printed '%s', not watts (a number, or one followed by W, mW or uW)",
		         ps->command, line);
		return -EINVAL;
	}
	s->ns = mid;
	return 0;
}

int powerext_open_csv(struct power_source *ps, const char *file, char *err, size_t errlen)
{
	uint64_t m0, rt, m1;

	if (!*file) {
		snprintf(err, errlen, "csv: needs a file (csv:FILE)");
		return -EINVAL;
	}
	if (access(file, R_OK)) {
		snprintf(err, errlen, "cannot read meter log '%s': %s", file, strerror(errno));
		return -errno;
	}
	ps->csv = strdup(file);
	if (!ps->csv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* the log's wall-clock seconds to the trace clock: the offset now,
	 * between two readings of the monotonic clock */
	m0 = powerext_now_ns(CLOCK_MONOTONIC);
	rt = powerext_now_ns(CLOCK_REALTIME);
	m1 = powerext_now_ns(CLOCK_MONOTONIC);
	ps->realtime_offset_ns = (int64_t)rt - (int64_t)(m0 + (m1 - m0) / 2);
	return 0;
}

/* "seconds,watts" (also ';', a tab or blanks between): 0, or -EINVAL. */
static int powerext_csv_line(const char *line, double *sec, double *watts)
{
	char *end;

	errno = 0;
	*sec = strtod(line, &end);
	if (end == line || errno || !isfinite(*sec) || *sec < 0)
		return -EINVAL;
	while (*end == ' ' || *end == '\t')
		end++;
	if (*end == ',' || *end == ';')
		end++;
	else if (end[-1] != ' ' && end[-1] != '\t')
		return -EINVAL;
	return power_parse_watts(end, watts);
}

static int powerext_cmp_sample(const void *a, const void *b)
{
	const struct power_sample *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

int powerext_read_csv(const struct power_source *ps, uint64_t t0_ns, uint64_t t1_ns, struct power_sample **out,
                      uint32_t *n, uint32_t *cap, uint64_t *dropped, uint64_t *bad, char *err, size_t errlen)
{
	char line[POWEREXT_LINE_MAX];
	bool monotonic = false, first_line = true, seen_row = false, seen_header = false;
	uint32_t first = *n;
	FILE *f = fopen(ps->csv, "re");
	int r = 0;

	if (!f) {
		snprintf(err, errlen, "cannot read meter log '%s': %s", ps->csv, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		struct power_sample s;
		double sec, watts;
		int64_t ns;

		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			(*bad)++;
			continue;
		}
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		if (line[0] == '#') {
			if (first_line && !strcmp(line, "#clock=monotonic"))
				monotonic = true;
			first_line = false;
			continue;
		}
		first_line = false;
		if (powerext_csv_line(line, &sec, &watts)) {
			/* one line before the samples may name the columns */
			if (seen_row || seen_header)
				(*bad)++;
			seen_header = true;
			continue;
		}
		seen_row = true;
		ns = (int64_t)llround(sec * 1e9) - (monotonic ? 0 : ps->realtime_offset_ns);
		if (ns < 0 || (uint64_t)ns < t0_ns || (uint64_t)ns > t1_ns)
			continue;
		s.ns = (uint64_t)ns;
		s.watts = watts;
		r = power_samples_push(out, n, cap, dropped, &s);
		if (r) {
			snprintf(err, errlen, "out of memory");
			break;
		}
	}
	if (!r && ferror(f)) {
		r = -EIO;
		snprintf(err, errlen, "cannot read meter log '%s': %s", ps->csv, strerror(EIO));
	}
	fclose(f);
	if (*n > first)
		qsort(*out + first, *n - first, sizeof(**out), powerext_cmp_sample);
	return r;
}
