/* Text and JSON views of a heap state (heap.h): sites and functions with
 * their live objects, peaks and growth; illegal releases and overlaps with
 * their stacks; processes, unfreed blocks at exit, folded blocks and what
 * the trace lost.  Shared by `report --memory` and live views. */
#ifndef LP_HEAPVIEW_H
#define LP_HEAPVIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

struct heapview_opts {
	bool at_peak;       /* sort and show by the state at the global peak */
	uint64_t origin_ns; /* text times are shown from here */
	uint64_t state_ns;  /* the moment the state describes (0: the end) */
};

/* One frame of a stack as shown: "name+0xoff", its function and source
 * line (file NULL when unknown); for a return address, the line is the
 * call's. */
struct heapview_frame {
	uint64_t addr;
	char name[512];
	const char *function; /* NULL when unknown; owned by the symbolizer */
	const char *file;
	unsigned line;
};

void heapview_frame(struct walk *w, uint32_t image, uint64_t addr, struct heapview_frame *out);
/* Writes a stack as a JSON array of frames (address, name, function,
 * file, line) under key. */
void heapview_json_stack(struct json *j, const char *key, struct walk *w, const struct heap *h, uint32_t stack);

/* The site indexes worth showing (any allocation, failure or live block),
 * sorted by live bytes (at the peak with at_peak), then live objects,
 * allocations and key.  Returns a malloc'd array (caller frees) of *n
 * entries, or NULL when memory runs out. */
uint32_t *heapview_sorted_sites(const struct heap *h, bool at_peak, uint32_t *n);

/* The same for functions (heap.fns). */
uint32_t *heapview_sorted_fns(const struct heap *h, bool at_peak, uint32_t *n);
/* Illegal releases of every kind. */
uint64_t heapview_illegal_total(const struct heap *h);
/* A growth rate for people: "+1.5 KiB/s". */
const char *heapview_rate(double bps, char *buf, size_t size);

/* Live bytes over time of c (NULL: the whole heap, every site summed) in
 * the processes still running (and the last one to exit), from the heap's
 * growth samples (heap.h, HEAP_SERIES_LEN of them at most, one at the end
 * of each sampling interval; the last one at the latest operation), merged
 * into at most `points` points: each the value at the end of its merged
 * intervals.  Writes the points' trace times (ns, the
 * trace's clock) to t_ns and values to bytes (room for
 * min(points, HEAP_SERIES_LEN) each) and returns how many; 0 without
 * operations.  The heap must be settled (heap_settle). */
uint32_t heapview_series(const struct heap *h, const struct heap_counts *c, uint32_t points, uint64_t *t_ns,
                         uint64_t *bytes);

/* The heap must be settled (heap_settle).  feed may be NULL. */
void heapview_text(FILE *f, struct walk *w, const struct heap *h, const struct heapfeed *feed,
                   const struct heapview_opts *o);
void heapview_json(struct json *j, struct walk *w, const struct heap *h, const struct heapfeed *feed,
                   const struct heapview_opts *o);

#endif
