/* The patch planner for 32-bit ARM (see dpatch.h).  An ARM function's first
 * instruction is replaced by a b to its trampoline; a Thumb function's
 * first 4 bytes (one 32-bit instruction or two 16-bit ones; with the rest
 * of an IT block one of them opens) by a b.w.  The instructions move to the
 * trampoline (ARM or Thumb code, as the function's), each PC-relative one
 * rewritten as a load of the address or value it meant from a literal the
 * runtime fills in (LP_PLAN_ABS32), each branch as a load of pc.
 *
 * The runtime places a function's code at a 4-aligned address (after its
 * 16-byte stub, in a trampoline area of 8-aligned pieces): the literal
 * loads here count on that. */
#include <string.h>

#include "dyntrace/dpatch_impl.h"

#define ARM_IP 12u
#define ARM_LR 14u
#define ARM_PC 15u
#define ARM_AL 0xeu
/* literals and far jumps of one function's code, at most (an IT block of
 * 4 instructions each needing one, and the way back) */
#define ARM_LITS_MAX 12u

static const char *const pc_why = "it starts with an instruction that reads pc, of a kind the planner does not move";

enum far_kind {
	FAR_ARM_B,     /* ARM b<cond>: imm24 */
	FAR_THUMB_B,   /* Thumb 16-bit b<cond>: imm8 */
	FAR_THUMB_CBZ, /* Thumb cbz/cbnz: i:imm5 */
};

/* One function's relocated code being built: its instructions, then the
 * far jumps its conditional branches reach, then the literal pool. */
struct armbuf {
	struct reloc_buf *rb;
	bool thumb;
	bool full;
	unsigned nlit, nfar;
	struct {
		uint32_t at;    /* the load from the literal (pc-relative) */
		uint64_t value; /* an address of the file: the bias is added */
	} lit[ARM_LITS_MAX];
	struct {
		uint32_t at; /* the branch to the far jump */
		uint64_t target;
		enum far_kind kind;
	} far[ARM_LITS_MAX];
};

static int64_t sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static uint16_t rd16(const uint8_t *b)
{
	return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t rd32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void wr16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *b, uint32_t v)
{
	wr16(b, (uint16_t)v);
	wr16(b + 2, (uint16_t)(v >> 16));
}

static void put16(struct armbuf *ab, uint16_t hw)
{
	if (ab->rb->len + 2 > CODE_MAX) {
		ab->full = true;
		return;
	}
	wr16(ab->rb->code + ab->rb->len, hw);
	ab->rb->len += 2;
}

/* an ARM instruction, or a 32-bit Thumb one (h1 first) */
static void put32(struct armbuf *ab, uint32_t insn)
{
	put16(ab, (uint16_t)insn);
	put16(ab, (uint16_t)(insn >> 16));
}

static void put_t32(struct armbuf *ab, uint16_t h1, uint16_t h2)
{
	put16(ab, h1);
	put16(ab, h2);
}

/* ldr rt, [pc, #literal]: the literal holds value (+ bias) */
static void load(struct armbuf *ab, unsigned rt, uint64_t value)
{
	if (ab->nlit == ARM_LITS_MAX) {
		ab->full = true;
		return;
	}
	ab->lit[ab->nlit].at = ab->rb->len;
	ab->lit[ab->nlit++].value = value;
	if (ab->thumb)
		put_t32(ab, 0xf8df, (uint16_t)(rt << 12));
	else
		put32(ab, 0xe59f0000u | rt << 12);
}

/* to target (bit 0: Thumb code), through a load of pc, which interworks */
static void jump(struct armbuf *ab, uint64_t target)
{
	load(ab, ARM_PC, target);
}

/* A conditional branch (its offset still 0) to a jump to target, placed
 * after the function's code. */
static void far_branch(struct armbuf *ab, uint32_t insn, enum far_kind kind, uint64_t target)
{
	if (ab->nfar == ARM_LITS_MAX) {
		ab->full = true;
		return;
	}
	ab->far[ab->nfar].at = ab->rb->len;
	ab->far[ab->nfar].kind = kind;
	ab->far[ab->nfar++].target = target;
	if (kind == FAR_ARM_B)
		put32(ab, insn);
	else
		put16(ab, (uint16_t)insn);
}

