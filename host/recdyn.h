/* record's dynamic tracer (--dynamic): its options, the probes opened on
 * the program while it is held before its exec, and what the summary says
 * of them. */
#ifndef LP_HOST_RECDYN_H
#define LP_HOST_RECDYN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "dyntrace/uprobes.h"
#include "systrace/sysdrain.h"

struct recdyn {
	bool on;
	char *patterns; /* --dynamic=LIST, split in place into cfg.patterns */
	struct uprobes_config cfg;
	struct uprobes *up;
	char err[600]; /* why the probes could not be opened on the program */
};

/* --dynamic[=LIST] and --backend=NAME; returns 0, or -EINVAL with one
 * line in err (a usage error). */
int recdyn_option(struct recdyn *rd, bool backend, const char *arg, char *err, size_t errlen);
/* The program's functions, once its file is known; nothing runs yet.
 * Returns 0 or -errno with err set. */
int recdyn_open(struct recdyn *rd, const char *prog, struct sysdrain *feed, char *err, size_t errlen);
/* The probes on the held child (launch_cmd.held): 0, or -errno with the
 * reason in rd->err. */
int recdyn_held(void *ctx, pid_t pid);
/* The same for the syscall tracer's spawn (systrace_config.held). */
int recdyn_held_sys(void *ctx, pid_t pid, char *err, size_t errlen);
void recdyn_poll(struct recdyn *rd);
/* The last records, before the drain ends its streams. */
void recdyn_finish(struct recdyn *rd);
/* Warnings (functions not traced, records lost) and, with verbose, a
 * line of figures; returns the records lost. */
unsigned long long recdyn_summary(const struct recdyn *rd, bool quiet, bool verbose);
void recdyn_free(struct recdyn *rd);

#endif
