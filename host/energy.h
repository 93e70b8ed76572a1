/* layerprof energy: one command, three subcommands (energy-sources.c,
 * energy-train.c, energy-check.c), dispatched by builtin-energy.c, and
 * what train and check share: finding layerprof-work, the events a
 * machine counts, option values.  Messages go to stderr as "layerprof
 * energy: ..."; the subcommands return the exit code (host/builtin.h). */
#ifndef LP_HOST_ENERGY_H
#define LP_HOST_ENERGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/energy/emodel.h"

/* The command of the table in layerprof.c: argv[0] is "energy". */
int cmd_energy(int argc, char **argv);
/* The subcommands: argv[0] is the subcommand's name. */
int energy_sources_cmd(int argc, char **argv);
int energy_train_cmd(int argc, char **argv);
int energy_check_cmd(int argc, char **argv);

/* The path of layerprof-work in $LAYERPROF_WORK overrides where it is
 * looked for (a cross-built one, or one in another tree). */
#define ENERGY_WORK_ENV "LAYERPROF_WORK"

/* Finds layerprof-work: $LAYERPROF_WORK, else beside the running
 * layerprof (installed: <prefix>/bin), else in the build tree
 * (build/workload beside build/host).  Writes its path into out (PATH_MAX
 * bytes).  Returns 0 or -errno (the message is the caller's). */
int energy_work_path(char *out);

/* Events from a comma-separated list, at most. */
#define ENERGY_EVENTS_MAX EMODEL_TERMS_MAX

/* The events of list (any number, ctrnames' spelling) this machine
 * counts, probed on this process in groups of at most LP_COUNTERS_MAX, in
 * the list's order, into names[0..*n); the others with their reasons in
 * unavailable ("" none).  Returns 0 (even when none can be counted: *n is
 * then 0), or -EINVAL / -E2BIG with err (an unknown or repeated name, more
 * than ENERGY_EVENTS_MAX: a usage error). */
int energy_probe(const char *list, char (*names)[EMODEL_NAME_MAX], uint32_t *n, char *unavailable,
                 size_t unavailable_size, char *err, size_t errlen);

/* Option values: 0, or -EINVAL after printing "layerprof energy: invalid
 * OPT 'ARG': ..." on stderr. */
int energy_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out);
int energy_parse_u64(const char *opt, const char *arg, uint64_t *out);
int energy_parse_f64(const char *opt, const char *arg, double min, double max, double *out);

#endif
