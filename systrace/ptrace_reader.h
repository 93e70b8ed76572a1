/* Reading a stopped tracee for the ptrace backend: the syscall it is in
 * (PTRACE_GET_SYSCALL_INFO, or its registers before Linux 5.3), its memory
 * and the return addresses on its stack.  Tracer thread only, as every
 * ptrace request.  Only for the ptrace backend (systrace/ptrace*.c). */
#ifndef LP_SYSTRACE_PTRACE_READER_H
#define LP_SYSTRACE_PTRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>

/* A ptrace request with integer arguments: the result of ptrace(2). */
static inline long pt_req(int req, pid_t tid, uintptr_t addr, uintptr_t data)
{
	return ptrace((enum __ptrace_request)req, tid, (void *)addr, (void *)data);
}

/* What the reader knows of the kernel. */
struct pt_reader {
	size_t page;    /* the page size */
	bool have_info; /* PTRACE_GET_SYSCALL_INFO works (until it fails once) */
};

/* What a stop says about the call (from struct ptrace_syscall_info). */
enum pt_info_op {
	PT_INFO_NONE = 0, /* read from the registers: entry or exit unknown */
	PT_INFO_ENTRY = 1,
	PT_INFO_EXIT = 2,
	PT_INFO_SECCOMP = 3,
};
struct pt_call {
	int op; /* enum pt_info_op */
	bool compat;
	uint32_t nr;
	uint64_t args[6];
	int64_t ret;
	uint64_t ip, sp;
};

void pt_reader_init(struct pt_reader *r);
/* Reads the call at the current stop of `tid`: PTRACE_GET_SYSCALL_INFO
 * when the kernel has it, else the registers (then c->op is PT_INFO_NONE
 * and the caller knows from the task's state whether it is an entry).
 * Returns 0 or -errno. */
int pt_reader_call(struct pt_reader *r, pid_t tid, struct pt_call *c);
/* Copies up to `len` bytes at `addr` of task `tid`, split at the first
 * page boundary so that a string or a frame ending just before an unmapped
 * page is still read.  Returns the bytes read, or -1. */
ssize_t pt_reader_mem(const struct pt_reader *r, pid_t tid, uint64_t addr, void *buf, size_t len);
/* Return addresses above the syscall of stopped task `tid`, innermost
 * first, into out[max]; returns their number.  x86-64 and aarch64 walk the
 * frame-pointer chain ({saved fp, return address} at fp), stopping at the
 * first frame that is out of order, misaligned, off the stack or points
 * below PT_MIN_CODE (not code).  arm has no frame layout common to ARM and Thumb code:
 * it gives the link register, which in the C library's syscall wrappers is
 * the wrapper's caller.  Nothing for a compat task. */
unsigned pt_reader_stack(const struct pt_reader *r, pid_t tid, uint64_t *out, unsigned max);

#endif
