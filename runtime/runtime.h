/* Internal interface of liblayerprof, the in-process runtime: per-thread
 * state, the ring producer and the process-wide session. */
#ifndef LP_RUNTIME_H
#define LP_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layerprof/format.h"
#include "lp_arch.h"
#include "runtime/memtrace.h"

#ifndef LP_ARCH_FUNC
/* A function address as the gates receive it, made its entry address. */
#define LP_ARCH_FUNC(fn) ((uintptr_t)(fn))
#endif

#define LP_EXPORT __attribute__((visibility("default")))
#define LP_NOINSTR __attribute__((no_instrument_function))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Frames whose addresses the runtime remembers, so that a forked child can
 * start its stream with the stack it inherited. Deeper frames are counted. */
#define LP_SHADOW_MAX 256
#define LP_JMPBUF_SLOTS 8
#define LP_HOLD_MAX_MS 5000
/* A ring file: this header, then the slots. */
#define LP_RING_HEADER_SIZE 4096u

enum lp_thread_state {
	LP_THREAD_NEW = 0,   /* no ring yet: set up on first use */
	LP_THREAD_READY = 1, /* recording into its ring */
	LP_THREAD_OFF = 2,   /* not traced (no session, failure, thread ended) */
	LP_THREAD_LOST = 3,  /* traced, but no ring could be had: its events are
	                      * counted (ringfile.c) */
};

struct lp_jmp_note {
	const void *env;
	uint32_t depth;
};

enum lp_mem_state {
	LP_MEMT_NEW = 0,   /* no stack table yet: set up on the first heap operation */
	LP_MEMT_READY = 1, /* recording heap operations */
	LP_MEMT_OFF = 2,   /* failed: heap operations are counted as lost */
};

struct lp_stacktab;

/* Interned-stack slots remembered per call site (a power of two). */
#define LP_MEM_HINTS 16
/* Wait statuses a signal handler collects while its thread is inside a heap
 * operation, kept until the thread's next operation writes them. */
#define LP_MEM_REAPED_PENDING 8u

/* The memory tracer's part of a thread (mem.c). */
struct lp_memthread {
	struct lp_stacktab *tab;           /* interned stacks, mmap'd (not malloc'd) */
	uintptr_t stack_lo, stack_hi;      /* the thread's stack: bounds of the frame walk */
	uint32_t epoch;                    /* control epoch the table's ids belong to */
	uint32_t next_id;                  /* next stack id of this stream */
	uint8_t state;                     /* enum lp_mem_state */
	uint8_t walk_ready;                /* stack_lo, stack_hi looked up */
	uint16_t hint[LP_MEM_HINTS];       /* table slot last used by a call site */
	uint32_t table_hint[LP_MEM_HINTS]; /* live-block table: stack last used by a call site */
	/* reaped children told by a signal handler that interrupted a heap
	 * operation (lp_mem_reaped): the handler adds at reaped_in, the
	 * interrupted thread's next operation writes them from reaped_out */
	struct lp_ext_reaped reaped[LP_MEM_REAPED_PENDING];
	volatile uint32_t reaped_in, reaped_out;
};

/* Per-thread state, in initial-exec TLS.  The fields used by every gate come
 * first.  Written only by its own thread (and by its signal handlers, which
 * the `busy` flag keeps out). */
struct lp_thread {
	struct lp_slot *cur;   /* next slot to write */
	struct lp_slot *limit; /* end of the current chunk */
	uint32_t *head_ptr;    /* ring head, or `scratch_head` while dropping */
	uint32_t head;         /* value last stored through head_ptr */
	uint32_t depth;        /* current call depth */
	uint8_t state;         /* enum lp_thread_state */
	volatile uint8_t busy; /* inside a gate: a nested gate (signal) drops */
	uint8_t ctr;           /* counters are read at each gate (counters.c) */

