/* Memory tracer: children reaped by a SIGCHLD handler while the parent is
 * inside its own heap operations, as a shell reaps its $(...) children.
 * The parent forks CHILDREN children one after another; each child mallocs
 * and frees one block and _exit(0)s; meanwhile the parent mallocs and frees
 * in a loop until its handler, which calls waitpid(-1, WNOHANG), has reaped
 * that child.  So most reaps interrupt a heap operation of the parent.
 * Every child ends with status 0, and the parent exits 0 once all are
 * reaped (1 when a wait fails or a child's status is not 0). */
#include "prog.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 300

static volatile sig_atomic_t reaped, bad;

static void on_child(int sig)
{
	int status;
	pid_t pid;

	(void)sig;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
		reaped++;
	}
}

COUNTED void child_work(void)
{
	void *volatile p = malloc(24);

	free(p);
	BARRIER();
}

COUNTED void parent_churn(void)
{
	void *volatile p = malloc(40);

	free(p);
	BARRIER();
}

int main(void)
{
	struct sigaction sa;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_child;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);
	for (i = 0; i < CHILDREN; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			child_work();
			_exit(0);
		}
		while (reaped <= i)
			parent_churn();
	}
	return bad ? 1 : 0;
}
