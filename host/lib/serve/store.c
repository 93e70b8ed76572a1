/* The place of serve's index and heap cache (see serve/store.h). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sessiondir.h"
#include "host/lib/serve/store.h"

/* Opens (making it, mode 0700) the directory `name` in `at`: one of ours
 * that no one else may enter, never a link.  A descriptor or -errno. */
static int private_sub(int at, const char *name)
{
	int fd;

	if (mkdirat(at, name, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!sessiondir_check_fd(fd, geteuid(), false)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The user's cache directory for serve, and its path. */
static int cache_open(char *path, size_t size)
{
	const char *base = getenv("XDG_CACHE_HOME");
	char home[PATH_MAX];
	int bfd, lfd, sfd;

	if (base && *base == '/') {
		if ((size_t)snprintf(home, sizeof(home), "%s", base) >= sizeof(home))
			return -ENAMETOOLONG;
		if (mkdir(home, 0700) && errno != EEXIST)
			return -errno;
	} else {
		const char *h = getenv("HOME");
		struct passwd *pw;

		if (!h || *h != '/') {
			pw = getpwuid(geteuid());
			h = pw ? pw->pw_dir : NULL;
		}
		if (!h || *h != '/')
			return -ENOENT;
		if ((size_t)snprintf(home, sizeof(home), "%s/.cache", h) >= sizeof(home))
			return -ENAMETOOLONG;
		if (mkdir(home, 0700) && errno != EEXIST)
			return -errno;
	}
	bfd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return -errno;
	lfd = private_sub(bfd, "layerprof");
	close(bfd);
	if (lfd < 0)
		return lfd;
	sfd = private_sub(lfd, "serve");
	close(lfd);
	if (sfd >= 0 && (size_t)snprintf(path, size, "%s/layerprof/serve", home) >= size) {
		close(sfd);
		return -ENAMETOOLONG;
	}
	return sfd;
}

int servestore_open(struct servestore *st, const char *dir, const char *file)
{
	char where[PATH_MAX];
	struct stat s;
	int tfd, fd;

	memset(st, 0, sizeof(*st));
	st->dirfd = -1;
	tfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return -errno;
	if (fstat(tfd, &s)) {
		fd = -errno;
		close(tfd);
		return fd;
	}
	if (s.st_uid == geteuid() && faccessat(tfd, ".", W_OK, AT_EACCESS) == 0) {
		st->dirfd = tfd;
		st->in_trace = true;
		snprintf(st->name, sizeof(st->name), "%s", file);
		snprintf(st->path, sizeof(st->path), "%s/%s", dir, file);
		return 0;
	}
	close(tfd);
	/* another user's trace, or one we may not write to: ours elsewhere */
	fd = cache_open(where, sizeof(where));
	if (fd < 0)
		return fd;
	st->dirfd = fd;
	snprintf(st->name, sizeof(st->name), "%llx-%llu.%s", (unsigned long long)s.st_dev, (unsigned long long)s.st_ino,
	         file);
	snprintf(st->path, sizeof(st->path), "%s/%s", where, st->name);
	return 0;
}

void servestore_release(struct servestore *st)
{
	if (st->dirfd >= 0)
		close(st->dirfd);
	st->dirfd = -1;
}

int servestore_read(const struct servestore *st)
{
	int fd = openat(st->dirfd, st->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat s;

	if (fd < 0)
		return -errno;
	/* one of ours: a file another user put in a shared trace directory is
	 * not our index */
	if (fstat(fd, &s) || !S_ISREG(s.st_mode) || s.st_uid != geteuid()) {
		close(fd);
		return -EBADMSG;
	}
	return fd;
}
