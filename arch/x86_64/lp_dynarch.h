/* x86-64's parts of in-process patching (runtime/dynpatch.c, dynapply.c):
 * a jmp rel32 at each patched entry, trampolines within 2 GiB, and where
 * arch/x86_64/dyntramp.S keeps the registers.  Included by those files
 * only, after runtime.h. */
#ifndef LP_DYNARCH_H
#define LP_DYNARCH_H

#include <string.h>

#define DYN_PLAN_ARCH LP_PLAN_X86_64
#define DYN_JUMP 5u       /* jmp rel32 at the entry */
#define DYN_STUB_SIZE 26u /* bytes of a trampoline before the relocated code (dyn_stub_write) */
#define DYN_REACH 0x7fff0000ll
#define DYN_PROBE_STUB 41u /* dyn_probe_stub_write's, and where its code begins */
#define DYN_PROBE_ENTRY 8u
/* where the common paths keep the registers, in words from the stack
 * pointer at the function's entry: the integer arguments (rdi rsi rdx rcx
 * r8 r9; below them the saved r11 and the continuation's slot, then rax),
 * and the return value (rax, below the return address) */
#define DYN_ARG_SLOTS                  \
	{                              \
		-4, -5, -6, -7, -8, -9 \
	}
#define DYN_RET_SLOT (-1)

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

/* push %r11; movabs $rec, %r11; jmp *0(%rip); .quad entry (the caller's
 * %r11 kept below the return address: lp_dyn_entry gives it back) */
static inline LP_NOINSTR void dyn_stub_write(uint8_t *p, uintptr_t rec, uintptr_t entry, uint64_t addr)
{
	uint64_t r = rec, e = entry;
	int32_t zero = 0;

	(void)addr;
	p[0] = 0x41;
	p[1] = 0x53;
	p[2] = 0x49;
	p[3] = 0xbb;
	memcpy(p + 4, &r, 8);
	p[12] = 0xff;
	p[13] = 0x25;
	memcpy(p + 14, &zero, 4);
	memcpy(p + 18, &e, 8);
}

/* A probe's trampoline (.quad probe, then at DYN_PROBE_ENTRY): the red
 * zone stepped over, %r11 kept, the probe path called with the record in
 * %r11, both given back; the relocated instructions follow. */
static inline LP_NOINSTR void dyn_probe_stub_write(uint8_t *p, uintptr_t rec, uintptr_t probe)
{
	static const uint8_t head[] = { 0x48, 0x8d, 0x64, 0x24, 0x80, 0x41, 0x53, 0x49, 0xbb };
	static const uint8_t tail[] = { 0xff, 0x15, 0xe1, 0xff, 0xff, 0xff, /* call *-31(%rip) */
		                        0x41, 0x5b, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00 };
	uint64_t r = rec, e = probe;

	memcpy(p, &e, 8);
	memcpy(p + 8, head, sizeof(head));
	memcpy(p + 8 + sizeof(head), &r, 8);
	memcpy(p + 8 + sizeof(head) + 8, tail, sizeof(tail));
}

/* jmp rel32 to the trampoline t; the rest of the replaced bytes is never
 * reached (no branch lands there: the plan checked) */
static inline LP_NOINSTR void dyn_entry_write(uintptr_t a, uintptr_t t, uint32_t len, uint64_t addr)
{
	uint8_t jump[LP_PLAN_ORIG_MAX];
	int32_t d = (int32_t)(t - (a + 5));

	(void)addr;
	memset(jump, 0xcc, sizeof(jump));
	jump[0] = 0xe9;
	memcpy(jump + 1, &d, 4);
	memcpy((void *)a, jump, len);
}

#endif
