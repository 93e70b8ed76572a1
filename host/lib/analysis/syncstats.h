/* Synchronisation statistics (record --sync): how long threads wait for
 * each other.  Per lock (mutex, rwlock, spinlock) its acquisitions,
 * contention, wait and hold times; per condition variable and semaphore
 * who waits and who signals or posts; per barrier each thread's waits;
 * who joined whom; per thread its waits by kind; the balance of each
 * producer/consumer pair of thread groups; and, with the syscall layer,
 * the futex waits of code that does not go through the interposed
 * functions.  A consumer of the walk's sync, syscall and end callbacks,
 * shared by `report --sync` and the views (see syncstats_set_wait_hook).
 *
 * Why a merge by time: who released a lock or signalled a condition
 * before a wait ended is a question across threads, whose events reach
 * the walk in chunks, not in time order.  The operations are held in a
 * min-heap by time and applied in order up to the walk's watermark
 * (walk_run_by_time: exact), or, without one, the earliest when
 * SYNCSTATS_QUEUE_MAX are held; an operation that arrives earlier than
 * one already applied is applied anyway and counted in `late`.  A
 * thread's own accounting (its holds, its waits) is exact either way.
 *
 * Memory is bounded: objects, threads, (object, thread) uses, histograms,
 * joins, held locks per thread and held-back futex waits have maxima
 * below; what goes past them is counted in struct syncstats_overflow and
 * the reports say so.  Not thread-safe. */
#ifndef LP_SYNCSTATS_H
#define LP_SYNCSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/trace/walk.h"
#include "host/lib/util/hashindex.h"

#define SYNCSTATS_OBJECTS_MAX 65536u
#define SYNCSTATS_THREADS_MAX 4096u
#define SYNCSTATS_USES_MAX (1u << 20) /* (object, thread) pairs */
#define SYNCSTATS_HISTS_MAX 4096u     /* objects with a wait histogram (p99) */
#define SYNCSTATS_HELD_MAX 64u        /* locks one thread holds at a time */
#define SYNCSTATS_PENDING_MAX 16u     /* futex waits of a thread not yet placed */
#define SYNCSTATS_JOINS_MAX 4096u
#define SYNCSTATS_QUEUE_MAX (1u << 18) /* operations held for the merge by time */
#define SYNCSTATS_SIDE_MAX 16u         /* threads on one side of a producer/consumer pair */
#define SYNCSTATS_PAIRS_MAX 256u
#define SYNCSTATS_PAIR_OBJECTS 8u /* objects named per pair */
#define SYNCSTATS_TOP_WAITS 32u   /* the longest waits kept with their waker */
#define SYNCSTATS_NAME_MAX 256u   /* an object's name from the namer */

/* Wait histogram: exact below 32 ns, then 16 buckets per power of two
 * (a bucket's middle is within about 3% of any value in it). */
#define SYNCSTATS_HIST_BUCKETS 976u

/* Kinds of object, and of wait (SYNCSTATS_JOIN: a thread, waited for by
 * pthread_join; not an object of the tables). */
enum syncstats_kind {
	SYNCSTATS_MUTEX = 0,
	SYNCSTATS_RWLOCK = 1,
	SYNCSTATS_SPIN = 2,
	SYNCSTATS_COND = 3,
	SYNCSTATS_SEM = 4,
	SYNCSTATS_BARRIER = 5,
	SYNCSTATS_FUTEX = 6, /* a futex of other code (from FUTEX_WAIT* system calls) */
	SYNCSTATS_JOIN = 7,
	SYNCSTATS_KINDS = 8,
};

/* "mutex", "rwlock", "spinlock", "cond", "semaphore", "barrier", "futex",
 * "join"; "?" for another value. */
const char *syncstats_kind_name(unsigned kind);

/* Waits of one object, thread or use: n waits (operations that waited:
 * wait_ns > 0, or flagged contended), their total and longest. */
struct syncstats_waits {
	uint64_t n, total_ns, max_ns;
};

