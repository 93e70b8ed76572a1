/* The patch plan (see dpatch.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dyntrace/dpatch.h"
#include "dyntrace/dselect.h"
#include "dyntrace/x86insn.h"
#include "layerprof/format.h"

#define JMP_SIZE 5u
/* A function moved whole (a branch lands inside its first bytes) is at
 * most this long. */
#define WHOLE_MAX 1024u
/* Relocated code of one function, at most: a whole function and its last
 * int3, or 5 instructions of up to 15 bytes grown by a few bytes each (a
 * loop becomes 12) and the jump back. */
#define CODE_MAX (WHOLE_MAX + 16u)
#define RELOCS_MAX 64u

/* A direct branch of the file: where it lands, and where it is. */
struct branch {
	uint64_t target, source;
};

struct dpatch {
	char *path;
	struct elfsyms *es;
	struct dseg seg[DSEG_MAX];
	uint8_t *bytes[DSEG_MAX];
	unsigned nseg;
	uint64_t dev, ino;
	struct branch *targets; /* direct branches of every function, by target */
	size_t ntargets;
	/* the plan */
	struct lp_plan_func *fn;
	const char **name;
	uint32_t nfn;
	struct lp_plan_reloc *rel;
	uint32_t nrel, caprel;
	uint8_t *code;
	uint32_t ncode, capcode;
	uint32_t candidates;
	struct uprobes_skipped *skipped;
	size_t nskipped, planner_skipped;
	char **owned; /* reasons made for one function, names of PLT stubs */
	size_t nowned;
	size_t cap; /* of fn, name, skipped and owned */
	/* the written plan, shared with the runtimes that apply it */
	const uint8_t *map;
	size_t map_size;
	bool lib;            /* a library's plan, chained after the program's */
	struct dpatch *next; /* the next file's plan */
	/* the first plan's: every file's skipped functions, for the stats */
	struct uprobes_skipped *all;
	size_t nall;
};

/* The ELF machine of the programs this build patches: its own. */
static uint16_t dpatch_machine(void)
{
#if defined(__x86_64__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#else
	return EM_NONE;
#endif
}

bool dpatch_supported(void)
{
	return dpatch_machine() != EM_NONE;
}

/* The file's bytes at vaddr a, and how many follow in its segment. */
static const uint8_t *bytes_at(const struct dpatch *p, uint64_t a, size_t *avail)
{
	for (unsigned s = 0; s < p->nseg; s++)
		if (a >= p->seg[s].vaddr && a - p->seg[s].vaddr < p->seg[s].filesz) {
			*avail = (size_t)(p->seg[s].filesz - (a - p->seg[s].vaddr));
			return p->bytes[s] + (a - p->seg[s].vaddr);
		}
	*avail = 0;
	return NULL;
}

static int cmp_target(const void *a, const void *b)
{
	uint64_t x = ((const struct branch *)a)->target, y = ((const struct branch *)b)->target;

	return x < y ? -1 : x > y;
}

/* Every direct branch target of every function of the file (their own
 * cold parts included, which jump back into them). */
static int collect_targets(struct dpatch *p)
{
	size_t cap = 4096;

	p->targets = malloc(cap * sizeof(*p->targets));
	if (!p->targets)
		return -ENOMEM;
	for (size_t i = 0; i < p->es->nfn; i++) {
		const struct elfsyms_fn *f = &p->es->fn[i];
		size_t avail;
		const uint8_t *b = bytes_at(p, f->addr, &avail);
		uint64_t off = 0, size = f->size < avail ? f->size : avail;

		while (b && off < size) {
			struct x86_insn in;
			unsigned len = x86_insn_decode(b + off, (size_t)(size - off), &in);

			if (!len)
				break;
			if (in.kind == X86_JMP_REL || in.kind == X86_JCC_REL || in.kind == X86_CALL_REL ||
			    in.kind == X86_LOOP_REL || in.kind == X86_XBEGIN) {
				if (p->ntargets == cap) {
					struct branch *t = realloc(p->targets, 2 * cap * sizeof(*t));

					if (!t)
						return -ENOMEM;
					p->targets = t;
					cap *= 2;
				}
				p->targets[p->ntargets].source = f->addr + off;
				p->targets[p->ntargets++].target = f->addr + off + len + (uint64_t)in.rel;
			}
			off += len;
		}
	}
	qsort(p->targets, p->ntargets, sizeof(*p->targets), cmp_target);
	return 0;
}

