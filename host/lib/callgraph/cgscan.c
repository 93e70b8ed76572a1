/* Decodes an object's code with capstone and records its branches: calls
 * and jumps with a known target, calls through registers or memory, calls
 * and jumps through GOT slots, and the addresses code computes or loads
 * (a function whose address is taken).  The code is decoded in stretches
 * that begin at every function start and mapping symbol, so that the
 * decoder finds the instruction boundaries again after padding or data. */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/callgraph/cgraph_impl.h"

/* Most branches kept while scanning one object. */
#define CG_RECS_MAX (64u << 20)
/* Registers tracked for computed addresses (x0-x30, r0-r15, rdi). */
#define CG_NREGS 32

/* What a register is known to hold since it was last written. */
enum reg_state {
	REG_UNKNOWN,
	REG_PAGE,  /* aarch64: adrp's page */
	REG_VALUE, /* an address or number */
	REG_SLOT,  /* loaded from this GOT slot */
	REG_LOCAL, /* aarch64: an address in the code being decoded, plus an
	            * offset (a jump table's target) */
};

struct regs {
	uint8_t state[CG_NREGS];
	uint64_t v[CG_NREGS];
};

struct scan {
	struct cg_build *b;
	csh h;
	cs_insn *insn;
	struct regs r;
	uint64_t start, end;      /* the stretch being decoded */
	uint64_t last_table_load; /* x86-64: the last movslq (b,i,4) */
	bool in_entry;            /* the stretch holds the entry point */
	bool entry_done;          /* the entry point's first call was seen */
};

static int add_rec(struct scan *s, uint64_t site, uint64_t target, uint8_t kind)
{
	int rc = 0;
	struct cg_rec *r = cg_grow(&s->b->recs, &s->b->nrecs, &s->b->recs_cap, sizeof(*r), CG_RECS_MAX, &rc);

	if (!r) {
		if (rc == -E2BIG)
			snprintf(s->b->err, s->b->errlen, "more than %u branches", CG_RECS_MAX);
		return rc;
	}
	r->site = site;
	r->target = target;
	r->kind = kind;
	return 0;
}

/* An address code holds: a function's, maybe (checked once functions are
 * known).  Only addresses inside an executable section are kept. */
static int add_ref(struct scan *s, uint64_t v)
{
	const struct cg_region *r;
	int rc = 0;
	uint64_t *p;

	if (s->b->o->machine == CG_MACHINE_ARM)
		v &= ~1ull;
	r = cg_region_at(s->b, v);
	if (!r || !r->exec)
		return 0;
	p = cg_grow(&s->b->refs, &s->b->nrefs, &s->b->refs_cap, sizeof(*p), CG_RECS_MAX, &rc);
	if (!p)
		return rc;
	*p = v;
	return 0;
}

/* The value a GOT slot will hold, when the file says (a RELATIVE slot, or
 * one bound to a symbol this object defines). */
static bool slot_value(const struct cg_build *b, uint64_t slot, uint64_t *v)
{
	const struct cg_slot *s = cg_slot_at(b, slot);

	if (!s || !s->has_value)
		return false;
	*v = s->value;
	return true;
}

/* The entry point's first call: the program's main is the first argument
 * the C runtime's start-up code hands __libc_start_main. */
static void entry_call(struct scan *s, int arg0)
{
	uint64_t v;

	if (!s->in_entry || s->entry_done)
		return;
	s->entry_done = true;
	if (arg0 < 0)
		return;
	if (s->r.state[arg0] == REG_VALUE)
		v = s->r.v[arg0];
	else if (s->r.state[arg0] != REG_SLOT || !slot_value(s->b, s->r.v[arg0], &v))
		return;
	if (s->b->o->machine == CG_MACHINE_ARM)
		v &= ~1ull;
	if (cg_region_at(s->b, v) && cg_region_at(s->b, v)->exec)
		s->b->main_addr = v;
}

/* x86-64 */

