/* The ELF facts a call graph needs beyond the function symbols and PLT
 * stubs (common/elfsyms.c): sections, the dynamic section, relocations
 * of GOT slots and of addresses, init/fini arrays and ARM mapping
 * symbols, read with libelf from the object's image. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/callgraph/cgraph_impl.h"

/* Most sections, mapping symbols, slots and references one object may have. */
#define CG_REGIONS_MAX 4096u
#define CG_MAPS_MAX (4u << 20)
#define CG_SLOTS_MAX (1u << 20)
#define CG_REFS_MAX (16u << 20)

/* Relocation types, per machine: those that bind a GOT slot to a symbol,
 * those that store this object's address plus an addend, and those that
 * store a symbol's address. */
struct cg_reltypes {
	uint32_t jump_slot, glob_dat, relative, irelative, abs;
};

static const struct cg_reltypes reltypes_x86_64 = { R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT, R_X86_64_RELATIVE,
	                                            R_X86_64_IRELATIVE, R_X86_64_64 };
static const struct cg_reltypes reltypes_aarch64 = { R_AARCH64_JUMP_SLOT, R_AARCH64_GLOB_DAT, R_AARCH64_RELATIVE,
	                                             R_AARCH64_IRELATIVE, R_AARCH64_ABS64 };
static const struct cg_reltypes reltypes_arm = { R_ARM_JUMP_SLOT, R_ARM_GLOB_DAT, R_ARM_RELATIVE, R_ARM_IRELATIVE,
	                                         R_ARM_ABS32 };

static int fail(struct cg_build *b, int rc, const char *why)
{
	snprintf(b->err, b->errlen, "%s", why);
	return rc;
}

static int add_region(struct cg_build *b, const GElf_Shdr *sh, const char *name)
{
	struct cg_region *r;
	int rc = 0;

	if (sh->sh_offset > b->len || sh->sh_size > b->len - sh->sh_offset)
		return fail(b, -EBADMSG, "a section lies outside the file");
	r = cg_grow(&b->regions, &b->nregions, &b->regions_cap, sizeof(*r), CG_REGIONS_MAX, &rc);
	if (!r)
		return rc == -E2BIG ? fail(b, rc, "too many sections") : rc;
	r->addr = sh->sh_addr;
	r->size = sh->sh_size;
	r->data = b->image + sh->sh_offset;
	r->exec = (sh->sh_flags & SHF_EXECINSTR) != 0;
	r->pointers =
	    !r->exec &&
	    (sh->sh_type == SHT_INIT_ARRAY || sh->sh_type == SHT_FINI_ARRAY || sh->sh_type == SHT_PREINIT_ARRAY ||
	     (sh->sh_type == SHT_PROGBITS && !(name && !strncmp(name, ".eh_frame", 9)) &&
	      !(name && !strcmp(name, ".gcc_except_table")) && !(name && !strcmp(name, ".interp"))));
	r->plt =
	    r->exec && name &&
	    (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got") || !strcmp(name, ".iplt"));
	if (r->exec && sh->sh_addr > UINT64_MAX - sh->sh_size)
		return fail(b, -EBADMSG, "an executable section wraps around the address space");
	b->o->code_bytes += r->exec ? sh->sh_size : 0;
	return 0;
}

static int add_u64(struct cg_build *b, uint64_t **arr, uint32_t *n, uint32_t *cap, uint64_t v)
{
	int rc = 0;
	uint64_t *p = cg_grow(arr, n, cap, sizeof(*p), CG_REFS_MAX, &rc);

	if (!p)
		return rc == -E2BIG ? fail(b, rc, "too many address references") : rc;
	*p = v;
	return 0;
}

static int add_slot(struct cg_build *b, uint64_t addr, const char *name, uint64_t value, bool has_value)
{
	int rc = 0;
	struct cg_slot *s = cg_grow(&b->slots, &b->nslots, &b->slots_cap, sizeof(*s), CG_SLOTS_MAX, &rc);

	if (!s)
		return rc == -E2BIG ? fail(b, rc, "too many GOT slots") : rc;
	s->addr = addr;
	s->name = name;
	s->value = value;
	s->has_value = has_value;
	return 0;
}

/* The name of symbol i of the table in section symscn (NULL when out of
 * range or unnamed); *value gets its value. */
static const char *sym_name(Elf *e, Elf_Scn *symscn, size_t i, uint64_t *value)
{
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Data *d;
	const char *name;

	if (!symscn || !gelf_getshdr(symscn, &sh) || !(d = elf_getdata(symscn, NULL)) || !gelf_getsym(d, (int)i, &sym))
		return NULL;
	if (i > INT32_MAX)
		return NULL;
	*value = sym.st_value;
	name = elf_strptr(e, sh.sh_link, sym.st_name);
	return name && *name ? name : NULL;
}

/* One relocation: a slot bound to a symbol, or an address stored. */
static int take_reloc(struct cg_build *b, const struct cg_reltypes *t, Elf *e, Elf_Scn *symscn, uint64_t offset,
                      uint32_t type, size_t symi, int64_t addend, bool rela)
{
	uint64_t symval = 0, value;
	const char *name;

	if (type == t->jump_slot || type == t->glob_dat) {
		name = symi ? sym_name(e, symscn, symi, &symval) : NULL;
		if (!name)
			return 0;
		return add_slot(b, offset, name, symval, symval != 0);
	}
	if (type == t->relative || type == t->irelative) {
		if (!rela && !cg_elf_word(b, offset, b->o->is64 ? 8 : 4, (uint64_t *)&addend))
			return 0;
		value = (uint64_t)addend;
		if (add_slot(b, offset, NULL, value, true))
			return -ENOMEM;
		return add_u64(b, &b->refs, &b->nrefs, &b->refs_cap, value);
	}
	if (type == t->abs && symi) {
		if (!sym_name(e, symscn, symi, &symval) || !symval)
			return 0;
		if (!rela && !cg_elf_word(b, offset, 4, (uint64_t *)&addend))
			addend = 0;
		return add_u64(b, &b->refs, &b->nrefs, &b->refs_cap, symval + (uint64_t)addend);
	}
	return 0;
}

static int read_relocs(struct cg_build *b, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const struct cg_reltypes *t)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	Elf_Scn *symscn = sh->sh_link ? elf_getscn(e, sh->sh_link) : NULL;
	bool rela = sh->sh_type == SHT_RELA;
	size_t n, i;
	int rc;

	if (!d || !sh->sh_entsize)
		return 0;
	n = d->d_size / sh->sh_entsize;
	if (n > INT32_MAX)
		return fail(b, -EBADMSG, "a relocation section is too large");
	for (i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Rel rl;

		if (rela) {
			if (!gelf_getrela(d, (int)i, &r))
				break;
		} else {
			if (!gelf_getrel(d, (int)i, &rl))
				break;
			r.r_offset = rl.r_offset;
			r.r_info = rl.r_info;
			r.r_addend = 0;
		}
		rc =
		    take_reloc(b, t, e, symscn, r.r_offset, b->o->is64 ? GELF_R_TYPE(r.r_info) : ELF32_R_TYPE(r.r_info),
		               b->o->is64 ? GELF_R_SYM(r.r_info) : ELF32_R_SYM(r.r_info), r.r_addend, rela);
		if (rc)
			return rc;
	}
	return 0;
}

