/* The one contract between the target side (runtime, agent) and the host tools:
 * the shared-memory ring layout and the trace chunk/event encoding.
 * docs/format.md describes the same thing in prose; keep both in step. */
#ifndef LAYERPROF_FORMAT_H
#define LAYERPROF_FORMAT_H

#include <stdint.h>

/* ---------------------------------------------------------------------------
 * Session directory (record/agent <-> runtime).
 *
 * The recorder creates a directory (usually under /dev/shm) and exports its
 * path in LP_ENV_SESSION.  It holds:
 *   control          struct lp_control, written by the recorder
 *   lost             struct lp_loss_table, written by the recorder (optional)
 *   r.<pid>.<tid>.<image>   one ring per traced thread, created by the runtime
 *   d.<pid>.<tid>.<image>   the same ring once `record` has opened it: kept
 *                    until its thread's stream is closed, so that what a
 *                    killed recorder left in it can be recovered (the agent
 *                    removes a ring's name as soon as it has mapped it)
 *   plan.<n>         the patch plans of record --dynamic (LP_PLAN_NAME)
 * ------------------------------------------------------------------------- */
#define LP_ENV_SESSION "LAYERPROF_SESSION"
#define LP_CONTROL_NAME "control"
#define LP_RING_PREFIX "r."
#define LP_RING_DRAINED_PREFIX "d."

/* Attachable processes: a program that runs with the runtime but without a
 * session makes itself one, stopped, in <attach dir>/<pid> when the attach
 * directory exists (the agent creates it).  The agent attaches by mapping
 * that session and turning tracing on. */
#define LP_ENV_ATTACH_DIR "LAYERPROF_ATTACH_DIR"
#define LP_ATTACH_DIR_DEFAULT "/dev/shm/layerprof-attach"
#define LP_ATTACH_RING_CHUNKS 128u
#define LP_ATTACH_CHUNK_SLOTS 4096u

/* The heap tracer's settings, given to the runtime by the recorder or agent
 * that starts the program: the stack depth in LP_MEM_ENV_DEPTH frames (the
 * call site counts as one), default 16, at most 64; LP_MEM_ENV_KEEPALIVE
 * "1" keeps the program alive on an illegal release (runtime/memlive.h). */
#define LP_MEM_ENV_DEPTH "LAYERPROF_MEM_DEPTH"
#define LP_MEM_DEPTH_DEFAULT 16u
#define LP_MEM_DEPTH_MAX 64u
#define LP_MEM_ENV_KEEPALIVE "LAYERPROF_MEM_KEEPALIVE"

#define LP_CONTROL_MAGIC 0x4c50434eu /* "LPCN" */
#define LP_RING_MAGIC 0x4c50524eu    /* "LPRN" */
#define LP_SHM_VERSION 1u

enum lp_clock_kind {
	LP_CLOCK_MONOTONIC = 0, /* clock_gettime(CLOCK_MONOTONIC), ns */
	LP_CLOCK_TSC = 1,       /* x86 rdtsc, converted by the drain */
	LP_CLOCK_CNTVCT = 2,    /* aarch64 virtual counter, converted by the drain */
};

enum lp_control_flags {
	LP_CTL_ENABLED = 1u << 0,  /* gates record; cleared: one flag check per gate */
	LP_CTL_FILTERED = 1u << 1, /* source filters apply: see struct lp_filter_file */
	LP_CTL_HOLD = 1u << 2,     /* a starting process waits (at most 5 s) until cleared */
	/* a forked child opens its ring at once, not at its first gate: its
	 * functions are traced from outside (record --dynamic), and the ring
	 * names its code mappings */
	LP_CTL_EAGER = 1u << 3,
};

/* Written by the recorder or agent; read by every traced process.  The
 * geometry and clock never change; flags and the filter fields do, at any
 * time (gates read flags on every call). */
struct lp_control {
	uint32_t magic;
	uint32_t version;
	uint32_t clock;       /* enum lp_clock_kind */
	uint32_t ring_chunks; /* chunks per thread ring */
	uint32_t chunk_slots; /* slots per chunk (power of two) */
	uint32_t epoch;       /* bumped each time tracing is turned on: the
	                       * memory tracer then defines its stack ids anew */
	uint32_t flags;       /* enum lp_control_flags; read with acquire */
	uint32_t next_image;  /* atomic counter: a new id per process image */
	/* source filters, valid while LP_CTL_FILTERED is set */
	uint32_t max_depth;  /* record calls up to this depth; 0: any */
	uint32_t filter_gen; /* bumped when the filter file changes */
	uint64_t min_raw;    /* record calls at least this long, in clock units; 0: all */
	uint32_t plans;      /* patch plans in the session (LP_PLAN_NAME): set before
	                      * the program starts, grown by the answers below */
	/* a process whose executable has no plan (one the program exec'd)
	 * writes LP_PLAN_WANT_NAME.<its ticket> with its executable's path
	 * and takes a ticket (atomic add to plan_wants); the drain plans the
	 * file, then sets plan_answers to the tickets it has answered (a plan
	 * made or not): the process waits for that, at most LP_PLAN_WAIT_MS */
	uint32_t plan_wants;
	uint32_t plan_answers;
	uint8_t pad[4];
	/* What a producer does when its ring has no room (enum lp_ring_full),
	 * and what it needs to know to wait without waiting forever.  On a
	 * cache line of its own: drain_beat changes on every poll. */
	uint32_t ring_full;      /* enum lp_ring_full; set before the program starts */
	uint32_t drain_pid;      /* the drain's process (0: unknown): gone means no wait */
	uint32_t stall_ms;       /* give up waiting after this long without a poll */
	uint32_t drain_sleeping; /* atomic: the drain sleeps between polls (on drain_wake) */
	uint64_t drain_beat;     /* atomic: bumped by every poll of the drain */
	uint32_t drain_wake;     /* atomic, a futex word: a producer about to wait bumps
	                          * it and wakes a sleeping drain */
	uint8_t pad2[36];
	/* threads that ran without a ring and have no entry in the loss table
	 * (full, or none in the session), and their events; atomic, added to
	 * by the runtime */
	uint32_t unrecorded_threads;
	uint32_t reserved;
	uint64_t unrecorded_events;
	uint8_t pad3[48];
};

