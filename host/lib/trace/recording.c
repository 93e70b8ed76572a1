/* The recorder's note in its trace directory (see recording.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/lib/trace/dir.h"
#include "host/lib/trace/recording.h"

#define RECORDING_TEXT_MAX (PATH_MAX + 256)

/* The start time of process pid (field 22 of /proc/<pid>/stat, after the
 * command name, which may hold anything but ends at the last ')') and its
 * state (field 3: 'Z' for a zombie). */
static int proc_stat(pid_t pid, unsigned long long *out, char *state)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EIO;
	*state = p[2];
	/* fields 3..21 follow the name */
	for (i = 3; i <= 21; i++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	*out = strtoull(p + 1, NULL, 10);
	return 0;
}

int recording_self(struct recording *rc, const char *session)
{
	char cwd[PATH_MAX], state;
	int r;

	memset(rc, 0, sizeof(*rc));
	rc->pid = getpid();
	r = proc_stat(rc->pid, &rc->start, &state);
	if (r)
		return r;
	if (session[0] == '/') {
		if (strlen(session) >= sizeof(rc->session))
			return -ENAMETOOLONG;
		strcpy(rc->session, session);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	if ((size_t)snprintf(rc->session, sizeof(rc->session), "%s/%s", cwd, session) >= sizeof(rc->session))
		return -ENAMETOOLONG;
	return 0;
}

int recording_write(int dirfd, struct recording *rc)
{
	char text[RECORDING_TEXT_MAX];
	int fd, n, r;

	if (strchr(rc->session, '\n'))
		return -EINVAL;
	n = snprintf(text, sizeof(text), "layerprof_recording=1\npid=%d\nstart=%llu\nsession=%s\n", (int)rc->pid,
	             rc->start, rc->session);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -ENAMETOOLONG;
	fd = openat(dirfd, TRACEDIR_RECORDING, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)n) != n) {
		r = errno ? -errno : -EIO;
		goto fail;
	}
	rc->text_len = (size_t)n;
	/* zeros after the text: a reader stops at the first NUL */
	r = posix_fallocate(fd, n, RECORDING_RESERVE);
	if (r) {
		r = -r;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	unlinkat(dirfd, TRACEDIR_RECORDING, 0);
	return r;
}

int recording_release_reserve(int fd, const struct recording *rc)
{
	return ftruncate(fd, (off_t)rc->text_len) ? -errno : 0;
}

int recording_read(int dirfd, struct recording *rc, char *err, size_t errlen)
{
	char text[RECORDING_TEXT_MAX], *line, *save = NULL;
	bool marked = false;
	struct stat st;
	ssize_t n;
	int fd = openat(dirfd, TRACEDIR_RECORDING, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	memset(rc, 0, sizeof(*rc));
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		snprintf(err, errlen, "cannot read the recorder's note '%s': %s", TRACEDIR_RECORDING, strerror(errno));
		return -errno;
	}
	/* the note says which session to take over: only the caller's own */
	if (fstat(dirfd, &st) || st.st_uid != geteuid() || fstat(fd, &st) || st.st_uid != geteuid() ||
	    !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "the trace or its note '%s' belongs to another user: not used",
		         TRACEDIR_RECORDING);
		return -EPERM;
	}
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		n = 0;
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, "layerprof_recording=1"))
			marked = true;
		else if (!strncmp(line, "pid=", 4))
			rc->pid = (pid_t)strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "start=", 6))
			rc->start = strtoull(line + 6, NULL, 10);
		else if (!strncmp(line, "session=", 8) && strlen(line + 8) < sizeof(rc->session))
			strcpy(rc->session, line + 8);
	}
	if (!marked || rc->pid <= 0 || rc->session[0] != '/') {
		snprintf(err, errlen, "the recorder's note '%s' is damaged", TRACEDIR_RECORDING);
		return -EBADMSG;
	}
	return 0;
}

bool recording_alive(const struct recording *rc)
{
	unsigned long long start;
	char state;

	/* a killed recorder not yet reaped by its parent drains nothing */
	return proc_stat(rc->pid, &start, &state) == 0 && start == rc->start && state != 'Z' && state != 'X';
}

int recording_session_open(const struct recording *rc, char *err, size_t errlen)
{
	struct stat ls, fs;
	int fd;

	if (lstat(rc->session, &ls)) {
		snprintf(err, errlen, "the recorder's session '%s' is gone: %s", rc->session, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(ls.st_mode) || !S_ISDIR(ls.st_mode)) {
		snprintf(err, errlen, "the recorder's session '%s' is %s: not used", rc->session,
		         S_ISLNK(ls.st_mode) ? "a symbolic link" : "not a directory");
		return -ENOTDIR;
	}
	if (ls.st_uid != geteuid() || (ls.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen, "the recorder's session '%s' %s: not used", rc->session,
		         ls.st_uid != geteuid() ? "belongs to another user" : "is writable by others");
		return -EPERM;
	}
	fd = open(rc->session, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the recorder's session '%s': %s", rc->session, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &fs) || fs.st_dev != ls.st_dev || fs.st_ino != ls.st_ino) {
		close(fd);
		snprintf(err, errlen, "the recorder's session '%s' changed while it was checked: not used",
		         rc->session);
		return -EAGAIN;
	}
	return fd;
}

int recording_session_remove(const struct recording *rc, int fd)
{
	char parent[PATH_MAX];
	const char *base = strrchr(rc->session, '/');
	struct stat a, b;
	int pfd, r = 0;

	if (!base || !base[1])
		return -EINVAL;
	snprintf(parent, sizeof(parent), "%.*s", base == rc->session ? 1 : (int)(base - rc->session), rc->session);
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(fd, &a) || fstatat(pfd, base + 1, &b, AT_SYMLINK_NOFOLLOW) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		r = -ESTALE;
	else if (unlinkat(pfd, base + 1, AT_REMOVEDIR))
		r = -errno;
	close(pfd);
	return r;
}
