/* record's dynamic tracer (--dynamic): its options, the probes opened on
 * the program while it is held before its exec, and what the summary says
 * of them. */
#ifndef LP_HOST_RECDYN_H
#define LP_HOST_RECDYN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/drain.h"
#include "dyntrace/bptrace.h"
#include "dyntrace/dpatch.h"
#include "dyntrace/uprobes.h"
#include "systrace/sysdrain.h"

enum recdyn_backend {
	RECDYN_AUTO = 0, /* patch where this build can, else uprobe */
	RECDYN_PATCH,
	RECDYN_UPROBE,
	RECDYN_PTRACE, /* breakpoints; never chosen by auto */
};

struct recdyn {
	bool on;        /* --dynamic or --libcalls */
	bool functions; /* --dynamic: the program's functions */
	enum recdyn_backend backend;
	char *patterns; /* --dynamic=LIST, split in place into cfg.patterns */
	char *probes;   /* --probe LIST, split in place into cfg.probes */
	struct uprobes_config cfg;
	struct uprobes *up;
	struct bptrace *bp; /* the ptrace backend */
	struct dpatch *dp;  /* the patch backend's plan: the others are NULL */
	unsigned nplans;    /* plans in the session */
	uint32_t answered;  /* requests for plans answered (drain_plan_wants) */
	char err[600];      /* why the probes could not be opened on the program */
};

/* --dynamic[=LIST] and --backend=NAME; returns 0, or -EINVAL with one
 * line in err (a usage error). */
int recdyn_option(struct recdyn *rd, bool backend, const char *arg, char *err, size_t errlen);
/* --libcalls: every call through the program's PLT (patch backend). */
void recdyn_libcalls(struct recdyn *rd);
/* --probe LIST: instructions of the program (FUNCTION+OFFSET,
 * comma-separated) probed (patch backend).  0, or -EINVAL with one line
 * in err. */
int recdyn_probes(struct recdyn *rd, const char *list, char *err, size_t errlen);
/* Once every option is read: 0, or -EINVAL with one line in err. */
int recdyn_options_done(struct recdyn *rd, char *err, size_t errlen);
/* The program's functions, once its file is known; nothing runs yet.
 * Returns 0 or -errno with err set. */
int recdyn_open(struct recdyn *rd, const char *prog, struct sysdrain *feed, char *err, size_t errlen);
/* True once recdyn_open chose in-process patching: the calls come
 * through the runtime's rings, and the recorder's filters apply. */
bool recdyn_patching(const struct recdyn *rd);
/* The patch plan into the session directory, before the program starts
 * (nothing to do for the uprobe backend).  0 or -errno with err set. */
int recdyn_session(struct recdyn *rd, struct drain *d, const char *session, char *err, size_t errlen);
/* The probes on the held child (launch_cmd.held): 0, or -errno with the
 * reason in rd->err. */
int recdyn_held(void *ctx, pid_t pid);
/* The same for the syscall tracer's spawn (systrace_config.held). */
int recdyn_held_sys(void *ctx, pid_t pid, char *err, size_t errlen);
/* True with the ptrace backend: its tracer thread reaps the program, so
 * the caller must not wait for any child; recdyn_exited gives the
 * program's status. */
bool recdyn_reaps(const struct recdyn *rd);
bool recdyn_exited(struct recdyn *rd, int *status);
/* The name of the backend recdyn_open chose ("" before). */
const char *recdyn_backend_name(const struct recdyn *rd);
/* The probes' records; and the plans processes ask for (patch backend: an
 * executable the program exec'd), into the session of drain d. */
void recdyn_poll(struct recdyn *rd, struct drain *d, const char *session);
/* The last records, before the drain ends its streams (the ptrace
 * backend detaches from what still runs, its code restored). */
void recdyn_finish(struct recdyn *rd);
/* Warnings (functions not traced, records lost) and, with verbose, a
 * line of figures; returns the records lost. */
unsigned long long recdyn_summary(const struct recdyn *rd, bool quiet, bool verbose);
void recdyn_free(struct recdyn *rd);

#endif
