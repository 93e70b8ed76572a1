/* The producer-consumer strategy's verdict: which side of a
 * producer/consumer pair the other waits for, read from a `record --sync`
 * trace with the sync analysis (analysis/syncstats.h), worded as `report
 * --sync` words it. */
#ifndef LP_TUNE_VERDICT_H
#define LP_TUNE_VERDICT_H

#include <stddef.h>

/* Reads the trace in dir: *slow is the first pair's side (0 producers, 1
 * consumers, -1 neither; the pair `report --sync` lists first: the larger
 * share of waiting) and line its sentence ("producer side (tid 5) is
 * slow: consumers wait 83% of the time, producers 2%"), or, without a
 * pair, -1 and "no producer/consumer pair ...".  0, or -errno with err
 * (the trace cannot be read: -ENODATA without sync events). */
int tune_verdict_read(const char *dir, int *slow, char *line, size_t linelen, char *err, size_t errlen);

#endif
