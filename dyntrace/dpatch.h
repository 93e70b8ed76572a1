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
/* Writes the plans (plan.0, plan.1, ...) into the session directory
 * (created exclusively), where the program's runtime finds them.  Returns
 * their number, or -errno with err set. */
int dpatch_write(struct dpatch *p, const char *session, char *err, size_t errlen);
/* Answers the processes that asked for a plan of their executable (one the
 * program exec'd, that has none): each request (LP_PLAN_WANT_NAME.* in the
 * session, read and removed) is planned with the program's patterns (cfg;
 * NULL: none is planned) and written as plan.<nplans>, plan.<nplans + 1>,
 * ...  Returns the number of plans in the session now.  One that cannot be
 * planned is told by dpatch_get_stats. */
unsigned dpatch_serve(struct dpatch *p, const struct uprobes_config *cfg, const char *session, unsigned nplans);
/* What was planned and, from the statuses the runtime wrote, what was
 * patched: functions (patched), candidates, the skipped functions with
 * their reasons.  `applied` false: no process applied the plan. */
void dpatch_get_stats(struct dpatch *p, struct uprobes_stats *st, bool *applied);
void dpatch_free(struct dpatch *p);

#endif
