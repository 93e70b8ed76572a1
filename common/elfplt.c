/* The PLT call slots of an ELF file (see elfsyms.h): each JUMP_SLOT
 * relocation of .rela.plt or .rel.plt with its GOT slot, and the stub that
 * jumps through that slot.  A stub is known by decoding it: the order of
 * the relocations need not be the PLT's (x86-64 puts IRELATIVE relocations
 * last but their stubs among the others), so only the GOT slot a stub
 * loads its target from says whose stub it is. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/elfsyms_impl.h"

/* A PLT: a header, then stubs of entry bytes, one every step bytes (arm:
 * some stubs have a 4-byte Thumb entry before them).  Other layouts (arm
 * --long-plt, aarch64 BTI or PAC entries) do not decode as these stubs and
 * leave the stubs unknown. */
struct plt_layout {
	uint16_t machine;
	const char *section;
	uint64_t header, entry, step;
};

static const struct plt_layout plt_layouts[] = {
	/* IBT: calls go to .plt.sec; .plt keeps the lazy-binding entries */
	{ EM_X86_64, ".plt.sec", 0, 16, 16 },
	{ EM_X86_64, ".plt", 16, 16, 16 },
	{ EM_AARCH64, ".plt", 32, 16, 16 },
	{ EM_ARM, ".plt", 20, 12, 4 },
};

/* arm: the Thumb entry "bx pc" (then a 2-byte branch back or nop) that a
 * stub called from Thumb code has before its ARM entry */
#define PLT_ARM_THUMB_BX_PC 0x4778u
#define PLT_ARM_THUMB_ENTRY 4u

/* x86-64: jmp *disp32(%rip), alone or after endbr64 and/or bnd */
static bool plt_got_x86_64(const uint8_t *e, uint64_t addr, uint64_t *got)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned at = memcmp(e, endbr64, sizeof(endbr64)) ? 0 : sizeof(endbr64);

	if (e[at] == 0xf2) /* bnd */
		at++;
	if (e[at] != 0xff || e[at + 1] != 0x25)
		return false;
	*got = addr + at + 6 + (uint64_t)(int64_t)(int32_t)(uint32_t)elf_le(e + at + 2, 4);
	return true;
}

/* aarch64: adrp x16, page; ldr x17, [x16, #off]; add x16, x16, #off; br x17 */
static bool plt_got_aarch64(const uint8_t *e, uint64_t addr, uint64_t *got)
{
	uint32_t adrp = (uint32_t)elf_le(e, 4), ldr = (uint32_t)elf_le(e + 4, 4);
	uint64_t page;

	if ((adrp & 0x9f00001fu) != 0x90000010u || (ldr & 0xffc003ffu) != 0xf9400211u)
		return false;
	/* immhi:immlo, 21 bits signed, in pages */
	page = ((uint64_t)(adrp >> 5 & 0x7ffff) << 2 | (adrp >> 29 & 3)) << 12;
	if (page & (1ull << 32))
		page |= ~0ull << 33;
	*got = (addr & ~0xfffull) + page + (uint64_t)(ldr >> 10 & 0xfff) * 8;
	return true;
}

/* An arm data-processing immediate: imm8 rotated right by twice rot. */
static uint32_t arm_imm(uint32_t insn)
{
	uint32_t imm = insn & 0xff, rot = (insn >> 8 & 0xf) * 2;

	return rot ? imm >> rot | imm << (32 - rot) : imm;
}

/* arm: add ip, pc, #a; add ip, ip, #b; ldr pc, [ip, #c]! (pc reads as +8) */
static bool plt_got_arm(const uint8_t *e, uint64_t addr, uint64_t *got)
{
	uint32_t i0 = (uint32_t)elf_le(e, 4), i1 = (uint32_t)elf_le(e + 4, 4), i2 = (uint32_t)elf_le(e + 8, 4);

	if ((i0 & 0xfffff000u) != 0xe28fc000u || (i1 & 0xfffff000u) != 0xe28cc000u || (i2 & 0xfffff000u) != 0xe5bcf000u)
		return false;
	*got = (uint32_t)(addr + 8 + arm_imm(i0) + arm_imm(i1) + (i2 & 0xfff));
	return true;
}

static int plt_by_got(const void *pa, const void *pb)
{
	const struct elfsyms_plt *a = pa, *b = pb;

	return a->got < b->got ? -1 : a->got > b->got;
}

/* Sets the stub of each slot whose GOT entry a stub of the PLT jumps
 * through. */
