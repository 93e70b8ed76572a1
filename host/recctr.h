/* record's performance counters (--counters[=LIST]): the events asked
 * for, probed on the recorder itself before anything starts (which the
 * kernel and CPU refuse, and why), what the program's runtime is told
 * (LAYERPROF_COUNTERS), and the program's totals per CPU and in all,
 * counted from outside (perf_event_open on the program, one event per CPU
 * and counter, inherited by its threads and children) and read once it
 * has been reaped. */
#ifndef LP_HOST_RECCTR_H
#define LP_HOST_RECCTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/ctrevent.h"
#include "common/ctrnames.h"

/* CPUs whose totals are counted, at most (the others count in none). */
#define RECCTR_CPUS_MAX 256u

struct recctr {
	bool on; /* --counters */
	/* set before recctr_probe when the program's functions are traced
	 * from outside its threads (the uprobe and ptrace backends): no gate
	 * reads the counters (how "none") */
	bool no_gates;
	const char *list; /* its LIST; NULL: CTRNAMES_DEFAULT */
	struct ctrname asked[LP_COUNTERS_MAX];
	uint32_t nasked;
	/* after recctr_probe: the events recorded, in value order */
	struct ctrname set[LP_COUNTERS_MAX];
	uint32_t n;
	bool user;                                 /* only user space may be counted (perf_event_paranoid) */
	const char *how;                           /* how the runtime reads them at the gates: rdpmc, read, none */
	char names[LP_COUNTERS_MAX * CTRNAME_MAX]; /* META counters= */
	char unavailable[2048];                    /* META counters.unavailable= ("" none) */
	bool hw_only_missing;                      /* only hardware events are unavailable */
	char env[512];                             /* LAYERPROF_COUNTERS's value */
	/* the totals: fd[cpu][i], opened on the program */
	int ncpus;
	int cpus[RECCTR_CPUS_MAX];
	int (*fd)[LP_COUNTERS_MAX];
	bool from_exec; /* opened while the program waited before its exec */
	int paranoid;   /* /proc/sys/kernel/perf_event_paranoid, or -99 unknown */
};

/* --counters[=LIST]: the names (see common/ctrnames.h).  0, or -EINVAL /
 * -E2BIG with one line in err (a usage error). */
int recctr_option(struct recctr *rc, const char *list, char *err, size_t errlen);
/* Opens each event on the calling process to learn which this kernel and
 * CPU count, whether only user space may be counted, and how the runtime
 * will read them; fills set, names, unavailable, env.  Returns 0 when at
 * least one is available, or -ENOENT (none; err says why, event by
 * event). */
int recctr_probe(struct recctr *rc, char *err, size_t errlen);
/* Opens the totals on process pid: held (it waits before its exec) counts
 * from its exec on, else from now.  Returns 0 or -errno with err set (the
 * recording goes on without totals). */
int recctr_open_totals(struct recctr *rc, pid_t pid, bool held, char *err, size_t errlen);
/* The launch_cmd.held hook: recctr_open_totals(ctx, pid, true). */
int recctr_held(void *ctx, pid_t pid);
/* Reads the totals (once the program has been reaped): one LP_CTR_CPU
 * event per CPU, then LP_CTR_PROCESS, into ev (room for ncpus + 1).
 * Returns how many, 0 when the totals were not opened. */
uint32_t recctr_read_totals(struct recctr *rc, struct ctrevent *ev);
/* Closes what is open.  Accepts a recctr never probed. */
void recctr_release(struct recctr *rc);

#endif
