/* The drain's internals, shared by its two files: drain.c (session
 * directory, rings, encoding) and drainsys.c (system call records merged
 * into the threads' streams).  Not for users of the drain: see drain.h. */
#ifndef LP_DRAIN_IMPL_H
#define LP_DRAIN_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/clocksync.h"
#include "common/ctrevent.h"
#include "common/drain.h"
#include "common/encoder.h"
#include "common/filter.h"

#define DRAIN_STREAMS_MAX 65536u
#define DRAIN_PATH_MAX 600u
#define DRAIN_EXITS_MAX 4096u
#define DRAIN_REAPED_MAX 256u
/* sync events a folding stage holds, at most (it holds at most
 * MEMFOLD_QUEUE_MAX events) */
#define DRAIN_SYNC_HELD_MAX (1u << 17)
#define DRAIN_CTR_TOTALS_MAX 16u

/* stream.exit_status of a stream that gets no EXIT event */
#define DRAIN_EXIT_NONE (-2)

struct systhread;
struct drainsys;
struct drainwatch;
struct drainloss;
struct syncevent;

/* One runtime ring and the stream it feeds. */
struct stream {
	struct lp_ring_header *ring;
	const struct lp_slot *slots;
	size_t map_size;
	uint32_t ring_slots;
	uint32_t tail;
	uint64_t lost_reported; /* events covered by LOST slots so far */
	uint64_t dropped_seen;  /* ring->dropped at the last poll */
	bool final;             /* its process is gone: head will not move */
	bool closed;
	int exit_status; /* with final: wait status, DRAIN_EXIT_UNKNOWN, or
	                  * DRAIN_EXIT_NONE (no EXIT event) */
	struct encoder *enc;
	struct filter_stream fs;
	bool filtered;
	/* the thread's queued syscall records (drainsys.c), and the time of
	 * the oldest one (UINT64_MAX: none): checked before every event */
	struct systhread *sys;
	uint64_t sys_next;
	/* the ring of a thread's next image, found while the older one was
	 * still open: it takes the thread's records once that one ends */
	struct systhread *sys_waiting;
	uint64_t first_ns; /* its first ring event (0: none yet) */
	/* the folding stage of heap operations (cfg.mem_fold_ns), or NULL:
	 * function and heap events go through it, the others flush it */
	struct memfold *fold;
	/* sync events held while they pass the folding stage (as LP_EV_SYNC
	 * markers, in order): a ring of sync_cap (a power of two, at most
	 * DRAIN_SYNC_HELD_MAX), sync_n of them from sync_head */
	struct syncevent *sync_held;
	uint32_t sync_cap, sync_head, sync_n;
	bool closing; /* drained to the end in this poll: closes after it */
	/* the ring's name kept in the directory (cfg.keep_rings, or found
	 * there by a salvage), removed when the stream closes; "" for none */
	char kept[64];
	bool flushed;            /* the encoder went out since the last drain_flush_idle */
	uint64_t lost_flushed;   /* lost_reported when the encoder last went out */
	uint32_t lost_records;   /* LOST events in the encoder */
	uint64_t lost_unwritten; /* salvage: events a killed consumer held */
	/* the latest event of the streams of its image that closed before it
	 * (threads that ended): the process's EXIT comes after them too */
	uint64_t peers_last_ns;
	/* record --counters: the counter event of the ENTRY or EXIT the
	 * filter stage is handed now, written after that event if the stage
	 * passes it on at once (NULL: none) */
	const struct ctrevent *ctr_pending;
	uint8_t ctr_pending_type; /* LP_EV_ENTRY or LP_EV_EXIT */
	/* the ENTRY and EXIT counter events the folding stage holds (as
	 * LP_EV_COUNTER events in its queue), oldest first; NULL until the
	 * first */
	struct drain_ctrfifo *ctr_fifo;
	/* record --counters with --min-time: the values of each ENTRY the
	 * filter stage holds back, by its frame's stack index (the frame's
	 * tag is that index + 1), written with the entry when the stage
	 * hands it on; NULL until the first, at most DRAIN_CTR_HELD_MAX */
	struct drain_ctrheld *ctr_held;
	uint32_t ctr_held_cap;
	struct drain *d;
};

/* A counter event held by the folding stage: up to DRAIN_CTR_FIFO_MAX per
 * stream (the stage holds at most MEMFOLD_QUEUE_MAX events); past that the
 * stage hands out what it holds first. */
#define DRAIN_CTR_FIFO_MAX 65536u
struct drain_ctrheld {
	uint64_t fn;
	uint8_t kind;
	uint8_t n;
	uint64_t values[LP_COUNTERS_MAX];
};

/* Entries held back by --min-time whose counter values are kept, per
 * stream (112 bytes each: 7 MiB at the bound); a held entry deeper than
 * that is written without its counter event. */
#define DRAIN_CTR_HELD_MAX 65536u

struct drain_ctrfifo {
	struct drain_ctrheld *a;
	uint32_t cap; /* a power of two */
	uint32_t head, tail;
};

