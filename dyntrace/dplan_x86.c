/* The patch planner for x86-64 (see dpatch.h): a function's entry is
 * replaced by a 5-byte jmp rel32, its first instructions (decoded by
 * x86insn.c) moved to its trampoline; the direct branches of the whole file
 * tell which bytes no branch lands in. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dyntrace/dpatch_impl.h"
#include "dyntrace/x86insn.h"

/* Every direct branch target of every function of the file (their own
 * cold parts included, which jump back into them). */
int dplan_x86_targets(struct dpatch *p)
{
	for (size_t i = 0; i < p->es->nfn; i++) {
		const struct elfsyms_fn *f = &p->es->fn[i];
		size_t avail;
		const uint8_t *b = dpatch_bytes_at(p, f->addr, &avail);
		uint64_t off = 0, size = f->size < avail ? f->size : avail;

		while (b && off < size) {
			struct x86_insn in;
			unsigned len = x86_insn_decode(b + off, (size_t)(size - off), &in);

			if (!len)
				break;
			if ((in.kind == X86_JMP_REL || in.kind == X86_JCC_REL || in.kind == X86_CALL_REL ||
			     in.kind == X86_LOOP_REL || in.kind == X86_XBEGIN) &&
			    dpatch_target_add(p, f->addr + off, f->addr + off + len + (uint64_t)in.rel))
				return -ENOMEM;
			off += len;
		}
	}
	dpatch_targets_sort(p);
	return 0;
}

/* True when every branch that lands in (a, a + n) is one of the
 * function's own [a, end). */
static bool only_own_branches(const struct dpatch *p, const struct branch *b, uint64_t a, uint64_t n, uint64_t end)
{
	for (; b < p->targets + p->ntargets && b->target < a + n; b++)
		if (b->source < a || b->source >= end)
			return false;
	return true;
}

static bool put_rel32(struct reloc_buf *rb, const uint8_t *op, unsigned oplen, uint64_t target)
{
	if (rb->len + oplen + 4 > CODE_MAX || rb->nrel == RELOCS_MAX)
		return false;
	memcpy(rb->code + rb->len, op, oplen);
	rb->rel[rb->nrel].at = rb->len + oplen;
	rb->rel[rb->nrel].end = rb->len + oplen + 4;
	rb->rel[rb->nrel++].target = target;
	memset(rb->code + rb->len + oplen, 0, 4);
	rb->len += oplen + 4;
	return true;
}

/* The instruction at address a, moved into rb; NULL or why not.  last:
 * the function goes on at its original place after it. */
