/* The memory tracer's recording half: for each heap operation the
 * interposers report, the call stack (frame-pointer walk), its interned id
 * (a per-thread table) and the LP_EXT_STACK and LP_RAW_MEM records in the
 * thread's ring.  Called on every malloc and free of the program: no locks,
 * no allocation, no system calls except when a thread is set up. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"
#include "runtime/memtable.h"

/* Interned stacks per thread: open addressing over a fixed table, a probe
 * window of LP_STACKTAB_PROBE slots; a stack that finds its window full
 * evicts one entry and is defined under a new id.  Entries of an older
 * generation are empty: a reset is one increment. */
#define LP_STACKTAB_SLOTS 2048u
#define LP_STACKTAB_PROBE 8u
/* No code lives in the first page: a smaller "return address" ends a walk. */
#define LP_WALK_MIN_ADDR 4096u

struct lp_stackent {
	uint64_t hash;
	uint32_t id;  /* 0: empty */
	uint32_t gen; /* valid when equal to the table's */
	uint32_t n;
	uint32_t pad;
	uintptr_t ips[]; /* depth entries */
};

struct lp_stacktab {
	size_t map_size;
	size_t stride; /* bytes per entry */
	uint32_t depth;
	uint32_t gen;
	unsigned char ents[]; /* LP_STACKTAB_SLOTS entries of `stride` bytes */
};

LP_EXPORT __thread struct lp_memhook_state lp_memhook __attribute__((tls_model("initial-exec")));

static uint32_t mem_depth; /* 0 until read from the environment */

static LP_NOINSTR uint32_t depth_from_env(void)
{
	const char *s = getenv(LP_MEM_ENV_DEPTH);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return LP_MEM_DEPTH_DEFAULT;
	v = strtoul(s, &end, 10);
	if (*end || v < 1)
		return LP_MEM_DEPTH_DEFAULT;
	return v > LP_MEM_DEPTH_MAX ? LP_MEM_DEPTH_MAX : (uint32_t)v;
}

static inline LP_NOINSTR struct lp_stackent *tab_ent(struct lp_stacktab *tab, uint32_t i)
{
	return (struct lp_stackent *)(tab->ents + (size_t)i * tab->stride);
}

LP_NOINSTR void lp_mem_thread_reset(struct lp_thread *t)
{
	if (t->mem.tab)
		t->mem.tab->gen++;
	t->mem.next_id = 1;
	if (lp_proc.control)
		t->mem.epoch = atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->epoch, memory_order_relaxed);
}

LP_NOINSTR void lp_mem_thread_release(struct lp_thread *t)
{
	if (t->mem.tab)
		munmap(t->mem.tab, t->mem.tab->map_size);
	t->mem.tab = NULL;
	t->mem.state = LP_MEMT_NEW;
}

static LP_NOINSTR int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "start-end ..." at the start of a line of /proc/self/maps; false when
 * the line does not start that way. */
static LP_NOINSTR bool parse_range(const char *p, const char *end, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t v = 0;
	int d, n = 0;

	while (p < end && (d = hex_digit(*p)) >= 0) {
		v = v << 4 | (uintptr_t)d;
		p++;
		n++;
	}
	if (!n || p == end || *p != '-')
		return false;
	*lo = v;
	v = 0;
	n = 0;
	for (p++; p < end && (d = hex_digit(*p)) >= 0; p++, n++)
		v = v << 4 | (uintptr_t)d;
	*hi = v;
	return n > 0;
}

/* The mapping that holds the thread's stack (the one `sp` is in): the walk
 * never reads outside it.  Read from /proc/self/maps with plain system
 * calls, once per thread; no libc function that takes a lock or allocates
 * (pthread_getattr_np does both, and a thread may be inside it, holding
 * its own lock, when it first allocates).  Unknown bounds leave the walk
 * at the call site. */
