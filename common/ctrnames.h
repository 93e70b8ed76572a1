/* Performance counter names as `perf list` gives them, turned into the
 * perf_event_attr type and config that open them (record --counters): the
 * generic hardware events, the hardware cache events (L1-dcache-load-misses:
 * cache, operation, result), the software events and raw events (rNNNN,
 * hex).  C11 and libc only: used by the recorder and the agent. */
#ifndef LP_COMMON_CTRNAMES_H
#define LP_COMMON_CTRNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layerprof/format.h"

/* A name is at most this long (with its NUL). */
#define CTRNAME_MAX 64u

/* The set record --counters uses when given no list. */
#define CTRNAMES_DEFAULT "cycles,instructions,cache-misses,branch-misses,task-clock,page-faults,context-switches"

struct ctrname {
	uint32_t type;          /* PERF_TYPE_HARDWARE, _SOFTWARE, _HW_CACHE or _RAW */
	uint64_t config;        /* perf_event_attr.config */
	char name[CTRNAME_MAX]; /* as it was asked for */
};

/* Looks one name up (perf's spelling; cache event names in any case).
 * Returns 0, or -ENOENT when it is no event layerprof knows. */
int ctrname_lookup(const char *name, struct ctrname *out);

/* Parses a comma-separated list into out[0..*n) (at most LP_COUNTERS_MAX),
 * in its order.  Returns 0, or -EINVAL (an empty or unknown name, or two
 * names for the same event) or -E2BIG (more than LP_COUNTERS_MAX), with one
 * line in err saying which. */
int ctrnames_parse(const char *list, struct ctrname *out, uint32_t *n, char *err, size_t errlen);

/* Whether the event is counted by the kernel (software) rather than by
 * the CPU's performance monitoring unit. */
bool ctrname_is_software(const struct ctrname *c);

#endif
