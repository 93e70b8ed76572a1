/* fork: the child inherits main's open frame and calls child_work under it;
 * the parent carries on after the child has ended.
 * Usage: forker [return]   (the child ends with _exit(0), or with "return"
 * by returning from the main frame it inherited) */
#include "prog.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_CALLS 3
#define PARENT_CALLS 2

static volatile int sink;

COUNTED void before_fork(void)
{
	sink++;
}

COUNTED void child_work(int i)
{
	sink += i;
}

COUNTED void parent_work(int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	int child_returns = argc > 1 && strcmp(argv[1], "return") == 0;
	int status;
	pid_t pid;

	before_fork();
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("forker: fork");
		return 1;
	}
	if (pid == 0) {
		for (int i = 0; i < CHILD_CALLS; i++)
			child_work(i);
		if (child_returns)
			return 0;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid) {
		perror("forker: waitpid");
		return 1;
	}
	for (int i = 0; i < PARENT_CALLS; i++)
		parent_work(i);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "forker: child failed (status %#x)\n", status);
		return 1;
	}
	return 0;
}