/* The far jumps and the literal pool after the code; NULL or why not. */
static const char *finish(struct armbuf *ab)
{
	struct reloc_buf *rb = ab->rb;

	for (unsigned i = 0; i < ab->nfar && !ab->full; i++) {
		uint32_t at = ab->far[i].at, d = rb->len - (at + (ab->thumb ? 4 : 8));
		uint8_t *c = rb->code + at;

		if (ab->far[i].kind == FAR_ARM_B)
			wr32(c, rd32(c) | ((d >> 2) & 0xffffffu));
		else if (ab->far[i].kind == FAR_THUMB_B && d <= 254)
			wr16(c, (uint16_t)(rd16(c) | d >> 1));
		else if (ab->far[i].kind == FAR_THUMB_CBZ && d <= 126)
			wr16(c, (uint16_t)(rd16(c) | ((d >> 6) & 1) << 9 | ((d >> 1) & 0x1f) << 3));
		else
			ab->full = true;
		jump(ab, ab->far[i].target);
	}
	if (ab->thumb && (rb->len & 2))
		put16(ab, 0xbf00); /* nop: the pool is 4-aligned */
	for (unsigned i = 0; i < ab->nlit && !ab->full; i++) {
		uint32_t at = ab->lit[i].at, pos = rb->len;
		uint8_t *c = rb->code + at;

		if (rb->nrel == RELOCS_MAX || rb->len + 4 > CODE_MAX) {
			ab->full = true;
			break;
		}
		rb->rel[rb->nrel].at = pos;
		rb->rel[rb->nrel].end = 0;
		rb->rel[rb->nrel].kind = LP_PLAN_ABS32;
		rb->rel[rb->nrel++].target = ab->lit[i].value;
		wr32(rb->code + pos, 0);
		rb->len += 4;
		if (ab->thumb)
			wr16(c + 2, (uint16_t)(rd16(c + 2) | (pos - ((at + 4) & ~3u))));
		else if (pos >= at + 8)
			wr32(c, rd32(c) | (pos - (at + 8)));
		else /* the literal right after its load: before pc */
			wr32(c, (rd32(c) & ~(1u << 23)) | (at + 8 - pos));
	}
	return ab->full ? "its first instructions grow too long when moved" : NULL;
}

/* An ARM data-processing immediate: imm8 rotated right by twice rot. */
static uint32_t arm_imm(uint32_t insn)
{
	uint32_t v = insn & 0xff, rot = ((insn >> 8) & 15) * 2;

	return rot ? (v >> rot) | (v << (32 - rot)) : v;
}

/* ARM data processing and the miscellaneous instructions in its space
 * (bx, blx, mrs, movw, ...), multiplies and the extra loads and stores. */
