/* The drain (see drain.h): session directory, ring consumer, encoding. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clocksync.h"
#include "common/ctrevent.h"
#include "common/drain.h"
#include "common/drain_impl.h"
#include "common/encoder.h"
#include "common/libcsig.h"
#include "common/memevent.h"
#include "common/memfold.h"
#include "common/sessiondir.h"
#include "common/syncevent.h"

/* CLOCK chunks at most this often; a full directory scan at least this often. */
#define DRAIN_CLOCK_PERIOD_NS 2000000000ull
#define DRAIN_RESCAN_NS 1000000000ull

int drain_emit(struct drain *d, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	int r;

	if (d->error)
		return d->error;
	r = d->ops.chunk(d->ops.ctx, type, payload, len, events);
	if (r)
		d->error = r;
	d->stats.bytes += len;
	return r;
}

void drain_flush_encoder(struct drain *d, struct encoder *e)
{
	const uint8_t *payload;
	uint64_t events = e->events;
	size_t len = encoder_take(e, &payload);

	if (len) {
		d->stats.events += events;
		drain_emit(d, LP_CHUNK_EVENTS, payload, len, events);
	}
}

/* True when the rings' consumer lines say what is not written yet (see
 * drain_config.keep_rings). */
static inline bool publishes(const struct drain *d)
{
	return d->cfg.keep_rings || d->salvage;
}

static void flush_stream(struct stream *s)
{
	drain_flush_encoder(s->d, s->enc);
	s->flushed = true;
	s->lost_flushed = s->lost_reported;
	s->lost_records = 0;
	if (s->ring && publishes(s->d)) {
		atomic_store_explicit((_Atomic uint64_t *)&s->ring->lost_written, s->lost_flushed,
		                      memory_order_relaxed);
		atomic_store_explicit((_Atomic uint32_t *)&s->ring->unwritten, 0, memory_order_relaxed);
	}
}

static inline void maybe_flush(struct stream *s)
{
	if (encoder_full(s->enc))
		flush_stream(s);
}

/* The oldest sync event held by the folding stage comes out of it. */
static void sync_release(struct stream *s, uint64_t ns)
{
	if (!s->sync_n)
		return;
	encoder_sync(s->enc, ns, &s->sync_held[s->sync_head]);
	s->sync_head = (s->sync_head + 1) & (s->sync_cap - 1);
	s->sync_n--;
}

/* Room for one more held sync event; false when there is none. */
static bool sync_hold_room(struct stream *s)
{
	struct syncevent *q;
	uint32_t cap = s->sync_cap ? s->sync_cap * 2 : 64;

	if (s->sync_n < s->sync_cap)
		return true;
	if (cap > DRAIN_SYNC_HELD_MAX || !(q = malloc((size_t)cap * sizeof(*q))))
		return false;
	for (uint32_t i = 0; i < s->sync_n; i++)
		q[i] = s->sync_held[(s->sync_head + i) & (s->sync_cap - 1)];
	free(s->sync_held);
	s->sync_held = q;
	s->sync_cap = cap;
	s->sync_head = 0;
	return true;
}

/* A counter event the folding stage held (ctr_hold), in its place. */
static void fold_sink_counter(struct stream *s, uint64_t ns)
{
	struct drain_ctrfifo *q = s->ctr_fifo;
	const struct drain_ctrheld *h;
	struct ctrevent c;

	if (!q || q->head == q->tail)
		return;
	h = &q->a[q->head++ & (q->cap - 1)];
	memset(&c, 0, sizeof(c));
	c.kind = h->kind;
	c.fn = h->fn;
	c.n = h->n;
	memcpy(c.values, h->values, h->n * sizeof(h->values[0]));
	encoder_counter(s->enc, ns, &c);
}

/* Sink of the folding stage: into the encoder. */
static void fold_sink(void *ctx, uint64_t ns, uint8_t type, uint64_t value, const struct memevent *m)
{
	struct stream *s = ctx;

	/* the thread's syscalls come out with the events around them */
	if (ns >= s->sys_next)
		drainsys_emit(s, ns);
	if (type == LP_EV_ENTRY)
		encoder_entry(s->enc, ns, value);
	else if (type == LP_EV_EXIT)
		encoder_exit(s->enc, ns, value);
	else if (type == LP_EV_LONGJMP)
		encoder_longjmp(s->enc, ns, value);
	else if (type == LP_EV_SYNC)
		sync_release(s, ns);
	else if (type == LP_EV_COUNTER)
		fold_sink_counter(s, ns);
	else
		encoder_mem(s->enc, ns, m);
	maybe_flush(s);
}

/* Before an event at ns that does not go through the folding stage: the
 * held events go out, then the syscalls up to ns. */
static inline void fold_flush(struct stream *s, uint64_t ns)
{
	if (!s->fold)
		return;
	memfold_flush(s->fold, false);
	if (ns >= s->sys_next)
		drainsys_emit(s, ns);
}

static inline void put_func(struct stream *s, uint64_t ns, uint8_t type, uint64_t addr)
{
	if (s->fold) {
		memfold_func(s->fold, ns, type, addr);
		return;
	}
	if (type == LP_EV_ENTRY)
		encoder_entry(s->enc, ns, addr);
	else
		encoder_exit(s->enc, ns, addr);
	maybe_flush(s);
}

static inline void put_mem(struct stream *s, uint64_t ns, const struct memevent *m)
{
	if (s->fold) {
		memfold_mem(s->fold, ns, m);
		return;
	}
	encoder_mem(s->enc, ns, m);
	maybe_flush(s);
}

/* A sync event: with a folding stage, held in order with the events it
 * holds (they pass it as markers); past the filter stage, like heap
 * operations, straight to the encoder. */
static inline void put_sync(struct stream *s, uint64_t ns, const struct syncevent *y)
{
	if (s->fold) {
		if (sync_hold_room(s)) {
			s->sync_held[(s->sync_head + s->sync_n) & (s->sync_cap - 1)] = *y;
			s->sync_n++;
			memfold_func(s->fold, ns, LP_EV_SYNC, 0);
			return;
		}
		fold_flush(s, ns);
	}
	encoder_sync(s->enc, ns, y);
	maybe_flush(s);
}

/* Holds an ENTRY or EXIT counter event for the folding stage, which gives
 * it back in its place (fold_sink).  False when there is no room (the
 * caller writes it after flushing the stage). */
static bool ctr_hold(struct stream *s, uint64_t ns, const struct ctrevent *c)
{
	struct drain_ctrfifo *q = s->ctr_fifo;
	struct drain_ctrheld *h;

	if (c->kind != LP_CTR_ENTRY && c->kind != LP_CTR_EXIT)
		return false;
	if (!q && !(q = s->ctr_fifo = calloc(1, sizeof(*q))))
		return false;
	if (q->tail - q->head == q->cap) {
		uint32_t cap = q->cap ? 2 * q->cap : 256, i;
		struct drain_ctrheld *a;

		if (cap > DRAIN_CTR_FIFO_MAX || !(a = malloc(cap * sizeof(*a))))
			return false;
		for (i = 0; i < q->tail - q->head; i++)
			a[i] = q->a[(q->head + i) & (q->cap - 1)];
		free(q->a);
		q->a = a;
		q->tail -= q->head;
		q->head = 0;
		q->cap = cap;
	}
	h = &q->a[q->tail++ & (q->cap - 1)];
	h->fn = c->fn;
	h->kind = c->kind;
	h->n = (uint8_t)c->n;
	memcpy(h->values, c->values, c->n * sizeof(c->values[0]));
	memfold_func(s->fold, ns, LP_EV_COUNTER, 0);
	return true;
}

static void ctr_fifo_free(struct stream *s)
{
	if (s->ctr_fifo)
		free(s->ctr_fifo->a);
	free(s->ctr_fifo);
	s->ctr_fifo = NULL;
}

/* Keeps the values of an ENTRY counter record whose function event the
 * filter stage may hold back (--min-time), for the frame it pushes next.
 * Returns the tag to give the frame: its stack index + 1, or 0 when the
 * values cannot be kept (too deep, out of memory: the entry is written
 * without them). */
static uint32_t ctr_held_put(struct stream *s, const struct ctrevent *c)
{
	uint32_t i = s->fs.depth;

	if (i >= DRAIN_CTR_HELD_MAX)
		return 0;
	if (i >= s->ctr_held_cap) {
		uint32_t cap = s->ctr_held_cap ? 2 * s->ctr_held_cap : 64;
		struct drain_ctrheld *a;

		while (cap <= i)
			cap *= 2;
		if (cap > DRAIN_CTR_HELD_MAX)
			cap = DRAIN_CTR_HELD_MAX;
		a = realloc(s->ctr_held, cap * sizeof(*a));
		if (!a)
			return 0;
		s->ctr_held = a;
		s->ctr_held_cap = cap;
	}
	s->ctr_held[i].fn = c->fn;
	s->ctr_held[i].kind = c->kind;
	s->ctr_held[i].n = (uint8_t)c->n;
	memcpy(s->ctr_held[i].values, c->values, c->n * sizeof(c->values[0]));
	return i + 1;
}

static void ctr_held_free(struct stream *s)
{
	free(s->ctr_held);
	s->ctr_held = NULL;
	s->ctr_held_cap = 0;
}

