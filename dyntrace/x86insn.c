/* The x86-64 instruction decoder (see x86insn.h).  Opcode tables by map,
 * one flag byte per opcode; what one flag cannot say (groups whose
 * immediate depends on ModRM.reg, VEX/EVEX, moffs) is done in code. */
#include <string.h>

#include "dyntrace/x86insn.h"

enum {
	M = 1 << 0,   /* a ModRM byte follows */
	I8 = 1 << 1,  /* an 8-bit immediate */
	IZ = 1 << 2,  /* a 16- or 32-bit immediate (66 prefix: 16) */
	I16 = 1 << 3, /* a 16-bit immediate */
	IV = 1 << 4,  /* a 16-, 32- or 64-bit immediate (B8+r: REX.W makes it 64) */
	X = 1 << 5,   /* invalid in 64-bit mode */
	S = 1 << 6,   /* special: handled in code */
};

#define X16(f) f, f, f, f, f, f, f, f, f, f, f, f, f, f, f, f

/* The one-byte map, as 64-bit mode reads it. */
// clang-format off
static const uint8_t map0[256] = {
	/* 00 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, S,
	/* 10 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 20 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 30 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 40 */ X16(X), /* REX: taken as a prefix before */
	/* 50 */ X16(0),
	/* 60 */ X, X, S, M, X, X, X, X, IZ, M | IZ, I8, M | I8, 0, 0, 0, 0,
	/* 70 */ X16(S),
	/* 80 */ M | I8, M | IZ, X, M | I8, M, M, M, M, M, M, M, M, M, M, M, S,
	/* 90 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, X, 0, 0, 0, 0, 0,
	/* a0 */ S, S, S, S, 0, 0, 0, 0, I8, IZ, 0, 0, 0, 0, 0, 0,
	/* b0 */ I8, I8, I8, I8, I8, I8, I8, I8, IV, IV, IV, IV, IV, IV, IV, IV,
	/* c0 */ M | I8, M | I8, I16, 0, S, S, M | I8, M | IZ, S, 0, I16, 0, 0, I8, X, 0,
	/* d0 */ M, M, M, M, X, X, X, 0, M, M, M, M, M, M, M, M,
	/* e0 */ S, S, S, S, I8, I8, I8, I8, S, S, X, S, 0, 0, 0, 0,
	/* f0 */ X, 0, X, X, 0, 0, M, M, 0, 0, 0, 0, 0, 0, M, M,
};

/* The 0F map. */
static const uint8_t map1[256] = {
	/* 00 */ M, M, M, M, X, 0, 0, 0, 0, 0, X, 0, X, M, 0, M | I8,
	/* 10 */ X16(M),
	/* 20 */ M, M, M, M, X, X, X, X, M, M, M, M, M, M, M, M,
	/* 30 */ 0, 0, 0, 0, 0, 0, X, 0, S, X, S, X, X, X, X, X,
	/* 40 */ X16(M),
	/* 50 */ X16(M),
	/* 60 */ X16(M),
	/* 70 */ M | I8, M | I8, M | I8, M | I8, M, M, M, 0, S, M, X, X, M, M, M, M,
	/* 80 */ X16(S),
	/* 90 */ X16(M),
	/* a0 */ 0, 0, 0, M, M | I8, M, X, X, 0, 0, 0, M, M | I8, M, M, M,
	/* b0 */ M, M, M, M, M, M, M, M, M, M, M | I8, M, M, M, M, M,
	/* c0 */ M, M, M | I8, M, M | I8, M | I8, M | I8, M, 0, 0, 0, 0, 0, 0, 0, 0,
	/* d0 */ X16(M),
	/* e0 */ X16(M),
	/* f0 */ X16(M),
};
// clang-format on

/* The prefixes' effect on what follows. */
struct prefixes {
	unsigned opsize : 1; /* 66 */
	unsigned adsize : 1; /* 67 */
	unsigned repne : 1;  /* F2 */
	uint8_t rex;
};

/* ModRM at p[i] and what it brings (SIB, displacement); sets the
 * RIP-relative disp32's offset.  Returns the offset after them, or 0. */
