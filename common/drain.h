/* The drain: owns a session directory, finds the rings the runtime creates
 * in it, consumes their slots and turns them into trace chunks.  Used by
 * `layerprof record` and by the agent; C11 and libc only.  Single-threaded:
 * all calls from one thread. */
#ifndef LP_DRAIN_H
#define LP_DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/event.h"
#include "common/filter.h"

struct drain;

struct drain_ops {
	void *ctx;
	/* A finished chunk holding `events` events (EVENTS chunks; 0 for the
	 * others).  Returns 0 or -errno (the drain stops writing and
	 * drain_poll returns the error). */
	int (*chunk)(void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint64_t events);
	/* Optional: a code mapping was seen (before any event that needs it). */
	void (*map)(void *ctx, uint32_t image, const struct lp_event *ev);
	/* Optional: the executable segment [start, end) of an earlier map of
	 * image is unmapped from ns on (dlclose). */
	void (*unmap)(void *ctx, uint32_t image, uint64_t ns, uint64_t start, uint64_t end);
	/* Optional: record-time filters; NULL or empty records everything. */
	const struct filter_spec *filter;
	/* Optional: called by drain_poll after it has loaded the ring heads,
	 * to hand over syscall records (drain_syscall).  Returns true when a
	 * source kept records back for the next poll (drain_pressure). */
	bool (*collect)(void *ctx);
};

struct drain_config {
	uint32_t ring_chunks; /* power of two, >= 2 */
	uint32_t chunk_slots; /* power of two, >= 64 */
	uint32_t clock;       /* enum lp_clock_kind for the runtime */
	uint32_t chunk_bytes; /* EVENTS payload size to aim for; 0: the default */
	uint64_t mem_fold_ns; /* fold heap blocks released within this (see
	                       * common/memfold.h); 0: no folding */
	/* keep each ring's name in the directory (as LP_RING_DRAINED_PREFIX...)
	 * until its stream closes, and say in each ring's consumer line what
	 * is not written yet, so that drain_salvage can finish the work of a
	 * drain that was killed (record); false: a ring's name goes as soon
	 * as it is mapped (the agent) */
	bool keep_rings;
	uint32_t ring_full; /* enum lp_ring_full: what a producer with a full
	                     * ring does (record: wait; live: discard) */
	uint32_t stall_ms;  /* with LP_RING_FULL_WAIT: a producer stops waiting
	                     * after this long without a poll; 0: the default */
	/* a syscall tracer feeds the drain beside the kernel tracer: a
	 * thread's kernel events wait in its queue until something later of
	 * the thread has come (a syscall record or a ring event), since a
	 * syscall under way may be handed over only at its exit (the eBPF
	 * backend pairs them in the kernel) and its entry must come first */
	bool kernel_waits_for_syscalls;
};

struct drain_stats {
	uint64_t events;                      /* events written */
	uint64_t lost;                        /* events the runtime dropped */
	uint64_t streams;                     /* rings seen */
	uint64_t bytes;                       /* payload bytes written */
	uint64_t folded_blocks, folded_bytes; /* heap blocks folded (mem_fold_ns) */
	/* threads that ran without a ring (no space for one, the session
	 * directory removed), and their events (part of lost); the errno of
	 * the last such thread's failure (0: not known) */
	uint64_t unrecorded_threads, unrecorded_events;
	uint32_t unrecorded_error;
	/* LP_RING_FULL_WAIT: times producers waited for room, the time they
	 * spent (ns, summed over threads), and waits given up (the drain was
	 * too slow to poll within stall_ms); counted as streams close */
	uint64_t waits, wait_ns, wait_gave_up;
	/* events dropped because the pages of a ring's next chunk could not be
	 * had (the session's file system full; part of lost) */
	uint64_t nospace;
};

/* Creates the session directory `dir` (mode 0700; it must not exist: see
 * sessiondir_name for a name nobody can take first) with its control
 * file.  Every file in it is then opened through the directory's
 * descriptor, never through a link, and a ring is used only when it is a
 * regular file of the caller's effective uid with one name.  On error
 * returns NULL with errno set. */
struct drain *drain_new(const char *dir, const struct drain_config *cfg, const struct drain_ops *ops);
/* Attaches to a session directory that a running program made for itself
 * (see LP_ATTACH_DIR_DEFAULT), open as `dirfd` (borrowed: the drain keeps
 * a duplicate; the caller has checked that the directory is the program's)
 * and named `dir` in messages: maps its control block, takes the ring
 * geometry from it and leaves tracing as it is.  The control file and the
 * rings are used only when they are regular files of uid `owner` with one
 * name, opened without following links; the filter file the drain writes
 * there is its own or `owner`'s.  drain_free then leaves the directory in
 * place (the program owns it) after turning tracing off.  On error returns
 * NULL with errno set (ENOENT: no such session; EPERM: its control file is
 * not the owner's; EPROTO: not a layerprof session of this version). */