/* Threads that run without a ring: no space for one in the session's file
 * system (the runtime reserves a ring's space when it creates it, and
 * makes the ring smaller, down to LP_RING_MIN_CHUNKS chunks of
 * LP_RING_MIN_CHUNK_SLOTS slots, before it gives up), or the session
 * directory was removed.  Each such thread counts the
 * events it could not record in an entry of the loss table, which the
 * recorder creates with its space reserved; the drain reports an entry's
 * count as LOST events of a stream of the thread's own (image, pid, tid),
 * opened with TASK START (name: comm).  Threads that find no free entry,
 * or no table, count in struct lp_control (the drain reports those as a
 * stream of image 0, pid 0, tid 0). */
#define LP_LOSS_NAME "lost"
#define LP_LOSS_MAGIC 0x4c504c53u /* "LPLS" */
#define LP_LOSS_ENTRIES 512u
/* A ring may be smaller than the control block says (never larger): fewer
 * chunks, then smaller ones; its header has its own geometry. */
#define LP_RING_MIN_CHUNKS 4u
#define LP_RING_MIN_CHUNK_SLOTS 256u

enum lp_loss_state {
	LP_LOSS_FREE = 0,    /* a thread may claim it (compare and swap) */
	LP_LOSS_CLAIMED = 1, /* its thread is writing who it is */
	LP_LOSS_LIVE = 2,    /* identity set; events grows */
	LP_LOSS_ENDED = 3,   /* the thread ended: events is final; the drain
	                      * frees it once reported */
};

/* One cache line: only its thread writes it while it is LIVE. */
struct lp_loss_entry {
	uint32_t state; /* atomic, enum lp_loss_state */
	uint32_t pid;
	uint32_t tid;
	uint32_t image;
	uint64_t events; /* atomic: events not recorded so far */
	uint32_t error;  /* errno of the ring that could not be made */
	uint32_t reserved;
	char comm[16];
	uint8_t pad[16];
};

struct lp_loss_table {
	uint32_t magic;
	uint32_t version; /* LP_SHM_VERSION */
	uint32_t entries; /* LP_LOSS_ENTRIES */
	uint32_t reserved;
	uint8_t pad[48];
	struct lp_loss_entry entry[LP_LOSS_ENTRIES];
};

/* The two answers to a full ring.  `record` waits, so that its trace is
 * complete; `live` and an attached agent discard, so that a device never
 * stalls.  Either way what is dropped is counted. */
enum lp_ring_full {
	LP_RING_FULL_DISCARD = 0, /* drop the next chunk's worth of events, count them */
	LP_RING_FULL_WAIT = 1,    /* wait for the drain to free a chunk: spin briefly,
	                           * then futex-wait on the ring's tail; give up (and
	                           * discard) when the drain is gone or makes no poll
	                           * for stall_ms */
};
#define LP_STALL_MS_DEFAULT 1000u

enum lp_ring_state {
	LP_RING_LIVE = 0,
	LP_RING_CLOSED = 1, /* thread ended: head is final */
};

/* Source filters (live profiling): the agent writes the inactive half of
 * the file "filters" in the session directory, makes it active, bumps
 * filter_gen and sets LP_CTL_FILTERED.  A set lists function entry
 * addresses, sorted: the first n_only are the only functions recorded (none:
 * all), the next n_exclude are never recorded.  Unlike the recorder's
 * filters, these act on single functions, not subtrees, so a filtered stream
 * has gaps: readers show flat numbers only.  With min_raw, a call is written
 * at its exit as one LP_EXT_CALL record, and only when it lasted long enough. */
#define LP_FILTER_NAME "filters"
#define LP_FILTER_MAGIC 0x4c50464cu /* "LPFL" */
#define LP_FILTER_ADDRS_MAX 8192u

struct lp_filter_set {
	uint32_t n_only;
	uint32_t n_exclude;
	uint64_t addr[LP_FILTER_ADDRS_MAX];
};

struct lp_filter_file {
	uint32_t magic;
	uint32_t version;
	uint32_t active; /* 0 or 1: the set gates read */
	uint32_t reserved;
	struct lp_filter_set set[2];
};

