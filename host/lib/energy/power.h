/* Power and energy sources: what a machine has (RAPL through powercap,
 * hwmon power and energy sensors, a battery's fuel gauge), probed at run
 * time, and external meters given as a command or a timestamped CSV file.
 * Used by `energy sources`, `record --power`, `energy train` and `check`,
 * and `tune --objective energy --power`.  Readings are timestamped on the
 * trace clock (CLOCK_MONOTONIC). */
#ifndef LP_ENERGY_POWER_H
#define LP_ENERGY_POWER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum power_kind {
	POWER_RAPL = 1,    /* /sys/class/powercap/intel-rapl:N[:M]/energy_uj (also AMD's) */
	POWER_HWMON = 2,   /* /sys/class/hwmon/hwmonN/powerK_input (µW) or energyK_input (µJ) */
	POWER_BATTERY = 3, /* /sys/class/power_supply/X (type Battery): power_now, else current_now x voltage_now */
	POWER_CMD = 4,     /* an external meter: a command run once per reading, printing watts */
	POWER_CSV = 5,     /* an external meter's log: "seconds,watts" lines, read after the run */
};

#define POWER_NAME_MAX 96
/* Sources power_list reports at most. */
#define POWER_SOURCES_MAX 64
/* Samples one meter keeps (more are counted in power_result.dropped). */
#define POWER_SAMPLES_MAX (1u << 20)
/* The sampling interval when none is given. */
#define POWER_INTERVAL_MS_DEFAULT 100u

/* One source the machine has. */
struct power_desc {
	enum power_kind kind;
	/* how the user names it: "rapl:package-0", "rapl:package-0:core",
	 * "hwmon:ina226:power1" (the chip's name file, then the sensor),
	 * "battery:BAT0" */
	char name[POWER_NAME_MAX];
	char label[POWER_NAME_MAX]; /* the sensor's label file, or "" */
	char path[PATH_MAX];        /* the file read */
	bool energy;                /* a cumulative energy counter (µJ), not a power reading */
	uint64_t range_uj;          /* where an energy counter wraps (max_energy_range_uj); 0 unknown */
	bool readable;              /* the file could be read by this user now */
};

/* The root of sysfs: $LAYERPROF_SYSFS when set and not empty (tests give
 * a made-up tree), else "/sys"; looked up at each call.  Borrowed: valid
 * until the environment changes. */
const char *power_sysfs_root(void);

/* Lists the machine's sources under sysfs (NULL: power_sysfs_root()):
 * RAPL domains, hwmon sensors, batteries, in that order.  Returns how
 * many were written to out (at most max), or -errno. */
int power_list(const char *sysfs, struct power_desc *out, size_t max);

struct power_source;

/* "rapl", "hwmon", "battery", "cmd", "csv". */
const char *power_kind_name(enum power_kind kind);

/* The message for a machine without a source (sysfs NULL:
 * power_sysfs_root()): "no power source on this machine (no RAPL domain
 * under /sys/class/powercap, no hwmon power or energy sensor, no
 * battery); give an external meter with --power cmd:COMMAND or
 * csv:FILE". */
void power_none_why(const char *sysfs, char *buf, size_t size);

/* Opens a source by spec: "auto" (the first readable of: RAPL's package
 * domains (summed when there are several, as "rapl"), the first hwmon
 * power or energy sensor, a battery), a name power_list gives, or its
 * first part (the first source whose name continues it with ':'; "rapl":
 * every package domain summed; "hwmon:ina226": the chip's first sensor),
 * "cmd:COMMAND" (run through /bin/sh -c once per reading, killed after
 * 2 s; its first line of output is watts, or a number followed by W, mW,
 * uW or kW; its environment has LAYERPROF_POWER_PIDS, see
 * power_source_set_pids), "csv:FILE" (lines "seconds,watts"; seconds on
 * CLOCK_REALTIME, as a meter's log has them, or CLOCK_MONOTONIC with a
 * first line "#clock=monotonic"; a header line is skipped; the file must
 * exist).  The sysfs kinds are looked for under power_sysfs_root().  NULL
 * with err set: no such source (power_none_why's text for "auto" on a
 * machine without one), unreadable, or a bad spec. */
