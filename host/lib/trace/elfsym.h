/* The function and data symbols and source lines of one ELF object file,
 * read once with libelf/libdw and kept sorted for lookups by ELF virtual
 * address. */
#ifndef LP_ELFSYM_H
#define LP_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfsym;

enum elfsym_flags {
	ELFSYM_LINES = 1u << 0, /* keep DWARF open so elfsym_line() can answer */
};

/* Longest build id used to name a separate debug file. */
#define ELFSYM_BUILD_ID_MAX 64u

/* Reads the symbols of `path` (NUL-terminated, may be ""). When build_id_len
 * is nonzero, the file is used only if it carries the same GNU build id; when
 * it is missing, stripped or differs, <debug_dir>/.build-id/xx/rest.debug is
 * tried as well (debug_dir NULL: not tried). Files that are missing, not
 * regular, not ELF, truncated or corrupt give an object with no symbols:
 * every elfsym_find() then fails. Nothing passed in needs to outlive the
 * call. With ELFSYM_LINES, the file holding DWARF stays open (one file
 * descriptor) until elfsym_free(). Returns NULL only when memory runs out.
 * Free with elfsym_free(). */
struct elfsym *elfsym_open(const char *path, const uint8_t *build_id, size_t build_id_len, const char *debug_dir,
                           unsigned flags);

/* Closes the files and frees every string handed out. Accepts NULL. */
void elfsym_free(struct elfsym *e);

struct elfsym_hit {
	const char *name; /* raw (mangled) name; owned by e */
	uint64_t start;   /* ELF address of the symbol */
	uint64_t size;    /* its size, 0 when it has none */
	size_t index;     /* handle for elfsym_demangle() (with data) */
	bool data;        /* found by elfsym_find_data */
};

/* Finds the function symbol covering ELF address `addr`: the one whose
 * [start, start + size) holds it or, for a symbol of size 0, the nearest one
 * below. Returns false when none does (a gap, or no symbols). O(log n). */
bool elfsym_find(struct elfsym *e, uint64_t addr, struct elfsym_hit *hit);

/* Finds the data symbol covering ELF address `addr`: of the sized objects
 * (STT_OBJECT, STT_COMMON; not STT_TLS) that lie in a PT_LOAD segment of
 * the file, the one whose [start, start + size) holds it (of nested ones,
 * the innermost; of aliases at one address, the one ranked as for
 * functions).  An address in a gap, in code or outside the object gives
 * false.  O(log n); the functions' lookups are apart and cost the same. */
bool elfsym_find_data(struct elfsym *e, uint64_t addr, struct elfsym_hit *hit);

/* The C++-demangled form of a hit's name (a function's or a data
 * symbol's), or its raw name when it is not a mangled name or cannot be
 * demangled. Computed on first use and kept: the string is owned by e.
 * NULL only when memory runs out. */
const char *elfsym_demangle(struct elfsym *e, const struct elfsym_hit *hit);

/* Calls cb for each function symbol in address order (at an address with
 * aliases, the one elfsym_find gives), with its raw name or, with
 * `demangle`, its elfsym_demangle form; start is the ELF address, size 0
 * when the symbol has none.  Names are owned by e.  Stops at the first
 * nonzero return of cb and returns it; else 0, or -ENOMEM when demangling
 * ran out of memory. */
int elfsym_foreach(struct elfsym *e, bool demangle,
                   int (*cb)(void *ctx, const char *name, uint64_t start, uint64_t size), void *ctx);

/* Source file and line of ELF address `addr` from DWARF (ELFSYM_LINES only).
 * At an address where several line rows start, the first one is taken,
 * which for a function's entry is the line that opens its body. *file is
 * owned by e. Returns false when unknown. */
bool elfsym_line(struct elfsym *e, uint64_t addr, const char **file, unsigned *line);

#endif
