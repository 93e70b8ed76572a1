/* Timing a configuration's run: the programs started with posix_spawn,
 * the wait on SIGCHLD with a deadline (no polling: the end of the last
 * program is seen when it happens).  Why not common/launch's fork: the
 * start is part of what is timed, and fork copies the page tables of the
 * whole layerprof process (5 to 15 ms apart from the run on a loaded
 * two-CPU VM, against 1 to 3 ms for posix_spawn's vfork-like clone), which
 * would add its own noise to every measurement. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/lib/tune/spawn.h"

extern char **environ;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first line of what program k wrote on stderr (fd), or "". */
static void first_line(int fd, char *buf, size_t size)
{
	ssize_t n = fd >= 0 ? pread(fd, buf, size - 1, 0) : -1;
	char *nl;

	buf[n > 0 ? n : 0] = '\0';
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
}

/* Says why program argv0 failed (status from waitpid) into out->why. */
static void say_failed(struct tune_sample *out, const char *argv0, int status, int errfd)
{
	char line[160];
	const char *base = strrchr(argv0, '/') ? strrchr(argv0, '/') + 1 : argv0;

	first_line(errfd, line, sizeof(line));
	out->failed = true;
	if (WIFEXITED(status))
		snprintf(out->why, sizeof(out->why), "%s exited with status %d%s%s", base, WEXITSTATUS(status),
		         line[0] ? ": " : "", line);
	else
		snprintf(out->why, sizeof(out->why), "%s was killed by signal %d (%s)%s%s", base, WTERMSIG(status),
		         strsignal(WTERMSIG(status)), line[0] ? ": " : "", line);
}

int tune_spawn_run(char *const *const *argvs, uint32_t n, double timeout_s, struct tune_sample *out, char *err,
                   size_t errlen)
{
	pid_t pids[TUNE_PROGS_MAX];
	int errfd[TUNE_PROGS_MAX], status[TUNE_PROGS_MAX], r = 0;
	bool done[TUNE_PROGS_MAX] = { false };
	uint32_t started = 0, left;
	bool lost[TUNE_PROGS_MAX] = { false };
	struct sigaction dfl, oldact;
	sigset_t chld, old;
	double t0, deadline;

	if (!n || n > TUNE_PROGS_MAX)
		return error_set(err, errlen, -EINVAL, "%u programs: 1 to %u at once", n, TUNE_PROGS_MAX);
	for (uint32_t k = 0; k < n; k++)
		errfd[k] = memfd_create("layerprof-tune-stderr", MFD_CLOEXEC);
	/* SIGCHLD at its default: ignored (SIG_IGN inherited from a parent),
	 * the programs would be reaped by the kernel, unseen */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGCHLD, &dfl, &oldact);
	t0 = now_s();
	for (uint32_t k = 0; !r && k < n; k++) {
		posix_spawn_file_actions_t fa;

		if (errfd[k] < 0) {
			r = -errno;
			break;
		}
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, errfd[k], STDERR_FILENO);
		r = -posix_spawnp(&pids[k], argvs[k][0], &fa, NULL, argvs[k], environ);
		posix_spawn_file_actions_destroy(&fa);
		if (!r)
			started++;
	}
	if (r) {
		for (uint32_t k = 0; k < started; k++) {
			kill(pids[k], SIGKILL);
			while (waitpid(pids[k], NULL, 0) < 0 && errno == EINTR)
				;
		}
		error_set(err, errlen, r, "cannot run '%s': %s", argvs[started][0], strerror(-r));
		goto out;
	}
	/* SIGCHLD blocked after the spawns (the programs must not inherit the
	 * mask): an end before it is found by the WNOHANG pass, one after it
	 * stays pending for sigtimedwait */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	deadline = timeout_s > 0 ? t0 + timeout_s : 0;
	for (left = n;;) {
		struct timespec ts;
		double rest;

		for (uint32_t k = 0; k < n; k++)
			if (!done[k]) {
				pid_t w = waitpid(pids[k], &status[k], WNOHANG);

				if (w == pids[k] || (w < 0 && errno == ECHILD)) {
					lost[k] = w < 0; /* reaped by someone else */
					done[k] = true;
					left--;
				}
			}
		if (!left)
			break;
		if (!deadline) {
			sigwaitinfo(&chld, NULL);
			continue;
		}
		rest = deadline - now_s();
		if (rest <= 0) {
			out->timed_out = out->failed = true;
			snprintf(out->why, sizeof(out->why), "still running after %.3g s: killed", timeout_s);
			for (uint32_t k = 0; k < n; k++)
				if (!done[k]) {
					kill(pids[k], SIGKILL);
					while (waitpid(pids[k], &status[k], 0) < 0 && errno == EINTR)
						;
					done[k] = true;
				}
			break;
		}
		ts.tv_sec = (time_t)rest;
		ts.tv_nsec = (long)((rest - (double)ts.tv_sec) * 1e9);
		sigtimedwait(&chld, NULL, &ts);
	}
	out->seconds = now_s() - t0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (uint32_t k = 0; k < n && !out->timed_out; k++)
		if (lost[k]) {
			out->failed = true;
			snprintf(out->why, sizeof(out->why), "%s could not be waited for", argvs[k][0]);
			break;
		} else if (!WIFEXITED(status[k]) || WEXITSTATUS(status[k])) {
			say_failed(out, argvs[k][0], status[k], errfd[k]);
			break;
		}
out:
	sigaction(SIGCHLD, &oldact, NULL);
	for (uint32_t k = 0; k < n; k++)
		if (errfd[k] >= 0)
			close(errfd[k]);
	return r;
}