/* A counter event of the stream (record --counters), after the function
 * event it belongs to: through the folding stage when there is one (it
 * holds function events back), so that heap blocks fold across it. */
static void put_counter(struct stream *s, uint64_t ns, const struct ctrevent *c)
{
	if (s->fold && ctr_hold(s, ns, c))
		return;
	fold_flush(s, ns);
	encoder_counter(s->enc, ns, c);
	maybe_flush(s);
}

/* The pairing shared by the folding stages of image's streams, made when
 * new; NULL when memory runs out. */
static struct memfold_proc *foldproc_get(struct drain *d, uint32_t image)
{
	struct foldproc *n;
	size_t i;

	for (i = 0; i < d->nfoldprocs; i++)
		if (d->foldprocs[i].image == image)
			return d->foldprocs[i].p;
	if (d->nfoldprocs == d->foldprocs_cap) {
		size_t cap = d->foldprocs_cap ? 2 * d->foldprocs_cap : 16;

		n = realloc(d->foldprocs, cap * sizeof(*n));
		if (!n)
			return NULL;
		d->foldprocs = n;
		d->foldprocs_cap = cap;
	}
	n = &d->foldprocs[d->nfoldprocs];
	n->image = image;
	n->p = memfold_proc_new(d->cfg.mem_fold_ns);
	if (!n->p)
		return NULL;
	d->nfoldprocs++;
	return n->p;
}

/* Frees the pairings without stages (their processes' streams closed). */
static void foldproc_sweep(struct drain *d)
{
	size_t i, j;

	for (i = j = 0; i < d->nfoldprocs; i++) {
		if (!memfold_proc_stages(d->foldprocs[i].p))
			memfold_proc_free(d->foldprocs[i].p);
		else
			d->foldprocs[j++] = d->foldprocs[i];
	}
	d->nfoldprocs = j;
}

/* Sink of the record-time filter stage: straight into the encoder. */
static void sink_entry(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct stream *s = ctx;

	if (flags & FILTER_INHERITED)
		return; /* already written in the FORK task event */
	put_func(s, ns, LP_EV_ENTRY, addr);
	if (s->ctr_pending && s->ctr_pending_type == LP_EV_ENTRY && s->ctr_pending->fn == addr) {
		put_counter(s, ns, s->ctr_pending);
		s->ctr_pending = NULL;
	} else if (s->fs.sink_tag && s->fs.sink_tag <= s->ctr_held_cap && s->ctr_held[s->fs.sink_tag - 1].fn == addr) {
		/* an entry held back for --min-time: its values, kept */
		const struct drain_ctrheld *h = &s->ctr_held[s->fs.sink_tag - 1];
		struct ctrevent c;

		memset(&c, 0, sizeof(c));
		c.kind = LP_CTR_ENTRY;
		c.fn = addr;
		c.n = h->n;
		memcpy(c.values, h->values, c.n * sizeof(c.values[0]));
		put_counter(s, ns, &c);
	}
}

static void sink_exit(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns, unsigned flags)
{
	struct stream *s = ctx;

	put_func(s, ns, LP_EV_EXIT, addr);
	if (s->ctr_pending && s->ctr_pending_type == LP_EV_EXIT && s->ctr_pending->fn == addr &&
	    !(flags & FILTER_UNFINISHED)) {
		put_counter(s, ns, s->ctr_pending);
		s->ctr_pending = NULL;
	}
}

/* Calls deeper than the filter stage tracks: lost events in the trace
 * (not the ring's: lost_reported counts those). */
static void sink_lost(void *ctx, uint64_t ns, uint64_t events)
{
	struct stream *s = ctx;

	s->d->stats.lost += events;
	encoder_lost(s->enc, ns, events);
	maybe_flush(s);
}

static void notify_init(struct drain *d)
{
	const uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_CLOSE_WRITE | IN_MODIFY | IN_ONLYDIR;
	char self[64];

	d->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (d->notify_fd < 0)
		return;
	/* the directory we hold, whatever its name points to now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", d->dirfd);
	if (inotify_add_watch(d->notify_fd, self, mask) < 0 &&
	    inotify_add_watch(d->notify_fd, d->dir, mask | IN_DONT_FOLLOW) < 0) {
		close(d->notify_fd);
		d->notify_fd = -1;
	}
}

/* True when the file open as fd may be read and written by the drain: a
 * regular file with one name, of the session's owner (or of ours, for
 * the filter file): never a link to, nor a second name of, a file that
 * someone else planted in the directory. */
static bool file_trusted(const struct drain *d, int fd, struct stat *st, bool ours_too)
{
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_nlink != 1)
		return false;
	return st->st_uid == d->owner || (ours_too && st->st_uid == geteuid());
}

static int write_control(struct drain *d)
{
	struct lp_control c;
	void *map;
	int fd;

	memset(&c, 0, sizeof(c));
	c.magic = LP_CONTROL_MAGIC;
	c.version = LP_SHM_VERSION;
	c.clock = d->cfg.clock;
	c.ring_chunks = d->cfg.ring_chunks;
	c.chunk_slots = d->cfg.chunk_slots;
	c.flags = LP_CTL_ENABLED;
	c.next_image = 1;
	c.ring_full = d->cfg.ring_full;
	c.drain_pid = (uint32_t)getpid();
	c.stall_ms = d->cfg.stall_ms ? d->cfg.stall_ms : LP_STALL_MS_DEFAULT;
	fd = openat(d->dirfd, LP_CONTROL_NAME, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, &c, sizeof(c)) != (ssize_t)sizeof(c)) {
		int e = errno ? -errno : -EIO;

		close(fd);
		return e;
	}
	map = mmap(NULL, sizeof(c), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	d->control = map;
	return 0;
}

struct drain *drain_new(const char *dir, const struct drain_config *cfg, const struct drain_ops *ops)
{
	struct drain *d;
	int r;

	if (strlen(dir) >= DRAIN_PATH_MAX - 64 || !ops->chunk) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->notify_fd = -1;
	d->dirfd = -1;
	d->clock = malloc(sizeof(*d->clock));
	if (!d->clock) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	strcpy(d->dir, dir);
	d->cfg = *cfg;
	d->ops = *ops;
	d->owner = geteuid();
	clocksync_init(d->clock, cfg->clock);
	clocksync_sample(d->clock, 1);
	if (mkdir(dir, 0700)) {
		r = -errno;
		goto fail;
	}
	/* from now on through the directory we made, never through its name */
	d->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dirfd < 0 || !sessiondir_check_fd(d->dirfd, d->owner, false)) {
		r = d->dirfd < 0 ? -errno : -EPERM;
		rmdir(dir);
		goto fail;
	}
	r = write_control(d);
	if (r) {
		rmdir(dir);
		goto fail;
	}
	/* without its table (no room) the threads count in the control block */
	drainloss_create(d);
	notify_init(d);
	return d;
fail:
	if (d->dirfd >= 0)
		close(d->dirfd);
	free(d->clock);
	free(d);
	errno = -r;
	return NULL;
}

/* Maps the control block of an existing session directory, open as dirfd
 * (the drain keeps a duplicate), and takes the ring geometry and clock from
 * it (drain_attach, drain_salvage). */
static struct drain *session_map(int dirfd, const char *dir, uid_t owner, const struct drain_ops *ops)
{
	struct drain probe = { .owner = owner };
	struct lp_control *c;
	struct drain *d;
	struct stat st;
	void *map;
	int fd, e;