static LP_NOINSTR void stack_bounds(struct lp_thread *t, uintptr_t sp)
{
	char buf[4096];
	size_t have = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	t->mem.stack_lo = t->mem.stack_hi = 0;
	if (fd < 0)
		return;
	for (;;) {
		ssize_t got = read(fd, buf + have, sizeof(buf) - have);
		char *line = buf, *nl, *end;

		if (got <= 0)
			break;
		end = buf + have + got;
		while ((nl = memchr(line, '\n', (size_t)(end - line)))) {
			uintptr_t lo, hi;

			if (parse_range(line, nl, &lo, &hi) && sp >= lo && sp < hi) {
				t->mem.stack_lo = lo;
				t->mem.stack_hi = hi;
				close(fd);
				return;
			}
			line = nl + 1;
		}
		/* a line longer than the buffer (a long path) is skipped whole */
		have = (size_t)(end - line);
		if (have == sizeof(buf))
			have = 0;
		else
			memmove(buf, line, have);
	}
	close(fd);
}

/* The first heap operation of a thread, or one the fast path cannot take:
 * sets the thread up.  Returns true when the operation can be recorded.
 * Runs under lp_memhook.guard (the caller's), so what libc allocates here
 * passes through. */
static LP_NOINSTR __attribute__((noinline, cold)) bool mem_thread_open(struct lp_thread *t)
{
	int saved_errno = errno;
	struct lp_stacktab *tab;
	size_t stride, size;
	uint32_t depth;
	void *map;
	bool ok = false;

	if (t->state == LP_THREAD_NEW) {
		/* before the runtime's constructor (the loader's own early
		 * allocations): leave the thread as it is */
		if (atomic_load_explicit(&lp_proc.init, memory_order_acquire) != 2)
			goto out;
		lp_thread_start(t);
	}
	if (t->state == LP_THREAD_LOST) {
		lp_loss_add(t, 1); /* no ring: the operation is counted */
		goto out;
	}
	if (t->state != LP_THREAD_READY)
		goto out;
	if (t->busy) {
		t->nested++; /* a signal handler's operation inside a gate */
		goto out;
	}
	if (t->mem.state == LP_MEMT_OFF) {
		t->nested++;
		goto out;
	}
	if (!t->mem.tab) {
		if (!mem_depth)
			mem_depth = depth_from_env();
		depth = mem_depth;
		stride = sizeof(struct lp_stackent) + depth * sizeof(uintptr_t);
		size = sizeof(struct lp_stacktab) + LP_STACKTAB_SLOTS * stride;
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED) {
			t->mem.state = LP_MEMT_OFF;
			t->nested++;
			goto out;
		}
		tab = map;
		tab->map_size = size;
		tab->stride = stride;
		tab->depth = depth;
		tab->gen = 1;
		t->mem.tab = tab;
	}
	if (!t->mem.walk_ready) {
		stack_bounds(t, (uintptr_t)__builtin_frame_address(0));
		t->mem.walk_ready = 1;
	}
	t->mem.state = LP_MEMT_READY;
	ok = true;
out:
	errno = saved_errno;
	return ok;
}

/* The call stack: the exact call site, then the return addresses of the
 * frame records above the interposer's frame.  A record is followed only
 * while it lies above the one before, aligned, inside the thread's stack,
 * and holds a return address outside the stack; so frames without frame
 * pointers end the walk early (or skip a caller), never fault. */
static inline LP_NOINSTR uint32_t stack_walk(const struct lp_thread *t, const void *ret, const void *frame,
                                             uintptr_t *ips, uint32_t depth)
{
	uint32_t n = 1, dyn = t->dyn_n;

	ips[0] = lp_dynpatch_ret(t, (uintptr_t)ret, &dyn);
#ifdef LP_ARCH_FRAME_WALK
	{
		const uintptr_t lo = t->mem.stack_lo, hi = t->mem.stack_hi;
		uintptr_t fp = (uintptr_t)frame;

		if (fp < lo || fp >= hi)
			return n;
		while (n < depth) {
			uintptr_t next = ((const uintptr_t *)fp)[0], ra;

			if (next <= fp || next > hi - 2 * sizeof(uintptr_t) || (next & (sizeof(uintptr_t) - 1)))
				break;
			ra = ((const uintptr_t *)next)[1];
			if (ra < LP_WALK_MIN_ADDR || (ra >= lo && ra < hi))
				break;
			ips[n++] = lp_dynpatch_ret(t, ra, &dyn);
			fp = next;
		}
	}
#else
	(void)t;
	(void)frame;
	(void)depth;
#endif
	return n;
}

static inline LP_NOINSTR uint64_t stack_hash(const uintptr_t *ips, uint32_t n)
{
	uint64_t h = n;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ (uint64_t)ips[i]) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* Short stacks: a loop beats a call to memcmp. */
