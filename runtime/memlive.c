/* The keep-alive set of live heap blocks (see memlive.h). */
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "runtime.h"
#include "runtime/memlive.h"

#define SLOT_EMPTY ((uintptr_t)0)
#define SLOT_TOMB ((uintptr_t)1) /* a removed block: probes go on past it */

static _Atomic uintptr_t *live_slots;
static _Atomic int live_overflow;

LP_NOINSTR int memlive_init(void)
{
	void *map = mmap(NULL, (size_t)MEMLIVE_SLOTS * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (map == MAP_FAILED)
		return -ENOMEM;
	live_slots = map;
	return 0;
}

LP_NOINSTR bool memlive_active(void)
{
	return live_slots && !atomic_load_explicit(&live_overflow, memory_order_relaxed);
}

LP_NOINSTR bool memlive_overflowed(void)
{
	return atomic_load_explicit(&live_overflow, memory_order_relaxed) != 0;
}

static inline LP_NOINSTR uint32_t live_hash(uintptr_t p)
{
	uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 40) & (MEMLIVE_SLOTS - 1);
}

/* Blocks are inserted only by the thread that got them, and a block cannot
 * be handed out twice while live, so no two threads insert the same value
 * at once: the probe either finds it (inserted before on this thread) or
 * reaches an empty slot, and the value goes into the first free slot seen. */
LP_NOINSTR void memlive_insert(uintptr_t p)
{
	uint32_t i = live_hash(p), n;

	if (!live_slots)
		return;
	for (;;) {
		_Atomic uintptr_t *free_slot = NULL;

		for (n = 0; n < MEMLIVE_PROBE_MAX; n++, i = (i + 1) & (MEMLIVE_SLOTS - 1)) {
			uintptr_t v = atomic_load_explicit(&live_slots[i], memory_order_acquire);

			if (v == p)
				return;
			if (v == SLOT_TOMB && !free_slot)
				free_slot = &live_slots[i];
			if (v == SLOT_EMPTY) {
				if (!free_slot)
					free_slot = &live_slots[i];
				break;
			}
		}
		if (!free_slot) {
			atomic_store_explicit(&live_overflow, 1, memory_order_relaxed);
			return;
		}
		{
			uintptr_t expect = atomic_load_explicit(free_slot, memory_order_relaxed);

			if ((expect == SLOT_EMPTY || expect == SLOT_TOMB) &&
			    atomic_compare_exchange_strong_explicit(free_slot, &expect, p, memory_order_acq_rel,
			                                            memory_order_relaxed))
				return;
		}
		/* another thread took the slot: probe again */
		i = live_hash(p);
	}
}

/* A removed block's slot becomes a tombstone; tombstones at the end of a
 * probe chain (the next slot is empty, so no chain passes through them)
 * become empty again, so that churn does not fill the set with them. */
LP_NOINSTR bool memlive_remove(uintptr_t p)
{
	uint32_t i = live_hash(p), n, j;

	if (!live_slots || p <= SLOT_TOMB)
		return false;
	for (n = 0; n < MEMLIVE_PROBE_MAX; n++, i = (i + 1) & (MEMLIVE_SLOTS - 1)) {
		uintptr_t v = atomic_load_explicit(&live_slots[i], memory_order_acquire);

		if (v == SLOT_EMPTY)
			return false;
		if (v != p)
			continue;
		if (!atomic_compare_exchange_strong_explicit(&live_slots[i], &v, SLOT_TOMB, memory_order_acq_rel,
		                                             memory_order_relaxed))
			return false; /* another thread released it first */
		for (j = i, n = 0; n < MEMLIVE_PROBE_MAX; n++, j = (j - 1) & (MEMLIVE_SLOTS - 1)) {
			uintptr_t tomb = SLOT_TOMB;

			if (atomic_load_explicit(&live_slots[(j + 1) & (MEMLIVE_SLOTS - 1)], memory_order_acquire) !=
			        SLOT_EMPTY ||
			    !atomic_compare_exchange_strong_explicit(&live_slots[j], &tomb, SLOT_EMPTY,
			                                             memory_order_acq_rel, memory_order_relaxed))
				break;
		}
		return true;
	}
	return false;
}