	struct lp_ring_header *ring;
	struct lp_slot *slots;   /* ring_chunks * chunk_slots slots */
	struct lp_slot *scratch; /* one chunk where dropped events go */
	uint32_t ring_slots;
	uint32_t chunk_slots;
	uint32_t reserved_slots; /* slots from the ring's start whose pages are had */
	uint8_t scratch_nospace; /* writing to scratch because the next chunk's pages
	                          * could not be had */
	uint64_t nospace;        /* events dropped for that reason (part of dropped) */
	uint32_t saved_head;     /* real head while writing to scratch */
	uint32_t scratch_head;   /* target of head_ptr while dropping */
	uint32_t scratch_extra;  /* slots in scratch that are no event of their own
	                          * (records' further slots, padding) */
	uint64_t lost_pending;   /* dropped, not yet reported with a LOST slot */
	uint64_t dropped;        /* total dropped, mirrored in ring->dropped */
	uint32_t nested;         /* events dropped by gates nested in a gate */
	size_t map_size;
	uintptr_t shadow[LP_SHADOW_MAX];
	uint64_t entry_time[LP_SHADOW_MAX]; /* filtered by duration: 0 = not kept */
	struct lp_jmp_note jmp[LP_JMPBUF_SLOTS];
	uint32_t jmp_next;
	uint32_t destructor_rounds;
	struct lp_memthread mem;
	struct lp_loss_entry *loss; /* LP_THREAD_LOST: its loss table entry, or
	                             * NULL (counted in the control block) */
	/* waiting for room (LP_RING_FULL_WAIT, thread.c) */
	volatile uint8_t waiting; /* inside ring_wait: a longjmp out of a signal
	                           * handler leaves it (jmp.c) */
	uint8_t wait_skip;        /* gave up: no more waits until the drain polls again */
	uint8_t wait_untaken;     /* gave up on a ring the drain never took: no more
	                           * waits until it takes it */
	uint64_t wait_beat;       /* the drain's beat when it gave up */
	/* functions patched in by the dynamic tracer (dynpatch.c): the return
	 * addresses their entries replaced, innermost last; mmap'd at the
	 * thread's first such call */
	struct lp_dynframe *dyn;
	uint32_t dyn_n;
	uint8_t dyn_done;    /* the thread ends: no more frames are kept */
	uint8_t dyn_getting; /* its frame stack is being made (a patched C
	                      * library's mmap calls back in: it runs untraced) */
	uint8_t dyn_inside;  /* in the entry or return path (lp_dyn_libc_patched) */
	/* record --counters: the thread's counters, mmap'd when its ring is
	 * made (counters.c); NULL without */
	struct lp_ctrthread *ctrs;
};

extern __thread struct lp_thread lp_self __attribute__((tls_model("initial-exec")));

/* Process-wide session state, set by lp_process_init. */
struct lp_process {
	_Atomic int init;           /* 0 none, 1 in progress, 2 done */
	bool active;                /* a session is attached */
	struct lp_control *control; /* shared with the recorder */
	const char *session_dir;
	uint32_t image;
	uint32_t clock;           /* enum lp_clock_kind of this process */
	uint32_t parent_pid;      /* set in a forked child until its first ring */
	uint64_t fork_time;       /* with parent_pid: when the parent called fork (event clock) */
	_Atomic int maps_written; /* first ring of the image carries the maps */
	char exe[512];
	const struct lp_filter_file *_Atomic filters; /* mapped on first use */
	_Atomic int drain_gone;                       /* the drain's process ended: never wait for it */
};

extern struct lp_process lp_proc;

/* The session's flags word (enum lp_control_flags), read by every gate
 * first: while tracing is stopped, or in a process without a session, a
 * gate costs this one check.  Points at a word that enables until the
 * process is set up, then at the control block or at a word that is 0. */
extern const uint32_t *lp_ctl_flags;

/* process.c: attaches to the session named by LP_ENV_SESSION.  Safe to call
 * from any gate; returns true when tracing is on for this process. */
bool lp_process_init(void);
uint64_t lp_monotonic_ns(void);

