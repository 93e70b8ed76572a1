/* Memory tracer: fork.  Before the fork, keep() mallocs 3 x 56 bytes (kept).
 * The child's child_work() calls work(), which makes 5 x malloc(88) and
 * frees each (5 FREE), then _exit(0).  The parent's parent_work(), after
 * waiting for the child, calls work() for 2 x malloc(88), each freed.  The child's operations are in a
 * stream of its own (its pid), whose stack ids start again at 1.  Exit 0. */
#include "prog.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP 3
#define KEEP_SIZE 56
#define WORK_SIZE 88
#define CHILD_WORK 5
#define PARENT_WORK 2

static void *volatile kept[KEEP];

COUNTED void keep(void)
{
	for (int i = 0; i < KEEP; i++)
		kept[i] = malloc(KEEP_SIZE);
}

COUNTED void work(int n)
{
	for (int i = 0; i < n; i++) {
		void *volatile p = malloc(WORK_SIZE);

		BARRIER();
		free(p);
	}
}

COUNTED void child_work(void)
{
	work(CHILD_WORK);
}

COUNTED void parent_work(void)
{
	work(PARENT_WORK);
}

int main(void)
{
	int status = 0;
	pid_t pid;

	keep();
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_work();
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	parent_work();
	return 0;
}
