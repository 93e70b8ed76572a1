/* The synchronisation waits of the Chrome trace (export/chrome.c), for a
 * trace recorded with --sync: each wait (a lock, condition, semaphore,
 * barrier or join that had to wait) as an "X" slice on its thread's track,
 * category "sync", named "wait <operation> 0x<object>", with the function
 * that waited and the thread that let it go in args; and, when that thread
 * is known (trace/syncwake.h), a flow from its release ("s" on the
 * releaser's track at the release) to the end of the wait ("f", bp "e", on
 * the waiter's track), category "sync", name "release".  The waits are kept
 * to the end of the pass (the releaser's stream may come later in the
 * file), up to SYNCWAKE_EVENTS_MAX. */
#ifndef LP_EXPORT_CHROMESYNC_H
#define LP_EXPORT_CHROMESYNC_H

#include <stdint.h>

#include "host/lib/export/chromekernel.h"
#include "host/lib/trace/walk.h"

/* Flow ids of the sync arrows begin here, apart from the kernel's
 * wake-ups (numbered from 1). */
#define EXPORT_CHROME_SYNC_FLOW_BASE (UINT64_C(1) << 40)

struct chromesync;

/* The sync slices of walk w (which must outlive it), written through out
 * (copied; its begin is called with s NULL).  NULL when out of memory.
 * Free with chromesync_free. */
struct chromesync *chromesync_new(struct walk *w, const struct chromekernel_out *out);
/* Appends its consumer at the end of the list `list` (walk_chain); it
 * stays owned by cs, which must outlive the pass. */
void chromesync_chain(struct chromesync *cs, struct walk_ops *list);
/* After the pass: finds the releasers and writes the slices and flows.
 * Returns 0, or -ENOMEM (what could be written is). */
int chromesync_finish(struct chromesync *cs);
/* Sync events not kept (over SYNCWAKE_EVENTS_MAX): their waits are not
 * shown. */
uint64_t chromesync_dropped(const struct chromesync *cs);
/* NULL is fine. */
void chromesync_free(struct chromesync *cs);

#endif
