/* Register access for the ptrace backend, one small block per architecture:
 * what a stopped tracee's general registers say about the syscall it is in
 * and about its stack.  Read with PTRACE_GETREGSET (NT_PRSTATUS), which all
 * three architectures support; used for the frame pointer (which
 * PTRACE_GET_SYSCALL_INFO does not give) and as the fallback before
 * Linux 5.3.  Only for the ptrace backend (systrace/ptrace*.c). */
#ifndef LP_SYSTRACE_PTRACE_ARCH_H
#define LP_SYSTRACE_PTRACE_ARCH_H

#include <elf.h>
#include <errno.h>
#include <linux/audit.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>

/* A stopped tracee's registers, in the terms the tracer needs.  At a
 * syscall-exit-stop `args` may no longer hold the arguments (the first
 * is the return value's register on the arm architectures). */
struct pt_uregs {
	uint32_t nr;
	uint64_t args[6];
	int64_t ret;
	uint64_t ip, sp, fp;
	uint64_t lr; /* arm: the link register (0 elsewhere) */
	bool compat; /* a 32-bit task under a 64-bit kernel: not traced */
};

#if defined(__x86_64__)
#define PT_AUDIT_ARCH AUDIT_ARCH_X86_64
#define PT_WORD 8u
typedef struct user_regs_struct pt_raw_regs;

static inline void pt_regs_decode(const pt_raw_regs *r, struct pt_uregs *out)
{
	out->nr = (uint32_t)r->orig_rax;
	out->args[0] = r->rdi;
	out->args[1] = r->rsi;
	out->args[2] = r->rdx;
	out->args[3] = r->r10;
	out->args[4] = r->r8;
	out->args[5] = r->r9;
	out->ret = (int64_t)r->rax;
	out->ip = r->rip;
	out->sp = r->rsp;
	out->fp = r->rbp;
	out->lr = 0;
}
#elif defined(__aarch64__)
#define PT_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define PT_WORD 8u
typedef struct user_regs_struct pt_raw_regs;

static inline void pt_regs_decode(const pt_raw_regs *r, struct pt_uregs *out)
{
	out->nr = (uint32_t)r->regs[8];
	for (int i = 0; i < 6; i++)
		out->args[i] = r->regs[i];
	out->ret = (int64_t)r->regs[0];
	out->ip = r->pc;
	out->sp = r->sp;
	out->fp = r->regs[29];
	out->lr = 0;
}
#elif defined(__arm__)
#define PT_AUDIT_ARCH AUDIT_ARCH_ARM
#define PT_WORD 4u
typedef struct user_regs pt_raw_regs;

/* EABI: the number in r7, arguments in r0-r5, the result in r0 */
static inline void pt_regs_decode(const pt_raw_regs *r, struct pt_uregs *out)
{
	out->nr = (uint32_t)r->uregs[7];
	for (int i = 0; i < 6; i++)
		out->args[i] = (uint32_t)r->uregs[i];
	out->ret = (int32_t)r->uregs[0];
	out->ip = (uint32_t)r->uregs[15];
	out->sp = (uint32_t)r->uregs[13];
	out->fp = (uint32_t)r->uregs[11];
	out->lr = (uint32_t)r->uregs[14];
}
#else
/* Another architecture: the backend builds, and pt_probe says it cannot
 * work here. */
#define PT_AUDIT_ARCH 0u
#define PT_WORD ((unsigned)sizeof(long))
typedef struct {
	unsigned long r[64];
} pt_raw_regs;

static inline void pt_regs_decode(const pt_raw_regs *r, struct pt_uregs *out)
{
	(void)r;
	memset(out, 0, sizeof(*out));
}
#endif

/* Reads the registers of stopped task `tid`.  A compat (32-bit) task gets
 * a shorter register set from the kernel: it is only marked.  Returns 0 or
 * -errno. */
static inline int pt_regs_read(pid_t tid, struct pt_uregs *out)
{
	pt_raw_regs raw;
	struct iovec iov = { &raw, sizeof(raw) };

	memset(&raw, 0, sizeof(raw));
	memset(out, 0, sizeof(*out));
	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) < 0)
		return -errno;
	out->compat = iov.iov_len != sizeof(raw);
	if (!out->compat)
		pt_regs_decode(&raw, out);
	return 0;
}

#endif
