/* The inside of a power source, shared by power.c (opening by spec,
 * reading), powersys.c (the sysfs kinds), powerext.c (the external
 * meters: a command, a CSV log) and powermeter.c.  Not for other users:
 * power.h is the interface. */
#ifndef LP_ENERGY_POWERIMPL_H
#define LP_ENERGY_POWERIMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/energy/power.h"

/* Files one source sums ("rapl": every package domain). */
#define POWER_FILES_MAX 16u
/* What a sysfs file may hold, and a meter command's output and error
 * output kept (the rest is read and dropped). */
#define POWER_FILE_MAX 256u
#define POWER_CMD_OUTPUT_MAX 4096u
/* A meter command still running after this long is killed. */
#define POWER_CMD_TIMEOUT_MS 2000u
/* LAYERPROF_POWER_PIDS's value, at most (pids past it are left out). */
#define POWER_PIDS_MAX 1024u

/* How a sysfs file's number becomes watts or joules. */
enum power_unit {
	POWER_UNIT_UW = 1,   /* power in µW (hwmon powerK_input, power_supply power_now) */
	POWER_UNIT_UJ = 2,   /* a cumulative energy counter in µJ */
	POWER_UNIT_UA_UV = 3 /* current in µA, times the voltage in µV of path2 */
};

struct power_file {
	char path[PATH_MAX];
	char path2[PATH_MAX]; /* POWER_UNIT_UA_UV: the voltage */
	enum power_unit unit;
	uint64_t range_uj; /* POWER_UNIT_UJ: where it wraps; 0 unknown */
	uint64_t last_uj;  /* the previous reading */
};

struct power_source {
	enum power_kind kind;
	char name[POWER_NAME_MAX];
	/* sysfs kinds: the files read, summed */
	struct power_file files[POWER_FILES_MAX];
	uint32_t nfiles;
	bool energy;      /* the files are energy counters (all or none) */
	bool have_last;   /* an energy counter's previous reading is in last_uj */
	uint64_t last_ns; /* its time */
	/* POWER_CMD: the command, and its LAYERPROF_POWER_PIDS ("" none);
	 * pids is written by power_source_set_pids and read by the reading
	 * thread: both under lock */
	char *command;
	char pids[POWER_PIDS_MAX];
	pthread_mutex_t lock; /* for pids */
	/* POWER_CSV: the file, and the offset of CLOCK_REALTIME over
	 * CLOCK_MONOTONIC at open (ns) */
	char *csv;
	int64_t realtime_offset_ns;
};

/* powersys.c: opens a sysfs source by spec ("auto", a name power_list
 * gives or its first part) into ps.  Returns 0, or -errno with err set. */
int powersys_open(struct power_source *ps, const char *spec, char *err, size_t errlen);
/* One reading of a sysfs source: watts (see power_read). */
int powersys_read(struct power_source *ps, struct power_sample *s, char *err, size_t errlen);

/* powerext.c: "cmd:" and "csv:" (spec without the prefix). */
int powerext_open_cmd(struct power_source *ps, const char *command, char *err, size_t errlen);
int powerext_open_csv(struct power_source *ps, const char *file, char *err, size_t errlen);
/* Runs the command once: its watts. */
int powerext_read_cmd(struct power_source *ps, struct power_sample *s, char *err, size_t errlen);
/* The CSV lines within [t0_ns, t1_ns] (CLOCK_MONOTONIC), by time, appended
 * to *out (grown with realloc, at most POWER_SAMPLES_MAX, the rest
 * counted in *dropped); lines that are neither a sample nor the header
 * are counted in *bad.  Returns 0 or -errno with err set. */
int powerext_read_csv(const struct power_source *ps, uint64_t t0_ns, uint64_t t1_ns, struct power_sample **out,
                      uint32_t *n, uint32_t *cap, uint64_t *dropped, uint64_t *bad, char *err, size_t errlen);

/* A number followed by an optional unit (W, mW, uW, µW, kW) and blanks,
 * as watts: 0, or -EINVAL when it is not one (negative, NaN and infinite
 * values included). */
int power_parse_watts(const char *text, double *watts);

/* Appends s to *v (of *n, room for *cap), growing it by doubling up to
 * POWER_SAMPLES_MAX; past that counts it in *dropped.  Returns 0 or
 * -ENOMEM. */
int power_samples_push(struct power_sample **v, uint32_t *n, uint32_t *cap, uint64_t *dropped,
                       const struct power_sample *s);

#endif
