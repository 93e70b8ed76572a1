/* The patch planner for aarch64 (see dpatch.h): a function's first
 * instruction is replaced by a b to its trampoline and moved there, a
 * PC-relative one rewritten. */
#include <stdbool.h>
#include <string.h>

#include "dyntrace/dpatch_impl.h"

#define A64_NOP 0xd503201fu
#define A64_B 0x14000000u

static void a64_put(struct reloc_buf *rb, uint32_t insn)
{
	memcpy(rb->code + rb->len, &insn, 4);
	rb->len += 4;
}

/* b target, filled in by the runtime */
static void a64_b(struct reloc_buf *rb, uint64_t target)
{
	rb->rel[rb->nrel].at = rb->len;
	rb->rel[rb->nrel].kind = LP_PLAN_B26;
	rb->rel[rb->nrel++].target = target;
	a64_put(rb, A64_B);
}

/* an 8-byte literal, target + bias, at an 8-aligned offset */
static void a64_lit(struct reloc_buf *rb, uint64_t target)
{
	uint64_t zero = 0;

	rb->rel[rb->nrel].at = rb->len;
	rb->rel[rb->nrel].kind = LP_PLAN_ABS64;
	rb->rel[rb->nrel++].target = target;
	memcpy(rb->code + rb->len, &zero, 8);
	rb->len += 8;
}

static int64_t sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* The load of a literal, from [x16] instead: the instruction for
 * opc/V of a LDR (literal), or 0 (prfm: nothing to load). */
static uint32_t a64_load_x16(uint32_t insn)
{
	uint32_t rt = insn & 31, opc = insn >> 30, v = (insn >> 26) & 1;
	static const uint32_t gpr[4] = { 0xb9400200u, 0xf9400200u, 0xb9800200u, 0 };
	static const uint32_t fp[4] = { 0xbd400200u, 0xfd400200u, 0x3dc00200u, 0 };

	return (v ? fp[opc] : gpr[opc]) ? (v ? fp[opc] : gpr[opc]) | rt : 0;
}

/* The instruction at f->addr (a function's entry, or a probe's
 * instruction) replaced by a b to its trampoline, and moved there; a
 * PC-relative one is rewritten (at an entry x16, free there, holds an
 * address a load needs; at a probe, where every register may be live, the
 * load's own register does).  Returns the plan's entry (NULL: not
 * planned) with why set when not. */
