/* The event walk: reads a trace once, in file order, and hands each
 * thread's properly nested, filtered function events to its consumers
 * (report, tree, replay, the live view, the web UI's model).  Memory stays
 * bounded by the number of threads and stack depth, not by the number of
 * events. */
#ifndef LP_WALK_H
#define LP_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/decoder.h"
#include "common/filter.h"
#include "common/libcsig.h"
#include "common/memevent.h"
#include "common/sysevent.h"
#include "host/lib/trace/reader.h"
#include "host/lib/util/hashindex.h"
#include "host/lib/util/options.h"

struct symbolizer;
struct classifier;
struct lp_warner;

#define WALK_STREAMS_MAX 65536u
/* Stack definitions (memory tracer) kept per stream, and the addresses
 * they hold in all streams together: a stream's full table lets go of its
 * older half (lowest ids); definitions past the address bound are dropped;
 * both are counted, and the operations using them have no stack. */
#define WALK_STACKS_MAX 65536u
#define WALK_STACK_ADDRS_MAX (32u << 20)

/* One system call as the walk pairs its entry and exit. */
struct walk_syscall {
	uint8_t arch; /* enum sys_arch */
	uint32_t nr;
	bool has_enter;    /* false: the exit of a call whose entry is not in the trace */
	bool has_exit;     /* false: unfinished (exit_group, killed, trace ended) */
	uint64_t enter_ns; /* with has_enter */
	uint64_t exit_ns;  /* with has_exit */
	int64_t ret;       /* with has_exit: -errno on failure */
	uint32_t nargs;
	uint64_t args[6];
	uint32_t nips; /* user return addresses, innermost first */
	uint64_t ips[SYSEVENT_IPS_MAX];
	const char *str; /* path argument, when read (valid during the callback) */
	uint32_t str_len;
	bool str_late;
	/* attribution: the innermost function (after filters) the thread was
	 * in, 0 when none, and the number of such frames */
	uint64_t func;
	uint32_t depth;
};

/* One heap operation (memory tracer) with its stack resolved through the
 * stream's stack definitions. */
struct walk_mem {
	uint8_t op;     /* enum lp_mem_op */
	uint32_t flags; /* enum lp_mem_flags */
	uint64_t time;
	uint64_t ptr, size, old;            /* see struct memevent */
	uint64_t count, bytes, lifetime_ns; /* FOLD */
	uint32_t tid;
	uint32_t stack_id; /* the stream's stack id; 0: none */
	/* return addresses, innermost first (the call site first); valid
	 * during the callback.  nips is 0 without a stack or when the id was
	 * never defined (counted in walk.mem_unknown_stacks). */
	const uint64_t *ips;
	uint32_t nips;
	/* a word the consumer may keep with this stack definition (what it
	 * made of the stack), 0 until it writes one; NULL without a stack,
	 * and for all but the first consumer in the list that takes heap
	 * operations (the word is one per definition) */
	uint64_t *cache;
	/* the innermost function (after filters) open at the operation, 0
	 * when none, and the number of such frames: as for syscalls */
	uint64_t func;
	uint32_t depth;
};

/* One kernel event (a tracepoint record, ktrace/) in the stream of the
 * thread it concerns, with what that thread was doing then.  raw is the
 * whole record, common header first, as the kernel wrote it: decode it
 * with the trace's formats (host/lib/kernel/). */
struct walk_kernel {
	uint64_t ns;
	uint32_t id, cpu; /* tracepoint id, CPU */
	const uint8_t *raw;
	uint32_t raw_len;
	/* the innermost function (after filters) open then, 0 when none, and
	 * the number of such frames: as for syscalls */
	uint64_t func;
	uint32_t depth;
	/* the thread was inside a system call (entered, not yet exited) */
	bool in_syscall;
	uint8_t sc_arch;
	uint32_t sc_nr;
	uint64_t sc_enter_ns;
};