static inline LP_NOINSTR bool same_stack(const uintptr_t *a, const uintptr_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* The LP_RAW_MEM record: two slots, three for REALLOC. */
static inline LP_NOINSTR void mem_put(struct lp_thread *t, uint32_t op_flags, uintptr_t ptr, uintptr_t size,
                                      uintptr_t old, uint32_t stack)
{
	uint32_t op = op_flags & 0xff, n = op == LP_MEM_REALLOC ? 3 : 2;
	struct lp_slot *s = t->cur;
	/* ordered: the release of a block another thread allocated must not
	 * read the clock before the load that handed it the pointer */
	uint64_t now = lp_clock_now_ordered();

	if (unlikely((size_t)(t->limit - s) < n))
		s = lp_ring_reserve(t, n, now);
	s[0].time = now;
	s[0].word = LP_RAW_MEM_PAYLOAD(op, op_flags >> 8, stack) | ((uint64_t)LP_RAW_MEM << LP_SLOT_TYPE_SHIFT);
	s[1].time = ptr;
	s[1].word = size;
	if (n == 3) {
		s[2].time = old;
		s[2].word = 0;
	}
	lp_ring_commit(t, s, n);
}

/* Writes the definition of a new id into the ring. */
static LP_NOINSTR __attribute__((noinline)) void stack_define(struct lp_thread *t, uint32_t id, const uintptr_t *ips,
                                                              uint32_t n)
{
	uint64_t buf[1 + LP_MEM_DEPTH_MAX];
	struct lp_ext_stack hdr = { .id = id, .n = n };

	memcpy(buf, &hdr, sizeof(hdr));
	for (uint32_t i = 0; i < n; i++)
		buf[1 + i] = ips[i];
	lp_ring_put_ext(t, LP_EXT_STACK, buf, sizeof(hdr) + (size_t)n * sizeof(uint64_t));
}

/* The stack's id in this stream, defining it first when it is new. */
static inline LP_NOINSTR uint32_t stack_intern(struct lp_thread *t, const uintptr_t *ips, uint32_t n)
{
	struct lp_stacktab *tab = t->mem.tab;
	uint32_t hint = (uint32_t)(ips[0] ^ ips[0] >> 7) & (LP_MEM_HINTS - 1), slot, i, id;
	struct lp_stackent *e = tab_ent(tab, t->mem.hint[hint]);
	uint64_t h;

	/* the stack last seen at this call site, without hashing */
	if (likely(e->gen == tab->gen && e->id && e->n == n && same_stack(e->ips, ips, n)))
		return e->id;
	h = stack_hash(ips, n);
	slot = (uint32_t)h & (LP_STACKTAB_SLOTS - 1);
	for (i = 0; i < LP_STACKTAB_PROBE; i++) {
		e = tab_ent(tab, (slot + i) & (LP_STACKTAB_SLOTS - 1));
		if (e->gen != tab->gen || !e->id)
			goto define;
		if (e->hash == h && e->n == n && same_stack(e->ips, ips, n)) {
			t->mem.hint[hint] = (slot + i) & (LP_STACKTAB_SLOTS - 1);
			return e->id;
		}
	}
	/* the window is full: evict one of its entries (which one is taken
	 * from the hash, so that stacks sharing a window take turns) */
	i = (uint32_t)(h >> 32) % LP_STACKTAB_PROBE;
	e = tab_ent(tab, (slot + i) & (LP_STACKTAB_SLOTS - 1));
define:
	t->mem.hint[hint] = (slot + i) & (LP_STACKTAB_SLOTS - 1);
	id = t->mem.next_id++;
	if (unlikely(!t->mem.next_id))
		t->mem.next_id = 1;
	e->hash = h;
	e->id = id;
	e->gen = tab->gen;
	e->n = n;
	memcpy(e->ips, ips, n * sizeof(uintptr_t));
	stack_define(t, id, ips, n);
	return id;
}

/* ---- the live-block table (memtable.h) ------------------------------ */

enum table_state { TABLE_UNDECIDED = 0, TABLE_DECIDING = 1, TABLE_OFF = 2, TABLE_ON = 3 };

static _Atomic int table_state;
static _Atomic uint32_t listed_epoch; /* the last epoch the heap was listed into */

/* Whether to keep the table: LAYERPROF_MEM_TABLE, else when the process
 * will make itself attachable (no recorder's session, the agent's attach
 * directory exists: see process.c). */
static LP_NOINSTR uint32_t table_slots_wanted(void)
{
	const char *v = getenv(LP_MEM_ENV_TABLE), *dir;
	struct stat st;
	char *end;
	unsigned long n;

	if (v && *v) {
		n = strtoul(v, &end, 10);
		if (*end || n == 0)
			return 0;
		if (n == 1)
			return MEMTABLE_SLOTS_DEFAULT;
		if (n < MEMTABLE_SLOTS_MIN || n > MEMTABLE_SLOTS_MAX || (n & (n - 1)))
			return MEMTABLE_SLOTS_DEFAULT;
		return (uint32_t)n;
	}
	v = getenv(LP_ENV_SESSION);
	if (v && *v)
		return 0;
	dir = getenv(LP_ENV_ATTACH_DIR);
	if (!dir || !*dir)
		dir = LP_ATTACH_DIR_DEFAULT;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return 0;
	return MEMTABLE_SLOTS_DEFAULT;
}

/* Decided on the first heap operation; a thread that arrives while another
 * decides goes on without the table for that operation. */
static LP_NOINSTR __attribute__((noinline, cold)) bool table_decide(void)
{
	int expect = TABLE_UNDECIDED, saved_errno = errno;
	uint32_t slots;

	if (!atomic_compare_exchange_strong(&table_state, &expect, TABLE_DECIDING))
		return false;
	if (!mem_depth)
		mem_depth = depth_from_env();
	slots = table_slots_wanted();
	atomic_store_explicit(&table_state, slots && !memtable_init(slots, mem_depth) ? TABLE_ON : TABLE_OFF,
	                      memory_order_release);
	errno = saved_errno;
	return atomic_load_explicit(&table_state, memory_order_relaxed) == TABLE_ON;
}

static inline LP_NOINSTR bool table_wanted(void)
{
	int st = atomic_load_explicit(&table_state, memory_order_acquire);

	if (likely(st == TABLE_OFF))
		return false;
	if (st == TABLE_ON)
		return true;
	return st == TABLE_UNDECIDED && table_decide();
}

static inline LP_NOINSTR uint32_t control_epoch(void)
{
	return lp_proc.control ? atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->epoch, memory_order_acquire)
	                       : 0;
}