static const char *plan_insn(struct dpatch *p, const struct elfsyms_fn *f, bool probe)
{
	struct reloc_buf rb = { .len = 0 };
	uint64_t a = f->addr, back = f->addr + 4;
	size_t avail;
	const uint8_t *b = dpatch_bytes_at(p, a, &avail);
	uint32_t insn;

	if (!b || avail < 4 || f->size < 4)
		return "not in an executable segment of the file";
	if (a & 3)
		return "not at an instruction boundary";
	memcpy(&insn, b, 4);
	if ((insn & 0x3f000000u) == 0x08000000u)
		return "it starts with a load-exclusive, whose retry loop the trampoline would break";
	if (probe && (insn & 0x3b000000u) == 0x18000000u && ((insn >> 26) & 1))
		return "a load of a floating-point literal (no register is free to move it)";
	if (probe && (insn & 0x3b000000u) == 0x18000000u) {
		/* ldr (literal) into a general register: the address into that
		 * register, then the load from it; prfm: nothing */
		uint64_t target = a + (uint64_t)(sext((insn >> 5) & 0x7ffffu, 19) * 4);
		uint32_t load = a64_load_x16(insn), rt = insn & 31;

		if (load) {
			a64_put(&rb, 0x58000080u | rt);                 /* ldr xt, 16 */
			a64_put(&rb, (load & ~(31u << 5)) | (rt << 5)); /* ldr ?t, [xt] */
		} else {
			a64_put(&rb, A64_NOP);
			a64_put(&rb, A64_NOP);
		}
		a64_b(&rb, back);
		a64_put(&rb, A64_NOP);
		a64_lit(&rb, target);
		return dpatch_append(p, f, 4, b, &rb);
	}
	if ((insn & 0x1f000000u) == 0x10000000u) { /* adr, adrp */
		uint64_t imm = ((insn >> 3) & 0x1ffffcu) | ((insn >> 29) & 3);
		uint64_t target = (insn >> 31) ? (a & ~(uint64_t)0xfff) + (uint64_t)(sext(imm, 21) * 4096)
		                               : a + (uint64_t)sext(imm, 21);

		a64_put(&rb, 0x58000040u | (insn & 31)); /* ldr xd, 8 */
		a64_b(&rb, back);
		a64_lit(&rb, target);
	} else if ((insn & 0x7c000000u) == 0x14000000u) { /* b, bl */
		uint64_t target = a + (uint64_t)(sext(insn & 0x3ffffffu, 26) * 4);

		if (insn >> 31) {                  /* bl: returns into the function itself */
			a64_put(&rb, 0x5800005eu); /* ldr x30, 8 */
			a64_b(&rb, target);
			a64_lit(&rb, back);
		} else
			a64_b(&rb, target);
	} else if ((insn & 0xff000000u) == 0x54000000u || (insn & 0x7e000000u) == 0x34000000u ||
	           (insn & 0x7e000000u) == 0x36000000u) {
		/* b.cond, cbz/cbnz (imm19), tbz/tbnz (imm14): over the way back
		 * to the branch to the target */
		bool tb = (insn & 0x7e000000u) == 0x36000000u;
		int64_t off = tb ? sext((insn >> 5) & 0x3fffu, 14) : sext((insn >> 5) & 0x7ffffu, 19);

		a64_put(&rb, (insn & (tb ? 0xfff8001fu : 0xff00001fu)) | (2u << 5));
		a64_b(&rb, back);
		a64_b(&rb, a + (uint64_t)(off * 4));
	} else if ((insn & 0x3b000000u) == 0x18000000u) { /* ldr (literal), ldrsw, prfm */
		uint64_t target = a + (uint64_t)(sext((insn >> 5) & 0x7ffffu, 19) * 4);
		uint32_t load = a64_load_x16(insn);

		a64_put(&rb, 0x58000090u); /* ldr x16, 16 */
		a64_put(&rb, load ? load : A64_NOP);
		a64_b(&rb, back);
		a64_put(&rb, A64_NOP);
		a64_lit(&rb, target);
	} else {
		a64_put(&rb, insn);
		a64_b(&rb, back);
	}
	return dpatch_append(p, f, 4, b, &rb);
}

const char *dplan_a64(struct dpatch *p, const struct elfsyms_fn *f)
{
	return plan_insn(p, f, false);
}

const char *dplan_a64_probe(struct dpatch *p, const struct elfsyms_fn *f, uint64_t at, const char *name)
{
	struct elfsyms_fn pf = { .addr = at, .size = f->addr + f->size - at, .name = name };
	size_t avail;
	const uint8_t *b = dpatch_bytes_at(p, f->addr, &avail);
	const char *why;

	if ((at - f->addr) & 3)
		return "not an instruction boundary (aarch64 instructions are 4 bytes)";
	/* between a load-exclusive and its store-exclusive a branch out
	 * clears the monitor: the loop would retry for ever.  The instruction
	 * and the 16 before it are looked at. */
	for (uint64_t k = 0; b && k <= 16 && k * 4 <= at - f->addr; k++) {
		uint64_t o = at - f->addr - k * 4;
		uint32_t insn;

		if (o + 4 > avail)
			continue;
		memcpy(&insn, b + o, 4);
		if ((insn & 0x3f000000u) == 0x08000000u)
			return "inside a load-exclusive/store-exclusive sequence (or just after one), whose retry "
			       "loop the trampoline would break";
	}
	why = plan_insn(p, &pf, true);
	if (!why)
		p->fn[p->nfn - 1].kind = LP_PLAN_PROBE;
	return why;
}
