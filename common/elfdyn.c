/* A file without section headers (see elfsyms.h): its program headers, and
 * the dynamic symbol table and PLT relocations PT_DYNAMIC points at,
 * described as the sections that elfsyms.c and elfplt.c read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/elfsyms_impl.h"

/* The sections described, by index */
enum dyn_section {
	DYN_NONE,
	DYN_DYNSYM,
	DYN_DYNSTR,
	DYN_PLTREL,
	DYN_NAMES,
	DYN_SECTIONS,
};

/* Their names: the section name table DYN_NAMES holds */
static const char dyn_names[] = "\0.dynsym\0.dynstr\0.rela.plt\0.rel.plt\0.shstrtab";

/* GNU hash chain entries read at a time */
#define DYN_CHAIN_CHUNK 256u
/* the size of a hash table entry (DT_HASH words and GNU hash buckets and
 * chains) on the three machines read */
#define DYN_HASH_WORD 4u

/* What PT_DYNAMIC gives (0: the tag is absent) */
struct dyninfo {
	uint64_t symtab, strtab, strsz, syment, hash, gnu_hash, jmprel, pltrelsz, pltrel;
};

/* The offset of name in dyn_names (name is one of them). */
static uint32_t dyn_name(const char *name)
{
	uint32_t off = 1;

	while (strcmp(dyn_names + off, name))
		off += (uint32_t)strlen(dyn_names + off) + 1;
	return off;
}

/* Where va lies in the file: *off, and the *avail bytes of the segment's
 * file part from there.  -1 when no PT_LOAD holds it. */
static int dyn_find(const struct elfread *r, uint64_t va, uint64_t *off, uint64_t *avail)
{
	size_t i;

	for (i = 0; i < r->nloads; i++) {
		const struct elfload *l = &r->loads[i];

		if (va >= l->vaddr && va - l->vaddr <= l->filesz) {
			*off = l->offset + (va - l->vaddr);
			*avail = l->filesz - (va - l->vaddr);
			return 0;
		}
	}
	return -1;
}

int elfdyn_offset(struct elfread *r, uint64_t va, uint64_t len, uint64_t *off, const char *what)
{
	uint64_t avail;

	if (dyn_find(r, va, off, &avail) || len > avail)
		return elfread_fail(r, -ENOEXEC, "%s (%llu bytes at %#llx) is not in a loaded segment", what,
		                    (unsigned long long)len, (unsigned long long)va);
	return 0;
}

/* Reads the len bytes at virtual address va. */
static int dyn_read(struct elfread *r, uint64_t va, void *buf, uint64_t len, const char *what)
{
	uint64_t off;
	int ret = elfdyn_offset(r, va, len, &off, what);

	return ret ? ret : elfread_at(r, off, buf, len, what);
}

/* The number of symbols a GNU hash table covers: the symbols before
 * symoffset, which it does not hash, then through the end (bit 0 set) of
 * the chain that starts at the highest symbol a bucket names. */
