/* Small eBPF programs written as instructions, and the bpf(2) calls that
 * load them and manage their maps: what the eBPF syscall backend needs,
 * with libc only (no libbpf, no compiler for the BPF target). */
#ifndef LP_SYSTRACE_BPFPROG_H
#define LP_SYSTRACE_BPFPROG_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BPFPROG_MAX 512u /* instructions */
#define BPFPROG_LABELS 32u
#define BPFPROG_FIXES 64u

/* One instruction: BPF_ALU64/BPF_JMP/... code, registers, offset, imm. */
#define BPF_I(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define BI_MOV(d, s) BPF_I(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define BI_MOVI(d, i) BPF_I(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define BI_MOV32I(d, i) BPF_I(BPF_ALU | BPF_MOV | BPF_K, d, 0, 0, i) /* zero-extends */
#define BI_ADDI(d, i) BPF_I(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define BI_RSHI(d, i) BPF_I(BPF_ALU64 | BPF_RSH | BPF_K, d, 0, 0, i)
#define BI_ANDI(d, i) BPF_I(BPF_ALU64 | BPF_AND | BPF_K, d, 0, 0, i)
#define BI_LDX(sz, d, s, o) BPF_I(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define BI_STX(sz, d, s, o) BPF_I(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define BI_ST(sz, d, o, i) BPF_I(BPF_ST | BPF_MEM | (sz), d, 0, o, i)
#define BI_XADD(d, s, o) BPF_I(BPF_STX | BPF_ATOMIC | BPF_DW, d, s, o, BPF_ADD)
#define BI_CALL(fn) BPF_I(BPF_JMP | BPF_CALL, 0, 0, 0, fn)
#define BI_EXIT() BPF_I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* A program being written: jumps name labels, resolved at load. */
struct bpfprog {
	struct bpf_insn insn[BPFPROG_MAX];
	uint32_t n;
	int32_t label[BPFPROG_LABELS]; /* instruction index, -1 until placed */
	struct {
		uint32_t at, label;
	} fix[BPFPROG_FIXES];
	uint32_t nfix;
	bool overflow; /* a limit above was passed: the load fails */
};

void bpfprog_init(struct bpfprog *p);
void bpfprog_emit(struct bpfprog *p, struct bpf_insn insn);
/* if (dst <op> imm) goto label; op BPF_JA jumps always. */
void bpfprog_jump(struct bpfprog *p, uint8_t op, uint8_t dst, int32_t imm, unsigned label);
/* The next instruction is label's target. */
void bpfprog_label(struct bpfprog *p, unsigned label);
/* dst = the map whose descriptor is fd (two instructions). */
void bpfprog_map(struct bpfprog *p, uint8_t dst, int fd);
/* Resolves the jumps and loads the program (license "Dual BSD/GPL", which
 * the probe-read and perf-output helpers require).  Returns its descriptor,
 * or -errno with the verifier's last words in err. */
int bpfprog_load(struct bpfprog *p, enum bpf_prog_type type, char *err, size_t errlen);

/* bpf(2) map commands: a descriptor or 0, else -errno. */
int bpf_map_new(enum bpf_map_type type, uint32_t key_size, uint32_t value_size, uint32_t max_entries, uint32_t flags);
int bpf_map_put(int fd, const void *key, const void *value, uint64_t flags);
int bpf_map_get(int fd, const void *key, void *value);
int bpf_map_next(int fd, const void *key, void *next_key);
/* Attaches prog_fd to the raw tracepoint `name` until the returned
 * descriptor is closed. */
int bpf_raw_tracepoint(const char *name, int prog_fd);

#endif