struct drain *drain_attach(int dirfd, const char *dir, uid_t owner, const struct drain_ops *ops);
/* Takes over the session directory of a drain that was killed (a recorder
 * that got SIGKILL; its config had keep_rings): dirfd is the directory,
 * opened by the caller, who has checked it is its own and keeps dirfd
 * (the drain works on a duplicate).  Tracing is turned off in the
 * session's processes (those still running go on untraced); every ring
 * still there is drained from where the killed drain stopped, and each
 * stream ends with a LOST event for what the killed drain had taken but
 * not written.  Hand the killed drain's CLOCK chunks to drain_clock_import
 * before the first poll.  drain_free then empties the directory (the
 * caller removes it).  On error returns NULL with errno set (EPROTO: not a
 * layerprof session of this version). */
struct drain *drain_salvage(int dirfd, const struct drain_ops *ops);
/* Adds the points of a CLOCK chunk payload (see clocksync_import).
 * Returns 0 or -EBADMSG. */
int drain_clock_import(struct drain *d, const uint8_t *payload, size_t len);
/* Sets the EVENTS payload size to aim for (see drain_config.chunk_bytes). */
void drain_set_chunk_bytes(struct drain *d, uint32_t bytes);
/* Consumes what the rings hold now.  Returns the number of slots consumed
 * plus the syscall records collected (a measure of how busy the sources
 * are), or -errno from the chunk callback. */
long drain_poll(struct drain *d);
/* True when the last poll found a ring more than a quarter full or one that
 * dropped events since the poll before, or ops.collect said a source kept
 * records back: poll again without sleeping. */
bool drain_pressure(const struct drain *d);
/* Sleeps up to `us` microseconds between polls, or until a producer that
 * must wait for room wakes the drain (LP_RING_FULL_WAIT). */
void drain_sleep(struct drain *d, unsigned us);
/* Hands out every stream's partial chunk now (a live host should not wait
 * for a quiet thread to fill 60 KiB).  Returns 0 or -errno. */
int drain_flush(struct drain *d);
/* The same for the streams whose chunk has not gone out since the last
 * call (a busy stream fills and writes its chunks by itself, so calling
 * this on a period costs it nothing); syscall-only streams are flushed
 * too.  Called every 100 ms, it bounds what a killed recorder loses to
 * the last 200 ms.  Returns 0 or -errno. */
int drain_flush_idle(struct drain *d);
/* The process `pid` is gone (wait status `status`, or DRAIN_EXIT_UNKNOWN):
 * the directory is scanned for its last rings; once drained, they are
 * closed, and a stream of its last image (the main thread's when there is
 * one) ends with a TASK EXIT event (LP_EXIT_STATUS_UNKNOWN for an unknown
 * status); its earlier images (replaced by exec) get none.  The drain also
 * learns this by itself for the children the program reaps (LP_EXT_REAPED
 * records in the reaping thread's ring), and, with the status unknown, for
 * the processes it finds gone without having been told (once a second, see
 * drainwatch.c; drain_finish looks at them all a last time). */
#define DRAIN_EXIT_UNKNOWN (-1)
void drain_process_exited(struct drain *d, pid_t pid, int status);
/* Drains everything, closes every stream and writes the clock points and
 * the END chunk.  Returns 0 or -errno. */
int drain_finish(struct drain *d);
/* Copies the counters so far. */
void drain_get_stats(const struct drain *d, struct drain_stats *out);
/* Enables or disables tracing in every process of the session. */
void drain_set_enabled(struct drain *d, bool on);
/* Source filters for every process of the session (live profiling; see
 * struct lp_filter_file): only and exclude are function entry addresses
 * (any order, duplicates allowed; at most LP_FILTER_ADDRS_MAX in all),
 * max_depth 0 and min_ns 0 mean no limit.  Returns 0, -E2BIG or -errno. */
int drain_set_filters(struct drain *d, const uint64_t *only, size_t n_only, const uint64_t *exclude, size_t n_exclude,
                      uint32_t max_depth, uint64_t min_ns);
/* Holds (or releases) processes of the session that are starting: their
 * runtime waits before main (at most 5 s) while the flag is set. */
void drain_set_hold(struct drain *d, bool on);
/* Forked children open their rings at once (LP_CTL_EAGER): their
 * functions are traced from outside the runtime (dyntrace/). */
void drain_set_eager(struct drain *d);
/* n patch plans are in the session (record --dynamic): the runtime reads
 * plan.0 to plan.<n-1>.  Before the program starts. */
void drain_set_plans(struct drain *d, uint32_t n);
/* The tickets of processes that asked for a plan of their executable so
 * far (their requests are in the session before they take one), and the
 * drain's answer: every ticket up to `tickets` answered. */