/* Symbols: mapping symbols ($a, $t, $d, $x) of .symtab, and the defined
 * functions of .dynsym (exported). */
static int read_symbols(struct cg_build *b, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n, i, entsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	bool dyn = sh->sh_type == SHT_DYNSYM;
	int rc = 0;

	if (!d || !entsize)
		return 0;
	n = d->d_size / entsize;
	if (n > INT32_MAX)
		return fail(b, -EBADMSG, "a symbol table is too large");
	for (i = 1; i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		if (dyn) {
			unsigned type = GELF_ST_TYPE(s.st_info), bind = GELF_ST_BIND(s.st_info);
			unsigned vis = GELF_ST_VISIBILITY(s.st_other);

			if ((type == STT_FUNC || type == STT_GNU_IFUNC) && s.st_shndx != SHN_UNDEF &&
			    (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
			    (vis == STV_DEFAULT || vis == STV_PROTECTED)) {
				struct cg_export *x = cg_grow(&b->exported, &b->nexported, &b->exported_cap, sizeof(*x),
				                              CG_FUNCS_MAX, &rc);

				if (!x)
					return rc == -E2BIG ? fail(b, rc, "too many dynamic symbols") : rc;
				x->addr = b->o->machine == CG_MACHINE_ARM ? s.st_value & ~1ull : s.st_value;
				x->name = elf_strptr(e, sh->sh_link, s.st_name);
				if (!x->name || !*x->name)
					b->nexported--;
			}
			continue;
		}
		if ((GELF_ST_TYPE(s.st_info) == STT_FUNC || GELF_ST_TYPE(s.st_info) == STT_GNU_IFUNC) && !s.st_size &&
		    s.st_shndx != SHN_UNDEF && s.st_shndx < SHN_LORESERVE && s.st_value) {
			/* a function of no stated size (the C runtime's, hand-written
			 * code): common/elfsyms.c leaves them out */
			struct cg_cand *c =
			    cg_grow(&b->zsyms, &b->nzsyms, &b->zsyms_cap, sizeof(*c), CG_FUNCS_MAX, &rc);

			if (!c)
				return rc == -E2BIG ? fail(b, rc, "too many symbols") : rc;
			c->name = elf_strptr(e, sh->sh_link, s.st_name);
			c->addr = s.st_value;
			c->bind = GELF_ST_BIND(s.st_info);
			if (b->o->machine == CG_MACHINE_ARM && (s.st_value & 1)) {
				c->addr &= ~1ull;
				c->flags |= CG_FUNC_THUMB;
			}
			if (!c->name || !*c->name)
				b->nzsyms--;
			continue;
		}
		if (GELF_ST_TYPE(s.st_info) != STT_NOTYPE || GELF_ST_BIND(s.st_info) != STB_LOCAL)
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name || name[0] != '$' || !name[1] || (name[2] && name[2] != '.'))
			continue;
		if (name[1] != 'a' && name[1] != 't' && name[1] != 'd' && name[1] != 'x')
			continue;
		{
			struct cg_mapsym *m = cg_grow(&b->maps, &b->nmaps, &b->maps_cap, sizeof(*m), CG_MAPS_MAX, &rc);

			if (!m)
				return rc == -E2BIG ? fail(b, rc, "too many mapping symbols") : rc;
			m->addr = s.st_value;
			m->kind = name[1];
		}
	}
	return 0;
}