/* A probed instruction the thread ran (record --probe), with the
 * innermost function (after filters) open then and the depth, as for
 * syscalls. */
struct walk_probe {
	uint64_t ns;
	uint64_t addr;
	uint64_t func;
	uint32_t depth;
};

/* A synchronisation operation (record --sync, common/syncevent.h), with
 * the innermost function (after filters) open then and the depth, as for
 * syscalls. */
struct walk_sync {
	uint64_t ns;      /* the operation's end: acquired, woken, returned, or made */
	uint8_t op;       /* enum lp_sync_op */
	uint32_t flags;   /* enum lp_sync_flags */
	uint64_t obj;     /* the lock, condition, barrier, semaphore or pthread_t */
	uint64_t obj2;    /* COND_WAIT: the mutex */
	uint64_t wait_ns; /* the wait began wait_ns before ns (0: none) */
	uint64_t site;    /* the call site (a code address, as function addresses are), 0: unknown */
	uint64_t func;
	uint32_t depth;
};

/* Counter values (record --counters, common/ctrevent.h): values[i] is the
 * count of the trace's i-th counter (walk.counters).  An ENTRY or EXIT
 * comes just after the function event it belongs to (fn is its address,
 * a code address; the function events may be filtered out by the host's
 * filters, the counter events are not).  func and depth as for syscalls. */
struct walk_counter {
	uint64_t ns;
	uint8_t kind;   /* enum lp_ctr_kind */
	uint32_t flags; /* enum lp_ctr_flags */
	uint64_t fn;
	uint32_t cpu; /* CPU */
	uint32_t n;
	const uint64_t *values;
	const uint64_t *enabled, *running; /* NULL without LP_CTR_HAS_TIMES */
	uint64_t func;
	uint32_t depth;
};

struct walk_stack_def;

struct walk_chunk_ref {
	off_t offset;
	uint64_t ns;
};

struct walk_stream {
	uint32_t image, pid, tid;
	char comm[17];
	uint64_t first_ns, last_ns;
	uint64_t calls;      /* entries seen (before filters) */
	uint64_t lost;       /* events the target dropped in this stream, and
	                      * those of calls deeper than the filter stage
	                      * tracks (filter_stream.deep_calls) */
	uint32_t parent_pid; /* forked child: the parent's pid; else 0 */
	bool ended;          /* the thread ended (TASK END) */
	bool after_exec;     /* main thread of an image that replaced another */
	bool exited;         /* the process exited (TASK EXIT); see status */
	uint32_t status;     /* wait status with `exited` */
	bool selected;       /* passes --tid, and is the program's (not other) */
	/* another process's thread, its kernel events recorded by record
	 * --kernel-system (TASK START flagged LP_TASK_START_OTHER): never
	 * selected; only consumers with walk_ops.others get its events */
	bool other;
	uint32_t index; /* order of first appearance */
	void *user;     /* the consumer's */
	struct filter_stream fs;
	uint64_t syscalls; /* syscalls seen (entries, or exits without one) */
	/* the call entered and not yet exited */
	bool sc_pending;
	struct walk_syscall sc;
	char sc_str[SYSEVENT_STR_MAX];
	uint64_t mem_ops;       /* heap operations seen */
	uint64_t kernel_events; /* kernel events seen */
	/* stack id definitions: nstacks of stacks_cap, found by id through
	 * stack_index */
	struct walk_stack_def *stacks;
	uint32_t nstacks, stacks_cap;
	struct hashindex stack_index;
	uint32_t max_stack_id;
	uint64_t order_ns; /* walk_run_by_time: sort time of its last chunk */
	struct walk *w;
};

/* A chunk as the walk reads it, for walk_ops.chunk_begin and chunk_end.
 * payload is the chunk's checked payload, valid during the call. */
struct walk_chunk {
	uint8_t type; /* LP_CHUNK_* */
	off_t offset; /* of its header in the trace file; -1 with walk_feed */
	const uint8_t *payload;
	size_t len;
};