/* The first branch that lands in (a, end), or NULL. */
static const struct branch *target_inside(const struct dpatch *p, uint64_t a, uint64_t end)
{
	size_t lo = 0, hi = p->ntargets;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->targets[mid].target <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->ntargets && p->targets[lo].target < end ? &p->targets[lo] : NULL;
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

/* One function's relocated code, being built. */
struct reloc_buf {
	uint8_t code[CODE_MAX];
	uint32_t len;
	struct lp_plan_reloc rel[RELOCS_MAX];
	uint32_t nrel;
};

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

/* A reason with an offset in it, kept until the plan is freed. */
static const char *why_at(struct dpatch *p, const char *fmt, uint64_t off)
{
	char buf[160], *w;

	snprintf(buf, sizeof(buf), fmt, (unsigned long long)off);
	w = strdup(buf);
	if (!w)
		return "out of memory";
	p->owned[p->nowned++] = w;
	return w;
}

/* Function f into the plan, with its relocated code. */
static const char *append(struct dpatch *p, const struct elfsyms_fn *f, uint32_t patch_len, const uint8_t *b,
                          const struct reloc_buf *rb)
{
	struct lp_plan_func *pf;

	if (p->ncode + rb->len > p->capcode) {
		uint32_t cap = 2 * (p->capcode + rb->len);
		uint8_t *c = realloc(p->code, cap);

		if (!c)
			return "out of memory";
		p->code = c;
		p->capcode = cap;
	}
	if (p->nrel + rb->nrel > p->caprel) {
		uint32_t cap = 2 * (p->caprel + rb->nrel);
		struct lp_plan_reloc *r = realloc(p->rel, cap * sizeof(*r));

		if (!r)
			return "out of memory";
		p->rel = r;
		p->caprel = cap;
	}
	pf = &p->fn[p->nfn];
	memset(pf, 0, sizeof(*pf));
	pf->addr = f->addr;
	pf->patch_len = patch_len;
	pf->code_off = p->ncode;
	pf->code_len = rb->len;
	pf->reloc_first = p->nrel;
	pf->nrelocs = rb->nrel;
	memcpy(pf->orig, b, patch_len);
	if (rb->len)
		memcpy(p->code + p->ncode, rb->code, rb->len);
	p->ncode += rb->len;
	if (rb->nrel)
		memcpy(p->rel + p->nrel, rb->rel, rb->nrel * sizeof(*rb->rel));
	p->nrel += rb->nrel;
	p->name[p->nfn++] = f->name;
	return NULL;
}

/* Function f moved whole, its layout kept: its own branches land where
 * they did, relative to the copy; calls (also of itself: they must go
 * through its entry), branches out of it and RIP-relative operands are
 * relocated in place.  A short branch out of it cannot be. */
static const char *plan_whole(struct dpatch *p, const struct elfsyms_fn *f, const uint8_t *b)
{
	struct reloc_buf rb = { .len = 0 };
	uint64_t a = f->addr, end = f->addr + f->size;

	while (rb.len < f->size) {
		struct x86_insn in;
		unsigned len = x86_insn_decode(b + rb.len, (size_t)(f->size - rb.len), &in);
		uint64_t at = a + rb.len, target = at + len + (uint64_t)in.rel;
		bool rel = in.kind == X86_JMP_REL || in.kind == X86_JCC_REL || in.kind == X86_CALL_REL ||
		           in.kind == X86_LOOP_REL || in.kind == X86_XBEGIN;

		if (!len)
			return why_at(p, "an instruction the planner does not know at +%llu", rb.len);
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
	return append(p, f, JMP_SIZE, b, &rb);
}

/* ---------------------------------------------------------------- aarch64 */

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

/* An aarch64 function: its first instruction replaced by a b to its
 * trampoline, and moved there; a PC-relative one is rewritten (x16, free
 * at a function's entry, holds an address a load needs). */
static const char *plan_a64(struct dpatch *p, const struct elfsyms_fn *f)
{
	struct reloc_buf rb = { .len = 0 };
	uint64_t a = f->addr, back = f->addr + 4;
	size_t avail;
	const uint8_t *b = bytes_at(p, a, &avail);
	uint32_t insn;

	if (!b || avail < 4 || f->size < 4)
		return "not in an executable segment of the file";
	if (a & 3)
		return "not at an instruction boundary";
	memcpy(&insn, b, 4);
	if ((insn & 0x3f000000u) == 0x08000000u)
		return "it starts with a load-exclusive, whose retry loop the trampoline would break";
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
	return append(p, f, 4, b, &rb);
}

static const char *plan_one(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next);

/* Plans function f for the file's machine. */
static const char *plan_function(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next)
{
	return p->es->machine == EM_AARCH64 ? plan_a64(p, f) : plan_one(p, f, next);
}

/* Plans function f, whose next neighbour in the file starts at next: NULL
 * with it appended to the plan, or the reason it is not. */
static const char *plan_one(struct dpatch *p, const struct elfsyms_fn *f, uint64_t next)
{
	uint64_t a = f->addr, end = f->addr + f->size;
	struct reloc_buf rb = { .len = 0 };
	uint32_t covered = 0, patch_len;
	size_t avail;
	const uint8_t *b = bytes_at(p, a, &avail);
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
			return why_at(p, "an instruction the planner does not know at +%llu", covered);
		why = relocate(&rb, b + covered, a + covered, &in, covered + len >= JMP_SIZE);
		if (why)
			return why;
		covered += len;
	}
	patch_len = covered < JMP_SIZE ? JMP_SIZE : covered;
	if (patch_len > avail || patch_len > LP_PLAN_ORIG_MAX)
		return "too short for a jump, at the end of its segment";
	bt = target_inside(p, a, a + patch_len);
	if (bt) {
		/* a loop of its own whose head is inside those bytes: the whole
		 * function moves, where its own branches land as before */
		if (only_own_branches(p, bt, a, JMP_SIZE, end) && next >= a + JMP_SIZE && f->size <= WHOLE_MAX &&
		    f->size <= avail)
			return plan_whole(p, f, b);
		return why_at(p, "a branch lands at +%llu, inside the bytes a jump would replace", bt->target - a);
	}
	if (next < a + patch_len)
		return covered < JMP_SIZE ? "too short for a jump, and another function follows at once"
		                          : "another symbol starts inside its first instructions";
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
	return append(p, f, patch_len, b, &rb);
}

static void skip(struct dpatch *p, const char *name, const char *why)
{
	p->skipped[p->nskipped].name = name;
	p->skipped[p->nskipped++].why = why;
}

/* Library functions whose callers' return address must stay theirs: they
 * save it to come back to later (the setjmp and context families), return
 * twice into memory they share with the caller (vfork), or read it to find
 * the frames an exception unwinds. */
static const char *const libcall_never[] = {
	"setjmp",
	"_setjmp",
	"__sigsetjmp",
	"sigsetjmp",
	"vfork",
	"__vfork",
	"getcontext",
	"swapcontext",
	"savectx",
	"__libc_start_main",
	"__cxa_begin_catch",
	"_Unwind_Resume",
	"_Unwind_RaiseException",
	"_Unwind_Resume_or_Rethrow",
	"_Unwind_ForcedUnwind",
};

/* The first function of the file at or after a. */
static uint64_t next_function(const struct dpatch *p, uint64_t a)
{
	size_t lo = 0, hi = p->es->nfn;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->es->fn[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->es->nfn ? p->es->fn[lo].addr : UINT64_MAX;
}

/* --libcalls: each PLT stub of the program, planned as a function named
 * NAME@plt (as the host names it), so that a call into a shared library is
 * an entry and an exit under its caller.  Returns 0 or -ENOMEM. */
static int plan_libcalls(struct dpatch *p)
{
	for (size_t i = 0; i < p->es->nplt; i++) {
		const struct elfsyms_plt *s = &p->es->plt[i];
		struct elfsyms_fn f = { .addr = s->stub, .size = (s->flags & ELFSYMS_PLT_GOT) ? 8 : 16 };
		char *name;
		const char *why = NULL;
		size_t n = strlen(s->name) + 5;

		if (!s->stub)
			continue;
		name = malloc(n);
		if (!name || p->nfn + p->nskipped >= p->cap) {
			free(name);
			return -ENOMEM;
		}
		snprintf(name, n, "%s@plt", s->name);
		p->owned[p->nowned++] = name;
		f.name = name;
		p->candidates++;
		for (size_t k = 0; k < sizeof(libcall_never) / sizeof(libcall_never[0]); k++)
			if (!strcmp(s->name, libcall_never[k]))
				why = "it needs its caller's own return address (setjmp, vfork, the unwinder)";
		if (!why)
			why = plan_function(p, &f, next_function(p, f.addr + 1));
		if (why)
			skip(p, name, why);
	}
	return 0;
}

static int read_segments(struct dpatch *p, char *err, size_t errlen)
{
	bool interp;
	int r = dsel_segments(p->path, p->es->elf_class, p->seg, &p->nseg, &interp);
	int fd;

	if (r) {
		snprintf(err, errlen, "'%s': cannot read its program headers", p->path);
		return r;
	}
	if (!interp && !p->lib) {
		snprintf(err, errlen,
		         "'%s' is statically linked: the runtime that patches it cannot be loaded into it (--backend "
		         "uprobe traces it)",
		         p->path);
		return -ENOTSUP;
	}
	fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", p->path, strerror(-r));
		return r;
	}
	for (unsigned s = 0; !r && s < p->nseg; s++) {
		p->bytes[s] = p->seg[s].filesz < (1ull << 31) ? malloc(p->seg[s].filesz ? p->seg[s].filesz : 1) : NULL;
		if (!p->bytes[s])
			r = -ENOMEM;
		else if (pread(fd, p->bytes[s], p->seg[s].filesz, (off_t)p->seg[s].offset) != (ssize_t)p->seg[s].filesz)
			r = -ENOEXEC;
	}
	close(fd);
	if (r)
		snprintf(err, errlen, "'%s': cannot read its code", p->path);
	return r;
}

/* One file's plan: the program (lib false), or a library whose functions
 * cfg's patterns choose. */
static struct dpatch *file_open(const struct uprobes_config *cfg, bool lib, char *err, size_t errlen)
{
	struct dpatch *p = calloc(1, sizeof(*p));
	struct stat st;
	const char *cxx;
	size_t n;
	int r;

	if (!p || !(p->path = strdup(cfg->path))) {
		snprintf(err, errlen, "out of memory");
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	if (stat(p->path, &st)) {
		r = -errno;
		snprintf(err, errlen, "'%s': %s", p->path, strerror(-r));
		goto fail;
	}
	p->dev = (uint64_t)st.st_dev;
	p->ino = (uint64_t)st.st_ino;
	r = elfsyms_open(p->path, &p->es, err, errlen);
	if (r)
		goto fail;
	if (p->es->machine != dpatch_machine()) {
		snprintf(err, errlen,
		         "'%s': in-process patching is built for x86-64 and aarch64 programs, on their own machines "
		         "(--backend uprobe)",
		         p->path);
		r = -ENOTSUP;
		goto fail;
	}
	p->lib = lib;
	r = read_segments(p, err, errlen);
	if (r)
		goto fail;
	/* x86-64: the runtime gives the return addresses back while an
	 * exception unwinds (a frame's is at its stack pointer); aarch64 keeps
	 * it where the function chose to save it */
	cxx = p->es->machine == EM_X86_64 ? NULL : dsel_unwinds(p->es);
	if (cxx) {
		snprintf(err, errlen,
		         "'%s' uses C++ exceptions (it links %s): on aarch64 a patched function's replaced return "
		         "address would make an exception that passes it end the program, so it is not traced",
		         p->path, cxx);
		r = -ENOTSUP;
		goto fail;
	}
	r = p->es->machine == EM_X86_64 ? collect_targets(p) : 0;
	n = p->es->nfn + p->es->nplt + 1;
	p->cap = n;
	p->fn = calloc(n, sizeof(*p->fn));
	p->name = calloc(n, sizeof(*p->name));
	p->skipped = calloc(n, sizeof(*p->skipped));
	p->owned = calloc(2 * n, sizeof(*p->owned));
	if (r || !p->fn || !p->name || !p->skipped || !p->owned) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p->es->nfn; i++) {
		const struct elfsyms_fn *f = &p->es->fn[i];
		const char *why;

		if (cfg->no_functions || !dsel_chosen(cfg, f->name) || (!lib && dsel_is_crt(f->name)) ||
		    dsel_is_part(f->name))
			continue;
		p->candidates++;
		if (f->flags & ELFSYMS_FN_IFUNC) {
			skip(p, f->name, "an IFUNC resolver (it runs in the loader)");
			continue;
		}
		why = plan_function(p, f, i + 1 < p->es->nfn ? p->es->fn[i + 1].addr : UINT64_MAX);
		if (why)
			skip(p, f->name, why);
	}
	if (cfg->libcalls)
		r = plan_libcalls(p);
	if (r) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	p->planner_skipped = p->nskipped;
	if (!p->candidates) {
		snprintf(err, errlen, "'%s': %s", p->path,
		         cfg->no_functions ? "no PLT stubs: it calls no shared library through a PLT"
		         : lib             ? "no function of the library matches --dynamic's patterns"
		         : cfg->npatterns  ? "no function of the program matches --dynamic's patterns"
		                           : "no function symbols (neither .symtab nor .dynsym has any)");
		r = -ENOENT;
		goto fail;
	}
	if (!p->nfn) {
		snprintf(err, errlen, "'%.512s': none of its %u functions can be patched (%s: %s)", p->path,
		         p->candidates, p->skipped[0].name, p->skipped[0].why);
		r = -ENOTSUP;
		goto fail;
	}
	return p;
fail:
	dpatch_free(p);
	errno = -r;
	return NULL;
}

#if defined(__x86_64__)
#define LIB_TRIPLET "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define LIB_TRIPLET "aarch64-linux-gnu"
#else
#define LIB_TRIPLET "arm-linux-gnueabihf"
#endif

static bool lib_try(const char *dir, size_t dirlen, const char *name, char *out, size_t outlen)
{
	struct stat st;

	if ((size_t)snprintf(out, outlen, "%.*s/%s", (int)dirlen, dir, name) >= outlen)
		return false;
	return !stat(out, &st) && S_ISREG(st.st_mode);
}

/* A library named by --dynamic: a path, or a name looked for in
 * LD_LIBRARY_PATH, the program's own directory and the system's library
 * directories.  The runtime patches a loaded object only when it is this
 * very file, so a wrong guess traces nothing (and the recording says the
 * library was not loaded), never the wrong code. */
static int lib_find(const char *name, const char *prog, char *out, size_t outlen)
{
	static const char *const system_dirs[] = { "/lib/" LIB_TRIPLET, "/usr/lib/" LIB_TRIPLET, "/lib",
		                                   "/usr/lib",          "/usr/local/lib",        "/lib64",
		                                   "/usr/lib64" };
	const char *llp = getenv("LD_LIBRARY_PATH"), *slash = strrchr(prog, '/');

	if (strchr(name, '/')) {
		struct stat st;

		if ((size_t)snprintf(out, outlen, "%s", name) >= outlen || stat(out, &st))
			return -ENOENT;
		return 0;
	}
	while (llp && *llp) {
		size_t n = strcspn(llp, ":");

		if (n && lib_try(llp, n, name, out, outlen))
			return 0;
		llp += n + (llp[n] == ':');
	}
	if (lib_try(slash ? prog : ".", slash ? (size_t)(slash - prog) : 1, name, out, outlen))
		return 0;
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
		if (lib_try(system_dirs[i], strlen(system_dirs[i]), name, out, outlen))
			return 0;
	return -ENOENT;
}

struct dpatch *dpatch_open(const struct uprobes_config *cfg, char *err, size_t errlen)
{
	bool functions = !cfg->no_functions && (cfg->npatterns || !cfg->nlibs);
	struct dpatch *head = NULL, **tail = &head;
	unsigned files = 0;

	if (functions || cfg->libcalls) {
		struct uprobes_config main = *cfg;

		main.no_functions = !functions;
		head = file_open(&main, false, err, errlen);
		if (!head)
			return NULL;
		tail = &head->next;
		files++;
	}
	for (uint32_t i = 0; i < cfg->nlibs; i++) {
		struct uprobes_config lc = { .npatterns = 0 };
		char path[4096];
		bool seen = false;
		int r;

		for (uint32_t k = 0; k < i; k++)
			seen |= !strcmp(cfg->libs[k].file, cfg->libs[i].file);
		if (seen)
			continue;
		for (uint32_t k = i; k < cfg->nlibs; k++)
			if (!strcmp(cfg->libs[k].file, cfg->libs[i].file))
				lc.patterns[lc.npatterns++] = cfg->libs[k].glob;
		r = lib_find(cfg->libs[i].file, cfg->path, path, sizeof(path));
		if (r || files == LP_PLAN_FILES_MAX) {
			if (r)
				snprintf(err, errlen,
				         "cannot find the library '%.300s' (a path, or a name in LD_LIBRARY_PATH, the "
				         "program's directory or the system's library directories)",
				         cfg->libs[i].file);
			else
				snprintf(err, errlen, "more than %u files to patch", LP_PLAN_FILES_MAX);
			dpatch_free(head);
			errno = r ? -r : E2BIG;
			return NULL;
		}
		lc.path = path;
		*tail = file_open(&lc, true, err, errlen);
		if (!*tail) {
			int e = errno;

			dpatch_free(head);
			errno = e;
			return NULL;
		}
		tail = &(*tail)->next;
		files++;
	}
	return head;
}

static int file_write(struct dpatch *p, const char *session, unsigned index, char *err, size_t errlen);

int dpatch_write(struct dpatch *p, const char *session, char *err, size_t errlen)
{
	int k = 0;

	for (; p; p = p->next) {
		int r = file_write(p, session, (unsigned)k++, err, errlen);

		if (r)
			return r;
	}
	return k;
}

static int file_write(struct dpatch *p, const char *session, unsigned index, char *err, size_t errlen)
{
	struct lp_plan_header h = {
		.magic = LP_PLAN_MAGIC,
		.version = LP_PLAN_VERSION,
		.arch = p->es->machine == EM_X86_64 ? LP_PLAN_X86_64 : LP_PLAN_AARCH64,
		.nfuncs = p->nfn,
		.dev = p->dev,
		.ino = p->ino,
		.nrelocs = p->nrel,
		.code_bytes = p->ncode,
	};
	size_t size = sizeof(h) + (size_t)p->nfn * sizeof(*p->fn) + (size_t)p->nrel * sizeof(*p->rel) + p->ncode;
	char path[4096];
	uint8_t *buf;
	void *map;
	int fd, r = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/" LP_PLAN_NAME ".%u", session, index) >= sizeof(path)) {
		snprintf(err, errlen, "session path too long");
		return -ENAMETOOLONG;
	}
	buf = malloc(size);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), p->fn, (size_t)p->nfn * sizeof(*p->fn));
	if (p->nrel)
		memcpy(buf + sizeof(h) + (size_t)p->nfn * sizeof(*p->fn), p->rel, (size_t)p->nrel * sizeof(*p->rel));
	if (p->ncode)
		memcpy(buf + size - p->ncode, p->code, p->ncode);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		r = -errno;
	else if (write(fd, buf, size) != (ssize_t)size)
		r = errno ? -errno : -EIO;
	free(buf);
	if (!r) {
		map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			r = -errno;
		else {
			p->map = map;
			p->map_size = size;
		}
	}
	if (fd >= 0)
		close(fd);
	if (r)
		snprintf(err, errlen, "cannot write the patch plan '%s': %s", path, strerror(-r));
	return r;
}

