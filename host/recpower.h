/* record's power samples (--power[=SPEC], --power-interval MS): the
 * source opened before anything starts, a meter sampling it from just
 * before the program starts to its end, and its samples written into the
 * trace as LP_CHUNK_POWER chunks while the program runs (so that a killed
 * recorder keeps what was written) and at the end, with the META and END
 * keys that go with them. */
#ifndef LP_HOST_RECPOWER_H
#define LP_HOST_RECPOWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/lib/energy/power.h"

struct tracefile;

/* New samples go into the trace at least this often (and whenever a
 * chunk's worth has come). */
#define RECPOWER_FLUSH_NS 2000000000ull
/* --power-interval's bounds, in ms. */
#define RECPOWER_INTERVAL_MIN 1u
#define RECPOWER_INTERVAL_MAX 3600000u

struct recpower {
	bool on;          /* --power */
	const char *spec; /* its SPEC (borrowed from argv); NULL: "auto" */
	unsigned interval_ms;
	bool interval_set; /* --power-interval given */
	struct power_source *ps;
	struct power_meter *m;
	char sources[POWER_NAME_MAX]; /* META power.sources= */
	uint32_t written;             /* samples in the trace so far */
	uint64_t last_flush_ns;
	bool stopped; /* result is set */
	struct power_result result;
	int stop_error; /* power_meter_stop's, 0: none */
};

/* --power[=SPEC] (arg NULL: auto). */
void recpower_option(struct recpower *rp, const char *arg);
/* --power-interval MS: 0, or -EINVAL with one line in err (a usage
 * error). */
int recpower_interval_option(struct recpower *rp, const char *arg, char *err, size_t errlen);
/* After the options: -EINVAL with err when --power-interval came without
 * --power. */
int recpower_options_done(const struct recpower *rp, char *err, size_t errlen);
/* Opens the source (before anything changes on disk).  0, or -errno with
 * err set (no such source: the recording does not start).  Nothing to do
 * without --power. */
int recpower_open(struct recpower *rp, char *err, size_t errlen);
/* META's power.sources value ("" without --power); valid while rp lives. */
const char *recpower_meta_sources(const struct recpower *rp);
/* Starts the meter just before the program starts: 0, or -errno with err
 * set. */
int recpower_start(struct recpower *rp, char *err, size_t errlen);
/* The program's pid, for a meter command (LAYERPROF_POWER_PIDS). */
void recpower_set_pid(struct recpower *rp, pid_t pid);
/* Writes the samples not yet in the trace when a chunk's worth has come or
 * RECPOWER_FLUSH_NS has passed since the last time (all: whatever there
 * is).  Returns 0 or tracefile_write's error (the recorder says it). */
int recpower_flush(struct recpower *rp, struct tracefile *tf, bool all);
/* The program has ended: the meter takes its last reading and stops; the
 * rest of its samples go into the trace.  Returns 0, or -errno with err
 * set (no reading at all: the trace has no power samples), or
 * tracefile_write's error with err set. */
int recpower_stop(struct recpower *rp, struct tracefile *tf, char *err, size_t errlen);
/* recpower_stop for the recorder: its warnings (no reading, readings
 * failed, samples left out) and, on a terminal without quiet, a summary
 * line, on stderr. */
void recpower_finish(struct recpower *rp, struct tracefile *tf, bool quiet, bool tty);
/* The room recpower_end needs. */
#define RECPOWER_END_MAX 2048u
/* The END chunk's text with power.samples= and power.failed= added: end
 * (of *len bytes) copied into buf with them, *len updated; end itself when
 * there is nothing to add or no room. */
const char *recpower_end(const struct recpower *rp, const char *end, size_t *len, char *buf, size_t size);
/* Frees the meter and closes the source.  Accepts one never opened. */
void recpower_release(struct recpower *rp);

#endif
