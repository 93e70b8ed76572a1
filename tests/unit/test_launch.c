/* Unit test of common/launch: the environment built from a given one (the
 * program's own LD_PRELOAD kept after the runtime, the session and the heap
 * options replaced, everything else kept in order), and the fork and exec:
 * the program runs with that environment, signals set back to their
 * default, stdin from /dev/null; a program that cannot run gives the
 * exec's errno and is reaped. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/launch.h"
#include "tests/unit/check.h"

static size_t env_count(char **env)
{
	size_t n = 0;

	while (env[n])
		n++;
	return n;
}

static void test_env_keeps_preload(void)
{
	char *base[] = { "HOME=/root", "LD_PRELOAD=/opt/own.so", "LAYERPROF_SESSION=/old",
		         "PATH=/bin",  "LAYERPROF_MEM_DEPTH=3",  NULL };
	struct launch_env le = { .session = "/run/s1", .preload = "/lib/liblayerprof.so" };
	char **env = launch_env_new(base, &le);

	CHECK(env != NULL);
	if (!env)
		return;
	CHECK_EQ_U64(env_count(env), 5);
	CHECK_STR(env[0], "HOME=/root");
	CHECK_STR(env[1], "PATH=/bin");
	/* without memory the heap options are the caller's */
	CHECK_STR(env[2], "LAYERPROF_MEM_DEPTH=3");
	CHECK_STR(env[3], "LAYERPROF_SESSION=/run/s1");
	CHECK_STR(env[4], "LD_PRELOAD=/lib/liblayerprof.so:/opt/own.so");
	CHECK(env[0] == base[0]); /* borrowed */
	free(env);
}

static void test_env_memory(void)
{
	char *base[] = { "LAYERPROF_MEM_DEPTH=3", "LAYERPROF_MEM_KEEPALIVE=1", "LD_PRELOAD=", "X=1", NULL };
	struct launch_env le = { .session = "/run/s2",
		                 .preload = "/lib/liblayerprof.so:/lib/liblayerprof-mem.so",
		                 .memory = true,
		                 .mem_depth = 16 };
	char **env = launch_env_new(base, &le);

	CHECK(env != NULL);
	if (!env)
		return;
	CHECK_EQ_U64(env_count(env), 5);
	CHECK_STR(env[0], "X=1");
	CHECK_STR(env[1], "LAYERPROF_SESSION=/run/s2");
	/* an empty LD_PRELOAD adds nothing */
	CHECK_STR(env[2], "LD_PRELOAD=/lib/liblayerprof.so:/lib/liblayerprof-mem.so");
	CHECK_STR(env[3], "LAYERPROF_MEM_DEPTH=16");
	CHECK_STR(env[4], "LAYERPROF_MEM_KEEPALIVE=0");
	free(env);
	le.mem_keep_alive = true;
	le.mem_depth = 64;
	env = launch_env_new((char *[]){ "LD_PRELOADX=1", NULL }, &le);
	CHECK(env != NULL);
	if (!env)
		return;
	CHECK_EQ_U64(env_count(env), 5);
	CHECK_STR(env[0], "LD_PRELOADX=1"); /* not LD_PRELOAD */
	CHECK_STR(env[2], "LD_PRELOAD=/lib/liblayerprof.so:/lib/liblayerprof-mem.so");
	CHECK_STR(env[3], "LAYERPROF_MEM_DEPTH=64");
	CHECK_STR(env[4], "LAYERPROF_MEM_KEEPALIVE=1");
	free(env);
}

/* Every entry launch_env_new sets at once (heap options, the sync
 * tracer's, the counters'), over a base that sets them all: each is
 * replaced, none is lost or written past the block (valgrind/ASan). */
static void test_env_all(void)
{
	char *base[] = { "LAYERPROF_MEM_DEPTH=3",
		         "LAYERPROF_MEM_KEEPALIVE=1",
		         "LAYERPROF_SYNC=0",
		         "LAYERPROF_COUNTERS=x",
		         "LD_PRELOAD=/opt/own.so",
		         "LAYERPROF_SESSION=/old",
		         "Y=2",
		         NULL };
	struct launch_env le = { .session = "/run/s4",
		                 .preload = "/lib/liblayerprof.so:/lib/liblayerprof-mem.so:/lib/liblayerprof-sync.so",
		                 .memory = true,
		                 .mem_depth = 8,
		                 .sync = "threads",
		                 .counters = "read=read;scope=all;events=1:0x2" };
	char **env = launch_env_new(base, &le);

	CHECK(env != NULL);
	if (!env)
		return;
	CHECK_EQ_U64(env_count(env), 7);
	CHECK_STR(env[0], "Y=2");
	CHECK_STR(env[1], "LAYERPROF_SESSION=/run/s4");
	CHECK_STR(env[2],
	          "LD_PRELOAD=/lib/liblayerprof.so:/lib/liblayerprof-mem.so:/lib/liblayerprof-sync.so:/opt/own.so");
	CHECK_STR(env[3], "LAYERPROF_MEM_DEPTH=8");
	CHECK_STR(env[4], "LAYERPROF_MEM_KEEPALIVE=0");
	CHECK_STR(env[5], "LAYERPROF_SYNC=threads");
	CHECK_STR(env[6], "LAYERPROF_COUNTERS=read=read;scope=all;events=1:0x2");
	free(env);
}

