/* The heap state of traced processes, built incrementally from their heap
 * operations (memory tracer) taken in time order: live blocks per process,
 * per call site and per function the live objects and bytes, peaks, totals
 * and a growth trend; illegal releases, allocations overlapping live blocks
 * and mismatched releases.  Usable while a trace or a live stream is still
 * being read: every query answers for the operations applied so far.
 *
 * Memory grows with the live blocks, sites, functions, stacks and processes,
 * never with the number of operations: the recently freed blocks, the
 * illegal operations and the overlaps are kept up to fixed bounds (the rest
 * are counted).  Not thread-safe. */
#ifndef LP_HEAP_H
#define LP_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/util/hashindex.h"

/* Growth trend: the bytes each site holds in the processes still running
 * (a process that exits while no other runs, the program's last, keeps
 * counting), sampled at the end of HEAP_SERIES_LEN intervals,
 * HEAP_SERIES_STEP_NS long at first; when time runs past the last,
 * neighbouring intervals merge and the interval doubles.  The blocks a
 * forked child copied and kept until it exited are thus no growth of its
 * parent's sites. */
#define HEAP_SERIES_LEN 64u
#define HEAP_SERIES_STEP_NS 1000000ull
/* A site is `growing` when its live bytes rise over the later half of the
 * samples with a Mann-Kendall test p-value below HEAP_GROWTH_P, from at
 * least HEAP_GROWTH_MIN_SAMPLES samples spanning at least
 * HEAP_GROWTH_MIN_NS, with a positive least-squares slope.  The earlier
 * half is left out so that a heap that grew while the program started and
 * then stays level is not a suspect; a run of less than about a second is
 * too short to tell (what a program holds for a few ms at a time, a forked
 * child's copies say, would make a trend of any step). */
#define HEAP_GROWTH_P 0.01
#define HEAP_GROWTH_MIN_SAMPLES 16u
#define HEAP_GROWTH_MIN_NS 500000000ull

/* Bounds. */
#define HEAP_FREED_MAX 1024u   /* recently freed blocks remembered per process */
#define HEAP_ILLEGAL_MAX 4096u /* distinct illegal operations kept in detail */
#define HEAP_OVERLAPS_MAX 4096u
#define HEAP_SITES_MAX (1u << 20)
#define HEAP_STACKS_MAX (1u << 20)
#define HEAP_PROCS_MAX 65536u

/* The site of operations whose call site is unknown. */
#define HEAP_SITE_UNKNOWN 0u

/* Counters of one site or function. */
struct heap_counts {
	uint64_t live_objects, live_bytes;
	uint64_t peak_bytes;   /* highest live_bytes */
	uint64_t peak_objects; /* live_objects then */
	uint64_t peak_ns;      /* when peak_bytes was first reached */
	uint64_t allocs;       /* blocks allocated (folded ones included) */
	uint64_t frees;        /* of those, released (any way, at any site) */
	uint64_t failed;       /* allocations that returned no block */
	uint64_t bytes_allocated, bytes_freed;
	uint64_t folded, folded_bytes; /* short-lived blocks known only by count */
	/* blocks from before tracing began, listed by the runtime when it did
	 * (LP_MEM_BEFORE): live without an allocation in the trace */
	uint64_t listed, listed_bytes;
	/* of the live blocks, those of processes that exited (TASK EXIT)
	 * without releasing them */
	uint64_t unfreed_objects, unfreed_bytes;
	/* live at the moment of the global peak (struct heap.peak_ns); valid
	 * after heap_settle */
	uint64_t at_peak_objects, at_peak_bytes;
	/* internal: at-peak bookkeeping and the growth samples (the bytes held
	 * by processes still running) */
	uint64_t gen;
	uint32_t series_last; /* intervals written */
	/* of the unfreed bytes, those of processes that were the last one
	 * running when they exited: they stay in the samples */
	uint64_t held_bytes;
	uint64_t series[HEAP_SERIES_LEN];
};

struct heap_site {
	char *key;      /* the call site as displayed ("leaky+0x1c"); unique */
	char *function; /* the function holding it, or "[unknown]" */
	char *file;     /* source file of the call, NULL when unknown */
	unsigned line;
	uint32_t fn;    /* index in heap.fns */
	uint32_t stack; /* the first stack seen with this site (0: none) */
	struct heap_counts c;
};