/* The clock every slot of this process uses: the architecture's counter
 * when the recorder asked for it, else CLOCK_MONOTONIC.  Hot path. */
static inline LP_NOINSTR uint64_t lp_clock_now(void)
{
	if (likely(lp_proc.clock == LP_ARCH_COUNTER))
		return lp_arch_counter();
	return lp_monotonic_ns();
}

/* The same clock, read after every earlier instruction of the thread has
 * completed (lp_arch_counter_ordered; clock_gettime is ordered already):
 * for records that are merged by time with other threads' and must keep
 * the order in which the threads made them happen (heap operations). */
static inline LP_NOINSTR uint64_t lp_clock_now_ordered(void)
{
	if (likely(lp_proc.clock == LP_ARCH_COUNTER))
		return lp_arch_counter_ordered();
	return lp_monotonic_ns();
}

/* thread.c: creates the calling thread's ring (called once per thread from
 * its first gate).  Returns false when the thread cannot record: it is
 * then off, or LP_THREAD_LOST when the session is there but no ring could
 * be had, or still LP_THREAD_NEW when it is too early to find the session. */
bool lp_thread_start(struct lp_thread *t);
/* The gates' way in for a thread that is not ready: sets it up on its first
 * event, or counts the event as lost when it cannot be recorded.  Returns
 * true when the event can be written. */
bool lp_thread_open(struct lp_thread *t);

/* ringfile.c: where a thread's ring comes from. */
struct lp_ringfile {
	uint32_t pid, tid, image;
	uint32_t chunks;      /* in: the session's geometry; out: the ring's */
	uint32_t chunk_slots; /* slots per chunk, likewise */
	void *map;            /* out: the ring, mapped shared */
	size_t size;          /* out: its size */
	size_t reserved;      /* out: bytes from the start whose pages are had
	                       * (the header and the first chunk at least; the
	                       * scratch chunk too), the whole file when the
	                       * kernel cannot make pages on demand */
};
/* Creates the ring file in the session directory so that writing the ring
 * can never fail (on tmpfs a page that cannot be had kills the writer with
 * SIGBUS): the pages of its header, its first chunk and its scratch chunk
 * are made now and those of the others when the thread first reaches them
 * (lp_ring_reserve_ahead), or, on a kernel without MADV_POPULATE_WRITE, the
 * whole file is reserved with fallocate.  A smaller ring when space is
 * short, down to LP_RING_MIN_CHUNKS chunks of LP_RING_MIN_CHUNK_SLOTS.  Returns 0 or -errno
 * (-ENOSPC: no room even for the smallest; -ENOENT: the session
 * directory was removed).  Off the hot path; may make system calls. */
int lp_ringfile_create(struct lp_ringfile *rf);
/* Makes the pages of the thread's ring up to slot `end` (at most
 * ring_slots), and a little beyond, before the thread writes them.  False
 * when they cannot be had (no space): the chunk must not be written.  Cold:
 * once per chunk of the ring's first pass, and only there. */
bool lp_ring_reserve_ahead(struct lp_thread *t, uint32_t end);
/* The thread could not get a ring (error: what failed, as -errno): it
 * counts its events from now in an entry of the session's loss table, or
 * in the control block.  Sets t->state to LP_THREAD_LOST. */
void lp_loss_start(struct lp_thread *t, int error, uint32_t tid, const char *comm);
/* n more events of a LP_THREAD_LOST thread not recorded.  Any context
 * (gates, signal handlers): one atomic add. */
void lp_loss_add(struct lp_thread *t, uint64_t n);
/* The thread ends: its count is final. */
void lp_loss_end(struct lp_thread *t);
/* The thread's ring is done with (thread end, process exit; head: slots
 * published, dropped: events dropped in all): when the drain never took it
 * and the session directory is gone, nobody will, and its events are
 * counted in the loss table instead (see enum lp_ring_taken). */
