/* Heap snapshot files (docs/snapshot.md): the heap state at one moment,
 * per call site its live objects and bytes, totals and a stack, in a small
 * versioned JSON document that needs no trace to be read.  Written from a
 * heap state (a trace now; a live session later), read by memdiff. */
#ifndef LP_SNAPSHOT_H
#define LP_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/heap/heap.h"
#include "host/lib/trace/walk.h"

#define SNAPSHOT_VERSION 1u
#define SNAPSHOT_SITES_MAX (1u << 20)

/* Where and when the state was taken, for the file's header. */
struct snapshot_meta {
	const char *source;  /* "trace" or "live" */
	const char *trace;   /* trace directory or target address; may be NULL */
	const char *command; /* the traced command line; may be NULL */
	uint64_t time_ns;    /* the moment (CLOCK_MONOTONIC of the target) */
	uint64_t origin_ns;  /* the recording's start */
	/* the stream began after the program did (attach, or tracing turned
	 * on later) at since_ns: blocks allocated before are unknown */
	bool partial;
	uint64_t since_ns;
};

/* Writes the snapshot of h (settled) to f, naming frames with w's
 * symbolizer.  Returns 0 or -EIO. */
int snapshot_write(FILE *f, struct walk *w, const struct heap *h, const struct snapshot_meta *m);

struct snapshot_site {
	char *key; /* the call site: the identity of a site across snapshots */
	char *function;
	char *file; /* NULL when unknown */
	unsigned line;
	uint64_t live_objects, live_bytes;
	uint64_t allocs, frees, bytes_allocated, peak_bytes;
};

struct snapshot {
	unsigned version;
	char *source, *trace;
	uint64_t time_ns, origin_ns;
	bool partial;            /* covers only blocks allocated since covers_from_ns */
	uint64_t covers_from_ns; /* partial: when the stream began; else origin_ns */
	uint64_t live_objects, live_bytes, allocs, frees, bytes_allocated, peak_bytes;
	uint32_t nprocesses;
	struct snapshot_site *sites;
	size_t nsites;
};

/* Reads a snapshot file.  Returns 0, or -errno with a message in err:
 * -ENOENT/-EIO (cannot read), -EBADMSG (not a snapshot, or damaged),
 * -EPROTONOSUPPORT (another version), -ENOMEM.  Release with
 * snapshot_release (also after a failure). */
int snapshot_read(const char *path, struct snapshot *out, char *err, size_t errlen);
void snapshot_release(struct snapshot *s);

/* One site's change between two snapshots (a site missing from one has
 * nothing live there). */
struct snapshot_change {
	const struct snapshot_site *site; /* in the later snapshot, else the earlier */
	uint64_t objects_before, bytes_before, objects_after, bytes_after;
	int64_t objects_change, bytes_change, allocs_change;
};

/* The change of every site from a to b, by bytes change (largest growth
 * first), then objects change, then key.  *out (caller frees; points into
 * a and b) has *n entries.  Returns 0 or -ENOMEM. */
int snapshot_diff(const struct snapshot *a, const struct snapshot *b, struct snapshot_change **out, size_t *n);

#endif