uint32_t drain_plan_wants(struct drain *d);
void drain_plan_answered(struct drain *d, uint32_t tickets);
/* Removes the source filters: every call is recorded again. */
void drain_clear_filters(struct drain *d);
/* A syscall entry or exit of thread `tid` of process `pid` (ns: CLOCK_MONOTONIC;
 * ev: see common/sysevent.h, its path is copied).  Call it from ops.collect,
 * each thread's records in time order.  The record goes into the thread's
 * stream in time order with its function events: into the stream of its
 * ring once the ring is there (records of a thread without one are held up
 * to DRAIN_SYSCALL_HOLD_NS for it), else into a stream of syscalls only,
 * whose process image gets the code mappings of /proc/<pid>/maps.  Returns
 * 0 or -ENOMEM (the record is then counted lost). */
struct sysevent;
int drain_syscall(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, const struct sysevent *ev);
/* A kernel event (ktrace/) for the stream of thread `tid` of process
 * `pid`: the tracepoint record as the kernel wrote it (raw, len bytes,
 * copied), its tracepoint id and CPU; packed: its common header has the
 * standard 8-byte layout (common/kernevent.h).  It takes its place in
 * time order with the thread's function events and syscalls, as
 * drain_syscall's records do.  A record of another process's thread
 * (other: kept for --kernel-system) goes into a stream of that thread's
 * own, begun with a TASK START flagged LP_TASK_START_OTHER and named comm
 * (no code mappings: the process is not profiled); such a stream never
 * waits for syscall records, and its encoder is let go of while the
 * thread is quiet, so that a whole system's threads do not each hold one.
 * pid 0: the thread's process is not known yet (a task named by another's
 * record, gone before the tracer could look): the record goes to the
 * thread of that tid, and a thread first seen so takes the process of
 * the first record that names one.  Returns 0 or -ENOMEM (counted lost). */
struct kernrec {
	uint32_t id, cpu, len;
	bool packed;
	const uint8_t *raw;
	bool other;       /* tid is not a traced thread (--kernel-system) */
	const char *comm; /* with other: the task's name as last seen ("" unknown) */
};
int drain_kernel(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, const struct kernrec *k);
/* Process `pid` runs already and has no ring (it is traced from outside
 * only: the agent's sessions attached by probes): its main thread's
 * stream begins now, with the mappings of /proc/<pid>/maps read while the
 * process surely lives (records of a thread without a ring wait a while
 * for one, and by then the process may be gone).  Returns 0 or -ENOMEM. */
int drain_adopt_process(struct drain *d, pid_t pid);
/* A function entry (exit false) or exit of thread `tid` of process `pid`
 * from the dynamic tracer (dyntrace/): addr is the function's address in
 * the process.  It takes its place in time order with the thread's other
 * events, as drain_syscall's records do.  Returns 0 or -ENOMEM (counted
 * lost). */
int drain_func(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t addr, bool exit);
/* The dynamic tracer saw thread `tid` exec at ns: its function events
 * after ns belong to the next image, and wait for that image's ring (as
 * records after an exec syscall do).  Returns 0 or -ENOMEM. */
int drain_func_exec(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns);
/* The dynamic tracer's forked child process: the n open calls (outermost
 * first, at most DRAIN_FORK_FRAMES_MAX) it inherited from a thread of
 * process parent, as a TASK FORK record in its stream (they count no
 * call).  Returns 0 or -ENOMEM. */
#define DRAIN_FORK_FRAMES_MAX 31u
int drain_func_fork(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t parent, const uint64_t *frames,
                    uint32_t n);
/* The dynamic tracer saw thread `tid` return to `depth` frames of its
 * function events without their exits (a longjmp): an LP_EV_LONGJMP in
 * its stream.  Returns 0 or -ENOMEM. */
int drain_func_longjmp(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t depth);
/* record --counters: the totals of process `pid`'s counters (its threads
 * and children), n events (LP_CTR_CPU, one per CPU, and LP_CTR_PROCESS;
 * copied), read after it was reaped and given before
 * drain_process_exited: they go into the stream that ends the process,
 * just before its EXIT event.  Returns 0, -ENOMEM or -ENOSPC (too many
 * processes' totals waiting). */
struct ctrevent;
int drain_counter_totals(struct drain *d, pid_t pid, const struct ctrevent *ev, uint32_t n);
/* count syscall records were lost (tid 0: thread unknown); shown as lost
 * events in the thread's stream. */
void drain_syscalls_lost(struct drain *d, uint32_t pid, uint32_t tid, uint64_t count);
/* Unmaps everything and removes the session directory.  Accepts NULL. */
void drain_free(struct drain *d);

#endif