struct power_source *power_open(const char *spec, char *err, size_t errlen);
/* The processes measured, for a meter command to look at (a script that
 * reads their /proc files): its environment gets
 * LAYERPROF_POWER_PIDS=PID,PID,... from its next run on (n 0: unset).
 * Thread-safe against a meter reading the source; other kinds ignore it. */
void power_source_set_pids(struct power_source *ps, const int *pids, size_t n);
/* Its name ("rapl:package-0", "cmd:meter --watts", "csv:log.csv"). */
const char *power_name(const struct power_source *ps);
/* true when power_read works (every kind but POWER_CSV). */
bool power_can_read(const struct power_source *ps);

struct power_sample {
	uint64_t ns;  /* CLOCK_MONOTONIC */
	double watts; /* instantaneous, or the mean since the previous reading of an energy counter */
};

/* One reading now (one thread at a time: a meter's, once it samples).
 * An energy counter's first reading gives 0 W (no interval yet) and
 * returns 1; later ones the mean power since the previous reading (wraps
 * handled with range_uj).  A command's reading is timed at the middle of
 * its run.  Returns 0, 1, or -errno with err set: a file that cannot be
 * read or holds no number, a command that failed (-EIO), printed no
 * number (-EINVAL, -ENODATA) or ran past 2 s (-ETIME), a CSV source
 * (-EOPNOTSUPP). */
int power_read(struct power_source *ps, struct power_sample *s, char *err, size_t errlen);
/* Accepts NULL. */
void power_close(struct power_source *ps);

/* Energy (J) of the samples s[0..n) (by time) over [t0_ns, t1_ns]: the
 * power between two samples taken as a straight line (trapezoids), before
 * the first and after the last held at their values.  -1 when n is 0. */
double power_integrate(const struct power_sample *s, uint32_t n, uint64_t t0_ns, uint64_t t1_ns);

/* A meter samples a source every interval on a thread of its own, from
 * power_meter_start to power_meter_stop (a CSV source is read at stop, for
 * the lines within the span). */
struct power_meter;

struct power_result {
	uint64_t t0_ns, t1_ns; /* the span */
	double joules; /* energy over the span: an energy counter's difference, else the samples integrated (trapezoids,
	                  the first and last held to the ends) */
	double mean_watts; /* joules / span */
	uint32_t nsamples;
	uint64_t failed;                    /* readings that failed */
	uint64_t dropped;                   /* samples over POWER_SAMPLES_MAX */
	const struct power_sample *samples; /* owned by the meter: valid until power_meter_free */
};

/* Takes the first reading (the span begins with it) and starts the
 * thread, which reads on a grid of absolute times on CLOCK_MONOTONIC, one
 * per interval; power_meter_stop takes the last.  interval_ms 0:
 * POWER_INTERVAL_MS_DEFAULT.  The source stays the caller's and must
 * outlive the meter.  NULL with err set (no memory, no thread; a failed
 * first reading only counts in power_result.failed). */
struct power_meter *power_meter_start(struct power_source *ps, unsigned interval_ms, char *err, size_t errlen);
/* While it samples (any thread): copies at most max of its samples, from
 * the from-th on, into out.  Returns how many (0: none new yet).  A
 * CSV source has none before power_meter_stop. */
uint32_t power_meter_copy(struct power_meter *m, uint32_t from, struct power_sample *out, uint32_t max);
/* Stops sampling and fills out.  -ENODATA with err when the span has no
 * usable reading (every reading failed; no CSV line in it). */
int power_meter_stop(struct power_meter *m, struct power_result *out, char *err, size_t errlen);
/* The message of the first reading that failed ("" none); valid until
 * power_meter_free.  After power_meter_stop. */
const char *power_meter_first_error(const struct power_meter *m);
/* Accepts NULL; stops a meter still sampling. */
void power_meter_free(struct power_meter *m);

#endif
