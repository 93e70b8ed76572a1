/* The live-block table of the memory tracer: every heap block the program
 * holds, with its size, the operation and the stack that made it, kept
 * whether tracing is on or off.  When tracing is turned on in a program
 * that has run for a while (an attach), the runtime lists the table into
 * the stream (mem.c), so that the host starts from the whole heap instead
 * of from nothing.
 *
 * Kept in a process that can be attached to (LAYERPROF_ATTACH_DIR, no
 * recorder's session from the start), or on request (LAYERPROF_MEM_TABLE).
 * Private anonymous memory: a forked child gets its parent's table as it
 * was at the fork, which is its heap.
 *
 * Lock-free, so usable from any thread and from signal handlers: blocks
 * by open addressing with linear probing (a block's slot never moves);
 * stacks in an append-only store.  Each slot has a version, bumped when its
 * block changes, and a mark, the tracing epoch in which the block went into
 * the stream (recorded as it was made, or listed): the two share one word,
 * so that a block goes into a stream once, whether the thread that made it
 * or the listing gets there first. */
#ifndef LP_MEMTABLE_H
#define LP_MEMTABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* "0": no table; "1": a table; a power of two from 1024 to 2^26: a table
 * of that many slots.  Unset: a table when the process can be attached. */
#define LP_MEM_ENV_TABLE "LAYERPROF_MEM_TABLE"
#define MEMTABLE_SLOTS_DEFAULT (1u << 19)
#define MEMTABLE_SLOTS_MIN (1u << 10)
#define MEMTABLE_SLOTS_MAX (1u << 26)
/* Distinct stacks the store holds; later ones are listed without one. */
#define MEMTABLE_STACKS (1u << 14)
/* An insert that probes this far gives up: the table is too full. */
#define MEMTABLE_PROBE_MAX 4096u

struct memtable_slot {
	_Atomic uintptr_t key;  /* the block, or one of the KEY_* markers */
	_Atomic uintptr_t size; /* bytes asked for */
	_Atomic uint64_t state; /* version << 32 | mark */
	_Atomic uint32_t info;  /* stack index << 8 | enum lp_mem_op */
	uint32_t pad;
};

/* What one listing gave (memtable_list). */
struct memtable_listing {
	uint64_t blocks, bytes;
	uint64_t unattributed; /* blocks whose stack the store had no room for */
	bool incomplete;       /* the table missed blocks (it was full once) */
};

/* Maps the table (slots: a power of two) and the stack store (stacks of at
 * most depth frames).  Returns 0 or -ENOMEM. */
int memtable_init(uint32_t slots, uint32_t depth);
/* True once memtable_init succeeded. */
bool memtable_on(void);
/* The stack's index in the store (from 1), added when new; 0 when the
 * store is full (the listing then counts the block unattributed).  hint:
 * the caller's memory of the index this call site had last time, tried
 * first and updated.  Deeper stacks are cut to the depth given to
 * memtable_init. */
uint32_t memtable_stack(const uintptr_t *ips, uint32_t n, uint32_t *hint);
/* The program got block p.  mark: the epoch it is recorded in (0: none
 * yet).  Returns the slot and its version (for memtable_claim), or NULL
 * when the table has no room (from then on listings are incomplete). */
struct memtable_slot *memtable_insert(uintptr_t p, uintptr_t size, uint32_t stack, uint8_t op, uint32_t mark,
                                      uint32_t *version);
/* Marks the block just inserted as recorded in epoch; false when it was
 * listed into that epoch already (or is gone): it must not be recorded. */
bool memtable_claim(struct memtable_slot *s, uint32_t version, uint32_t epoch);
/* The program releases p: true when the table held it. */
bool memtable_remove(uintptr_t p);
/* Calls fn for every block not yet in epoch's stream, marking it so. */
typedef void (*memtable_fn)(void *ctx, uintptr_t p, uintptr_t size, uint8_t op, const uintptr_t *ips, uint32_t n);
void memtable_list(uint32_t epoch, memtable_fn fn, void *ctx, struct memtable_listing *out);

#endif
