/* The program's file, found before the fork, or the one a running process
 * runs (see progpath.h). */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/progpath.h"

/* execvp's search path when $PATH is not set (glibc's confstr _CS_PATH). */
#define PROGPATH_DEFAULT "/bin:/usr/bin"
/* Arguments passed on to /bin/sh for a script without "#!"; more are
 * refused (ENOEXEC), since the child may not allocate. */
#define PROGPATH_SH_ARGS 4096

/* 0 when `path` is an executable regular file, else -errno (-EACCES for
 * one that exists but cannot be run). */
static int check_file(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	return access(path, X_OK) ? -errno : 0;
}

int progpath_find(const char *prog, char *out, size_t size)
{
	const char *path, *p;
	size_t plen = strlen(prog);
	bool denied = false;
	int r;

	if (!plen)
		return -ENOENT;
	if (strchr(prog, '/')) {
		if (plen >= size)
			return -ENAMETOOLONG;
		r = check_file(prog);
		if (r)
			return r;
		memcpy(out, prog, plen + 1);
		return 0;
	}
	path = getenv("PATH");
	if (!path)
		path = PROGPATH_DEFAULT;
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);

		/* an empty entry is the current directory */
		if (!dlen && 2 + plen < size) {
			memcpy(out, "./", 2);
			memcpy(out + 2, prog, plen + 1);
		} else if (dlen && dlen + 1 + plen < size) {
			memcpy(out, p, dlen);
			out[dlen] = '/';
			memcpy(out + dlen + 1, prog, plen + 1);
		} else {
			goto next;
		}
		r = check_file(out);
		if (!r)
			return 0;
		/* execvp goes on past these, and says EACCES if it met one */
		if (r == -EACCES || r == -EPERM)
			denied = true;
		else if (r != -ENOENT && r != -ENOTDIR && r != -ELOOP && r != -ENAMETOOLONG && r != -ESTALE &&
		         r != -ENODEV && r != -ETIMEDOUT)
			return r;
	next:
		if (!end)
			break;
		p = end;
	}
	return denied ? -EACCES : -ENOENT;
}

int progpath_exec(const char *path, char *const argv[], char *const envp[])
{
	char *sh[PROGPATH_SH_ARGS + 3];
	size_t n = 0;
	int e;

	execve(path, argv, envp);
	e = errno;
	if (e != ENOEXEC)
		return -e;
	sh[0] = (char *)"/bin/sh";
	sh[1] = (char *)path;
	while (argv[0] && argv[n + 1] && n < PROGPATH_SH_ARGS) {
		sh[n + 2] = argv[n + 1];
		n++;
	}
	if (argv[0] && argv[n + 1])
		return -ENOEXEC;
	sh[n + 2] = NULL;
	execve(sh[0], sh, envp);
	return -ENOEXEC;
}

int progpath_running(pid_t pid, char *out, size_t size)
{
	static const char deleted[] = " (deleted)";
	char link[64];
	struct stat run, now;
	ssize_t n;
	size_t len;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	/* the file itself, deleted or not: the link leads to it */
	if (stat(link, &run))
		return errno == EACCES || errno == EPERM ? -EACCES : -ESRCH;
	n = readlink(link, out, size);
	if (n < 0)
		return errno == EACCES || errno == EPERM ? -EACCES : -ESRCH;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	out[n] = '\0';
	if (!stat(out, &now) && now.st_dev == run.st_dev && now.st_ino == run.st_ino)
		return 0;
	len = (size_t)n;
	if (len > sizeof(deleted) - 1 && !strcmp(out + len - (sizeof(deleted) - 1), deleted)) {
		out[len - (sizeof(deleted) - 1)] = '\0';
		return -ENOENT;
	}
	return -ESTALE;
}