/* The most consumers in one list (walk_ops.next). */
#define WALK_CONSUMERS_MAX 16u

/* One consumer of the walk: the callbacks it wants (NULL: not this kind
 * of event) and its ctx, handed back to each.  Several consumers form a
 * list through `next` (walk_chain); the walk calls them in list order,
 * each event to every consumer before the next event, so that a new kind
 * of event or a new builder plugs in once and reaches every command that
 * runs the walk with that builder's consumer in its list.
 *
 * Ownership: the consumers are borrowed from the call that starts the
 * pass (walk_run, walk_run_by_time, walk_begin) until it returns, or for
 * walk_begin until walk_end; a consumer is in one list at a time.  What a
 * consumer may keep: the struct walk_stream pointers (valid until the next
 * pass or walk_release) and what it copies; event arguments given by
 * pointer (walk_syscall, walk_mem, walk_chunk and what they point to) are
 * valid during the call only.
 *
 * Order of calls within a pass: begin for a stream before its first event
 * (only streams that are selected get any call); then its events in order;
 * chunk_begin and chunk_end bracket the events of each chunk the walk
 * reads (every chunk type; the walk runs them as the trace has them, or by
 * time with walk_run_by_time, where watermark comes before chunk_begin);
 * after the last chunk_end, stream by stream in order of first event, the
 * syscall still pending, the exits of calls still open (at the stream's
 * last event time), then end.
 *
 * Stopping: only chunk_begin and chunk_end may stop the pass, by returning
 * a negative errno (0 goes on); an event callback that fails notes it in
 * its own state and may say so from its next chunk_end.  A stop ends the
 * pass at once: no further callback of any consumer is made (not the
 * chunk_begin of those after it, not the chunk_end of a chunk whose
 * chunk_begin stopped, not end), the trace's condition (w->r) is left as
 * it was, and walk_run, walk_run_by_time or walk_feed returns the value
 * (after walk_feed, the caller feeds no more and may still walk_end).
 * chunk_end follows every chunk_begin that did not stop, also for a chunk
 * the walk found undecodable.  A list of more than WALK_CONSUMERS_MAX
 * consumers is refused with -E2BIG: by walk_begin (walk_run and
 * walk_run_by_time return it before any callback), or, grown past it
 * during a pass, as a stop at the next chunk.
 * After walk_begin, the list may grow between walk_feed calls
 * (walk_chain): the consumers added see the events from the next chunk on
 * (a serve model added to a live session's list). */
struct walk_ops {
	void *ctx;
	struct walk_ops *next; /* the next consumer; NULL: the last */
	/* the consumer takes other processes' streams too (walk_stream.other:
	 * begin, task, kernel, lost and end); the others never see them */
	bool others;
	void (*begin)(void *ctx, struct walk_stream *s);
	void (*entry)(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags);
	void (*exit)(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
	             unsigned flags);
	void (*lost)(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count);
	/* a whole call recorded by a duration source filter (live): no
	 * nesting is known for it */
	void (*call)(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns);
	/* the arguments of the call of addr whose entry came last in the
	 * stream (--libcalls' C library functions, common/libcsig.h: a's
	 * memory is valid during the call), and the return value of the call
	 * of addr whose exit comes next; before the host's own filters, so a
	 * consumer matches them with the entry or exit it is given */
	void (*args)(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, const struct libcsig_args *a);
	void (*retval)(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint64_t value);
	/* a probed instruction ran (valid during the call) */
	void (*probe)(void *ctx, struct walk_stream *s, const struct walk_probe *p);
	/* a system call, at its exit (or, unfinished, at the next entry or the
	 * end of its stream), in order with the thread's function events */
	void (*syscall)(void *ctx, struct walk_stream *s, const struct walk_syscall *sc);
	/* a heap operation (memory tracer), in order with the thread's
	 * function events; streams are not merged by time */
	void (*mem)(void *ctx, struct walk_stream *s, const struct walk_mem *m);
	/* a kernel event, in order with the thread's function events */
	void (*kernel)(void *ctx, struct walk_stream *s, const struct walk_kernel *k);
	/* a synchronisation operation, in order with the thread's function
	 * events */
	void (*sync)(void *ctx, struct walk_stream *s, const struct walk_sync *y);
	/* counter values, in order with the thread's function events */
	void (*counter)(void *ctx, struct walk_stream *s, const struct walk_counter *c);
	/* a task event (enum lp_task_kind): value is the parent pid for
	 * FORK, the wait status for EXIT */
	void (*task)(void *ctx, struct walk_stream *s, uint64_t ns, unsigned kind, uint64_t value);
	/* walk_run_by_time: no event still to come is earlier than ns */
	void (*watermark)(void *ctx, uint64_t ns);
	/* after the last event of the trace, once per stream; by then
	 * w->streams is in order of first event */
	void (*end)(void *ctx, struct walk_stream *s);
	/* around each chunk: see above */
	int (*chunk_begin)(void *ctx, const struct walk_chunk *c);
	int (*chunk_end)(void *ctx, const struct walk_chunk *c);
};

