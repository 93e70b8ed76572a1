/* The drain's watch over the processes it has open streams of: a process
 * that is gone without its end having been told (drain_process_exited, or
 * an LP_EXT_REAPED record of its parent) ends with its wait status unknown.
 * That happens to the children reaped inside the C library (system, pclose,
 * posix_spawn helpers), to those the kernel reaps for a parent that
 * ignores SIGCHLD, and to programs without the wait interposers.
 *
 * Each process is held by a pidfd opened when its first stream opens, so
 * that a later process given the same pid is not taken for it; a zombie
 * still exists (its parent may yet reap it and tell its status).  Where
 * pidfds are missing (kernels before 5.3) kill(pid, 0) is asked instead,
 * and a reused pid then keeps the old process's streams open, as before.
 * Checked on the drain's rescan period: a few syscalls a second per live
 * process, nothing on the ring path. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/drain_impl.h"

#define WATCH_MAX 65536u

struct watched {
	pid_t pid;
	int pidfd;        /* -1: none, ask kill() */
	uint32_t gone_at; /* check number it was first found gone; 0: not yet */
	bool seen;        /* has open streams at this check */
};

struct drainwatch {
	struct watched *w;
	size_t n, cap;
	uint32_t checks;
};

static int pidfd_open_pid(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* True once the process has been reaped (a zombie is still there). */
static bool gone(const struct watched *w)
{
#ifdef SYS_pidfd_send_signal
	if (w->pidfd >= 0)
		return syscall(SYS_pidfd_send_signal, w->pidfd, 0, NULL, 0) && errno == ESRCH;
#endif
	return kill(w->pid, 0) && errno == ESRCH;
}

static struct watched *find(struct drainwatch *dw, pid_t pid)
{
	size_t i;

	for (i = 0; i < dw->n; i++)
		if (dw->w[i].pid == pid)
			return &dw->w[i];
	return NULL;
}

void drainwatch_stream(struct drain *d, pid_t pid)
{
	struct drainwatch *dw = d->watch;
	struct watched *w;

	if (!dw) {
		dw = calloc(1, sizeof(*dw));
		if (!dw)
			return; /* not watched: ends as without the watch */
		d->watch = dw;
	}
	if (find(dw, pid))
		return;
	if (dw->n == dw->cap) {
		size_t cap = dw->cap ? 2 * dw->cap : 16;

		if (cap > WATCH_MAX || !(w = realloc(dw->w, cap * sizeof(*w))))
			return;
		dw->w = w;
		dw->cap = cap;
	}
	w = &dw->w[dw->n++];
	w->pid = pid;
	w->gone_at = 0;
	w->seen = true;
	/* ESRCH: gone already; kill() then finds it gone too */
	w->pidfd = pidfd_open_pid(pid);
}

void drainwatch_check(struct drain *d, bool final)
{
	struct drainwatch *dw = d->watch;
	pid_t *ended;
	size_t i, j, nended = 0;

	if (!dw || !dw->n)
		return;
	ended = malloc(dw->n * sizeof(*ended));
	if (!ended)
		return; /* again at the next check */
	dw->checks++;
	for (i = 0; i < dw->n; i++)
		dw->w[i].seen = false;
	for (i = 0; i < d->nstreams; i++) {
		struct stream *s = d->streams[i];
		struct watched *w;

		if (s->closed || s->final || !(w = find(dw, (pid_t)s->ring->pid)))
			continue;
		w->seen = true;
	}
	/* a process that ended unseen: found gone at two checks in a row
	 * (its parent's LP_EXT_REAPED, written just after the wait returned,
	 * has had a rescan period to come), or at the last one */
	for (i = j = 0; i < dw->n; i++) {
		struct watched *w = &dw->w[i];

		if (w->seen && !w->gone_at && gone(w))
			w->gone_at = dw->checks;
		if (w->seen && w->gone_at && (final || w->gone_at < dw->checks)) {
			ended[nended++] = w->pid;
			w->seen = false;
		}
		if (w->seen)
			dw->w[j++] = *w;
		else if (w->pidfd >= 0)
			close(w->pidfd);
	}
	dw->n = j;
	/* after the table is settled: ending a process rescans the directory
	 * for its last rings, which adds streams */
	for (i = 0; i < nended; i++)
		drain_process_exited(d, ended[i], DRAIN_EXIT_UNKNOWN);
	free(ended);
}

void drainwatch_free(struct drain *d)
{
	size_t i;

	if (!d->watch)
		return;
	for (i = 0; i < d->watch->n; i++)
		if (d->watch->w[i].pidfd >= 0)
			close(d->watch->w[i].pidfd);
	free(d->watch->w);
	free(d->watch);
	d->watch = NULL;
}
