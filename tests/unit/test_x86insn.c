/* Unit test of dyntrace/x86insn: hand-written instructions of each kind
 * with their exact decodes; every one cut short refused; more than 15
 * bytes, opcodes invalid in 64-bit mode, a REX prefix before another
 * prefix, XOP refused.  (test_x86insn.py holds the decoder to objdump over
 * whole libraries.) */
#include <string.h>

#include "dyntrace/x86insn.h"
#include "tests/unit/check.h"

struct want {
	const char *what;
	unsigned len;
	uint8_t bytes[16];
	uint8_t kind, rel_size, rip_off, imm_size;
	int64_t rel;
	int32_t disp;
};

static const struct want cases[] = {
	{ "endbr64", 4, { 0xf3, 0x0f, 0x1e, 0xfa }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "push %rbp", 1, { 0x55 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "push %r12", 2, { 0x41, 0x54 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "sub $0x18,%rsp", 4, { 0x48, 0x83, 0xec, 0x18 }, X86_PLAIN, 0, 0, 1, 0, 0 },
	{ "sub $0x1000,%rsp", 7, { 0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00 }, X86_PLAIN, 0, 0, 4, 0, 0 },
	{ "mov 0x10(%rip),%rax", 7, { 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00 }, X86_PLAIN, 0, 3, 0, 0, 0x10 },
	{ "cmpl $0x1,-0x20(%rip)", 7, { 0x83, 0x3d, 0xe0, 0xff, 0xff, 0xff, 0x01 }, X86_PLAIN, 0, 2, 1, 0, -0x20 },
	{ "movabs $imm64,%rax", 10, { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, X86_PLAIN, 0, 0, 8, 0, 0 },
	{ "mov $imm16,%ax", 4, { 0x66, 0xb8, 1, 2 }, X86_PLAIN, 0, 0, 2, 0, 0 },
	{ "test $0x1,%dil", 4, { 0x40, 0xf6, 0xc7, 0x01 }, X86_PLAIN, 0, 0, 1, 0, 0 },
	{ "neg %eax", 2, { 0xf7, 0xd8 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "je -0x10", 2, { 0x74, 0xf0 }, X86_JCC_REL, 1, 0, 0, -0x10, 0 },
	{ "jne rel32", 6, { 0x0f, 0x85, 0x00, 0x01, 0x00, 0x00 }, X86_JCC_REL, 4, 0, 0, 0x100, 0 },
	{ "jmp rel8", 2, { 0xeb, 0x05 }, X86_JMP_REL, 1, 0, 0, 5, 0 },
	{ "jmp rel32", 5, { 0xe9, 0xfb, 0xff, 0xff, 0xff }, X86_JMP_REL, 4, 0, 0, -5, 0 },
	{ "call rel32", 5, { 0xe8, 0x10, 0x00, 0x00, 0x00 }, X86_CALL_REL, 4, 0, 0, 0x10, 0 },
	{ "TLS call padding", 8, { 0x66, 0x66, 0x48, 0xe8, 0x00, 0x00, 0x00, 0x00 }, X86_CALL_REL, 4, 0, 0, 0, 0 },
	{ "loop", 2, { 0xe2, 0xfe }, X86_LOOP_REL, 1, 0, 0, -2, 0 },
	{ "jrcxz", 2, { 0xe3, 0x02 }, X86_LOOP_REL, 1, 0, 0, 2, 0 },
	{ "ret", 1, { 0xc3 }, X86_RET, 0, 0, 0, 0, 0 },
	{ "ret $8", 3, { 0xc2, 0x08, 0x00 }, X86_RET, 0, 0, 2, 0, 0 },
	{ "jmp *%rax", 2, { 0xff, 0xe0 }, X86_JMP_IND, 0, 0, 0, 0, 0 },
	{ "notrack jmp *%rax", 3, { 0x3e, 0xff, 0xe0 }, X86_JMP_IND, 0, 0, 0, 0, 0 },
	{ "call *0x8(%rip)", 6, { 0xff, 0x15, 0x08, 0x00, 0x00, 0x00 }, X86_CALL_IND, 0, 2, 0, 0, 8 },
	{ "int3", 1, { 0xcc }, X86_TRAP, 0, 0, 0, 0, 0 },
	{ "ud2", 2, { 0x0f, 0x0b }, X86_TRAP, 0, 0, 0, 0, 0 },
	{ "xbegin", 6, { 0xc7, 0xf8, 0x20, 0x00, 0x00, 0x00 }, X86_XBEGIN, 4, 0, 0, 0x20, 0 },
	{ "nopw %cs:0x0(%rax,%rax,1)",
	  10,
	  { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0 },
	  X86_PLAIN,
	  0,
	  0,
	  0,
	  0,
	  0 },
	{ "data16 cs nopw", 11, { 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "mov %fs:0x28,%rax", 9, { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "enter $0x10,$0", 4, { 0xc8, 0x10, 0x00, 0x00 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "mov 0x1122334455667788,%al",
	  9,
	  { 0xa0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11 },
	  X86_PLAIN,
	  0,
	  0,
	  0,
	  0,
	  0 },
	{ "pshufd $0x1b,%xmm1,%xmm0", 5, { 0x66, 0x0f, 0x70, 0xc1, 0x1b }, X86_PLAIN, 0, 0, 1, 0, 0 },
	{ "pinsrd $1,0x10(%rip),%xmm0",
	  10,
	  { 0x66, 0x0f, 0x3a, 0x22, 0x05, 0x10, 0, 0, 0, 0x01 },
	  X86_PLAIN,
	  0,
	  5,
	  1,
	  0,
	  0x10 },
	{ "vpxor (%rip),%ymm1,%ymm0", 8, { 0xc5, 0xf5, 0xef, 0x05, 0, 0, 0, 0 }, X86_PLAIN, 0, 4, 0, 0, 0 },
	{ "vzeroupper", 3, { 0xc5, 0xf8, 0x77 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "vpermq $0xd8,%ymm0,%ymm0", 6, { 0xc4, 0xe3, 0xfd, 0x00, 0xc0, 0xd8 }, X86_PLAIN, 0, 0, 1, 0, 0 },
	{ "vmovdqu64 0x40(%rdi),%zmm0", 7, { 0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x47, 0x01 }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "vpternlogd $0x96,%zmm2,%zmm1,%zmm0",
	  7,
	  { 0x62, 0xf3, 0x75, 0x48, 0x25, 0xc2, 0x96 },
	  X86_PLAIN,
	  0,
	  0,
	  1,
	  0,
	  0 },
	{ "fstcw (fwait first)", 1, { 0x9b }, X86_PLAIN, 0, 0, 0, 0, 0 },
	{ "fnstcw 0x2(%rsp)", 4, { 0xd9, 0x7c, 0x24, 0x02 }, X86_PLAIN, 0, 0, 0, 0, 0 },
};

static const struct {
	const char *what;
	unsigned n;
	uint8_t bytes[16];
} refused[] = {
	{ "16 prefixes",
	  16,
	  { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90 } },
	{ "push %es (invalid in 64-bit mode)", 1, { 0x06 } },
	{ "aaa", 1, { 0x37 } },
	{ "callf ptr16:32", 7, { 0x9a, 0, 0, 0, 0, 0, 0 } },
	{ "rex before a legacy prefix", 4, { 0x48, 0x66, 0x89, 0xc0 } },
	{ "rex before vex", 4, { 0x48, 0xc5, 0xf8, 0x77 } },
	{ "xop", 5, { 0x8f, 0xe9, 0x78, 0xc1, 0xc0 } },
	{ "ff /7", 2, { 0xff, 0xf8 } },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		struct x86_insn in;
		unsigned len = x86_insn_decode(w->bytes, w->len, &in);

		if (!CHECK(len == w->len)) {
			printf("  %s: length %u, want %u\n", w->what, len, w->len);
			continue;
		}
		CHECK_EQ_U64(in.kind, w->kind);
		CHECK_EQ_U64(in.rip_off, w->rip_off);
		CHECK_EQ_U64(in.imm_size, w->imm_size);
		if (w->rel_size) {
			CHECK_EQ_U64(in.rel_size, w->rel_size);
			CHECK_EQ_U64((uint64_t)in.rel, (uint64_t)w->rel);
		}
		if (w->rip_off)
			CHECK_EQ_U64((uint64_t)(int64_t)in.disp, (uint64_t)(int64_t)w->disp);
		/* cut short anywhere: refused */
		for (unsigned k = 0; k < w->len; k++)
			if (!CHECK(x86_insn_decode(w->bytes, k, &in) == 0))
				printf("  %s: decoded from %u of its %u bytes\n", w->what, k, w->len);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct x86_insn in;

		if (!CHECK(x86_insn_decode(refused[i].bytes, refused[i].n, &in) == 0))
			printf("  %s: decoded\n", refused[i].what);
	}
	return check_summary();
}