static const char *status_why(uint32_t status)
{
	switch (status) {
	case LP_PLAN_CHANGED:
		return "its bytes in the running program were not those of the file";
	case LP_PLAN_FAR:
		return "no room for its trampoline within a jump's reach";
	case LP_PLAN_UNWRITABLE:
		return "the program's code could not be made writable";
	default:
		return "not applied";
	}
}

/* One file's outcome: added to st, its skipped functions to the first
 * plan's list. */
static void file_stats(struct dpatch *head, struct dpatch *p, struct uprobes_stats *st, bool *applied)
{
	const struct lp_plan_func *fn =
	    p->map ? (const struct lp_plan_func *)(p->map + sizeof(struct lp_plan_header)) : NULL;
	size_t first = p->nskipped = p->planner_skipped;

	*applied = false;
	st->candidates += p->candidates;
	for (uint32_t i = 0; fn && i < p->nfn; i++) {
		uint32_t s = __atomic_load_n(&fn[i].status, __ATOMIC_RELAXED);

		if (s != LP_PLAN_PENDING)
			*applied = true;
		if (s == LP_PLAN_PATCHED)
			st->functions++;
		else if (s != LP_PLAN_PENDING)
			skip(p, p->name[i], status_why(s));
	}
	for (size_t i = 0; i < p->nskipped; i++)
		head->all[head->nall++] = p->skipped[i];
	/* a library the program never loaded: its functions, one line */
	if (p->lib && !*applied) {
		head->nall -= p->nskipped - first;
		head->all[head->nall].name = p->path;
		head->all[head->nall++].why = "the library was not loaded: none of its functions traced";
	}
}

void dpatch_get_stats(struct dpatch *p, struct uprobes_stats *st, bool *applied)
{
	size_t n = 0;

	memset(st, 0, sizeof(*st));
	*applied = false;
	for (struct dpatch *q = p; q; q = q->next)
		n += q->cap + 1;
	free(p->all);
	p->nall = 0;
	p->all = calloc(n, sizeof(*p->all));
	if (!p->all)
		return;
	for (struct dpatch *q = p; q; q = q->next) {
		bool a;

		file_stats(p, q, st, &a);
		if (!q->lib || q == p)
			*applied |= a;
	}
	st->skipped = p->all;
	st->nskipped = p->nall;
}

void dpatch_free(struct dpatch *p)
{
	if (!p)
		return;
	dpatch_free(p->next);
	free(p->all);
	if (p->map)
		munmap((void *)p->map, p->map_size);
	for (size_t i = 0; i < p->nowned; i++)
		free(p->owned[i]);
	free(p->owned);
	for (unsigned s = 0; s < p->nseg; s++)
		free(p->bytes[s]);
	free(p->targets);
	free(p->fn);
	free(p->name);
	free(p->rel);
	free(p->code);
	free(p->skipped);
	elfsyms_free(p->es);
	free(p->path);
	free(p);
}
