/* Where a thread's ring comes from: a file in the session directory whose
 * pages are made before they are written (so that a full file system can
 * never kill the program with SIGBUS); or, when none can be had (a small
 * /dev/shm, the session directory removed by a cleaner), an entry of the
 * session's loss table in which the thread counts what it cannot record.
 * Runs once per thread, off the hot path, except lp_loss_add.
 *
 * The session directory is held open from the first ring on, so that rings
 * are made in it, and in nothing that takes its name later: a directory
 * made under the same name after it was removed is not the session's.  The
 * loss table is mapped at the same time, so that it is there when the
 * directory is gone. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "runtime.h"

/* The session directory's descriptor is moved to at least this number, out
 * of the way of programs that expect the lowest free numbers for theirs. */
#define LP_SESSION_FD_MIN 100
/* A ring takes at most this share of the space left in the session's file
 * system (1/16): in a small one, later threads still find room. */
#define LP_RING_SPACE_SHARE 16u
/* lp_ring_reserve_ahead makes at least this much at a time: a few system
 * calls per megabyte on a ring's first pass */
#define LP_RING_AHEAD_BYTES (256u << 10)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* 1: MADV_POPULATE_WRITE works here; 0: it does not (an older kernel:
 * every ring is reserved whole with fallocate); -1: not known yet */
static _Atomic int populate_works = -1;

static struct {
	_Atomic int fd; /* the session directory; -1: not open */
	dev_t dev;      /* which directory it is */
	ino_t ino;
	bool known; /* dev, ino set */
	struct lp_loss_table *table;
} sess = { .fd = -1 };

static pthread_once_t sess_once = PTHREAD_ONCE_INIT;

static LP_NOINSTR size_t ring_size(uint32_t chunks, uint32_t chunk_slots)
{
	return LP_RING_HEADER_SIZE + (size_t)(chunks + 1) * chunk_slots * sizeof(struct lp_slot);
}

static LP_NOINSTR int fd_move_high(int fd)
{
	int high = fcntl(fd, F_DUPFD_CLOEXEC, LP_SESSION_FD_MIN);

	if (high < 0)
		return fd;
	close(fd);
	return high;
}

/* In the child of fork(): a thread without a ring was counting into its
 * parent's entry; the child's thread starts afresh (and may get a ring). */
static LP_NOINSTR void loss_atfork_child(void)
{
	struct lp_thread *t = &lp_self;

	if (t->state == LP_THREAD_LOST) {
		t->state = LP_THREAD_NEW;
		t->loss = NULL;
	}
}