void lp_ring_orphan(struct lp_thread *t, uint32_t head, uint64_t dropped);
/* Slow path of every write: the current chunk is full. Returns the slot to
 * write next (in the ring, or in scratch when the ring has no room). */
struct lp_slot *lp_ring_advance(struct lp_thread *t);
/* A longjmp leaves a signal handler that interrupted a gate (or another
 * ring writer) of this thread, t->busy set, maybe while it waited for
 * room: the gate never finishes.  What it wrote and did not publish is
 * given up (counted as one lost event) and the thread records again
 * (jmp.c). */
void lp_ring_abandon(struct lp_thread *t);
/* Writes one slot outside the gates (LOST, LONGJMP, ...). */
void lp_ring_put(struct lp_thread *t, uint32_t type, uint64_t payload);
/* Writes an extended record of `len` bytes (at most one chunk). */
/* Writes the reaped children a signal handler left while the thread was
 * inside a heap operation (lp_memthread.reaped), oldest first.  Called
 * inside the thread's own gate (busy): a handler running meanwhile adds at
 * reaped_in, which the loop reads anew each time.  mem.c; also when the
 * thread's ring closes (thread.c), so that none is left unwritten. */
void lp_mem_reaped_flush(struct lp_thread *t);
void lp_ring_put_ext(struct lp_thread *t, uint32_t ext_type, const void *data, size_t len);
/* The same with the record's time given. */
void lp_ring_put_ext_at(struct lp_thread *t, uint32_t ext_type, const void *data, size_t len, uint64_t time);
/* Room for a record of n slots (at most a chunk) in the current chunk, the
 * rest of which is padded when it is too short: returns where to write
 * them; lp_ring_commit publishes them. */
struct lp_slot *lp_ring_reserve(struct lp_thread *t, size_t n, uint64_t now);

static inline LP_NOINSTR void lp_ring_commit(struct lp_thread *t, struct lp_slot *s, uint32_t n)
{
	t->cur = s + n;
	t->head += n;
	/* while dropping, count the record once in the loss */
	if (unlikely(t->head_ptr != &t->ring->head))
		t->scratch_extra += n - 1;
	atomic_store_explicit((_Atomic uint32_t *)t->head_ptr, t->head, memory_order_release);
}
/* Marks the calling thread's ring closed; later gates on it are ignored. */
void lp_thread_close(struct lp_thread *t);

/* mem.c: a new stream starts on the thread (its ring was just created):
 * stack ids start again at 1.  Called by lp_thread_start. */
void lp_mem_thread_reset(struct lp_thread *t);
/* The thread ends: its stack table goes. */
void lp_mem_thread_release(struct lp_thread *t);

/* maps.c: writes one LP_EXT_MAP per executable segment of every loaded
 * object into the thread's ring. */
void lp_maps_write(struct lp_thread *t);

/* The write of one slot, shared by the gates (gate.c inlines it; the
 * filtered gate calls the out-of-line copy). */
static inline LP_NOINSTR void lp_gate_write_inline(struct lp_thread *t, uint32_t type, uintptr_t fn)
{
	struct lp_slot *s = t->cur;

	if (unlikely(s == t->limit))
		s = lp_ring_advance(t);
	s->time = lp_clock_now();
	s->word = (uint64_t)fn | ((uint64_t)type << LP_SLOT_TYPE_SHIFT);
	t->cur = s + 1;
	atomic_store_explicit((_Atomic uint32_t *)t->head_ptr, ++t->head, memory_order_release);
}
void lp_gate_write(struct lp_thread *t, uint32_t type, uintptr_t fn);
/* The entry and exit gates, for callers inside the runtime (dynpatch.c). */
void lp_gate_entry(uintptr_t fn);
void lp_gate_exit(uintptr_t fn);

/* dynpatch.c: applies the session's patch plan (LP_PLAN_NAME) when it is
 * for this process's executable; from the constructor, before the
 * program's own code runs.  Later calls do nothing. */
