/* A forked child that ends in a chosen way (argv[1]: exit, _exit, kill or
 * orphan), each process leaking known blocks: the parent 4 x 40 bytes from
 * parent_leak, the child 3 x 24 bytes from child_leak.  The child exits
 * with status 3 (exit, _exit, orphan) or is killed with SIGKILL by the
 * parent (kill).  orphan: the parent exits first without waiting, so that
 * the child is reaped by whoever adopts it. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep[16];

__attribute__((noinline)) static void parent_leak(void)
{
	for (int i = 0; i < 4; i++)
		keep[i] = malloc(40);
}

__attribute__((noinline)) static void child_leak(void)
{
	for (int i = 0; i < 3; i++)
		keep[8 + i] = malloc(24);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "exit";
	pid_t parent = getpid();
	int ready[2], status;
	char c = 0;
	pid_t pid;

	parent_leak();
	if (pipe(ready))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_leak();
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		if (!strcmp(how, "_exit"))
			_exit(3);
		if (!strcmp(how, "kill"))
			for (;;)
				pause();
		if (!strcmp(how, "orphan"))
			while (getppid() == parent)
				usleep(1000); /* until the parent is gone */
		exit(3);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return 1;
	if (!strcmp(how, "orphan"))
		return 0;
	if (!strcmp(how, "kill"))
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return 0;
}
