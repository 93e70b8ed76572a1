/* The drain's side of threads that ran without a ring (see struct
 * lp_loss_table in format.h): the recorder's session gets a loss table with
 * its space reserved, and what the threads count in it, or in the control
 * block when they found no entry, goes into the trace as LOST events of a
 * stream of the thread's own.  Looked at on the drain's rescan period and
 * when it finishes: a few hundred loads, nothing on the ring path.
 *
 * The table is written by the traced processes: nothing read from it is
 * trusted beyond its bounds (a count that goes down is ignored). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/drain_impl.h"

struct drainloss {
	struct lp_loss_table *table; /* NULL: the session has none */
	uint64_t reported[LP_LOSS_ENTRIES];
	bool opened[LP_LOSS_ENTRIES]; /* the entry's stream has begun */
	uint64_t unplaced_reported;   /* of lp_control.unrecorded_events */
	uint32_t unplaced_threads;    /* of lp_control.unrecorded_threads */
	bool unplaced_opened;
	struct encoder *enc; /* made on the first report */
};

int drainloss_create(struct drain *d)
{
	struct lp_loss_table *tab;
	struct drainloss *dl;
	void *map;
	int fd, r;

	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	d->loss = dl;
	fd = openat(d->dirfd, LP_LOSS_NAME, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* reserved, as the rings are: writing it can never fail later */
	r = fallocate(fd, 0, 0, sizeof(*tab)) ? -errno : 0;
	if (r == -EOPNOTSUPP || r == -ENOSYS)
		r = ftruncate(fd, sizeof(*tab)) ? -errno : 0;
	if (r) {
		close(fd);
		unlinkat(d->dirfd, LP_LOSS_NAME, 0);
		return r;
	}
	map = mmap(NULL, sizeof(*tab), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	r = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (r) {
		unlinkat(d->dirfd, LP_LOSS_NAME, 0);
		return r;
	}
	tab = map;
	tab->version = LP_SHM_VERSION;
	tab->entries = LP_LOSS_ENTRIES;
	atomic_store_explicit((_Atomic uint32_t *)&tab->magic, LP_LOSS_MAGIC, memory_order_release);
	dl->table = tab;
	return 0;
}

int drainloss_attach(struct drain *d)
{
	struct drainloss *dl = calloc(1, sizeof(*dl));

	if (!dl)
		return -ENOMEM;
	d->loss = dl;
	/* counted before this attach: reported to an earlier one, or by no one */
	dl->unplaced_reported =
	    atomic_load_explicit((_Atomic uint64_t *)&d->control->unrecorded_events, memory_order_relaxed);
	dl->unplaced_threads =
	    atomic_load_explicit((_Atomic uint32_t *)&d->control->unrecorded_threads, memory_order_relaxed);
	return 0;
}

/* Writes the stream (image, pid, tid)'s part: its start the first time, the
 * events lost since the last report, and its end. */
static bool emit(struct drain *d, uint32_t image, uint32_t pid, uint32_t tid, const char *comm, bool *opened,
                 uint64_t lost, bool end)
{
	uint64_t ns = clocksync_monotonic_ns();
	struct encoder *e;

	if (!lost && !end && *opened)
		return true;
	if (!d->loss->enc && !(d->loss->enc = malloc(sizeof(*d->loss->enc))))
		return false; /* again at the next look */
	e = d->loss->enc;
	encoder_init(e, image, pid, tid);
	if (d->cfg.chunk_bytes)
		encoder_set_target(e, d->cfg.chunk_bytes);
	if (!*opened) {
		encoder_task(e, ns, LP_TASK_START, 0, comm, strnlen(comm, 16), NULL, 0);
		if (pid)
			d->stats.unrecorded_threads++;
	}
	*opened = true;
	if (lost)
		encoder_lost(e, ns, lost);
	if (end)
		encoder_task(e, ns, LP_TASK_END, 0, NULL, 0, NULL, 0);
	drain_flush_encoder(d, e);
	d->stats.lost += lost;
	d->stats.unrecorded_events += lost;
	return true;
}

static void entry_report(struct drain *d, uint32_t i, bool final)
{
	struct drainloss *dl = d->loss;
	struct lp_loss_entry *e = &dl->table->entry[i];
	uint32_t state = atomic_load_explicit((_Atomic uint32_t *)&e->state, memory_order_acquire);
	uint64_t events;
	bool gone = false;
	char comm[16];

	if (state != LP_LOSS_LIVE && state != LP_LOSS_ENDED) {
		dl->reported[i] = 0;
		dl->opened[i] = false;
		return;
	}
	events = atomic_load_explicit((_Atomic uint64_t *)&e->events, memory_order_relaxed);
	memcpy(comm, e->comm, sizeof(comm));
	if (!dl->opened[i])
		d->stats.unrecorded_error = e->error;
	/* a process killed with its thread still counting: its entry goes */
	if (state == LP_LOSS_LIVE && !final && kill((pid_t)e->pid, 0) && errno == ESRCH)
		gone = true;
	if (!emit(d, e->image, e->pid, e->tid, comm, &dl->opened[i],
	          events > dl->reported[i] ? events - dl->reported[i] : 0, state == LP_LOSS_ENDED))
		return;
	if (events > dl->reported[i])
		dl->reported[i] = events;
	if (state == LP_LOSS_ENDED || gone) {
		dl->reported[i] = 0;
		dl->opened[i] = false;
		atomic_store_explicit((_Atomic uint32_t *)&e->state, LP_LOSS_FREE, memory_order_release);
	}
}

void drainloss_poll(struct drain *d, bool final)
{
	struct drainloss *dl = d->loss;
	uint64_t unplaced;
	uint32_t i, threads;

	if (!dl)
		return;
	for (i = 0; dl->table && i < LP_LOSS_ENTRIES; i++)
		entry_report(d, i, final);
	unplaced = atomic_load_explicit((_Atomic uint64_t *)&d->control->unrecorded_events, memory_order_relaxed);
	threads = atomic_load_explicit((_Atomic uint32_t *)&d->control->unrecorded_threads, memory_order_relaxed);
	if (unplaced > dl->unplaced_reported || threads > dl->unplaced_threads) {
		if (!emit(d, 0, 0, 0, "unrecorded", &dl->unplaced_opened,
		          unplaced > dl->unplaced_reported ? unplaced - dl->unplaced_reported : 0, false))
			return;
		if (threads > dl->unplaced_threads)
			d->stats.unrecorded_threads += threads - dl->unplaced_threads;
		dl->unplaced_reported = unplaced;
		dl->unplaced_threads = threads;
	}
}

void drainloss_free(struct drain *d)
{
	if (!d->loss)
		return;
	if (d->loss->table)
		munmap(d->loss->table, sizeof(*d->loss->table));
	free(d->loss->enc);
	free(d->loss);
	d->loss = NULL;
}