static inline LP_NOINSTR bool is_alloc_op(uint32_t op)
{
	return op == LP_MEM_MALLOC || op == LP_MEM_CALLOC || op == LP_MEM_ALIGNED || op == LP_MEM_NEW ||
	       op == LP_MEM_NEW_ARRAY || op == LP_MEM_REALLOC;
}

/* Tells the table of one operation.  *f is the flags word as read before;
 * returns whether the operation goes into the stream, with *op_flags
 * completed (LP_MEM_KNOWN).  An allocation made while tracing was off and
 * found on right after is recorded only if no listing took it first. */
static LP_NOINSTR bool table_note(struct lp_thread *t, uint32_t *op_flags, uint32_t *f, uintptr_t ptr, uintptr_t size,
                                  uintptr_t old, const uintptr_t *ips, uint32_t n)
{
	uint32_t op = *op_flags & 0xff, flags = *op_flags >> 8, version, epoch;
	bool on = (*f & LP_CTL_ENABLED) && lp_proc.control, known = false;
	struct memtable_slot *slot;

	if (op == LP_MEM_REALLOC && (flags & LP_MEM_FAILED))
		return on; /* the old block stays */
	if (op == LP_MEM_REALLOC ? old && !(flags & LP_MEM_KEPT) : !is_alloc_op(op) && !(flags & LP_MEM_KEPT))
		known = memtable_remove(op == LP_MEM_REALLOC ? old : ptr);
	if (known)
		*op_flags |= (uint32_t)LP_MEM_KNOWN << 8;
	if (!is_alloc_op(op) || !ptr || (flags & LP_MEM_FAILED))
		return on;
	epoch = on ? control_epoch() : 0;
	{
		uint32_t hint = (uint32_t)(ips[0] ^ ips[0] >> 7) & (LP_MEM_HINTS - 1);
		uint32_t stack = memtable_stack(ips, n, &t->mem.table_hint[hint]);

		/* a realloc'd block is of malloc's family, listed as one */
		slot = memtable_insert(ptr, size, stack, (uint8_t)(op == LP_MEM_REALLOC ? LP_MEM_MALLOC : op), epoch,
		                       &version);
	}
	if (on)
		return true;
	/* tracing may have come on since the flags were read */
	*f = atomic_load_explicit((const _Atomic uint32_t *)lp_ctl_flags, memory_order_acquire);
	if (!(*f & LP_CTL_ENABLED) || !lp_proc.control)
		return false;
	return !slot || memtable_claim(slot, version, control_epoch());
}

