/* The live-block table of the memory tracer (see memtable.h). */
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#include "runtime.h"
#include "runtime/memtable.h"

#define KEY_EMPTY ((uintptr_t)0)
#define KEY_TOMB ((uintptr_t)1)    /* a removed block: probes go on past it */
#define KEY_CLAIMED ((uintptr_t)2) /* being filled: not a block yet */
#define VERSION_ONE ((uint64_t)1 << 32)
#define MARK(state) ((uint32_t)(state))

#define STACK_EMPTY 0u
#define STACK_WRITING 1u
#define STACK_READY 2u
#define STACK_PROBE 16u

struct stack_ent {
	_Atomic uint32_t state;
	uint32_t n;
	uint64_t hash;
	uintptr_t ips[]; /* depth entries */
};

static struct memtable_slot *slots;
static uint32_t nslots;
static unsigned char *stacks;
static size_t stack_stride;
static uint32_t stack_depth;
static _Atomic int overflowed;

LP_NOINSTR int memtable_init(uint32_t n, uint32_t depth)
{
	size_t stride = sizeof(struct stack_ent) + (size_t)depth * sizeof(uintptr_t);
	void *a, *b;

	if (n < MEMTABLE_SLOTS_MIN || n > MEMTABLE_SLOTS_MAX || (n & (n - 1)) || !depth)
		return -EINVAL;
	stride = (stride + 7) & ~(size_t)7;
	a = mmap(NULL, (size_t)n * sizeof(struct memtable_slot), PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a == MAP_FAILED)
		return -ENOMEM;
	b = mmap(NULL, (size_t)MEMTABLE_STACKS * stride, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (b == MAP_FAILED) {
		munmap(a, (size_t)n * sizeof(struct memtable_slot));
		return -ENOMEM;
	}
	stacks = b;
	stack_stride = stride;
	stack_depth = depth;
	nslots = n;
	atomic_thread_fence(memory_order_release);
	slots = a;
	return 0;
}

LP_NOINSTR bool memtable_on(void)
{
	return slots != NULL;
}

static inline LP_NOINSTR struct stack_ent *stack_at(uint32_t i)
{
	return (struct stack_ent *)(stacks + (size_t)i * stack_stride);
}

static inline LP_NOINSTR bool stack_is(const struct stack_ent *e, uint64_t h, const uintptr_t *ips, uint32_t n)
{
	if (e->hash != h || e->n != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (e->ips[i] != ips[i])
			return false;
	return true;
}

LP_NOINSTR uint32_t memtable_stack(const uintptr_t *ips, uint32_t n, uint32_t *hint)
{
	uint64_t h = n;
	uint32_t i, k;

	if (n > stack_depth)
		n = stack_depth;
	for (i = 0; i < n; i++)
		h = (h ^ (uint64_t)ips[i]) * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	/* the stack this call site had last time */
	if (*hint && *hint <= MEMTABLE_STACKS) {
		struct stack_ent *e = stack_at(*hint - 1);

		if (atomic_load_explicit(&e->state, memory_order_acquire) == STACK_READY && stack_is(e, h, ips, n))
			return *hint;
	}
	for (k = 0, i = (uint32_t)h & (MEMTABLE_STACKS - 1); k < STACK_PROBE;
	     k++, i = (i + 1) & (MEMTABLE_STACKS - 1)) {
		struct stack_ent *e = stack_at(i);
		uint32_t st = atomic_load_explicit(&e->state, memory_order_acquire);

		if (st == STACK_EMPTY) {
			if (!atomic_compare_exchange_strong_explicit(&e->state, &st, STACK_WRITING,
			                                             memory_order_acq_rel, memory_order_acquire)) {
				/* taken meanwhile: it may be this very stack */
				if (st == STACK_READY && stack_is(e, h, ips, n))
					return *hint = i + 1;
				continue;
			}
			e->hash = h;
			e->n = n;
			for (uint32_t j = 0; j < n; j++)
				e->ips[j] = ips[j];
			atomic_store_explicit(&e->state, STACK_READY, memory_order_release);
			return *hint = i + 1;
		}
		/* a stack being written by another thread is passed: at worst
		 * the same stack gets two entries */
		if (st == STACK_READY && stack_is(e, h, ips, n))
			return *hint = i + 1;
	}
	return 0;
}

static inline LP_NOINSTR uint32_t slot_hash(uintptr_t p)
{
	uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & (nslots - 1);
}

/* Gives slot s to block p: its version moves on, then its fields, then
 * the key, which makes it visible. */
static inline LP_NOINSTR uint32_t slot_fill(struct memtable_slot *s, uintptr_t p, uintptr_t size, uint32_t info,
                                            uint32_t mark)
{
	uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
	uint32_t version = (uint32_t)(st >> 32) + 1;

	atomic_store_explicit(&s->size, size, memory_order_relaxed);
	atomic_store_explicit(&s->info, info, memory_order_relaxed);
	atomic_store_explicit(&s->state, (uint64_t)version << 32 | mark, memory_order_release);
	atomic_store_explicit(&s->key, p, memory_order_release);
	return version;
}

/* Blocks are inserted by the thread that got them, and a live block is
 * never handed out twice, so no two threads insert the same address at
 * once.  An address found in the table already was released without the
 * table hearing of it (by a path not traced): its slot is reused. */
LP_NOINSTR struct memtable_slot *memtable_insert(uintptr_t p, uintptr_t size, uint32_t stack, uint8_t op, uint32_t mark,
                                                 uint32_t *version)
{
	uint32_t info = stack << 8 | op, i, n;

	if (!slots || p <= KEY_CLAIMED)
		return NULL;
	for (;;) {
		struct memtable_slot *free_slot = NULL;

		for (n = 0, i = slot_hash(p); n < MEMTABLE_PROBE_MAX; n++, i = (i + 1) & (nslots - 1)) {
			struct memtable_slot *s = &slots[i];
			uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);

			if (k == p) {
				atomic_fetch_add_explicit(&s->state, VERSION_ONE, memory_order_acq_rel);
				atomic_store_explicit(&s->key, KEY_CLAIMED, memory_order_release);
				*version = slot_fill(s, p, size, info, mark);
				return s;
			}
			if (k == KEY_TOMB && !free_slot)
				free_slot = s;
			if (k == KEY_EMPTY) {
				if (!free_slot)
					free_slot = s;
				break;
			}
		}
		if (!free_slot) {
			atomic_store_explicit(&overflowed, 1, memory_order_relaxed);
			return NULL;
		}
		{
			uintptr_t expect = atomic_load_explicit(&free_slot->key, memory_order_relaxed);

			if ((expect == KEY_EMPTY || expect == KEY_TOMB) &&
			    atomic_compare_exchange_strong_explicit(&free_slot->key, &expect, KEY_CLAIMED,
			                                            memory_order_acq_rel, memory_order_relaxed)) {
				*version = slot_fill(free_slot, p, size, info, mark);
				return free_slot;
			}
		}
		/* another thread took the slot: probe again */
	}
}

LP_NOINSTR bool memtable_claim(struct memtable_slot *s, uint32_t version, uint32_t epoch)
{
	uint64_t expect = (uint64_t)version << 32 | MARK(atomic_load_explicit(&s->state, memory_order_relaxed));

	for (;;) {
		if ((uint32_t)(expect >> 32) != version || MARK(expect) == epoch)
			return false;
		if (atomic_compare_exchange_weak_explicit(&s->state, &expect, (uint64_t)version << 32 | epoch,
		                                          memory_order_acq_rel, memory_order_acquire))
			return true;
	}
}

/* A removed block's slot becomes a tombstone; tombstones at the end of a
 * probe chain (the next slot is empty) become empty again. */
LP_NOINSTR bool memtable_remove(uintptr_t p)
{
	uint32_t i, n, j;

	if (!slots || p <= KEY_CLAIMED)
		return false;
	for (n = 0, i = slot_hash(p); n < MEMTABLE_PROBE_MAX; n++, i = (i + 1) & (nslots - 1)) {
		struct memtable_slot *s = &slots[i];
		uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);

		if (k == KEY_EMPTY)
			return false;
		if (k != p)
			continue;
		/* the version first: a listing that read the block before
		 * cannot mark what comes after */
		atomic_fetch_add_explicit(&s->state, VERSION_ONE, memory_order_acq_rel);
		if (!atomic_compare_exchange_strong_explicit(&s->key, &k, KEY_TOMB, memory_order_acq_rel,
		                                             memory_order_relaxed))
			return false; /* another thread released it first */
		for (j = i, n = 0; n < MEMTABLE_PROBE_MAX; n++, j = (j - 1) & (nslots - 1)) {
			uintptr_t tomb = KEY_TOMB;

			if (atomic_load_explicit(&slots[(j + 1) & (nslots - 1)].key, memory_order_acquire) !=
			        KEY_EMPTY ||
			    !atomic_compare_exchange_strong_explicit(&slots[j].key, &tomb, KEY_EMPTY,
			                                             memory_order_acq_rel, memory_order_relaxed))
				break;
		}
		return true;
	}
	return false;
}