void lp_dynpatch_apply(void);
/* Applies the plans to the objects loaded since (after dlopen), and
 * forgets the objects unloaded (after dlclose). */
void lp_dynpatch_scan(void);
/* The thread ends (its last destructor round): its frame stack goes. */
void lp_dynpatch_thread_end(struct lp_thread *t);

struct lp_dynframe {
	uintptr_t sp;  /* the stack pointer at the function's entry */
	uintptr_t ret; /* the return address it replaced */
	uintptr_t fn;
	uintptr_t want_ret; /* its arguments were written: its return value
	                     * goes before its exit */
	uintptr_t slot;     /* aarch64, while an exception unwinds: where the
	                     * function saved its return address (0: not found) */
};

#ifdef LP_HAVE_DYNTRAMP
void lp_dyn_return(void);
/* What a trampoline hands the common entry path (dynpatch.c). */
struct lp_dynrec {
	uintptr_t fn;   /* the function's entry, as the gates name it */
	uintptr_t cont; /* its relocated first instructions */
	uintptr_t args; /* lp_plan_func.args */
	uintptr_t kind; /* enum lp_plan_kind; a probe's fn is its instruction */
};
/* A probed instruction ran (gate.c; from lp_dyn_probe, or the trap
 * handler): its LP_EXT_PROBE record. */
void lp_dyn_probe_hit(const struct lp_dynrec *r);
/* The common entry path's C half (dynpatch.c): ret is where the caller's
 * return address is, sp the stack pointer at the function's entry.
 * Returns where the function goes on. */
uintptr_t lp_dyn_enter(const struct lp_dynrec *r, uintptr_t *ret, uintptr_t sp);
/* Set once a plan patches the C library (see dynpatch.c). */
extern int lp_dyn_libc_patched;
/* Trapped entries (dyntrap.c, x86-64): the n functions at addr[i] enter
 * through rec[i] when their int3 traps.  0 or -ENOMEM. */
int lp_dyntrap_add(const uintptr_t *addr, const struct lp_dynrec *const *rec, size_t n);
#endif
/* The trap handler in place and SIGTRAP kept out of the program's signal
 * masks, before any plan is applied (dyntrap.c; nothing elsewhere). */
void lp_dyntrap_arm(void);

/* A return address met walking the stack from the inside out: the return
 * path of patched functions stands for the real address, kept in the
 * thread's frames (*next: frames not yet met, innermost first). */
static inline LP_NOINSTR uintptr_t lp_dynpatch_ret(const struct lp_thread *t, uintptr_t ra, uint32_t *next)
{
#ifdef LP_HAVE_DYNTRAMP
	if (unlikely(ra == (uintptr_t)lp_dyn_return) && *next)
		return t->dyn[--*next].ret;
#else
	(void)t;
	(void)next;
#endif
	return ra;
}

/* counters.c (record --counters): the thread's ring was just made: its
 * counters are opened (LAYERPROF_COUNTERS) and a BEGIN record written;
 * t->ctr is set when the gates are to read them.  Off the hot path; makes
 * system calls; keeps errno. */
void lp_ctr_thread_start(struct lp_thread *t);
/* A gate of a thread with t->ctr set, busy set: the ENTRY or EXIT counter
 * record that stands for the function event (kind: LP_CTR_ENTRY or
 * LP_CTR_EXIT).  Cold: one read(2) per counter group, or rdpmc; keeps
 * errno. */
void lp_ctr_gate(struct lp_thread *t, uint32_t kind, uintptr_t fn);
/* The thread ends, or the process exits (its ring stays open): the END
 * record with the counters' times, then the counters are closed and later
 * gates write plain records.  Called with busy set or by the thread
 * itself outside any gate. */
void lp_ctr_thread_end(struct lp_thread *t);

/* srcfilter.c: the gates' path while source filters are set (live
 * profiling); entry is true for an entry gate.  Keeps t->depth exact. */
void lp_gate_filtered(struct lp_thread *t, uintptr_t fn, bool entry);

#endif
