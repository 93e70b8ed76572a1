/* The dynamic tracer's patch backend, the recorder's half: decodes the
 * first instructions of the executable's chosen functions and writes the
 * plan the runtime applies in the program (LP_PLAN_NAME, see
 * include/layerprof/format.h).  The traced calls then go through the
 * runtime's gates like those of -finstrument-functions code, into the
 * threads' rings.  C11 and libc only: it runs on the target.
 *
 * A function is planned when its first instructions cover the 5 bytes of
 * a jmp rel32 (or it ends sooner and nothing but padding follows it), each
 * can be moved (relative branches and RIP-relative operands are rewritten
 * for the new place; loop and jrcxz go through a jump of their own), no
 * other symbol starts inside those bytes and no direct branch of the
 * file's functions lands inside them.  The others are listed with the
 * reason. */
#ifndef LP_DYNTRACE_DPATCH_H
#define LP_DYNTRACE_DPATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "dyntrace/uprobes.h"

struct dpatch;

/* True when this build can patch programs of the recorder's own
 * architecture. */
bool dpatch_supported(void);
/* Reads the executable cfg->path and plans its chosen functions; nothing
 * is written yet.  NULL with one line in err: an unreadable or foreign
 * file, a static or C++ (exceptions) program, no function chosen, none
 * that can be patched. */
struct dpatch *dpatch_open(const struct uprobes_config *cfg, char *err, size_t errlen);
/* Writes the plan into the session directory (created exclusively), where
 * the program's runtime finds it.  Returns 0 or -errno with err set. */
int dpatch_write(struct dpatch *p, const char *session, char *err, size_t errlen);
/* What was planned and, from the statuses the runtime wrote, what was
 * patched: functions (patched), candidates, the skipped functions with
 * their reasons.  `applied` false: no process applied the plan. */
void dpatch_get_stats(struct dpatch *p, struct uprobes_stats *st, bool *applied);
void dpatch_free(struct dpatch *p);

#endif