static LP_NOINSTR void loss_table_map(int dirfd)
{
	struct lp_loss_table *tab;
	struct stat st;
	void *map;
	int fd = openat(dirfd, LP_LOSS_NAME, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(*tab)) {
		close(fd);
		return;
	}
	map = mmap(NULL, sizeof(*tab), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	tab = map;
	if (atomic_load_explicit((_Atomic uint32_t *)&tab->magic, memory_order_acquire) != LP_LOSS_MAGIC ||
	    tab->version != LP_SHM_VERSION || tab->entries != LP_LOSS_ENTRIES) {
		munmap(map, sizeof(*tab));
		return;
	}
	sess.table = tab;
}

/* Once per process image (a forked child shares its parent's). */
static LP_NOINSTR void session_open(void)
{
	struct stat st;
	int fd;

	pthread_atfork(NULL, NULL, loss_atfork_child);
	fd = open(lp_proc.session_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	fd = fd_move_high(fd);
	sess.dev = st.st_dev;
	sess.ino = st.st_ino;
	sess.known = true;
	loss_table_map(fd);
	atomic_store(&sess.fd, fd);
}

/* The session directory as a descriptor to make files in, or -errno.  The
 * program may have closed the runtime's descriptor or put a file of its
 * own under its number: then the directory is opened again by name, and
 * taken only when it is the same directory. */
static LP_NOINSTR int session_dir(void)
{
	struct stat st;
	int fd, nfd;

	pthread_once(&sess_once, session_open);
	if (!sess.known)
		return -ENOENT;
	fd = atomic_load(&sess.fd);
	if (fd >= 0 && !fstat(fd, &st) && st.st_dev == sess.dev && st.st_ino == sess.ino)
		return st.st_nlink ? fd : -ENOENT; /* 0 links: removed */
	nfd = open(lp_proc.session_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (nfd < 0)
		return -errno;
	if (fstat(nfd, &st) || st.st_dev != sess.dev || st.st_ino != sess.ino || !st.st_nlink) {
		close(nfd);
		return -ENOENT; /* another directory under the session's name */
	}
	nfd = fd_move_high(nfd);
	/* the old number is the program's now: never closed here */
	if (!atomic_compare_exchange_strong(&sess.fd, &fd, nfd)) {
		close(nfd); /* another thread opened it again first */
		return fd;
	}
	return nfd;
}

/* The next smaller ring: half the chunks, then half the chunk size.
 * False at the smallest. */
static LP_NOINSTR bool ring_smaller(uint32_t *chunks, uint32_t *chunk_slots)
{
	if (*chunks > LP_RING_MIN_CHUNKS) {
		*chunks /= 2;
		return true;
	}
	if (*chunk_slots > LP_RING_MIN_CHUNK_SLOTS) {
		*chunk_slots /= 2;
		return true;
	}
	return false;
}

/* Reserves the ring's space: fallocate allocates every page now (tmpfs) or
 * fails with ENOSPC, so that a page the ring later writes cannot fail to
 * be had.  A ring takes at most 1/LP_RING_SPACE_SHARE of the space left,
 * and on ENOSPC is made smaller (ring_smaller).  A failed fallocate leaves the file empty
 * (the drain does not look at a ring smaller than its header).  Returns 0
 * with rf's geometry and size set, or -errno. */
static LP_NOINSTR int ring_reserve(int fd, struct lp_ringfile *rf)
{
	uint32_t chunks = rf->chunks, chunk_slots = rf->chunk_slots;

	for (;;) {
		size_t size = ring_size(chunks, chunk_slots);
		int e = fallocate(fd, 0, 0, (off_t)size) ? errno : 0;

		if (e == EINTR)
			continue;
		if (e == EOPNOTSUPP || e == ENOSYS) {
			/* a file system that cannot reserve: a sparse file, as
			 * everywhere before fallocate */
			if (ftruncate(fd, (off_t)size))
				return -errno;
			e = 0;
		}
		if (!e) {
			rf->chunks = chunks;
			rf->chunk_slots = chunk_slots;
			rf->size = rf->reserved = size;
			return 0;
		}
		if (e != ENOSPC || !ring_smaller(&chunks, &chunk_slots))
			return -e;
	}
}

/* A ring takes at most 1/LP_RING_SPACE_SHARE of the space left in the
 * file system of fd: rf's geometry made smaller until it does. */
static LP_NOINSTR void ring_fit(int fd, struct lp_ringfile *rf)
{
	struct statvfs sv;

	/* f_blocks 0: a file system without a size limit */
	if (!fstatvfs(fd, &sv) && sv.f_blocks) {
		unsigned long long avail = (unsigned long long)sv.f_bavail * sv.f_frsize;

		while (ring_size(rf->chunks, rf->chunk_slots) > avail / LP_RING_SPACE_SHARE &&
		       ring_smaller(&rf->chunks, &rf->chunk_slots))
			;
	}
}

static LP_NOINSTR int populate(void *addr, size_t len)
{
	int r;

	do
		r = madvise(addr, len, MADV_POPULATE_WRITE) ? -errno : 0;
	while (r == -EINTR);
	return r;
}

/* Whether this kernel makes pages on request (MADV_POPULATE_WRITE, Linux
 * 5.14): asked once, of a page of anonymous memory. */
static LP_NOINSTR bool populate_supported(void)
{
	int works = atomic_load_explicit(&populate_works, memory_order_relaxed);
	void *page;

	if (works < 0) {
		/* tests: as on a kernel without it (getenv: this runs after the
		 * C library's start, or finds no environment and says no) */
		if (getenv("LAYERPROF_TEST_RING_WHOLE")) {
			atomic_store_explicit(&populate_works, 0, memory_order_relaxed);
			return false;
		}
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		works = page != MAP_FAILED && !populate(page, 4096);
		if (page != MAP_FAILED)
			munmap(page, 4096);
		atomic_store_explicit(&populate_works, works, memory_order_relaxed);
	}
	return works;
}

/* A ring whose header, first chunk and scratch chunk are reserved now, the
 * other chunks' pages made when the thread first gets to them
 * (lp_ring_reserve_ahead): pages are had as a sparse file's would be, but
 * never by a write that could fault.  The file only grows (a drain may map
 * it meanwhile and read its header): the header first, then the scratch
 * chunk at its end.  Returns 0 with rf->map set, or -errno (-ENOSPC: no
 * room for that much). */
static LP_NOINSTR int ring_map_sparse(int fd, struct lp_ringfile *rf)
{
	size_t chunk = (size_t)rf->chunk_slots * sizeof(struct lp_slot);
	void *map;

	rf->size = ring_size(rf->chunks, rf->chunk_slots);
	rf->reserved = LP_RING_HEADER_SIZE + chunk;
	if (fallocate(fd, 0, 0, (off_t)rf->reserved) || fallocate(fd, 0, (off_t)(rf->size - chunk), (off_t)chunk))
		return -errno;
	map = mmap(NULL, rf->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	rf->map = map;
	return 0;
}

LP_NOINSTR bool lp_ring_reserve_ahead(struct lp_thread *t, uint32_t end)
{
	uint32_t ahead = LP_RING_AHEAD_BYTES / sizeof(struct lp_slot), upto;
	int r;

	if (end <= t->reserved_slots)
		return true;
	upto = end - t->reserved_slots < ahead ? t->reserved_slots + ahead : end;
	if (upto > t->ring_slots)
		upto = t->ring_slots;
	r = populate(t->slots + t->reserved_slots, (size_t)(upto - t->reserved_slots) * sizeof(struct lp_slot));
	if (r && upto > end) /* room for less, perhaps */
		r = populate(t->slots + t->reserved_slots, (size_t)(end - t->reserved_slots) * sizeof(struct lp_slot)),
		upto = end;
	if (r)
		return false;
	t->reserved_slots = upto;
	return true;
}

LP_NOINSTR int lp_ringfile_create(struct lp_ringfile *rf)
{
	char name[64];
	void *map;
	int dirfd, fd, r;

	dirfd = session_dir();
	if (dirfd < 0)
		return dirfd;
	snprintf(name, sizeof(name), LP_RING_PREFIX "%u.%u.%u", (unsigned)rf->pid, (unsigned)rf->tid,
	         (unsigned)rf->image);
	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ring_fit(fd, rf);
	if (populate_supported()) {
		do
			r = ring_map_sparse(fd, rf);
		while (r == -ENOSPC && ring_smaller(&rf->chunks, &rf->chunk_slots));
		if (!r) {
			close(fd);
			return 0;
		}
		if (r == -EOPNOTSUPP || r == -ENOSYS) /* a file system that cannot reserve */
			r = ring_reserve(fd, rf);
	} else {
		r = ring_reserve(fd, rf);
	}
	if (r) {
		close(fd);
		unlinkat(dirfd, name, 0);
		return r;
	}
	map = mmap(NULL, rf->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	r = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (r) {
		unlinkat(dirfd, name, 0);
		return r;
	}
	rf->map = map;
	return 0;
}

/* Claims a free entry of the loss table for thread tid of this process,
 * with events counted so far and the state to publish.  NULL when there is
 * no table or no free entry. */
static LP_NOINSTR struct lp_loss_entry *loss_claim(uint32_t tid, int error, const char *comm, uint64_t events,
                                                   uint32_t state)
{
	struct lp_loss_table *tab;
	uint32_t i;

	pthread_once(&sess_once, session_open);
	tab = sess.table;
	for (i = 0; tab && i < LP_LOSS_ENTRIES; i++) {
		struct lp_loss_entry *e = &tab->entry[(tid + i) % LP_LOSS_ENTRIES];
		uint32_t expect = LP_LOSS_FREE;

		if (!atomic_compare_exchange_strong((_Atomic uint32_t *)&e->state, &expect, LP_LOSS_CLAIMED))
			continue;
		e->pid = (uint32_t)getpid();
		e->tid = tid;
		e->image = lp_proc.image;
		e->error = (uint32_t)-error;
		memcpy(e->comm, comm, sizeof(e->comm));
		atomic_store_explicit((_Atomic uint64_t *)&e->events, events, memory_order_relaxed);
		atomic_store_explicit((_Atomic uint32_t *)&e->state, state, memory_order_release);
		return e;
	}
	atomic_fetch_add_explicit((_Atomic uint32_t *)&lp_proc.control->unrecorded_threads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit((_Atomic uint64_t *)&lp_proc.control->unrecorded_events, events,
	                          memory_order_relaxed);
	return NULL;
}

LP_NOINSTR void lp_loss_start(struct lp_thread *t, int error, uint32_t tid, const char *comm)
{
	/* events dropped before (the session not known yet) count too */
	t->loss = loss_claim(tid, error, comm, t->lost_pending, LP_LOSS_LIVE);
	t->lost_pending = t->dropped = 0;
	t->state = LP_THREAD_LOST;
}

/* The events in a ring no drain has consumed from (so it never wrapped):
 * what the drain would have turned into events, less what only describes
 * the stream (its start, code mappings, stack definitions), which a
 * thread without a ring does not count either. */
static LP_NOINSTR uint64_t ring_events(const struct lp_slot *slots, uint32_t head, uint32_t ring_slots)
{
	uint64_t n = 0;
	uint32_t i = 0;

	while (i < head && i < ring_slots) {
		uint64_t word = slots[i].word, payload = word & LP_SLOT_PAYLOAD_MASK;
		uint32_t step = 1;

		switch (word >> LP_SLOT_TYPE_SHIFT) {
		case LP_RAW_ENTRY:
		case LP_RAW_EXIT:
		case LP_RAW_LONGJMP:
			n++;
			break;
		case LP_RAW_MEM:
			n++;
			step = LP_RAW_MEM_OP(payload) == LP_MEM_REALLOC ? 3 : 2;
			break;
		case LP_RAW_SYNC:
			n++;
			step = 3;
			break;
		case LP_RAW_COUNTER: {
			/* ENTRY and EXIT stand for a gate's event, as a thread
			 * without a ring counts them; the others describe the
			 * stream.  END carries each counter's times after its
			 * values. */
			uint32_t kind = LP_RAW_CTR_KIND(payload), nv = LP_RAW_CTR_N(payload);

			if (kind == LP_CTR_ENTRY || kind == LP_CTR_EXIT)
				n++;
			else if (LP_RAW_CTR_FN(payload) & LP_CTR_HAS_TIMES)
				nv *= 3;
			step = 1 + (nv + 1) / 2;
			break;
		}
		case LP_RAW_EXT:
			if ((payload >> 32) == LP_EXT_MEM || (payload >> 32) == LP_EXT_CALL)
				n++;
			step = 1 + (uint32_t)(((payload & 0xffffffffu) + sizeof(struct lp_slot) - 1) /
			                      sizeof(struct lp_slot));
			break;
		case LP_RAW_PAD:
			step = payload ? (uint32_t)payload : 1;
			break;
		default: /* LOST: counted in dropped */
			break;
		}
		i += step;
	}
	return n;
}

LP_NOINSTR void lp_ring_orphan(struct lp_thread *t, uint32_t head, uint64_t dropped)
{
	struct lp_ring_header *h = t->ring;
	uint32_t expect = LP_RING_UNTAKEN;
	/* asked first, whether the ring is taken or not: the program's system
	 * calls stay the same from run to run, whenever the drain comes */
	bool gone = session_dir() == -ENOENT;

	if (!gone || atomic_load_explicit((_Atomic uint32_t *)&h->taken, memory_order_acquire) != LP_RING_UNTAKEN)
		return;
	if (!atomic_compare_exchange_strong((_Atomic uint32_t *)&h->taken, &expect, LP_RING_ORPHAN))
		return; /* the drain took it just now */
	loss_claim(h->tid, -ENOENT, h->comm, ring_events(t->slots, head, t->ring_slots) + dropped, LP_LOSS_ENDED);
}

LP_NOINSTR void lp_loss_add(struct lp_thread *t, uint64_t n)
{
	if (t->loss)
		atomic_fetch_add_explicit((_Atomic uint64_t *)&t->loss->events, n, memory_order_relaxed);
	else
		atomic_fetch_add_explicit((_Atomic uint64_t *)&lp_proc.control->unrecorded_events, n,
		                          memory_order_relaxed);
}

LP_NOINSTR void lp_loss_end(struct lp_thread *t)
{
	if (t->state != LP_THREAD_LOST)
		return;
	if (t->loss)
		atomic_store_explicit((_Atomic uint32_t *)&t->loss->state, LP_LOSS_ENDED, memory_order_release);
	t->loss = NULL;
	t->state = LP_THREAD_OFF;
}