static const char *relocate(struct reloc_buf *rb, const uint8_t *b, uint64_t a, const struct x86_insn *in, bool last)
{
	uint64_t target = a + in->len + (uint64_t)in->rel;
	uint8_t op[3];

	switch (in->kind) {
	case X86_JMP_REL:
		op[0] = 0xe9;
		return put_rel32(rb, op, 1, target) ? NULL : "its first instructions grow too long when moved";
	case X86_CALL_REL:
		/* the call returns straight to the function's own code when that
		 * is where it goes on (lea ret(%rip), %r11; push %r11; jmp), so
		 * that no return address points into a trampoline (stack walks,
		 * debuggers); %r11 is free at a call */
		if (last) {
			op[0] = 0x4c;
			op[1] = 0x8d;
			op[2] = 0x1d;
			if (!put_rel32(rb, op, 3, a + in->len) || rb->len + 2 > CODE_MAX)
				return "its first instructions grow too long when moved";
			rb->code[rb->len++] = 0x41;
			rb->code[rb->len++] = 0x53;
			op[0] = 0xe9;
		} else
			op[0] = 0xe8;
		return put_rel32(rb, op, 1, target) ? NULL : "its first instructions grow too long when moved";
	case X86_JCC_REL:
		op[0] = 0x0f;
		op[1] = (uint8_t)(0x80 | in->cond);
		return put_rel32(rb, op, 2, target) ? NULL : "its first instructions grow too long when moved";
	case X86_LOOP_REL:
		/* loop/jrcxz have no rel32 form: they jump over a short jmp to a
		 * jmp rel32 to the target */
		if (in->rel_size != 1 || rb->len + in->len + 2 + 5 > CODE_MAX)
			return "its first instructions grow too long when moved";
		memcpy(rb->code + rb->len, b, in->len);
		rb->code[rb->len + in->rel_off] = 2;
		rb->len += in->len;
		rb->code[rb->len++] = 0xeb;
		rb->code[rb->len++] = 5;
		op[0] = 0xe9;
		return put_rel32(rb, op, 1, target) ? NULL : "its first instructions grow too long when moved";
	case X86_XBEGIN:
		/* the same instruction, its abort path's rel32 relocated */
		if (rb->len + in->len > CODE_MAX || rb->nrel == RELOCS_MAX)
			return "its first instructions grow too long when moved";
		memcpy(rb->code + rb->len, b, in->len);
		rb->rel[rb->nrel].at = rb->len + in->rel_off;
		rb->rel[rb->nrel].end = (uint16_t)(rb->len + in->len);
		rb->rel[rb->nrel++].target = target;
		rb->len += in->len;
		return NULL;
	case X86_PLAIN:
	case X86_RET:
	case X86_JMP_IND:
	case X86_CALL_IND:
	case X86_TRAP:
		if (rb->len + in->len > CODE_MAX || (in->rip_off && rb->nrel == RELOCS_MAX))
			return "its first instructions grow too long when moved";
		memcpy(rb->code + rb->len, b, in->len);
		if (in->rip_off) {
			rb->rel[rb->nrel].at = rb->len + in->rip_off;
			rb->rel[rb->nrel].end = rb->len + in->len;
			rb->rel[rb->nrel++].target = a + in->len + (uint64_t)(int64_t)in->disp;
		}
		rb->len += in->len;
		return NULL;
	default:
		return "its first instructions cannot be moved (a relative branch of a kind not relocated)";
	}
}

/* Function f moved whole, its layout kept: its own branches land where
 * they did, relative to the copy; calls (also of itself: they must go
 * through its entry), branches out of it and RIP-relative operands are
 * relocated in place.  A short branch out of it cannot be. */
static const char *plan_whole(struct dpatch *p, const struct elfsyms_fn *f, const uint8_t *b)
{
	struct reloc_buf rb = { .len = 0 };
	const char *why;
	uint64_t a = f->addr, end = f->addr + f->size;

	while (rb.len < f->size) {
		struct x86_insn in;
		unsigned len = x86_insn_decode(b + rb.len, (size_t)(f->size - rb.len), &in);
		uint64_t at = a + rb.len, target = at + len + (uint64_t)in.rel;
		bool rel = in.kind == X86_JMP_REL || in.kind == X86_JCC_REL || in.kind == X86_CALL_REL ||
		           in.kind == X86_LOOP_REL || in.kind == X86_XBEGIN;

		if (!len)
			return dpatch_why_at(p, "an instruction the planner does not know at +%llu", rb.len);
		memcpy(rb.code + rb.len, b + rb.len, len);
		if (rel && (in.kind == X86_CALL_REL || target < a || target >= end)) {
			if (in.rel_size != 4 || rb.nrel == RELOCS_MAX)
				return "a branch lands inside its first bytes, and a short branch leaves it";
			rb.rel[rb.nrel].at = rb.len + in.rel_off;
			rb.rel[rb.nrel].end = rb.len + len;
			rb.rel[rb.nrel++].target = target;
		} else if (in.rip_off) {
			if (rb.nrel == RELOCS_MAX)
				return "a branch lands inside its first bytes, and it has too many references to move";
			rb.rel[rb.nrel].at = rb.len + in.rip_off;
			rb.rel[rb.nrel].end = rb.len + len;
			rb.rel[rb.nrel++].target = at + len + (uint64_t)(int64_t)in.disp;
		}
		rb.len += len;
	}
	/* what would fall through its end goes on where it did */
	{
		static const uint8_t jmp = 0xe9;

		if (!put_rel32(&rb, &jmp, 1, end))
			return "a branch lands inside its first bytes, and it has too many references to move";
	}
	why = dpatch_append(p, f, JMP_SIZE, b, &rb);
	if (!why)
		p->span[p->nfn - 1] = (uint32_t)f->size;
	return why;
}

