/* Per-thread rings: created on a thread's first gate, written by the gates,
 * closed when the thread ends.  Everything here is off the hot path except
 * lp_ring_advance, which runs once per chunk (thousands of events). */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

_Static_assert(sizeof(struct lp_ring_header) == 256, "ring header layout");
_Static_assert(offsetof(struct lp_ring_header, head) == 64, "producer line");
_Static_assert(offsetof(struct lp_ring_header, tail) == 128, "consumer line");
_Static_assert(offsetof(struct lp_ring_header, waiting) == 192, "waiting line");
_Static_assert(offsetof(struct lp_ring_header, wait_uaddr) == 224, "waiting line");
_Static_assert(offsetof(struct lp_control, ring_full) == 64, "control: wait line");
_Static_assert(offsetof(struct lp_control, unrecorded_threads) == 128, "control: loss line");
_Static_assert(sizeof(struct lp_control) == 192, "control layout");

/* Waiting for room: spins of the first check, and the longest futex sleep
 * between checks of the drain's beat and pid. */
#define LP_WAIT_SPINS 200u
#define LP_WAIT_SLICE_NS 10000000u
/* Without a poll for this long, see whether the drain's process is gone
 * (a kill(pid, 0) that a syscall trace would show: not on every wait). */
#define LP_WAIT_PID_CHECK_NS 100000000u
_Static_assert(sizeof(struct lp_slot) == 16, "slot size");

static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

static LP_NOINSTR void thread_destructor(void *arg)
{
	struct lp_thread *t = &lp_self;

	/* Other destructors may still run traced code after this one: ask to
	 * be called again in the next round and close in the last one. */
	if (++t->destructor_rounds < 3) {
		pthread_setspecific(thread_key, arg);
		return;
	}
	lp_thread_close(t);
	lp_dynpatch_thread_end(t);
}

static LP_NOINSTR void thread_key_create(void)
{
	if (pthread_key_create(&thread_key, thread_destructor))
		thread_key = (pthread_key_t)-1;
}

