/* The source filters of `layerprof live`: the patterns the user gave
 * (-F, -N, --depth, --min-time), resolved to function addresses over the
 * code the stream has shown so far and written as a CONTROL payload that
 * the agent hands to the runtime (docs/protocol.md, "Source filters").
 * Not thread-safe: the live session owns it. */
#ifndef LP_LIVEFILTER_H
#define LP_LIVEFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/trace/walk.h"
#include "host/lib/util/options.h"

#define LIVEFILTER_ADDRS_MAX 4096 /* addresses per only= or exclude= list */

struct livefilter {
	struct filter_opts opts; /* its pattern strings point into `words` or argv */
	char *words;             /* owned: the strings opts points into (NULL: argv's) */
	char *only, *ex;         /* owned: the address lists last sent (NULL: none) */
	uint64_t maps_seen;      /* symbolizer_map_count when last resolved */
	bool active;             /* some filter is set */
};

/* No filters.  Release with livefilter_release. */
void livefilter_init(struct livefilter *f);
void livefilter_release(struct livefilter *f);

/* Parses the options of a `filter` command (argv[0] is "filter") into *out,
 * whose strings then point into argv.  Returns 0, or -EINVAL with err set. */
int livefilter_parse(int argc, char **argv, struct filter_opts *out, char *err, size_t errlen);

/* Makes opts the filters in force; words (may be NULL) holds its strings
 * and is now owned by f.  The lists last sent are forgotten. */
void livefilter_set(struct livefilter *f, const struct filter_opts *opts, char *words);

/* True when new code has become known since the patterns were last
 * resolved, so that they may now match more functions. */
bool livefilter_stale(const struct livefilter *f, const struct walk *w);

/* The CONTROL payload for the filters in force, resolved over the code w
 * knows: "filters=clear" when none are set.  With patterns_only, returns 1
 * (and no payload) when the patterns match what they matched before.
 * Returns 0 with *msg (malloc'd, the caller frees) and *len set; the lists
 * are from then on the ones in force.  -E2BIG when the patterns match more
 * than LIVEFILTER_ADDRS_MAX functions, -ENOMEM. */
int livefilter_control(struct livefilter *f, struct walk *w, bool patterns_only, char **msg, size_t *len);

/* The filters as options ("-F 'tick' --depth 2"), "" when none. */
void livefilter_describe(const struct livefilter *f, char *buf, size_t size);

#endif
