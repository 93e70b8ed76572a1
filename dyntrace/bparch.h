/* The ptrace backend's architecture part: the trap instruction, where the
 * program counter is after one, a call's return address and stack pointer
 * at entry and after the return.  Only for dyntrace/bp*.c. */
#ifndef LP_DYNTRACE_BPARCH_H
#define LP_DYNTRACE_BPARCH_H

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>

#if defined(__x86_64__)
#define BP_SUPPORTED 1
#define BP_MACHINE EM_X86_64
#define BP_LEN 1u
#define BP_INSN      \
	{            \
		0xcc \
	} /* int3 */
/* an int3 raises SIGTRAP with si_code SI_KERNEL, the pc past it */
#define BP_TRAP_CODE SI_KERNEL
#define BP_PC_AFTER 1u
/* the call pushed the return address: the return pops it */
#define BP_RET_IN_MEMORY 1
#define BP_RET_SP 8u
typedef struct user_regs_struct bp_regs;

static inline uint64_t bp_pc(const bp_regs *r)
{
	return r->rip;
}

static inline void bp_set_pc(bp_regs *r, uint64_t pc)
{
	r->rip = pc;
}

static inline uint64_t bp_sp(const bp_regs *r)
{
	return r->rsp;
}

static inline uint64_t bp_lr(const bp_regs *r)
{
	(void)r;
	return 0;
}
#elif defined(__aarch64__)
#define BP_SUPPORTED 1
#define BP_MACHINE EM_AARCH64
#define BP_LEN 4u
#define BP_INSN                        \
	{                              \
		0x00, 0x00, 0x20, 0xd4 \
	} /* BRK #0, little-endian */
/* a BRK raises SIGTRAP with si_code TRAP_BRKPT, the pc on it */
#define BP_TRAP_CODE TRAP_BRKPT
#define BP_PC_AFTER 0u
/* the call left the return address in the link register (x30) and the
 * stack pointer as it was */
#define BP_RET_IN_MEMORY 0
#define BP_RET_SP 0u
typedef struct user_regs_struct bp_regs;

static inline uint64_t bp_pc(const bp_regs *r)
{
	return r->pc;
}

static inline void bp_set_pc(bp_regs *r, uint64_t pc)
{
	r->pc = pc;
}

static inline uint64_t bp_sp(const bp_regs *r)
{
	return r->sp;
}

static inline uint64_t bp_lr(const bp_regs *r)
{
	return r->regs[30];
}
#else
/* Another architecture (armhf): the backend builds and refuses to run. */
#define BP_SUPPORTED 0
#define BP_MACHINE EM_NONE
#define BP_LEN 4u
#define BP_INSN   \
	{         \
		0 \
	}
#define BP_TRAP_CODE 0
#define BP_PC_AFTER 0u
#define BP_RET_IN_MEMORY 0
#define BP_RET_SP 0u
typedef struct {
	unsigned long r[64];
} bp_regs;

static inline uint64_t bp_pc(const bp_regs *r)
{
	(void)r;
	return 0;
}

static inline void bp_set_pc(bp_regs *r, uint64_t pc)
{
	(void)r;
	(void)pc;
}

static inline uint64_t bp_sp(const bp_regs *r)
{
	(void)r;
	return 0;
}

static inline uint64_t bp_lr(const bp_regs *r)
{
	(void)r;
	return 0;
}
#endif

/* The general registers of stopped task tid.  Returns 0 or -errno. */
static inline int bp_regs_get(pid_t tid, bp_regs *r)
{
	struct iovec iov;

	memset(r, 0, sizeof(*r));
	iov.iov_base = r;
	iov.iov_len = sizeof(*r);
	return ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) < 0 ? -errno : 0;
}

static inline int bp_regs_set(pid_t tid, bp_regs *r)
{
	struct iovec iov = { r, sizeof(*r) };

	return ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) < 0 ? -errno : 0;
}

#endif