static int plt_find_stubs(struct elfread *r)
{
	struct elfsyms *es = r->es;
	const struct plt_layout *l;
	struct elfsyms_plt *sorted, key, *hit; /* stub: an index in es->plt */
	const uint8_t *data;
	struct elfshdr sh;
	uint64_t idx = 0, size, off, got = 0;
	bool ok;
	int ret;

	for (l = plt_layouts; l < plt_layouts + sizeof(plt_layouts) / sizeof(plt_layouts[0]); l++)
		if (l->machine == r->machine && (idx = elfread_find(r, l->section)))
			break; /* the first found decides: with IBT, .plt.sec */
	if (!idx || !es->nplt)
		return 0;
	elfread_shdr(r, idx, &sh);
	if (sh.type != SHT_PROGBITS || sh.size < l->header || (sh.size - l->header) % l->step)
		return 0;
	ret = elfread_section(r, idx, &data, &size);
	if (ret)
		return ret;
	/* the slots sorted by GOT address, each with its index in es->plt */
	sorted = malloc(es->nplt * sizeof(*sorted));
	if (!sorted)
		return elfread_fail(r, -ENOMEM, "out of memory for %zu PLT slots", es->nplt);
	for (size_t i = 0; i < es->nplt; i++)
		sorted[i] = (struct elfsyms_plt){ .got = es->plt[i].got, .stub = i };
	qsort(sorted, es->nplt, sizeof(*sorted), plt_by_got);
	for (off = l->header; off + l->entry <= size; off += l->step) {
		if (r->machine == EM_X86_64)
			ok = plt_got_x86_64(data + off, sh.addr + off, &got);
		else if (r->machine == EM_AARCH64)
			ok = plt_got_aarch64(data + off, sh.addr + off, &got);
		else
			ok = plt_got_arm(data + off, sh.addr + off, &got);
		key.got = got;
		hit = ok ? bsearch(&key, sorted, es->nplt, sizeof(*sorted), plt_by_got) : NULL;
		if (!hit)
			continue;
		es->plt[hit->stub].stub = sh.addr + off;
		if (r->machine == EM_ARM && off >= l->header + PLT_ARM_THUMB_ENTRY &&
		    elf_le(data + off - PLT_ARM_THUMB_ENTRY, 2) == PLT_ARM_THUMB_BX_PC) {
			es->plt[hit->stub].stub -= PLT_ARM_THUMB_ENTRY;
			es->plt[hit->stub].flags |= ELFSYMS_PLT_THUMB_ENTRY;
		}
	}
	free(sorted);
	return 0;
}

static uint32_t plt_jump_slot(uint16_t machine)
{
	switch (machine) {
	case EM_X86_64:
		return R_X86_64_JUMP_SLOT;
	case EM_AARCH64:
		return R_AARCH64_JUMP_SLOT;
	default:
		return R_ARM_JUMP_SLOT;
	}
}

int elfplt_read(struct elfread *r)
{
	uint64_t idx, i, nrel, nsyms, strndx, entsize;
	uint32_t jump_slot = plt_jump_slot(r->machine);
	const uint8_t *rels, *syms;
	struct elfsyms *es = r->es;
	struct elfshdr sh;
	bool rela;
	int ret;

	idx = elfread_find(r, ".rela.plt");
	if (!idx)
		idx = elfread_find(r, ".rel.plt");
	if (!idx)
		return 0;
	elfread_shdr(r, idx, &sh);
	rela = sh.type == SHT_RELA;
	entsize = rela ? ELF_SIZE(r, Rela) : ELF_SIZE(r, Rel);
	if ((sh.type != SHT_RELA && sh.type != SHT_REL) || sh.entsize != entsize)
		return elfread_fail(r, -ENOEXEC, "section %llu is not a relocation table", (unsigned long long)idx);
	ret = elfread_symtab(r, sh.link, &syms, &nsyms, &strndx);
	if (!ret)
		ret = elfread_section(r, idx, &rels, &nrel);
	if (ret)
		return ret;
	nrel /= entsize;
	es->plt = calloc(nrel ? nrel : 1, sizeof(*es->plt));
	if (!es->plt)
		return elfread_fail(r, -ENOMEM, "out of memory for %llu relocations", (unsigned long long)nrel);
	for (i = 0; i < nrel; i++) {
		const uint8_t *rel = rels + i * entsize;
		uint64_t info = rela ? ELF_GET(r, rel, Rela, r_info) : ELF_GET(r, rel, Rel, r_info);
		uint64_t sym = r->is64 ? ELF64_R_SYM(info) : ELF32_R_SYM(info);
		uint32_t type = (uint32_t)(r->is64 ? ELF64_R_TYPE(info) : ELF32_R_TYPE(info));
		struct elfsyms_plt *p = &es->plt[es->nplt];

		if (type != jump_slot)
			continue;
		if (sym >= nsyms)
			return elfread_fail(r, -ENOEXEC, "PLT relocation %llu: symbol %llu out of range",
			                    (unsigned long long)i, (unsigned long long)sym);
		p->name = elfread_symname(r, strndx, syms + sym * ELF_SIZE(r, Sym));
		if (!p->name)
			return -ENOEXEC;
		p->got = rela ? ELF_GET(r, rel, Rela, r_offset) : ELF_GET(r, rel, Rel, r_offset);
		es->nplt++;
	}
	return plt_find_stubs(r);
}