static int dyn_count_gnu(struct elfread *r, uint64_t va, uint64_t *nsyms)
{
	uint64_t max = ELFSYMS_SECTION_MAX / ELF_SIZE(r, Sym), word = r->is64 ? 8 : 4;
	uint64_t nbuckets, symoffset, nbloom, buckets, chain, top = 0, i, k, n, off, avail;
	uint8_t h[4 * DYN_HASH_WORD], c[DYN_CHAIN_CHUNK * DYN_HASH_WORD], *b;
	int ret = dyn_read(r, va, h, sizeof(h), "DT_GNU_HASH table");

	if (ret)
		return ret;
	nbuckets = elf_le(h, 4);
	symoffset = elf_le(h + 4, 4);
	nbloom = elf_le(h + 8, 4);
	buckets = va + sizeof(h) + nbloom * word;
	chain = buckets + nbuckets * DYN_HASH_WORD;
	if (buckets < va || chain < buckets)
		return elfread_fail(r, -ENOEXEC, "DT_GNU_HASH table wraps around the address space");
	if (nbuckets > ELFSYMS_SECTION_MAX / DYN_HASH_WORD)
		return elfread_fail(r, -EFBIG, "DT_GNU_HASH has %llu buckets", (unsigned long long)nbuckets);
	b = malloc(nbuckets ? nbuckets * DYN_HASH_WORD : 1);
	if (!b)
		return elfread_fail(r, -ENOMEM, "out of memory for %llu hash buckets", (unsigned long long)nbuckets);
	ret = dyn_read(r, buckets, b, nbuckets * DYN_HASH_WORD, "DT_GNU_HASH buckets");
	for (i = 0; !ret && i < nbuckets; i++)
		if (elf_le(b + i * DYN_HASH_WORD, DYN_HASH_WORD) > top)
			top = elf_le(b + i * DYN_HASH_WORD, DYN_HASH_WORD);
	free(b);
	if (ret)
		return ret;
	if (!top) { /* no symbol is hashed */
		*nsyms = symoffset;
		return 0;
	}
	if (top < symoffset)
		return elfread_fail(r, -ENOEXEC, "DT_GNU_HASH bucket names symbol %llu, below the first hashed (%llu)",
		                    (unsigned long long)top, (unsigned long long)symoffset);
	for (i = top; i < max; i += n) {
		/* chain entry i - symoffset, and as many after it as its segment has */
		if (dyn_find(r, chain + (i - symoffset) * DYN_HASH_WORD, &off, &avail) || avail < DYN_HASH_WORD)
			return elfread_fail(r, -ENOEXEC, "DT_GNU_HASH chain of symbol %llu is not in a loaded segment",
			                    (unsigned long long)top);
		n = avail / DYN_HASH_WORD < DYN_CHAIN_CHUNK ? avail / DYN_HASH_WORD : DYN_CHAIN_CHUNK;
		ret = elfread_at(r, off, c, n * DYN_HASH_WORD, "DT_GNU_HASH chain");
		if (ret)
			return ret;
		for (k = 0; k < n; k++) {
			if (elf_le(c + k * DYN_HASH_WORD, DYN_HASH_WORD) & 1) {
				*nsyms = i + k + 1;
				return 0;
			}
		}
	}
	return elfread_fail(r, -EFBIG, "DT_GNU_HASH chain of symbol %llu does not end", (unsigned long long)top);
}

/* The number of dynamic symbols: DT_HASH's nchain, else from DT_GNU_HASH. */
static int dyn_count_symbols(struct elfread *r, const struct dyninfo *d, uint64_t *nsyms)
{
	uint8_t h[2 * DYN_HASH_WORD]; /* nbucket, nchain */
	int ret;

	if (d->hash) {
		ret = dyn_read(r, d->hash, h, sizeof(h), "DT_HASH table");
		if (!ret)
			*nsyms = elf_le(h + DYN_HASH_WORD, DYN_HASH_WORD);
		return ret;
	}
	if (d->gnu_hash)
		return dyn_count_gnu(r, d->gnu_hash, nsyms);
	return elfread_fail(r, -ENOEXEC, "no DT_HASH or DT_GNU_HASH to count the dynamic symbols by");
}

/* Describes section idx: size bytes at virtual address va. */
static int dyn_section(struct elfread *r, unsigned idx, const char *name, uint32_t type, uint64_t va, uint64_t size,
                       uint64_t entsize, uint32_t link)
{
	struct elfshdr *sh = &r->shdrs[idx];

	*sh = (struct elfshdr){
		.name = dyn_name(name), .type = type, .addr = va, .size = size, .entsize = entsize, .link = link
	};
	return elfdyn_offset(r, va, size, &sh->offset, name);
}

/* The tags of PT_DYNAMIC read here (the last of each). */
static void dyn_tags(struct elfread *r, const uint8_t *dyn, uint64_t n, struct dyninfo *d)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		const uint8_t *e = dyn + i * ELF_SIZE(r, Dyn);
		uint64_t tag = ELF_GET(r, e, Dyn, d_tag), val = ELF_GET(r, e, Dyn, d_un);

		if (tag == DT_NULL)
			break;
		if (tag == DT_SYMTAB)
			d->symtab = val;
		else if (tag == DT_STRTAB)
			d->strtab = val;
		else if (tag == DT_STRSZ)
			d->strsz = val;
		else if (tag == DT_SYMENT)
			d->syment = val;
		else if (tag == DT_HASH)
			d->hash = val;
		else if (tag == DT_GNU_HASH)
			d->gnu_hash = val;
		else if (tag == DT_JMPREL)
			d->jmprel = val;
		else if (tag == DT_PLTRELSZ)
			d->pltrelsz = val;
		else if (tag == DT_PLTREL)
			d->pltrel = val;
	}
}