/* Each entry of an init/fini array: a root.  A position-independent
 * object on a machine with addends in its relocations may hold zeros
 * there: its RELATIVE slots in the array say the addresses instead. */
static int read_array(struct cg_build *b, const GElf_Shdr *sh)
{
	unsigned w = b->o->is64 ? 8 : 4;
	uint64_t a, v;
	int rc;

	for (a = sh->sh_addr; a + w <= sh->sh_addr + sh->sh_size && a >= sh->sh_addr; a += w) {
		const struct cg_slot *s = cg_slot_at(b, a);

		if (s && !s->name && s->has_value)
			v = s->value;
		else if (!cg_elf_word(b, a, w, &v))
			continue;
		if (b->o->machine == CG_MACHINE_ARM)
			v &= ~1ull;
		if (v && v != UINT64_MAX && (rc = add_u64(b, &b->roots, &b->nroots, &b->roots_cap, v)))
			return rc;
	}
	return 0;
}

/* .eh_frame_hdr's binary search table: the start of every function with
 * call frame information, in the encoding every linker writes (a table of
 * pairs of 4-byte offsets from the header); another encoding is passed
 * over. */
static int read_eh_frame_hdr(struct cg_build *b, const GElf_Shdr *sh)
{
	const uint8_t *p;
	uint32_t count, i;
	int32_t off;
	int rc;

	if (sh->sh_offset > b->len || sh->sh_size > b->len - sh->sh_offset || sh->sh_size < 12)
		return 0;
	p = b->image + sh->sh_offset;
	/* version 1; eh_frame_ptr as a 4-byte value; the count as udata4; the
	 * table as datarel sdata4 */
	if (p[0] != 1 || ((p[1] & 0x0f) != 0x03 && (p[1] & 0x0f) != 0x0b) || p[2] != 0x03 || p[3] != 0x3b)
		return 0;
	memcpy(&count, p + 8, 4);
	if (count > (sh->sh_size - 12) / 8)
		return 0;
	for (i = 0; i < count; i++) {
		memcpy(&off, p + 12 + (size_t)i * 8, 4);
		if ((rc = add_u64(b, &b->unwind, &b->nunwind, &b->unwind_cap, sh->sh_addr + (uint64_t)(int64_t)off)))
			return rc;
	}
	return 0;
}

/* .ARM.exidx: pairs of words, the first a 31-bit offset from itself to a
 * function's start. */
static int read_arm_exidx(struct cg_build *b, const GElf_Shdr *sh)
{
	const uint8_t *p;
	uint64_t i, n;
	int rc;

	if (sh->sh_offset > b->len || sh->sh_size > b->len - sh->sh_offset)
		return 0;
	p = b->image + sh->sh_offset;
	n = sh->sh_size / 8;
	for (i = 0; i < n && i < CG_FUNCS_MAX; i++) {
		uint32_t w;
		int32_t off;

		memcpy(&w, p + i * 8, 4);
		off = (int32_t)(w << 1) >> 1; /* prel31 */
		if ((rc = add_u64(b, &b->unwind, &b->nunwind, &b->unwind_cap,
		                  (sh->sh_addr + i * 8 + (uint64_t)(int64_t)off) & 0xfffffffeull)))
			return rc;
	}
	return 0;
}