struct heap_fn {
	char *name;
	struct heap_counts c;
};

/* An interned stack: return addresses of one process image, innermost
 * first.  Index 0 is the empty stack. */
struct heap_stack {
	uint32_t image;
	uint32_t n;
	uint64_t *ips;
	uint64_t hash;
};

/* The illegal releases (docs/format.md, "Heap operations"). */
enum heap_illegal_kind {
	HEAP_NEVER_ALLOCATED = 0,  /* no live block, none recently freed */
	HEAP_DOUBLE_FREE = 1,      /* the block was already released */
	HEAP_INTERIOR_POINTER = 2, /* points inside a live block, not at its start */
	HEAP_MISMATCH = 3,         /* a live block released by another family */
	HEAP_ILLEGAL_KINDS = 4,
};

/* One illegal release; repeats (same kind, operations and sites) only
 * count.  The release is where and how the program released; the block is
 * the live block concerned (interior pointer, mismatch) or the released
 * one (double free), with its allocation and, for a double free, its first
 * release. */
struct heap_illegal {
	enum heap_illegal_kind kind;
	uint8_t op;      /* the release: enum lp_mem_op */
	bool kept;       /* not passed to libc (LP_MEM_KEPT) */
	bool after_loss; /* the process had lost events before: maybe only their consequence */
	uint64_t count;
	uint64_t ns, ptr;
	uint32_t pid, image, tid;
	uint32_t site, stack;
	bool has_block;
	uint8_t alloc_op;
	uint64_t block_ptr, block_size, alloc_ns;
	uint32_t alloc_site, alloc_stack;
	bool has_free; /* double free: the first release */
	uint8_t free_op;
	uint64_t free_ns;
	uint32_t free_site, free_stack, free_tid;
};

/* A new block that overlapped a live one: libc handed out memory the trace
 * says is in use, so a release was missed or the heap is corrupt.  The old
 * block is then taken as gone. */
struct heap_overlap {
	bool after_loss; /* as in struct heap_illegal */
	uint64_t ns, ptr, size;
	uint8_t op;
	uint32_t pid, image, tid;
	uint32_t site, stack;
	uint64_t old_ptr, old_size, old_ns;
	uint8_t old_op;
	uint32_t old_site, old_stack;
};

struct heap_block;
struct heap_freed;

/* One process image (a pid from its start, fork or exec to its exit or
 * next exec). */
struct heap_proc {
	uint32_t image, pid;
	uint32_t parent_image; /* forked child: the image it copied; else 0 */
	bool has_parent;
	uint64_t start_ns;
	uint64_t ops; /* operations applied */
	bool exited;  /* TASK EXIT: exit_status, end_ns */
	bool execed;  /* replaced by another image: its blocks were dropped */
	bool held;    /* exited while no other process ran: its blocks stay in the growth samples */
	uint32_t exit_status;
	uint64_t end_ns;
	uint64_t live_objects, live_bytes;
	uint64_t peak_bytes, peak_ns;
	uint64_t inherited_objects, inherited_bytes; /* copied at fork */
	uint64_t unfreed_objects, unfreed_bytes;     /* at exit */
	uint64_t lost;                               /* events its threads lost so far */
	struct heap_block *root;                     /* live blocks by address */
	struct heap_freed *freed;                    /* ring of HEAP_FREED_MAX, on first use */
	uint32_t freed_head, nfreed;
};

/* One heap operation as heap_apply takes it. */
struct heap_op {
	uint8_t op;     /* enum lp_mem_op */
	uint32_t flags; /* enum lp_mem_flags */
	uint64_t ns, ptr, size, old;
	uint64_t count, bytes; /* FOLD */
	uint32_t tid;
	uint32_t site;  /* heap_site(); HEAP_SITE_UNKNOWN when not known */
	uint32_t stack; /* heap_stack(); 0 when none */
};

