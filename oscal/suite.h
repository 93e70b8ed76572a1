/* layerprof-oscal's suite: the entries (one call in one condition), the
 * harness that times them and the helpers the groups share.
 *
 * Each group (file.c, mem.c, proc.c, sync.c, ipc.c, sig.c, time.c) holds a
 * table of struct suite_def.  The harness (oscal.c) runs, for each selected
 * entry and each of its parameter values x: setup once, then warmup + reps
 * calls of one(), each returning one raw time (two clock reads around the
 * call or, for a call that changes the flow, from the call to the point that
 * proves it happened), then done.  The harness runs in one thread; the
 * entries may start threads and processes but end (and reap) them in done. */
#ifndef LP_OSCAL_SUITE_H
#define LP_OSCAL_SUITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define SUITE_BUF_MAX (1u << 20) /* the largest buffer an entry uses (1 MiB) */
#define SUITE_BUF_SLACK 64       /* bytes past it (memmove's overlap) */
#define SUITE_TASKS_MAX 64       /* threads or processes an entry starts at most */
#define SUITE_FDS_MAX 8

/* The state of one (entry, x) between setup and done; zeroed before setup
 * (fds set to -1).  buf and buf2 are the suite's two scratch buffers
 * (SUITE_BUF_MAX + SUITE_BUF_SLACK bytes each, owned by the harness, filled
 * with letters: suite_fill). */
struct suite_ctx {
	const struct suite_def *def;
	long x;
	const char *dir; /* the suite's own directory (made by mkdtemp) */
	unsigned char *buf, *buf2;
	int fd[SUITE_FDS_MAX];
	pid_t pid;
	void *p;    /* an entry's pointer (a mapping, a FILE, its state...) */
	size_t len; /* p's length when it is a mapping */
	void *priv; /* a group's state, freed by its done */
	/* set by an entry returning an error: what it tried, and an optional
	 * remark ("no mqueue file system") */
	const char *what;
	const char *why;
	int unavailable; /* the error means "not available here": a skip */
};

/* one() returns 0 and the raw time in *ns, or -errno with c->what set.
 * setup() returns 0 or -errno (c->what set); done() undoes what setup and
 * one() left (always called after setup, also after an error). */
struct suite_def {
	const char *name, *call, *cond, *group, *param, *unit;
	const long *xs; /* parameter values, ascending; NULL: none (x = 0) */
	unsigned nxs;
	int (*setup)(struct suite_ctx *c);
	int (*one)(struct suite_ctx *c, uint64_t *ns);
	void (*done)(struct suite_ctx *c);
	const char *desc;
};

#define SUITE_XS(a) (a), (unsigned)(sizeof(a) / sizeof((a)[0]))
#define SUITE_NOX NULL, 0

/* The groups' tables, in the order of the suite. */
extern const struct suite_def suite_file[], suite_stdio[], suite_mem[], suite_proc[], suite_sync[], suite_ipc[],
    suite_sig[], suite_time[];
extern const size_t suite_file_n, suite_stdio_n, suite_mem_n, suite_proc_n, suite_sync_n, suite_ipc_n, suite_sig_n,
    suite_time_n;

/* The clock every entry uses (CLOCK_MONOTONIC, through the vDSO). */
static inline uint64_t suite_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The file group's regular file f (SUITE_FILE_LEN bytes, fd[0]), made by
 * suite_file_setup; suite_file_done closes every descriptor and stream
 * (c->p a FILE) and removes every name the file group makes. */
#define SUITE_FILE_LEN 65536
int suite_file_setup(struct suite_ctx *c);
void suite_file_done(struct suite_ctx *c);

/* An error return: sets c->what and gives -errno (errno as it is now, or
 * EIO when errno is 0). */
int suite_err(struct suite_ctx *c, const char *what);
/* dir/name into out (PATH_MAX).  Returns 0 or -ENAMETOOLONG. */
int suite_path(const struct suite_ctx *c, const char *name, char *out);
/* suite_path for an entry: a failure also sets c->what. */
int suite_entry_path(struct suite_ctx *c, const char *name, char *out);
/* A transfer's result: got < 0 is the call's error (suite_err), a count
 * other than want is -EIO; c->what names the call. */
int suite_io_result(struct suite_ctx *c, ssize_t got, long want, const char *what);
/* A regular file dir/name of len bytes (the buffer's bytes), created
 * exclusively; returns its descriptor (O_RDWR) or -errno with c->what. */
int suite_make_file(struct suite_ctx *c, const char *name, size_t len);
/* Removes dir/name (a file, a link or an empty directory), errors ignored. */
void suite_remove(const struct suite_ctx *c, const char *name);
/* Closes every c->fd[] that is open. */
void suite_close_fds(struct suite_ctx *c);
/* Waits (bounded) until the thread or process tid sleeps in the kernel:
 * a waiter is really waiting before its wake-up is timed.  Reads
 * /proc/self/task/TID/stat (tid of this process) or /proc/TID/stat. */
void suite_wait_sleeping(pid_t tid, int is_thread);
/* Remembers a child process, so that a SIGINT/SIGTERM kills it; forget it
 * once reaped. */
void suite_child_add(pid_t pid);
void suite_child_forget(pid_t pid);
/* Writes all of len bytes / reads exactly len bytes (loops); 0 or -errno. */
int suite_write_all(int fd, const void *b, size_t len);
int suite_read_all(int fd, void *b, size_t len);
/* The name of a POSIX message queue while it exists (between mq_open and
 * mq_unlink), else "": a signal's cleanup unlinks it. */
extern char suite_mq[64];
/* Fills buf and buf2 with the same letters (no NUL). */
void suite_fill(unsigned char *buf, unsigned char *buf2);
/* The gettid system call (every libc). */
pid_t suite_gettid(void);

#endif
