/* Unit test of common/exepath: the running executable's directory, and
 * files found relative to a directory in the order given (the runtime
 * library: ../lib, then ../runtime, then beside). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/exepath.h"
#include "tests/unit/check.h"

static char top[64];

static void make_file(const char *rel)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (!CHECK(fd >= 0))
		perror(path);
	else
		close(fd);
}

static void make_dir(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	if (!CHECK(mkdir(path, 0700) == 0))
		perror(path);
}

/* top/rel as realpath gives it (top itself may be under a link). */
static const char *resolved(const char *rel)
{
	static char out[PATH_MAX + 64];
	char real_top[PATH_MAX];

	if (!realpath(top, real_top))
		return "(no top)";
	snprintf(out, sizeof(out), "%s/%s", real_top, rel);
	return out;
}

static void test_dir(const char *argv0)
{
	char dir[PATH_MAX], want[PATH_MAX], *slash;

	/* ctest starts the test by its full path: its directory is argv[0]'s */
	if (!realpath(argv0, want))
		snprintf(want, sizeof(want), "(realpath of %s failed)", argv0);
	slash = strrchr(want, '/');
	if (slash)
		*slash = '\0';
	CHECK_EQ_U64(exepath_dir(dir, sizeof(dir)), 0);
	CHECK_STR(dir, want);
	/* no room: unknown, and said so */
	dir[0] = 'x';
	CHECK_EQ_U64(exepath_dir(dir, 1), (uint64_t)-ENOENT);
	CHECK_STR(dir, "");
}

static void test_find(void)
{
	static const char *const rel[] = { "/../lib/none", "/../runtime/b", "/../lib/a" };
	static const char *const none[] = { "/../lib/none", "/missing" };
	char bin[PATH_MAX], out[PATH_MAX];

	make_dir("bin");
	make_dir("lib");
	make_dir("runtime");
	make_file("lib/a");
	make_file("runtime/b");
	snprintf(bin, sizeof(bin), "%s/bin", top);
	/* the first that exists, resolved */
	CHECK_EQ_U64(exepath_find(bin, rel, 3, out), 0);
	CHECK_STR(out, resolved("runtime/b"));
	CHECK_EQ_U64(exepath_find(bin, rel + 2, 1, out), 0);
	CHECK_STR(out, resolved("lib/a"));
	CHECK_EQ_U64(exepath_find(bin, none, 2, out), (uint64_t)-ENOENT);
	CHECK_EQ_U64(exepath_find(bin, rel, 0, out), (uint64_t)-ENOENT);
	/* "/../" needs the directory itself */
	snprintf(bin, sizeof(bin), "%s/nobin", top);
	CHECK_EQ_U64(exepath_find(bin, rel, 3, out), (uint64_t)-ENOENT);
}

static void test_runtime(void)
{
	char bin[PATH_MAX], out[PATH_MAX];

	snprintf(bin, sizeof(bin), "%s/bin", top);
	CHECK_EQ_U64(exepath_runtime(bin, out), (uint64_t)-ENOENT);
	make_file("bin/liblayerprof.so");
	CHECK_EQ_U64(exepath_runtime(bin, out), 0);
	CHECK_STR(out, resolved("bin/liblayerprof.so"));
	make_file("runtime/liblayerprof.so");
	CHECK_EQ_U64(exepath_runtime(bin, out), 0);
	CHECK_STR(out, resolved("runtime/liblayerprof.so"));
	make_file("lib/liblayerprof.so");
	CHECK_EQ_U64(exepath_runtime(bin, out), 0);
	CHECK_STR(out, resolved("lib/liblayerprof.so"));
}

int main(int argc, char **argv)
{
	char cmd[128];

	(void)argc;
	snprintf(top, sizeof(top), "/tmp/lp-exepath-XXXXXX");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	test_dir(argv[0]);
	test_find();
	test_runtime();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		printf("cannot remove %s\n", top);
	return check_summary();
}