static LP_NOINSTR uint32_t gettid_raw(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static LP_NOINSTR void put_task(struct lp_thread *t, uint64_t now, uint32_t kind, uint32_t arg, const char *name,
                                const uintptr_t *frames, uint32_t nframes)
{
	unsigned char buf[sizeof(struct lp_ext_task) + 512 + LP_SHADOW_MAX * 8];
	struct lp_ext_task task = { .kind = kind, .arg = arg };
	size_t name_len = name ? strnlen(name, 511) : 0;
	size_t off = sizeof(task);
	uint32_t i;

	task.name_len = (uint32_t)name_len;
	task.nframes = nframes;
	memcpy(buf, &task, sizeof(task));
	memcpy(buf + off, name, name_len);
	off += name_len;
	for (i = 0; i < nframes; i++) {
		uint64_t f = frames[i];
		memcpy(buf + off, &f, 8);
		off += 8;
	}
	lp_ring_put_ext_at(t, LP_EXT_TASK, buf, off, now);
}

/* Sets up the calling thread's ring.  Runs once per thread, from its first
 * gate; may make system calls but must leave errno as it found it. */
LP_NOINSTR bool lp_thread_start(struct lp_thread *t)
{
	int saved_errno = errno, r;
	uint8_t saved_guard = lp_memhook.guard;
	struct lp_ringfile rf;
	struct lp_ring_header *h;
	char comm[16] = "";
	uint32_t chunks, chunk_slots, tid;

	t->state = LP_THREAD_OFF; /* until the ring exists; also guards recursion */
	lp_memhook.guard = 1;     /* what libc allocates for us here is not the program's */
	if (!lp_process_init()) {
		/* too early to find the session (see process.c), or another
		 * thread is attaching: again at the next gate */
		if (atomic_load_explicit(&lp_proc.init, memory_order_acquire) != 2)
			t->state = LP_THREAD_NEW;
		goto out;
	}
	chunks = lp_proc.control->ring_chunks;
	chunk_slots = lp_proc.control->chunk_slots;
	if (chunks < 2 || chunks > 4096 || chunk_slots < 64 || chunk_slots > (1u << 20) ||
	    (chunk_slots & (chunk_slots - 1)) || (chunks & (chunks - 1)))
		goto out;
	tid = gettid_raw();
	prctl(PR_GET_NAME, comm, 0, 0, 0);
	rf = (struct lp_ringfile){ .pid = (uint32_t)getpid(),
		                   .tid = tid,
		                   .image = lp_proc.image,
		                   .chunks = chunks,
		                   .chunk_slots = chunk_slots };
	r = lp_ringfile_create(&rf);
	if (r) {
		/* counted from now; the thread's end makes the count final */
		lp_loss_start(t, r, tid, comm);
		goto key;
	}
	chunks = rf.chunks;
	chunk_slots = rf.chunk_slots;
	h = rf.map;
	h->version = LP_SHM_VERSION;
	h->header_size = LP_RING_HEADER_SIZE;
	h->slot_size = sizeof(struct lp_slot);
	h->ring_chunks = chunks;
	h->chunk_slots = chunk_slots;
	h->pid = rf.pid;
	h->tid = tid;
	h->image = lp_proc.image;
	h->clock = lp_proc.clock;
	h->ptr_bits = (uint32_t)(sizeof(void *) * 8);
	h->parent_pid = lp_proc.parent_pid;
	memcpy(h->comm, comm, sizeof(h->comm));
	atomic_store_explicit((_Atomic uint32_t *)&h->magic, LP_RING_MAGIC, memory_order_release);

	t->ring = h;
	t->slots = (struct lp_slot *)((char *)rf.map + LP_RING_HEADER_SIZE);
	t->scratch = t->slots + (size_t)chunks * chunk_slots;
	t->ring_slots = chunks * chunk_slots;
	t->chunk_slots = chunk_slots;
	t->map_size = rf.size;
	t->reserved_slots = rf.reserved >= rf.size
	                        ? t->ring_slots
	                        : (uint32_t)((rf.reserved - LP_RING_HEADER_SIZE) / sizeof(struct lp_slot));
	t->nospace = 0;
	t->scratch_nospace = 0;
	t->wait_untaken = 0;
	t->head_ptr = &h->head;
	t->head = 0;
	t->cur = t->limit = NULL;
	t->busy = 0;
	t->state = LP_THREAD_READY;
	lp_mem_thread_reset(t);

	/* The stream opens with who it is; a forked child's first stream also
	 * carries the frames it inherited, at the time of the fork (its heap
	 * is the parent's as it was then), and the first stream of an image
	 * carries the code mappings. */
	if (lp_proc.parent_pid && tid == (uint32_t)getpid()) {
		uint32_t n = t->depth < LP_SHADOW_MAX ? t->depth : LP_SHADOW_MAX;
		uint64_t now = lp_clock_now();

		put_task(t, lp_proc.fork_time && lp_proc.fork_time < now ? lp_proc.fork_time : now, LP_TASK_FORK,
		         lp_proc.parent_pid, comm, t->shadow, n);
		lp_proc.parent_pid = 0;
	} else {
		t->depth = 0;
		put_task(t, lp_clock_now(), LP_TASK_START, 0, comm, NULL, 0);
	}
	if (!atomic_exchange(&lp_proc.maps_written, 1))
		lp_maps_write(t);
	lp_ctr_thread_start(t);
key:
	pthread_once(&thread_key_once, thread_key_create);
	if (thread_key != (pthread_key_t)-1)
		pthread_setspecific(thread_key, t);
out:
	lp_memhook.guard = saved_guard;
	errno = saved_errno;
	return t->state == LP_THREAD_READY;
}

LP_NOINSTR bool lp_thread_open(struct lp_thread *t)
{
	if (t->state == LP_THREAD_NEW && lp_thread_start(t))
		return true;
	if (t->state == LP_THREAD_LOST) {
		lp_loss_add(t, 1);
	} else if (t->state == LP_THREAD_NEW) {
		/* the session is not known yet: the ring, once made, opens
		 * with a LOST record of these */
		t->lost_pending++;
		t->dropped++;
	}
	return false;
}

static LP_NOINSTR void ring_publish_dropped(struct lp_thread *t)
{
	atomic_store_explicit((_Atomic uint64_t *)&t->ring->nospace, t->nospace, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&t->ring->dropped, t->dropped, memory_order_relaxed);
}

/* Leaves scratch: what was written there is dropped (and, when the ring's
 * pages could not be had, dropped for want of space). */
static LP_NOINSTR void scratch_leave(struct lp_thread *t)
{
	uint32_t n = t->head - t->scratch_extra;

	t->dropped += n;
	if (t->scratch_nospace)
		t->nospace += n;
	t->scratch_nospace = 0;
	t->head = t->saved_head;
	t->head_ptr = &t->ring->head;
	t->scratch_extra = 0;
}

static inline LP_NOINSTR bool ring_room(const struct lp_thread *t, uint32_t tail)
{
	return (uint32_t)(t->head - tail) + t->chunk_slots <= t->ring_slots;
}

static inline LP_NOINSTR void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
	__asm__ __volatile__("yield");
#endif
}

