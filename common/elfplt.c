/* The PLT call slots of an ELF file (see elfsyms.h): each JUMP_SLOT
 * relocation of .rela.plt or .rel.plt with its GOT slot, and the stub that
 * jumps through that slot; then x86-64's .plt.got entries.  A stub is known by decoding it: the order of
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
#define PLT_ARM_THUMB_B_BACK 0xe7fdu
#define PLT_ARM_THUMB_NOP 0x46c0u
#define PLT_ARM_THUMB_ENTRY 4u

/* Without section headers, executable segments are decoded this many
 * bytes at a time */
#define PLT_SCAN_CHUNK (64u << 10)

/* x86-64 .plt.got entries: jmp *disp32(%rip) and a 2-byte nop; with IBT,
 * endbr64 before it and a longer nop */
#define PLT_GOT_ENTRY 8u
#define PLT_GOT_ENTRY_IBT 16u

/* x86-64: jmp *disp32(%rip), alone or after endbr64 and/or bnd */
static bool plt_got_x86_64(const uint8_t *e, uint64_t len, uint64_t addr, uint64_t *got)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned at = len >= sizeof(endbr64) && !memcmp(e, endbr64, sizeof(endbr64)) ? sizeof(endbr64) : 0;

	if (at < len && e[at] == 0xf2) /* bnd */
		at++;
	if (len < at + 6 || e[at] != 0xff || e[at + 1] != 0x25)
		return false;
	*got = addr + at + 6 + (uint64_t)(int64_t)(int32_t)(uint32_t)elf_le(e + at + 2, 4);
	return true;
}