struct heap {
	struct heap_site *sites; /* [0] is the unknown site */
	uint32_t nsites, sites_cap;
	struct heap_fn *fns;
	uint32_t nfns, fns_cap;
	struct heap_stack *stacks; /* [0] is the empty stack */
	uint32_t nstacks, stacks_cap;
	struct heap_proc *procs;
	uint32_t nprocs, procs_cap;
	uint32_t running; /* processes neither exited nor replaced by exec */
	struct heap_illegal *illegal;
	uint32_t nillegal;
	struct heap_overlap *overlaps;
	uint32_t noverlaps;
	/* indexes of the arrays above */
	struct hashindex site_idx, fn_idx, stack_idx, proc_idx, pid_idx, illegal_idx;
	/* totals over every process */
	uint64_t ops; /* operations applied */
	uint64_t live_objects, live_bytes;
	uint64_t peak_bytes, peak_objects, peak_ns;
	uint64_t peak_gen; /* bumped at each new peak */
	uint64_t allocs, frees, failed, bytes_allocated, bytes_freed;
	uint64_t folded, folded_bytes, folds;
	uint64_t illegal_counts[HEAP_ILLEGAL_KINDS];
	uint64_t illegal_dropped;                         /* distinct illegal operations over the bound */
	uint64_t overlap_count;                           /* overlaps seen (noverlaps are kept) */
	uint64_t illegal_after_loss, overlaps_after_loss; /* of those, after lost events */
	uint64_t lost;                                    /* events lost by the traced threads (heap_lost) */
	uint64_t null_releases;                           /* free(NULL), delete nullptr: legal no-ops */
	/* a stream that began after the program did (heap_set_partial):
	 * releases of blocks it never saw allocated, not counted as illegal;
	 * of those, reallocs */
	bool partial;
	uint64_t partial_since_ns; /* when the stream began (0: unknown) */
	uint64_t released_unknown, reallocs_unknown;
	uint64_t resumed_ns;      /* heap_resumed: the latest time tracing came on again */
	uint64_t released_unseen; /* blocks from before a pause a later allocation overlapped */
	/* heap listings (LP_MEM_BEFORE ... LP_MEM_BASELINE): the runtime's
	 * live-block table listed when tracing began; complete ones make the
	 * state whole again (partial cleared) */
	uint32_t listings, listings_incomplete;
	uint64_t listed_objects, listed_bytes;
	uint64_t listed_dropped;                 /* live here, overlapped by a listed block: released unseen */
	uint64_t kept_releases;                  /* releases kept from libc (LP_MEM_KEPT) */
	uint64_t unfreed_objects, unfreed_bytes; /* processes that exited */
	uint64_t dropped_at_exec;                /* blocks of images replaced by exec */
	uint64_t out_of_order;                   /* operations earlier than the last applied */
	uint64_t first_ns, last_ns;
	uint64_t now_ns; /* the latest operation or heap_advance */
	/* growth sampling */
	uint64_t step_ns;  /* interval length */
	uint32_t series_n; /* intervals begun */
	uint64_t rng;
	void *pool; /* block allocator (heap.c) */
	bool oom;   /* an allocation failed: the state is incomplete */
};

/* Growth of one site or function (heap_growth). */
struct heap_growth {
	bool growing;
	uint32_t samples;  /* samples tested (the later half) */
	double p_value;    /* one-sided Mann-Kendall, 1 when not tested */
	double confidence; /* 1 - p_value */
	double rate_bps;   /* least-squares slope over the tested samples, bytes/s */
};

/* Sets up an empty heap.  Returns 0 or -ENOMEM.  Release with heap_release
 * (also after a failed init). */
int heap_init(struct heap *h);
void heap_release(struct heap *h);

/* The index of a call site, made on first use from key (the site as
 * displayed, unique), function (NULL: "[unknown]") and the source file and
 * line (file NULL: unknown); strings are copied.  Returns the index, or
 * HEAP_SITE_UNKNOWN when memory or HEAP_SITES_MAX runs out (h->oom set). */
uint32_t heap_site(struct heap *h, const char *key, const char *function, const char *file, unsigned line);
/* The index of a stack of image (n addresses, innermost first; copied),
 * 0 for an empty one or when memory or HEAP_STACKS_MAX runs out. */
uint32_t heap_stack(struct heap *h, uint32_t image, const uint64_t *ips, uint32_t n);

