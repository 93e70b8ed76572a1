/* 32-bit ARM's parts of in-process patching (runtime/dynpatch.c,
 * dynapply.c): a b (ARM code) or b.w (Thumb code) at each patched entry,
 * trampolines within 16 MiB, and where arch/arm/dyntramp.S keeps the
 * registers.  A plan names a Thumb function by its symbol's value, bit 0
 * set.  Included by those files only, after runtime.h. */
#ifndef LP_DYNARCH_H
#define LP_DYNARCH_H

#include <string.h>

#define DYN_PLAN_ARCH LP_PLAN_ARM
#define DYN_JUMP 4u
/* bytes of a trampoline before the relocated code (dyn_stub_write): the
 * code stays 4-aligned, as its literal loads need (dplan_arm.c) */
#define DYN_STUB_SIZE 16u
#define DYN_REACH 0xff0000ll /* b.w: +-16 MiB (b: 32) */
/* where the common paths keep the registers, in words from the stack
 * pointer at the function's entry: r0-r3, then the caller's stack, where
 * the fifth and sixth arguments are; the return value r0 */
#define DYN_ARG_SLOTS                \
	{                            \
		-6, -5, -4, -3, 0, 1 \
	}
#define DYN_RET_SLOT (-4)

/* The entry of the plan's function at addr, in the object loaded with
 * bias: the code's address (a Thumb function's symbol has bit 0 set). */
static inline LP_NOINSTR uintptr_t dyn_entry_addr(uint64_t addr, uintptr_t bias)
{
	return ((uintptr_t)addr & ~(uintptr_t)1) + bias;
}

/* Where the function goes on from the common entry path (by bx): its
 * relocated code at c, Thumb code for a Thumb function. */
static inline LP_NOINSTR uintptr_t dyn_code_addr(uint64_t addr, const uint8_t *c)
{
	return (uintptr_t)c | (uintptr_t)(addr & 1);
}

/* ldr ip, [pc, #0]; ldr pc, [pc, #0]; .word rec; .word entry (ARM code),
 * or ldr.w ip, [pc, #4]; ldr.w pc, [pc, #4]; ... (Thumb code, reached from
 * a Thumb function's b.w).  ip is free at a function's entry (veneers and
 * PLT stubs use it); the load of pc enters lp_dyn_entry in ARM state. */
static inline LP_NOINSTR void dyn_stub_write(uint8_t *p, uintptr_t rec, uintptr_t entry, uint64_t addr)
{
	static const uint32_t arm[2] = { 0xe59fc000u, 0xe59ff000u };
	static const uint16_t thumb[4] = { 0xf8df, 0xc004, 0xf8df, 0xf004 };
	uint32_t r = rec, e = entry;

	if (addr & 1)
		memcpy(p, thumb, sizeof(thumb));
	else
		memcpy(p, arm, sizeof(arm));
	memcpy(p + 8, &r, 4);
	memcpy(p + 12, &e, 4);
}

/* b (ARM) or b.w (Thumb) to the trampoline t */
static inline LP_NOINSTR void dyn_entry_write(uintptr_t a, uintptr_t t, uint32_t len, uint64_t addr)
{
	int32_t d;

	(void)len;
	if (addr & 1) {
		uint32_t s, imm, j1, j2;
		uint16_t hw[2];

		d = (int32_t)(t - (a + 4));
		s = (uint32_t)d >> 31;
		imm = (uint32_t)d;
		j1 = (((imm >> 23) & 1) ^ s) ? 0 : 1;
		j2 = (((imm >> 22) & 1) ^ s) ? 0 : 1;
		hw[0] = (uint16_t)(0xf000 | s << 10 | ((imm >> 12) & 0x3ff));
		hw[1] = (uint16_t)(0x9000 | j1 << 13 | j2 << 11 | ((imm >> 1) & 0x7ff));
		memcpy((void *)a, hw, 4);
	} else {
		d = (int32_t)(t - (a + 8));
		__atomic_store_n((uint32_t *)a, 0xea000000u | (((uint32_t)d >> 2) & 0xffffffu), __ATOMIC_RELAXED);
	}
}

#endif