static size_t modrm(const uint8_t *p, size_t avail, size_t i, struct x86_insn *out)
{
	uint8_t m, mod, rm;

	if (i >= avail)
		return 0;
	m = p[i++];
	mod = m >> 6;
	rm = m & 7;
	if (mod == 3)
		return i;
	if (rm == 4) { /* SIB */
		if (i >= avail)
			return 0;
		if (mod == 0 && (p[i] & 7) == 5)
			i += 4; /* no base: disp32 */
		i++;
	} else if (mod == 0 && rm == 5) {
		out->rip_off = (uint8_t)i;
		return i + 4;
	}
	if (mod == 1)
		i += 1;
	else if (mod == 2)
		i += 4;
	return i;
}

/* The immediate of a VEX or EVEX instruction of the given map. */
static unsigned vex_imm(unsigned map, uint8_t op)
{
	if (map == 3)
		return 1;
	if (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6))
		return 1;
	return 0;
}

/* A VEX (C4, C5) or EVEX (62) instruction from its first byte at p[i]. */
static size_t vex(const uint8_t *p, size_t avail, size_t i, struct x86_insn *out)
{
	uint8_t first = p[i];
	unsigned map;
	uint8_t op;

	if (first == 0xc5) {
		map = 1;
		i += 2;
	} else if (first == 0xc4) {
		if (i + 1 >= avail)
			return 0;
		map = p[i + 1] & 0x1f;
		i += 3;
	} else {
		if (i + 3 >= avail)
			return 0;
		map = p[i + 1] & 7;
		if (!(p[i + 2] & 4)) /* a fixed 1 bit of EVEX */
			return 0;
		i += 4;
	}
	if (map == 0 || map == 4 || map == 7 || (first != 0x62 && map > 3))
		return 0;
	if (i >= avail)
		return 0;
	op = p[i++];
	if (map == 1 && op == 0x77 && first != 0x62) /* vzeroupper, vzeroall */
		return i;
	i = modrm(p, avail, i, out);
	if (!i)
		return 0;
	out->imm_size = (uint8_t)vex_imm(map, op);
	return i + out->imm_size;
}

static void rel_at(struct x86_insn *out, const uint8_t *p, size_t i, unsigned size, enum x86_kind kind)
{
	out->kind = (uint8_t)kind;
	out->rel_off = (uint8_t)i;
	out->rel_size = (uint8_t)size;
	if (size == 1)
		out->rel = (int8_t)p[i];
	else {
		int32_t v;

		memcpy(&v, p + i, 4);
		out->rel = v;
	}
}

/* The 0F map, the opcode byte at p[i]. */
static size_t map1_insn(const uint8_t *p, size_t avail, size_t i, const struct prefixes *px, struct x86_insn *out)
{
	uint8_t op = p[i++], f = map1[op];
	unsigned imm = 0;

	if (f & X)
		return 0;
	if (op == 0x38 || op == 0x3a) { /* the three-byte maps: ModRM, and 0F 3A an imm8 */
		if (i >= avail)
			return 0;
		i = modrm(p, avail, i + 1, out);
		imm = op == 0x3a;
	} else if (op >= 0x80 && op <= 0x8f) {
		if (i + 4 > avail)
			return 0;
		out->cond = op & 15;
		rel_at(out, p, i, 4, X86_JCC_REL);
		return i + 4;
	} else if (op == 0x78) { /* vmread; with 66 or F2, SSE4a's extrq/insertq imm8, imm8 */
		i = modrm(p, avail, i, out);
		imm = (px->opsize || px->repne) ? 2 : 0;
	} else {
		if (op == 0x0b || op == 0xb9 || op == 0xff)
			out->kind = X86_TRAP;
		if (f & M)
			i = modrm(p, avail, i, out);
		imm = (f & I8) ? 1 : 0;
	}
	if (!i)
		return 0;
	out->imm_size = (uint8_t)imm;
	return i + imm;
}

