/* What every backend of the dynamic tracer shares: which of the
 * executable's functions are chosen, which programs cannot be traced by
 * replacing return addresses, and where the executable's code is in its
 * file.  C11 and libc only. */
#ifndef LP_DYNTRACE_DSELECT_H
#define LP_DYNTRACE_DSELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/elfsyms.h"
#include "dyntrace/uprobes.h"

#define DSEG_MAX 16u

/* An executable PT_LOAD segment. */
struct dseg {
	uint64_t vaddr, offset, filesz;
};

/* True when cfg's patterns choose the function (no pattern: all). */
bool dsel_chosen(const struct uprobes_config *cfg, const char *name);
/* The C runtime's start-up and tear-down code, which an instrumented
 * build does not instrument either. */
bool dsel_is_crt(const char *name);
/* Not a function of its own but a part of one (GCC's NAME.cold). */
bool dsel_is_part(const char *name);
/* A symbol of es that means C++ exceptions may unwind through the
 * program's frames (a replaced return address would stop them), or NULL. */
const char *dsel_unwinds(const struct elfsyms *es);
/* The executable PT_LOAD segments of the file (at most DSEG_MAX), and
 * whether it has a PT_INTERP (a dynamically linked program; NULL: not
 * asked).  Returns 0, or -errno (-ENOEXEC: unreadable program headers). */
int dsel_segments(const char *path, uint8_t elf_class, struct dseg *seg, unsigned *nseg, bool *interp);

#endif