static int x86_regno(x86_reg r)
{
	static const x86_reg regs[][2] = {
		{ X86_REG_RDI, X86_REG_EDI },  { X86_REG_RAX, X86_REG_EAX },  { X86_REG_RBX, X86_REG_EBX },
		{ X86_REG_RCX, X86_REG_ECX },  { X86_REG_RDX, X86_REG_EDX },  { X86_REG_RSI, X86_REG_ESI },
		{ X86_REG_RBP, X86_REG_EBP },  { X86_REG_R8, X86_REG_R8D },   { X86_REG_R9, X86_REG_R9D },
		{ X86_REG_R10, X86_REG_R10D }, { X86_REG_R11, X86_REG_R11D }, { X86_REG_R12, X86_REG_R12D },
		{ X86_REG_R13, X86_REG_R13D }, { X86_REG_R14, X86_REG_R14D }, { X86_REG_R15, X86_REG_R15D }
	};

	/* index 0 is rdi: main's way into __libc_start_main */
	for (unsigned i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (r == regs[i][0] || r == regs[i][1])
			return (int)i;
	return -1;
}

/* Whether an indirect jmp is a switch's jump table rather than a tail
 * call through a pointer: marked notrack, or just after a load of a
 * 32-bit table entry (movslq (base,idx,4)), or through a table whose
 * first entry points into the code being decoded. */
static bool x86_jump_table(struct scan *s, const cs_insn *in, const cs_x86_op *op)
{
	uint64_t table = 0, v;

	if (in->detail->x86.prefix[1] == X86_PREFIX_DS)
		return true;
	if (in->address - s->last_table_load <= 16)
		return true;
	if (op->type != X86_OP_MEM || op->mem.index == X86_REG_INVALID)
		return false;
	if (op->mem.base == X86_REG_INVALID)
		table = (uint64_t)op->mem.disp;
	else {
		int b = x86_regno(op->mem.base);

		if (b < 0 || s->r.state[b] != REG_VALUE)
			return false;
		table = s->r.v[b] + (uint64_t)op->mem.disp;
	}
	return cg_elf_word(s->b, table, 8, &v) && v >= s->start && v < s->end;
}

static int scan_x86(struct scan *s, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	uint64_t next = in->address + in->size;
	bool call = in->id == X86_INS_CALL, jump = !call && cs_insn_group(s->h, in, X86_GRP_JUMP);
	int d, rc = 0;

	if (call || jump) {
		const cs_x86_op *op = x->op_count ? &x->operands[0] : NULL;

		if (call)
			entry_call(s, 0);
		if (!op)
			return 0;
		if (op->type == X86_OP_IMM)
			return add_rec(s, in->address, (uint64_t)op->imm, call ? CG_REC_CALL : CG_REC_JUMP);
		if (op->type == X86_OP_MEM && op->mem.index == X86_REG_INVALID &&
		    (op->mem.base == X86_REG_RIP || op->mem.base == X86_REG_INVALID)) {
			uint64_t slot = (op->mem.base == X86_REG_RIP ? next : 0) + (uint64_t)op->mem.disp;

			return add_rec(s, in->address, slot, call ? CG_REC_SLOTCALL : CG_REC_SLOTJUMP);
		}
		if (op->type == X86_OP_REG) {
			int r = x86_regno(op->reg);

			/* mov X@GOTPCREL(%rip), %rax; call *%rax */
			if (r >= 0 && s->r.state[r] == REG_SLOT)
				return add_rec(s, in->address, s->r.v[r], call ? CG_REC_SLOTCALL : CG_REC_SLOTJUMP);
		}
		if (call)
			return add_rec(s, in->address, 0, CG_REC_ICALL);
		if (in->id == X86_INS_JMP && !x86_jump_table(s, in, op))
			return add_rec(s, in->address, 0, CG_REC_IJUMP);
		return 0;
	}
	for (unsigned i = 0; i < x->op_count && !rc; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type == X86_OP_IMM)
			rc = add_ref(s, (uint64_t)op->imm);
		else if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP && op->mem.index == X86_REG_INVALID)
			rc = add_ref(s, next + (uint64_t)op->mem.disp);
	}
	if (in->id == X86_INS_MOVSXD && x->op_count == 2 && x->operands[1].type == X86_OP_MEM &&
	    x->operands[1].mem.index != X86_REG_INVALID && x->operands[1].mem.scale == 4)
		s->last_table_load = in->address;
	/* what a register holds: lea X(%rip) (main on its way into rdi, a
	 * table's address), mov $X in a program that is not
	 * position-independent, mov X@GOTPCREL(%rip) (a slot) */
	d = x->op_count && x->operands[0].type == X86_OP_REG ? x86_regno(x->operands[0].reg) : -1;
	if (d >= 0 && in->id != X86_INS_PUSH && in->id != X86_INS_CMP && in->id != X86_INS_TEST) {
		const cs_x86_op *src = x->op_count == 2 ? &x->operands[1] : NULL;

		s->r.state[d] = REG_UNKNOWN;
		if (!src)
			return rc;
		if (in->id == X86_INS_LEA && src->type == X86_OP_MEM && src->mem.base == X86_REG_RIP) {
			s->r.state[d] = REG_VALUE;
			s->r.v[d] = next + (uint64_t)src->mem.disp;
		} else if ((in->id == X86_INS_MOV || in->id == X86_INS_MOVABS) && src->type == X86_OP_IMM) {
			s->r.state[d] = REG_VALUE;
			s->r.v[d] = (uint64_t)src->imm;
		} else if (in->id == X86_INS_MOV && src->type == X86_OP_MEM && src->mem.base == X86_REG_RIP) {
			s->r.state[d] = REG_SLOT;
			s->r.v[d] = next + (uint64_t)src->mem.disp;
		}
	}
	return rc;
}

