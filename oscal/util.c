/* The helpers the suite's groups share: paths and files in the suite's
 * directory, waiting for a waiter to sleep, whole reads and writes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "oscal/suite.h"

int suite_err(struct suite_ctx *c, const char *what)
{
	int e = errno ? errno : EIO;
	c->what = what;
	return -e;
}

int suite_path(const struct suite_ctx *c, const char *name, char *out)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", c->dir, name);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int suite_entry_path(struct suite_ctx *c, const char *name, char *out)
{
	int err = suite_path(c, name, out);

	if (err)
		c->what = "a path in the suite's directory";
	return err;
}

int suite_io_result(struct suite_ctx *c, ssize_t got, long want, const char *what)
{
	if (got < 0)
		return suite_err(c, what);
	c->what = what;
	return got == want ? 0 : -EIO;
}

int suite_make_file(struct suite_ctx *c, const char *name, size_t len)
{
	char path[PATH_MAX];
	int fd, err;

	if (len > SUITE_BUF_MAX) {
		c->what = "the file's size";
		return -EINVAL;
	}
	if ((err = suite_path(c, name, path)) < 0) {
		c->what = "the file's path";
		return err;
	}
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return suite_err(c, "open (O_CREAT|O_EXCL) of a file in the suite's directory");
	if ((err = suite_write_all(fd, c->buf, len)) < 0) {
		close(fd);
		unlink(path);
		c->what = "write of the file's contents";
		return err;
	}
	return fd;
}

void suite_remove(const struct suite_ctx *c, const char *name)
{
	char path[PATH_MAX];
	if (suite_path(c, name, path) < 0)
		return;
	if (unlink(path) < 0 && errno == EISDIR)
		rmdir(path);
}

void suite_close_fds(struct suite_ctx *c)
{
	for (int i = 0; i < SUITE_FDS_MAX; i++)
		if (c->fd[i] >= 0) {
			close(c->fd[i]);
			c->fd[i] = -1;
		}
}

/* The state letter of /proc/.../stat: the first field after the last ')'. */
static char proc_state(const char *path)
{
	char b[512], *p;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	p = strrchr(b, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Tries at most this many reads of the state (a waiter that does not go to
 * sleep, e.g. one spinning in user space first, is timed anyway). */
#define SLEEP_TRIES 20000

void suite_wait_sleeping(pid_t tid, int is_thread)
{
	char path[64];
	if (is_thread)
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	for (int i = 0; i < SLEEP_TRIES; i++) {
		char s = proc_state(path);
		if (s == 'S' || s == 'D' || s == 0 || s == 'Z' || s == 'T' || s == 't')
			return;
		sched_yield();
	}
}

int suite_write_all(int fd, const void *b, size_t len)
{
	const unsigned char *p = b;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int suite_read_all(int fd, void *b, size_t len)
{
	unsigned char *p = b;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

pid_t suite_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

void suite_fill(unsigned char *buf, unsigned char *buf2)
{
	for (size_t i = 0; i < SUITE_BUF_MAX + SUITE_BUF_SLACK; i++)
		buf[i] = buf2[i] = (unsigned char)('a' + i % 26);
}