static const char *arm_dp(struct armbuf *ab, uint32_t insn, uint64_t a, bool *ends)
{
	bool imm = insn & (1u << 25), s = insn & (1u << 20);
	uint32_t op = (insn >> 21) & 15, rn = (insn >> 16) & 15, rd = (insn >> 12) & 15, rm = insn & 15;
	bool uses_rn = op != 0xd && op != 0xf; /* mov, mvn have none */

	if (!imm && (insn & 0x90) == 0x90) {
		/* the extra loads and stores: ldrh, ldrd, ... */
		if ((insn & 0x60) && rn == ARM_PC)
			return pc_why;
		put32(ab, insn);
		return NULL;
	}
	if ((op & 0xc) == 0x8 && !s) { /* bx, blx, mrs, msr, clz; movw, movt */
		if (!imm && (insn & 0x0ffffff0u) == 0x012fff10u) {
			if (rm == ARM_PC)
				return pc_why;
			*ends = true;
		}
		put32(ab, insn);
		return NULL;
	}
	if (!((uses_rn && rn == ARM_PC) || (!imm && rm == ARM_PC) ||
	      (!imm && (insn & 0x10) && ((insn >> 8) & 15) == ARM_PC))) {
		*ends = rd == ARM_PC && op != 0x8 && op != 0x9 && op != 0xa && op != 0xb;
		put32(ab, insn);
		return NULL;
	}
	if (insn >> 28 != ARM_AL || rd == ARM_PC || (!imm && (insn & 0x10)))
		return pc_why;
	if (imm && !s && (op == 0x4 || op == 0x2)) { /* adr: add/sub rd, pc, #imm */
		load(ab, rd, op == 0x4 ? a + 8 + arm_imm(insn) : a + 8 - arm_imm(insn));
		return NULL;
	}
	/* add r3, pc, r3 (position-independent code) and the like: pc's
	 * value from ip, free at a function's entry */
	if ((uses_rn && rn == ARM_IP) || (!imm && rm == ARM_IP))
		return pc_why;
	load(ab, ARM_IP, a + 8);
	if (uses_rn && rn == ARM_PC)
		insn = (insn & ~0x000f0000u) | ARM_IP << 16;
	if (!imm && rm == ARM_PC)
		insn = (insn & ~15u) | ARM_IP;
	put32(ab, insn);
	return NULL;
}

/* The ARM instruction at a, moved; NULL or why not.  ends: it does not go
 * on to the next one. */
static const char *arm_reloc(struct armbuf *ab, uint32_t insn, uint64_t a, bool *ends)
{
	uint32_t cond = insn >> 28, rn = (insn >> 16) & 15, rt = (insn >> 12) & 15;

	*ends = false;
	if (cond == 0xf) {
		if ((insn & 0xfe000000u) == 0xfa000000u) { /* blx imm: a call into Thumb code */
			load(ab, ARM_LR, a + 4);
			jump(ab, (a + 8 + (uint64_t)(sext(insn & 0xffffffu, 24) * 4) + ((insn >> 23) & 2)) | 1);
			*ends = true;
		} else if ((insn & 0xfe7f0000u) != 0xf45f0000u) /* not a pld/pli of a literal: a hint */
			put32(ab, insn);
		return NULL;
	}
	if ((insn & 0x0f900fffu) == 0x01900f9fu)
		return "it starts with a load-exclusive, whose retry loop the trampoline would break";
	if ((insn & 0x0e000000u) == 0x0a000000u) { /* b, bl */
		uint64_t target = a + 8 + (uint64_t)(sext(insn & 0xffffffu, 24) * 4);

		if (cond == ARM_AL) {
			if (insn & (1u << 24)) /* bl: the call returns into the function itself */
				load(ab, ARM_LR, a + 4);
			jump(ab, target);
			*ends = true;
		} else if (insn & (1u << 24))
			return "it starts with a conditional call";
		else
			far_branch(ab, insn & 0xff000000u, FAR_ARM_B, target);
		return NULL;
	}
	if ((insn & 0x0f3f0000u) == 0x051f0000u) { /* ldr, ldrb rt, [pc, #imm] */
		uint32_t off = insn & 0xfff, base = rt == ARM_PC ? ARM_IP : rt;

		if (cond != ARM_AL)
			return pc_why;
		load(ab, base, (insn & (1u << 23)) ? a + 8 + off : a + 8 - off);
		put32(ab, (insn & 0xf0400000u) | 0x05900000u | base << 16 | rt << 12);
		*ends = rt == ARM_PC;
		return NULL;
	}
	if ((insn & 0x0f3f0e00u) == 0x0d1f0a00u) { /* vldr, pc-relative */
		uint32_t off = (insn & 0xff) * 4;

		if (cond != ARM_AL)
			return pc_why;
		load(ab, ARM_IP, (insn & (1u << 23)) ? a + 8 + off : a + 8 - off);
		put32(ab, (insn & 0xff70ff00u) | 0x00800000u | ARM_IP << 16);
		return NULL;
	}
	if ((insn & 0x0c000000u) == 0)
		return arm_dp(ab, insn, a, ends);
	if ((insn & 0x0e000010u) == 0x06000010u) { /* media instructions */
		put32(ab, insn);
		return NULL;
	}
	if ((insn & 0x0c000000u) == 0x04000000u) { /* other loads and stores */
		if (rn == ARM_PC || ((insn & (1u << 25)) && (insn & 15) == ARM_PC) ||
		    (!(insn & (1u << 20)) && rt == ARM_PC))
			return pc_why;
		*ends = rt == ARM_PC;
	} else if (((insn & 0x0e000000u) == 0x08000000u || (insn & 0x0e000000u) == 0x0c000000u) && rn == ARM_PC)
		return pc_why;                        /* ldm, stm, coprocessor loads and stores */
	else if ((insn & 0x0e108000u) == 0x08108000u) /* ldm with pc: a return */
		*ends = true;
	put32(ab, insn);
	return NULL;
}