/* Function f, which cannot hold a jump at its entry (why), planned with
 * an int3 there instead (runtime/dyntrap.c): its first instruction moved
 * to its trampoline, followed by the way back.  Only the entry's byte
 * changes, so a branch into the function after that instruction lands as
 * before.  NULL, or why not. */
static const char *plan_trap(struct dpatch *p, const struct elfsyms_fn *f, const uint8_t *b, size_t avail,
                             uint64_t next, const char *why)
{
	struct reloc_buf rb = { .len = 0 };
	struct x86_insn in;
	uint64_t a = f->addr, size = f->size ? f->size : 1;
	unsigned len = x86_insn_decode(b, size < avail ? (size_t)size : avail, &in);
	static const uint8_t jmp = 0xe9;
	struct lp_plan_func *pf;
	const char *err;

	if (!len || len > LP_PLAN_ORIG_MAX || a + len > next || dpatch_target_inside(p, a, a + len))
		return why;
	err = relocate(&rb, b, a, &in, true);
	if (err || !put_rel32(&rb, &jmp, 1, a + len))
		return why;
	err = dpatch_append(p, f, 1, b, &rb);
	if (err)
		return err;
	pf = &p->fn[p->nfn - 1];
	pf->trap = 1;
	pf->orig_len = (uint16_t)len;
	memcpy(pf->orig, b, len);
	p->traps++;
	return NULL;
}

/* Whether the n bytes at b are padding a compiler or linker put between
 * functions: int3, nop, or multi-byte nops (0f 1f, with 66 and 2e
 * prefixes) — not the start of code that another section or symbol table
 * entry does not tell (a function's end may be another section's first
 * byte). */
static bool is_padding(const uint8_t *b, size_t n, size_t avail)
{
	size_t i = 0;

	while (i < n) {
		struct x86_insn in;
		size_t k = i;
		unsigned len;

		if (b[i] == 0xcc || b[i] == 0x90) {
			i++;
			continue;
		}
		while (k + 2 < avail && k < i + 8 && (b[k] == 0x66 || b[k] == 0x2e))
			k++;
		if (k + 2 > avail || b[k] != 0x0f || b[k + 1] != 0x1f)
			return false;
		len = x86_insn_decode(b + i, avail - i, &in);
		if (!len)
			return false;
		i += len;
	}
	return true;
}

/* Plans function f, whose next neighbour in the file starts at next: NULL
 * with it appended to the plan, or the reason it is not. */
const char *dplan_x86(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next)
{
	uint64_t a = f->addr, end = f->addr + f->size;
	struct reloc_buf rb = { .len = 0 };
	uint32_t covered = 0, patch_len;
	size_t avail;
	const uint8_t *b = dpatch_bytes_at(p, a, &avail);
	const struct branch *bt;

	if (!b)
		return "not in an executable segment of the file";
	while (covered < JMP_SIZE && a + covered < end) {
		struct x86_insn in;
		size_t room = (size_t)(end - (a + covered));
		unsigned len;
		const char *why;

		if (covered >= avail)
			return "it runs past the end of its segment";
		len = x86_insn_decode(b + covered, room < avail - covered ? room : avail - covered, &in);
		if (!len)
			return dpatch_why_at(p, "an instruction the planner does not know at +%llu", covered);
		why = relocate(&rb, b + covered, a + covered, &in, covered + len >= JMP_SIZE);
		if (why)
			return why;
		covered += len;
	}
	patch_len = covered < JMP_SIZE ? JMP_SIZE : covered;
	if (patch_len > avail || patch_len > LP_PLAN_ORIG_MAX)
		return plan_trap(p, f, b, avail, next, "too short for a jump, at the end of its segment");
	bt = dpatch_target_inside(p, a, a + patch_len);
	if (bt) {
		/* a loop of its own whose head is inside those bytes: the whole
		 * function moves, where its own branches land as before */
		if (only_own_branches(p, bt, a, JMP_SIZE, end) && next >= a + JMP_SIZE && f->size <= WHOLE_MAX &&
		    f->size <= avail)
			return plan_whole(p, f, b);
		return plan_trap(
		    p, f, b, avail, next,
		    dpatch_why_at(p, "a branch lands at +%llu, inside the bytes a jump would replace", bt->target - a));
	}
	if (next < a + patch_len)
		return plan_trap(p, f, b, avail, next,
		                 covered < JMP_SIZE ? "too short for a jump, and another function follows at once"
		                                    : "another symbol starts inside its first instructions");
	if (covered < JMP_SIZE && !is_padding(b + covered, JMP_SIZE - covered, avail - covered))
		return plan_trap(p, f, b, avail, next, "too short for a jump, and what follows it is not padding");
	if (covered < JMP_SIZE) {
		/* the function ended (its last instruction does not fall
		 * through): what follows is padding, never run */
		if (rb.len + 1 > CODE_MAX)
			return "its first instructions grow too long when moved";
		rb.code[rb.len++] = 0xcc;
	} else {
		static const uint8_t jmp = 0xe9;

		if (!put_rel32(&rb, &jmp, 1, a + covered))
			return "its first instructions grow too long when moved";
	}
	return dpatch_append(p, f, patch_len, b, &rb);
}

