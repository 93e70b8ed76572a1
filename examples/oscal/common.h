/* What the benchmark programs of layerprof estimate share: a scratch file
 * made exclusively in a directory, and dying with a message. */
#ifndef EX_COMMON_H
#define EX_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void ex_die(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

/* A new file "DIR/NAME.PID" (DIR: argv[1], else $TMPDIR, else /tmp),
 * opened read-write, never an existing one or a link; its path in path. */
static inline int ex_scratch(const char *prog, int argc, char **argv, const char *name, char *path, size_t size)
{
	const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(path, size, "%s/%s.%ld", dir, name, (long)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		ex_die(prog, path);
	return fd;
}

#endif