/* Appends the list `more` at the end of the list `list`. */
void walk_chain(struct walk_ops *list, struct walk_ops *more);

struct walk {
	const char *dir;
	struct reader r;
	struct decoder *dec;
	struct symbolizer *sym;
	struct classifier *cls;
	struct filter_opts fopts;
	struct filter_spec spec;
	struct walk_stream **streams; /* in order of first appearance */
	uint32_t nstreams, cap;
	uint32_t nother;        /* of them, other processes' (walk_stream.other) */
	struct hashindex index; /* streams by (image, tid) */
	uint64_t events, lost;
	uint64_t syscalls;                        /* syscall events seen: the trace has the syscall layer */
	uint64_t kernel_events, kernel_malformed; /* the kernel layer's */
	uint64_t other_kernel_events;             /* of them, in other processes' streams */
	/* the trace's KFORMAT payloads, back to back, each "u32 length, bytes"
	 * (host/lib/kernel/ decodes them); kformat_gen counts the payloads */
	uint8_t *kformat;
	size_t kformat_len, kformat_cap;
	uint32_t kformat_gen;
	/* what host/lib/kernel/ made of them, with the kformat_len it was made
	 * from, freed by walk_release through kformat_cache_free */
	void *kformat_cache;
	size_t kformat_cache_len;
	void (*kformat_cache_free)(void *cache);
	/* memory tracer: heap operations seen (the trace has the heap layer),
	 * events with a malformed body, operations naming a stack id not
	 * defined before, stack definitions dropped over the bounds */
	uint64_t mem_ops, mem_malformed, mem_unknown_stacks, mem_stacks_dropped;
	uint64_t mem_stacks_forgotten; /* older definitions let go of by a full table */
	/* the sync layer (record --sync): operations seen, events with a
	 * malformed body */
	uint64_t sync_events, sync_malformed;
	/* counters (record --counters): events seen, malformed ones, and the
	 * trace's counter set from META "counters" (perf names, in the order
	 * of the values; ncounters 0 when the trace has none) */
	uint64_t counter_events, counter_malformed;
	uint32_t ncounters;
	char counters[LP_COUNTERS_MAX][64];
	uint64_t stack_addrs; /* addresses held by all stack tables */
	uint64_t first_ns, last_ns;
	/* code the trace told unmapped (dlclose): from the first, function
	 * addresses handed to the consumer are code addresses (symbolizer.h),
	 * which tell apart objects mapped at the same addresses in turn */
	uint64_t unmaps;
	char meta[4096]; /* META chunk text (NUL-terminated, cut if longer) */
	bool filtered_at_record;
	bool source_filtered; /* whole-call records seen: the trace has gaps */
	bool bad_payload;
	/* only_stream: with `restrict_stream`, events of other streams are
	 * decoded (for their mappings) but not handed to the consumer */
	bool restrict_stream;
	uint32_t only_image, only_tid;
	const struct walk_ops *ops; /* the consumers, during a pass */
	/* those of them that take entries, exits (made before each chunk) */
	const struct walk_ops *entry_ops[WALK_CONSUMERS_MAX], *exit_ops[WALK_CONSUMERS_MAX];
	uint32_t nentry, nexit;
	bool quiet; /* the caller's: no progress to the walk_set_progress hook */
	/* walk_run_by_time's chunk index: offset and sort time of each META
	 * and EVENTS chunk, sorted */
	struct walk_chunk_ref *order;
	size_t norder, order_cap;
	bool order_ready;
	/* a pass has read every code mapping already (walk_run with filters by
	 * name reads the trace once more first) */
	bool maps_ready;
};

