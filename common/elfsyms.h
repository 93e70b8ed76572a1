/* The functions and PLT call slots of an ELF file, read without libelf:
 * what tracing an unmodified binary (in-process patching, uprobes,
 * ptrace) needs to know before it can place a probe.  Reads little-endian
 * ELFCLASS64 x86-64 and aarch64 and ELFCLASS32 arm executables and shared
 * objects (ET_EXEC, ET_DYN).  C11 and libc only.
 *
 * A file without section headers (sstrip'ed, e_shoff or e_shnum 0, as on
 * many devices) is read through its program headers: PT_DYNAMIC gives the
 * dynamic symbol table, its strings and the PLT relocations (DT_JMPREL),
 * each found in the file through the PT_LOAD segment that holds it.  The
 * table's length is DT_HASH's nchain, else what DT_GNU_HASH hashes (the
 * end of its last chain) and at least the symbols the PLT relocations
 * name (GNU hash leaves undefined symbols out).  Its functions are then the
 * dynamic symbols' (as for a stripped file), and the PLT stubs are found
 * by decoding the executable segments at the PLT's entry alignment (16
 * bytes on x86-64 and aarch64, 4 on arm) for the stubs elfplt.c knows; a
 * slot no place, or more than one place, jumps through has stub 0.
 * .plt.got entries are not listed for such a file: without the section's
 * bounds, a tail call through the GOT looks like one.
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
	/* x86-64: a .plt.got entry, the stub the linker makes for a function
	 * both called and taken by address (or bound at load time): it jumps
	 * through the GLOB_DAT slot of .rela.dyn that holds the address, with
	 * no lazy binding.  Listed after the JUMP_SLOTs, in .plt.got order;
	 * stub is never 0.  Only when the file has section headers. */
	ELFSYMS_PLT_GOT = 1 << 1,
};

/* One call slot of the PLT: a JUMP_SLOT relocation of .rela.plt/.rel.plt,
 * or (flag ELFSYMS_PLT_GOT) an entry of x86-64's .plt.got. */
struct elfsyms_plt {
	const char *name; /* the imported symbol, without its version; owned
	                   * by the struct elfsyms */
	uint64_t got;     /* r_offset: the GOT slot's address */
	/* the PLT stub that jumps through the slot (x86-64 .plt.sec, .plt or
	 * .plt.got, aarch64 and arm .plt; without section headers, the
	 * executable segments), found by decoding the stubs; 0 when no stub of
	 * the layouts known for the architecture loads from the slot (e.g. arm
	 * --long-plt, aarch64 BTI stubs), or more than one does: never a guess */
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
	bool from_phdrs;       /* no section headers: read through PT_DYNAMIC */
	struct elfsyms_fn *fn; /* nfn, sorted by address, addresses distinct */
	size_t nfn;
	/* nplt: the JUMP_SLOTs in relocation order, then the .plt.got entries */
	struct elfsyms_plt *plt;
	size_t nplt;
	/* private: the string tables the names point into */
	char **strtabs;
	size_t nstrtabs;
};

/* Reads the functions and PLT slots of the ELF file at path.  Returns 0
 * and *out (free with elfsyms_free), or a negative errno with *out NULL
 * and one line in err (errlen > 0) naming the file and the reason:
 * the open or read error (-errno), -ENOEXEC (not ELF, truncated,
 * malformed; without section headers also a PT_DYNAMIC whose tables lie
 * outside the PT_LOAD segments, or no hash table to count the dynamic
 * symbols), -ENOTSUP (big-endian, another class or machine, another file
 * type), -EFBIG (a table beyond the size limit), -ENOMEM.  A file without
 * section headers or PT_DYNAMIC (static) has no functions and no slots. */
int elfsyms_open(const char *path, struct elfsyms **out, char *err, size_t errlen);

/* Frees what elfsyms_open returned; NULL is allowed. */
void elfsyms_free(struct elfsyms *es);

/* The bytes of the jump a probe writes at a function's start on machine
 * (EM_X86_64: 5, a rel32 jmp; EM_AARCH64 and EM_ARM: 4, one branch). */
unsigned elfsyms_jump_size(uint16_t machine);

#endif
