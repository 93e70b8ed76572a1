/* Folded stacks ("main;writer;write 123456"), one line per distinct call
 * path, as flamegraph.pl and speedscope read them.  The value is the path's
 * self time in ns, or its calls.  System calls are leaf frames
 * "[sys] name", sync waits (record --sync) "[wait] mutex-lock 0x..." with
 * the time waited.  Built from the per-thread call trees (memory grows with
 * distinct paths, not events) and merged by name over threads. */
#ifndef LP_EXPORT_FOLDED_H
#define LP_EXPORT_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include "host/lib/trace/walk.h"

/* Bound on distinct merged paths and on one line's length. */
#define EXPORT_FOLDED_NODES_MAX (1u << 26)
#define EXPORT_FOLDED_LINE_MAX (64u << 20)
/* Frames of a path: the output of a recursion n deep grows with n^2 (one
 * line per level, each as long as its level), so a call deeper than this
 * counts for its ancestor at this depth, as a last frame "[deeper]".  The
 * values still add up to the whole. */
#define EXPORT_FOLDED_DEPTH_MAX 1024u
#define EXPORT_FOLDED_DEEPER "[deeper]"

enum export_folded_flags {
	EXPORT_FOLDED_CALLS = 1u << 0,      /* values are calls, not self time in ns */
	EXPORT_FOLDED_PER_THREAD = 1u << 1, /* each thread apart: first frame "comm-pid/tid" */
};

/* Reads the trace of w (opened, not yet walked) and writes the lines to f:
 * paths in order of first appearance, lines with value 0 left out.  A ';'
 * inside a name becomes ':' (see escape_folded_frame).  *deeper (when not
 * NULL) gets the number of call paths deeper than EXPORT_FOLDED_DEPTH_MAX
 * that were merged into "[deeper]" frames.  Returns 0, -ENOMEM (also when
 * a bound above is passed), or -EIO when f reports a write error; the
 * trace's damage is in w->r as after walk_run. */
int export_folded(struct walk *w, unsigned flags, FILE *f, uint64_t *deeper);

#endif
