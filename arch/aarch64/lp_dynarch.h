/* aarch64's parts of in-process patching (runtime/dynpatch.c,
 * dynapply.c): a b at each patched entry, trampolines within 128 MiB, and
 * where arch/aarch64/dyntramp.S keeps the registers.  Included by those
 * files only, after runtime.h. */
#ifndef LP_DYNARCH_H
#define LP_DYNARCH_H

#include <string.h>

#define DYN_PLAN_ARCH LP_PLAN_AARCH64
#define DYN_JUMP 4u
#define DYN_STUB_SIZE 32u     /* bytes of a trampoline before the relocated code (dyn_stub_write) */
#define DYN_REACH 0x7ff0000ll /* b: +-128 MiB */
#define DYN_PROBE_STUB 56u    /* dyn_probe_stub_write's: its code 8-aligned (a literal's place) */
#define DYN_PROBE_ENTRY 16u
/* where the common paths keep the registers, in words from the stack
 * pointer at the function's entry: x0-x5, and the return value x0 */
#define DYN_ARG_SLOTS                        \
	{                                    \
		-82, -81, -80, -79, -78, -77 \
	}
#define DYN_RET_SLOT (-82)

/* The entry of the plan's function at addr, in the object loaded with
 * bias. */
static inline LP_NOINSTR uintptr_t dyn_entry_addr(uint64_t addr, uintptr_t bias)
{
	return (uintptr_t)addr + bias;
}

/* Where the function goes on from the common entry path: its relocated
 * code at c. */
static inline LP_NOINSTR uintptr_t dyn_code_addr(uint64_t addr, const uint8_t *c)
{
	(void)addr;
	return (uintptr_t)c;
}

/* ldr x16, 16; ldr x17, 24; br x17; nop; .quad rec; .quad entry (x16 and
 * x17 are free at a function's entry: veneers may use them) */
static inline LP_NOINSTR void dyn_stub_write(uint8_t *p, uintptr_t rec, uintptr_t entry, uint64_t addr)
{
	static const uint32_t insn[4] = { 0x58000090u, 0x580000b1u, 0xd61f0220u, 0xd503201fu };
	uint64_t r = rec, e = entry;

	(void)addr;
	memcpy(p, insn, sizeof(insn));
	memcpy(p + 16, &r, 8);
	memcpy(p + 24, &e, 8);
}

/* A probe's trampoline (.quad rec, .quad probe, then at DYN_PROBE_ENTRY):
 * x16, x17 and x30 kept on the stack, the probe path called with the
 * record in x16, all three given back; the relocated instruction follows.
 * (No red zone on aarch64: sp is the bound.) */
static inline LP_NOINSTR void dyn_probe_stub_write(uint8_t *p, uintptr_t rec, uintptr_t probe)
{
	static const uint32_t insn[10] = { 0xd10083ffu, 0xa90047f0u, 0xf9000bfeu, 0x58ffff30u, 0x58ffff51u,
		                           0xd63f0220u, 0xf9400bfeu, 0xa94047f0u, 0x910083ffu, 0xd503201fu };
	uint64_t r = rec, e = probe;

	memcpy(p, &r, 8);
	memcpy(p + 8, &e, 8);
	memcpy(p + 16, insn, sizeof(insn));
}

/* b to the trampoline t: one aligned word */
static inline LP_NOINSTR void dyn_entry_write(uintptr_t a, uintptr_t t, uint32_t len, uint64_t addr)
{
	uint32_t b = 0x14000000u | ((uint32_t)((intptr_t)(t - a) >> 2) & 0x3ffffffu);

	(void)len;
	(void)addr;
	__atomic_store_n((uint32_t *)a, b, __ATOMIC_RELAXED);
}

#endif