/* The patch plan (record --dynamic, in-process patching): the recorder
 * decodes the selected functions' first instructions and writes, in the
 * file "plan" of the session directory, for each function the bytes it
 * decoded, how many of them the runtime replaces with a jump to a
 * trampoline, and those instructions relocated (their code, with fields to
 * fill in once the load address is known); one file per executable file
 * (the program, the libraries --dynamic names).  The runtime applies each
 * to the loaded objects that are its file (device and inode): in its
 * constructor, before the program's own code runs, and after each dlopen
 * (a library loaded again after a dlclose is patched again).  A function whose
 * bytes in memory differ from the plan's, or whose trampoline would be out
 * of a jump's reach, is left as it is.  It writes each function's outcome
 * in `status`, which the recorder reports. */
#define LP_PLAN_NAME "plan" /* plan.0 (the program), plan.1, ... (libraries) */
#define LP_PLAN_FILES_MAX 16u
#define LP_PLAN_WANT_NAME "want"
#define LP_PLAN_WAIT_MS 2000u
#define LP_PLAN_APPLIED_MAX 64u   /* objects patched at once in a process */
#define LP_PLAN_MAGIC 0x4c50504eu /* "LPPN" */
#define LP_PLAN_VERSION 2u        /* 2: lp_plan_func.args */
#define LP_PLAN_ORIG_MAX 24u      /* bytes replaced at an entry, at most */

enum lp_plan_arch {
	LP_PLAN_X86_64 = 1,  /* jmp rel32 at the entry: the trampoline within 2 GiB */
	LP_PLAN_AARCH64 = 2, /* b at the entry: the trampoline within 128 MiB */
	LP_PLAN_ARM = 3,     /* 32-bit ARM: b (ARM code) or b.w (Thumb code) at
	                      * the entry: the trampoline within 16 MiB */
};

enum lp_plan_reloc_kind {
	LP_PLAN_REL32 = 0, /* int32 at `at` = target + bias - (code + end) */
	LP_PLAN_ABS64 = 1, /* uint64 at `at` = target + bias */
	LP_PLAN_B26 = 2,   /* aarch64 b/bl at `at`: imm26 = (target + bias - (code + at)) / 4 */
	LP_PLAN_ABS32 = 3, /* uint32 at `at` = target + bias (32-bit ARM's literals) */
};

enum lp_plan_status {
	LP_PLAN_PENDING = 0,   /* no process applied it (yet) */
	LP_PLAN_PATCHED = 1,   /* the entry jumps to its trampoline */
	LP_PLAN_CHANGED = 2,   /* the bytes in memory are not the plan's */
	LP_PLAN_FAR = 3,       /* no trampoline within reach */
	LP_PLAN_UNWRITABLE = 4 /* the code could not be made writable */
};

struct lp_plan_header {
	uint32_t magic;
	uint32_t version;
	uint32_t arch;   /* enum lp_plan_arch */
	uint32_t nfuncs; /* struct lp_plan_func after the header */
	uint64_t dev;    /* the executable's st_dev and st_ino */
	uint64_t ino;
	uint32_t nrelocs;    /* struct lp_plan_reloc after the functions */
	uint32_t code_bytes; /* relocated code, after the relocations */
	uint8_t pad[24];
};

struct lp_plan_func {
	uint64_t addr;      /* the entry, as linked (the load bias is added);
	                     * 32-bit ARM: bit 0 set for Thumb code, as in its
	                     * symbol */
	uint32_t patch_len; /* bytes replaced there (x86-64: whole instructions,
	                     * or the function and padding after it; aarch64
	                     * and 32-bit ARM: 4) */
	uint32_t code_off;  /* its relocated instructions in the code area, */
	uint32_t code_len;  /* ending with the jump back to addr + patch_len */
	uint32_t reloc_first;
	uint32_t nrelocs;
	uint32_t status;   /* enum lp_plan_status, written by the runtime */
	uint32_t args;     /* LP_PLAN_ARGS_*: what the runtime keeps of the
	                    * function's arguments and return value (a libc
	                    * function of --libcalls); 0: nothing */
	uint16_t trap;     /* x86-64: 1 when the entry gets an int3 (patch_len
	                    * 1) instead of a jump: the function cannot hold one */
	uint16_t orig_len; /* with trap: the bytes of orig the runtime checks
	                    * (its first instruction); else patch_len */
	uint32_t kind;     /* enum lp_plan_kind */
	uint8_t orig[LP_PLAN_ORIG_MAX];
};

/* What a patch does. */
enum lp_plan_kind {
	LP_PLAN_ENTRY = 0, /* a function's entry: its calls are traced */
	LP_PLAN_PROBE = 1, /* an instruction of a function (record --probe): each
	                    * time it runs an LP_EXT_PROBE record is written, the
	                    * thread's registers and flags kept as they were */
};

/* lp_plan_func.args: the first n (at most LP_ARGS_MAX) integer argument
 * registers, each kept as a word and, by its kind, the memory it points to;
 * and the return value register with LP_PLAN_ARGS_RET. */
