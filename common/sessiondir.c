/* Private session directories and their cleanup (see sessiondir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/sessiondir.h"
#include "layerprof/format.h"

#define SWEEP_MAX 64u          /* stale sessions looked at by one sweep */
#define MAPS_LINE_MAX 4352u    /* a /proc/<pid>/maps line kept whole (a path of PATH_MAX) */
#define FALLBACK_SUFFIX_LEN 6u /* mkdtemp's XXXXXX */

static int open_dir_at(int at, const char *path)
{
	return openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

bool sessiondir_check_fd(int fd, uid_t uid, bool shared)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISDIR(st.st_mode) || st.st_uid != uid)
		return false;
	if (!shared)
		return !(st.st_mode & (S_IRWXG | S_IRWXO));
	return !(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX);
}

/* Opens path as one of our directories.  A directory of ours whose mode
 * lets others in (it was just made, and the umask may have taken bits
 * away, or it was changed) gets `mode`.  Returns the descriptor, -EEXIST
 * when the name is taken (sd says by what), or another -errno. */
static int open_own(const char *path, unsigned mode, bool made, struct sessiondir *sd)
{
	bool shared = mode & S_IWOTH;
	uid_t uid = geteuid();
	struct stat st;
	int fd = open_dir_at(AT_FDCWD, path), e;

	if (fd < 0) {
		e = errno;
		if (e == ELOOP || e == ENOTDIR) {
			sd->taken_not_dir = true;
			return -EEXIST;
		}
		return -e;
	}
	if (fstat(fd, &st)) {
		e = errno;
		close(fd);
		return -e;
	}
	if (st.st_uid != uid) {
		sd->taken_by = st.st_uid;
		close(fd);
		return -EEXIST;
	}
	if ((made || !sessiondir_check_fd(fd, uid, shared)) && (st.st_mode & 07777) != mode && fchmod(fd, mode)) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* An earlier fallback of ours beside path ("<path>.XXXXXX"), opened, or -1. */
static int find_fallback(const char *path, bool shared, char *found, size_t size)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t blen = strlen(base);
	char parent[SESSIONDIR_PATH_MAX];
	struct dirent *e;
	int fd = -1;
	DIR *d;

	if (slash == path)
		snprintf(parent, sizeof(parent), "/");
	else if (slash)
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	else
		snprintf(parent, sizeof(parent), ".");
	d = opendir(parent);
	if (!d)
		return -1;
	while (fd < 0 && (e = readdir(d))) {
		if (strncmp(e->d_name, base, blen) || e->d_name[blen] != '.' ||
		    strlen(e->d_name + blen + 1) != FALLBACK_SUFFIX_LEN)
			continue;
		fd = open_dir_at(dirfd(d), e->d_name);
		if (fd >= 0 && !sessiondir_check_fd(fd, geteuid(), shared)) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0)
			snprintf(found, size, "%s%s", path, e->d_name + blen);
	}
	closedir(d);
	return fd;
}

int sessiondir_open(struct sessiondir *sd, const char *path, unsigned mode)
{
	bool shared = mode & S_IWOTH, made;
	char tmpl[SESSIONDIR_PATH_MAX];
	int fd;

	memset(sd, 0, sizeof(*sd));
	sd->fd = -1;
	if (strlen(path) + 1 + FALLBACK_SUFFIX_LEN >= SESSIONDIR_PATH_MAX)
		return -ENAMETOOLONG;
	made = mkdir(path, mode) == 0;
	if (!made && errno != EEXIST)
		return -errno;
	fd = open_own(path, mode, made, sd);
	if (fd >= 0) {
		sd->fd = fd;
		snprintf(sd->path, sizeof(sd->path), "%s", path);
		return 0;
	}
	if (fd != -EEXIST)
		return fd;
	/* taken by someone else: never used, and never a reason to stop */
	sd->fallback = true;
	snprintf(sd->wanted, sizeof(sd->wanted), "%s", path);
	fd = find_fallback(path, shared, sd->path, sizeof(sd->path));
	if (fd >= 0) {
		sd->fd = fd;
		return 0;
	}
	snprintf(tmpl, sizeof(tmpl), "%s.XXXXXX", path);
	if (!mkdtemp(tmpl))
		return -errno;
	fd = open_dir_at(AT_FDCWD, tmpl);
	if (fd < 0)
		return -errno;
	if (!sessiondir_check_fd(fd, geteuid(), false) || fchmod(fd, mode)) {
		close(fd);
		return -EPERM;
	}
	sd->fd = fd;
	snprintf(sd->path, sizeof(sd->path), "%s", tmpl);
	return 0;
}

