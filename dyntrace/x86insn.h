/* An x86-64 instruction decoder for the patch planner (dpatch.c): the
 * length of an instruction of 64-bit code, whether it transfers control
 * relative to its own address (and where its displacement is), and whether
 * it has a RIP-relative memory operand (and where its disp32 is) — what
 * moving an instruction to another address needs, and no more.  It decodes
 * the general-purpose, x87, MMX, SSE to SSE4.2, AES, SHA, VEX (AVX, AVX2,
 * FMA, BMI) and EVEX (AVX-512, AVX512-FP16) encodings; it refuses what it
 * does not know (XOP, opcodes invalid in 64-bit mode, a REX prefix that is
 * not the last one) rather than guess.  Held to objdump over whole system
 * libraries by tests/integration/test_x86insn.py.  C11 and libc only. */
#ifndef LP_DYNTRACE_X86INSN_H
#define LP_DYNTRACE_X86INSN_H

#include <stddef.h>
#include <stdint.h>

enum x86_kind {
	X86_PLAIN = 0, /* no control transfer relative to its own address */
	X86_JMP_REL,   /* jmp rel8 / rel32 (EB, E9) */
	X86_JCC_REL,   /* jcc rel8 / rel32 (70-7F, 0F 80-8F); cond: the low 4 bits */
	X86_CALL_REL,  /* call rel32 (E8) */
	X86_LOOP_REL,  /* loop, loope, loopne, jrcxz (E0-E3): rel8 only */
	X86_RET,       /* ret, ret imm16, far returns, iret */
	X86_JMP_IND,   /* jmp r/m (FF /4, FF /5) */
	X86_CALL_IND,  /* call r/m (FF /2, FF /3) */
	X86_TRAP,      /* int3, int n, hlt, ud0, ud1, ud2: control does not go on after it */
	X86_XBEGIN,    /* xbegin rel32 (C7 F8): the abort path is relative */
};

struct x86_insn {
	uint8_t len;      /* bytes */
	uint8_t kind;     /* enum x86_kind */
	uint8_t cond;     /* X86_JCC_REL: the condition (0-15) */
	uint8_t rel_off;  /* *_REL, X86_XBEGIN: offset of the displacement */
	uint8_t rel_size; /* *_REL, X86_XBEGIN: 1 or 4 */
	uint8_t rip_off;  /* offset of a RIP-relative operand's disp32, or 0 */
	uint8_t imm_size; /* bytes of immediate after the displacement */
	int64_t rel;      /* *_REL, X86_XBEGIN: target = address + len + rel */
	int32_t disp;     /* rip_off != 0: target = address + len + disp */
};

/* Decodes one instruction of 64-bit code at p, of which avail bytes may be
 * read.  Returns its length (1 to 15) with *out filled, or 0 when the bytes
 * are no complete instruction this decoder knows.  Never reads p[avail] or
 * beyond. */
unsigned x86_insn_decode(const uint8_t *p, size_t avail, struct x86_insn *out);

#endif