/* A probe at at, an instruction of function f, named name: the
 * instructions there (at least 5 bytes, within f, no call among them, no
 * branch landing inside them) moved to its trampoline behind a jump; else
 * an int3 at at with that one instruction moved.  NULL, or why not. */
const char *dplan_x86_probe(struct dpatch *p, const struct elfsyms_fn *f, uint64_t at, const char *name)
{
	uint64_t end = f->addr + f->size, rel = at - f->addr, off = 0;
	struct elfsyms_fn pf = { .addr = at, .size = end - at, .name = name };
	struct reloc_buf rb = { .len = 0 };
	static const uint8_t jmp = 0xe9;
	size_t avail;
	const uint8_t *b = dpatch_bytes_at(p, f->addr, &avail);
	uint32_t covered = 0;
	bool nojump = false;
	const char *why;
	struct x86_insn in;

	if (!b || f->size > avail)
		return "not in an executable segment of the file";
	while (off < rel) {
		unsigned len = x86_insn_decode(b + off, (size_t)(f->size - off), &in);

		if (!len)
			return dpatch_why_at(p, "an instruction the planner does not know at +%llu", off);
		if (off + len > rel)
			return dpatch_why_at(p, "not an instruction boundary (an instruction starts at +%llu)", off);
		off += len;
	}
	while (covered < JMP_SIZE && rel + covered < f->size) {
		unsigned len = x86_insn_decode(b + rel + covered, (size_t)(f->size - rel - covered), &in);

		if (!len)
			return dpatch_why_at(p, "an instruction the planner does not know at +%llu", rel + covered);
		/* a call moved would return into the trampoline or need a
		 * register (%r11 at an entry), and none is free here */
		nojump |= in.kind == X86_CALL_REL;
		if (!nojump && relocate(&rb, b + rel + covered, at + covered, &in, false))
			nojump = true;
		covered += len;
	}
	if (!nojump && covered >= JMP_SIZE && !dpatch_target_inside(p, at, at + covered) &&
	    covered <= LP_PLAN_ORIG_MAX && put_rel32(&rb, &jmp, 1, at + covered)) {
		why = dpatch_append(p, &pf, covered, b + rel, &rb);
		if (!why)
			p->fn[p->nfn - 1].kind = LP_PLAN_PROBE;
		return why;
	}
	if (x86_insn_decode(b + rel, (size_t)(f->size - rel), &in) && in.kind == X86_CALL_REL)
		return "a call (probe the instruction before or after it)";
	why = plan_trap(p, &pf, b + rel, avail - rel, end, "its instructions there cannot be moved");
	if (!why)
		p->fn[p->nfn - 1].kind = LP_PLAN_PROBE;
	return why;
}
