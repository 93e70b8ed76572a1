/* Where `layerprof serve` keeps the index and the heap cache of a trace:
 * in the trace directory when it is the user's own and the user may write
 * to it, else in the user's private cache directory
 * ($XDG_CACHE_HOME/layerprof/serve, or ~/.cache/layerprof/serve, mode
 * 0700), under a name made of the trace directory's device and inode.  So
 * a trace of another user's is served without writing into it, and
 * nothing is read or written through a link planted beside the trace.
 * Layout: docs/serve.md, "The index file". */
#ifndef LP_SERVE_STORE_H
#define LP_SERVE_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define SERVESTORE_NAME_MAX 128u /* a cache file's name */

struct servestore {
	int dirfd;                                     /* the directory holding the file; -1: none */
	char name[SERVESTORE_NAME_MAX];                /* the file's name in it */
	char path[PATH_MAX + SERVESTORE_NAME_MAX + 2]; /* the whole path, for messages */
	bool in_trace;                                 /* the trace directory itself */
};

/* Finds where `file` (SERVEINDEX_FILE, SERVEHEAP_FILE) of trace `dir` is
 * kept, making the cache directory when that is the place.  Returns 0 or
 * -errno (no place: neither the trace directory nor a cache directory of
 * ours).  Release with servestore_release. */
int servestore_open(struct servestore *st, const char *dir, const char *file);
void servestore_release(struct servestore *st);
/* Opens the file to read, never through a link: a descriptor, -ENOENT,
 * -EBADMSG (not a regular file of ours) or another -errno. */
int servestore_read(const struct servestore *st);

#endif
