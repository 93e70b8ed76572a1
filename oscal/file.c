/* The file group: system calls on a regular file (page cache) and on
 * directories, all in the suite's own directory (stdio.c has the C
 * library's streams).  Names used there: f (the file), g (a second file), n
 * (made and removed per sample), d (a directory of x entries), d2, ln, hl. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "oscal/suite.h"

#define FILE_LEN SUITE_FILE_LEN
#define APPEND_MAX (8 << 20) /* write-append empties its file past this */
#define DIR_ENTRIES_MAX 256

static const long xs_bytes[] = { 1, 16, 64, 256, 1024, 4096, 16384, 65536 };
static const long xs_alloc[] = { 4096, 8192, 16384, 65536, 131072, 262144, 524288, 1048576 };
static const long xs_entries[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

/* ------------------------------------------------------------ setup and done */

int suite_file_setup(struct suite_ctx *c)
{
	c->fd[0] = suite_make_file(c, "f", FILE_LEN);
	return c->fd[0] < 0 ? c->fd[0] : 0;
}

static int setup_two(struct suite_ctx *c)
{
	int err = suite_file_setup(c);
	if (err)
		return err;
	c->fd[1] = suite_make_file(c, "g", 0);
	return c->fd[1] < 0 ? c->fd[1] : 0;
}

static void remove_dir_entries(struct suite_ctx *c)
{
	char name[32];
	for (long i = 0; i < DIR_ENTRIES_MAX; i++) {
		snprintf(name, sizeof(name), "d/e%ld", i);
		suite_remove(c, name);
	}
	suite_remove(c, "d");
}

void suite_file_done(struct suite_ctx *c)
{
	static const char *const names[] = { "f", "g", "n", "ln", "hl", "d2" };
	if (c->p)
		fclose(c->p);
	c->p = NULL;
	suite_close_fds(c);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		suite_remove(c, names[i]);
	remove_dir_entries(c);
}

/* ------------------------------------------------------------ read and write */

static int one_read(struct suite_ctx *c, uint64_t *ns)
{
	ssize_t n;
	lseek(c->fd[0], 0, SEEK_SET);
	T0;
	n = read(c->fd[0], c->buf, (size_t)c->x);
	T1;
	return suite_io_result(c, n, c->x, "read");
}

static int one_read_eof(struct suite_ctx *c, uint64_t *ns)
{
	ssize_t n;
	lseek(c->fd[0], 0, SEEK_END);
	T0;
	n = read(c->fd[0], c->buf, 4096);
	T1;
	return suite_io_result(c, n, 0, "read at the end of the file");
}

static int one_write(struct suite_ctx *c, uint64_t *ns)
{
	ssize_t n;
	lseek(c->fd[0], 0, SEEK_SET);
	T0;
	n = write(c->fd[0], c->buf, (size_t)c->x);
	T1;
	return suite_io_result(c, n, c->x, "write");
}

/* Appending: the file grows by each write (new page-cache pages, a new
 * size); emptied, untimed, once it passes APPEND_MAX. */
static int one_write_append(struct suite_ctx *c, uint64_t *ns)
{
	off_t end = lseek(c->fd[0], 0, SEEK_END);
	ssize_t n;

	if (end > APPEND_MAX) {
		if (ftruncate(c->fd[0], 0))
			return suite_err(c, "ftruncate of the appended file");
		lseek(c->fd[0], 0, SEEK_SET);
	}
	T0;
	n = write(c->fd[0], c->buf, (size_t)c->x);
	T1;
	return suite_io_result(c, n, c->x, "write at the end of the file");
}

static int one_pread(struct suite_ctx *c, uint64_t *ns)
{
	ssize_t n;
	T0;
	n = pread(c->fd[0], c->buf, (size_t)c->x, 0);
	T1;
	return suite_io_result(c, n, c->x, "pread");
}

static int one_pwrite(struct suite_ctx *c, uint64_t *ns)
{
	ssize_t n;
	T0;
	n = pwrite(c->fd[0], c->buf, (size_t)c->x, 0);
	T1;
	return suite_io_result(c, n, c->x, "pwrite");
}

static int one_readv(struct suite_ctx *c, uint64_t *ns)
{
	struct iovec v[2] = { { c->buf, (size_t)c->x / 2 }, { c->buf2, (size_t)(c->x - c->x / 2) } };
	ssize_t n;
	lseek(c->fd[0], 0, SEEK_SET);
	T0;
	n = readv(c->fd[0], v, 2);
	T1;
	return suite_io_result(c, n, c->x, "readv");
}

static int one_writev(struct suite_ctx *c, uint64_t *ns)
{
	struct iovec v[2] = { { c->buf, (size_t)c->x / 2 }, { c->buf2, (size_t)(c->x - c->x / 2) } };
	ssize_t n;
	lseek(c->fd[0], 0, SEEK_SET);
	T0;
	n = writev(c->fd[0], v, 2);
	T1;
	return suite_io_result(c, n, c->x, "writev");
}

static int one_sendfile(struct suite_ctx *c, uint64_t *ns)
{
	off_t off = 0;
	ssize_t n;
	lseek(c->fd[1], 0, SEEK_SET);
	T0;
	n = sendfile(c->fd[1], c->fd[0], &off, (size_t)c->x);
	T1;
	return suite_io_result(c, n, c->x, "sendfile from a file to a file");
}

static int lseek_whence(struct suite_ctx *c, uint64_t *ns, off_t off, int whence)
{
	off_t r;
	T0;
	r = lseek(c->fd[0], off, whence);
	T1;
	return r < 0 ? suite_err(c, "lseek") : 0;
}

static int one_lseek_set(struct suite_ctx *c, uint64_t *ns)
{
	return lseek_whence(c, ns, 100, SEEK_SET);
}

static int one_lseek_cur(struct suite_ctx *c, uint64_t *ns)
{
	return lseek_whence(c, ns, 0, SEEK_CUR);
}

static int one_lseek_end(struct suite_ctx *c, uint64_t *ns)
{
	return lseek_whence(c, ns, 0, SEEK_END);
}

static int sync_after_write(struct suite_ctx *c, uint64_t *ns, int data_only)
{
	int r;
	if (pwrite(c->fd[0], c->buf, 1, 0) != 1)
		return suite_err(c, "pwrite of one byte before the sync");
	T0;
	r = data_only ? fdatasync(c->fd[0]) : fsync(c->fd[0]);
	T1;
	return r < 0 ? suite_err(c, data_only ? "fdatasync" : "fsync") : 0;
}

static int one_fsync(struct suite_ctx *c, uint64_t *ns)
{
	return sync_after_write(c, ns, 0);
}

static int one_fdatasync(struct suite_ctx *c, uint64_t *ns)
{
	return sync_after_write(c, ns, 1);
}

static int one_ftruncate(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	if (ftruncate(c->fd[1], 0) < 0)
		return suite_err(c, "ftruncate to 0 before the sample");
	T0;
	r = ftruncate(c->fd[1], (off_t)c->x);
	T1;
	return r < 0 ? suite_err(c, "ftruncate") : 0;
}

static int one_fallocate(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	if (ftruncate(c->fd[1], 0) < 0)
		return suite_err(c, "ftruncate to 0 before the sample");
	T0;
	r = fallocate(c->fd[1], 0, 0, (off_t)c->x);
	T1;
	return r < 0 ? suite_err(c, "fallocate on a file of the suite's directory") : 0;
}

/* ------------------------------------------------------------ names */

static int one_open(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int fd, err = suite_entry_path(c, "f", path);
	if (err)
		return err;
	T0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	T1;
	if (fd < 0)
		return suite_err(c, "open of an existing file");
	close(fd);
	return 0;
}

static int one_open_create(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int fd, err = suite_entry_path(c, "n", path);
	if (err)
		return err;
	T0;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	T1;
	if (fd < 0)
		return suite_err(c, "open (O_CREAT|O_EXCL) of a new file");
	close(fd);
	unlink(path);
	return 0;
}

static int one_open_missing(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int fd, err = suite_entry_path(c, "missing", path);
	if (err)
		return err;
	T0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	T1;
	if (fd >= 0) {
		close(fd);
		c->what = "open of a missing file succeeded";
		return -EEXIST;
	}
	return errno == ENOENT ? 0 : suite_err(c, "open of a missing file");
}

static int one_close(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int fd, r, err = suite_entry_path(c, "f", path);
	if (err)
		return err;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return suite_err(c, "open before close");
	T0;
	r = close(fd);
	T1;
	return r < 0 ? suite_err(c, "close") : 0;
}

static int stat_of(struct suite_ctx *c, uint64_t *ns, const char *name, int missing, int link)
{
	char path[PATH_MAX];
	struct stat st;
	int r, err = suite_entry_path(c, name, path);
	if (err)
		return err;
	T0;
	r = link ? lstat(path, &st) : stat(path, &st);
	T1;
	if (missing)
		return r == 0            ? (c->what = "stat of a missing file succeeded", -EEXIST)
		       : errno == ENOENT ? 0
		                         : suite_err(c, "stat of a missing file");
	return r < 0 ? suite_err(c, link ? "lstat" : "stat") : 0;
}

static int one_stat(struct suite_ctx *c, uint64_t *ns)
{
	return stat_of(c, ns, "f", 0, 0);
}

static int one_stat_missing(struct suite_ctx *c, uint64_t *ns)
{
	return stat_of(c, ns, "missing", 1, 0);
}

static int one_lstat(struct suite_ctx *c, uint64_t *ns)
{
	return stat_of(c, ns, "f", 0, 1);
}

static int one_fstat(struct suite_ctx *c, uint64_t *ns)
{
	struct stat st;
	int r;
	T0;
	r = fstat(c->fd[0], &st);
	T1;
	return r < 0 ? suite_err(c, "fstat") : 0;
}

static int one_fstatfs(struct suite_ctx *c, uint64_t *ns)
{
	struct statfs st;
	int r;
	T0;
	r = fstatfs(c->fd[0], &st);
	T1;
	return r < 0 ? suite_err(c, "fstatfs") : 0;
}

static int one_access(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int r, err = suite_entry_path(c, "f", path);
	if (err)
		return err;
	T0;
	r = access(path, R_OK);
	T1;
	return r < 0 ? suite_err(c, "access") : 0;
}

static int one_chmod(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int r, err = suite_entry_path(c, "f", path);
	if (err)
		return err;
	T0;
	r = chmod(path, 0600);
	T1;
	return r < 0 ? suite_err(c, "chmod") : 0;
}

static int one_fchmod(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = fchmod(c->fd[0], 0600);
	T1;
	return r < 0 ? suite_err(c, "fchmod") : 0;
}

static int one_utimensat(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int r, err = suite_entry_path(c, "f", path);
	if (err)
		return err;
	T0;
	r = utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
	T1;
	return r < 0 ? suite_err(c, "utimensat") : 0;
}

static int one_unlink(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int fd, r, err = suite_entry_path(c, "n", path);
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return suite_err(c, "open (O_CREAT|O_EXCL) before unlink");
	close(fd);
	T0;
	r = unlink(path);
	T1;
	return r < 0 ? suite_err(c, "unlink") : 0;
}

/* f and g swap names back and forth; c->len says which name f has. */
static int one_rename(struct suite_ctx *c, uint64_t *ns)
{
	char a[PATH_MAX], b[PATH_MAX];
	int r, err = suite_entry_path(c, c->len ? "n" : "f", a);
	if (!err)
		err = suite_entry_path(c, c->len ? "f" : "n", b);
	if (err)
		return err;
	T0;
	r = rename(a, b);
	T1;
	if (r < 0)
		return suite_err(c, "rename");
	c->len = !c->len;
	return 0;
}

static int one_mkdir(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int r, err = suite_entry_path(c, "d2", path);
	if (err)
		return err;
	T0;
	r = mkdir(path, 0700);
	T1;
	if (r < 0)
		return suite_err(c, "mkdir");
	rmdir(path);
	return 0;
}

static int one_rmdir(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int r, err = suite_entry_path(c, "d2", path);
	if (err)
		return err;
	if (mkdir(path, 0700) < 0)
		return suite_err(c, "mkdir before rmdir");
	T0;
	r = rmdir(path);
	T1;
	return r < 0 ? suite_err(c, "rmdir") : 0;
}

static int one_symlink(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	int r, err = suite_entry_path(c, "ln", path);
	if (err)
		return err;
	T0;
	r = symlink("f", path);
	T1;
	if (r < 0)
		return suite_err(c, "symlink");
	unlink(path);
	return 0;
}

static int setup_link(struct suite_ctx *c)
{
	char path[PATH_MAX];
	int err = suite_file_setup(c);
	if (!err)
		err = suite_entry_path(c, "ln", path);
	if (!err && symlink("f", path) < 0)
		err = suite_err(c, "symlink before readlink");
	return err;
}

static int one_readlink(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	ssize_t r;
	int err = suite_entry_path(c, "ln", path);
	if (err)
		return err;
	T0;
	r = readlink(path, (char *)c->buf, 4096);
	T1;
	return r < 0 ? suite_err(c, "readlink") : 0;
}

static int one_link(struct suite_ctx *c, uint64_t *ns)
{
	char a[PATH_MAX], b[PATH_MAX];
	int r, err = suite_entry_path(c, "f", a);
	if (!err)
		err = suite_entry_path(c, "hl", b);
	if (err)
		return err;
	T0;
	r = link(a, b);
	T1;
	if (r < 0)
		return suite_err(c, "link");
	unlink(b);
	return 0;
}

static int one_getcwd(struct suite_ctx *c, uint64_t *ns)
{
	char *r;
	T0;
	r = getcwd((char *)c->buf, 4096);
	T1;
	return r ? 0 : suite_err(c, "getcwd");
}

/* ------------------------------------------------------------ descriptors */

static int one_dup(struct suite_ctx *c, uint64_t *ns)
{
	int fd;
	T0;
	fd = dup(c->fd[0]);
	T1;
	if (fd < 0)
		return suite_err(c, "dup");
	close(fd);
	return 0;
}

static int one_dup2(struct suite_ctx *c, uint64_t *ns)
{
	int fd;
	T0;
	fd = dup2(c->fd[0], c->fd[1]);
	T1;
	return fd < 0 ? suite_err(c, "dup2 onto an open descriptor") : 0;
}

static int one_fcntl_getfl(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = fcntl(c->fd[0], F_GETFL);
	T1;
	return r < 0 ? suite_err(c, "fcntl F_GETFL") : 0;
}

static int one_fcntl_setfl(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = fcntl(c->fd[0], F_SETFL, O_NONBLOCK);
	T1;
	return r < 0 ? suite_err(c, "fcntl F_SETFL") : 0;
}

/* ------------------------------------------------------------ directories */

static int setup_dir(struct suite_ctx *c)
{
	char path[PATH_MAX], name[32];
	int err = suite_entry_path(c, "d", path);
	if (err)
		return err;
	if (mkdir(path, 0700) < 0)
		return suite_err(c, "mkdir of the directory");
	for (long i = 0; i < c->x && i < DIR_ENTRIES_MAX; i++) {
		int fd;
		snprintf(name, sizeof(name), "d/e%ld", i);
		if ((fd = suite_make_file(c, name, 0)) < 0)
			return fd;
		close(fd);
	}
	c->fd[0] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return c->fd[0] < 0 ? suite_err(c, "open of the directory") : 0;
}

static int one_getdents(struct suite_ctx *c, uint64_t *ns)
{
	long n;
	lseek(c->fd[0], 0, SEEK_SET);
	T0;
	n = syscall(SYS_getdents64, c->fd[0], c->buf, 65536);
	T1;
	if (n < 0)
		return suite_err(c, "getdents64");
	return 0;
}

static int one_opendir(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	DIR *d;
	int err = suite_entry_path(c, "d", path);
	if (err)
		return err;
	T0;
	d = opendir(path);
	T1;
	if (!d)
		return suite_err(c, "opendir");
	closedir(d);
	return 0;
}

static int one_readdir(struct suite_ctx *c, uint64_t *ns)
{
	char path[PATH_MAX];
	DIR *d;
	int err = suite_entry_path(c, "d", path);
	if (err)
		return err;
	if (!(d = opendir(path)))
		return suite_err(c, "opendir before readdir");
	errno = 0;
	T0;
	while (readdir(d))
		;
	T1;
	err = errno ? suite_err(c, "readdir") : 0;
	closedir(d);
	return err;
}

#define F(name, call, cond, param, unit, xs, setup, one, desc)                               \
	{                                                                                    \
		name, call, cond, "file", param, unit, xs, setup, one, suite_file_done, desc \
	}

const struct suite_def suite_file[] = {
	F("read", "read", "file", "bytes", "B", SUITE_XS(xs_bytes), suite_file_setup, one_read,
	  "read(2) of a regular file in the page cache, from its start"),
	F("read-eof", "read", "eof", "", "", SUITE_NOX, suite_file_setup, one_read_eof,
	  "read(2) of 4096 bytes at the end of a regular file (returns 0)"),
	F("write", "write", "file", "bytes", "B", SUITE_XS(xs_bytes), suite_file_setup, one_write,
	  "write(2) to a regular file in the page cache, over its start"),
	F("write-append", "write", "append", "bytes", "B", SUITE_XS(xs_bytes), suite_file_setup, one_write_append,
	  "write(2) at the end of a regular file in the page cache, which grows (emptied, untimed, past 8 MiB)"),
	F("pread", "pread", "", "bytes", "B", SUITE_XS(xs_bytes), suite_file_setup, one_pread,
	  "pread(2) at offset 0 of a regular file in the page cache"),
	F("pwrite", "pwrite", "", "bytes", "B", SUITE_XS(xs_bytes), suite_file_setup, one_pwrite,
	  "pwrite(2) at offset 0 of a regular file in the page cache"),
	F("readv", "readv", "", "bytes", "B", SUITE_XS(xs_bytes), suite_file_setup, one_readv,
	  "readv(2) of two buffers (half each) from a regular file"),
	F("writev", "writev", "", "bytes", "B", SUITE_XS(xs_bytes), suite_file_setup, one_writev,
	  "writev(2) of two buffers (half each) to a regular file"),
	F("sendfile", "sendfile", "", "bytes", "B", SUITE_XS(xs_bytes), setup_two, one_sendfile,
	  "sendfile(2) from a regular file to another"),
	F("lseek-set", "lseek", "set", "", "", SUITE_NOX, suite_file_setup, one_lseek_set, "lseek(2) SEEK_SET"),
	F("lseek-cur", "lseek", "cur", "", "", SUITE_NOX, suite_file_setup, one_lseek_cur, "lseek(2) SEEK_CUR by 0"),
	F("lseek-end", "lseek", "end", "", "", SUITE_NOX, suite_file_setup, one_lseek_end, "lseek(2) SEEK_END"),
	F("open", "open", "existing", "", "", SUITE_NOX, suite_file_setup, one_open,
	  "open(2) O_RDONLY of an existing file (its close not timed)"),
	F("open-create", "open", "create", "", "", SUITE_NOX, suite_file_setup, one_open_create,
	  "open(2) O_CREAT|O_EXCL of a new file (close and unlink not timed)"),
	F("open-missing", "open", "missing", "", "", SUITE_NOX, suite_file_setup, one_open_missing,
	  "open(2) of a name that does not exist (ENOENT is its result)"),
	F("close", "close", "file", "", "", SUITE_NOX, suite_file_setup, one_close,
	  "close(2) of a regular file's descriptor"),
	F("stat", "stat", "existing", "", "", SUITE_NOX, suite_file_setup, one_stat, "stat(2) of a regular file"),
	F("stat-missing", "stat", "missing", "", "", SUITE_NOX, suite_file_setup, one_stat_missing,
	  "stat(2) of a name that does not exist (ENOENT is its result)"),
	F("lstat", "lstat", "", "", "", SUITE_NOX, suite_file_setup, one_lstat, "lstat(2) of a regular file"),
	F("fstat", "fstat", "", "", "", SUITE_NOX, suite_file_setup, one_fstat, "fstat(2) of a regular file"),
	F("fstatfs", "fstatfs", "", "", "", SUITE_NOX, suite_file_setup, one_fstatfs,
	  "fstatfs(2) of the suite's file system"),
	F("access", "access", "", "", "", SUITE_NOX, suite_file_setup, one_access, "access(2) R_OK of a regular file"),
	F("chmod", "chmod", "", "", "", SUITE_NOX, suite_file_setup, one_chmod, "chmod(2) of a regular file"),
	F("fchmod", "fchmod", "", "", "", SUITE_NOX, suite_file_setup, one_fchmod, "fchmod(2) of a regular file"),
	F("utimensat", "utimensat", "", "", "", SUITE_NOX, suite_file_setup, one_utimensat,
	  "utimensat(2) of a regular file to now"),
	F("fsync", "fsync", "", "", "", SUITE_NOX, suite_file_setup, one_fsync,
	  "fsync(2) of a 64 KiB file after a 1-byte write (not timed)"),
	F("fdatasync", "fdatasync", "", "", "", SUITE_NOX, suite_file_setup, one_fdatasync,
	  "fdatasync(2) of a 64 KiB file after a 1-byte write (not timed)"),
	F("ftruncate", "ftruncate", "grow", "bytes", "B", SUITE_XS(xs_alloc), setup_two, one_ftruncate,
	  "ftruncate(2) of an empty file to x bytes (sparse)"),
	F("fallocate", "fallocate", "", "bytes", "B", SUITE_XS(xs_alloc), setup_two, one_fallocate,
	  "fallocate(2) of x bytes in an empty file"),
	F("unlink", "unlink", "", "", "", SUITE_NOX, NULL, one_unlink, "unlink(2) of an empty file (made, not timed)"),
	F("rename", "rename", "", "", "", SUITE_NOX, suite_file_setup, one_rename,
	  "rename(2) of a file within its directory"),
	F("mkdir", "mkdir", "", "", "", SUITE_NOX, NULL, one_mkdir, "mkdir(2) (rmdir not timed)"),
	F("rmdir", "rmdir", "", "", "", SUITE_NOX, NULL, one_rmdir, "rmdir(2) of an empty directory"),
	F("symlink", "symlink", "", "", "", SUITE_NOX, suite_file_setup, one_symlink, "symlink(2) (unlink not timed)"),
	F("readlink", "readlink", "", "", "", SUITE_NOX, setup_link, one_readlink, "readlink(2) of a symbolic link"),
	F("link", "link", "", "", "", SUITE_NOX, suite_file_setup, one_link,
	  "link(2) of a regular file (unlink not timed)"),
	F("getcwd", "getcwd", "", "", "", SUITE_NOX, NULL, one_getcwd, "getcwd(3)"),
	F("dup", "dup", "", "", "", SUITE_NOX, suite_file_setup, one_dup,
	  "dup(2) of a file's descriptor (close not timed)"),
	F("dup2", "dup2", "", "", "", SUITE_NOX, setup_two, one_dup2, "dup2(2) onto an open descriptor"),
	F("fcntl-getfl", "fcntl", "getfl", "", "", SUITE_NOX, suite_file_setup, one_fcntl_getfl, "fcntl(2) F_GETFL"),
	F("fcntl-setfl", "fcntl", "setfl", "", "", SUITE_NOX, suite_file_setup, one_fcntl_setfl,
	  "fcntl(2) F_SETFL O_NONBLOCK"),
	F("getdents", "getdents64", "", "entries", "entries", SUITE_XS(xs_entries), setup_dir, one_getdents,
	  "getdents64(2) of a whole directory of x files in one call"),
	F("opendir", "opendir", "", "", "", SUITE_NOX, setup_dir, one_opendir,
	  "opendir(3) of a directory (closedir not timed)"),
	F("readdir", "readdir", "whole", "entries", "entries", SUITE_XS(xs_entries), setup_dir, one_readdir,
	  "readdir(3) to the end of a directory of x files, all calls together"),
};
const size_t suite_file_n = sizeof(suite_file) / sizeof(suite_file[0]);