/* One synchronisation object of one process image. */
struct syncstats_object {
	uint8_t kind; /* enum syncstats_kind, not SYNCSTATS_JOIN */
	uint32_t image, pid;
	uint64_t addr;
	uint64_t site;     /* the call site of the operation that began first (a code address), 0: unknown */
	char *name;        /* owned; from the namer (a heap block's site, a variable's symbol), NULL: none */
	uint64_t first_ns; /* the first operation's beginning (its wait's, if it waited) */
	uint64_t last_ns;  /* the last operation's end */
	uint64_t ops;      /* operations on it, of every kind */
	/* locks: calls that acquired (rd_acquisitions: of an rwlock, shared),
	 * of them contended; try forms that found it busy; other failures
	 * (timed out, errors) */
	uint64_t acquisitions, rd_acquisitions, contended, try_failures, failures;
	/* holds: from the outermost acquisition to the release that ends it,
	 * by the same thread (a recursive lock's inner ones are not holds);
	 * held_ns: the time anybody held it (readers at once counted once) */
	uint64_t holds, hold_ns, hold_max_ns, held_ns;
	uint64_t releases, unmatched_releases; /* releases of a hold not seen begin */
	uint64_t held_at_end;                  /* holds still open at the end (not counted) */
	/* conditions, semaphores, barriers: wait calls (blocked or not), and
	 * of them timed out or failed */
	uint64_t calls, timeouts;
	uint64_t signals, broadcasts, posts; /* futex: wakes in signals */
	struct syncstats_waits waits;
	uint64_t wait_p99_ns; /* after syncstats_collect */
	bool p99_approx;      /* no histogram (SYNCSTATS_HISTS_MAX): p99 given as the max */
	/* after syncstats_collect: its uses (struct syncstats.uses), by thread */
	uint32_t first_use, nuses;
	/* internal */
	uint32_t hist;          /* index + 1 in hists; 0: none */
	uint32_t holders;       /* threads holding it now */
	uint64_t held_since;    /* when holders became nonzero */
	uint32_t rel_thread[2]; /* latest release/signal/post (+1), and latest by another thread */
	uint64_t rel_ns[2];
};

/* One thread (stream) that made synchronisation operations. */
struct syncstats_thread {
	uint32_t image, pid, tid;
	char comm[17];
	uint64_t pthread;           /* its pthread_t (LP_SYNC_THREAD record), 0: unknown */
	uint64_t first_ns, last_ns; /* its stream's first and last event (after syncstats_collect) */
	double wait_share;          /* wait_ns / (last_ns - first_ns); 0 when they are equal */
	struct syncstats_waits waits[SYNCSTATS_KINDS];
	uint64_t wait_ns; /* all kinds together */
	uint64_t ops, acquisitions, holds, hold_ns;
	uint64_t signals, posts; /* cond signals and broadcasts; sem posts */
	uint64_t creates;        /* threads it created */
	/* internal */
	struct walk_stream *s; /* borrowed */
	struct syncstats_held *held;
	uint32_t nheld;
	struct syncstats_pending *pending;
	uint32_t npending;
	bool let_go;           /* in a condition wait whose mutex was let go of */
	uint32_t let_go_depth; /* the depth its hold had then (0: not held) */
};

/* One object's use by one thread. */
struct syncstats_use {
	uint32_t object, thread; /* indexes */
	uint64_t ops, acquisitions, holds, hold_ns;
	uint64_t calls, signals;  /* wait calls; signals, broadcasts, posts, futex wakes */
	uint64_t first_signal_ns; /* with signals */
	struct syncstats_waits waits;
};

/* A pthread_join (or its try and timed forms) that returned. */
struct syncstats_join {
	uint32_t thread;  /* who joined (index) */
	uint32_t joined;  /* whom: thread index + 1, 0 when its pthread_t was never seen begin */
	uint64_t pthread; /* the pthread_t joined */
	uint64_t ns, wait_ns;
	bool failed;
};

/* A wait as the views get it (syncstats_set_wait_hook) and the longest
 * waits are kept: the thread that waited, from begin_ns to end_ns, on
 * obj (COND_WAIT: obj2 the mutex), and the waker: the thread whose
 * release, signal or post of the object came last before end_ns (for a
 * join, the thread joined, at its stream's last event), 0 when none is
 * known (a barrier, a timed-out wait, a futex of other code). */