/* Thumb: a 32-bit instruction begins with this halfword. */
static bool t_wide(uint16_t h1)
{
	return (h1 >> 11) >= 0x1d;
}

/* The offset of b.w, bl, blx (T4, T1, T2 encodings). */
static int64_t t_off24(uint16_t h1, uint16_t h2)
{
	uint32_t s = (h1 >> 10) & 1, i1 = !(((h2 >> 13) & 1) ^ s), i2 = !(((h2 >> 11) & 1) ^ s);

	return sext(s << 24 | i1 << 23 | i2 << 22 | (uint32_t)(h1 & 0x3ff) << 12 | (uint32_t)(h2 & 0x7ff) << 1, 25);
}

/* The offset of b<cond>.w (T3). */
static int64_t t_off20(uint16_t h1, uint16_t h2)
{
	uint32_t s = (h1 >> 10) & 1, j1 = (h2 >> 13) & 1, j2 = (h2 >> 11) & 1;

	return sext(s << 20 | j2 << 19 | j1 << 18 | (uint32_t)(h1 & 0x3f) << 12 | (uint32_t)(h2 & 0x7ff) << 1, 21);
}

/* A 16-bit Thumb instruction at a, moved. */
static const char *t16_reloc(struct armbuf *ab, uint16_t hw, uint64_t a, bool *ends)
{
	uint64_t pc = a + 4, pca = pc & ~3ull;

	*ends = false;
	if ((hw & 0xf800) == 0x4800) { /* ldr rt, [pc, #imm] */
		unsigned rt = (hw >> 8) & 7;

		load(ab, rt, pca + (hw & 0xffu) * 4);
		put16(ab, (uint16_t)(0x6800 | rt << 3 | rt)); /* ldr rt, [rt] */
	} else if ((hw & 0xf800) == 0xa000)                   /* adr */
		load(ab, (hw >> 8) & 7, pca + (hw & 0xffu) * 4);
	else if ((hw & 0xfc00) == 0x4400) { /* add, cmp, mov of any registers; bx, blx */
		unsigned op = (hw >> 8) & 3, rm = (hw >> 3) & 15, rdn = ((hw >> 4) & 8) | (hw & 7);

		if (op == 3) {
			if (rm == ARM_PC)
				return pc_why;
			*ends = !(hw & 0x80);
			put16(ab, hw);
		} else if (rm == ARM_PC && op == 2 && rdn != ARM_PC) /* mov rd, pc */
			load(ab, rdn, pc);
		else if (rm == ARM_PC && op == 0 && rdn != ARM_PC && rdn != ARM_IP) { /* add rd, pc */
			load(ab, ARM_IP, pc);
			put16(ab, (uint16_t)(0x4400 | (rdn & 8) << 4 | ARM_IP << 3 | (rdn & 7)));
		} else if (rm == ARM_PC || (rdn == ARM_PC && op != 2))
			return pc_why;
		else {
			*ends = rdn == ARM_PC;
			put16(ab, hw);
		}
	} else if ((hw & 0xf000) == 0xd000 && ((hw >> 8) & 0xe) != 0xe) /* b<cond> */
		far_branch(ab, hw & 0xff00u, FAR_THUMB_B, (pc + (uint64_t)sext((hw & 0xffu) << 1, 9)) | 1);
	else if ((hw & 0xf800) == 0xe000) { /* b */
		jump(ab, (pc + (uint64_t)sext((hw & 0x7ffu) << 1, 12)) | 1);
		*ends = true;
	} else if ((hw & 0xf500) == 0xb100) /* cbz, cbnz */
		far_branch(ab, hw & 0xfd07u, FAR_THUMB_CBZ,
		           (pc + (((hw >> 3) & 0x1fu) << 1 | ((hw >> 9) & 1u) << 6)) | 1);
	else {
		*ends = (hw & 0xff00) == 0xbd00; /* pop {..., pc} */
		put16(ab, hw);
	}
	return NULL;
}

