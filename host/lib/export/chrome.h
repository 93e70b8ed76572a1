/* Chrome trace event JSON (the format chrome://tracing and the Perfetto UI
 * load) from a trace, written as the trace is read: per thread "B"/"E"
 * events for function calls, "X" events for system calls (category
 * "syscall", decoded arguments and result in args), instant events for
 * lost events, and thread and process names as "M" metadata events; with
 * kernel events the kernel tracks (chromekernel.h), with sync events the
 * waits and the arrows from the threads that released them
 * (chromesync.h).
 * Memory stays bounded by threads, stack depth and distinct functions, not
 * by events; the streams of a thread that exec'd go through temporary files
 * (tmpfile(3)) to keep each thread's events in time order. */
#ifndef LP_EXPORT_CHROME_H
#define LP_EXPORT_CHROME_H

#include <stdint.h>
#include <stdio.h>

#include "host/lib/trace/walk.h"
#include "host/lib/util/error.h"

/* Distinct function names whose JSON form is kept for reuse; names past
 * that are escaped at each use. */
#define EXPORT_CHROME_NAMES_MAX (1u << 20)
/* Temporary files held at once for later images of a thread (exec); past
 * that their events go straight to the output. */
#define EXPORT_CHROME_TMP_MAX 512u

/* Reads the trace of w (opened, not yet walked) and writes the document to
 * f.  Times ("ts", "dur") are in microseconds with the nanoseconds kept as
 * three decimals, counted from the trace's first event (otherData.
 * time_zero_ns holds that event's CLOCK_MONOTONIC time).  A call still open
 * when its thread's events end is closed at the thread's last event time,
 * with args.unfinished; frames inherited from the parent process at fork
 * have args.inherited.  Returns 0, -ENOMEM, or -EIO when f reports a write
 * error; the trace's own damage is in w->r as after walk_run.  When no
 * temporary file can be had, says so to warn (may be NULL) and goes on. */
int export_chrome(struct walk *w, FILE *f, const struct lp_warner *warn);

#endif