/* Runs /bin/sh -c script with env; returns its exit status, its stdout
 * in out. */
static int run_sh(const char *script, char **env, bool stdin_null, int reset_sig, char *out, size_t outlen)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	struct launch_cmd cmd = { .path = "/bin/sh", .argv = argv, .envp = env, .stdin_null = stdin_null };
	enum launch_step step;
	int p[2], saved, status = -1;
	ssize_t n;
	size_t got = 0;
	pid_t pid;

	sigemptyset(&cmd.reset);
	if (reset_sig)
		sigaddset(&cmd.reset, reset_sig);
	if (pipe(p))
		return -1;
	saved = dup(STDOUT_FILENO);
	dup2(p[1], STDOUT_FILENO);
	close(p[1]);
	pid = launch_spawn(&cmd, &step);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	CHECK(pid > 0);
	while (got < outlen - 1 && (n = read(p[0], out + got, outlen - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return status;
}

static void test_spawn(void)
{
	char *base[] = { "PATH=/bin:/usr/bin", "LD_PRELOAD=", NULL };
	struct launch_env le = { .session = "/run/s3", .preload = "" };
	char **env = launch_env_new(base, &le);
	char out[256];
	int status;

	CHECK(env != NULL);
	if (!env)
		return;
	status = run_sh("echo \"$LAYERPROF_SESSION\"; exit 7", env, false, 0, out, sizeof(out));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	CHECK_STR(out, "/run/s3\n");
	/* stdin: /dev/null gives an empty read */
	status = run_sh("if read x; then echo got; else echo eof; fi", env, true, 0, out, sizeof(out));
	CHECK_STR(out, "eof\n");
	/* an ignored signal stays ignored across exec, unless reset */
	signal(SIGUSR1, SIG_IGN);
	status = run_sh("kill -USR1 $$; echo alive", env, false, 0, out, sizeof(out));
	CHECK_STR(out, "alive\n");
	status = run_sh("kill -USR1 $$; echo alive", env, false, SIGUSR1, out, sizeof(out));
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1);
	CHECK_STR(out, "");
	signal(SIGUSR1, SIG_DFL);
	free(env);
}

/* stdout_fd and stderr_fd become the child's, new_group makes it lead a
 * process group of its own; zeroed, they leave the caller's. */
static void test_spawn_redirect(void)
{
	char *argv[] = { "sh", "-c", "echo out; echo err >&2; read -r st < /proc/$$/stat; set -- $st; echo $5 >&2",
		         NULL },
	     *env[] = { "PATH=/bin:/usr/bin", NULL };
	struct launch_cmd cmd = { .path = "/bin/sh", .argv = argv, .envp = env, .stdin_null = true, .new_group = true };
	char out[64] = "", err[64] = "", want[64];
	enum launch_step step;
	int po[2], pe[2], status = -1;
	ssize_t n;
	pid_t pid;

	sigemptyset(&cmd.reset);
	CHECK(!pipe2(po, O_CLOEXEC) && !pipe2(pe, O_CLOEXEC));
	cmd.stdout_fd = po[1];
	cmd.stderr_fd = pe[1];
	pid = launch_spawn(&cmd, &step);
	close(po[1]);
	close(pe[1]);
	CHECK(pid > 0);
	n = read(po[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	for (size_t got = 0; got < sizeof(err) - 1 && (n = read(pe[0], err + got, sizeof(err) - 1 - got)) > 0;)
		got += (size_t)n;
	close(po[0]);
	close(pe[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_STR(out, "out\n");
	snprintf(want, sizeof(want), "err\n%d\n", (int)pid);
	CHECK_STR(err, want);
	CHECK(getpgrp() != pid);
}

static void test_spawn_fails(void)
{
	char dir[] = "/tmp/lp-launch-XXXXXX", path[64];
	char *argv[] = { path, NULL }, *env[] = { NULL };
	struct launch_cmd cmd = { .path = path, .argv = argv, .envp = env };
	enum launch_step step = LAUNCH_PIPE;
	pid_t pid;
	int fd;

	sigemptyset(&cmd.reset);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/missing", dir);
	pid = launch_spawn(&cmd, &step);
	CHECK_EQ_U64(pid, -ENOENT);
	CHECK_EQ_U64(step, LAUNCH_EXEC);
	/* reaped: no child is left */
	CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
	/* a file without the execute bit */
	snprintf(path, sizeof(path), "%s/plain", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	step = LAUNCH_PIPE;
	pid = launch_spawn(&cmd, &step);
	CHECK_EQ_U64(pid, -EACCES);
	CHECK_EQ_U64(step, LAUNCH_EXEC);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_env_keeps_preload();
	test_env_memory();
	test_env_all();
	test_spawn();
	test_spawn_redirect();
	test_spawn_fails();
	return check_summary();
}