LP_EXPORT LP_NOINSTR void lp_mem_forget(uintptr_t p)
{
	if (atomic_load_explicit(&table_state, memory_order_acquire) == TABLE_ON)
		memtable_remove(p);
}

/* ---- the heap listing ------------------------------------------------- */

#define LISTING_WAIT_MS 1000u /* at most this long waiting for room in the ring */

struct listing {
	struct lp_thread *t;
	uint64_t time;
	uint32_t waited_ms;
};

/* The listing goes faster than the recorder takes the ring in: waits for
 * room (bounded; beyond, records drop and are counted lost as usual). */
static LP_NOINSTR void listing_room(struct listing *l, uint32_t need)
{
	struct lp_thread *t = l->t;
	struct timespec ms = { 0, 1000000 };

	while (l->waited_ms < LISTING_WAIT_MS && t->head_ptr == &t->ring->head) {
		uint32_t tail = atomic_load_explicit((_Atomic uint32_t *)&t->ring->tail, memory_order_acquire);

		if ((uint32_t)(t->head - tail) + need + 2 * t->chunk_slots <= t->ring_slots)
			return;
		nanosleep(&ms, NULL);
		l->waited_ms++;
	}
}

static LP_NOINSTR void listing_block(void *ctx, uintptr_t p, uintptr_t size, uint8_t op, const uintptr_t *ips,
                                     uint32_t n)
{
	struct listing *l = ctx;
	struct lp_ext_mem r = { .ptr = p, .size = size, .op = op, .flags = LP_MEM_BEFORE };

	listing_room(l, 64);
	if (n > l->t->mem.tab->depth)
		n = l->t->mem.tab->depth;
	r.stack = n ? stack_intern(l->t, ips, n) : 0;
	lp_ring_put_ext_at(l->t, LP_EXT_MEM, &r, sizeof(r), l->time);
}

/* Tracing came on (epoch): the first thread to record lists the table,
 * every block not recorded already, as allocations from before (at one
 * time, taken before the first is read: whatever happens to a block later
 * is recorded later), and ends the listing with a BASELINE. */
static LP_NOINSTR __attribute__((noinline, cold)) void heap_listing(struct lp_thread *t, uint32_t epoch)
{
	uint32_t prev = atomic_load_explicit(&listed_epoch, memory_order_relaxed);
	struct listing l = { .t = t };
	struct memtable_listing res;
	struct lp_ext_mem end = { .op = LP_MEM_BASELINE };

	do {
		if (prev >= epoch)
			return;
	} while (!atomic_compare_exchange_weak_explicit(&listed_epoch, &prev, epoch, memory_order_acq_rel,
	                                                memory_order_relaxed));
	l.time = lp_clock_now();
	memtable_list(epoch, listing_block, &l, &res);
	end.ptr = res.blocks;
	end.size = res.bytes;
	end.flags = res.incomplete ? LP_MEM_INCOMPLETE : 0;
	listing_room(&l, 8);
	lp_ring_put_ext_at(t, LP_EXT_MEM, &end, sizeof(end), l.time);
}

/* Tracing is on and the heap has not been listed into this epoch yet:
 * list it now, before this operation is told to the table (so that a
 * release of an older block finds it listed). */
