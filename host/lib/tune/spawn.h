/* Timing a configuration's run for `layerprof tune --objective time`: the
 * commands started together (posix_spawn), their output kept away from
 * tune's own, waited for to the last, killed at a timeout.  The energy
 * objectives measure through runmeasure instead (host/builtin-tune.c). */
#ifndef LP_TUNE_SPAWN_H
#define LP_TUNE_SPAWN_H

#include <stddef.h>
#include <stdint.h>

#include "host/lib/tune/tune.h"

/* Runs argvs[0..n) at once (each argv[0] found in PATH; stdin from
 * /dev/null, stdout to /dev/null, stderr kept aside for the first line of
 * a failure) and fills out: seconds from before the first start to the
 * last end, failed and why when one exited nonzero, was killed by a
 * signal, or was still running after timeout_s (> 0; all are then
 * killed).  Returns 0, or -errno with err when a program could not be
 * started (the others are killed and reaped).  SIGCHLD is at its default
 * action and blocked while it waits (its pending ones taken): call it from
 * the main thread. */
int tune_spawn_run(char *const *const *argvs, uint32_t n, double timeout_s, struct tune_sample *out, char *err,
                   size_t errlen);

#endif