/* aarch64 */

static int a64_regno(arm64_reg r)
{
	if (r >= ARM64_REG_X0 && r <= ARM64_REG_X28)
		return (int)(r - ARM64_REG_X0);
	if (r == ARM64_REG_X29)
		return 29;
	if (r == ARM64_REG_X30)
		return 30;
	return -1;
}

static int scan_a64(struct scan *s, const cs_insn *in)
{
	const cs_arm64 *a = &in->detail->arm64;
	const cs_arm64_op *op = a->operands;
	int d = a->op_count && op[0].type == ARM64_OP_REG ? a64_regno(op[0].reg) : -1;
	int rc = 0;

	switch (in->id) {
	case ARM64_INS_BL:
		entry_call(s, 0);
		if (a->op_count && op[0].type == ARM64_OP_IMM)
			rc = add_rec(s, in->address, (uint64_t)op[0].imm, CG_REC_CALL);
		memset(&s->r, 0, sizeof(s->r));
		return rc;
	case ARM64_INS_B:
	case ARM64_INS_CBZ:
	case ARM64_INS_CBNZ:
	case ARM64_INS_TBZ:
	case ARM64_INS_TBNZ:
		if (a->op_count && op[a->op_count - 1].type == ARM64_OP_IMM)
			rc = add_rec(s, in->address, (uint64_t)op[a->op_count - 1].imm, CG_REC_JUMP);
		return rc;
	case ARM64_INS_BLR:
	case ARM64_INS_BR:
		if (in->id == ARM64_INS_BLR)
			entry_call(s, 0);
		if (d >= 0 && s->r.state[d] == REG_SLOT)
			rc = add_rec(s, in->address, s->r.v[d],
			             in->id == ARM64_INS_BLR ? CG_REC_SLOTCALL : CG_REC_SLOTJUMP);
		else if (in->id == ARM64_INS_BLR)
			rc = add_rec(s, in->address, 0, CG_REC_ICALL);
		else if (d < 0 || s->r.state[d] != REG_LOCAL)
			rc = add_rec(s, in->address, 0, CG_REC_IJUMP); /* no jump table: a tail call */
		if (in->id == ARM64_INS_BLR)
			memset(&s->r, 0, sizeof(s->r));
		return rc;
	case ARM64_INS_ADRP:
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM64_OP_IMM) {
			s->r.state[d] = REG_PAGE;
			s->r.v[d] = (uint64_t)op[1].imm;
		}
		return 0;
	case ARM64_INS_ADR:
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM64_OP_IMM) {
			s->r.state[d] = REG_VALUE;
			s->r.v[d] = (uint64_t)op[1].imm;
			return add_ref(s, (uint64_t)op[1].imm);
		}
		break;
	case ARM64_INS_ADD:
		if (d >= 0 && a->op_count == 3 && op[1].type == ARM64_OP_REG) {
			int src = a64_regno(op[1].reg);

			if (src >= 0 && op[2].type == ARM64_OP_REG && s->r.state[src] == REG_VALUE &&
			    s->r.v[src] >= s->start && s->r.v[src] < s->end) {
				/* adr x1, label; add x0, x1, w2, sxtb #2: a jump table's target */
				s->r.state[d] = REG_LOCAL;
				return 0;
			}
			if (src >= 0 && op[2].type == ARM64_OP_IMM && s->r.state[src] == REG_PAGE &&
			    op[2].shift.value == 0) {
				uint64_t v = s->r.v[src] + (uint64_t)op[2].imm;

				s->r.state[d] = REG_VALUE;
				s->r.v[d] = v;
				return add_ref(s, v);
			}
		}
		break;
	case ARM64_INS_LDR:
		/* ldr xN, =literal */
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM64_OP_IMM) {
			uint64_t v;

			if (cg_elf_word(s->b, (uint64_t)op[1].imm, 8, &v)) {
				s->r.state[d] = REG_VALUE;
				s->r.v[d] = v;
				return add_ref(s, v);
			}
		}
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM64_OP_MEM && op[1].mem.index == ARM64_REG_INVALID) {
			int base = a64_regno(op[1].mem.base);

			if (base >= 0 && s->r.state[base] == REG_PAGE && !a->writeback) {
				s->r.state[d] = REG_SLOT;
				s->r.v[d] = s->r.v[base] + (uint64_t)(int64_t)op[1].mem.disp;
				return 0;
			}
		}
		break;
	default:
		break;
	}
	if (d >= 0)
		s->r.state[d] = REG_UNKNOWN;
	return 0;
}

