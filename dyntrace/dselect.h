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

/* A function a backend traces. */
struct dsel_fn {
	uint64_t addr;   /* in the file (st_value) */
	uint64_t offset; /* in the file: where its first instruction is */
	const char *name;
};

/* The functions chosen in an executable, for a backend that traces them
 * from outside the program (uprobes, ptrace breakpoints).  es is set by
 * the caller (elfsyms_open) before dsel_functions; the rest is filled by
 * it.  Everything is owned by the struct and freed by dsel_release; the
 * names point into es. */
struct dsel_funcs {
	struct elfsyms *es;
	struct dsel_fn *fn; /* nfn, in address order */
	uint32_t nfn;
	uint32_t candidates; /* functions the patterns chose, traced or not */
	struct uprobes_skipped *skipped;
	size_t nskipped;
};

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
/* Chooses s->es's functions that cfg's patterns name (not the C
 * runtime's, not NAME.cold parts), with their file offsets: IFUNC
 * resolvers, Thumb code (thumb_why says why) and functions outside an
 * executable segment are listed in s->skipped instead.  path: the file,
 * for its program headers and messages.  Returns 0, or a negative errno
 * with one line in err: nothing chosen (-ENOENT), nothing traceable
 * (-ENOTSUP), unreadable program headers, no memory. */
int dsel_functions(struct dsel_funcs *s, const char *path, const struct uprobes_config *cfg, const char *thumb_why,
                   char *err, size_t errlen);
/* Frees what s holds (es included) and zeroes it.  Accepts NULL. */
void dsel_release(struct dsel_funcs *s);

#endif