/* A 32-bit Thumb instruction at a, moved. */
static const char *t32_reloc(struct armbuf *ab, uint16_t h1, uint16_t h2, uint64_t a, bool *ends)
{
	uint64_t pc = a + 4, pca = pc & ~3ull;
	bool up = h1 & 0x80;

	*ends = false;
	if ((h1 & 0xf800) == 0xf000 && (h2 & 0x8000)) {
		switch (h2 & 0xd000) {
		case 0x9000: /* b.w */
			jump(ab, (pc + (uint64_t)t_off24(h1, h2)) | 1);
			*ends = true;
			return NULL;
		case 0xd000: /* bl: the call returns into the function itself */
			load(ab, ARM_LR, (a + 4) | 1);
			jump(ab, (pc + (uint64_t)t_off24(h1, h2)) | 1);
			*ends = true;
			return NULL;
		case 0xc000: /* blx: into ARM code */
			load(ab, ARM_LR, (a + 4) | 1);
			jump(ab, pca + (uint64_t)t_off24(h1, h2));
			*ends = true;
			return NULL;
		case 0x8000:
			if (((h1 >> 6) & 0xe) != 0xe) { /* b<cond>.w, as a 16-bit one */
				far_branch(ab, 0xd000u | ((h1 >> 6) & 15u) << 8, FAR_THUMB_B,
				           (pc + (uint64_t)t_off20(h1, h2)) | 1);
				return NULL;
			}
			break; /* msr, mrs, hints, barriers */
		}
	} else if ((h1 & 0xfe1f) == 0xf81f) { /* ldr, ldrb, ldrh, ldrsb, ldrsh rt, [pc, #imm] */
		unsigned rt = h2 >> 12;

		if (rt == ARM_PC)
			return ((h1 >> 5) & 3) == 2 ? "it starts with a jump through a table" : NULL; /* pld, pli */
		load(ab, rt, up ? pca + (h2 & 0xfffu) : pca - (h2 & 0xfffu));
		put_t32(ab, (uint16_t)((h1 & 0xff70) | 0x0080 | rt), h2 & 0xf000);
		return NULL;
	} else if ((h1 & 0xff7f) == 0xe95f) { /* ldrd, pc-relative */
		load(ab, ARM_IP, up ? pca + (h2 & 0xffu) * 4 : pca - (h2 & 0xffu) * 4);
		put_t32(ab, 0xe9d0 | ARM_IP, h2 & 0xff00);
		return NULL;
	} else if ((h1 & 0xff3f) == 0xed1f && (h2 & 0x0e00) == 0x0a00) { /* vldr, pc-relative */
		load(ab, ARM_IP, up ? pca + (h2 & 0xffu) * 4 : pca - (h2 & 0xffu) * 4);
		put_t32(ab, (uint16_t)((h1 & 0xff70) | 0x0080 | ARM_IP), h2 & 0xff00);
		return NULL;
	} else if ((h1 & 0xfbff) == 0xf20f || (h1 & 0xfbff) == 0xf2af) { /* adr.w: addw, subw rd, pc, #imm */
		uint32_t imm = ((h1 >> 10) & 1u) << 11 | ((h2 >> 12) & 7u) << 8 | (h2 & 0xffu);

		load(ab, (h2 >> 8) & 15, (h1 & 0x80) ? pca - imm : pca + imm);
		return NULL;
	} else if (h1 == 0xe8df && (h2 & 0xffe0) == 0xf000)
		return "it starts with a jump through a table";
	else if ((h1 & 0xfff0) == 0xe850 || ((h1 & 0xfff0) == 0xe8d0 && (h2 & 0x00c0) == 0x0040))
		return "it starts with a load-exclusive, whose retry loop the trampoline would break";
	else if ((h1 & 0xee1f) == 0xec1f) /* other coprocessor loads, pc-relative */
		return pc_why;
	*ends = (h1 == 0xe8bd && (h2 & 0x8000)) || (h1 == 0xf85d && h2 == 0xfb04); /* pop.w with pc */
	put_t32(ab, h1, h2);
	return NULL;
}