struct syncstats_wait {
	uint32_t image, tid;
	uint8_t kind; /* enum syncstats_kind */
	uint8_t op;   /* enum lp_sync_op; 0 for a futex wait */
	uint32_t flags;
	uint64_t obj, obj2;
	uint64_t begin_ns, end_ns;
	uint64_t site; /* code address, 0: unknown */
	/* the innermost function (after filters) open then, 0 when none, and
	 * the number of such frames: as walk_sync's (a futex wait: its
	 * system call's) */
	uint64_t func;
	uint32_t depth;
	uint32_t waker_tid;
	uint64_t waker_ns;
	uint32_t object; /* index in objects; UINT32_MAX for a join */
};

/* A producer/consumer pair of thread groups: side 0 (producers) signals
 * or posts conditions and semaphores side 1 (consumers) waits on, and/or
 * the other way round; the producers are the side that signalled first.
 * A thread is on an object's signalling side when at least 3/4 of its
 * calls on it signal or post, on its waiting side when at least 3/4 wait;
 * an object with a thread in neither is not queue-like.
 * wait_ns[i] is the time side i waited on objects the other side signals;
 * the share is wait_ns[i] / (span_ns * nside[i]). */
struct syncstats_pair {
	uint32_t side[2][SYNCSTATS_SIDE_MAX]; /* thread indexes, ascending */
	uint32_t nside[2];
	uint32_t objects[SYNCSTATS_PAIR_OBJECTS]; /* object indexes */
	uint32_t nobjects;                        /* all of them (objects[] holds the first) */
	uint64_t wait_ns[2];
	uint64_t first_ns, last_ns, span_ns;
	double share[2];
	int slow; /* the side the other waits for more: 0 producers, 1 consumers, -1 neither */
	/* internal */
	uint64_t first_signal_ns[2];
};

/* What went past the bounds: left out of the numbers, counted. */
struct syncstats_overflow {
	uint64_t objects; /* operations on objects past SYNCSTATS_OBJECTS_MAX */
	uint64_t threads; /* operations of threads past SYNCSTATS_THREADS_MAX */
	uint64_t uses;    /* operations whose (object, thread) pair did not fit */
	uint64_t held;    /* acquisitions past SYNCSTATS_HELD_MAX held: no hold counted */
	uint64_t pending; /* futex waits placed early (SYNCSTATS_PENDING_MAX) */
	uint64_t joins;   /* joins past SYNCSTATS_JOINS_MAX */
	uint64_t pairs;   /* producer/consumer objects past the pair bounds */
	uint64_t hists;   /* objects without a histogram */
};

enum syncstats_sort_key {
	SYNCSTATS_BY_WAIT = 0, /* total wait */
	SYNCSTATS_BY_OPS = 1,  /* acquisitions (locks) or wait calls */
	SYNCSTATS_BY_AVG = 2,  /* average wait */
	SYNCSTATS_BY_MAX = 3,  /* longest wait */
	SYNCSTATS_BY_HOLD = 4, /* total hold */
	SYNCSTATS_BY_CONTENDED = 5,
	SYNCSTATS_BY_NAME = 6,
};

#define SYNCSTATS_SORT_KEYS_MAX 4

struct syncstats_order {
	enum syncstats_sort_key keys[SYNCSTATS_SORT_KEYS_MAX];
	int nkeys;
};

/* Parses "wait,max" (wait, ops, avg, max, hold, contended, name; also the
 * flat profile's total = wait, calls = ops, self = hold, min = contended,
 * so that report's --sort means the same here).  Returns 0 or -EINVAL. */
int syncstats_order_parse(struct syncstats_order *o, const char *spec);

/* The sorted tables, indexes into the struct syncstats arrays; owned by
 * the result (syncstats_result_release). */
struct syncstats_result {
	uint32_t *locks, nlocks; /* mutexes, rwlocks, spinlocks */
	uint32_t *conds, nconds; /* conditions and semaphores */
	uint32_t *barriers, nbarriers;
	uint32_t *futexes, nfutexes;  /* with waits */
	uint32_t *threads, nthreads;  /* by total wait, then tid */
	struct syncstats_pair *pairs; /* by the larger share */
	uint32_t npairs;
};

struct syncstats_item;

