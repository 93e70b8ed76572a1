/* The functions of an ELF file from its symbol table, and the checked
 * reading of its header and sections (see elfsyms.h; the PLT is elfplt.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elfsyms_impl.h"

/* Patch jumps: x86-64 jmp rel32; one aarch64 B or arm B/B.W instruction */
#define ELFSYMS_JUMP_X86_64 5u
#define ELFSYMS_JUMP_ARM 4u

uint64_t elf_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

int elfread_fail(struct elfread *r, int code, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "cannot read ELF file '%s': %s", r->path, why);
	return code;
}

int elfread_at(struct elfread *r, uint64_t off, void *buf, uint64_t len, const char *what)
{
	uint8_t *p = buf;

	if (off > r->fsize || len > r->fsize - off)
		return elfread_fail(r, -ENOEXEC, "truncated (%s beyond the end)", what);
	while (len) {
		ssize_t n = pread(r->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return elfread_fail(r, -errno, "%s: %s", what, strerror(errno));
		if (n == 0)
			return elfread_fail(r, -ENOEXEC, "truncated while reading (%s)", what);
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

void elfread_shdr(const struct elfread *r, uint64_t idx, struct elfshdr *sh)
{
	*sh = r->shdrs[idx];
}

int elfread_section(struct elfread *r, uint64_t idx, const uint8_t **data, uint64_t *size)
{
	struct elfsect *s = &r->sects[idx];
	struct elfshdr sh;
	char what[48];
	int ret;

	if (!s->data) {
		elfread_shdr(r, idx, &sh);
		snprintf(what, sizeof(what), "section %llu", (unsigned long long)idx);
		if (sh.type == SHT_NOBITS)
			return elfread_fail(r, -ENOEXEC, "%s has no contents in the file", what);
		if (sh.size > ELFSYMS_SECTION_MAX)
			return elfread_fail(r, -EFBIG, "%s is larger than %u MiB", what, ELFSYMS_SECTION_MAX >> 20);
		s->data = malloc(sh.size + 1);
		if (!s->data)
			return elfread_fail(r, -ENOMEM, "%s: out of memory", what);
		ret = elfread_at(r, sh.offset, s->data, sh.size, what);
		if (ret) {
			free(s->data);
			s->data = NULL;
			return ret;
		}
		s->data[sh.size] = '\0';
		s->size = sh.size;
	}
	*data = s->data;
	*size = s->size;
	return 0;
}

uint64_t elfread_find(const struct elfread *r, const char *name)
{
	/* read by elfsyms_read_header */
	const struct elfsect *names = &r->sects[r->shstrndx];
	struct elfshdr sh;
	uint64_t i;

	for (i = 1; r->shstrndx && i < r->shnum; i++) {
		elfread_shdr(r, i, &sh);
		if (sh.name < names->size && !strcmp((const char *)names->data + sh.name, name))
			return i;
	}
	return 0;
}

int elfread_symtab(struct elfread *r, uint64_t idx, const uint8_t **syms, uint64_t *nsyms, uint64_t *strndx)
{
	struct elfshdr sh, str;
	const uint8_t *strs;
	uint64_t size;
	int ret;

	if (!idx || idx >= r->shnum)
		return elfread_fail(r, -ENOEXEC, "symbol table index %llu out of range", (unsigned long long)idx);
	elfread_shdr(r, idx, &sh);
	if ((sh.type != SHT_SYMTAB && sh.type != SHT_DYNSYM) || sh.entsize != ELF_SIZE(r, Sym))
		return elfread_fail(r, -ENOEXEC, "section %llu is not a symbol table", (unsigned long long)idx);
	if (!sh.link || sh.link >= r->shnum)
		return elfread_fail(r, -ENOEXEC, "symbol table %llu has no string table", (unsigned long long)idx);
	elfread_shdr(r, sh.link, &str);
	if (str.type != SHT_STRTAB)
		return elfread_fail(r, -ENOEXEC, "section %u is not a string table", sh.link);
	ret = elfread_section(r, idx, syms, &size);
	if (!ret)
		ret = elfread_section(r, sh.link, &strs, &size);
	if (ret)
		return ret;
	r->sects[sh.link].keep = true;
	*nsyms = r->sects[idx].size / sh.entsize;
	*strndx = sh.link;
	return 0;
}

const char *elfread_symname(struct elfread *r, uint64_t strndx, const uint8_t *sym)
{
	uint64_t off = ELF_GET(r, sym, Sym, st_name);

	if (off >= r->sects[strndx].size) {
		elfread_fail(r, -ENOEXEC, "symbol name out of bounds");
		return NULL;
	}
	return (const char *)r->sects[strndx].data + off;
}

unsigned elfsyms_jump_size(uint16_t machine)
{
	return machine == EM_X86_64 ? ELFSYMS_JUMP_X86_64 : ELFSYMS_JUMP_ARM;
}

/* Orders by address, then the alias to choose first (elfsyms.h). */
static int fn_cmp(const void *pa, const void *pb)
{
	static const int rank[] = { [ELFSYMS_GLOBAL] = 0, [ELFSYMS_WEAK] = 1, [ELFSYMS_LOCAL] = 2 };
	const struct elfsyms_fn *a = pa, *b = pb;
	size_t la, lb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->bind != b->bind)
		return rank[a->bind] - rank[b->bind];
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static uint8_t sym_bind(unsigned bind)
{
	if (bind == STB_LOCAL)
		return ELFSYMS_LOCAL;
	return bind == STB_WEAK ? ELFSYMS_WEAK : ELFSYMS_GLOBAL;
}

/* Fills es->fn from .symtab, else from .dynsym. */
static int elfsyms_read_functions(struct elfread *r)
{
	struct elfsyms *es = r->es;
	uint64_t i, idx = 0, nsyms, strndx;
	unsigned jump = elfsyms_jump_size(r->machine);
	const uint8_t *syms;
	struct elfshdr sh;
	size_t n = 0, j;
	int ret;

	for (i = 1; i < r->shnum && !idx; i++) {
		elfread_shdr(r, i, &sh);
		if (sh.type == SHT_SYMTAB)
			idx = i;
	}
	for (i = 1; i < r->shnum && !idx; i++) {
		elfread_shdr(r, i, &sh);
		if (sh.type == SHT_DYNSYM) {
			idx = i;
			es->from_dynsym = true;
		}
	}
	if (!idx)
		return 0;
	ret = elfread_symtab(r, idx, &syms, &nsyms, &strndx);
	if (ret)
		return ret;
	es->fn = calloc(nsyms ? nsyms : 1, sizeof(*es->fn));
	if (!es->fn)
		return elfread_fail(r, -ENOMEM, "out of memory for %llu symbols", (unsigned long long)nsyms);
	for (i = 1; i < nsyms; i++) {
		const uint8_t *s = syms + i * ELF_SIZE(r, Sym);
		unsigned info = (unsigned)ELF_GET(r, s, Sym, st_info);
		uint64_t shndx = ELF_GET(r, s, Sym, st_shndx);
		struct elfsyms_fn *f = &es->fn[n];

		if ((ELF64_ST_TYPE(info) != STT_FUNC && ELF64_ST_TYPE(info) != STT_GNU_IFUNC) || shndx == SHN_UNDEF ||
		    (shndx >= SHN_LORESERVE && shndx != SHN_ABS && shndx != SHN_XINDEX))
			continue;
		f->size = ELF_GET(r, s, Sym, st_size);
		if (!f->size)
			continue;
		f->name = elfread_symname(r, strndx, s);
		if (!f->name)
			return -ENOEXEC;
		f->addr = ELF_GET(r, s, Sym, st_value);
		f->bind = sym_bind(ELF64_ST_BIND(info));
		if (ELF64_ST_TYPE(info) == STT_GNU_IFUNC)
			f->flags |= ELFSYMS_FN_IFUNC;
		if (r->machine == EM_ARM && (f->addr & 1))
			f->flags |= ELFSYMS_FN_THUMB;
		if (f->size < jump)
			f->flags |= ELFSYMS_FN_SHORT;
		n++;
	}
	qsort(es->fn, n, sizeof(*es->fn), fn_cmp);
	/* keep the first of each address: the alias chosen */
	for (i = 0, j = 0; i < n; i++) {
		if (j && es->fn[j - 1].addr == es->fn[i].addr)
			es->fn[j - 1].aliases++;
		else
			es->fn[j++] = es->fn[i];
	}
	es->nfn = j;
	return 0;
}

/* Section 0's sh_size when the file counts more sections than e_shnum
 * holds (e_shnum 0), or 0: none can be read there. */
static uint64_t elfsyms_extended_count(struct elfread *r, uint64_t shoff, uint64_t shentsize, uint64_t *link)
{
	uint8_t sh0[sizeof(Elf64_Shdr)];

	if (shentsize != ELF_SIZE(r, Shdr) || shoff > r->fsize || shentsize > r->fsize - shoff ||
	    elfread_at(r, shoff, sh0, shentsize, "section header 0"))
		return 0;
	*link = ELF_GET(r, sh0, Shdr, sh_link);
	return ELF_GET(r, sh0, Shdr, sh_size);
}

/* Reads the section header table and the section names. */
static int elfsyms_read_sections(struct elfread *r, uint64_t shoff, uint64_t shentsize, uint64_t shstrndx)
{
	const uint8_t *names;
	uint8_t *raw;
	uint64_t i, size;
	int ret;

	if (shentsize != ELF_SIZE(r, Shdr))
		return elfread_fail(r, -ENOEXEC, "section header size %llu is wrong", (unsigned long long)shentsize);
	if (!r->shnum || r->shnum > ELFSYMS_SECTION_MAX / shentsize)
		return elfread_fail(r, -ENOEXEC, "bad section count %llu", (unsigned long long)r->shnum);
	r->shstrndx = shstrndx < r->shnum ? shstrndx : 0;
	raw = malloc(r->shnum * shentsize);
	r->shdrs = calloc(r->shnum, sizeof(*r->shdrs));
	r->sects = calloc(r->shnum, sizeof(*r->sects));
	if (!raw || !r->shdrs || !r->sects) {
		free(raw);
		return elfread_fail(r, -ENOMEM, "out of memory for %llu sections", (unsigned long long)r->shnum);
	}
	ret = elfread_at(r, shoff, raw, r->shnum * shentsize, "section headers");
	for (i = 0; !ret && i < r->shnum; i++) {
		const uint8_t *p = raw + i * shentsize;
		struct elfshdr *sh = &r->shdrs[i];

		sh->name = (uint32_t)ELF_GET(r, p, Shdr, sh_name);
		sh->type = (uint32_t)ELF_GET(r, p, Shdr, sh_type);
		sh->flags = ELF_GET(r, p, Shdr, sh_flags);
		sh->addr = ELF_GET(r, p, Shdr, sh_addr);
		sh->offset = ELF_GET(r, p, Shdr, sh_offset);
		sh->size = ELF_GET(r, p, Shdr, sh_size);
		sh->link = (uint32_t)ELF_GET(r, p, Shdr, sh_link);
		sh->info = (uint32_t)ELF_GET(r, p, Shdr, sh_info);
		sh->entsize = ELF_GET(r, p, Shdr, sh_entsize);
	}
	free(raw);
	if (!ret && r->shstrndx)
		ret = elfread_section(r, r->shstrndx, &names, &size);
	return ret;
}

/* Checks the ELF header, then reads the section header table and the
 * section names, or when there are none (e_shoff 0, or e_shnum 0 without
 * a count in section 0) what the program headers describe (elfdyn.c). */
static int elfsyms_read_header(struct elfread *r)
{
	uint8_t eh[sizeof(Elf64_Ehdr)];
	uint64_t shoff, ehsize, shentsize, shstrndx, link = 0;
	int ret;

	if (r->fsize < EI_NIDENT)
		return elfread_fail(r, -ENOEXEC, "not an ELF file (too short)");
	ret = elfread_at(r, 0, eh, EI_NIDENT, "ELF identification");
	if (ret)
		return ret;
	if (memcmp(eh, ELFMAG, SELFMAG))
		return elfread_fail(r, -ENOEXEC, "not an ELF file");
	if (eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64)
		return elfread_fail(r, -ENOTSUP, "unsupported ELF class %u", eh[EI_CLASS]);
	if (eh[EI_DATA] != ELFDATA2LSB)
		return elfread_fail(r, -ENOTSUP, "unsupported byte order (%s)",
		                    eh[EI_DATA] == ELFDATA2MSB ? "big-endian" : "unknown");
	r->is64 = eh[EI_CLASS] == ELFCLASS64;
	ehsize = ELF_SIZE(r, Ehdr);
	ret = elfread_at(r, 0, eh, ehsize, "ELF header");
	if (ret)
		return ret;
	r->es->elf_class = eh[EI_CLASS];
	r->es->type = (uint16_t)ELF_GET(r, eh, Ehdr, e_type);
	r->machine = r->es->machine = (uint16_t)ELF_GET(r, eh, Ehdr, e_machine);
	if (r->es->type != ET_EXEC && r->es->type != ET_DYN)
		return elfread_fail(r, -ENOTSUP, "unsupported file type %u (not an executable or shared object)",
		                    r->es->type);
	if (!(r->is64 ? r->machine == EM_X86_64 || r->machine == EM_AARCH64 : r->machine == EM_ARM))
		return elfread_fail(r, -ENOTSUP, "unsupported machine %u for ELFCLASS%d", r->machine,
		                    r->is64 ? 64 : 32);
	shoff = ELF_GET(r, eh, Ehdr, e_shoff);
	shentsize = ELF_GET(r, eh, Ehdr, e_shentsize);
	r->shnum = ELF_GET(r, eh, Ehdr, e_shnum);
	shstrndx = ELF_GET(r, eh, Ehdr, e_shstrndx);
	/* more than SHN_LORESERVE sections: the numbers are in section 0 */
	if (shoff && (!r->shnum || shstrndx == SHN_XINDEX)) {
		uint64_t count = elfsyms_extended_count(r, shoff, shentsize, &link);

		if (!r->shnum)
			r->shnum = count;
		if (shstrndx == SHN_XINDEX)
			shstrndx = link;
	}
	if (!shoff || !r->shnum) {
		r->no_shdrs = r->es->from_phdrs = true;
		return elfdyn_read(r, eh);
	}
	return elfsyms_read_sections(r, shoff, shentsize, shstrndx);
}

/* Hands the string tables names point into to es and frees the rest. */
static int elfsyms_keep_strings(struct elfread *r)
{
	uint64_t i;

	for (i = 0; i < r->shnum; i++) {
		if (!r->sects[i].keep)
			continue;
		if (!r->es->strtabs) {
			r->es->strtabs = calloc(r->shnum, sizeof(*r->es->strtabs));
			if (!r->es->strtabs)
				return elfread_fail(r, -ENOMEM, "out of memory");
		}
		r->es->strtabs[r->es->nstrtabs++] = (char *)r->sects[i].data;
		r->sects[i].data = NULL;
	}
	return 0;
}

int elfsyms_open(const char *path, struct elfsyms **out, char *err, size_t errlen)
{
	struct elfread r = { .fd = -1, .path = path, .err = err, .errlen = errlen };
	struct stat st;
	uint64_t i;
	int ret;

	*out = NULL;
	err[0] = '\0';
	r.es = calloc(1, sizeof(*r.es));
	if (!r.es) {
		ret = elfread_fail(&r, -ENOMEM, "out of memory");
		goto out;
	}
	/* O_NONBLOCK: a planted FIFO must not hang the reader */
	r.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (r.fd < 0 || fstat(r.fd, &st)) {
		ret = elfread_fail(&r, -errno, "%s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = elfread_fail(&r, -ENOEXEC, "not a regular file");
		goto out;
	}
	r.fsize = (uint64_t)st.st_size;
	ret = elfsyms_read_header(&r);
	if (!ret)
		ret = elfsyms_read_functions(&r);
	if (!ret)
		ret = elfplt_read(&r);
	if (!ret)
		ret = elfsyms_keep_strings(&r);
out:
	if (r.fd >= 0)
		close(r.fd);
	for (i = 0; r.sects && i < r.shnum; i++)
		free(r.sects[i].data);
	free(r.sects);
	free(r.shdrs);
	free(r.loads);
	if (ret)
		elfsyms_free(r.es);
	else
		*out = r.es;
	return ret;
}

void elfsyms_free(struct elfsyms *es)
{
	size_t i;

	if (!es)
		return;
	for (i = 0; i < es->nstrtabs; i++)
		free(es->strtabs[i]);
	free(es->strtabs);
	free(es->fn);
	free(es->plt);
	free(es);
}