/* Raises *nsyms to cover the symbols the PLT relocations name.  A GNU
 * hash table counts only the symbols it hashes, the defined ones, which
 * ld puts last; undefined ones may lie past them (ld writes no hashed
 * symbol at all for a program that exports none). */
static int dyn_plt_symbols(struct elfread *r, uint64_t *nsyms)
{
	const struct elfshdr *sh = &r->shdrs[DYN_PLTREL];
	bool rela = sh->type == SHT_RELA;
	const uint8_t *rels;
	uint64_t size, i, info, sym;
	int ret = elfread_section(r, DYN_PLTREL, &rels, &size);

	for (i = 0; !ret && i + sh->entsize <= size; i += sh->entsize) {
		info = rela ? ELF_GET(r, rels + i, Rela, r_info) : ELF_GET(r, rels + i, Rel, r_info);
		sym = r->is64 ? ELF64_R_SYM(info) : ELF32_R_SYM(info);
		if (sym >= *nsyms)
			*nsyms = sym + 1;
	}
	return ret;
}

/* Describes the sections the dynamic tags point at. */
static int dyn_sections(struct elfread *r, const struct dyninfo *d)
{
	uint64_t nsyms = 0, symsize = ELF_SIZE(r, Sym);
	bool rela = d->pltrel == DT_RELA;
	int ret = 0;

	if (d->jmprel) {
		if (!rela && d->pltrel != DT_REL)
			return elfread_fail(r, -ENOEXEC, "DT_PLTREL %llu is neither DT_REL nor DT_RELA",
			                    (unsigned long long)d->pltrel);
		ret = dyn_section(r, DYN_PLTREL, rela ? ".rela.plt" : ".rel.plt", rela ? SHT_RELA : SHT_REL, d->jmprel,
		                  d->pltrelsz, rela ? ELF_SIZE(r, Rela) : ELF_SIZE(r, Rel), DYN_DYNSYM);
	}
	if (ret || !d->symtab)
		return ret;
	if (d->syment && d->syment != symsize)
		return elfread_fail(r, -ENOEXEC, "DT_SYMENT %llu is wrong", (unsigned long long)d->syment);
	if (!d->strtab)
		return elfread_fail(r, -ENOEXEC, "DT_SYMTAB without DT_STRTAB");
	ret = dyn_count_symbols(r, d, &nsyms);
	if (!ret && !d->hash && d->jmprel)
		ret = dyn_plt_symbols(r, &nsyms);
	if (!ret && nsyms > ELFSYMS_SECTION_MAX / symsize)
		ret = elfread_fail(r, -EFBIG, "%llu dynamic symbols", (unsigned long long)nsyms);
	if (!ret)
		ret =
		    dyn_section(r, DYN_DYNSYM, ".dynsym", SHT_DYNSYM, d->symtab, nsyms * symsize, symsize, DYN_DYNSTR);
	if (!ret)
		ret = dyn_section(r, DYN_DYNSTR, ".dynstr", SHT_STRTAB, d->strtab, d->strsz, 0, 0);
	return ret;
}

/* Reads the program headers: the PT_LOAD segments into r->loads, and where
 * PT_DYNAMIC lies (*dsize 0: none). */
