/* Children whose end the wait interposers do not see, each process leaking
 * known blocks: the parent 4 x 40 bytes from parent_leak, the child 3 x 24
 * bytes from child_leak, then exit(3).  argv[1] chooses how the child is
 * made and reaped:
 *   system     system("exec PROG child"): the C library reaps it
 *   popen      popen("exec PROG child") and pclose: the C library reaps it
 *   sigign     fork with SIGCHLD ignored: the kernel reaps it
 *   nocldwait  fork with SA_NOCLDWAIT: the kernel reaps it
 *   fork       fork and waitpid (for a build with the --wrap interposers)
 * With argv[2] "linger", the parent then waits 6 s before it exits (the
 * child's end is to be found while it runs).  The parent exits 0 when each
 * call returned what it should (system and pclose the child's wait status,
 * waitpid ECHILD when the kernel reaped), else 1. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
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

static int forked(int expect_echild)
{
	int ready[2], status;
	char c = 0;
	pid_t pid;

	if (pipe(ready))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_leak();
		exit(3);
	}
	close(ready[1]);
	/* end of file: the child is gone */
	if (read(ready[0], &c, 1) != 0)
		return 1;
	if (expect_echild)
		return waitpid(pid, &status, 0) == -1 && errno == ECHILD ? 0 : 1;
	return waitpid(pid, &status, 0) == pid && status == 3 << 8 ? 0 : 1;
}

static int linger(int r, int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "linger"))
		sleep(6);
	return r;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "system";
	char cmd[4200];
	FILE *f;

	if (!strcmp(how, "child")) {
		child_leak();
		exit(3);
	}
	parent_leak();
	snprintf(cmd, sizeof(cmd), "exec '%s' child", argv[0]);
	if (!strcmp(how, "system"))
		return linger(system(cmd) == 3 << 8 ? 0 : 1, argc, argv);
	if (!strcmp(how, "popen")) {
		f = popen(cmd, "r");
		if (!f)
			return 1;
		while (fgetc(f) != EOF)
			;
		return linger(pclose(f) == 3 << 8 ? 0 : 1, argc, argv);
	}
	if (!strcmp(how, "sigign")) {
		signal(SIGCHLD, SIG_IGN);
		return linger(forked(1), argc, argv);
	}
	if (!strcmp(how, "nocldwait")) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sa.sa_flags = SA_NOCLDWAIT;
		sigaction(SIGCHLD, &sa, NULL);
		return linger(forked(1), argc, argv);
	}
	return linger(forked(0), argc, argv);
}