static LP_NOINSTR __attribute__((noinline, cold)) void listing_due(struct lp_thread *t)
{
	uint32_t epoch;

	if (t->busy || t->state == LP_THREAD_LOST)
		return; /* a signal handler's operation inside a gate: later; no ring: nothing to list into */
	if ((t->state != LP_THREAD_READY || t->mem.state != LP_MEMT_READY) && !mem_thread_open(t))
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	epoch = control_epoch();
	if (epoch != t->mem.epoch) {
		t->mem.tab->gen++;
		t->mem.epoch = epoch;
	}
	heap_listing(t, epoch);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* The first operation of a thread that walks for the table. */
static LP_NOINSTR __attribute__((noinline, cold)) void walk_open(struct lp_thread *t, const void *frame)
{
	int saved_errno = errno;

	stack_bounds(t, (uintptr_t)frame);
	t->mem.walk_ready = 1;
	errno = saved_errno;
}

LP_NOINSTR __attribute__((noinline, cold)) void lp_mem_reaped_flush(struct lp_thread *t)
{
	while (t->mem.reaped_out != t->mem.reaped_in) {
		struct lp_ext_reaped r = t->mem.reaped[t->mem.reaped_out % LP_MEM_REAPED_PENDING];

		lp_ring_put_ext(t, LP_EXT_REAPED, &r, sizeof(r));
		atomic_signal_fence(memory_order_seq_cst);
		t->mem.reaped_out++;
	}
}

LP_EXPORT LP_NOINSTR void lp_mem_record(uint32_t op_flags, uintptr_t ptr, uintptr_t size, uintptr_t old,
                                        const void *ret, const void *frame)
{
	uint32_t f = atomic_load_explicit((const _Atomic uint32_t *)lp_ctl_flags, memory_order_relaxed);
	struct lp_thread *t = &lp_self;
	uintptr_t ips[LP_MEM_DEPTH_MAX];
	uint32_t n = 0, epoch, stack;

	if (unlikely(table_wanted())) {
		if (unlikely(!t->mem.walk_ready))
			walk_open(t, frame);
		n = stack_walk(t, ret, frame, ips, mem_depth);
		if ((f & LP_CTL_ENABLED) && lp_proc.control &&
		    unlikely(atomic_load_explicit(&listed_epoch, memory_order_relaxed) < control_epoch()))
			listing_due(t);
		if (!table_note(t, &op_flags, &f, ptr, size, old, ips, n))
			return;
	} else if (unlikely(!(f & LP_CTL_ENABLED))) {
		return;
	}
	if (unlikely(t->state != LP_THREAD_READY || t->busy || t->mem.state != LP_MEMT_READY) && !mem_thread_open(t))
		return;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	epoch = atomic_load_explicit((_Atomic uint32_t *)&lp_proc.control->epoch, memory_order_relaxed);
	if (unlikely(epoch != t->mem.epoch)) {
		/* tracing was turned on anew: a later consumer may not have
		 * seen the definitions so far */
		t->mem.tab->gen++;
		t->mem.epoch = epoch;
	}
	if (n) {
		if (n > t->mem.tab->depth)
			n = t->mem.tab->depth;
	} else {
		n = stack_walk(t, ret, frame, ips, t->mem.tab->depth);
	}
	stack = stack_intern(t, ips, n);
	mem_put(t, op_flags, ptr, size, old, stack);
	if (unlikely(t->mem.reaped_in != t->mem.reaped_out))
		lp_mem_reaped_flush(t);
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

LP_EXPORT LP_NOINSTR void lp_mem_reaped(uint32_t pid, uint32_t status)
{
	struct lp_ext_reaped r = { .pid = pid, .status = status };
	struct lp_thread *t = &lp_self;
	int saved_errno = errno;

	if (t->state == LP_THREAD_NEW && atomic_load_explicit(&lp_proc.init, memory_order_acquire) == 2)
		lp_thread_start(t);
	if (t->state != LP_THREAD_READY)
		goto out;
	if (t->busy) {
		/* a signal handler's wait inside a gate: the thread's next heap
		 * operation writes it (counted lost only when too many wait) */
		if (t->mem.reaped_in - t->mem.reaped_out < LP_MEM_REAPED_PENDING) {
			t->mem.reaped[t->mem.reaped_in % LP_MEM_REAPED_PENDING] = r;
			atomic_signal_fence(memory_order_seq_cst);
			t->mem.reaped_in++;
		} else {
			t->nested++;
		}
		goto out;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (t->mem.reaped_in != t->mem.reaped_out)
		lp_mem_reaped_flush(t); /* the earlier ones first */
	lp_ring_put_ext(t, LP_EXT_REAPED, &r, sizeof(r));
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
out:
	errno = saved_errno;
}