static int read_dynamic(struct cg_build *b, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n, i, entsize = gelf_fsize(e, ELF_T_DYN, 1, EV_CURRENT), nneeded = 0, k = 0;
	const char *rpath = NULL, *runpath = NULL;
	int rc;

	if (!d || !entsize || b->o->needed)
		return 0; /* one dynamic section: the first */
	n = d->d_size / entsize;
	if (n > INT32_MAX)
		return fail(b, -EBADMSG, "the dynamic section is too large");
	for (i = 0; i < n; i++) {
		GElf_Dyn dyn;

		if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		nneeded += dyn.d_tag == DT_NEEDED;
	}
	if (nneeded > 4096)
		return fail(b, -E2BIG, "too many DT_NEEDED entries");
	b->o->needed = calloc(nneeded ? nneeded : 1, sizeof(*b->o->needed));
	if (!b->o->needed)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Dyn dyn;
		const char *s;

		if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		switch (dyn.d_tag) {
		case DT_NEEDED:
		case DT_SONAME:
		case DT_RPATH:
		case DT_RUNPATH:
			s = elf_strptr(e, sh->sh_link, dyn.d_un.d_val);
			if (!s)
				break;
			if (dyn.d_tag == DT_NEEDED && k < nneeded)
				b->o->needed[k++] = s;
			else if (dyn.d_tag == DT_SONAME)
				b->o->soname = s;
			else if (dyn.d_tag == DT_RPATH)
				rpath = s;
			else if (dyn.d_tag == DT_RUNPATH)
				runpath = s;
			break;
		case DT_INIT:
		case DT_FINI:
			if (!dyn.d_un.d_ptr)
				break;
			if ((rc = add_u64(b, &b->roots, &b->nroots, &b->roots_cap, dyn.d_un.d_ptr)))
				return rc;
			if (dyn.d_tag == DT_INIT)
				b->init_addr = dyn.d_un.d_ptr;
			else
				b->fini_addr = dyn.d_un.d_ptr;
			break;
		case DT_FLAGS_1:
			if (dyn.d_un.d_val & DF_1_PIE)
				b->o->pie = true;
			break;
		default:
			break;
		}
	}
	b->o->nneeded = (uint32_t)k;
	b->runpath = runpath ? runpath : rpath;
	return 0;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct cg_slot *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->name == NULL) - (y->name == NULL); /* a named one first */
}

