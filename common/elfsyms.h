/* The functions and PLT call slots of an ELF file, read without libelf:
 * what tracing an unmodified binary (in-process patching, uprobes,
 * ptrace) needs to know before it can place a probe.  Reads little-endian
 * ELFCLASS64 x86-64 and aarch64 and ELFCLASS32 arm executables and shared
 * objects (ET_EXEC, ET_DYN).  C11 and libc only.
 *
 * The file may be planted by anyone: every offset, size and index read
 * from it is checked before use, a malformed file gives an error and a
 * one-line reason, and the file is read with pread (never mapped, so that
 * shrinking it under the reader cannot raise SIGBUS). */
#ifndef LP_ELFSYMS_H
#define LP_ELFSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum elfsyms_bind {
	ELFSYMS_LOCAL,
	ELFSYMS_GLOBAL, /* STB_GLOBAL, and STB_GNU_UNIQUE */
	ELFSYMS_WEAK,
};

enum elfsyms_fn_flag {
	ELFSYMS_FN_IFUNC = 1 << 0, /* STT_GNU_IFUNC: addr is the resolver's */
	ELFSYMS_FN_THUMB = 1 << 1, /* arm: Thumb code (bit 0 of addr is set) */
	/* shorter than the architecture's patch jump (elfsyms_jump_size):
	 * a probe there overwrites what follows the function */
	ELFSYMS_FN_SHORT = 1 << 2,
};

/* One function.  Symbols at the same address (aliases) are one function,
 * named by one of them: global before weak before local, then the shortest
 * name, then the first in byte order; its size is that symbol's size. */
struct elfsyms_fn {
	uint64_t addr;    /* st_value as in the file (arm Thumb: bit 0 set) */
	uint64_t size;    /* st_size, > 0 */
	const char *name; /* owned by the struct elfsyms */
	uint32_t aliases; /* the other symbols at addr, not listed */
	uint8_t bind;     /* enum elfsyms_bind of the chosen name */
	uint8_t flags;    /* enum elfsyms_fn_flag */
};

enum elfsyms_plt_flag {
	/* arm: the stub begins with a 4-byte Thumb entry (bx pc) for callers
	 * in Thumb code; the ARM entry, which every call runs through, is at
	 * stub + 4 */
	ELFSYMS_PLT_THUMB_ENTRY = 1 << 0,
};

/* One call slot of the PLT: a JUMP_SLOT relocation of .rela.plt/.rel.plt. */
struct elfsyms_plt {
	const char *name; /* the imported symbol, without its version; owned
	                   * by the struct elfsyms */
	uint64_t got;     /* r_offset: the GOT slot's address */
	/* the PLT stub that jumps through the slot (x86-64 .plt.sec or .plt,
	 * aarch64 and arm .plt), found by decoding the stubs; 0 when no stub of
	 * the layouts known for the architecture loads from the slot (e.g. arm
	 * --long-plt, aarch64 BTI stubs): never a guess */
	uint64_t stub;
	uint32_t flags; /* enum elfsyms_plt_flag */
};

/* An opened file's lists; everything in it is owned by it and valid until
 * elfsyms_free. */
struct elfsyms {
	uint8_t elf_class;     /* ELFCLASS32 or ELFCLASS64 */
	uint16_t type;         /* ET_EXEC or ET_DYN (PIE executables and libraries) */
	uint16_t machine;      /* EM_X86_64, EM_AARCH64 or EM_ARM */
	bool from_dynsym;      /* no .symtab (stripped): functions from .dynsym */
	struct elfsyms_fn *fn; /* nfn, sorted by address, addresses distinct */
	size_t nfn;
	struct elfsyms_plt *plt; /* nplt, in relocation order */
	size_t nplt;
	/* private: the string tables the names point into */
	char **strtabs;
	size_t nstrtabs;
};

/* Reads the functions and PLT slots of the ELF file at path.  Returns 0
 * and *out (free with elfsyms_free), or a negative errno with *out NULL
 * and one line in err (errlen > 0) naming the file and the reason:
 * the open or read error (-errno), -ENOEXEC (not ELF, truncated,
 * malformed), -ENOTSUP (big-endian, another class or machine, another
 * file type, no section headers), -EFBIG (a table beyond the size
 * limit), -ENOMEM. */
int elfsyms_open(const char *path, struct elfsyms **out, char *err, size_t errlen);

/* Frees what elfsyms_open returned; NULL is allowed. */
void elfsyms_free(struct elfsyms *es);

/* The bytes of the jump a probe writes at a function's start on machine
 * (EM_X86_64: 5, a rel32 jmp; EM_AARCH64 and EM_ARM: 4, one branch). */
unsigned elfsyms_jump_size(uint16_t machine);

#endif
