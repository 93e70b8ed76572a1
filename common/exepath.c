/* Files beside the running executable (see exepath.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/exepath.h"

/* room for dir (at most PATH_MAX) and the longest relative path */
#define EXEPATH_MAX (PATH_MAX + 64)

int exepath_dir(char *dir, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", dir, size - 1);
	char *slash;

	if (n <= 0) {
		dir[0] = '\0';
		return -ENOENT;
	}
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

int exepath_find(const char *dir, const char *const *rel, size_t n, char *out)
{
	char path[EXEPATH_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
		if (!access(path, R_OK) && realpath(path, out))
			return 0;
	}
	return -ENOENT;
}

int exepath_runtime(const char *dir, char *out)
{
	static const char *const rel[] = { "/../lib/liblayerprof.so", "/../runtime/liblayerprof.so",
		                           "/liblayerprof.so" };

	return exepath_find(dir, rel, sizeof(rel) / sizeof(rel[0]), out);
}
