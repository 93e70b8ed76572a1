/* The dynamic tracer's ptrace backend: the functions of an unmodified
 * executable traced with breakpoints, for kernels without uprobes.  A
 * tracer thread seizes the program held before its exec, writes a trap
 * instruction (x86-64 int3, aarch64 BRK #0) at each chosen function's
 * entry once the executable is mapped, and at each hit records the entry
 * and puts a trap at the return address; a hit there at the stack
 * pointer the return leaves is the call's exit.  Each trap is stepped
 * over with the original instruction put back for one PTRACE_SINGLESTEP,
 * while the other threads of the address space are held stopped, so
 * that none runs past it untraced.  Threads, forks (a child inherits
 * the traps and its open frames), vforks, execs (the same file is traced
 * again, another is followed untraced) and signals are followed.  The
 * records reach the caller through the uprobe backend's callbacks
 * (uprobes.h), so that the same drain (udrain.h) takes them.
 *
 * Cost: three or four ptrace stops per traced call (the entry, its step,
 * the return, and a step when the return's trap stays for other frames),
 * each some tens of µs, and with several threads a stop of each of them
 * per step.  Slow: for kernels without uprobes, where it is the only way.
 *
 * If the recorder ends in an orderly way with the program still running
 * (interrupted, or the program's main process gone before its children),
 * the tracer stops every tracee, puts every original instruction back and
 * detaches: the program runs on unharmed.  If the recorder is killed
 * (SIGKILL) the kernel detaches the tracees with the traps still in
 * their code: a process that reaches one then dies of SIGTRAP, one that
 * never does (other programs it runs, or no traced call left) runs on.
 * PTRACE_O_EXITKILL would kill them all at once instead; a task stopped
 * at a trap is never resumed in the middle of an instruction either way
 * (the kernel delivers its SIGTRAP).  C11 and libc only: target side. */
#ifndef LP_DYNTRACE_BPTRACE_H
#define LP_DYNTRACE_BPTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dyntrace/uprobes.h"

struct bptrace;

/* Frames followed per thread: a deeper call's return is not watched. */
#define BP_STACK_DEPTH_MAX 65536u

/* What the backend did beyond the uprobe backend's figures. */
struct bptrace_stats {
	uint64_t stops;    /* ptrace stops handled */
	uint64_t steps;    /* single steps over a trap */
	uint64_t held;     /* other threads stopped for a step */
	uint64_t too_deep; /* entries whose return was not watched (frame stack full) */
	uint32_t spaces;   /* address spaces the traps were written into */
	char error[200];   /* the first failure to write a trap, or "" */
};

/* Whether this build can trace with breakpoints (x86-64, aarch64). */
bool bptrace_supported(void);
/* Reads the executable's functions (cfg's patterns, as the uprobe backend
 * chooses them) and checks it can be traced here.  Nothing runs until
 * bptrace_attach.  On error returns NULL with one line in err and errno:
 * ENOTSUP (another architecture, C++ exceptions, a library's functions
 * asked for), ENOENT (no function chosen), or the file's error. */
struct bptrace *bptrace_open(const struct uprobes_config *cfg, const struct uprobes_ops *ops, char *err, size_t errlen);
/* Starts the tracer thread, which seizes process pid: a child held before
 * its exec (its exec of the executable sets the traps).  Once only.
 * Returns 0 or -errno with err set (-EPERM: ptrace not allowed). */
int bptrace_attach(struct bptrace *b, pid_t pid, char *err, size_t errlen);
/* Hands out every record up to now (on the caller's thread).  Returns the
 * number handed out. */
long bptrace_poll(struct bptrace *b);
/* True once the attached process has exited, with its wait status: the
 * tracer thread reaps it, so the caller must not wait for it (nor for
 * any pid: a wait of the caller's would take the tracees' stops). */
bool bptrace_exited(struct bptrace *b, int *status);
/* Detaches from whatever still runs, its original code put back, ends the
 * tracer thread and hands out the last records.  Accepts NULL; once. */
void bptrace_finish(struct bptrace *b);
void bptrace_get_stats(const struct bptrace *b, struct uprobes_stats *st, struct bptrace_stats *bst);
/* Finishes if needed and frees everything.  Accepts NULL. */
void bptrace_free(struct bptrace *b);

#endif
