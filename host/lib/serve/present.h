/* Whether a trace has an optional layer that the model's index does not
 * keep (counters), for a model read from its index: from the META
 * chunks before the trace's first events, where the recorder names what
 * it recorded.  Reads no events. */
#ifndef LP_SERVE_PRESENT_H
#define LP_SERVE_PRESENT_H

#include <stdbool.h>

/* True when a META chunk of the trace in dir, before its first EVENTS
 * chunk, has key with a value that is not empty ("counters");
 * false also when the trace cannot be read. */
bool servepresent_meta(const char *dir, const char *key);

#endif
