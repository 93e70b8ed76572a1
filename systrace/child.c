/* A child held before its exec (see child.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/progpath.h"
#include "systrace/child.h"

extern char **environ;

int held_child_fork(struct held_child *c, const char *path, char *const argv[], char *const envp[], char *err,
                    size_t errlen)
{
	int sv[2], child_errno;
	ssize_t n;

	/* the child waits for one byte, then execs; a failed exec sends its
	 * errno back, a successful one closes the child's end (close-on-exec).
	 * A socket, not a pipe: MSG_NOSIGNAL spares us SIGPIPE. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		int r = -errno;

		snprintf(err, errlen, "socketpair: %s", strerror(-r));
		return r;
	}
	c->pid = fork();
	if (c->pid < 0) {
		int r = -errno;

		snprintf(err, errlen, "fork: %s", strerror(-r));
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (c->pid == 0) {
		char go;

		close(sv[0]);
		do
			n = read(sv[1], &go, 1);
		while (n < 0 && errno == EINTR);
		if (n == 1) {
			child_errno = -progpath_exec(path, argv, envp ? envp : environ);
			if (send(sv[1], &child_errno, sizeof(child_errno), MSG_NOSIGNAL) < 0)
				_exit(126);
		}
		_exit(127);
	}
	close(sv[1]);
	c->sock = sv[0];
	return 0;
}

int held_child_run(struct held_child *c, const char *prog, char *err, size_t errlen)
{
	int r = 0, child_errno = 0;
	ssize_t n;

	if (send(c->sock, "x", 1, MSG_NOSIGNAL) != 1) {
		r = -errno;
		snprintf(err, errlen, "cannot start the child: %s", strerror(-r));
	}
	if (!r) {
		do
			n = recv(c->sock, &child_errno, sizeof(child_errno), MSG_WAITALL);
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof(child_errno)) {
			r = child_errno > 0 ? -child_errno : -ENOEXEC;
			snprintf(err, errlen, "cannot run '%s': %s", prog, strerror(-r));
		}
	}
	if (r) {
		held_child_kill(c);
		return r;
	}
	close(c->sock);
	c->sock = -1;
	return 0;
}

void held_child_kill(struct held_child *c)
{
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	kill(c->pid, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
}