	if (strlen(dir) >= DRAIN_PATH_MAX - 64 || !ops->chunk) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = openat(dirfd, LP_CONTROL_NAME, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (!file_trusted(&probe, fd, &st, false)) {
		close(fd);
		errno = EPERM;
		return NULL;
	}
	if ((size_t)st.st_size < sizeof(*c)) {
		close(fd);
		errno = EPROTO;
		return NULL;
	}
	map = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	e = errno;
	close(fd);
	if (map == MAP_FAILED) {
		errno = e;
		return NULL;
	}
	c = map;
	if (c->magic != LP_CONTROL_MAGIC || c->version != LP_SHM_VERSION || c->ring_chunks < 2 ||
	    c->ring_chunks > 4096 || (c->ring_chunks & (c->ring_chunks - 1)) || c->chunk_slots < 64 ||
	    c->chunk_slots > (1u << 20) || (c->chunk_slots & (c->chunk_slots - 1)) || c->clock > LP_CLOCK_CNTVCT) {
		munmap(map, sizeof(*c));
		errno = EPROTO;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (d) {
		d->notify_fd = -1;
		d->clock = malloc(sizeof(*d->clock));
		d->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	}
	if (!d || !d->clock || d->dirfd < 0) {
		e = d && d->clock ? errno : ENOMEM;
		if (d) {
			free(d->clock);
			if (d->dirfd >= 0)
				close(d->dirfd);
		}
		free(d);
		munmap(map, sizeof(*c));
		errno = e;
		return NULL;
	}
	strcpy(d->dir, dir);
	d->owner = owner;
	d->cfg.ring_chunks = c->ring_chunks;
	d->cfg.chunk_slots = c->chunk_slots;
	d->cfg.clock = c->clock;
	d->cfg.ring_full = c->ring_full;
	d->ops = *ops;
	d->control = c;
	clocksync_init(d->clock, c->clock);
	return d;
}

struct drain *drain_attach(int dirfd, const char *dir, uid_t owner, const struct drain_ops *ops)
{
	struct drain *d = session_map(dirfd, dir, owner, ops);

	if (!d)
		return NULL;
	d->attached = true;
	clocksync_sample(d->clock, 1);
	drainloss_attach(d);
	notify_init(d);
	return d;
}

struct drain *drain_salvage(int dirfd, const struct drain_ops *ops)
{
	char dir[64];
	struct drain *d;

	/* every name below is looked up in the directory the caller checked,
	 * whatever happens to its path meanwhile */
	snprintf(dir, sizeof(dir), "/proc/self/fd/%d", dirfd);
	d = session_map(dirfd, dir, geteuid(), ops);
	if (!d)
		return NULL;
	d->salvage = true;
	drain_set_enabled(d, false);
	/* the clock is sampled by the first poll, after drain_clock_import */
	return d;
}

int drain_clock_import(struct drain *d, const uint8_t *payload, size_t len)
{
	return clocksync_import(d->clock, payload, len);
}

void drain_set_chunk_bytes(struct drain *d, uint32_t bytes)
{
	size_t i;

	d->cfg.chunk_bytes = bytes;
	for (i = 0; i < d->nstreams; i++)
		encoder_set_target(d->streams[i]->enc, bytes ? bytes : LP_CHUNK_TARGET_PAYLOAD);
	if (d->sys)
		drainsys_set_chunk_bytes(d, bytes);
}

void drain_set_enabled(struct drain *d, bool on)
{
	_Atomic uint32_t *flags = (_Atomic uint32_t *)&d->control->flags;

	if (on) {
		/* a new epoch before the flag: whoever sees tracing on sees it */
		atomic_fetch_add_explicit((_Atomic uint32_t *)&d->control->epoch, 1, memory_order_release);
		atomic_fetch_or_explicit(flags, LP_CTL_ENABLED, memory_order_release);
	} else {
		atomic_fetch_and_explicit(flags, ~(uint32_t)LP_CTL_ENABLED, memory_order_release);
	}
}

bool drain_exited_status(struct drain *d, uint32_t pid, int *status)
{
	size_t i;

	for (i = 0; i < d->nexits; i++) {
		if ((uint32_t)d->exits[i].pid == pid) {
			*status = d->exits[i].status;
			return true;
		}
	}
	return false;
}

/* A ring's chunks, or slots per chunk, n: the session's (cfg), or a smaller
 * power of two down to min (the runtime makes a smaller ring when space is
 * short). */
static bool ring_geometry_ok(uint32_t n, uint32_t cfg, uint32_t min)
{
	return n && !(n & (n - 1)) && n <= cfg && (n >= min || n == cfg);
}

/* A ring just mapped: its name goes (the mapping keeps it alive, and a
 * crash leaves nothing behind), or with keep_rings stays until the stream
 * closes, renamed so that a scan does not take it for a new ring. */
static void ring_name_keep(struct drain *d, struct stream *s, const char *name)
{
	size_t plen = strlen(LP_RING_PREFIX);

	if (d->salvage && strlen(name) < sizeof(s->kept)) {
		strcpy(s->kept, name);
		return;
	}
	if (d->cfg.keep_rings && strlen(name) < sizeof(s->kept) && !strncmp(name, LP_RING_PREFIX, plen)) {
		snprintf(s->kept, sizeof(s->kept), "%s%s", LP_RING_DRAINED_PREFIX, name + plen);
		if (!renameat(d->dirfd, name, d->dirfd, s->kept))
			return;
		s->kept[0] = '\0';
	}
	unlinkat(d->dirfd, name, 0);
}

/* Maps a ring file the runtime finished setting up (see ring_name_keep). */
static int stream_open(struct drain *d, const char *name)
{
	struct lp_ring_header *h;
	struct stream *s;
	struct stat st;
	size_t expect;
	void *map;
	int fd, status;

	fd = openat(d->dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			unlinkat(d->dirfd, name, 0); /* a link: never a ring */
		return 0;
	}
	if (!file_trusted(d, fd, &st, false)) {
		close(fd);
		unlinkat(d->dirfd, name, 0);
		return 0;
	}
	if ((size_t)st.st_size < 4096) {
		close(fd);
		return 0; /* not sized yet: next poll */
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 0;
	h = map;
	if (atomic_load_explicit((_Atomic uint32_t *)&h->magic, memory_order_acquire) != LP_RING_MAGIC) {
		munmap(map, (size_t)st.st_size);
		return 0; /* not ready yet */
	}
	expect = (size_t)h->header_size + (size_t)(h->ring_chunks + 1) * h->chunk_slots * sizeof(struct lp_slot);
	if (h->version == LP_SHM_VERSION && h->header_size >= 256 && (size_t)st.st_size < expect &&
	    ring_geometry_ok(h->ring_chunks, d->cfg.ring_chunks, LP_RING_MIN_CHUNKS) &&
	    ring_geometry_ok(h->chunk_slots, d->cfg.chunk_slots, LP_RING_MIN_CHUNK_SLOTS)) {
		/* sized before its header was read: the runtime reserves the
		 * header first and grows the file to its size after (see
		 * runtime/ringfile.c); the whole ring is there at the next look */
		munmap(map, (size_t)st.st_size);
		return 0;
	}
	if (h->version != LP_SHM_VERSION || h->slot_size != sizeof(struct lp_slot) || h->header_size < 256 ||
	    !ring_geometry_ok(h->ring_chunks, d->cfg.ring_chunks, LP_RING_MIN_CHUNKS) ||
	    !ring_geometry_ok(h->chunk_slots, d->cfg.chunk_slots, LP_RING_MIN_CHUNK_SLOTS) ||
	    expect != (size_t)st.st_size || d->nstreams >= DRAIN_STREAMS_MAX) {
		munmap(map, (size_t)st.st_size);
		unlinkat(d->dirfd, name, 0);
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		munmap(map, (size_t)st.st_size);
		return -ENOMEM;
	}
	/* the thread may have counted it lost already (see lp_ring_taken) */
	if (!atomic_compare_exchange_strong((_Atomic uint32_t *)&h->taken, &(uint32_t){ LP_RING_UNTAKEN },
	                                    LP_RING_TAKEN) &&
	    h->taken != LP_RING_TAKEN) {
		free(s);
		munmap(map, (size_t)st.st_size);
		unlinkat(d->dirfd, name, 0);
		return 0;
	}
	s->enc = malloc(sizeof(*s->enc));
	if (!s->enc) {
		free(s);
		munmap(map, (size_t)st.st_size);
		return -ENOMEM;
	}
	if (d->nstreams == d->cap) {
		size_t ncap = d->cap ? 2 * d->cap : 64;
		struct stream **n = realloc(d->streams, ncap * sizeof(*n));

		if (!n) {
			free(s->enc);
			free(s);
			munmap(map, (size_t)st.st_size);
			return -ENOMEM;
		}
		d->streams = n;
		d->cap = ncap;
	}
	s->d = d;
	s->ring = h;
	s->slots = (const struct lp_slot *)((const char *)map + h->header_size);
	s->map_size = (size_t)st.st_size;
	s->ring_slots = h->ring_chunks * h->chunk_slots;
	s->tail = atomic_load_explicit((_Atomic uint32_t *)&h->tail, memory_order_acquire);
	/* a ring another consumer began (killed, or an earlier attach): its
	 * losses written so far are not counted again */
	s->lost_reported = s->lost_flushed =
	    atomic_load_explicit((_Atomic uint64_t *)&h->lost_written, memory_order_relaxed);
	if (d->salvage)
		s->lost_unwritten = atomic_load_explicit((_Atomic uint32_t *)&h->unwritten, memory_order_relaxed);
	s->exit_status = DRAIN_EXIT_NONE;
	s->sys_next = UINT64_MAX;
	encoder_init(s->enc, h->image, h->pid, h->tid);
	if (d->cfg.chunk_bytes)
		encoder_set_target(s->enc, d->cfg.chunk_bytes);
	if (d->ops.filter && !filter_spec_is_empty(d->ops.filter)) {
		struct filter_sink sink = { .ctx = s, .entry = sink_entry, .exit = sink_exit, .lost = sink_lost };

		if (filter_stream_init(&s->fs, d->ops.filter, &sink, h->image)) {
			free(s->enc);
			free(s);
			munmap(map, (size_t)st.st_size);
			return -ENOMEM;
		}
		s->filtered = true;
	}
	if (d->cfg.mem_fold_ns) {
		struct memfold_sink fsink = { .ctx = s, .event = fold_sink };

		struct memfold_proc *fp = foldproc_get(d, h->image);

		s->fold = fp ? memfold_new(fp, &fsink) : NULL;
		if (!s->fold) {
			foldproc_sweep(d);
			if (s->filtered)
				filter_stream_release(&s->fs);
			free(s->enc);
			free(s);
			munmap(map, (size_t)st.st_size);
			return -ENOMEM;
		}
	}
	if (drain_exited_status(d, h->pid, &status)) {
		s->final = true;
		if (h->tid == h->pid)
			s->exit_status = status;
	}
	d->streams[d->nstreams++] = s;
	d->stats.streams++;
	if (d->sys)
		drainsys_bind(d, s);
	if (!s->final)
		drainwatch_stream(d, (pid_t)h->pid);
	ring_name_keep(d, s, name);
	return 0;
}

/* True when the directory may hold a new ring: something changed in it
 * (inotify), a ring was not ready at the last scan, or a while has passed
 * (a safety net).  Without inotify, always. */
static bool scan_needed(struct drain *d)
{
	char buf[4096] __attribute__((aligned(8)));
	bool changed = false;
	uint64_t now;

	/* a killed recorder's session gets no new ring: tracing is off */
	if (d->salvage) {
		changed = !d->salvage_scanned;
		d->salvage_scanned = true;
		return changed;
	}
	if (d->notify_fd < 0)
		return true;
	while (read(d->notify_fd, buf, sizeof(buf)) > 0)
		changed = true;
	now = clocksync_monotonic_ns();
	if (changed || d->scan_pending || now - d->last_scan >= DRAIN_RESCAN_NS) {
		d->last_scan = now;
		return true;
	}
	return false;
}

/* Moves the main threads' rings among streams [first, n) before the
 * others, keeping their order.  An image's code mappings come in its main
 * thread's ring (opened first, at the start), and a filtered recording
 * names functions by them: when a scan finds an image's rings together
 * (readdir lists tmpfs newest first), the main thread's are read first. */
static void main_threads_first(struct drain *d, size_t first)
{
	size_t i, k = first;

	for (i = first; i < d->nstreams; i++) {
		struct stream *s = d->streams[i];

		if (s->ring->tid == s->ring->pid) {
			memmove(&d->streams[k + 1], &d->streams[k], (i - k) * sizeof(*d->streams));
			d->streams[k++] = s;
		}
	}
}

static int scan_dir(struct drain *d)
{
	size_t prefix = strlen(LP_RING_PREFIX);
	size_t before, first;
	struct dirent *e;
	DIR *dir;
	int r = 0, fd;

	if (!scan_needed(d))
		return 0;
	fd = openat(d->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	d->scan_pending = false;
	first = d->nstreams;
	while ((e = readdir(dir)) && !r) {
		/* a salvage takes the rings the killed drain had opened too */
		if (strncmp(e->d_name, LP_RING_PREFIX, prefix) &&
		    (!d->salvage || strncmp(e->d_name, LP_RING_DRAINED_PREFIX, strlen(LP_RING_DRAINED_PREFIX))))
			continue;
		before = d->nstreams;
		r = stream_open(d, e->d_name);
		/* a ring not set up yet stays in the directory: look again */
		if (!r && d->nstreams == before)
			d->scan_pending = true;
	}
	closedir(dir);
	main_threads_first(d, first);
	return r;
}

static void process_exited(struct drain *d, pid_t pid, int status);

/* A patched function's arguments (LP_EXT_ARGS): the pieces of memory
 * that do not fit are left out. */
static void decode_args(struct stream *s, uint64_t ns, const uint8_t *p, uint32_t len)
{
	struct lp_ext_args h;
	struct libcsig_args a;
	size_t at = sizeof(h);

	memcpy(&h, p, sizeof(h));
	memset(&a, 0, sizeof(a));
	a.n = h.n < LP_ARGS_MAX ? h.n : LP_ARGS_MAX;
	memcpy(a.words, h.words, sizeof(a.words));
	for (uint32_t i = 0; i < h.nmem && a.nmem < LP_ARGS_MAX && at + 2 <= len; i++) {
		struct libcsig_mem *m = &a.mem[a.nmem];

		m->index = p[at] & ~LP_ARGS_MEM_CUT;
		m->cut = (p[at] & LP_ARGS_MEM_CUT) != 0;
		m->len = p[at + 1];
		m->bytes = p + at + 2;
		if (at + 2 + m->len > len || m->len > LP_ARGS_MEM_MAX || m->index >= a.n)
			break;
		at += 2 + m->len;
		a.nmem++;
	}
	encoder_args(s->enc, ns, h.fn, &a);
}

static void decode_ext(struct stream *s, uint64_t ns, uint32_t ext, const uint8_t *p, uint32_t len)
{
	if (ext != LP_EXT_MEM && ext != LP_EXT_REAPED)
		fold_flush(s, ns);
	if (ext == LP_EXT_MAP && len >= sizeof(struct lp_ext_map)) {
		struct lp_ext_map m;
		struct lp_event ev;

		memcpy(&m, p, sizeof(m));
		if (sizeof(m) + (size_t)m.build_id_len + m.path_len > len || m.start > m.end)
			return;
		memset(&ev, 0, sizeof(ev));
		ev.type = LP_EV_MAP;
		ev.time = ns;
		ev.base = m.base;
		ev.start = m.start;
		ev.end = m.end;
		ev.offset = m.offset;
		ev.build_id = p + sizeof(m);
		ev.build_id_len = m.build_id_len;
		ev.str = (const char *)p + sizeof(m) + m.build_id_len;
		ev.str_len = m.path_len;
		if (s->d->ops.map)
			s->d->ops.map(s->d->ops.ctx, s->ring->image, &ev);
		encoder_map(s->enc, ns, ev.base, ev.start, ev.end, ev.offset, ev.build_id, ev.build_id_len, ev.str,
		            ev.str_len);
	} else if (ext == LP_EXT_UNMAP && len >= sizeof(struct lp_ext_unmap)) {
		struct lp_ext_unmap u;

		memcpy(&u, p, sizeof(u));
		if (u.start >= u.end)
			return;
		if (s->d->ops.unmap)
			s->d->ops.unmap(s->d->ops.ctx, s->ring->image, ns, u.start, u.end);
		encoder_unmap(s->enc, ns, u.start, u.end);
	} else if (ext == LP_EXT_ARGS && len >= sizeof(struct lp_ext_args)) {
		decode_args(s, ns, p, len);
	} else if (ext == LP_EXT_RETVAL && len >= sizeof(struct lp_ext_retval)) {
		struct lp_ext_retval r;

		memcpy(&r, p, sizeof(r));
		encoder_retval(s->enc, ns, r.fn, r.value);
	} else if (ext == LP_EXT_PROBE && len >= sizeof(uint64_t)) {
		uint64_t a;

		memcpy(&a, p, sizeof(a));
		encoder_probe(s->enc, ns, a);
	} else if (ext == LP_EXT_CALL && len >= sizeof(struct lp_ext_call)) {
		struct lp_ext_call c;
		uint64_t entry_ns;

		memcpy(&c, p, sizeof(c));
		entry_ns = clocksync_ns(s->d->clock, c.entry);
		encoder_call(s->enc, ns, c.addr, ns > entry_ns ? ns - entry_ns : 0);
	} else if (ext == LP_EXT_MEM && len >= sizeof(struct lp_ext_mem)) {
		struct lp_ext_mem r;
		struct memevent m;

		memcpy(&r, p, sizeof(r));
		if (r.op < LP_MEM_MALLOC || r.op > LP_MEM_BASELINE || r.op == LP_MEM_FOLD)
			return; /* FOLD is the drain's own, never the runtime's */
		memset(&m, 0, sizeof(m));
		m.op = r.op;
		m.flags = r.flags;
		m.ptr = r.ptr;
		m.size = r.size;
		m.old = r.old;
		m.stack = r.stack;
		put_mem(s, ns, &m);
	} else if (ext == LP_EXT_STACK && len >= sizeof(struct lp_ext_stack)) {
		struct lp_ext_stack h;
		uint64_t ips[MEMEVENT_STACK_MAX];

		memcpy(&h, p, sizeof(h));
		if (!h.id || h.n > MEMEVENT_STACK_MAX || sizeof(h) + (size_t)h.n * 8 > len)
			return;
		memcpy(ips, p + sizeof(h), (size_t)h.n * 8);
		encoder_stack(s->enc, ns, h.id, ips, h.n);
	} else if (ext == LP_EXT_REAPED && len >= sizeof(struct lp_ext_reaped)) {
		struct lp_ext_reaped r;
		struct drain *d = s->d;

		memcpy(&r, p, sizeof(r));
		if (!r.pid) {
			;
		} else if (d->nreaped < DRAIN_REAPED_MAX) {
			d->reaped[d->nreaped].pid = (pid_t)r.pid;
			d->reaped[d->nreaped].status = (int)r.status;
			d->nreaped++;
		} else {
			process_exited(d, (pid_t)r.pid, (int)r.status); /* without a rescan */
		}
	} else if (ext == LP_EXT_TASK && len >= sizeof(struct lp_ext_task)) {
		struct lp_ext_task t;
		uint64_t frames[256] = { 0 };
		uint32_t i;

		memcpy(&t, p, sizeof(t));
		if (t.nframes > 256 || sizeof(t) + (size_t)t.name_len + (size_t)t.nframes * 8 > len)
			return;
		for (i = 0; i < t.nframes; i++)
			memcpy(&frames[i], p + sizeof(t) + t.name_len + 8 * i, 8);
		encoder_task(s->enc, ns, t.kind, t.arg, (const char *)p + sizeof(t), t.name_len, frames, t.nframes);
		if (s->filtered)
			for (i = 0; i < t.nframes; i++)
				filter_inherit(&s->fs, ns, frames[i]);
	}
	maybe_flush(s);
}

/* The clock points taken so far go out as a CLOCK chunk now and then,
 * so that a long session keeps them all (a live host sees them too). */
static void emit_clock(struct drain *d)
{
	uint8_t buf[16384];
	size_t len;

	while ((len = clocksync_export(d->clock, buf, sizeof(buf))) > 1)
		drain_emit(d, LP_CHUNK_CLOCK, buf, len, 0);
}

/* How far ahead of the slot being encoded its cache lines are asked for. */
#define DRAIN_PREFETCH_SLOTS 32u

/* The common case of an unfiltered stream: a run of function entries and
 * exits, encoded straight from the ring.  Does what put_func and
 * encoder_put_func do for each slot, with the encoder's cursor, the clock
 * segment and the chunk's address table held in locals: stores of payload
 * bytes may alias any field, so the general path reloads them all after
 * every byte.  Stops before a slot of another type, one at or after
 * s->sys_next (its syscalls go first), one outside the cached clock
 * segment, and after the event that fills the payload.  Returns the slots
 * consumed, from at most n contiguous ones at sl; 0 when the general path
 * must take the first. */
static uint32_t consume_funcs(struct stream *s, const struct lp_slot *sl, uint32_t n)
{
	struct encoder *e = s->enc;
	const struct clocksync *cs = s->d->clock;
	const uint64_t raw0 = cs->seg_raw0, raw1 = cs->seg_raw1, ns0 = cs->seg_ns0;
	const uint64_t mult = cs->seg_mult, draw = cs->seg_draw, dns = cs->seg_dns, frac = cs->seg_frac;
	const bool convert = cs->kind != LP_CLOCK_MONOTONIC;
	const uint64_t stop_ns = s->sys_next;
	const uint32_t gen = e->gen;
	uint8_t *const buf = e->buf, *p = buf + e->len, *const full = buf + e->target;
	uint64_t last_ns = e->last_ns;
	uint32_t nrefs = e->nrefs, i;

	if (!e->len)
		return 0; /* the payload's header comes first */
	for (i = 0; i < n; i++) {
		uint64_t word = sl[i].word, raw = sl[i].time, ns, delta, addr;
		uint32_t type = (uint32_t)(word >> LP_SLOT_TYPE_SHIFT), h, idx;

		/* the slots were just written on another CPU: ask for the
		 * cache lines ahead while these are encoded (the encoding
		 * waited on every new line without it) */
		if (i + DRAIN_PREFETCH_SLOTS < n)
			__builtin_prefetch(&sl[i + DRAIN_PREFETCH_SLOTS]);
		if (type != LP_RAW_ENTRY && type != LP_RAW_EXIT)
			break;
		if (convert) {
			if (raw < raw0 || raw >= raw1)
				break;
			ns = ns0 + clocksync_seg_quotient(raw - raw0, mult, draw, dns, frac);
		} else {
			ns = raw;
		}
		if (ns >= stop_ns)
			break;
		addr = word & LP_SLOT_PAYLOAD_MASK;
		delta = ns > last_ns ? ns - last_ns : 0;
		last_ns += delta;
		h = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 51) & (ENCODER_HASH - 1);
		while (e->gens[h] == gen && e->keys[h] != addr)
			h = (h + 1) & (ENCODER_HASH - 1);
		if (e->gens[h] != gen) {
			e->gens[h] = gen;
			e->keys[h] = addr;
			e->vals[h] = nrefs++;
			*p++ = (uint8_t)(type | LP_REF_NEW << 4);
			p += varint_put(p, delta);
			p += varint_put(p, addr);
		} else if ((idx = e->vals[h]) <= LP_REF_INLINE_MAX) {
			*p++ = (uint8_t)(type | idx << 4);
			p += varint_put(p, delta);
		} else {
			*p++ = (uint8_t)(type | LP_REF_INDEX << 4);
			p += varint_put(p, delta);
			p += varint_put(p, idx);
		}
		if (p >= full || nrefs >= ENCODER_REFS_MAX) {
			i++;
			break;
		}
	}
	e->len = (size_t)(p - buf);
	e->last_ns = last_ns;
	e->events += i;
	e->nrefs = nrefs;
	return i;
}

/* An LP_RAW_COUNTER record at the stream's tail (record --counters): an
 * ENTRY or EXIT is the function event, as LP_RAW_ENTRY / LP_RAW_EXIT,
 * through the filter and folding stages, followed by its counter event at
 * the same time (an entry the filter stage holds back for --min-time
 * keeps its values in s->ctr_held until the stage hands it on); the other
 * kinds are the counter event alone.  Returns the slots it takes, 1 for
 * a broken record (skipped), 0 when its slots are not all published. */
static uint32_t consume_counter(struct stream *s, uint64_t ns, uint64_t payload, uint32_t head)
{
	uint32_t kind = LP_RAW_CTR_KIND(payload), nv = LP_RAW_CTR_N(payload), words, body, i;
	uint32_t at = (s->tail + 1) & (s->ring_slots - 1);
	uint64_t arg = LP_RAW_CTR_FN(payload);
	bool func = kind == LP_CTR_ENTRY || kind == LP_CTR_EXIT;
	struct ctrevent c;
	uint64_t w[3 * LP_COUNTERS_MAX + 1];

	words = nv * (!func && (arg & LP_CTR_HAS_TIMES) ? 3 : 1);
	body = (words + 1) / 2;
	if (kind < LP_CTR_BEGIN || kind > LP_CTR_SAMPLE || nv > LP_COUNTERS_MAX || body + 1 > s->ring->chunk_slots ||
	    at + body > s->ring_slots)
		return 1;
	if ((uint32_t)(head - s->tail) < body + 1)
		return 0;
	for (i = 0; i < body; i++) {
		w[2 * i] = s->slots[at + i].time;
		w[2 * i + 1] = s->slots[at + i].word;
	}
	memset(&c, 0, sizeof(c));
	c.kind = (uint8_t)kind;
	c.n = nv;
	memcpy(c.values, w, nv * sizeof(w[0]));
	if (!func) {
		c.flags = (uint32_t)(arg & (LP_CTR_HAS_TIMES | LP_CTR_SCALED));
		for (i = 0; (c.flags & LP_CTR_HAS_TIMES) && i < nv; i++) {
			c.enabled[i] = w[nv + 2 * i];
			c.running[i] = w[nv + 2 * i + 1];
		}
		put_counter(s, ns, &c);
		return 1 + body;
	}
	c.fn = arg;
	if (s->filtered) {
		s->ctr_pending = &c;
		s->ctr_pending_type = kind == LP_CTR_ENTRY ? LP_EV_ENTRY : LP_EV_EXIT;
		if (kind == LP_CTR_ENTRY)
			filter_entry_tag(&s->fs, ns, arg, s->fs.spec->min_ns ? ctr_held_put(s, &c) : 0);
		else
			filter_exit(&s->fs, ns, arg);
		s->ctr_pending = NULL;
	} else {
		put_func(s, ns, kind == LP_CTR_ENTRY ? LP_EV_ENTRY : LP_EV_EXIT, arg);
		put_counter(s, ns, &c);
	}
	return 1 + body;
}

/* Consumes slots [s->tail, head) of one ring. */
static uint32_t stream_consume(struct stream *s, uint32_t head)
{
	struct clocksync *cs = s->d->clock;
	uint32_t mask = s->ring_slots - 1, n = 0;

	while (s->tail != head) {
		if (!s->filtered && !s->fold) {
			uint32_t at = s->tail & mask, run = head - s->tail;

			if (run > s->ring_slots - at)
				run = s->ring_slots - at;
			run = consume_funcs(s, &s->slots[at], run);
			if (run) {
				s->tail += run;
				n += run;
				maybe_flush(s);
				continue;
			}
		}
		const struct lp_slot *sl = &s->slots[s->tail & mask];
		uint64_t word, payload;

		/* the slots were just written on another CPU: ask for the
		 * cache lines a few slots ahead while this one is encoded */
		__builtin_prefetch(&s->slots[(s->tail + 16) & mask]);
		word = sl->word;
		payload = word & LP_SLOT_PAYLOAD_MASK;
		uint32_t type = (uint32_t)(word >> LP_SLOT_TYPE_SHIFT), step = 1;
		uint64_t ns = clocksync_ns(cs, sl->time);

		if (__builtin_expect(!s->first_ns, 0) && type != LP_RAW_PAD)
			s->first_ns = ns;
		/* the thread's syscalls before this event come first (with a
		 * folding stage, as its events come out of it) */
		if (__builtin_expect(ns >= s->sys_next, 0) && type != LP_RAW_PAD && !s->fold)
			drainsys_emit(s, ns);

		switch (type) {
		case LP_RAW_ENTRY:
			if (s->filtered)
				filter_entry(&s->fs, ns, payload);
			else
				put_func(s, ns, LP_EV_ENTRY, payload);
			break;
		case LP_RAW_EXIT:
			if (s->filtered)
				filter_exit(&s->fs, ns, payload);
			else
				put_func(s, ns, LP_EV_EXIT, payload);
			break;
		case LP_RAW_LOST:
			fold_flush(s, ns);
			s->lost_records++;
			s->lost_reported += payload;
			s->d->stats.lost += payload;
			encoder_lost(s->enc, ns, payload);
			maybe_flush(s);
			break;
		case LP_RAW_LONGJMP:
			if (s->filtered)
				filter_longjmp(&s->fs, ns, payload);
			else if (s->fold)
				memfold_func(s->fold, ns, LP_EV_LONGJMP, payload);
			else
				encoder_longjmp(s->enc, ns, payload);
			break;
		case LP_RAW_PAD:
			step = payload && payload <= s->ring->chunk_slots ? (uint32_t)payload : 1;
			break;
		case LP_RAW_MEM: {
			struct memevent m = { .op = LP_RAW_MEM_OP(payload),
				              .flags = LP_RAW_MEM_FLAGS(payload),
				              .stack = LP_RAW_MEM_STACK(payload) };
			uint32_t at = (s->tail + 1) & mask;

			step = m.op == LP_MEM_REALLOC ? 3 : 2;
			if (at + step - 1 > s->ring_slots || m.op < LP_MEM_MALLOC || m.op >= LP_MEM_FOLD) {
				step = 1; /* a broken record: skip the slot */
				break;
			}
			if ((uint32_t)(head - s->tail) < step)
				return n; /* cannot happen with a sane producer */
			m.ptr = s->slots[at].time;
			m.size = s->slots[at].word;
			if (step == 3)
				m.old = s->slots[at + 1].time;
			put_mem(s, ns, &m);
			break;
		}
		case LP_RAW_SYNC: {
			uint32_t at = (s->tail + 1) & mask;
			struct syncevent y = { .op = LP_RAW_SYNC_OP(payload), .flags = LP_RAW_SYNC_FLAGS(payload) };
			uint64_t begin;

			step = 3;
			if (at + 1 >= s->ring_slots || y.op < LP_SYNC_THREAD || y.op >= LP_SYNC_OPS) {
				step = 1; /* a broken record: skip the slot */
				break;
			}
			if ((uint32_t)(head - s->tail) < step)
				return n; /* cannot happen with a sane producer */
			y.obj = s->slots[at].time;
			begin = s->slots[at].word;
			y.site = s->slots[at + 1].time;
			y.obj2 = s->slots[at + 1].word;
			if (begin) {
				uint64_t begin_ns = clocksync_ns(cs, begin);

				y.wait_ns = ns > begin_ns ? ns - begin_ns : 0;
			}
			put_sync(s, ns, &y);
			break;
		}
		case LP_RAW_COUNTER:
			step = consume_counter(s, ns, payload, head);
			if (!step)
				return n; /* cannot happen with a sane producer */
			break;
		case LP_RAW_EXT: {
			uint32_t len = (uint32_t)(payload & 0xffffffffu);
			uint32_t kind = (uint32_t)(payload >> 32);
			uint32_t body = (len + 15) / 16;

			uint32_t at = (s->tail + 1) & mask;

			if (len > ENCODER_EVENT_MAX || body + 1 > s->ring->chunk_slots || at + body > s->ring_slots)
				break; /* a broken record: skip the slot */
			if ((uint32_t)(head - s->tail) < body + 1)
				return n; /* cannot happen with a sane producer */
			/* read in place: the producer does not touch slots before
			 * the tail we publish */
			decode_ext(s, ns, kind, (const uint8_t *)&s->slots[at], len);
			step = 1 + body;
			break;
		}
		default:
			break;
		}
		s->tail += step;
		n += step;
	}
	return n;
}

/* Salvage: the events the killed drain had taken from the ring but not
 * written are lost, at the point where the stream goes on. */
static void salvage_lost(struct stream *s, uint64_t ns)
{
	encoder_lost(s->enc, ns, s->lost_unwritten);
	s->d->stats.lost += s->lost_unwritten;
	s->lost_unwritten = 0;
	maybe_flush(s);
}

/* The latest event of s's process image in its other streams: those in
 * the drain's list (still open, drained as far as they go, or closed in
 * this poll) and those that closed before while the process went on.
 * Once per process exit: a scan of the streams. */
static uint64_t image_last_ns(const struct stream *s)
{
	uint64_t ns = s->peers_last_ns;
	size_t i;

	for (i = 0; i < s->d->nstreams; i++) {
		const struct stream *o = s->d->streams[i];

		if (o != s && o->enc->image == s->enc->image && o->enc->last_ns > ns)
			ns = o->enc->last_ns;
	}
	return ns;
}

/* s closes while its process goes on (its thread ended): the streams of
 * its image still open remember its last event, for the process's EXIT.
 * Streams closing because their process is gone need not: their siblings
 * close in the same poll and see them in the list. */
static void image_pass_last(struct stream *s)
{
	size_t i;

	if (s->final)
		return;
	for (i = 0; i < s->d->nstreams; i++) {
		struct stream *o = s->d->streams[i];

		if (o != s && !o->closed && o->enc->image == s->enc->image && o->peers_last_ns < s->enc->last_ns)
			o->peers_last_ns = s->enc->last_ns;
	}
}

/* Publishes the stream's tail.  A producer waiting for room (it cannot
 * move head meanwhile) is woken once half the ring is free, or when `last`
 * (the drain has read up to head): woken for every chunk, a producer and
 * the drain sharing a CPU would take turns a chunk at a time. */
static void stream_release(struct stream *s, uint32_t head, bool last)
{
	_Atomic uint32_t *tail = (_Atomic uint32_t *)&s->ring->tail;
	_Atomic uint32_t *waiting = (_Atomic uint32_t *)&s->ring->waiting;

	/* tail before waiting, as the producer sets waiting before it reads
	 * tail (see ring_wait in runtime/thread.c) */
	atomic_store_explicit(tail, s->tail, memory_order_seq_cst);
	/* what a salvage must count lost if we die now (see drain_salvage) */
	if (publishes(s->d))
		atomic_store_explicit((_Atomic uint32_t *)&s->ring->unwritten,
		                      (uint32_t)(s->enc->events - s->lost_records), memory_order_relaxed);
	if (!last && head - s->tail > s->ring_slots / 2)
		return;
	if (atomic_load_explicit(waiting, memory_order_seq_cst)) {
		atomic_store_explicit(waiting, 0, memory_order_relaxed);
		syscall(SYS_futex, (uint32_t *)tail, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

/* Consumes slots [s->tail, head) a chunk at a time, publishing the tail
 * after each: a producer waiting for room goes on as soon as a chunk is
 * free, not after the whole ring has been read. */
static uint32_t stream_drain(struct stream *s, uint32_t head)
{
	uint32_t chunk = s->ring->chunk_slots, n = 0;

	while (s->tail != head) {
		uint32_t limit = (s->tail | (chunk - 1)) + 1, got;

		if ((int32_t)(head - limit) < 0)
			limit = head;
		got = stream_consume(s, limit);
		n += got;
		if (s->tail != limit) {
			stream_release(s, head, true);
			return n; /* a record cut short: cannot happen with a sane producer */
		}
		stream_release(s, head, s->tail == head);
	}
	return n;
}

bool drain_eager(const struct drain *d)
{
	return atomic_load_explicit((_Atomic uint32_t *)&d->control->flags, memory_order_relaxed) & LP_CTL_EAGER;
}

/* The totals of s's process, if the recorder gave them, just before the
 * process's EXIT event. */
static void put_totals(struct stream *s, uint64_t ns)
{
	struct drain *d = s->d;
	size_t i;

	for (i = 0; i < d->nctr_totals; i++) {
		struct drain_ctrtotals *t = d->ctr_totals[i];

		if (t->pid != (pid_t)s->ring->pid)
			continue;
		for (uint32_t k = 0; k < t->n; k++)
			encoder_counter(s->enc, ns, &t->ev[k]);
		free(t);
		d->ctr_totals[i] = d->ctr_totals[--d->nctr_totals];
		return;
	}
}

int drain_counter_totals(struct drain *d, pid_t pid, const struct ctrevent *ev, uint32_t n)
{
	struct drain_ctrtotals *t;

	if (d->nctr_totals == DRAIN_CTR_TOTALS_MAX)
		return -ENOSPC;
	t = malloc(sizeof(*t) + n * sizeof(*ev));
	if (!t)
		return -ENOMEM;
	t->pid = pid;
	t->n = n;
	memcpy(t->ev, ev, n * sizeof(*ev));
	d->ctr_totals[d->nctr_totals++] = t;
	return 0;
}

static void stream_close(struct stream *s)
{
	uint64_t dropped = atomic_load_explicit((_Atomic uint64_t *)&s->ring->dropped, memory_order_acquire);
	uint64_t ns = clocksync_ns(s->d->clock, clocksync_raw_now(s->d->cfg.clock));
	uint32_t state = atomic_load_explicit((_Atomic uint32_t *)&s->ring->state, memory_order_acquire);
	bool exit_event = state != LP_RING_CLOSED && s->exit_status != DRAIN_EXIT_NONE;

	if (s->filtered)
		filter_finish(&s->fs, s->fs.last_ns);
	if (s->fold) {
		struct memfold_stats fst;

		memfold_flush(s->fold, true);
		memfold_get_stats(s->fold, &fst);
		s->d->stats.folded_blocks += fst.blocks;
		s->d->stats.folded_bytes += fst.bytes;
		memfold_free(s->fold);
		s->fold = NULL;
		free(s->sync_held);
		s->sync_held = NULL;
		s->sync_n = s->sync_cap = 0;
		ctr_fifo_free(s);
	}
	if (s->sys)
		drainsys_unbind(s);
	else if (s->sys_waiting)
		drainsys_forget(s);
	/* the thread's end is its last event (the drain's now when it had
	 * none); the process's exit comes after the last event of all its
	 * threads, in whichever stream */
	if (s->enc->last_ns && s->enc->last_ns < ns)
		ns = s->enc->last_ns;
	if (exit_event && image_last_ns(s) > ns)
		ns = image_last_ns(s);
	if (dropped > s->lost_reported) {
		encoder_lost(s->enc, ns, dropped - s->lost_reported);
		s->d->stats.lost += dropped - s->lost_reported;
		s->lost_reported = dropped;
	}
	if (s->lost_unwritten)
		salvage_lost(s, ns);
	s->d->stats.waits += atomic_load_explicit((_Atomic uint64_t *)&s->ring->waits, memory_order_relaxed);
	s->d->stats.wait_ns += atomic_load_explicit((_Atomic uint64_t *)&s->ring->wait_ns, memory_order_relaxed);
	s->d->stats.wait_gave_up += atomic_load_explicit((_Atomic uint64_t *)&s->ring->gave_up, memory_order_relaxed);
	s->d->stats.nospace += atomic_load_explicit((_Atomic uint64_t *)&s->ring->nospace, memory_order_relaxed);
	if (exit_event && state != LP_RING_CLOSED)
		put_totals(s, ns);
	if (state == LP_RING_CLOSED)
		encoder_task(s->enc, ns, LP_TASK_END, 0, NULL, 0, NULL, 0);
	else if (s->exit_status == DRAIN_EXIT_UNKNOWN)
		encoder_task(s->enc, ns, LP_TASK_EXIT, LP_EXIT_STATUS_UNKNOWN, NULL, 0, NULL, 0);
	else if (s->exit_status != DRAIN_EXIT_NONE)
		encoder_task(s->enc, ns, LP_TASK_EXIT, (uint64_t)(uint32_t)s->exit_status, NULL, 0, NULL, 0);
	flush_stream(s);
	image_pass_last(s);
	if (s->filtered)
		filter_stream_release(&s->fs);
	ctr_held_free(s);
	munmap(s->ring, s->map_size);
	s->ring = NULL;
	s->closed = true;
	if (s->kept[0])
		unlinkat(s->d->dirfd, s->kept, 0);
}

long drain_poll(struct drain *d)
{
	uint32_t *heads = NULL;
	long total = 0;
	uint64_t t0;
	size_t i, j;
	int r;

	r = scan_dir(d);
	if (r)
		return r;
	if (d->nstreams) {
		heads = malloc(d->nstreams * sizeof(*heads));
		if (!heads)
			return -ENOMEM;
	}
	/* Load every head, then sample the clock: each slot read below was
	 * written before the sample, so its time converts by interpolation.
	 * Syscall records are collected after the heads: a thread's syscalls
	 * made before a published event are then always among them (t0, taken
	 * before the heads, bounds what may be written without a later ring
	 * event to order against). */
	t0 = clocksync_monotonic_ns();
	for (i = 0; i < d->nstreams; i++)
		heads[i] = atomic_load_explicit((_Atomic uint32_t *)&d->streams[i]->ring->head, memory_order_acquire);
	clocksync_sample(d->clock, 1);
	d->sys_polled = 0;
	/* a source that kept records back is pressure: poll again at once */
	d->pressure = d->ops.collect && d->ops.collect(d->ops.ctx);
	for (i = 0; i < d->nstreams; i++) {
		struct stream *s = d->streams[i];
		uint32_t state = atomic_load_explicit((_Atomic uint32_t *)&s->ring->state, memory_order_acquire);
		uint64_t dropped = atomic_load_explicit((_Atomic uint64_t *)&s->ring->dropped, memory_order_relaxed);
		bool done = state == LP_RING_CLOSED || s->final;

		if ((uint32_t)(heads[i] - s->tail) > s->ring_slots / 4 || dropped != s->dropped_seen)
			d->pressure = true;
		s->dropped_seen = dropped;

		if ((uint32_t)(heads[i] - s->tail) > s->ring_slots)
			heads[i] = s->tail + s->ring_slots; /* a broken producer */
		if (__builtin_expect(s->lost_unwritten && heads[i] != s->tail, 0))
			salvage_lost(s, clocksync_ns(d->clock, s->slots[s->tail & (s->ring_slots - 1)].time));
		total += stream_drain(s, heads[i]);
		s->closing =
		    done && heads[i] == atomic_load_explicit((_Atomic uint32_t *)&s->ring->head, memory_order_acquire);
	}
	free(heads);
	/* producers waiting for room see that the drain is alive */
	atomic_fetch_add_explicit((_Atomic uint64_t *)&d->control->drain_beat, 1, memory_order_release);
	/* every stream has given its events up to t0: the folding stages
	 * pair them across the threads of each process (a quiet stream's
	 * held events age too), before a stream that ended closes */
	for (i = 0; i < d->nfoldprocs; i++)
		memfold_proc_expire(d->foldprocs[i].p, t0);
	/* a thread's older image first: its end hands the thread's later
	 * records to the newer image's stream (drainsys_unbind), which must
	 * still be open */
	for (i = 0; i < d->nstreams; i++)
		if (d->streams[i]->closing && !d->streams[i]->closed && !d->streams[i]->sys_waiting)
			stream_close(d->streams[i]);
	for (i = 0; i < d->nstreams; i++)
		if (d->streams[i]->closing && !d->streams[i]->closed)
			stream_close(d->streams[i]);
	for (i = 0; i < d->nreaped; i++)
		drain_process_exited(d, d->reaped[i].pid, d->reaped[i].status);
	d->nreaped = 0;
	if (t0 - d->last_watch >= DRAIN_RESCAN_NS) {
		drainwatch_check(d, false);
		drainloss_poll(d, false);
		d->last_watch = t0;
	}
	if (d->sys)
		drainsys_after_poll(d, t0);
	/* syscall records keep the drain as busy as ring events */
	total += d->sys_polled;
	if (t0 - d->last_clock_export >= DRAIN_CLOCK_PERIOD_NS) {
		emit_clock(d);
		d->last_clock_export = t0;
	}
	/* drop closed streams */
	for (i = j = 0; i < d->nstreams; i++) {
		if (d->streams[i]->closed) {
			free(d->streams[i]->enc);
			free(d->streams[i]);
		} else {
			d->streams[j++] = d->streams[i];
		}
	}
	d->nstreams = j;
	foldproc_sweep(d);
	return d->error ? d->error : total;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts and removes duplicates; returns the new count. */
static size_t sort_unique(uint64_t *a, size_t n)
{
	size_t i, j;

	if (n < 2)
		return n;
	qsort(a, n, sizeof(*a), u64_cmp);
	for (i = 1, j = 1; i < n; i++)
		if (a[i] != a[j - 1])
			a[j++] = a[i];
	return j;
}

static int filters_map(struct drain *d)
{
	struct lp_filter_file *ff;
	struct stat st;
	void *map;
	int fd, e;

	if (d->filters)
		return 0;
	/* readable by the program, which may run as another user; in an
	 * attached program's directory, a file of that user's or of ours
	 * (an earlier attach), never through a link */
	fd = openat(d->dirfd, LP_FILTER_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (!file_trusted(d, fd, &st, true)) {
		close(fd);
		return -EPERM;
	}
	/* reserved: a page of a sparse file on a full tmpfs would kill the
	 * drain with SIGBUS when written */
	e = fallocate(fd, 0, 0, sizeof(*ff)) ? -errno : 0;
	if ((e == -EOPNOTSUPP || e == -ENOSYS) && ftruncate(fd, sizeof(*ff)))
		e = -errno;
	else if (e == -EOPNOTSUPP || e == -ENOSYS)
		e = 0;
	if (e) {
		close(fd);
		return e;
	}
	map = mmap(NULL, sizeof(*ff), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	e = -errno;
	close(fd);
	if (map == MAP_FAILED)
		return e;
	ff = map;
	ff->version = 1;
	atomic_store_explicit((_Atomic uint32_t *)&ff->magic, LP_FILTER_MAGIC, memory_order_release);
	d->filters = ff;
	return 0;
}

int drain_set_filters(struct drain *d, const uint64_t *only, size_t n_only, const uint64_t *exclude, size_t n_exclude,
                      uint32_t max_depth, uint64_t min_ns)
{
	_Atomic uint32_t *flags = (_Atomic uint32_t *)&d->control->flags;
	struct lp_filter_set *set;
	uint32_t next;
	int r;

	if (n_only > LP_FILTER_ADDRS_MAX || n_exclude > LP_FILTER_ADDRS_MAX - n_only)
		return -E2BIG;
	r = filters_map(d);
	if (r)
		return r;
	/* write the half the gates do not read, then switch them to it */
	next = (atomic_load_explicit((_Atomic uint32_t *)&d->filters->active, memory_order_relaxed) + 1) & 1;
	set = &d->filters->set[next];
	if (n_only)
		memcpy(set->addr, only, n_only * sizeof(*only));
	n_only = sort_unique(set->addr, n_only);
	if (n_exclude)
		memcpy(set->addr + n_only, exclude, n_exclude * sizeof(*exclude));
	n_exclude = sort_unique(set->addr + n_only, n_exclude);
	set->n_only = (uint32_t)n_only;
	set->n_exclude = (uint32_t)n_exclude;
	atomic_store_explicit((_Atomic uint32_t *)&d->filters->active, next, memory_order_release);
	d->control->max_depth = max_depth;
	d->control->min_raw = clocksync_span_to_raw(d->clock, min_ns);
	atomic_fetch_add_explicit((_Atomic uint32_t *)&d->control->filter_gen, 1, memory_order_release);
	if (n_only || n_exclude || max_depth || min_ns)
		atomic_fetch_or_explicit(flags, LP_CTL_FILTERED, memory_order_release);
	else
		atomic_fetch_and_explicit(flags, ~(uint32_t)LP_CTL_FILTERED, memory_order_release);
	return 0;
}

void drain_set_hold(struct drain *d, bool on)
{
	_Atomic uint32_t *flags = (_Atomic uint32_t *)&d->control->flags;

	if (on)
		atomic_fetch_or_explicit(flags, LP_CTL_HOLD, memory_order_release);
	else
		atomic_fetch_and_explicit(flags, ~(uint32_t)LP_CTL_HOLD, memory_order_release);
}

void drain_set_plans(struct drain *d, uint32_t n)
{
	atomic_store_explicit((_Atomic uint32_t *)&d->control->plans, n, memory_order_release);
}

uint32_t drain_plan_wants(struct drain *d)
{
	return atomic_load_explicit((_Atomic uint32_t *)&d->control->plan_wants, memory_order_acquire);
}

void drain_plan_answered(struct drain *d, uint32_t tickets)
{
	atomic_store_explicit((_Atomic uint32_t *)&d->control->plan_answers, tickets, memory_order_release);
}

void drain_set_eager(struct drain *d)
{
	atomic_fetch_or_explicit((_Atomic uint32_t *)&d->control->flags, LP_CTL_EAGER, memory_order_release);
}

void drain_clear_filters(struct drain *d)
{
	atomic_fetch_and_explicit((_Atomic uint32_t *)&d->control->flags, ~(uint32_t)LP_CTL_FILTERED,
	                          memory_order_release);
}

int drain_flush(struct drain *d)
{
	size_t i;

	for (i = 0; i < d->nstreams; i++)
		flush_stream(d->streams[i]);
	if (d->sys)
		drainsys_flush(d);
	return d->error;
}

int drain_flush_idle(struct drain *d)
{
	size_t i;

	for (i = 0; i < d->nstreams; i++) {
		struct stream *s = d->streams[i];

		if (!s->flushed && s->enc->len)
			flush_stream(s);
		s->flushed = false;
	}
	if (d->sys)
		drainsys_flush(d);
	return d->error;
}

bool drain_pressure(const struct drain *d)
{
	return d->pressure;
}

void drain_sleep(struct drain *d, unsigned us)
{
	_Atomic uint32_t *wake = (_Atomic uint32_t *)&d->control->drain_wake;
	_Atomic uint32_t *sleeping = (_Atomic uint32_t *)&d->control->drain_sleeping;
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	uint32_t w = atomic_load_explicit(wake, memory_order_seq_cst);

	/* a producer that finds sleeping set bumps wake before waking us: a
	 * bump between the load and the wait ends the wait at once */
	atomic_store_explicit(sleeping, 1, memory_order_seq_cst);
	syscall(SYS_futex, (uint32_t *)wake, FUTEX_WAIT, w, &ts, NULL, 0);
	atomic_store_explicit(sleeping, 0, memory_order_relaxed);
}

/* The process pid ended with the given wait status: its streams are final
 * (they close once drained), and the status goes into one stream of its
 * last image (a pid's earlier images were replaced by exec: they did not
 * exit), the main thread's when it has one. */
static void process_exited(struct drain *d, pid_t pid, int status)
{
	struct stream *last = NULL;
	size_t i;

	for (i = 0; i < d->nstreams; i++) {
		struct stream *s = d->streams[i];

		if (s->closed || s->final || s->ring->pid != (uint32_t)pid)
			continue;
		s->final = true;
		if (!last || s->ring->image > last->ring->image ||
		    (s->ring->image == last->ring->image && s->ring->tid == (uint32_t)pid))
			last = s;
	}
	if (last)
		last->exit_status = status;
	if (d->sys)
		drainsys_process_exited(d, (uint32_t)pid, status);
	/* a ring of it not set up yet may be the pid's: remembered (only
	 * then, so that a new process given the pid later is not taken as
	 * ended) */
	if (!last && d->scan_pending && d->nexits < DRAIN_EXITS_MAX) {
		d->exits[d->nexits].pid = pid;
		d->exits[d->nexits].status = status;
		d->nexits++;
	}
}

void drain_process_exited(struct drain *d, pid_t pid, int status)
{
	/* the process is gone: every ring it made is in the directory now */
	d->scan_pending = true;
	scan_dir(d);
	process_exited(d, pid, status);
}

int drain_finish(struct drain *d)
{
	char end[512];
	size_t i;
	int n;

	drain_poll(d);
	/* what was to be drained is: a process gone untold ended unseen */
	drainwatch_check(d, true);
	for (i = 0; i < d->nstreams; i++)
		d->streams[i]->final = true;
	drain_poll(d);
	/* all closed before any is freed: an EXIT takes the time of the
	 * latest event of every stream of its process (image_last_ns) */
	for (i = 0; i < d->nstreams; i++)
		if (!d->streams[i]->closed && !d->streams[i]->sys_waiting)
			stream_close(d->streams[i]);
	for (i = 0; i < d->nstreams; i++)
		if (!d->streams[i]->closed)
			stream_close(d->streams[i]);
	for (i = 0; i < d->nstreams; i++) {
		free(d->streams[i]->enc);
		free(d->streams[i]);
	}
	d->nstreams = 0;
	foldproc_sweep(d);
	if (d->sys)
		drainsys_finish(d);
	drainloss_poll(d, true);
	emit_clock(d);
	n = snprintf(end, sizeof(end), "events=%llu\nlost=%llu\nstreams=%llu\n", (unsigned long long)d->stats.events,
	             (unsigned long long)d->stats.lost, (unsigned long long)d->stats.streams);
	if (d->cfg.ring_full == LP_RING_FULL_WAIT)
		n += snprintf(end + n, sizeof(end) - (size_t)n, "waits=%llu\nwait_ns=%llu\nwait_gave_up=%llu\n",
		              (unsigned long long)d->stats.waits, (unsigned long long)d->stats.wait_ns,
		              (unsigned long long)d->stats.wait_gave_up);
	if (d->stats.nospace)
		n += snprintf(end + n, sizeof(end) - (size_t)n, "lost_nospace=%llu\n",
		              (unsigned long long)d->stats.nospace);
	if (d->cfg.mem_fold_ns)
		n += snprintf(end + n, sizeof(end) - (size_t)n, "mem_folded_blocks=%llu\nmem_folded_bytes=%llu\n",
		              (unsigned long long)d->stats.folded_blocks, (unsigned long long)d->stats.folded_bytes);
	drain_emit(d, LP_CHUNK_END, (const uint8_t *)end, (size_t)n, 0);
	return d->error;
}

void drain_get_stats(const struct drain *d, struct drain_stats *out)
{
	*out = d->stats;
}

void drain_free(struct drain *d)
{
	struct dirent *e;
	size_t i;
	DIR *dir;
	int fd;

	if (!d)
		return;
	for (i = 0; i < d->nstreams; i++) {
		memfold_free(d->streams[i]->fold);
		free(d->streams[i]->sync_held);
		ctr_fifo_free(d->streams[i]);
		ctr_held_free(d->streams[i]);
		if (d->streams[i]->filtered)
			filter_stream_release(&d->streams[i]->fs);
		if (d->streams[i]->ring)
			munmap(d->streams[i]->ring, d->streams[i]->map_size);
		free(d->streams[i]->enc);
		free(d->streams[i]);
	}
	free(d->streams);
	for (i = 0; i < d->nfoldprocs; i++)
		memfold_proc_free(d->foldprocs[i].p);
	free(d->foldprocs);
	drainsys_free(d);
	drainwatch_free(d);
	drainloss_free(d);
	for (i = 0; i < d->nctr_totals; i++)
		free(d->ctr_totals[i]);
	if (d->notify_fd >= 0)
		close(d->notify_fd);
	if (d->filters)
		munmap(d->filters, sizeof(*d->filters));
	if (d->attached) {
		/* the program keeps its session for the next attach */
		drain_clear_filters(d);
		drain_set_enabled(d, false);
		munmap(d->control, sizeof(*d->control));
		close(d->dirfd);
		free(d->clock);
		free(d);
		return;
	}
	if (d->control)
		munmap(d->control, sizeof(*d->control));
	/* empty the directory we made (whatever its name points to now), then
	 * remove it (only an empty directory goes) */
	fd = openat(d->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = fd < 0 ? NULL : fdopendir(fd);
	if (dir) {
		while ((e = readdir(dir)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(d->dirfd, e->d_name, 0);
		closedir(dir);
	} else if (fd >= 0) {
		close(fd);
	}
	if (!d->salvage)
		rmdir(d->dir); /* a salvage's d->dir named a descriptor: the caller removes the directory */
	close(d->dirfd);
	free(d->clock);
	free(d);
}