/* 32-bit ARM and Thumb */

static int arm_regno(arm_reg r)
{
	return r >= ARM_REG_R0 && r <= ARM_REG_R12 ? (int)(r - ARM_REG_R0) : -1;
}

static int scan_arm(struct scan *s, const cs_insn *in, bool thumb)
{
	const cs_arm *a = &in->detail->arm;
	const cs_arm_op *op = a->operands;
	int d = a->op_count && op[0].type == ARM_OP_REG ? arm_regno(op[0].reg) : -1;
	uint64_t pc = in->address + (thumb ? 4 : 8);
	int rc = 0;

	switch (in->id) {
	case ARM_INS_BL:
	case ARM_INS_BLX:
		entry_call(s, 0);
		if (a->op_count && op[0].type == ARM_OP_IMM)
			rc = add_rec(s, in->address, (uint64_t)(uint32_t)op[0].imm, CG_REC_CALL);
		else
			rc = add_rec(s, in->address, 0, CG_REC_ICALL);
		memset(&s->r, 0, sizeof(s->r));
		return rc;
	case ARM_INS_BX:
		/* bx lr returns; through another register, a tail call */
		if (a->op_count && op[0].type == ARM_OP_REG && op[0].reg != ARM_REG_LR)
			return add_rec(s, in->address, 0, CG_REC_IJUMP);
		return 0;
	case ARM_INS_B:
		if (a->op_count && op[0].type == ARM_OP_IMM)
			rc = add_rec(s, in->address, (uint64_t)(uint32_t)op[0].imm, CG_REC_JUMP);
		return rc;
	case ARM_INS_LDR:
		/* ldr rN, [pc, #d]: a word of the literal pool */
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM_OP_MEM && op[1].mem.base == ARM_REG_PC &&
		    op[1].mem.index == ARM_REG_INVALID) {
			uint64_t lit = ((pc & ~3ull) + (uint64_t)(int64_t)op[1].mem.disp) & 0xffffffffull, v;

			if (op[1].subtracted)
				lit = ((pc & ~3ull) - (uint64_t)(int64_t)op[1].mem.disp) & 0xffffffffull;
			if (cg_elf_word(s->b, lit, 4, &v)) {
				s->r.state[d] = REG_VALUE;
				s->r.v[d] = v;
				return add_ref(s, v);
			}
		}
		/* ldr rN, [rB, rI] or [rB, #d] with rB (and rI) known: a load from
		 * a GOT slot (the C runtime's start-up code fetches main so) */
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM_OP_MEM && !a->writeback) {
			int base = arm_regno(op[1].mem.base), idx = arm_regno(op[1].mem.index);

			if (base >= 0 && s->r.state[base] == REG_VALUE &&
			    (op[1].mem.index == ARM_REG_INVALID || (idx >= 0 && s->r.state[idx] == REG_VALUE))) {
				uint64_t slot =
				    s->r.v[base] + (idx >= 0 ? s->r.v[idx] : (uint64_t)(int64_t)op[1].mem.disp);

				s->r.state[d] = REG_SLOT;
				s->r.v[d] = slot & 0xffffffffull;
				return 0;
			}
		}
		break;
	case ARM_INS_ADR:
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM_OP_IMM) {
			s->r.state[d] = REG_VALUE;
			s->r.v[d] = ((pc & ~3ull) + (uint64_t)(int64_t)op[1].imm) & 0xffffffffull;
			return add_ref(s, s->r.v[d]);
		}
		break;
	case ARM_INS_ADD:
		/* sums of what is known: add rd, pc, rm (add rd, pc in Thumb),
		 * whose offset came from the literal pool; add rd, pc, #imm (an
		 * adr); add rd, rn, rm of two known values (a GOT's address) */
		if (d >= 0 && a->op_count >= 2 && op[1].type == ARM_OP_REG) {
			const cs_arm_op *x = a->op_count == 3 ? &op[1] : &op[0],
			                *y = a->op_count == 3 ? &op[2] : &op[1];
			uint64_t vx, vy;
			bool kx, ky;

			kx = x->type == ARM_OP_REG &&
			     (x->reg == ARM_REG_PC ||
			      (arm_regno(x->reg) >= 0 && s->r.state[arm_regno(x->reg)] == REG_VALUE));
			vx = !kx ? 0 : x->reg == ARM_REG_PC ? pc : s->r.v[arm_regno(x->reg)];
			if (y->type == ARM_OP_IMM) {
				ky = true;
				vy = (uint64_t)(int64_t)y->imm;
				if (kx && x->reg == ARM_REG_PC)
					vx &= ~3ull;
			} else {
				ky = y->type == ARM_OP_REG &&
				     (y->reg == ARM_REG_PC ||
				      (arm_regno(y->reg) >= 0 && s->r.state[arm_regno(y->reg)] == REG_VALUE));
				vy = !ky ? 0 : y->reg == ARM_REG_PC ? pc : s->r.v[arm_regno(y->reg)];
			}
			if (kx && ky && y->shift.type == ARM_SFT_INVALID && !y->subtracted) {
				s->r.state[d] = REG_VALUE;
				s->r.v[d] = (vx + vy) & 0xffffffffull;
				return add_ref(s, s->r.v[d]);
			}
		}
		break;
	case ARM_INS_MOVW:
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM_OP_IMM) {
			s->r.state[d] = REG_VALUE;
			s->r.v[d] = (uint32_t)op[1].imm & 0xffffu;
			return 0;
		}
		break;
	case ARM_INS_MOVT:
		if (d >= 0 && a->op_count == 2 && op[1].type == ARM_OP_IMM && s->r.state[d] == REG_VALUE) {
			s->r.v[d] = (s->r.v[d] & 0xffffu) | (((uint32_t)op[1].imm & 0xffffu) << 16);
			return add_ref(s, s->r.v[d]);
		}
		break;
	default:
		break;
	}
	if (d >= 0)
		s->r.state[d] = REG_UNKNOWN;
	return 0;
}

