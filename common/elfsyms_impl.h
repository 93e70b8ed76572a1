/* The checked ELF reading shared by elfsyms.c (header, sections,
 * functions), elfdyn.c (files without section headers) and elfplt.c (PLT
 * slots): private to them. */
#ifndef LP_ELFSYMS_IMPL_H
#define LP_ELFSYMS_IMPL_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/elfsyms.h"

/* The most one section, table or segment read may take in memory: the
 * symbol tables of the largest libraries are tens of MiB. */
#define ELFSYMS_SECTION_MAX (256u << 20)

/* A section header in one shape for both classes. */
struct elfshdr {
	uint32_t name, type, link, info;
	uint64_t flags, addr, offset, size, entsize;
};

/* A section read into memory: size bytes and one NUL after them, so that
 * a string table's last string is always terminated. */
struct elfsect {
	uint8_t *data; /* NULL: not read yet */
	uint64_t size;
	bool keep; /* a string table names point into: handed to the elfsyms */
};

/* A PT_LOAD segment's part in the file (elfdyn.c). */
struct elfload {
	uint64_t vaddr, offset, filesz; /* offset + filesz within the file */
	uint32_t flags;                 /* PF_X, PF_W, PF_R */
};

struct elfread {
	int fd;
	uint64_t fsize;
	bool is64;
	uint16_t machine;
	/* shnum headers: the file's, or when it has none (no_shdrs) the ones
	 * elfdyn_read describes from PT_DYNAMIC */
	struct elfshdr *shdrs;
	uint64_t shnum;
	bool no_shdrs;
	struct elfload *loads; /* nloads, when no_shdrs */
	size_t nloads;
	uint64_t shstrndx;     /* 0: none */
	struct elfsect *sects; /* shnum */
	struct elfsyms *es;    /* being filled */
	const char *path;
	char *err;
	size_t errlen;
};

/* Field f of ELF structure T (Elf64_Sym, ...) at p, little-endian, whatever
 * the byte order of the machine reading it. */
uint64_t elf_le(const uint8_t *p, size_t n);
#define ELF_FIELD(p, T, f) elf_le((const uint8_t *)(p) + offsetof(T, f), sizeof(((T *)0)->f))
/* Field f of the class's structure S (Ehdr, Shdr, Sym, Rel, Rela) */
#define ELF_GET(r, p, S, f) ((r)->is64 ? ELF_FIELD(p, Elf64_##S, f) : ELF_FIELD(p, Elf32_##S, f))
#define ELF_SIZE(r, S) ((r)->is64 ? sizeof(Elf64_##S) : sizeof(Elf32_##S))

/* Writes "cannot read ELF file 'path': <fmt...>" into r->err; returns code. */
int elfread_fail(struct elfread *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reads len bytes at file offset off, which must lie within the file.
 * Returns 0 or -errno (reported, naming what). */
int elfread_at(struct elfread *r, uint64_t off, void *buf, uint64_t len, const char *what);

/* Section idx's header (idx < r->shnum). */
void elfread_shdr(const struct elfread *r, uint64_t idx, struct elfshdr *sh);

/* The index of the section named name, or 0 when there is none (or no
 * section names). */
uint64_t elfread_find(const struct elfread *r, const char *name);

/* Reads section idx (once; kept until the reader ends) after checking it
 * lies in the file and is within the size limit; *data is valid until the
 * reader ends.  Returns 0 or -errno (reported). */
int elfread_section(struct elfread *r, uint64_t idx, const uint8_t **data, uint64_t *size);

/* The symbol table idx (SHT_SYMTAB or SHT_DYNSYM, checked) with its string
 * table (marked kept): *nsyms entries of ELF_SIZE(r, Sym) bytes at *syms.
 * Returns 0 or -errno (reported). */
int elfread_symtab(struct elfread *r, uint64_t idx, const uint8_t **syms, uint64_t *nsyms, uint64_t *strndx);

/* Symbol sym's name from string table strndx (read by elfread_symtab):
 * NULL (reported as -ENOEXEC) when its offset is out of bounds. */
const char *elfread_symname(struct elfread *r, uint64_t strndx, const uint8_t *sym);

/* A file without section headers (elfdyn.c): reads the program headers
 * (r->loads) and PT_DYNAMIC, and fills r->shdrs and r->sects with the
 * sections it describes (.dynsym, .dynstr, .rela.plt or .rel.plt, and
 * their names, already in memory).  eh: the ELF header.  Returns 0 or
 * -errno (reported). */
int elfdyn_read(struct elfread *r, const uint8_t *eh);

/* The file offset of the len bytes at virtual address va, which must lie
 * in the file part of one PT_LOAD segment (elfdyn.c).  Returns 0 or
 * -ENOEXEC (reported, naming what). */
int elfdyn_offset(struct elfread *r, uint64_t va, uint64_t len, uint64_t *off, const char *what);

/* Fills r->es->plt from .rela.plt or .rel.plt, then (x86-64) .plt.got
 * (elfplt.c).  Returns 0 or -errno (reported). */
int elfplt_read(struct elfread *r);

#endif