unsigned x86_insn_decode(const uint8_t *p, size_t avail, struct x86_insn *out)
{
	struct prefixes px = { 0, 0, 0, 0 };
	size_t i = 0, end;
	unsigned imm = 0;
	uint8_t op, f;

	memset(out, 0, sizeof(*out));
	if (avail > 15)
		avail = 15; /* no instruction is longer */
	for (;; i++) {
		if (i >= avail)
			return 0;
		if (p[i] == 0x66)
			px.opsize = 1;
		else if (p[i] == 0x67)
			px.adsize = 1;
		else if (p[i] == 0xf2)
			px.repne = 1;
		else if (p[i] != 0xf0 && p[i] != 0xf3 && p[i] != 0x2e && p[i] != 0x36 && p[i] != 0x3e && p[i] != 0x26 &&
		         p[i] != 0x64 && p[i] != 0x65)
			break;
	}
	if ((p[i] & 0xf0) == 0x40) { /* REX: the last prefix, or the CPU ignores it */
		px.rex = p[i++];
		if (i >= avail || p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf0 || p[i] == 0xf2 || p[i] == 0xf3 ||
		    (p[i] & 0xf0) == 0x40 || p[i] == 0xc4 || p[i] == 0xc5 || p[i] == 0x62)
			return 0;
	}
	op = p[i];
	f = map0[op];
	if (f & X)
		return 0;
	if (op == 0xc4 || op == 0xc5 || op == 0x62) {
		end = vex(p, avail, i, out);
	} else if (op == 0x0f) {
		if (i + 1 >= avail)
			return 0;
		end = map1_insn(p, avail, i + 1, &px, out);
	} else if (op == 0x8f) {
		/* pop r/m (ModRM.reg 0); otherwise AMD's XOP, not decoded */
		if (i + 1 >= avail || ((p[i + 1] >> 3) & 7))
			return 0;
		end = modrm(p, avail, i + 1, out);
	} else if ((op >= 0x70 && op <= 0x7f) || op == 0xeb || (op >= 0xe0 && op <= 0xe3)) {
		if (i + 2 > avail)
			return 0;
		out->cond = op & 15;
		rel_at(out, p, i + 1, 1, op == 0xeb ? X86_JMP_REL : op >= 0xe0 ? X86_LOOP_REL : X86_JCC_REL);
		end = i + 2;
	} else if (op == 0xe8 || op == 0xe9) {
		/* a 66 prefix does not shorten the displacement in 64-bit code
		 * (the padding of a TLS call is data16 data16 rex.W call) */
		if (i + 5 > avail)
			return 0;
		rel_at(out, p, i + 1, 4, op == 0xe8 ? X86_CALL_REL : X86_JMP_REL);
		end = i + 5;
	} else if (op >= 0xa0 && op <= 0xa3) { /* mov with a 64-bit (67: 32-bit) address */
		end = i + 1 + (px.adsize ? 4 : 8);
	} else if (op == 0xc8) { /* enter imm16, imm8 */
		end = i + 4;
	} else {
		end = i + 1;
		if (f & M) {
			uint8_t reg;

			if (end >= avail)
				return 0;
			reg = (p[end] >> 3) & 7;
			if (op == 0xc7 && p[end] == 0xf8) { /* xbegin rel32 */
				if (px.opsize || end + 5 > avail)
					return 0;
				rel_at(out, p, end + 1, 4, X86_XBEGIN);
				out->len = (uint8_t)(end + 5);
				return out->len;
			}
			if ((op == 0xf6 || op == 0xf7) && reg < 2)
				f |= op == 0xf6 ? I8 : IZ; /* test r/m, imm */
			if (op == 0xff) {
				if (reg == 7)
					return 0;
				if (reg == 2 || reg == 3)
					out->kind = X86_CALL_IND;
				else if (reg == 4 || reg == 5)
					out->kind = X86_JMP_IND;
			}
			end = modrm(p, avail, end, out);
			if (!end)
				return 0;
		}
		if (f & I8)
			imm = 1;
		else if (f & I16)
			imm = 2;
		else if (f & IZ)
			imm = px.opsize ? 2 : 4;
		else if (f & IV)
			imm = (px.rex & 8) ? 8 : px.opsize ? 2 : 4;
		out->imm_size = (uint8_t)imm;
		end += imm;
		if (op == 0xc2 || op == 0xc3 || op == 0xca || op == 0xcb || op == 0xcf)
			out->kind = X86_RET;
		else if (op == 0xcc || op == 0xcd || op == 0xf4)
			out->kind = X86_TRAP;
	}
	if (!end || end > avail)
		return 0;
	if (out->rip_off) {
		int32_t d;

		memcpy(&d, p + out->rip_off, 4);
		out->disp = d;
	}
	out->len = (uint8_t)end;
	return out->len;
}
