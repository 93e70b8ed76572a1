/* Private to ktrace/: the tracer's state, shared by ktrace.c (opening,
 * following the traced threads, reading) and kselect.c (which tracepoints,
 * their filters and formats). */
#ifndef LP_KTRACE_IMPL_H
#define LP_KTRACE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ktrace/kprobes.h"
#include "ktrace/ktrace.h"
#include "systrace/perfring.h"
#include "systrace/tracefs.h"

#define KT_NAME_MAX 64u
#define KT_PIDFIELDS 3  /* next_pid, pid, child_pid */
#define KT_ASSOC 4096u  /* block requests and timers of traced threads */
#define KT_SAMPLE_NS 16 /* sample body: identifier, pid/tid, time, cpu, raw */
#define KT_SAMPLE_HEAD 32u
#define KT_FORMAT_CHUNK (512u << 10)
#define KT_SW_FAULT_SIZE 32u /* a software page fault as a page_fault_user record (kselect.c) */

/* One tracepoint: what the reader needs of its format. */
struct kt_event {
	char group[KT_NAME_MAX], name[KT_NAME_MAX];
	uint32_t id;
	char *fmt;       /* the format file's text */
	bool forward;    /* selected: its records go to the streams */
	bool fork, exec; /* sched_process_fork / _exec: followed internally */
	const char *filter;
	/* payload fields naming a task the record concerns, and that task's
	 * name where the record has it (size 0: not) */
	struct tracefs_field pidf[KT_PIDFIELDS], commf[KT_PIDFIELDS];
	int npidf;
	struct tracefs_field runcomm;       /* the running task's name (prev_comm, parent_comm) */
	struct tracefs_field parent, child; /* fork */
	/* block: dev and sector tie a completion to its issuer */
	bool block, complete;
	struct tracefs_field dev, sector;
	/* timers: the timer's address ties its expiry to the thread that armed it */
	bool timer, timer_start, timer_cancel;
	struct tracefs_field tptr;
	bool packed; /* the standard 8-byte common header */
	bool glob;   /* chosen by a pattern: left out (with a warning) if it cannot be opened */
	bool skip;   /* left out */
	/* not a tracepoint: perf's page-faults software event, its samples
	 * turned into records of the format of x86's
	 * exceptions:page_fault_user (address, ip 0, error_code 0) */
	bool sw_fault;
};

struct kt_task {
	uint32_t tid; /* 0: empty */
	uint32_t pid;
	bool held; /* the spawned child before its first exec */
};

struct kt_assoc {
	uint64_t a, b; /* (dev, sector) or (timer, 0); a == 0 && b == 0: empty */
	uint8_t kind;  /* 1 block, 2 timer */
	uint32_t pid, tid;
};

struct kt_idmap {
	uint64_t perf_id;
	uint32_t ev;
};

struct ktrace {
	struct ktrace_ops ops;
	struct kt_event *ev;
	uint32_t nev;
	char *selection;
	struct perfrings pr;
	int *fds;
	int *fd_ring; /* the ring index of each */
	size_t nfds;
	struct kt_idmap *ids; /* sorted by perf_id */
	size_t nids;
	struct kt_task *tasks; /* open addressing by tid */
	uint32_t tasks_cap, ntasks;
	struct kt_assoc assoc[KT_ASSOC];
	uint8_t *formats;  /* the KFORMAT chunks back to back */
	size_t *chunk_end; /* where each ends in formats */
	size_t nchunks;
	uint64_t *lost_cpu;
	int *cpus;
	uint64_t records, kept, lost, cut;
	bool lost_count;               /* PERF_FORMAT_LOST: losses readable from the events */
	const char *root;              /* tracefs */
	char kgroup[KPROBES_NAME_MAX]; /* our kprobes' group, "" when none */
	bool finished;
	struct ksystem *sys; /* --kernel-system: the other tasks; NULL: not kept */
};

/* Chooses the tracepoints of cfg (and of the kprobes group kt->kgroup, when
 * set) under tracefs root, with their filters, and packs their formats
 * into KFORMAT chunks (kt->formats).  warn: what was left out.  Returns 0
 * or a negative errno with err set. */
int kselect(struct ktrace *kt, const struct ktrace_config *cfg, const char *root, char *warn, size_t warnlen, char *err,
            size_t errlen);

#endif