static int cmp_map(const void *a, const void *b)
{
	const struct cg_mapsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_export(const void *a, const void *b)
{
	const struct cg_export *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int cg_elf_read(struct cg_build *b)
{
	const struct cg_reltypes *t;
	struct cg_object *o = b->o;
	Elf *e;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t shstrndx, nphdr = 0, i;
	bool interp = false;
	int rc = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail(b, -ENOMEM, "libelf cannot start");
	e = elf_memory((char *)b->image, b->len);
	if (!e)
		return fail(b, -ENOEXEC, "not an ELF file");
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		rc = fail(b, -ENOEXEC, "not an ELF file");
		goto out;
	}
	if (eh.e_shoff > b->len || (uint64_t)eh.e_shnum * eh.e_shentsize > b->len - eh.e_shoff || eh.e_phoff > b->len ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > b->len - eh.e_phoff) {
		rc = fail(b, -EBADMSG, "truncated: its headers lie past the end of the file");
		goto out;
	}
	if (eh.e_ident[EI_DATA] != ELFDATA2LSB) {
		rc = fail(b, -EPROTONOSUPPORT, "a big-endian object (only little-endian ones are read)");
		goto out;
	}
	o->is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	if (eh.e_machine == EM_X86_64 && o->is64) {
		o->machine = CG_MACHINE_X86_64;
		t = &reltypes_x86_64;
	} else if (eh.e_machine == EM_AARCH64 && o->is64) {
		o->machine = CG_MACHINE_AARCH64;
		t = &reltypes_aarch64;
	} else if (eh.e_machine == EM_ARM && !o->is64) {
		o->machine = CG_MACHINE_ARM;
		t = &reltypes_arm;
	} else {
		snprintf(b->err, b->errlen, "machine %u (%s) is not one this reader knows (x86-64, aarch64, arm)",
		         (unsigned)eh.e_machine, o->is64 ? "64-bit" : "32-bit");
		rc = -EPROTONOSUPPORT;
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		rc = fail(b, -ENOEXEC, "not an executable or a shared object");
		goto out;
	}
	b->rela = o->machine != CG_MACHINE_ARM;
	o->entry = o->machine == CG_MACHINE_ARM ? eh.e_entry & ~1ull : eh.e_entry;
	b->entry_thumb = o->machine == CG_MACHINE_ARM && (eh.e_entry & 1);
	if (elf_getshdrstrndx(e, &shstrndx) != 0) {
		rc = fail(b, -EBADMSG, "no section headers (a file cut by sstrip is not read)");
		goto out;
	}
	if (elf_getphdrnum(e, &nphdr) == 0)
		for (i = 0; i < nphdr && i < 65536; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				interp = true;
		}
	/* sections first, then what needs them (words read from the image) */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh)) {
			rc = fail(b, -EBADMSG, "a section header cannot be read");
			goto out;
		}
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if ((sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS && sh.sh_size &&
		    (rc = add_region(b, &sh, name)))
			goto out;
		if (name && !strcmp(name, ".eh_frame_hdr") && o->machine != CG_MACHINE_ARM &&
		    (rc = read_eh_frame_hdr(b, &sh)))
			goto out;
		if (sh.sh_type == SHT_ARM_EXIDX && o->machine == CG_MACHINE_ARM && (rc = read_arm_exidx(b, &sh)))
			goto out;
	}
	if (!b->nregions) {
		rc = fail(b, -EBADMSG, "no sections with contents");
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL)
			rc = (sh.sh_flags & SHF_ALLOC) ? read_relocs(b, e, scn, &sh, t) : 0;
		else if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			rc = read_symbols(b, e, scn, &sh);
		else if (sh.sh_type == SHT_DYNAMIC)
			rc = read_dynamic(b, e, scn, &sh);
		if (rc)
			goto out;
	}
	if (b->nslots)
		qsort(b->slots, b->nslots, sizeof(*b->slots), cmp_slot);
	if (b->nmaps)
		qsort(b->maps, b->nmaps, sizeof(*b->maps), cmp_map);
	if (b->nexported)
		qsort(b->exported, b->nexported, sizeof(*b->exported), cmp_export);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if ((sh.sh_type == SHT_INIT_ARRAY || sh.sh_type == SHT_FINI_ARRAY || sh.sh_type == SHT_PREINIT_ARRAY) &&
		    (rc = read_array(b, &sh)))
			goto out;
	}
	/* a program asks for an interpreter; so does the C library (it can
	 * run), which has a soname */
	if (eh.e_type == ET_DYN && interp && !o->soname)
		o->pie = true;
	o->shared = eh.e_type == ET_DYN && !o->pie;
	if (!o->needed && !(o->needed = calloc(1, sizeof(*o->needed))))
		rc = -ENOMEM;
out:
	/* the names kept (symbols of slots, DT_NEEDED, ...) may point into
	 * libelf's memory: the handle lives as long as the object */
	b->priv->elf = e;
	return rc;
}

const struct cg_region *cg_region_at(const struct cg_build *b, uint64_t addr)
{
	for (uint32_t i = 0; i < b->nregions; i++)
		if (addr >= b->regions[i].addr && addr - b->regions[i].addr < b->regions[i].size)
			return &b->regions[i];
	return NULL;
}

bool cg_elf_word(const struct cg_build *b, uint64_t addr, unsigned width, uint64_t *value)
{
	const struct cg_region *r = cg_region_at(b, addr);
	uint64_t off;

	if (!r)
		return false;
	off = addr - r->addr;
	if (r->size - off < width)
		return false;
	if (width == 8) {
		uint64_t v;

		memcpy(&v, r->data + off, 8);
		*value = v;
	} else {
		uint32_t v;

		memcpy(&v, r->data + off, 4);
		*value = v;
	}
	return true;
}

const struct cg_slot *cg_slot_at(const struct cg_build *b, uint64_t addr)
{
	uint32_t lo = CG_BOUND(b->slots, b->nslots, struct cg_slot, addr, addr);

	return lo < b->nslots && b->slots[lo].addr == addr ? &b->slots[lo] : NULL;
}

char cg_map_at(const struct cg_build *b, uint64_t addr)
{
	uint32_t lo = addr == UINT64_MAX ? b->nmaps : CG_BOUND(b->maps, b->nmaps, struct cg_mapsym, addr, addr + 1);

	return lo ? b->maps[lo - 1].kind : 0;
}