/* The program's counter totals (drain_counter_totals), kept until the
 * stream that ends its process closes. */
struct drain_ctrtotals {
	pid_t pid;
	uint32_t n;
	struct ctrevent ev[];
};

/* The folding stages of one process image share its pairing. */
struct foldproc {
	uint32_t image;
	struct memfold_proc *p;
};

struct exited {
	pid_t pid;
	int status;
};

struct drain {
	char dir[DRAIN_PATH_MAX]; /* for messages and the removal at the end */
	int dirfd;                /* the session directory: every file is opened through it */
	uid_t owner;              /* whose rings and control file are trusted */
	struct drain_config cfg;
	struct drain_ops ops;
	struct lp_control *control;
	struct clocksync *clock;
	struct stream **streams;
	size_t nstreams, cap;
	struct exited exits[DRAIN_EXITS_MAX];
	size_t nexits;
	/* children reaped by a traced parent (LP_EXT_REAPED) during a poll,
	 * applied after it: the streams cannot change while it runs */
	struct exited reaped[DRAIN_REAPED_MAX];
	size_t nreaped;
	struct foldproc *foldprocs; /* with cfg.mem_fold_ns */
	size_t nfoldprocs, foldprocs_cap;
	struct drain_stats stats;
	uint64_t last_clock_export; /* ns */
	bool pressure;
	bool attached;                  /* the directory belongs to the program */
	bool salvage;                   /* drain_salvage: a killed recorder's session */
	bool salvage_scanned;           /* its one scan is done: the rings are all there */
	struct lp_filter_file *filters; /* mapped when first set */
	/* directory rescans: inotify descriptor (-1: rescan on every poll),
	 * a ring seen but not ready yet, time of the last full scan */
	int notify_fd;
	bool scan_pending;
	uint64_t last_scan;
	struct drainsys *sys;     /* NULL until the first syscall record */
	long sys_polled;          /* syscall records handed in during this poll */
	struct drainwatch *watch; /* NULL until the first stream */
	uint64_t last_watch;      /* time of its last check */
	struct drainloss *loss;   /* threads without a ring; NULL: not looked at */
	struct drain_ctrtotals *ctr_totals[DRAIN_CTR_TOTALS_MAX];
	size_t nctr_totals;
	int error;
};

/* drain.c */
int drain_emit(struct drain *d, uint8_t type, const uint8_t *payload, size_t len, uint64_t events);
/* Hands out an encoder's partial payload as an EVENTS chunk. */
void drain_flush_encoder(struct drain *d, struct encoder *e);
bool drain_exited_status(struct drain *d, uint32_t pid, int *status);

/* drainsys.c */
/* A ring stream opened: its thread's queued records go into it from now. */
void drainsys_bind(struct drain *d, struct stream *s);
/* Writes the stream's queued records up to time `ns` into its encoder
 * (before the ring event at `ns`); updates s->sys_next. */
void drainsys_emit(struct stream *s, uint64_t ns);
/* A ring stream closes: everything queued goes into it first. */
void drainsys_unbind(struct stream *s);
/* Whether functions are traced from outside the runtime (drain_set_eager):
 * the dynamic tracer's exec marks then say where a thread's image ends. */
bool drain_eager(const struct drain *d);
/* A stream that waited for a thread's older ring ends unbound. */
void drainsys_forget(struct stream *s);
/* After each poll: records up to t0 (a time before the ring heads were
 * loaded) of threads with a ring go into it; records of threads without
 * one go into a stream of their own once they are old enough. */
void drainsys_after_poll(struct drain *d, uint64_t t0);
/* The process ended (for streams without a ring). */
void drainsys_process_exited(struct drain *d, uint32_t pid, int status);
void drainsys_flush(struct drain *d);
void drainsys_set_chunk_bytes(struct drain *d, uint32_t bytes);
/* Writes everything left and ends the syscall-only streams. */
void drainsys_finish(struct drain *d);
void drainsys_free(struct drain *d);

/* drainwatch.c: processes that end unseen (see there) */
/* The first stream of process pid opened: it is watched from now. */
void drainwatch_stream(struct drain *d, pid_t pid);
/* Ends (drain_process_exited, DRAIN_EXIT_UNKNOWN) the processes with open
 * streams that are gone: found gone at the check before too, or at any
 * check when final (every record of the session has been drained). */
void drainwatch_check(struct drain *d, bool final);
void drainwatch_free(struct drain *d);

/* drainloss.c: threads that ran without a ring (see struct lp_loss_table) */
/* drain_new: the session's loss table, created with its space reserved.
 * Returns 0 or -errno (the drain then goes on with the control block's
 * counters alone; d->loss is set whenever memory allowed). */
int drainloss_create(struct drain *d);
/* drain_attach: the program's session has no table; what its control
 * block counted before now is not this drain's to report. */
int drainloss_attach(struct drain *d);
/* Writes what was counted since the last call as LOST events, into a
 * stream per thread (per entry), and ends the streams of threads that
 * ended; final: the last call. */
void drainloss_poll(struct drain *d, bool final);
void drainloss_free(struct drain *d);

#endif