int sessiondir_open_private(struct sessiondir *sd)
{
	char path[SESSIONDIR_PATH_MAX];

	snprintf(path, sizeof(path), "%s/" SESSIONDIR_PREFIX "%u", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm",
	         (unsigned)geteuid());
	return sessiondir_open(sd, path, SESSIONDIR_PRIVATE);
}

const char *sessiondir_fallback_why(const struct sessiondir *sd, char *buf, size_t size)
{
	char owner[64];

	if (sd->taken_not_dir)
		snprintf(owner, sizeof(owner), "is not a directory");
	else
		snprintf(owner, sizeof(owner), "belongs to uid %u", (unsigned)sd->taken_by);
	snprintf(buf, size, "'%s' %s: using '%s' instead", sd->wanted, owner, sd->path);
	return buf;
}

void sessiondir_release(struct sessiondir *sd)
{
	if (sd->fd >= 0)
		close(sd->fd);
	sd->fd = -1;
}

int sessiondir_random(void *buf, size_t len)
{
	unsigned char *p = buf;
	int fd;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		p += n;
		len -= (size_t)n;
	}
	if (!len)
		return 0;
	/* kernels before 3.17 */
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	close(fd);
	return 0;
}

int sessiondir_name(const struct sessiondir *sd, const char *kind, char *buf, size_t size)
{
	unsigned char rnd[SESSIONDIR_RANDOM_BYTES];
	char hex[2 * SESSIONDIR_RANDOM_BYTES + 1];
	size_t i;
	int r, n;

	if (strlen(kind) >= SESSIONDIR_KIND_MAX)
		return -EINVAL;
	r = sessiondir_random(rnd, sizeof(rnd));
	if (r)
		return r;
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	n = snprintf(buf, size, "%s/%s-%d-%s", sd->path, kind, (int)getpid(), hex);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

bool sessiondir_parse(const char *name, char *kind, size_t kind_size, pid_t *pid)
{
	const char *p = name;
	size_t k = 0, i;
	long v = 0;

	while (p[k] >= 'a' && p[k] <= 'z')
		k++;
	if (!k || k >= SESSIONDIR_KIND_MAX || k >= kind_size || p[k] != '-')
		return false;
	p += k + 1;
	if (*p < '1' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9' && v <= 0x3fffffff)
		v = v * 10 + (*p++ - '0');
	if (*p++ != '-' || v > 0x3fffffff)
		return false;
	for (i = 0; i < 2 * SESSIONDIR_RANDOM_BYTES; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	if (p[i])
		return false;
	memcpy(kind, name, k);
	kind[k] = '\0';
	*pid = (pid_t)v;
	return true;
}

/* ------------------------------------------------------------ who still maps a session */

struct candidate {
	char name[SESSIONDIR_NAME_MAX];
	char prefix[SESSIONDIR_PATH_MAX + SESSIONDIR_NAME_MAX + 2]; /* "<base>/<name>/" */
	size_t prefix_len;
	dev_t dev;
	ino_t ino; /* its control file; 0: none */
	bool used;
};

static void candidate_init(struct candidate *c, const struct sessiondir *sd, const char *name)
{
	struct stat st;
	char control[SESSIONDIR_NAME_MAX + sizeof(LP_CONTROL_NAME) + 1];

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->prefix_len = (size_t)snprintf(c->prefix, sizeof(c->prefix), "%s/%s/", sd->path, name);
	snprintf(control, sizeof(control), "%s/" LP_CONTROL_NAME, name);
	if (fstatat(sd->fd, control, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
	}
}

/* One line of /proc/<pid>/maps against the candidates: by the file's
 * device and inode, or by its path (rings the dead drain unlinked). */
static void maps_line(const char *line, struct candidate *c, size_t n)
{
	unsigned maj, min;
	unsigned long long ino;
	const char *path;
	size_t i;
	int off = -1;

	if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &maj, &min, &ino, &off) < 3 || off < 0 || !ino)
		return;
	path = line + off;
	for (i = 0; i < n; i++) {
		if (c[i].used)
			continue;
		if ((c[i].ino && (ino_t)ino == c[i].ino && makedev(maj, min) == c[i].dev) ||
		    !strncmp(path, c[i].prefix, c[i].prefix_len))
			c[i].used = true;
	}
}

/* Marks the candidates some process maps a file of. */
static int maps_scan(struct candidate *c, size_t n)
{
	char path[64], line[MAPS_LINE_MAX];
	struct dirent *e;
	DIR *proc = opendir("/proc");
	FILE *f;

	if (!proc)
		return -errno;
	while ((e = readdir(proc))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || strlen(e->d_name) > 12)
			continue;
		snprintf(path, sizeof(path), "/proc/%.12s/maps", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* gone, or another user's: it cannot map our private files */
		while (fgets(line, sizeof(line), f)) {
			size_t len = strlen(line);

			if (len && line[len - 1] == '\n')
				line[len - 1] = '\0';
			else if (len == sizeof(line) - 1) {
				/* a longer path: the start is enough for the prefix; skip the rest */
				int ch;

				while ((ch = fgetc(f)) != EOF && ch != '\n')
					;
			}
			maps_line(line, c, n);
		}
		fclose(f);
	}
	closedir(proc);
	return 0;
}

int sessiondir_in_use(const struct sessiondir *sd, const char *name)
{
	struct candidate c;
	int r;

	if (strlen(name) >= SESSIONDIR_NAME_MAX)
		return -ENAMETOOLONG;
	candidate_init(&c, sd, name);
	r = maps_scan(&c, 1);
	return r ? r : c.used;
}

/* ------------------------------------------------------------ the sweep */

/* Empties and removes session `name` of base fd `at`, through descriptors,
 * when it is a directory of ours. */
static int session_remove(int at, const char *name)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd = open_dir_at(at, name), r = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	return unlinkat(at, name, AT_REMOVEDIR) ? -errno : 0;
}

/* Reads at most size - 1 bytes of the file `name` in directory `at`
 * (never through a link) into buf, NUL-terminated.  Returns the length or
 * -errno. */
static ssize_t read_small(int at, const char *name, char *buf, size_t size)
{
	int fd = openat(at, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* Whether the trace directory that session `name` names still waits for
 * it: its note has the line "session=<this session's path>". */
static bool awaited_by_trace(const struct sessiondir *sd, const char *name)
{
	char trace[4096], note[8192], line[SESSIONDIR_PATH_MAX + SESSIONDIR_NAME_MAX + 16], *nl;
	int sfd, tfd;
	ssize_t n;

	sfd = open_dir_at(sd->fd, name);
	if (sfd < 0)
		return false;
	n = read_small(sfd, SESSIONDIR_TRACE_FILE, trace, sizeof(trace));
	close(sfd);
	if (n <= 0 || trace[0] != '/')
		return false;
	nl = strchr(trace, '\n');
	if (nl)
		*nl = '\0';
	tfd = open(trace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return false;
	n = read_small(tfd, SESSIONDIR_TRACE_NOTE, note, sizeof(note));
	close(tfd);
	if (n <= 0 || (size_t)snprintf(line, sizeof(line), "\nsession=%s/%s\n", sd->path, name) >= sizeof(line))
		return false;
	return strstr(note, line) != NULL;
}

int sessiondir_note_trace(const char *session, const char *trace_path)
{
	int dfd, fd, r = 0;
	size_t len = strlen(trace_path);

	if (trace_path[0] != '/' || strchr(trace_path, '\n') || len >= 4096)
		return -EINVAL;
	dfd = open(session, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = openat(dfd, SESSIONDIR_TRACE_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		r = -errno;
	else if (write(fd, trace_path, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
		r = errno ? -errno : -EIO;
	if (fd >= 0)
		close(fd);
	close(dfd);
	return r;
}

int sessiondir_sweep(const struct sessiondir *sd)
{
	struct candidate *c;
	char kind[SESSIONDIR_KIND_MAX];
	size_t n = 0, i;
	struct dirent *e;
	struct stat st;
	int fd, r, removed = 0;
	pid_t pid;
	DIR *d;

	fd = open_dir_at(sd->fd, ".");
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	c = calloc(SWEEP_MAX, sizeof(*c));
	if (!c) {
		closedir(d);
		return -ENOMEM;
	}
	while (n < SWEEP_MAX && (e = readdir(d))) {
		if (!sessiondir_parse(e->d_name, kind, sizeof(kind), &pid) || pid == getpid())
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue; /* its recorder or agent runs (or the pid is someone else's now) */
		if (fstatat(sd->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		if (!strcmp(kind, "rec") && awaited_by_trace(sd, e->d_name))
			continue; /* `layerprof recover` can still finish its trace */
		candidate_init(&c[n++], sd, e->d_name);
	}
	closedir(d);
	r = n ? maps_scan(c, n) : 0;
	for (i = 0; i < n && !r; i++)
		if (!c[i].used && session_remove(sd->fd, c[i].name) == 0)
			removed++;
	free(c);
	return r ? r : removed;
}