#define LP_ARGS_MAX 6u
#define LP_ARGS_MEM_MAX 48u /* bytes of memory kept per argument, at most */
enum lp_plan_arg_kind {
	LP_ARG_WORD = 0, /* the value only */
	LP_ARG_STR = 1,  /* and the C string it points to */
	LP_ARG_BUF = 2,  /* and the bytes it points to, as many as the next argument says */
	LP_ARG_CSTR = 3, /* and the C string it points to, which the function itself
	                  * reads (so the runtime may read it directly) */
};
#define LP_PLAN_ARGS_N(a) ((a)&7u)
#define LP_PLAN_ARGS_RET (1u << 3)
#define LP_PLAN_ARG_KIND(a, k) (((a) >> (4 + 2 * (k))) & 3u)
#define LP_PLAN_ARGS(n, ret) ((uint32_t)(n) | ((ret) ? LP_PLAN_ARGS_RET : 0u))
#define LP_PLAN_ARG(k, kind) ((uint32_t)(kind) << (4 + 2 * (k)))

/* A field of the relocated code to fill in (enum lp_plan_reloc_kind). */
struct lp_plan_reloc {
	uint32_t at;   /* the field's offset in the function's code */
	uint16_t end;  /* REL32: offset the value is relative to (the instruction's end) */
	uint16_t kind; /* enum lp_plan_reloc_kind */
	uint64_t target;
};

/* One producer (the thread), one consumer (the drain).  head and tail are
 * slot counts modulo 2^32; the ring holds ring_chunks * chunk_slots slots.
 * The producer checks for room only when it crosses a chunk boundary: when
 * the next chunk is not free it drops a whole chunk's worth of events,
 * counts them in `dropped` and later writes an LP_RAW_LOST slot. */
struct lp_ring_header {
	uint32_t magic;
	uint32_t version;
	uint32_t header_size; /* offset of slot 0 in the file */
	uint32_t slot_size;   /* sizeof(struct lp_slot) */
	uint32_t ring_chunks;
	uint32_t chunk_slots;
	uint32_t pid;
	uint32_t tid;
	uint32_t image;      /* process image id (changes on exec, fork) */
	uint32_t clock;      /* enum lp_clock_kind */
	uint32_t ptr_bits;   /* 32 or 64: the producer's word size */
	uint32_t parent_pid; /* for the first ring of a forked child: the forking pid */
	char comm[16];
	/* producer cache line */
	uint32_t head;    /* atomic, release: slots published */
	uint32_t state;   /* atomic, enum lp_ring_state */
	uint64_t dropped; /* atomic: events dropped so far */
	uint64_t nospace; /* atomic: of those, events dropped because the pages of
	                   * the ring's next chunk could not be had (its file
	                   * system full) */
	uint8_t pad1[40];
	/* consumer cache line: written by the consumer only (and `taken` by
	 * compare and swap, see enum lp_ring_taken).  A later consumer of the
	 * same ring (after the first was killed) starts from these: the loss
	 * it must count is unwritten plus (dropped - lost_written). */
	uint32_t tail;         /* atomic, release: slots consumed */
	uint32_t taken;        /* atomic, enum lp_ring_taken */
	uint64_t lost_written; /* lost events the consumer has written out as such */
	uint32_t unwritten;    /* events taken from the slots before tail but not
	                        * yet written out (a consumer holds up to a chunk) */
	uint8_t pad2[44];
	/* waiting for room (LP_RING_FULL_WAIT), written by the producer: the
	 * drain wakes the futex on `tail` after publishing it when `waiting` is
	 * set, and clears it */
	uint32_t waiting; /* atomic, seq_cst on both sides */
	uint32_t reserved;
	uint64_t waits;   /* atomic: times the producer waited */
	uint64_t wait_ns; /* atomic: CLOCK_MONOTONIC ns it spent waiting */
	uint64_t gave_up; /* atomic: waits that ended without room (drain gone or stalled) */
	/* the address of `tail` in the producer's mapping, set before its
	 * first futex wait: a syscall tracer's records of those futex calls
	 * are the runtime's, not the program's, and the drain leaves them out */
	uint64_t wait_uaddr;
	uint64_t wake_uaddr; /* the same for the control block's drain_wake */
	uint8_t pad3[16];
};

/* Who has a ring: set once, by compare and swap, so that exactly one side
 * decides.  The drain takes a ring when it maps it; a thread that ends
 * while its ring is untaken and the session directory is gone (removed
 * before the drain found the ring) counts the ring's events in the loss
 * table, and the drain must then not take it. */
enum lp_ring_taken {
	LP_RING_UNTAKEN = 0,
	LP_RING_TAKEN = 1,  /* by the drain */
	LP_RING_ORPHAN = 2, /* counted lost by its thread */
};

/* A slot: 16 bytes.  word = payload (low 56 bits) | type << 56. */
struct lp_slot {
	uint64_t time; /* raw clock value (enum lp_clock_kind) */
	uint64_t word;
};

#define LP_SLOT_TYPE_SHIFT 56
#define LP_SLOT_PAYLOAD_MASK ((UINT64_C(1) << LP_SLOT_TYPE_SHIFT) - 1)

