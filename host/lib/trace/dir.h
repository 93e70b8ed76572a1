/* A trace directory made anew for `record` and `live --save`: the previous
 * trace kept as DIR.old, and the files layerprof itself writes into a
 * trace directory (the only ones it moves or deletes there). */
#ifndef LP_TRACEDIR_H
#define LP_TRACEDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "common/sessiondir.h"

/* Written by record while it runs, removed when it ends: what `layerprof
 * recover` needs to finish the trace of a recorder that died (see
 * recording.h). */
#define TRACEDIR_RECORDING SESSIONDIR_TRACE_NOTE
/* The heap snapshot `live --save` adds (live/save.h). */
#define TRACEDIR_SNAPSHOT "heap.snapshot"
/* serve's index and heap cache (serve/index.h, serve/heap.h). */
#define TRACEDIR_SERVE_INDEX "serve-index"
#define TRACEDIR_SERVE_HEAP "serve-heap"

/* True when `name` is a file layerprof writes into a trace directory: the
 * data, the recorder's note, serve's index and heap cache, and the
 * temporary files serve leaves behind when it is killed while writing
 * those. */
bool tracedir_own_name(const char *name);

/* Makes `dir` an empty trace directory of the caller and returns a
 * descriptor of it (O_DIRECTORY, close-on-exec; the caller closes it and
 * creates its files with openat, O_EXCL | O_NOFOLLOW).
 *   - missing: created (mode 0755);
 *   - an empty directory: replaced by a new one;
 *   - a directory holding only files layerprof writes: moved to DIR.old,
 *     after an earlier DIR.old (holding only such files too) is deleted;
 *   - anything else (a symbolic link, not a directory, another user's
 *     directory, a directory with a file of another kind or name, a
 *     DIR.old that is one of those) is refused before anything is
 *     changed, and nothing is deleted.
 * Links are never followed in DIR or DIR.old (the directories above them
 * are the caller's choice).  Returns the descriptor, or -errno with one
 * line for people in err: -EEXIST (refused), -ELOOP (a link), -EPERM
 * (another user's), or the
 * failing call's error. */
int tracedir_create(const char *dir, char *err, size_t errlen);

#endif