/* Whether the Thumb instruction stays as it is when moved (one of an IT
 * block must). */
static bool t_plain(uint16_t h1, uint16_t h2, unsigned len, uint64_t a)
{
	struct reloc_buf rb = { .len = 0 };
	struct armbuf ab = { .rb = &rb, .thumb = true };
	bool ends;
	const char *why = len == 2 ? t16_reloc(&ab, h1, a, &ends) : t32_reloc(&ab, h1, h2, a, &ends);

	return !why && !ab.nlit && !ab.nfar && rb.len == len && rd16(rb.code) == h1 &&
	       (len == 2 || rd16(rb.code + 2) == h2);
}

/* The direct branches of every function of the file (ARM and Thumb code),
 * for the Thumb entries whose second halfword a b.w would replace. */
static int targets_thumb(struct dpatch *p, uint64_t a, const uint8_t *b, uint64_t size)
{
	for (uint64_t off = 0; off + 2 <= size;) {
		uint16_t h1 = rd16(b + off), h2;
		uint64_t at = a + off, pc = at + 4;
		int r = 0;

		if (!t_wide(h1)) {
			if ((h1 & 0xf000) == 0xd000 && ((h1 >> 8) & 0xe) != 0xe)
				r = dpatch_target_add(p, at, pc + (uint64_t)sext((h1 & 0xffu) << 1, 9));
			else if ((h1 & 0xf800) == 0xe000)
				r = dpatch_target_add(p, at, pc + (uint64_t)sext((h1 & 0x7ffu) << 1, 12));
			else if ((h1 & 0xf500) == 0xb100)
				r = dpatch_target_add(p, at, pc + (((h1 >> 3) & 0x1fu) << 1 | ((h1 >> 9) & 1u) << 6));
			off += 2;
		} else {
			if (off + 4 > size)
				break;
			h2 = rd16(b + off + 2);
			if ((h1 & 0xf800) == 0xf000 && (h2 & 0x8000)) {
				if (h2 & 0x1000) /* b.w, bl */
					r = dpatch_target_add(p, at, pc + (uint64_t)t_off24(h1, h2));
				else if (h2 & 0x4000) /* blx */
					r = dpatch_target_add(p, at, (pc & ~3ull) + (uint64_t)t_off24(h1, h2));
				else if ((h2 & 0xd000) == 0x8000 && ((h1 >> 6) & 0xe) != 0xe)
					r = dpatch_target_add(p, at, pc + (uint64_t)t_off20(h1, h2));
			}
			off += 4;
		}
		if (r)
			return r;
	}
	return 0;
}

int dplan_arm_targets(struct dpatch *p)
{
	for (size_t i = 0; i < p->es->nfn; i++) {
		const struct elfsyms_fn *f = &p->es->fn[i];
		uint64_t a = f->addr & ~1ull;
		size_t avail;
		const uint8_t *b = dpatch_bytes_at(p, a, &avail);
		uint64_t size = f->size < avail ? f->size : avail;
		int r = 0;

		if (!b)
			continue;
		if (f->addr & 1)
			r = targets_thumb(p, a, b, size);
		else
			for (uint64_t off = 0; !r && off + 4 <= size; off += 4) {
				uint32_t insn = rd32(b + off);
				uint64_t t = a + off + 8 + (uint64_t)(sext(insn & 0xffffffu, 24) * 4);

				if ((insn & 0xfe000000u) == 0xfa000000u)
					r = dpatch_target_add(p, a + off, t + ((insn >> 23) & 2));
				else if (insn >> 28 != 0xf && (insn & 0x0e000000u) == 0x0a000000u)
					r = dpatch_target_add(p, a + off, t);
			}
		if (r)
			return r;
	}
	dpatch_targets_sort(p);
	return 0;
}

