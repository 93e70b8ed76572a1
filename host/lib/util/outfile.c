/* Output files and exclusive temporaries (see outfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sessiondir.h"
#include "host/lib/util/outfile.h"

/* The directory of path into dir (PATH_MAX): "." or "/" or what is before
 * the last slash.  Returns 0 or -ENAMETOOLONG. */
static int dir_of(const char *path, char *dir)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, PATH_MAX, ".");
	else if (slash == path)
		snprintf(dir, PATH_MAX, "/");
	else if ((size_t)(slash - path) < PATH_MAX)
		snprintf(dir, PATH_MAX, "%.*s", (int)(slash - path), path);
	else
		return -ENAMETOOLONG;
	return 0;
}

bool outfile_dir_shared(const char *path)
{
	char dir[PATH_MAX];
	struct stat st;

	if (dir_of(path, dir) || stat(dir, &st))
		return true;
	return (st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != geteuid() && st.st_uid != 0);
}

/* open(2) for writing without blocking on a FIFO that has no reader yet
 * (one planted in a shared directory would hang us before any check);
 * a FIFO of ours is then opened again, waiting for its reader. */
static int open_write(const char *path, int extra)
{
	int flags = O_WRONLY | O_CREAT | O_NOCTTY | O_CLOEXEC | extra;
	int fd = open(path, flags | O_NONBLOCK, 0644);

	if (fd < 0 && errno == ENXIO)
		fd = open(path, flags, 0644);
	else if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

FILE *outfile_open(const char *path)
{
	bool shared = outfile_dir_shared(path);
	struct stat st;
	FILE *f;
	int fd, e;

	fd = open_write(path, O_NOFOLLOW);
	if (fd < 0 && errno == ELOOP && !shared)
		fd = open_write(path, 0); /* a link its directory's owner made */
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		e = errno;
		goto fail;
	}
	e = EPERM;
	if (shared && S_ISREG(st.st_mode) && (st.st_uid != geteuid() || st.st_nlink != 1))
		goto fail;
	if (S_ISREG(st.st_mode) && ftruncate(fd, 0)) {
		e = errno;
		goto fail;
	}
	f = fdopen(fd, "w");
	if (f)
		return f;
	e = errno;
fail:
	close(fd);
	errno = e;
	return NULL;
}

const char *outfile_strerror(int err)
{
	if (err == ELOOP)
		return "a symbolic link in a directory other users may write to (not followed)";
	if (err == EPERM)
		return "a file of another user, or with several names, in a directory other users may write to";
	return strerror(err);
}

int outfile_tmp_create(int dirfd, const char *name, char *tmp, size_t size)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char rnd[OUTFILE_TMP_RANDOM];
	char suffix[OUTFILE_TMP_RANDOM + 1];
	unsigned tries, i;
	int fd, r, n;

	for (tries = 0; tries < OUTFILE_TMP_TRIES; tries++) {
		r = sessiondir_random(rnd, sizeof(rnd));
		if (r)
			return r;
		for (i = 0; i < OUTFILE_TMP_RANDOM; i++)
			suffix[i] = letters[rnd[i] % (sizeof(letters) - 1)];
		suffix[OUTFILE_TMP_RANDOM] = '\0';
		n = snprintf(tmp, size, "%s.tmp.%s", name, suffix);
		if (n < 0 || (size_t)n >= size)
			return -ENAMETOOLONG;
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int outfile_tmp_commit(int dirfd, const char *tmp, const char *name)
{
	int r = 0;

	if (renameat(dirfd, tmp, dirfd, name)) {
		r = -errno;
		unlinkat(dirfd, tmp, 0);
	}
	return r;
}

int outfile_replace(const char *path, int (*write)(FILE *f, void *ctx), void *ctx)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char dir[PATH_MAX], tmp[PATH_MAX];
	int dirfd, fd, r;
	FILE *f;

	if (!*name)
		return -EISDIR;
	if (dir_of(path, dir))
		return -ENAMETOOLONG;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	fd = outfile_tmp_create(dirfd, name, tmp, sizeof(tmp));
	if (fd < 0) {
		close(dirfd);
		return fd;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		close(dirfd);
		return r;
	}
	r = write(f, ctx);
	errno = 0;
	if (!r && (fflush(f) || ferror(f) || fsync(fileno(f))))
		r = -(errno ? errno : EIO);
	if (fclose(f) && !r)
		r = -errno;
	if (r)
		unlinkat(dirfd, tmp, 0);
	else
		r = outfile_tmp_commit(dirfd, tmp, name);
	close(dirfd);
	return r;
}
