/* Unit test of common/sessiondir: private and shared directories made,
 * checked and corrected; names another user or a link holds are never
 * used; session names; the sweep of stale sessions, which keeps those a
 * process still maps and never follows a link. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sessiondir.h"
#include "tests/unit/check.h"

#define NOBODY_UID 65534

static char top[256];

static bool is_dir_mode(const char *path, unsigned mode, uid_t uid)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == mode && st.st_uid == uid;
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(path);
		close(fd);
	}
}

static bool file_is(const char *path, const char *text)
{
	char buf[256];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return !strcmp(buf, text);
}

/* A pid that no process has now: a child's, once reaped. */
static pid_t dead_pid(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

static void test_open(void)
{
	struct sessiondir sd, again;
	char path[400], link[400], file[400], squat[400], fb[SESSIONDIR_PATH_MAX + 16];
	struct stat a, b;

	snprintf(path, sizeof(path), "%s/private", top);
	umask(022);
	CHECK_EQ_U64(sessiondir_open(&sd, path, SESSIONDIR_PRIVATE), 0);
	CHECK(sd.fd >= 0 && !sd.fallback);
	CHECK_STR(sd.path, path);
	CHECK(is_dir_mode(path, 0700, geteuid()));
	CHECK(sessiondir_check_fd(sd.fd, geteuid(), false));
	CHECK(!sessiondir_check_fd(sd.fd, geteuid() + 1, false));
	CHECK_EQ_U64(sessiondir_open(&again, path, SESSIONDIR_PRIVATE), 0);
	CHECK(!again.fallback && fstat(sd.fd, &a) == 0 && fstat(again.fd, &b) == 0 && a.st_ino == b.st_ino);
	sessiondir_release(&again);
	/* one of ours that others may enter is closed to them */
	chmod(path, 0775);
	CHECK(!sessiondir_check_fd(sd.fd, geteuid(), false));
	CHECK_EQ_U64(sessiondir_open(&again, path, SESSIONDIR_PRIVATE), 0);
	CHECK(!again.fallback && is_dir_mode(path, 0700, geteuid()));
	sessiondir_release(&again);
	sessiondir_release(&sd);

	/* shared: sticky and open to all, whatever the umask */
	snprintf(path, sizeof(path), "%s/shared", top);
	CHECK_EQ_U64(sessiondir_open(&sd, path, SESSIONDIR_SHARED), 0);
	CHECK(is_dir_mode(path, 01777, geteuid()) && sessiondir_check_fd(sd.fd, geteuid(), true));
	CHECK(!sessiondir_check_fd(sd.fd, geteuid(), false));
	sessiondir_release(&sd);

	/* a link at the name: never followed, never given up on */
	snprintf(path, sizeof(path), "%s/linked", top);
	snprintf(link, sizeof(link), "%s/target", top);
	mkdir(link, 0755);
	CHECK(symlink(link, path) == 0);
	CHECK_EQ_U64(sessiondir_open(&sd, path, SESSIONDIR_PRIVATE), 0);
	CHECK(sd.fallback && sd.taken_not_dir);
	CHECK_STR(sd.wanted, path);
	CHECK(!strncmp(sd.path, path, strlen(path)) && sd.path[strlen(path)] == '.' &&
	      strlen(sd.path) == strlen(path) + 7);
	CHECK(is_dir_mode(sd.path, 0700, geteuid()));
	CHECK(is_dir_mode(link, 0755, geteuid())); /* the link's target is left as it was */
	snprintf(fb, sizeof(fb), "%s", sd.path);
	sessiondir_release(&sd);
	/* the next open finds the same fallback */
	CHECK_EQ_U64(sessiondir_open(&sd, path, SESSIONDIR_PRIVATE), 0);
	CHECK(sd.fallback);
	CHECK_STR(sd.path, fb);
	sessiondir_release(&sd);

	/* a file at the name */
	snprintf(file, sizeof(file), "%s/file", top);
	write_file(file, "x");
	CHECK_EQ_U64(sessiondir_open(&sd, file, SESSIONDIR_SHARED), 0);
	CHECK(sd.fallback && sd.taken_not_dir && is_dir_mode(sd.path, 01777, geteuid()));
	CHECK(file_is(file, "x"));
	sessiondir_release(&sd);

	/* another user's directory at the name (root only can make one) */
	if (geteuid() != 0) {
		printf("skip: a directory of another user's (needs root)\n");
		return;
	}
	snprintf(squat, sizeof(squat), "%s/squat", top);
	mkdir(squat, 0777);
	chmod(squat, 0777);
	CHECK(chown(squat, NOBODY_UID, NOBODY_UID) == 0);
	CHECK_EQ_U64(sessiondir_open(&sd, squat, SESSIONDIR_PRIVATE), 0);
	CHECK(sd.fallback && !sd.taken_not_dir && sd.taken_by == NOBODY_UID);
	CHECK(is_dir_mode(squat, 0777, NOBODY_UID)); /* not ours: untouched */
	CHECK(is_dir_mode(sd.path, 0700, 0));
	{
		char why[3 * SESSIONDIR_PATH_MAX];

		sessiondir_fallback_why(&sd, why, sizeof(why));
		CHECK(strstr(why, "belongs to uid 65534") && strstr(why, sd.path));
	}
	sessiondir_release(&sd);
	/* nor is another user's fallback taken */
	snprintf(path, sizeof(path), "%s/squat2", top);
	mkdir(path, 0777);
	CHECK(chown(path, NOBODY_UID, NOBODY_UID) == 0);
	snprintf(fb, sizeof(fb), "%s.abcdef", path);
	mkdir(fb, 0700);
	CHECK(chown(fb, NOBODY_UID, NOBODY_UID) == 0);
	CHECK_EQ_U64(sessiondir_open(&sd, path, SESSIONDIR_PRIVATE), 0);
	CHECK(sd.fallback && strcmp(sd.path, fb) && is_dir_mode(sd.path, 0700, 0));
	sessiondir_release(&sd);
}

static void test_names(void)
{
	struct sessiondir sd = { .fd = -1 };
	char a[600], b[600], kind[SESSIONDIR_KIND_MAX], want[64];
	pid_t pid = 0;

	snprintf(sd.path, sizeof(sd.path), "/base");
	CHECK_EQ_U64(sessiondir_name(&sd, "rec", a, sizeof(a)), 0);
	CHECK_EQ_U64(sessiondir_name(&sd, "rec", b, sizeof(b)), 0);
	snprintf(want, sizeof(want), "/base/rec-%d-", (int)getpid());
	CHECK(!strncmp(a, want, strlen(want)) && strlen(a) == strlen(want) + 16);
	CHECK(strcmp(a, b)); /* random: never the same twice */
	CHECK(sessiondir_parse(a + 6, kind, sizeof(kind), &pid));
	CHECK_STR(kind, "rec");
	CHECK_EQ_U64(pid, getpid());
	CHECK_EQ_U64(sessiondir_name(&sd, "rec", a, 20), -ENAMETOOLONG);
	CHECK(sessiondir_parse("agent-1-0123456789abcdef", kind, sizeof(kind), &pid) && pid == 1);
	CHECK_STR(kind, "agent");
	CHECK(!sessiondir_parse("rec-0-0123456789abcdef", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("rec-12-0123456789abcde", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("rec-12-0123456789abcdef0", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("rec-12-0123456789ABCDEF", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("Rec-12-0123456789abcdef", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("-12-0123456789abcdef", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("rec-99999999999-0123456789abcdef", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("layerprof-12-abc", kind, sizeof(kind), &pid));
	CHECK(!sessiondir_parse("rec-12-0123456789abcdef", kind, 3, &pid)); /* no room for the kind */
}

/* Makes session `name` in sd with a control file; returns its path. */
static void make_session(const struct sessiondir *sd, const char *name, char *path, size_t size)
{
	char control[700];

	snprintf(path, size, "%s/%s", sd->path, name);
	mkdir(path, 0755); /* not the drain's 0700: any directory of ours there goes */
	snprintf(control, sizeof(control), "%s/control", path);
	write_file(control, "control");
}

static void test_sweep(void)
{
	char base[400], gone[600], alive[600], mapped[600], ring[700], path[800], victim[400], vfile[500];
	char other[600], hex[] = "0123456789abcdef";
	struct sessiondir sd;
	pid_t dead = dead_pid();
	void *map;
	int fd;

	snprintf(base, sizeof(base), "%s/sweep", top);
	if (!CHECK_EQ_U64(sessiondir_open(&sd, base, SESSIONDIR_PRIVATE), 0))
		return;
	snprintf(path, sizeof(path), "rec-%d-%s", (int)dead, hex);
	make_session(&sd, path, gone, sizeof(gone));
	snprintf(ring, sizeof(ring), "%s/r.1.2.3", gone);
	write_file(ring, "ring");
	snprintf(path, sizeof(path), "agent-%d-%s", (int)getppid(), hex);
	make_session(&sd, path, alive, sizeof(alive));
	/* a dead recorder's session whose program still maps its control file */
	snprintf(path, sizeof(path), "rec-%d-fedcba9876543210", (int)dead);
	make_session(&sd, path, mapped, sizeof(mapped));
	snprintf(path, sizeof(path), "%s/control", mapped);
	fd = open(path, O_RDWR | O_CLOEXEC);
	map = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	CHECK(map != MAP_FAILED);
	CHECK_EQ_U64(sessiondir_in_use(&sd, strrchr(mapped, '/') + 1), 1);
	CHECK_EQ_U64(sessiondir_in_use(&sd, strrchr(gone, '/') + 1), 0);
	/* a link named like a stale session, to a directory of files */
	snprintf(victim, sizeof(victim), "%s/victim", top);
	mkdir(victim, 0755);
	snprintf(vfile, sizeof(vfile), "%s/precious", victim);
	write_file(vfile, "keep");
	snprintf(path, sizeof(path), "%s/rec-%d-aaaaaaaaaaaaaaaa", base, (int)dead);
	CHECK(symlink(victim, path) == 0);
	snprintf(other, sizeof(other), "%s/other", base);
	mkdir(other, 0700);

	CHECK_EQ_U64(sessiondir_sweep(&sd), 1);
	CHECK(access(gone, F_OK) != 0); /* emptied and removed */
	CHECK(access(alive, F_OK) == 0);
	CHECK(access(mapped, F_OK) == 0);
	CHECK(file_is(vfile, "keep"));
	CHECK(access(path, F_OK) == 0 && access(other, F_OK) == 0);
	/* once nobody maps it, it goes */
	if (map != MAP_FAILED)
		munmap(map, 4096);
	CHECK_EQ_U64(sessiondir_sweep(&sd), 1);
	CHECK(access(mapped, F_OK) != 0);

	/* a ring the dead recorder had unlinked still maps the session */
	snprintf(path, sizeof(path), "rec-%d-1111111111111111", (int)dead);
	make_session(&sd, path, gone, sizeof(gone));
	snprintf(path, sizeof(path), "%s/control", gone);
	unlink(path);
	snprintf(ring, sizeof(ring), "%s/r.4.5.6", gone);
	write_file(ring, "ring");
	fd = open(ring, O_RDWR | O_CLOEXEC);
	map = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	unlink(ring);
	CHECK(map != MAP_FAILED);
	CHECK_EQ_U64(sessiondir_sweep(&sd), 0);
	CHECK(access(gone, F_OK) == 0);
	if (map != MAP_FAILED)
		munmap(map, 4096);
	CHECK_EQ_U64(sessiondir_sweep(&sd), 1);
	sessiondir_release(&sd);
}

int main(void)
{
	char cmd[300];

	snprintf(top, sizeof(top), "/tmp/lp-sessiondir-XXXXXX");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	test_open();
	test_names();
	test_sweep();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		printf("cannot remove %s\n", top);
	return check_summary();
}