struct syncstats {
	struct walk *w; /* borrowed */
	struct syncstats_object *objects;
	uint32_t nobjects, objects_cap;
	struct syncstats_thread *threads;
	uint32_t nthreads, threads_cap;
	struct syncstats_use *uses; /* sorted by (object, thread) after syncstats_collect */
	uint32_t nuses, uses_cap;
	struct syncstats_join *joins;
	uint32_t njoins, joins_cap;
	struct syncstats_wait top[SYNCSTATS_TOP_WAITS]; /* the longest waits, longest first after collect */
	uint32_t ntop;
	uint64_t ops;                             /* operations applied */
	uint64_t late;                            /* applied after a later one (the merge's window) */
	uint64_t futex_waits, futex_waits_inside; /* of other code; inside an operation's wait (not counted) */
	struct syncstats_overflow over;
	bool oom;
	bool collected;
	/* internal */
	struct hashindex object_index, thread_index, use_index, pthread_index;
	struct syncstats_ptmap *ptmap;
	uint32_t nptmap, ptmap_cap;
	uint32_t (*hists)[SYNCSTATS_HIST_BUCKETS];
	uint32_t nhists, hists_cap;
	struct syncstats_item *q; /* min-heap by (ns, seq) */
	uint32_t nq, q_cap;
	uint64_t seq, applied_ns;
	int futex_nr[4][2]; /* per enum sys_arch: futex, futex_time64 (-1: none) */
	bool (*namer)(void *ctx, uint32_t image, uint64_t addr, uint64_t ns, char *buf, size_t size);
	void *namer_ctx;
	void (*wait_hook)(void *ctx, const struct syncstats_wait *wt);
	void *wait_ctx;
};

void syncstats_init(struct syncstats *st, struct walk *w);
/* Frees everything, names included.  Accepts a zeroed struct. */
void syncstats_release(struct syncstats *st);

/* Who names objects: namer writes a name for the object at addr of image
 * (first used at ns) into buf and returns true, or returns false.  Called
 * when an object is first seen (in time order), and at syncstats_collect
 * for those still without a name.  The report names heap blocks this way,
 * and else global and static variables by their symbol
 * (export/syncreport.c, symbolizer_data_name). */
void syncstats_set_namer(struct syncstats *st,
                         bool (*namer)(void *ctx, uint32_t image, uint64_t addr, uint64_t ns, char *buf, size_t size),
                         void *ctx);
/* Who hears each wait, in time order, with its waker: hook gets a
 * struct valid during the call.  For the views (wait slices with an arrow
 * from the releasing thread).  Waits are applied while the pass runs and
 * the rest at syncstats_flush or syncstats_collect. */
void syncstats_set_wait_hook(struct syncstats *st, void (*hook)(void *ctx, const struct syncstats_wait *wt), void *ctx);

/* The walk callbacks (ctx is the struct syncstats). */
void syncstats_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y);
void syncstats_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc);
void syncstats_watermark(void *ctx, uint64_t ns);
void syncstats_end(void *ctx, struct walk_stream *s);
/* Sets ops->ctx, sync, syscall, watermark and end; leaves the others. */
void syncstats_walk_ops(struct syncstats *st, struct walk_ops *ops);

/* Applies every operation still held back (the end of the pass, or a
 * view that wants everything so far). */
void syncstats_flush(struct syncstats *st);
/* After the pass: flushes, names the objects, computes percentiles, the
 * uses per object and the producer/consumer pairs, and sorts the tables
 * by order (NULL: total wait).  Call once.  Returns 0 or -ENOMEM (out
 * empty). */
int syncstats_collect(struct syncstats *st, const struct syncstats_order *order, struct syncstats_result *out);
void syncstats_result_release(struct syncstats_result *r);

/* An object's name as the reports print it: its namer's name, else
 * "0x<addr>" ("futex 0x<addr>" for a futex). */
const char *syncstats_object_name(const struct syncstats_object *o, char *buf, size_t size);
/* The call site of o's first operation as the reports print it
 * ("worker+0x2c", walk_name), "?" when unknown. */
const char *syncstats_object_site(struct walk *w, const struct syncstats_object *o, char *buf, size_t size);
/* A thread as the reports print it: "tid (comm)". */
const char *syncstats_thread_name(const struct syncstats_thread *t, char *buf, size_t size);

#endif