/* Decodes [start, end) of region r in one mode. */
static int scan_stretch(struct scan *s, const struct cg_region *r, uint64_t start, uint64_t end, bool thumb)
{
	const uint8_t *code = r->data + (start - r->addr);
	size_t size = (size_t)(end - start);
	uint64_t addr = start;
	unsigned machine = s->b->o->machine;
	unsigned step = machine == CG_MACHINE_X86_64 ? 1 : (thumb ? 2 : 4);
	int rc = 0;

	memset(&s->r, 0, sizeof(s->r));
	s->start = start;
	s->end = end;
	s->last_table_load = 0;
	s->in_entry = s->b->o->entry >= start && s->b->o->entry < end && !s->entry_done;
	if (machine == CG_MACHINE_ARM)
		cs_option(s->h, CS_OPT_MODE, thumb ? CS_MODE_THUMB : CS_MODE_ARM);
	while (size && !rc) {
		if (!cs_disasm_iter(s->h, &code, &size, &addr, s->insn)) {
			size_t skip = size < step ? size : step;

			s->b->o->undecodable++;
			code += skip;
			size -= skip;
			addr += skip;
			continue;
		}
		if (machine == CG_MACHINE_X86_64)
			rc = scan_x86(s, s->insn);
		else if (machine == CG_MACHINE_AARCH64)
			rc = scan_a64(s, s->insn);
		else
			rc = scan_arm(s, s->insn, thumb);
	}
	return rc;
}

