/* The agent's attach directory: where programs of any user that can be
 * attached to register their own session, and how the agent finds a
 * program's session there without trusting anything another user planted
 * (docs/format.md, "Attachable programs"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "layerprof/format.h"

#define ATTACH_SUFFIX_LEN 6u /* "<pid>.XXXXXX": the runtime's mkdtemp when <pid> was taken */

void attachdir_open(struct agent *a)
{
	char why[3 * SESSIONDIR_PATH_MAX];
	int r;

	/* sticky like /tmp, and ours: another user's directory of that name
	 * is never used (the runtime would not register in it either) */
	r = sessiondir_open(&a->attach, a->attach_dir, SESSIONDIR_SHARED);
	if (r) {
		fprintf(stderr,
		        "layerprofd: warning: cannot use attach directory '%s': %s (no program can be attached)\n",
		        a->attach_dir, strerror(-r));
		return;
	}
	if (a->attach.fallback)
		fprintf(stderr,
		        "layerprofd: warning: attach directory %s; programs register there only when started with "
		        "%s=%s\n",
		        sessiondir_fallback_why(&a->attach, why, sizeof(why)), LP_ENV_ATTACH_DIR, a->attach.path);
	r = attachdir_sweep(a);
	if (r > 0)
		agent_log("removed %d sessions of ended programs from %s", r, a->attach.path);
}

const char *attachdir_path(const struct agent *a)
{
	return a->attach.fd >= 0 ? a->attach.path : a->attach_dir;
}

/* The effective uid of process pid, from /proc/<pid>/status. */
static int process_euid(pid_t pid, uid_t *uid)
{
	char path[64], line[256];
	unsigned real, eff;
	int r = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u", &real, &eff) == 2) {
			*uid = (uid_t)eff;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

/* Whether the directory open as fd may be the session of a process
 * running as puid: a directory of that user's (or of root's, which made
 * it before the program changed its user) that no one else may enter. */
static bool entry_trusted(int fd, uid_t puid, uid_t *owner)
{
	struct stat st;

	if (!sessiondir_check_fd(fd, puid, false) && !sessiondir_check_fd(fd, 0, false))
		return false;
	if (fstat(fd, &st))
		return false;
	*owner = st.st_uid;
	return true;
}

static int open_entry(const struct agent *a, const char *name)
{
	return openat(a->attach.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int attachdir_find(struct agent *a, pid_t pid, char *name, size_t size, uid_t *owner, uid_t *puid)
{
	struct timespec best_t = { 0, 0 };
	char want[24];
	struct dirent *e;
	struct stat st;
	size_t wlen;
	int fd, best = -1, r = -ENOENT, dfd, rootfd = -1;
	uid_t o;
	DIR *d;

	if (a->attach.fd < 0)
		return -ENOENT;
	r = process_euid(pid, puid);
	if (r)
		return r == -ENOENT ? -ESRCH : r;
	r = -ENOENT;
	wlen = (size_t)snprintf(want, sizeof(want), "%d", (int)pid);
	fd = open_entry(a, want);
	if (fd >= 0) {
		if (entry_trusted(fd, *puid, &o) && o == *puid) {
			*owner = o;
			snprintf(name, size, "%s", want);
			return fd;
		}
		if (entry_trusted(fd, *puid, &o))
			rootfd = fd; /* root's: the program's, or its image's before it became another user */
		else
			close(fd);
		r = -EPERM;
	} else if (errno != ENOENT) {
		r = -EPERM; /* a link or a file: planted */
	}
	/* <pid> was someone else's: the program registered under
	 * <pid>.XXXXXX; after an exec there may be several, the newest is
	 * the running image's */
	dfd = openat(a->attach.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d && dfd >= 0)
		close(dfd);
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, want, wlen) || e->d_name[wlen] != '.' ||
		    strlen(e->d_name + wlen + 1) != ATTACH_SUFFIX_LEN)
			continue;
		fd = open_entry(a, e->d_name);
		if (fd < 0)
			continue;
		if (!entry_trusted(fd, *puid, &o) || fstat(fd, &st)) {
			r = -EPERM;
			close(fd);
			continue;
		}
		if (best >= 0 && (st.st_ctim.tv_sec < best_t.tv_sec ||
		                  (st.st_ctim.tv_sec == best_t.tv_sec && st.st_ctim.tv_nsec <= best_t.tv_nsec))) {
			close(fd);
			continue;
		}
		if (best >= 0)
			close(best);
		best = fd;
		best_t = st.st_ctim;
		*owner = o;
		snprintf(name, size, "%s", e->d_name);
	}
	if (d)
		closedir(d);
	if (best >= 0) {
		if (rootfd >= 0)
			close(rootfd);
		return best;
	}
	if (rootfd >= 0) {
		*owner = 0;
		snprintf(name, size, "%s", want);
		return rootfd;
	}
	return r;
}

void attachdir_remove(struct agent *a, int dirfd, const char *name)
{
	struct stat held, now;

	if (a->attach.fd < 0 || dirfd < 0)
		return;
	unlinkat(dirfd, LP_CONTROL_NAME, 0);
	unlinkat(dirfd, LP_FILTER_NAME, 0);
	/* the name, when it still is the directory we emptied (only an empty one goes) */
	if (fstat(dirfd, &held) == 0 && fstatat(a->attach.fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    held.st_dev == now.st_dev && held.st_ino == now.st_ino)
		unlinkat(a->attach.fd, name, AT_REMOVEDIR);
}

/* The pid an entry's name begins with ("<pid>" or "<pid>.XXXXXX"), or 0. */
static pid_t entry_pid(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);

	if (name[0] < '1' || name[0] > '9' || pid <= 0 || pid > 0x7fffffffL ||
	    (*end && (*end != '.' || strlen(end + 1) != ATTACH_SUFFIX_LEN)))
		return 0;
	return (pid_t)pid;
}

int attachdir_sweep(struct agent *a)
{
	struct dirent *e, *f;
	struct stat st;
	int dfd, fd, removed = 0;
	DIR *d, *sub;
	pid_t pid;

	if (a->attach.fd < 0)
		return 0;
	dfd = openat(a->attach.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((e = readdir(d))) {
		pid = entry_pid(e->d_name);
		if (!pid || kill(pid, 0) == 0 || errno != ESRCH)
			continue; /* not an entry, or its process runs (or cannot be told) */
		/* a process of another pid namespace has another pid here: its
		 * session is in use while it maps the control block or a ring */
		if (sessiondir_in_use(&a->attach, e->d_name) != 0)
			continue;
		fd = open_entry(a, e->d_name);
		if (fd < 0 || fstat(fd, &st) || !S_ISDIR(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		sub = fdopendir(fd);
		if (!sub) {
			close(fd);
			continue;
		}
		/* only the names within, never through a link */
		while ((f = readdir(sub)))
			if (strcmp(f->d_name, ".") && strcmp(f->d_name, ".."))
				unlinkat(dirfd(sub), f->d_name, 0);
		closedir(sub);
		if (!unlinkat(a->attach.fd, e->d_name, AT_REMOVEDIR))
			removed++;
	}
	closedir(d);
	return removed;
}