static int dyn_read_phdrs(struct elfread *r, const uint8_t *eh, uint64_t *doff, uint64_t *dsize)
{
	uint64_t phoff = ELF_GET(r, eh, Ehdr, e_phoff), phnum = ELF_GET(r, eh, Ehdr, e_phnum);
	uint64_t phentsize = ELF_GET(r, eh, Ehdr, e_phentsize), i;
	uint8_t *ph;
	int ret;

	if (!phoff || !phnum)
		return elfread_fail(r, -ENOEXEC, "neither section headers nor program headers");
	if (phnum == PN_XNUM)
		return elfread_fail(r, -ENOEXEC, "program header count in section 0, but no section headers");
	if (phentsize != ELF_SIZE(r, Phdr))
		return elfread_fail(r, -ENOEXEC, "program header size %llu is wrong", (unsigned long long)phentsize);
	if (phoff > r->fsize || phnum * phentsize > r->fsize - phoff)
		return elfread_fail(r, -ENOEXEC, "truncated (program headers beyond the end)");
	ph = malloc(phnum * phentsize);
	r->loads = calloc(phnum, sizeof(*r->loads));
	if (!ph || !r->loads) {
		free(ph);
		return elfread_fail(r, -ENOMEM, "out of memory for %llu program headers", (unsigned long long)phnum);
	}
	ret = elfread_at(r, phoff, ph, phnum * phentsize, "program headers");
	for (i = 0; !ret && i < phnum; i++) {
		const uint8_t *p = ph + i * phentsize;
		uint64_t type = ELF_GET(r, p, Phdr, p_type), off = ELF_GET(r, p, Phdr, p_offset);
		uint64_t filesz = ELF_GET(r, p, Phdr, p_filesz), vaddr = ELF_GET(r, p, Phdr, p_vaddr);

		if (type != PT_LOAD && (type != PT_DYNAMIC || *dsize))
			continue;
		if (off > r->fsize || filesz > r->fsize - off || filesz > UINT64_MAX - vaddr) {
			ret =
			    elfread_fail(r, -ENOEXEC, "truncated (segment %llu beyond the end)", (unsigned long long)i);
		} else if (type == PT_DYNAMIC) {
			*doff = off;
			*dsize = filesz;
		} else {
			r->loads[r->nloads++] = (struct elfload){ .vaddr = vaddr,
				                                  .offset = off,
				                                  .filesz = filesz,
				                                  .flags = (uint32_t)ELF_GET(r, p, Phdr, p_flags) };
		}
	}
	free(ph);
	return ret;
}

int elfdyn_read(struct elfread *r, const uint8_t *eh)
{
	struct dyninfo d = { 0 };
	uint64_t doff = 0, dsize = 0;
	uint8_t *dyn;
	int ret;

	r->shnum = DYN_SECTIONS;
	r->shstrndx = DYN_NAMES;
	r->shdrs = calloc(DYN_SECTIONS, sizeof(*r->shdrs));
	r->sects = calloc(DYN_SECTIONS, sizeof(*r->sects));
	if (r->sects)
		r->sects[DYN_NAMES].data = malloc(sizeof(dyn_names));
	if (!r->shdrs || !r->sects || !r->sects[DYN_NAMES].data)
		return elfread_fail(r, -ENOMEM, "out of memory");
	memcpy(r->sects[DYN_NAMES].data, dyn_names, sizeof(dyn_names));
	r->sects[DYN_NAMES].size = sizeof(dyn_names) - 1;
	r->shdrs[DYN_NAMES] =
	    (struct elfshdr){ .name = dyn_name(".shstrtab"), .type = SHT_STRTAB, .size = sizeof(dyn_names) - 1 };
	ret = dyn_read_phdrs(r, eh, &doff, &dsize);
	if (ret || !dsize)
		return ret; /* no PT_DYNAMIC: a static program, nothing to list */
	if (dsize > ELFSYMS_SECTION_MAX)
		return elfread_fail(r, -EFBIG, "PT_DYNAMIC is larger than %u MiB", ELFSYMS_SECTION_MAX >> 20);
	dyn = malloc(dsize);
	if (!dyn)
		return elfread_fail(r, -ENOMEM, "out of memory for PT_DYNAMIC");
	ret = elfread_at(r, doff, dyn, dsize, "PT_DYNAMIC");
	if (!ret)
		dyn_tags(r, dyn, dsize / ELF_SIZE(r, Dyn), &d);
	free(dyn);
	return ret ? ret : dyn_sections(r, &d);
}