/* An ARM function: its first instruction moved, a b at its place. */
static const char *plan_arm(struct dpatch *p, const struct elfsyms_fn *f)
{
	struct reloc_buf rb = { .len = 0 };
	struct armbuf ab = { .rb = &rb, .thumb = false };
	uint64_t a = f->addr;
	size_t avail;
	const uint8_t *b = dpatch_bytes_at(p, a, &avail);
	const char *why;
	bool ends;

	if (!b || avail < 4 || f->size < 4)
		return "not in an executable segment of the file";
	if (a & 3)
		return "not at an instruction boundary";
	why = arm_reloc(&ab, rd32(b), a, &ends);
	if (why)
		return why;
	if (!ends)
		jump(&ab, a + 4);
	why = finish(&ab);
	return why ? why : dpatch_append(p, f, 4, b, &rb);
}

/* A Thumb function: its first 4 bytes' instructions (and the rest of an
 * IT block among them) moved, a b.w at their place. */
static const char *plan_thumb(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next)
{
	struct reloc_buf rb = { .len = 0 };
	struct armbuf ab = { .rb = &rb, .thumb = true };
	uint64_t a = f->addr & ~1ull, end = a + f->size;
	size_t avail;
	const uint8_t *b = dpatch_bytes_at(p, a, &avail);
	const struct branch *bt;
	uint32_t off = 0;
	unsigned it = 0;
	bool ends = false;
	const char *why = NULL;

	if (!b)
		return "not in an executable segment of the file";
	while ((off < 4 || it) && !ends) {
		uint16_t h1, h2 = 0;
		unsigned len;

		if (a + off >= end)
			return "too short for a b.w (4 bytes), and it does not end in a return or a branch";
		h1 = rd16(b + off);
		len = t_wide(h1) ? 4 : 2;
		if (off + len > avail || a + off + len > end)
			return "its first instructions run past its end";
		if (len == 4)
			h2 = rd16(b + off + 2);
		if (it) {
			if (!t_plain(h1, h2, len, a + off))
				return "an IT block at its entry holds an instruction that reads pc or branches";
			if (len == 2)
				put16(&ab, h1);
			else
				put_t32(&ab, h1, h2);
			it--;
		} else if (len == 2 && (h1 & 0xff00) == 0xbf00 && (h1 & 0xf)) {
			it = 4u - (unsigned)__builtin_ctz(h1 & 0xfu); /* the instructions it makes conditional */
			put16(&ab, h1);
		} else
			why = len == 2 ? t16_reloc(&ab, h1, a + off, &ends) : t32_reloc(&ab, h1, h2, a + off, &ends);
		if (why)
			return why;
		off += len;
	}
	if (avail < 4)
		return "too short for a b.w (4 bytes), at the end of its segment";
	if ((next & ~1ull) < a + (off > 4 ? off : 4))
		return "too short for a b.w (4 bytes), and another function follows at once";
	bt = dpatch_target_inside(p, a, a + (off > 4 ? off : 4));
	if (bt)
		return dpatch_why_at(p, "a branch lands at +%llu, inside the 4 bytes a b.w would replace",
		                     bt->target - a);
	if (!ends)
		jump(&ab, (a + off) | 1);
	why = finish(&ab);
	return why ? why : dpatch_append(p, f, 4, b, &rb);
}

const char *dplan_arm(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next)
{
	return (f->addr & 1) ? plan_thumb(p, f, next) : plan_arm(p, f);
}