/* True when the drain's process is known to be gone. */
static LP_NOINSTR bool drain_gone(const struct lp_control *c)
{
	uint32_t pid = c->drain_pid;

	if (atomic_load_explicit(&lp_proc.drain_gone, memory_order_relaxed))
		return true;
	if (!pid || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return false;
	atomic_store_explicit(&lp_proc.drain_gone, 1, memory_order_relaxed);
	return true;
}

/* The ring is full and the session asks for a complete trace
 * (LP_RING_FULL_WAIT): waits until the drain frees a chunk.  Returns true
 * with room, false to drop as LP_RING_FULL_DISCARD does.  The wait is
 * bounded: it ends when the drain's process is gone, or when the drain made
 * no poll for stall_ms; after that the thread waits again only once the
 * drain has polled.  The caller is a gate (or another ring writer) with
 * t->busy set: a signal handler's gates meanwhile drop and count, and a
 * handler that longjmps out of here abandons the gate (jmp.c).  Holds no
 * lock; the drain, in another process, needs nothing from this thread.
 * Makes system calls (futex, kill, clock_gettime), which is why it is only
 * reached on this cold path; errno is kept. */
static LP_NOINSTR __attribute__((noinline, cold)) bool ring_wait(struct lp_thread *t)
{
	struct lp_ring_header *h = t->ring;
	const struct lp_control *c = lp_proc.control;
	_Atomic uint32_t *tailp = (_Atomic uint32_t *)&h->tail;
	_Atomic uint32_t *waitp = (_Atomic uint32_t *)&h->waiting;
	const _Atomic uint64_t *beatp;
	uint64_t beat, start, now, progress, stall_ns;
	uint32_t tail, spins;
	int saved_errno;
	bool room = false, taken;

	if (!c ||
	    atomic_load_explicit((const _Atomic uint32_t *)&c->ring_full, memory_order_relaxed) != LP_RING_FULL_WAIT)
		return false;
	/* a ring the drain never took (it cannot see it, or refused it) would
	 * be waited for as long as the drain lives: once that happened, no
	 * more waits until the drain takes it */
	taken = atomic_load_explicit((_Atomic uint32_t *)&h->taken, memory_order_acquire) == LP_RING_TAKEN;
	if (t->wait_untaken && !taken)
		return false;
	t->wait_untaken = 0;
	beatp = (const _Atomic uint64_t *)&c->drain_beat;
	beat = atomic_load_explicit(beatp, memory_order_acquire);
	if (t->wait_skip) {
		if (beat == t->wait_beat)
			return false;
		t->wait_skip = 0;
	}
	if (atomic_load_explicit(&lp_proc.drain_gone, memory_order_relaxed))
		return false;
	for (spins = 0; spins < LP_WAIT_SPINS; spins++) {
		if (ring_room(t, atomic_load_explicit(tailp, memory_order_acquire)))
			return true;
		cpu_relax();
	}
	saved_errno = errno;
	t->waiting = 1;
	h->wait_uaddr = (uint64_t)(uintptr_t)tailp;
	h->wake_uaddr = (uint64_t)(uintptr_t)&c->drain_wake;
	/* a drain asleep between polls would leave the ring full until its
	 * next poll: wake it */
	if (atomic_load_explicit((const _Atomic uint32_t *)&c->drain_sleeping, memory_order_seq_cst)) {
		atomic_fetch_add_explicit((_Atomic uint32_t *)&c->drain_wake, 1, memory_order_seq_cst);
		syscall(SYS_futex, (uint32_t *)&c->drain_wake, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	stall_ns = (uint64_t)(c->stall_ms ? c->stall_ms : LP_STALL_MS_DEFAULT) * 1000000u;
	start = progress = lp_monotonic_ns();
	for (;;) {
		struct timespec ts = { 0, LP_WAIT_SLICE_NS };
		uint64_t b;

		/* waiting before tail: the drain stores tail, then loads
		 * waiting, so one of the two sides sees the other */
		atomic_store_explicit(waitp, 1, memory_order_seq_cst);
		tail = atomic_load_explicit(tailp, memory_order_seq_cst);
		if (ring_room(t, tail)) {
			room = true;
			break;
		}
		syscall(SYS_futex, (uint32_t *)tailp, FUTEX_WAIT, tail, &ts, NULL, 0);
		tail = atomic_load_explicit(tailp, memory_order_acquire);
		if (ring_room(t, tail)) {
			room = true;
			break;
		}
		now = lp_monotonic_ns();
		b = atomic_load_explicit(beatp, memory_order_acquire);
		if (b != beat) {
			beat = b;
			progress = now;
		} else if (now - progress >= stall_ns || (now - progress >= LP_WAIT_PID_CHECK_NS && drain_gone(c))) {
			t->wait_skip = 1;
			t->wait_beat = b;
			atomic_fetch_add_explicit((_Atomic uint64_t *)&h->gave_up, 1, memory_order_relaxed);
			break;
		}
		if (now - start >= stall_ns &&
		    atomic_load_explicit((_Atomic uint32_t *)&h->taken, memory_order_acquire) != LP_RING_TAKEN) {
			t->wait_untaken = 1;
			atomic_fetch_add_explicit((_Atomic uint64_t *)&h->gave_up, 1, memory_order_relaxed);
			break;
		}
	}
	now = lp_monotonic_ns();
	atomic_fetch_add_explicit((_Atomic uint64_t *)&h->waits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit((_Atomic uint64_t *)&h->wait_ns, now - start, memory_order_relaxed);
	t->waiting = 0;
	errno = saved_errno;
	return room;
}

LP_NOINSTR void lp_ring_abandon(struct lp_thread *t)
{
	/* Waiting, the gate has written nothing (t->cur is t->limit). Else it
	 * may have written part of a record without publishing it, or
	 * published it without moving t->cur: t->head is what counts.  The
	 * rest of the chunk from the head on becomes padding, so that the next
	 * write starts a chunk (lp_ring_advance) whatever the gate had done. */
	if (!t->waiting && t->state == LP_THREAD_READY && t->head_ptr == &t->ring->head && t->cur != t->limit) {
		struct lp_slot *chunk = t->limit - t->chunk_slots;
		struct lp_slot *s = t->slots + (t->head & (t->ring_slots - 1));

		if (s >= chunk && s < t->limit) {
			uint32_t skip = (uint32_t)(t->limit - s);

			s->time = lp_clock_now();
			s->word = (uint64_t)skip | ((uint64_t)LP_RAW_PAD << LP_SLOT_TYPE_SHIFT);
			t->head += skip;
			atomic_store_explicit((_Atomic uint32_t *)t->head_ptr, t->head, memory_order_release);
		}
	}
	t->cur = t->limit;
	/* the event the gate was writing */
	t->lost_pending++;
	t->dropped++;
	t->waiting = 0;
	t->busy = 0;
}

/* Called when t->cur reaches t->limit, so always at a chunk boundary of the
 * ring (or at the end of scratch).  Decides whether the next chunk of the
 * ring is free; if not, the session's answer applies (enum lp_ring_full):
 * wait for the drain, or send the next chunk's worth of events to scratch
 * and count them as dropped. */
LP_NOINSTR struct lp_slot *lp_ring_advance(struct lp_thread *t)
{
	struct lp_ring_header *h = t->ring;
	uint32_t tail, nested;

	if (t->head_ptr != &h->head) {
		/* scratch is full: every event written there is lost */
		t->lost_pending += t->head - t->scratch_extra;
		scratch_leave(t);
	}
	nested = t->nested;
	if (nested) {
		t->nested -= nested;
		t->lost_pending += nested;
		t->dropped += nested;
	}
	tail = atomic_load_explicit((_Atomic uint32_t *)&h->tail, memory_order_acquire);
	if (ring_room(t, tail) || ring_wait(t)) {
		uint32_t pos = t->head & (t->ring_slots - 1);

		/* the ring's first pass: the chunk's pages are made before it is
		 * written, so that a full file system drops events instead of
		 * killing the program (SIGBUS) */
		if (__builtin_expect(pos + t->chunk_slots > t->reserved_slots, 0) &&
		    !lp_ring_reserve_ahead(t, pos + t->chunk_slots)) {
			t->scratch_nospace = 1;
			goto drop;
		}
		t->cur = t->slots + pos;
		t->limit = t->cur + t->chunk_slots;
		if (t->lost_pending) {
			struct lp_slot *s = t->cur;
			uint64_t n = t->lost_pending & LP_SLOT_PAYLOAD_MASK;

			s->time = lp_clock_now();
			s->word = n | ((uint64_t)LP_RAW_LOST << LP_SLOT_TYPE_SHIFT);
			t->cur = s + 1;
			t->lost_pending = 0;
			ring_publish_dropped(t);
			atomic_store_explicit((_Atomic uint32_t *)t->head_ptr, ++t->head, memory_order_release);
		}
		return t->cur;
	}
drop:
	t->saved_head = t->head;
	t->head = 0;
	t->head_ptr = &t->scratch_head;
	t->cur = t->scratch;
	t->limit = t->scratch + t->chunk_slots;
	ring_publish_dropped(t);
	return t->cur;
}

LP_NOINSTR void lp_ring_put(struct lp_thread *t, uint32_t type, uint64_t payload)
{
	struct lp_slot *s = t->cur;

	if (s == t->limit)
		s = lp_ring_advance(t);
	s->time = lp_clock_now();
	s->word = (payload & LP_SLOT_PAYLOAD_MASK) | ((uint64_t)type << LP_SLOT_TYPE_SHIFT);
	t->cur = s + 1;
	atomic_store_explicit((_Atomic uint32_t *)t->head_ptr, ++t->head, memory_order_release);
}

/* Pads the rest of the current chunk. */
static LP_NOINSTR void ring_pad(struct lp_thread *t, struct lp_slot *s, uint64_t now)
{
	size_t skip = (size_t)(t->limit - s);

	s->time = now;
	s->word = (uint64_t)skip | ((uint64_t)LP_RAW_PAD << LP_SLOT_TYPE_SHIFT);
	t->cur = t->limit;
	t->head += (uint32_t)skip;
	if (t->head_ptr != &t->ring->head)
		t->scratch_extra += (uint32_t)skip; /* not events */
	atomic_store_explicit((_Atomic uint32_t *)t->head_ptr, t->head, memory_order_release);
}

/* A record of n slots never straddles a chunk: when it does not fit in
 * what is left of the current chunk, a PAD slot skips the rest. */
LP_NOINSTR struct lp_slot *lp_ring_reserve(struct lp_thread *t, size_t n, uint64_t now)
{
	struct lp_slot *s = t->cur;

	if (s != t->limit && (size_t)(t->limit - s) < n)
		ring_pad(t, s, now);
	s = t->cur;
	if (s == t->limit)
		s = lp_ring_advance(t);
	if ((size_t)(t->limit - s) < n) {
		/* a LOST slot took the room: pad again, once */
		ring_pad(t, s, now);
		s = lp_ring_advance(t);
	}
	return s;
}

LP_NOINSTR void lp_ring_put_ext(struct lp_thread *t, uint32_t ext_type, const void *data, size_t len)
{
	lp_ring_put_ext_at(t, ext_type, data, len, lp_clock_now());
}

LP_NOINSTR void lp_ring_put_ext_at(struct lp_thread *t, uint32_t ext_type, const void *data, size_t len, uint64_t now)
{
	size_t body = (len + sizeof(struct lp_slot) - 1) / sizeof(struct lp_slot);
	struct lp_slot *s;

	if (body + 1 > t->chunk_slots || len > 0xffffffffu)
		return;
	s = lp_ring_reserve(t, body + 1, now);
	s->time = now;
	s->word = ((uint64_t)ext_type << 32 | (uint64_t)len) | ((uint64_t)LP_RAW_EXT << LP_SLOT_TYPE_SHIFT);
	memcpy(s + 1, data, len);
	lp_ring_commit(t, s, 1 + body);
	/* dropped, a record that only describes the stream (a stack's
	 * definition, a mapping, who the thread is) is no lost event */
	if (unlikely(t->head_ptr != &t->ring->head) && ext_type != LP_EXT_MEM && ext_type != LP_EXT_CALL)
		t->scratch_extra++;
}

/* At process exit (exit() from main, which runs no thread destructors):
 * the calling thread may be dropping into scratch, whose events are counted
 * only when it next reaches a chunk boundary.  Publish them now, so that
 * the drain's loss count is complete; the ring stays open for whatever
 * traced code the remaining exit handlers run. */
static LP_NOINSTR __attribute__((destructor)) void thread_exit_count(void)
{
	struct lp_thread *t = &lp_self;
	uint64_t pending;

	if (t->state != LP_THREAD_READY || !t->ring)
		return;
	/* the main thread's last counter values (no destructor of its own);
	 * inside a gate they cannot be written */
	if (t->ctrs && !t->busy) {
		t->busy = 1;
		atomic_signal_fence(memory_order_seq_cst);
		lp_ctr_thread_end(t);
		atomic_signal_fence(memory_order_seq_cst);
		t->busy = 0;
	}
	if (t->mem.reaped_in != t->mem.reaped_out) {
		if (t->busy) {
			/* exit inside a gate: what cannot be written is counted */
			t->nested += t->mem.reaped_in - t->mem.reaped_out;
			t->mem.reaped_out = t->mem.reaped_in;
		} else {
			t->busy = 1;
			atomic_signal_fence(memory_order_seq_cst);
			lp_mem_reaped_flush(t);
			atomic_signal_fence(memory_order_seq_cst);
			t->busy = 0;
		}
	}
	pending = t->nested + (t->head_ptr != &t->ring->head ? t->head - t->scratch_extra : 0);
	if (pending && t->scratch_nospace)
		atomic_store_explicit((_Atomic uint64_t *)&t->ring->nospace, t->nospace + t->head - t->scratch_extra,
		                      memory_order_relaxed);
	if (pending)
		atomic_store_explicit((_Atomic uint64_t *)&t->ring->dropped, t->dropped + pending,
		                      memory_order_relaxed);
	lp_ring_orphan(t, t->head_ptr != &t->ring->head ? t->saved_head : t->head, t->dropped + pending);
}

LP_NOINSTR void lp_thread_close(struct lp_thread *t)
{
	if (t->state == LP_THREAD_LOST)
		lp_loss_end(t);
	if (t->state != LP_THREAD_READY)
		return;
	t->busy = 1;
	if (t->ctrs)
		lp_ctr_thread_end(t); /* the END record, before the ring closes */
	if (t->mem.reaped_in != t->mem.reaped_out)
		lp_mem_reaped_flush(t); /* before the ring closes */
	if (t->head_ptr != &t->ring->head)
		scratch_leave(t);
	t->dropped += t->nested;
	t->nested = 0;
	ring_publish_dropped(t);
	lp_ring_orphan(t, t->head, t->dropped);
	atomic_store_explicit((_Atomic uint32_t *)&t->ring->state, LP_RING_CLOSED, memory_order_release);
	t->state = LP_THREAD_OFF;
	/* the drain has its own mapping: the thread's can go, so that programs
	 * that start and end threads all day do not pile up rings */
	munmap(t->ring, t->map_size);
	t->ring = NULL;
	t->cur = t->limit = NULL;
	lp_mem_thread_release(t);
	t->busy = 0;
}