enum lp_raw_type {
	LP_RAW_NONE = 0,
	LP_RAW_ENTRY = 1,   /* payload: function address */
	LP_RAW_EXIT = 2,    /* payload: function address */
	LP_RAW_LOST = 3,    /* payload: events dropped before this slot */
	LP_RAW_LONGJMP = 4, /* payload: call depth the thread returns to */
	LP_RAW_EXT = 5,     /* payload: ext_type << 32 | byte length; the
	                     * bytes follow in the next ceil(len/16) slots */
	LP_RAW_PAD = 6,     /* payload: slots to skip (rest of a chunk) */
	LP_RAW_MEM = 7,     /* payload: see LP_RAW_MEM_*; a heap operation in
	                     * two slots (REALLOC: three), never across a chunk:
	                     * the next slot is {u64 ptr, u64 size}, for
	                     * REALLOC the one after {u64 old, 0} */
	LP_RAW_SYNC = 8,    /* payload: see LP_RAW_SYNC_*; a synchronisation
	                     * operation (record --sync) in three slots, never
	                     * across a chunk: the next slot is {u64 object,
	                     * u64 raw clock value when the wait began (0: the
	                     * operation did not wait)}, the one after {u64 call
	                     * site, u64 second object (COND_WAIT: the mutex;
	                     * else 0)}; the record's time is the operation's
	                     * end (acquired, woken, returned) */
	LP_RAW_COUNTER = 9, /* payload: see LP_RAW_CTR_*; counter values
	                     * (record --counters): the values follow in the
	                     * next slots, two per slot, never across a
	                     * chunk, in the order of the trace's counter set
	                     * (META "counters").  An ENTRY or EXIT record
	                     * stands for the function event as well (no
	                     * LP_RAW_ENTRY / LP_RAW_EXIT slot is written
	                     * for it) */
};

/* Payload of an LP_RAW_SYNC slot. */
#define LP_RAW_SYNC_OP(payload) ((uint8_t)((payload)&0xff))                /* enum lp_sync_op */
#define LP_RAW_SYNC_FLAGS(payload) ((uint32_t)(((payload) >> 8) & 0xffff)) /* enum lp_sync_flags */
#define LP_RAW_SYNC_PAYLOAD(op, flags) ((uint64_t)((op)&0xff) | (uint64_t)((flags)&0xffff) << 8)

/* Payload of an LP_RAW_COUNTER slot: bits 0..47 the function (ENTRY,
 * EXIT) or, for the other kinds, enum lp_ctr_flags; 48..51 the number of
 * values n, 52..55 the kind.  With LP_CTR_HAS_TIMES, 2n more values follow
 * the n counts: each counter's enabled and running times (ns), in pairs,
 * so that the record is 1 + ceil(3n / 2) slots. */
#define LP_RAW_CTR_FN_MASK ((UINT64_C(1) << 48) - 1)
#define LP_RAW_CTR_FN(payload) ((payload)&LP_RAW_CTR_FN_MASK)
#define LP_RAW_CTR_N(payload) ((uint32_t)(((payload) >> 48) & 0xf))
#define LP_RAW_CTR_KIND(payload) ((uint32_t)(((payload) >> 52) & 0xf)) /* enum lp_ctr_kind */
#define LP_RAW_CTR_PAYLOAD(kind, n, fn) \
	(((uint64_t)(fn)&LP_RAW_CTR_FN_MASK) | (uint64_t)((n)&0xf) << 48 | (uint64_t)((kind)&0xf) << 52)

/* Counters in one set: what a raw record and a trace event carry at most. */
#define LP_COUNTERS_MAX 12u

/* Synchronisation operations (record --sync).  An operation that can wait
 * is one record at its end, with the time its wait began; a release, a
 * signal or a post is one record at the time it is made, before it is
 * passed on (so that the thread it lets go always comes later). */
enum lp_sync_op {
	LP_SYNC_THREAD = 1,          /* a thread began: object = its pthread_t */
	LP_SYNC_CREATE = 2,          /* pthread_create returned: object = the new pthread_t */
	LP_SYNC_MUTEX_LOCK = 3,      /* pthread_mutex_lock, _trylock, _timedlock, _clocklock */
	LP_SYNC_MUTEX_UNLOCK = 4,    /* pthread_mutex_unlock */
	LP_SYNC_RD_LOCK = 5,         /* pthread_rwlock_rdlock, _tryrdlock, _timedrdlock, _clockrdlock */
	LP_SYNC_WR_LOCK = 6,         /* pthread_rwlock_wrlock, _trywrlock, _timedwrlock, _clockwrlock */
	LP_SYNC_RW_UNLOCK = 7,       /* pthread_rwlock_unlock */
	LP_SYNC_SPIN_LOCK = 8,       /* pthread_spin_lock, _trylock */
	LP_SYNC_SPIN_UNLOCK = 9,     /* pthread_spin_unlock */
	LP_SYNC_COND_WAIT = 10,      /* pthread_cond_wait, _timedwait, _clockwait: object
	                              * = the condition, second = the mutex; the wait
	                              * ends when the mutex is held again */
	LP_SYNC_COND_SIGNAL = 11,    /* pthread_cond_signal */
	LP_SYNC_COND_BROADCAST = 12, /* pthread_cond_broadcast */
	LP_SYNC_BARRIER_WAIT = 13,   /* pthread_barrier_wait */
	LP_SYNC_JOIN = 14,           /* pthread_join, _tryjoin_np, _timedjoin_np: object =
	                              * the pthread_t joined */
	LP_SYNC_SEM_WAIT = 15,       /* sem_wait, sem_trywait, sem_timedwait, sem_clockwait */
	LP_SYNC_SEM_POST = 16,       /* sem_post */
	LP_SYNC_OPS                  /* one past the last */
};

