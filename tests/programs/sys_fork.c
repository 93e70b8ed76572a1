/* A forked child's syscalls: the child's `child_work` makes 7 write calls of
 * 64 bytes to /dev/null and exits with status 0; the parent's `parent_work`
 * makes 3, then waits for the child. */
#include "prog.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[64];

COUNTED int child_work(int fd)
{
	int bad = 0;

	for (int i = 0; i < 7; i++)
		bad += write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf);
	return bad;
}

COUNTED int parent_work(int fd)
{
	int bad = 0;

	for (int i = 0; i < 3; i++)
		bad += write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf);
	return bad;
}

int main(void)
{
	int fd = open("/dev/null", O_WRONLY), status = 0, bad;
	pid_t pid;

	if (fd < 0)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		_exit(child_work(fd) ? 1 : 0);
	bad = parent_work(fd);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		bad++;
	close(fd);
	return bad ? 1 : 0;
}
