/* exec and posix_spawn with an environment of the program's own: the new
 * program (this executable again) is given an environment that lacks the
 * profiler's variables, built by hand, emptied or cleared.  The first image
 * calls before_spawn once; the new one calls child_work five times and
 * checks that it got the variables the program gave it, in their order;
 * after posix_spawn the parent waits and calls after_wait once.  Exit 0,
 * or 3 when the child's environment is not the one expected.
 * Usage: spawner MODE
 *   execve-empty     execve with an empty environment
 *   execle           execle with SPAWNER_A=1, SPAWNER_B=2
 *   execvp-clearenv  clearenv, setenv SPAWNER_A=1, then execvp
 *   fexecve          fexecve with SPAWNER_A=1, SPAWNER_B=2
 *   spawn            posix_spawn with SPAWNER_A=1, SPAWNER_B=2
 *   spawnp-preload   posix_spawnp with SPAWNER_A=1 and LD_PRELOAD=libm.so.6 */
#include "prog.h"

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_FLAG "--child"
#define CHILD_CALLS 5
#define EXIT_BAD_ENV 3

extern char **environ;

static volatile int sink;

COUNTED void before_spawn(void)
{
	sink++;
}

COUNTED void child_work(int i)
{
	sink += i;
}

COUNTED void after_wait(void)
{
	sink--;
}

/* The child's check: the program's variables come first, in its order
 * (what a profiler adds goes after them); a given LD_PRELOAD is kept at
 * the front. */
COUNTED int check_env(const char *want)
{
	const char *preload = getenv("LD_PRELOAD");

	if (!strcmp(want, "none"))
		return getenv("SPAWNER_A") ? EXIT_BAD_ENV : 0;
	if (!strcmp(want, "a"))
		return environ[0] && !strcmp(environ[0], "SPAWNER_A=1") ? 0 : EXIT_BAD_ENV;
	if (!strcmp(want, "ab"))
		return environ[0] && !strcmp(environ[0], "SPAWNER_A=1") && environ[1] &&
		               !strcmp(environ[1], "SPAWNER_B=2")
		           ? 0
		           : EXIT_BAD_ENV;
	if (!strcmp(want, "a-preload"))
		return environ[0] && !strcmp(environ[0], "SPAWNER_A=1") && preload &&
		               !strncmp(preload, "libm.so.6", 9) && (preload[9] == '\0' || preload[9] == ':')
		           ? 0
		           : EXIT_BAD_ENV;
	return EXIT_BAD_ENV;
}

COUNTED int spawn_and_wait(char *self, char *const argv[], char *const env[], int search)
{
	pid_t pid;
	int status, r;

	r = search ? posix_spawnp(&pid, self, NULL, NULL, argv, env) : posix_spawn(&pid, self, NULL, NULL, argv, env);
	if (r) {
		fprintf(stderr, "spawner: cannot spawn '%s': %s\n", self, strerror(r));
		return 127;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	after_wait();
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	char *env_ab[] = { "SPAWNER_A=1", "SPAWNER_B=2", NULL };
	char *env_none[] = { NULL };
	char *env_preload[] = { "SPAWNER_A=1", "LD_PRELOAD=libm.so.6", NULL };
	const char *mode;
	ssize_t len;
	int fd;

	if (argc > 2 && !strcmp(argv[1], CHILD_FLAG)) {
		for (int i = 0; i < CHILD_CALLS; i++)
			child_work(i);
		return check_env(argv[2]);
	}
	if (argc != 2) {
		fprintf(stderr, "usage: spawner MODE\n");
		return 2;
	}
	mode = argv[1];
	/* the real path, so the new image's name is the same as the first */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0) {
		perror("spawner: readlink /proc/self/exe");
		return 1;
	}
	self[len] = '\0';
	before_spawn();
	fflush(stdout);
	if (!strcmp(mode, "execve-empty")) {
		char *args[] = { self, CHILD_FLAG, "none", NULL };

		execve(self, args, env_none);
	} else if (!strcmp(mode, "execle")) {
		execle(self, self, CHILD_FLAG, "ab", (char *)NULL, env_ab);
	} else if (!strcmp(mode, "execvp-clearenv")) {
		char *args[] = { self, CHILD_FLAG, "a", NULL };

		clearenv();
		setenv("SPAWNER_A", "1", 1);
		execvp(self, args);
	} else if (!strcmp(mode, "fexecve")) {
		char *args[] = { self, CHILD_FLAG, "ab", NULL };

		fd = open(self, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			fexecve(fd, args, env_ab);
	} else if (!strcmp(mode, "spawn")) {
		char *args[] = { self, CHILD_FLAG, "ab", NULL };

		return spawn_and_wait(self, args, env_ab, 0);
	} else if (!strcmp(mode, "spawnp-preload")) {
		char *args[] = { self, CHILD_FLAG, "a-preload", NULL };

		return spawn_and_wait(self, args, env_preload, 1);
	} else {
		fprintf(stderr, "spawner: unknown mode '%s'\n", mode);
		return 2;
	}
	fprintf(stderr, "spawner: cannot exec '%s'\n", self);
	return 127;
}