enum lp_sync_flags {
	LP_SYNC_CONTENDED = 1u << 0, /* the operation had to wait (a lock was held) */
	LP_SYNC_TRY = 1u << 1,       /* the try form: never waits */
	LP_SYNC_FAILED = 1u << 2,    /* it did not acquire, pass or join (busy, timed
	                              * out, an error): nothing is held after it */
	LP_SYNC_TIMED = 1u << 3,     /* the timed (or clock) form */
	LP_SYNC_TIMEDOUT = 1u << 4,  /* with FAILED, or a COND_WAIT: the time ran out */
	LP_SYNC_SERIAL = 1u << 5,    /* BARRIER_WAIT: this thread was the serial one
	                              * (PTHREAD_BARRIER_SERIAL_THREAD) */
};

/* Counter records (record --counters).  Values are counts since the
 * thread's counters were opened (BEGIN..END), or the program's totals
 * (CPU, PROCESS, written by the recorder), scaled up to the time enabled
 * when the counter was multiplexed (LP_CTR_SCALED). */
enum lp_ctr_kind {
	LP_CTR_BEGIN = 1,   /* the thread's counters were opened */
	LP_CTR_ENTRY = 2,   /* at a function's entry (also the ENTRY event) */
	LP_CTR_EXIT = 3,    /* at its exit (also the EXIT event) */
	LP_CTR_END = 4,     /* the thread's last values (it ended, or tracing did) */
	LP_CTR_CPU = 5,     /* the program's totals on one CPU (its threads and children) */
	LP_CTR_PROCESS = 6, /* the program's totals (its threads and children) */
	LP_CTR_SAMPLE = 7,  /* the thread's values at another point */
};

enum lp_ctr_flags {
	LP_CTR_SCALED = 1u << 0,    /* a value was scaled: its counter was multiplexed */
	LP_CTR_HAS_TIMES = 1u << 1, /* the event carries each counter's enabled and
	                             * running times (END, CPU, PROCESS) */
};

/* Payload of an LP_RAW_MEM slot: the compact form of struct lp_ext_mem. */
#define LP_RAW_MEM_OP(payload) ((uint8_t)((payload)&0xf))             /* enum lp_mem_op */
#define LP_RAW_MEM_FLAGS(payload) ((uint8_t)(((payload) >> 4) & 0xf)) /* enum lp_mem_flags */
#define LP_RAW_MEM_STACK(payload) ((uint32_t)((payload) >> 8))        /* stack id */
#define LP_RAW_MEM_PAYLOAD(op, flags, stack) \
	((uint64_t)((op)&0xf) | (uint64_t)((flags)&0xf) << 4 | (uint64_t)(uint32_t)(stack) << 8)

/* Extended records carried in LP_RAW_EXT slots. */
enum lp_ext_type {
	LP_EXT_MAP = 1,    /* struct lp_ext_map + build id + path */
	LP_EXT_TASK = 2,   /* struct lp_ext_task + name/path */
	LP_EXT_CALL = 3,   /* struct lp_ext_call: one whole call (filtered by duration) */
	LP_EXT_MEM = 4,    /* struct lp_ext_mem: one heap operation (memory tracer;
	                    * the runtime writes the compact LP_RAW_MEM, the
	                    * drain takes both) */
	LP_EXT_STACK = 5,  /* struct lp_ext_stack + addresses: a stack id's definition */
	LP_EXT_REAPED = 6, /* struct lp_ext_reaped: the thread reaped a child process
	                    * (memory tracer); the drain ends that process's streams
	                    * with it, nothing of it goes into the trace */
	LP_EXT_UNMAP = 7,  /* struct lp_ext_unmap: an executable segment told by an
	                    * LP_EXT_MAP is no longer mapped (dlclose) */
	LP_EXT_ARGS = 8,   /* struct lp_ext_args + memory: a patched function's
	                    * arguments, just after its entry */
	LP_EXT_RETVAL = 9, /* struct lp_ext_retval: its return value, just before
	                    * its exit */
	LP_EXT_PROBE = 10, /* uint64_t: the address of a probed instruction
	                    * (LP_PLAN_PROBE) the thread ran */
};

/* The arguments of the call whose entry the thread wrote last (the plan's
 * LP_PLAN_ARGS_*), then nmem pieces of memory, each a byte index (the
 * argument; LP_ARGS_MEM_CUT set when the string or buffer went on past
 * what was kept), a byte length and that many bytes.  An argument whose
 * memory could not be read has none. */
#define LP_ARGS_MEM_CUT 0x80u
struct lp_ext_args {
	uint64_t fn;
	uint64_t words[LP_ARGS_MAX];
	uint8_t n;
	uint8_t nmem;
	uint8_t reserved[6];
};

struct lp_ext_retval {
	uint64_t fn;
	uint64_t value;
};

/* Heap operations (memory tracer).  The families matter for mismatch
 * checks: blocks from MALLOC..ALIGNED are released by FREE or REALLOC,
 * from NEW by DELETE, from NEW_ARRAY by DELETE_ARRAY. */