LP_NOINSTR void memtable_list(uint32_t epoch, memtable_fn fn, void *ctx, struct memtable_listing *out)
{
	uint32_t i;

	out->blocks = out->bytes = out->unattributed = 0;
	out->incomplete = false;
	if (!slots)
		return;
	for (i = 0; i < nslots; i++) {
		struct memtable_slot *s = &slots[i];
		int tries;

		for (tries = 0; tries < 8; tries++) {
			uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);
			uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire), size;
			uint32_t info, stack;

			if (k <= KEY_CLAIMED || MARK(st) == epoch)
				break;
			size = atomic_load_explicit(&s->size, memory_order_relaxed);
			info = atomic_load_explicit(&s->info, memory_order_relaxed);
			if (!atomic_compare_exchange_strong_explicit(&s->state, &st,
			                                             (st & ~(uint64_t)0xffffffffu) | epoch,
			                                             memory_order_acq_rel, memory_order_relaxed))
				continue; /* the block changed meanwhile: read it again */
			stack = info >> 8;
			if (stack && stack <= MEMTABLE_STACKS) {
				const struct stack_ent *e = stack_at(stack - 1);

				fn(ctx, k, size, (uint8_t)info, e->ips, e->n);
			} else {
				fn(ctx, k, size, (uint8_t)info, NULL, 0);
				out->unattributed++;
			}
			out->blocks++;
			out->bytes += size;
			break;
		}
	}
	out->incomplete = atomic_load_explicit(&overflowed, memory_order_relaxed) != 0;
}
