/* Making a trace directory and keeping the previous one (see trace/dir.h).
 * Everything below works relative to a descriptor of the parent
 * directory, so that a name checked is the name changed, and deletes only
 * with unlinkat, which removes a link itself, never what it points to. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/lib/trace/dir.h"
#include "layerprof/format.h"

/* A directory the caller may replace holds at most this many files (the
 * names above, and serve's temporaries of a few killed runs). */
#define TRACEDIR_FILES_MAX 64

bool tracedir_own_name(const char *name)
{
	static const char *const own[] = { LP_TRACE_DATA, TRACEDIR_RECORDING, TRACEDIR_SNAPSHOT, TRACEDIR_SERVE_INDEX,
		                           TRACEDIR_SERVE_HEAP };
	size_t i, n;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		if (!strcmp(name, own[i]))
			return true;
		/* serve writes "<file>.tmp.<random letters>" and renames it over
		 * <file>; a killed serve leaves it behind */
		n = strlen(own[i]);
		if (i >= 3 && !strncmp(name, own[i], n) && !strncmp(name + n, ".tmp.", 5) && name[n + 5] &&
		    strspn(name + n + 5, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
		        strlen(name + n + 5))
			return true;
	}
	return false;
}

struct listing {
	char *names[TRACEDIR_FILES_MAX];
	size_t n;
};

static void listing_release(struct listing *l)
{
	while (l->n)
		free(l->names[--l->n]);
}

/* Lists the directory `name` (in parent pfd) when it holds only regular
 * files with layerprof's names.  Returns 0, or -EEXIST with the reason in
 * err (shown as `what`), or -errno. */
static int listing_take(struct listing *l, int pfd, const char *name, const char *what, char *err, size_t errlen)
{
	struct dirent *e;
	struct stat st;
	DIR *dir;
	int fd, r = 0;

	l->n = 0;
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot read '%s': %s", what, strerror(-r));
		return r;
	}
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!tracedir_own_name(e->d_name) || fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode)) {
			snprintf(err, errlen,
			         "'%s' is not a layerprof trace (it holds '%s', which layerprof did not write): "
			         "nothing was changed; choose another directory",
			         what, e->d_name);
			r = -EEXIST;
			break;
		}
		if (l->n == TRACEDIR_FILES_MAX || !(l->names[l->n] = strdup(e->d_name))) {
			snprintf(err, errlen, "'%s' holds too many files to be replaced", what);
			r = -EEXIST;
			break;
		}
		l->n++;
	}
	closedir(dir);
	if (r)
		listing_release(l);
	return r;
}

/* What is at `name` in pfd: 0 (nothing), 1 (a directory of layerprof's
 * files, listed in l), or -errno with err set. */
static int inspect(int pfd, const char *name, const char *what, struct listing *l, char *err, size_t errlen)
{
	struct stat st;
	int r;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot look at '%s': %s", what, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "'%s' is a symbolic link: it is not followed; choose another directory", what);
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "'%s' exists and is not a layerprof trace; choose another directory", what);
		return -EEXIST;
	}
	/* never write into, or delete, what another user may change */
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "'%s' belongs to another user: nothing was changed; choose another directory",
		         what);
		return -EPERM;
	}
	r = listing_take(l, pfd, name, what, err, errlen);
	return r ? r : 1;
}

/* Deletes the listed files of directory `name`, then the directory. */
static int remove_listed(int pfd, const char *name, const struct listing *l, const char *what, char *err, size_t errlen)
{
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	size_t i;

	if (fd < 0) {
		snprintf(err, errlen, "cannot replace '%s': %s", what, strerror(errno));
		return -errno;
	}
	for (i = 0; i < l->n; i++)
		if (unlinkat(fd, l->names[i], 0) && errno != ENOENT) {
			int e = errno;

			close(fd);
			snprintf(err, errlen, "cannot replace '%s': %s: %s", what, l->names[i], strerror(e));
			return -e;
		}
	close(fd);
	if (unlinkat(pfd, name, AT_REMOVEDIR)) {
		snprintf(err, errlen, "cannot replace '%s': %s", what, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Splits path into its parent directory (opened) and last name. */
static int open_parent(const char *path, char *base, size_t size, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	size_t len = strlen(path), start;
	int fd;

	while (len > 1 && path[len - 1] == '/')
		len--;
	start = len;
	while (start && path[start - 1] != '/')
		start--;
	if (len >= sizeof(parent) || len - start >= size) {
		snprintf(err, errlen, "'%s': name too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(base, path + start, len - start);
	base[len - start] = '\0';
	if (!base[0] || !strcmp(base, ".") || !strcmp(base, "..")) {
		snprintf(err, errlen, "'%s' cannot be a new trace directory: name one inside it", path);
		return -EINVAL;
	}
	if (!start) {
		strcpy(parent, ".");
	} else {
		memcpy(parent, path, start);
		parent[start] = '\0';
	}
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create trace '%s': %s", path, strerror(errno));
		return -errno;
	}
	return fd;
}

int tracedir_create(const char *dir, char *err, size_t errlen)
{
	char base[NAME_MAX + 1], old[NAME_MAX + 1], oldwhat[PATH_MAX + 8];
	struct listing cur = { .n = 0 }, prev = { .n = 0 };
	struct stat st;
	int pfd, fd = -1, r, have_cur, have_prev = 0;

	pfd = open_parent(dir, base, sizeof(base), err, errlen);
	if (pfd < 0)
		return pfd;
	snprintf(oldwhat, sizeof(oldwhat), "%s.old", dir);
	have_cur = r = inspect(pfd, base, dir, &cur, err, errlen);
	if (r < 0)
		goto out;
	/* every check comes before the first change */
	if (have_cur && cur.n) {
		if (strlen(base) + 4 >= sizeof(old)) {
			snprintf(err, errlen, "'%s': name too long", oldwhat);
			r = -ENAMETOOLONG;
			goto out;
		}
		memcpy(old, base, strlen(base));
		memcpy(old + strlen(base), ".old", 5);
		have_prev = r = inspect(pfd, old, oldwhat, &prev, err, errlen);
		if (r < 0)
			goto out;
		if (have_prev && (r = remove_listed(pfd, old, &prev, oldwhat, err, errlen)))
			goto out;
		if (renameat(pfd, base, pfd, old)) {
			r = -errno;
			snprintf(err, errlen, "cannot move '%s' to '%s': %s", dir, oldwhat, strerror(-r));
			goto out;
		}
	} else if (have_cur && unlinkat(pfd, base, AT_REMOVEDIR)) {
		r = -errno;
		snprintf(err, errlen, "cannot replace the empty directory '%s': %s", dir, strerror(-r));
		goto out;
	}
	if (mkdirat(pfd, base, 0755)) {
		r = -errno;
		snprintf(err, errlen, "cannot create trace '%s': %s", dir, strerror(-r));
		goto out;
	}
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		r = -errno;
		snprintf(err, errlen, "cannot open trace '%s': %s", dir, strerror(-r));
		goto out;
	}
	/* made by someone else between our mkdir and open */
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "trace '%s' was replaced by another user's directory", dir);
		r = -EPERM;
		goto out;
	}
	r = fd;
	fd = -1;
out:
	listing_release(&cur);
	listing_release(&prev);
	if (fd >= 0)
		close(fd);
	close(pfd);
	return r;
}