/* How many instructions of [start, end) the decoder cannot read in a mode. */
static unsigned count_undecodable(struct scan *s, const struct cg_region *r, uint64_t start, uint64_t end, bool thumb)
{
	const uint8_t *code = r->data + (start - r->addr);
	size_t size = (size_t)(end - start);
	uint64_t addr = start;
	unsigned step = thumb ? 2 : 4, bad = 0;

	cs_option(s->h, CS_OPT_MODE, thumb ? CS_MODE_THUMB : CS_MODE_ARM);
	while (size) {
		if (!cs_disasm_iter(s->h, &code, &size, &addr, s->insn)) {
			size_t skip = size < step ? size : step;

			bad++;
			code += skip;
			size -= skip;
			addr += skip;
		}
	}
	return bad;
}

/* ARM code whose mode nothing in the file tells (a stripped object has
 * no mapping symbols, and a stretch a call found has no symbol): the mode
 * in which fewer instructions fail to decode, the one before on a tie. */
static char arm_guess(struct scan *s, const struct cg_region *r, uint64_t start, uint64_t end, char before)
{
	unsigned arm = count_undecodable(s, r, start, end, false), thumb = count_undecodable(s, r, start, end, true);

	if (arm == thumb)
		return before;
	return thumb < arm ? CG_MAP_THUMB : CG_MAP_ARM;
}

/* Where a stretch may begin: function starts and mapping symbols, sorted. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The mode of code at a stretch's start: the mapping symbols say where
 * they exist; else a Thumb function's symbol; else as the stretch before. */
