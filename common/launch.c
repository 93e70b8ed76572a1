/* Starting a program to be traced: its environment, and the fork and exec
 * with a pipe that carries a failed exec's errno back to the parent. */
#include "common/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ctrnames.h"
#include "common/progpath.h"
#include "layerprof/format.h"

#define LAUNCH_PRELOAD "LD_PRELOAD"
/* The entries launch_env_new sets itself, at most: the session, LD_PRELOAD,
 * the two heap options, the sync tracer's and the counters'. */
#define LAUNCH_OWN_MAX 6

/* Whether entry e of an environment sets variable name. */
static bool env_is(const char *e, const char *name)
{
	size_t k = strlen(name);

	return !strncmp(e, name, k) && e[k] == '=';
}

static bool env_replaced(const char *e, const struct launch_env *le)
{
	if (env_is(e, LP_ENV_SESSION) || env_is(e, LAUNCH_PRELOAD) || env_is(e, LAUNCH_COUNTERS_ENV))
		return true;
	if (le->sync && env_is(e, LAUNCH_SYNC_ENV))
		return true;
	return le->memory && (env_is(e, LP_MEM_ENV_DEPTH) || env_is(e, LP_MEM_ENV_KEEPALIVE));
}

char **launch_env_new(char *const *base, const struct launch_env *le)
{
	const char *old = NULL;
	size_t n = 0, i, j = 0, text;
	char own[LAUNCH_OWN_MAX][48];
	char **env, *p;
	int nown = 0, k;

	for (i = 0; base[i]; i++) {
		if (env_is(base[i], LAUNCH_PRELOAD))
			old = base[i] + sizeof(LAUNCH_PRELOAD);
		n++;
	}
	if (le->memory) {
		snprintf(own[nown++], sizeof(own[0]), "%s=%u", LP_MEM_ENV_DEPTH, le->mem_depth);
		snprintf(own[nown++], sizeof(own[0]), "%s=%d", LP_MEM_ENV_KEEPALIVE, le->mem_keep_alive ? 1 : 0);
	}
	if (le->sync)
		snprintf(own[nown++], sizeof(own[0]), "%s=%.16s", LAUNCH_SYNC_ENV, le->sync);
	/* the session and LD_PRELOAD entries, then the short ones */
	text = strlen(LP_ENV_SESSION) + strlen(le->session) + 2;
	text += sizeof(LAUNCH_PRELOAD) + strlen(le->preload) + 1 + (old && *old ? strlen(old) + 1 : 0);
	for (k = 0; k < nown; k++)
		text += strlen(own[k]) + 1;
	if (le->counters)
		text += sizeof(LAUNCH_COUNTERS_ENV) + strlen(le->counters) + 1;
	if (n > (SIZE_MAX - text) / sizeof(*env) - LAUNCH_OWN_MAX - 1) {
		errno = ENOMEM;
		return NULL;
	}
	env = malloc((n + LAUNCH_OWN_MAX + 1) * sizeof(*env) + text);
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (!env_replaced(base[i], le))
			env[j++] = base[i];
	p = (char *)(env + n + LAUNCH_OWN_MAX + 1);
	env[j++] = p;
	p += sprintf(p, "%s=%s", LP_ENV_SESSION, le->session) + 1;
	env[j++] = p;
	p += sprintf(p, "%s=%s%s%s", LAUNCH_PRELOAD, le->preload, old && *old ? ":" : "", old && *old ? old : "") + 1;
	for (k = 0; k < nown; k++) {
		env[j++] = p;
		p += sprintf(p, "%s", own[k]) + 1;
	}
	if (le->counters) {
		env[j++] = p;
		p += sprintf(p, "%s=%s", LAUNCH_COUNTERS_ENV, le->counters) + 1;
	}
	env[j] = NULL;
	return env;
}

/* In the forked child: only async-signal-safe calls.  Never returns.
 * gofd >= 0: waits for one byte on it first (cmd->held). */
static void child_run(const struct launch_cmd *cmd, int errfd, int gofd)
{
	int e, sig;

	if (gofd >= 0) {
		char go;
		ssize_t n;

		do
			n = read(gofd, &go, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(127);
		close(gofd);
	}

	if (cmd->stdin_null) {
		int fd = open("/dev/null", O_RDONLY);

		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	if (cmd->stdout_fd > STDERR_FILENO)
		dup2(cmd->stdout_fd, STDOUT_FILENO);
	if (cmd->stderr_fd > STDERR_FILENO)
		dup2(cmd->stderr_fd, STDERR_FILENO);
	if (cmd->new_group)
		setpgid(0, 0);
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&cmd->reset, sig) == 1)
			signal(sig, SIG_DFL);
	e = -progpath_exec(cmd->path, cmd->argv, cmd->envp);
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* nothing else to tell the parent with */
	}
	_exit(127);
}

pid_t launch_spawn(const struct launch_cmd *cmd, enum launch_step *failed)
{
	int errpipe[2], gopipe[2] = { -1, -1 }, child_errno = 0;
	pid_t pid;

	if (pipe2(errpipe, O_CLOEXEC)) {
		*failed = LAUNCH_PIPE;
		return -errno;
	}
	/* a socket, not a pipe: MSG_NOSIGNAL spares us SIGPIPE if the child died */
	if (cmd->held && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gopipe)) {
		int e = errno;

		close(errpipe[0]);
		close(errpipe[1]);
		*failed = LAUNCH_PIPE;
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(errpipe[0]);
		close(errpipe[1]);
		if (cmd->held) {
			close(gopipe[0]);
			close(gopipe[1]);
		}
		*failed = LAUNCH_FORK;
		return -e;
	}
	if (pid == 0) {
		close(errpipe[0]);
		if (cmd->held)
			close(gopipe[1]);
		child_run(cmd, errpipe[1], gopipe[0]);
	}
	close(errpipe[1]);
	if (cmd->held) {
		int r;

		close(gopipe[0]);
		r = cmd->held(cmd->held_ctx, pid);
		if (r || send(gopipe[1], "x", 1, MSG_NOSIGNAL) != 1) {
			r = r ? r : -EPIPE;
			close(gopipe[1]);
			close(errpipe[0]);
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			*failed = LAUNCH_HELD;
			return r;
		}
		close(gopipe[1]);
	}
	/* the pipe closes at the exec (O_CLOEXEC), or carries its errno */
	if (read(errpipe[0], &child_errno, sizeof(child_errno)) == (ssize_t)sizeof(child_errno)) {
		close(errpipe[0]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		*failed = LAUNCH_EXEC;
		return child_errno > 0 ? -child_errno : -ENOEXEC;
	}
	close(errpipe[0]);
	return pid;
}

int launch_counters_env(const struct ctrname *c, uint32_t n, const char *how, bool user, char *buf, size_t size)
{
	size_t len;
	int w;
	uint32_t i;

	w = snprintf(buf, size, "read=%s;scope=%s;events=", how, user ? "user" : "all");
	if (w < 0 || (size_t)w >= size)
		return -ENAMETOOLONG;
	len = (size_t)w;
	for (i = 0; i < n; i++) {
		w = snprintf(buf + len, size - len, "%s%u:0x%llx", i ? "," : "", c[i].type,
		             (unsigned long long)c[i].config);
		if (w < 0 || (size_t)w >= size - len)
			return -ENAMETOOLONG;
		len += (size_t)w;
	}
	return (int)len;
}