/* Opens the trace (dir NULL: no file, for walk_feed) and sets up symbols
 * and filters.  fopts is copied (its
 * pattern strings are borrowed).  Returns 0, or -errno with a message in
 * err (the trace reader's codes: see reader_open; -ENODATA also for a
 * trace that ends after its file header). */
int walk_open(struct walk *w, const char *dir, const struct filter_opts *fopts, char *err, size_t errlen);
/* Reads the whole trace, calling the consumers in the list ops (NULL:
 * none).  Can run again (it rewinds).  Returns 0, -ENOMEM, or the value a
 * consumer stopped the pass with; the trace's damage, if any, is in
 * w->r.state / w->r.damage.  A trace of 64 MiB or more reports its
 * progress to the walk_set_progress hook, unless w->quiet. */
int walk_run(struct walk *w, const struct walk_ops *ops);

/* The same pass with the threads' chunks in time order: chunks are fed by
 * the time of their first event (a thread's own chunks stay in order), and
 * ops.watermark says before each chunk that no event still to come is
 * earlier, so that a consumer can merge the threads' events by time while
 * holding only the chunks that overlap in time.  The first call reads the
 * trace once more beforehand, for its code mappings (addresses are named
 * from the first event on) and the chunk index; later calls reuse both.
 * Returns as walk_run. */
int walk_run_by_time(struct walk *w, const struct walk_ops *ops);

/* The same pass, fed by the caller chunk by chunk (a live stream): open
 * with dir NULL, then walk_begin, walk_feed for each whole chunk (type and
 * checked payload), walk_end once.  walk_begin returns 0 or -E2BIG (see
 * walk_ops).  walk_feed returns 0, -EBADMSG for an
 * undecodable EVENTS payload, -ENOMEM, or the value a consumer stopped the
 * pass with (the caller then feeds no more). */
int walk_begin(struct walk *w, const struct walk_ops *ops);
int walk_feed(struct walk *w, uint8_t type, const uint8_t *payload, size_t len);
void walk_end(struct walk *w);
/* Who hears how far a pass over a big trace file (64 MiB and more) has
 * come: fn gets the trace's directory and the percentage read, every 16 MiB,
 * then -1 when the pass is over.  NULL (the default): no one.  For the
 * whole process: the command sets it once. */
void walk_set_progress(void (*fn)(const char *dir, int percent));
/* A function's display name: demangled symbol, or an address form. */
const char *walk_name(struct walk *w, uint32_t image, uint64_t addr, char *buf, size_t size);
/* Looks up "key" in the META chunk; copies its value.  Returns buf or NULL. */
const char *walk_meta(const struct walk *w, const char *key, char *buf, size_t size);
/* The trace's condition after a walk, in this order: each filter that
 * matched nothing and the calls left out for their depth, as warnings to
 * warn (lines beginning "warning: "; warn may be NULL); then -EBADMSG with
 * err saying so when the trace is damaged (results cover the readable
 * part), else a warning when the recording was interrupted, and 0. */
int walk_condition(const struct walk *w, const struct lp_warner *warn, char *err, size_t errlen);
void walk_release(struct walk *w);

#endif