enum heap_start_flags {
	HEAP_START_EXEC = 1u << 0, /* the image replaces the pid's current one */
};

/* A process image begins at ns.  With parent_pid nonzero it is a forked
 * child of that pid: it starts with a copy of the live blocks of the
 * parent's current image.  With HEAP_START_EXEC, the pid's earlier image
 * was replaced: its blocks are dropped (the recorder writes the pid's exit
 * status into its last image only).  Known
 * images are left alone.  Returns 0 or -ENOMEM/-ENOSPC (h->oom set). */
int heap_proc_start(struct heap *h, uint32_t image, uint32_t pid, uint64_t ns, uint32_t parent_pid, unsigned flags);
/* The process of image exited with the given wait status: its live blocks
 * are unfreed at exit (they stay counted as live, and leave the growth
 * samples unless no other process is running).  Operations of the process applied
 * after its exit (another of its threads, later in time order) change its
 * live and unfreed blocks alike. */
void heap_proc_exit(struct heap *h, uint32_t image, uint64_t ns, uint32_t status);
/* Applies one operation of image (started implicitly with pid when not
 * known).  Operations must come in time order across all threads of a
 * process; earlier ones are applied anyway and counted in out_of_order.
 * Returns 0 or -ENOMEM (h->oom set; the operation is lost). */
int heap_apply(struct heap *h, uint32_t image, uint32_t pid, const struct heap_op *op);

/* The operations applied from now on start after the program did (a live
 * session attached to a running program, or tracing turned on later), at
 * ns (0: unknown): blocks allocated before are unknown, so releasing a
 * block never seen allocated is counted in released_unknown (and, for
 * realloc, reallocs_unknown), not as HEAP_NEVER_ALLOCATED.  Other illegal
 * releases (double free of a block seen released, interior pointers,
 * mismatches) are still found.  A trace recorded from the start never
 * calls this. */
void heap_set_partial(struct heap *h, uint64_t ns);
/* Tracing was turned on again at ns after a pause: a block released before
 * ns and released again after may have been allocated again in the pause,
 * unseen, so that second release counts in released_unknown, not as a
 * double free. */
void heap_resumed(struct heap *h, uint64_t ns);

/* Events were lost in a thread of image at ns: the illegal releases and
 * overlaps found in that process afterwards may be only their consequence
 * (a lost release makes a block look live, a lost allocation makes its
 * release look illegal), and are marked so. */
void heap_lost(struct heap *h, uint32_t image, uint64_t ns, uint64_t count);
/* Moves the sampling clock to ns without an operation (the trace or the
 * live view has reached ns): the growth trend then covers the quiet time. */
void heap_advance(struct heap *h, uint64_t ns);
/* Brings the derived values up to date for the operations applied so far:
 * at-peak values and the growth samples up to the last operation's time.
 * Cheap enough to call before each view; applying may go on after it. */
void heap_settle(struct heap *h);
/* The growth trend of c (after heap_settle). */
void heap_growth(const struct heap *h, const struct heap_counts *c, struct heap_growth *out);

/* Calls cb for each live block of process image p in address order (stops
 * at the first nonzero return and returns it). */
int heap_foreach_block(const struct heap_proc *p,
                       int (*cb)(void *ctx, uint64_t ptr, uint64_t size, uint64_t ns, uint32_t site, uint32_t stack,
                                 uint8_t op),
                       void *ctx);
/* The live block of p containing addr (interior pointers too): returns
 * true and fills *ptr, *size, *site. */
bool heap_find_block(const struct heap_proc *p, uint64_t addr, uint64_t *ptr, uint64_t *size, uint32_t *site);
/* The process image with this id, or NULL. */
struct heap_proc *heap_proc_find(const struct heap *h, uint32_t image);

/* Names for output: "malloc", "new[]", ...; "never_allocated", ... */
const char *heap_op_name(uint8_t op);
const char *heap_illegal_name(enum heap_illegal_kind kind);
/* The allocation family of an operation: 1 C (malloc .. realloc, free),
 * 2 new/delete, 3 new[]/delete[]; 0 for FOLD and unknown ones. */
int heap_op_family(uint8_t op);

#endif
