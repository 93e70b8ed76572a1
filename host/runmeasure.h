/* Running programs to measure them (energy train, energy check, tune):
 * each started as launch_spawn starts a traced program, but with nothing
 * of layerprof inside it; its events counted from outside (recctr's
 * totals: per CPU, inherited by its threads and children, from its exec
 * on) and a power source sampled over its run.  Several programs may run
 * at once (tune --corun): they start together, and the span ends when the
 * last one has ended. */
#ifndef LP_HOST_RUNMEASURE_H
#define LP_HOST_RUNMEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ctrnames.h"
#include "host/lib/energy/emodel.h"
#include "layerprof/format.h"

struct power_source;

/* Programs run at once, at most. */
#define RUNMEASURE_PROGS_MAX 8u

struct runmeasure_opts {
	/* perf event names to count (ctrnames' syntax, at most
	 * LP_COUNTERS_MAX); NULL or "": none.  Events the machine refuses are
	 * left out and named in runmeasure.unavailable. */
	const char *counters;
	struct power_source *power; /* sampled over the span; NULL: none */
	unsigned power_interval_ms; /* 0: POWER_INTERVAL_MS_DEFAULT */
	/* the programs' stdout and stderr go to /dev/null, their stdin comes
	 * from it (the caller's own stdout and stderr point there while the
	 * programs are forked and the meter takes its first reading: another
	 * thread's output then is lost) */
	bool quiet;
	double timeout_s; /* > 0: programs still running then are killed (SIGKILL) and timed_out set */
};

struct runmeasure {
	uint32_t nprogs;
	int status[RUNMEASURE_PROGS_MAX];       /* wait status of each */
	uint64_t wall_ns[RUNMEASURE_PROGS_MAX]; /* each one's start to its end */
	uint64_t span_ns;                       /* the first start to the last end */
	bool timed_out;
	/* the events counted, summed over the programs and CPUs */
	uint32_t n;
	char names[LP_COUNTERS_MAX][EMODEL_NAME_MAX];
	uint64_t counts[LP_COUNTERS_MAX];
	bool scaled;            /* a count was multiplexed and scaled */
	char unavailable[1024]; /* "cycles: not supported by this CPU or kernel; ..." or "" */
	/* with a power source: the span's energy */
	bool has_power;
	double joules, mean_watts;
	uint32_t nsamples;
	/* the meter's span (its first reading, taken just before the programs
	 * start, to its last, just after they end), over which joules and
	 * mean_watts were measured: rates of counts held against mean_watts
	 * divide by it */
	uint64_t power_span_ns;
};

/* Runs argvs[0..nprogs) (each argv[0] found in PATH, NULL-terminated) to
 * their end.  Returns 0 (whatever the programs' exit statuses: see
 * status), or -errno with err set: a program could not be started (the
 * others are killed and reaped), no requested event can be counted, the
 * power source gave no reading. */
int runmeasure_run(char *const *const *argvs, uint32_t nprogs, const struct runmeasure_opts *o, struct runmeasure *out,
                   char *err, size_t errlen);

#endif