enum lp_mem_op {
	LP_MEM_MALLOC = 1,
	LP_MEM_CALLOC = 2,
	LP_MEM_REALLOC = 3, /* realloc, reallocarray: old -> ptr */
	LP_MEM_ALIGNED = 4, /* posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
	LP_MEM_FREE = 5,
	LP_MEM_NEW = 6,          /* operator new, every variant */
	LP_MEM_NEW_ARRAY = 7,    /* operator new[], every variant */
	LP_MEM_DELETE = 8,       /* operator delete, every variant */
	LP_MEM_DELETE_ARRAY = 9, /* operator delete[], every variant */
	LP_MEM_FOLD = 10,        /* trace only: short-lived blocks folded (memevent.h) */
	LP_MEM_BASELINE = 11,    /* the end of a heap listing (LP_MEM_BEFORE): ptr = the
	                          * blocks listed, size = their bytes; with
	                          * LP_MEM_INCOMPLETE some live blocks were not */
};

enum lp_mem_flags {
	LP_MEM_FAILED = 1u << 0,     /* the allocation returned no block (ptr 0) */
	LP_MEM_KEPT = 1u << 1,       /* an illegal release not passed to libc (keep-alive);
	                              * on a REALLOC: old was not live and was kept,
	                              * ptr is a fresh block (nothing copied) */
	LP_MEM_KNOWN = 1u << 2,      /* a release of a block the runtime's live-block table
	                              * held (allocated before tracing began, maybe) */
	LP_MEM_BEFORE = 1u << 3,     /* a live block listed when tracing began (the heap
	                              * listing): allocated earlier, by the op and the
	                              * stack given; the record's time is the listing's */
	LP_MEM_INCOMPLETE = 1u << 4, /* BASELINE: the listing missed live blocks
	                              * (table full); extended records only */
};

/* The slot's time is the operation's time (taken before the release is
 * passed to libc, after an allocation returned). */
struct lp_ext_mem {
	uint64_t ptr;   /* block returned (0: none), or released */
	uint64_t size;  /* bytes asked for (calloc: n * size); 0 for releases */
	uint64_t old;   /* REALLOC: the block passed in (0: none); else 0 */
	uint32_t stack; /* the thread's stack id (LP_EXT_STACK), 0: unknown */
	uint8_t op;     /* enum lp_mem_op */
	uint8_t flags;  /* enum lp_mem_flags */
	uint16_t reserved;
};

/* Defines a stack id for the thread's later heap records (LP_RAW_MEM,
 * LP_EXT_MEM): ids are scoped to one ring (one stream), start at 1, and are
 * defined before their first use. */
struct lp_ext_stack {
	uint32_t id;
	uint32_t n; /* return addresses that follow, innermost first (the
	             * first is the call site: the address after the call) */
	            /* n u64 addresses */
};

/* wait(), waitpid(), wait3(), wait4() or waitid() returned the end of a
 * child: its pid and wait status (as waitpid gives it). */
struct lp_ext_reaped {
	uint32_t pid;
	uint32_t status;
};

/* The slot's time is the call's exit time. */
struct lp_ext_call {
	uint64_t addr;
	uint64_t entry; /* raw clock value at entry */
};

struct lp_ext_map {
	uint64_t base;   /* load bias of the object */
	uint64_t start;  /* first byte of an executable segment */
	uint64_t end;    /* one past its last byte */
	uint64_t offset; /* file offset of `start` */
	uint16_t build_id_len;
	uint16_t path_len;
	uint32_t reserved;
	/* build id bytes, then path bytes (no NUL) */
};

/* The slot's time is when the runtime saw the segment gone (after the
 * dlclose that unmapped it returned). */
struct lp_ext_unmap {
	uint64_t start; /* as in the segment's struct lp_ext_map */
	uint64_t end;
};

struct lp_ext_task {
	uint32_t kind; /* enum lp_task_kind */
	uint32_t arg;  /* pid for FORK, status for EXIT */
	uint32_t name_len;
	uint32_t nframes;
	/* name or path bytes (no NUL), then nframes u64 function addresses:
	 * for FORK, the stack the child inherited, outermost first */
};

/* ---------------------------------------------------------------------------
 * Trace file: <trace dir>/data, all little-endian.
 *
 *   file header   "LPTRACE\0", u16 major, u16 minor, u32 reserved
 *   chunk*        struct lp_chunk_header + payload
 *
 * A reader stops at the first chunk that is short or fails its checksum and
 * reports what it kept; nothing after that point is trusted.
 * ------------------------------------------------------------------------- */
#define LP_TRACE_DATA "data"
#define LP_TRACE_MAGIC "LPTRACE"
#define LP_TRACE_MAJOR 1u
#define LP_TRACE_MINOR                                                                           \
	5u /* 1: LP_XEV_UNMAP; 2: LP_CHUNK_KFORMAT, LP_EV_KERNEL; 3: LP_XEV_ARGS, RETVAL, PROBE; \
	    * 4: LP_EV_SYNC, LP_EV_COUNTER; 5: LP_CHUNK_POWER */
#define LP_FILE_HEADER_SIZE 16u