/* aarch64: adrp x16, page; ldr x17, [x16, #off]; add x16, x16, #off; br x17 */
static bool plt_got_aarch64(const uint8_t *e, uint64_t len, uint64_t addr, uint64_t *got)
{
	uint32_t adrp, ldr, add, br;
	uint64_t page;

	if (len < 16)
		return false;
	adrp = (uint32_t)elf_le(e, 4);
	ldr = (uint32_t)elf_le(e + 4, 4);
	add = (uint32_t)elf_le(e + 8, 4);
	br = (uint32_t)elf_le(e + 12, 4);
	if ((adrp & 0x9f00001fu) != 0x90000010u || (ldr & 0xffc003ffu) != 0xf9400211u ||
	    (add & 0xffc003ffu) != 0x91000210u || br != 0xd61f0220u)
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
static bool plt_got_arm(const uint8_t *e, uint64_t len, uint64_t addr, uint64_t *got)
{
	uint32_t i0, i1, i2;

	if (len < 12)
		return false;
	i0 = (uint32_t)elf_le(e, 4);
	i1 = (uint32_t)elf_le(e + 4, 4);
	i2 = (uint32_t)elf_le(e + 8, 4);
	if ((i0 & 0xfffff000u) != 0xe28fc000u || (i1 & 0xfffff000u) != 0xe28cc000u || (i2 & 0xfffff000u) != 0xe5bcf000u)
		return false;
	*got = (uint32_t)(addr + 8 + arm_imm(i0) + arm_imm(i1) + (i2 & 0xfff));
	return true;
}

/* The GOT slot the stub of machine at addr (len bytes at e) jumps through;
 * false when it is not a stub of a known layout. */
static bool plt_stub_got(uint16_t machine, const uint8_t *e, uint64_t len, uint64_t addr, uint64_t *got)
{
	if (machine == EM_X86_64)
		return plt_got_x86_64(e, len, addr, got);
	if (machine == EM_AARCH64)
		return plt_got_aarch64(e, len, addr, got);
	return plt_got_arm(e, len, addr, got);
}

/* A slot by its GOT address, and the stub found for it */
struct plt_key {
	uint64_t got;
	size_t slot; /* an index in es->plt, or in a relocation table */
	uint64_t stub;
	uint32_t flags;
	bool twice; /* two places jump through the slot: the stub is unknown */
};

static int plt_key_cmp(const void *pa, const void *pb)
{
	const struct plt_key *a = pa, *b = pb;

	return a->got < b->got ? -1 : a->got > b->got;
}

/* Notes the stub at addr (bytes at e, avail of them, before bytes before
 * them) when it jumps through a slot of keys. */
static void plt_note_stub(const struct elfread *r, struct plt_key *keys, size_t nkeys, const uint8_t *e, uint64_t avail,
                          uint64_t before, uint64_t addr)
{
	struct plt_key key = { 0 }, *hit;

	if (!plt_stub_got(r->machine, e, avail, addr, &key.got))
		return;
	hit = bsearch(&key, keys, nkeys, sizeof(*keys), plt_key_cmp);
	if (!hit)
		return;
	if (hit->stub)
		hit->twice = true;
	hit->stub = addr;
	if (r->machine == EM_ARM && before >= PLT_ARM_THUMB_ENTRY &&
	    elf_le(e - PLT_ARM_THUMB_ENTRY, 2) == PLT_ARM_THUMB_BX_PC &&
	    (elf_le(e - 2, 2) == PLT_ARM_THUMB_B_BACK || elf_le(e - 2, 2) == PLT_ARM_THUMB_NOP)) {
		hit->stub -= PLT_ARM_THUMB_ENTRY;
		hit->flags |= ELFSYMS_PLT_THUMB_ENTRY;
	}
}

/* Without section headers: the stubs in the executable PT_LOAD segments,
 * at every address aligned as the PLT's entries are, read a chunk at a
 * time. */
static int plt_scan_segments(struct elfread *r, const struct plt_layout *l, struct plt_key *keys, size_t nkeys)
{
	uint64_t pos, p, w0, w1, end;
	uint8_t *buf = malloc(PLT_SCAN_CHUNK + PLT_ARM_THUMB_ENTRY + l->entry);
	size_t i;
	int ret = 0;

	if (!buf)
		return elfread_fail(r, -ENOMEM, "out of memory");
	for (i = 0; !ret && i < r->nloads; i++) {
		const struct elfload *s = &r->loads[i];

		if (!(s->flags & PF_X))
			continue;
		for (pos = 0; !ret && pos < s->filesz; pos += PLT_SCAN_CHUNK) {
			/* the chunk, the bytes of a Thumb entry before it and of a
			 * stub after it */
			w0 = pos - (pos < PLT_ARM_THUMB_ENTRY ? pos : PLT_ARM_THUMB_ENTRY);
			end = s->filesz - pos < PLT_SCAN_CHUNK ? s->filesz : pos + PLT_SCAN_CHUNK;
			w1 = s->filesz - end < l->entry ? s->filesz : end + l->entry;
			ret = elfread_at(r, s->offset + w0, buf, w1 - w0, "executable segment");
			p = pos + (l->step - (s->vaddr + pos) % l->step) % l->step;
			for (; !ret && p < end && l->entry <= w1 - p; p += l->step)
				plt_note_stub(r, keys, nkeys, buf + (p - w0), l->entry, p - w0, s->vaddr + p);
		}
	}
	free(buf);
	return ret;
}

/* Sets the stub of each slot whose GOT entry a stub of the PLT (or without
 * section headers, of the executable segments) jumps through. */
static int plt_find_stubs(struct elfread *r)
{
	struct elfsyms *es = r->es;
	const struct plt_layout *l;
	struct plt_key *keys;
	const uint8_t *data;
	struct elfshdr sh;
	uint64_t idx = 0, size, off;
	size_t i;
	int ret = 0;

	/* the first found decides: with IBT, .plt.sec; without section
	 * headers, the first layout of the machine gives the alignment */
	for (l = plt_layouts; l < plt_layouts + sizeof(plt_layouts) / sizeof(plt_layouts[0]); l++)
		if (l->machine == r->machine && (r->no_shdrs || (idx = elfread_find(r, l->section))))
			break;
	if (l == plt_layouts + sizeof(plt_layouts) / sizeof(plt_layouts[0]) || !es->nplt)
		return 0;
	if (!r->no_shdrs) {
		elfread_shdr(r, idx, &sh);
		if (sh.type != SHT_PROGBITS || sh.size < l->header || (sh.size - l->header) % l->step)
			return 0;
		ret = elfread_section(r, idx, &data, &size);
		if (ret)
			return ret;
	}
	keys = calloc(es->nplt, sizeof(*keys));
	if (!keys)
		return elfread_fail(r, -ENOMEM, "out of memory for %zu PLT slots", es->nplt);
	for (i = 0; i < es->nplt; i++)
		keys[i] = (struct plt_key){ .got = es->plt[i].got, .slot = i };
	qsort(keys, es->nplt, sizeof(*keys), plt_key_cmp);
	if (r->no_shdrs)
		ret = plt_scan_segments(r, l, keys, es->nplt);
	else
		for (off = l->header; off + l->entry <= size; off += l->step)
			plt_note_stub(r, keys, es->nplt, data + off, l->entry, off - l->header, sh.addr + off);
	for (i = 0; i < es->nplt; i++) {
		if (keys[i].twice)
			continue;
		es->plt[keys[i].slot].stub = keys[i].stub;
		es->plt[keys[i].slot].flags |= keys[i].flags;
	}
	free(keys);
	return ret;
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

/* A relocation table read with its symbol table */
struct plt_rels {
	const uint8_t *rels, *syms;
	uint64_t nrel, entsize, nsyms, strndx;
	bool rela;
};

/* Reads relocation section idx and the symbol table it links to. */
static int plt_read_rels(struct elfread *r, uint64_t idx, struct plt_rels *t)
{
	struct elfshdr sh;
	int ret;

	elfread_shdr(r, idx, &sh);
	t->rela = sh.type == SHT_RELA;
	t->entsize = t->rela ? ELF_SIZE(r, Rela) : ELF_SIZE(r, Rel);
	if ((sh.type != SHT_RELA && sh.type != SHT_REL) || sh.entsize != t->entsize)
		return elfread_fail(r, -ENOEXEC, "section %llu is not a relocation table", (unsigned long long)idx);
	ret = elfread_symtab(r, sh.link, &t->syms, &t->nsyms, &t->strndx);
	if (!ret)
		ret = elfread_section(r, idx, &t->rels, &t->nrel);
	t->nrel /= t->entsize;
	return ret;
}

/* Relocation i's type, symbol and offset. */
static uint32_t plt_rel(const struct elfread *r, const struct plt_rels *t, uint64_t i, uint64_t *sym, uint64_t *off)
{
	const uint8_t *rel = t->rels + i * t->entsize;
	uint64_t info = t->rela ? ELF_GET(r, rel, Rela, r_info) : ELF_GET(r, rel, Rel, r_info);

	*sym = r->is64 ? ELF64_R_SYM(info) : ELF32_R_SYM(info);
	*off = t->rela ? ELF_GET(r, rel, Rela, r_offset) : ELF_GET(r, rel, Rel, r_offset);
	return (uint32_t)(r->is64 ? ELF64_R_TYPE(info) : ELF32_R_TYPE(info));
}

/* Appends slot {name of symbol sym, got, stub, flags} to es->plt (which has
 * room for it). */
static int plt_add(struct elfread *r, const struct plt_rels *t, uint64_t i, uint64_t sym, uint64_t got, uint64_t stub,
                   uint32_t flags)
{
	struct elfsyms_plt *p = &r->es->plt[r->es->nplt];

	if (sym >= t->nsyms)
		return elfread_fail(r, -ENOEXEC, "PLT relocation %llu: symbol %llu out of range", (unsigned long long)i,
		                    (unsigned long long)sym);
	p->name = elfread_symname(r, t->strndx, t->syms + sym * ELF_SIZE(r, Sym));
	if (!p->name)
		return -ENOEXEC;
	p->got = got;
	p->stub = stub;
	p->flags = flags;
	r->es->nplt++;
	return 0;
}

/* x86-64: appends the .plt.got entries, each a jump through a GLOB_DAT
 * slot of .rela.dyn, whose symbol names it.  An entry that decodes as no
 * such jump (another layout) is left out. */
static int plt_read_got_entries(struct elfread *r)
{
	uint64_t idx = r->machine == EM_X86_64 ? elfread_find(r, ".plt.got") : 0, dyn, size, off, i, sym, got;
	struct elfsyms *es = r->es;
	struct plt_key *keys = NULL, key, *hit;
	struct elfsyms_plt *grown;
	const uint8_t *data;
	struct plt_rels t;
	struct elfshdr sh;
	size_t nkeys = 0;
	int ret;

	dyn = idx ? elfread_find(r, ".rela.dyn") : 0;
	if (!dyn)
		return 0;
	elfread_shdr(r, idx, &sh);
	if (sh.type != SHT_PROGBITS || (sh.entsize != PLT_GOT_ENTRY && sh.entsize != PLT_GOT_ENTRY_IBT) ||
	    sh.size % sh.entsize)
		return 0;
	ret = plt_read_rels(r, dyn, &t);
	if (!ret)
		ret = elfread_section(r, idx, &data, &size);
	if (ret)
		return ret;
	grown = realloc(es->plt, (es->nplt + size / sh.entsize + 1) * sizeof(*es->plt));
	keys = malloc((t.nrel ? t.nrel : 1) * sizeof(*keys));
	if (grown)
		es->plt = grown;
	if (!grown || !keys) {
		ret = elfread_fail(r, -ENOMEM, "out of memory for %llu relocations", (unsigned long long)t.nrel);
		goto out;
	}
	for (i = 0; i < t.nrel; i++)
		if (plt_rel(r, &t, i, &sym, &got) == R_X86_64_GLOB_DAT && sym)
			keys[nkeys++] = (struct plt_key){ .got = got, .slot = i };
	qsort(keys, nkeys, sizeof(*keys), plt_key_cmp);
	for (off = 0; !ret && off < size; off += sh.entsize) {
		if (!plt_got_x86_64(data + off, sh.entsize, sh.addr + off, &key.got))
			continue;
		hit = bsearch(&key, keys, nkeys, sizeof(*keys), plt_key_cmp);
		if (hit) {
			plt_rel(r, &t, hit->slot, &sym, &got);
			ret = plt_add(r, &t, hit->slot, sym, got, sh.addr + off, ELFSYMS_PLT_GOT);
		}
	}
out:
	free(keys);
	return ret;
}

int elfplt_read(struct elfread *r)
{
	uint32_t jump_slot = plt_jump_slot(r->machine);
	struct elfsyms *es = r->es;
	uint64_t idx, i, sym, got;
	struct plt_rels t;
	int ret;

	idx = elfread_find(r, ".rela.plt");
	if (!idx)
		idx = elfread_find(r, ".rel.plt");
	if (idx) {
		ret = plt_read_rels(r, idx, &t);
		if (ret)
			return ret;
		es->plt = calloc(t.nrel ? t.nrel : 1, sizeof(*es->plt));
		if (!es->plt)
			return elfread_fail(r, -ENOMEM, "out of memory for %llu relocations",
			                    (unsigned long long)t.nrel);
		for (i = 0; i < t.nrel; i++) {
			if (plt_rel(r, &t, i, &sym, &got) != jump_slot)
				continue;
			ret = plt_add(r, &t, i, sym, got, 0, 0);
			if (ret)
				return ret;
		}
		ret = plt_find_stubs(r);
		if (ret)
			return ret;
	}
	return plt_read_got_entries(r);
}