static char mode_at(const struct cg_build *b, uint64_t addr, char before, bool *known)
{
	char m = cg_map_at(b, addr);
	uint32_t lo;

	*known = true;
	if (m)
		return m;
	if (b->o->machine == CG_MACHINE_ARM && addr == b->o->entry)
		return b->entry_thumb ? CG_MAP_THUMB : CG_MAP_ARM; /* bit 0 of e_entry */
	lo = CG_BOUND(b->cands, b->ncands, struct cg_cand, addr, addr);
	if (lo < b->ncands && b->cands[lo].addr == addr && b->cands[lo].kind == CG_FUNC_SYMBOL)
		return (b->cands[lo].flags & CG_FUNC_THUMB) ? CG_MAP_THUMB : CG_MAP_ARM;
	*known = false;
	return before;
}

static int scan_region(struct scan *s, const struct cg_region *r, uint64_t *cuts, uint32_t ncuts)
{
	const struct cg_build *b = s->b;
	/* code whose mode nothing tells (a stripped object: no mapping
	 * symbols) is taken to be of the entry point's */
	char mode = b->o->machine != CG_MACHINE_ARM ? CG_MAP_A64 : b->entry_thumb ? CG_MAP_THUMB : CG_MAP_ARM;
	uint32_t i;
	bool known;
	int rc = 0;

	for (i = 0; i + 1 < ncuts && !rc; i++) {
		uint64_t start = cuts[i], end = cuts[i + 1];

		if (start == end)
			continue;
		if (b->o->machine != CG_MACHINE_X86_64)
			mode = mode_at(b, start, mode, &known);
		if (mode == CG_MAP_DATA)
			continue;
		if (b->o->machine == CG_MACHINE_ARM && !known)
			mode = arm_guess(s, r, start, end, mode);
		rc = scan_stretch(s, r, start, end, mode == CG_MAP_THUMB);
	}
	return rc;
}

int cg_scan(struct cg_build *b)
{
	struct scan s = { .b = b };
	cs_arch arch;
	cs_mode mode;
	uint64_t *cuts = NULL;
	uint32_t i, j, n;
	int rc = 0;

	switch (b->o->machine) {
	case CG_MACHINE_X86_64:
		arch = CS_ARCH_X86;
		mode = CS_MODE_64;
		break;
	case CG_MACHINE_AARCH64:
		arch = CS_ARCH_ARM64;
		mode = CS_MODE_ARM;
		break;
	default:
		arch = CS_ARCH_ARM;
		mode = CS_MODE_ARM;
		break;
	}
	if (cs_open(arch, mode, &s.h) != CS_ERR_OK) {
		snprintf(b->err, b->errlen, "the disassembler cannot start");
		return -ENOMEM;
	}
	cs_option(s.h, CS_OPT_DETAIL, CS_OPT_ON);
	s.insn = cs_malloc(s.h);
	cuts = malloc(((size_t)b->ncands + b->nmaps + 3) * sizeof(*cuts));
	if (!s.insn || !cuts) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->nregions && !rc; i++) {
		const struct cg_region *r = &b->regions[i];
		uint64_t end = r->addr + r->size;

		if (!r->exec || r->plt)
			continue;
		n = 0;
		cuts[n++] = r->addr;
		for (j = 0; j < b->ncands; j++)
			if (b->cands[j].addr > r->addr && b->cands[j].addr < end && b->cands[j].kind != CG_FUNC_IMPORT)
				cuts[n++] = b->cands[j].addr;
		for (j = 0; j < b->nmaps; j++)
			if (b->maps[j].addr > r->addr && b->maps[j].addr < end)
				cuts[n++] = b->maps[j].addr;
		if (b->o->entry > r->addr && b->o->entry < end)
			cuts[n++] = b->o->entry;
		qsort(cuts, n, sizeof(*cuts), cmp_u64);
		cuts[n++] = end;
		rc = scan_region(&s, r, cuts, n);
	}
out:
	free(cuts);
	if (s.insn)
		cs_free(s.insn, 1);
	cs_close(&s.h);
	return rc;
}
