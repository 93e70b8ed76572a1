/* The heap view of `layerprof serve` (GET /api/heap, /api/heap/growth):
 * for a trace recorded with --memory, the heap state at the end of the
 * trace as `report --memory --format json` gives it (call sites and
 * functions with live objects and bytes, peaks, growth and its
 * confidence; illegal releases with their stacks; overlaps; processes and
 * what was unfreed at exit; folded blocks; losses), and the live bytes of
 * the whole heap and of each call site over time.  Built once when the
 * trace is loaded, by the same pass as report --memory, and kept beside
 * the trace in <trace>/serve-heap (a cache keyed like the serve index:
 * docs/serve.md), so that serving it again needs no pass.  Not
 * thread-safe: used under the server's lock. */
#ifndef LP_SERVE_HEAP_H
#define LP_SERVE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/trace/dir.h"
#include "host/lib/trace/walk.h"

#define SERVEHEAP_FILE TRACEDIR_SERVE_HEAP
#define SERVEHEAP_VERSION 1u
#define SERVEHEAP_MAX (1ull << 30)   /* bytes of a cache file read */
#define SERVEHEAP_SERIES_SITES 4096u /* call sites whose growth samples are kept (the largest) */

struct serve_query;

struct serveheap {
	bool has_heap;  /* the trace has heap operations */
	bool from_file; /* read from <trace>/serve-heap */
	char *doc;      /* GET /api/heap's document (owned); NULL without a heap */
	size_t doc_len;
	uint32_t npoints;     /* growth samples, the same times for every series */
	uint32_t nsites;      /* sites with samples: the first of /api/heap's `sites` */
	uint64_t *t_ns;       /* npoints sample times, from the trace's first event */
	uint64_t *all;        /* npoints: the whole heap's live bytes */
	uint64_t *site_bytes; /* nsites x npoints */
	uint64_t interval_ns; /* the sampling interval */
	char note[600];       /* what became of the cache, for people */
};

/* Builds the heap view of the trace in dir: from dir/serve-heap when it
 * is current and read_cache, else, when the trace was recorded with
 * --memory (its META) or model_w (the model's walk after its pass; may be
 * NULL) saw heap operations, by a pass over the trace, then written to
 * dir/serve-heap when write_cache.  A trace without heap operations leaves
 * sh empty (has_heap false).  Returns 0, or -ENOMEM / the trace reader's
 * codes with a message in err.  Release with serveheap_release, also
 * after a failure. */
int serveheap_load(struct serveheap *sh, const char *dir, const struct walk *model_w, bool read_cache, bool write_cache,
                   char *err, size_t errlen);
void serveheap_release(struct serveheap *sh);

struct livemem;
/* The heap view of a live session's heap state m (settled: livemem_settle
 * or livemem_finish) at this moment: the same document as for a trace
 * (trace: the directory that keeps the session, or NULL), with `live`,
 * `state_ns`, `horizon_ns`, `partial`, `covers_from_ns`, `agent_memory`
 * and `heap_operations` added, and the heap's own growth samples (bounded:
 * HEAP_SERIES_LEN per site, intervals doubling as the session goes on).
 * Returns 0 or -ENOMEM; release with serveheap_release. */
int serveheap_from_live(struct serveheap *sh, struct livemem *m, const char *trace);

/* Answers GET /api/<what> for what "heap" and "heap/growth" (reason:
 * why there is no heap view, when sh has none) into out.  Returns the
 * HTTP status as serveapi_get. */
int serveheap_answer(const struct serveheap *sh, const char *what, const char *reason, const struct serve_query *q,
                     FILE *out);

#endif