#define LP_CHUNK_MAGIC 0x4b43504cu /* "LPCK" as little-endian bytes */
#define LP_CHUNK_HEADER_SIZE 16u
#define LP_CHUNK_MAX_PAYLOAD (1u << 20)
#define LP_CHUNK_TARGET_PAYLOAD (60u << 10)

/* On disk: u32 magic, u8 type, u8 flags, u16 reserved, u32 payload length,
 * u32 crc32c of the payload. */
enum lp_chunk_type {
	LP_CHUNK_META = 1,    /* "key=value\n" text */
	LP_CHUNK_EVENTS = 2,  /* one stream's events, see below */
	LP_CHUNK_CLOCK = 3,   /* varint count, then (raw, ns) varint pairs */
	LP_CHUNK_END = 4,     /* "key=value\n" text: written when a session closes */
	LP_CHUNK_KFORMAT = 5, /* kernel tracepoint formats: varint count, then per
	                       * tracepoint varint id and three strings (varint
	                       * length, bytes): group, name, tracefs format text */
	LP_CHUNK_POWER = 6,   /* power samples (record --power): varint source
	                       * index (into META power.sources), varint count,
	                       * count x (varint ns from the previous sample of
	                       * the chunk, the first from 0; varint microwatts) */
};
/* Samples in one LP_CHUNK_POWER, at most. */
#define LP_POWER_CHUNK_SAMPLES 4096u

/* EVENTS payload: varint image, varint pid, varint tid, varint base_ns,
 * then events.  Each event: one byte (type | arg << 4), varint delta_ns from
 * the previous event of the chunk (the first from base_ns), then a body.
 * Function references use `arg`: 0..13 index the chunk's address table,
 * 14 means a varint index follows, 15 means a varint address follows and is
 * appended to the table.  The table starts empty in every chunk.
 * Types 6..13 have the body "varint length, bytes", so that a reader skips
 * the types it does not know; their bodies are defined by their sources. */
enum lp_event_type {
	LP_EV_ENTRY = 1,         /* func ref */
	LP_EV_EXIT = 2,          /* func ref */
	LP_EV_LOST = 3,          /* varint events lost just before this point */
	LP_EV_MAP = 4,           /* varint base, start, end, offset, build id, path */
	LP_EV_TASK = 5,          /* arg = enum lp_task_kind; varint arg, name */
	LP_EV_SYSCALL_ENTER = 6, /* reserved: syscall profiler */
	LP_EV_SYSCALL_EXIT = 7,  /* reserved: syscall profiler */
	LP_EV_KERNEL = 8,        /* kernel tracepoint record (common/kernevent.h) */
	LP_EV_ALLOC = 9,         /* arg = enum lp_mem_op; heap operation (memevent.h) */
	LP_EV_STACK = 10,        /* stack id definition (memevent.h) */
	LP_EV_SYNC = 11,         /* a synchronisation operation (common/syncevent.h) */
	LP_EV_COUNTER = 12,      /* counter values (common/ctrevent.h) */
	LP_EV_MARKER = 13,       /* reserved: user marker */
	LP_EV_LONGJMP = 14,      /* varint depth the thread returned to */
	LP_EV_EXTENDED = 15,     /* varint subtype, bytes body */
};

/* Subtypes of LP_EV_EXTENDED. */
enum lp_ext_event {
	LP_XEV_CALL = 1,   /* body: varint function address, varint duration ns; time = exit */
	LP_XEV_UNMAP = 2,  /* body: varint start, varint end of an executable segment of
	                    * an earlier MAP of the image: unmapped from this time on */
	LP_XEV_ARGS = 3,   /* body: varint function address, varint n, n varint words,
	                    * varint nmem, nmem times (varint index [| LP_ARGS_MEM_CUT],
	                    * varint length, bytes): the arguments of the call whose
	                    * ENTRY came just before (struct lp_ext_args) */
	LP_XEV_RETVAL = 4, /* body: varint function address, varint value: the return
	                    * value of the call whose EXIT comes next */
	LP_XEV_PROBE = 5,  /* body: varint address: the thread ran a probed
	                    * instruction (record --probe) */
};
#define LP_REF_INLINE_MAX 13u
#define LP_REF_INDEX 14u
#define LP_REF_NEW 15u
#define LP_REF_TABLE_MAX 65536u

/* Byte strings in events (paths, names, build ids): varint length + bytes. */
#define LP_STRING_MAX 4096u

enum lp_task_kind {
	LP_TASK_START = 0, /* stream begins: name = comm; arg = enum lp_task_start_flags */
	LP_TASK_FORK = 1,  /* arg = parent pid */
	LP_TASK_EXEC = 2,  /* name = executable path */
	LP_TASK_EXIT = 3,  /* arg = wait status (recorder-written, last image of the pid) */
	LP_TASK_END = 4,   /* thread ended normally */
};
/* The arg of a TASK START (0 before these existed). */
enum lp_task_start_flags {
	/* the thread is not the traced program's: another process's, whose
	 * kernel events `record --kernel-system` keeps apart */
	LP_TASK_START_OTHER = 1u << 0,
};
/* The value of a TASK EXIT whose process is gone without its wait status
 * being known (reaped inside the C library or by the kernel): never a wait
 * status, which fits in 16 bits. */
#define LP_EXIT_STATUS_UNKNOWN 0xffffffffu

#endif
