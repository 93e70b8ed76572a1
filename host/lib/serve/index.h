/* The index file of `layerprof serve`: everything the server answers from
 * (summary, flat profile, syscall statistics, call trees, timeline index
 * and grids, the kernel layer's documents and tracks, the sync tracks),
 * written next to the trace after the first pass, so that serving the
 * trace again takes milliseconds instead of a pass over every event.  It
 * is a cache: keyed to the data file's size, modification time and inode,
 * checked whole (CRC-32C) and bounded field by field when read; anything
 * amiss and the trace is read again.  Host byte order: it is not meant to
 * travel.  Layout: docs/serve.md, "The index file". */
#ifndef LP_SERVE_INDEX_H
#define LP_SERVE_INDEX_H

#include <stddef.h>

#include "host/lib/serve/model.h"
#include "host/lib/trace/dir.h"

#define SERVEINDEX_FILE TRACEDIR_SERVE_INDEX
/* 2: the kernel layer; 3: kernel leaves in the call trees; 4: other
 * processes' slices on the CPU tracks; 5: the sync tracks */
#define SERVEINDEX_VERSION 5u
#define SERVEINDEX_MAX (2ull << 30) /* bytes of an index read */

/* Writes the index of m (built by a pass over dir) as dir/serve-index,
 * through a temporary file renamed over it.  Returns 0, or -errno with a
 * message in err (a trace directory we may not write to, for one). */
int serveindex_write(struct servemodel *m, const char *dir, char *err, size_t errlen);

/* Fills m (initialised, empty) from dir/serve-index.  Returns 0; -ENOENT
 * when there is none; -ESTALE when it is of another data file or version;
 * -EBADMSG when it is damaged; -ENOMEM; err says which.  On failure m is
 * empty again. */
int serveindex_read(struct servemodel *m, const char *dir, char *err, size_t errlen);

#endif
