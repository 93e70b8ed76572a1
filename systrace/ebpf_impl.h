/* What the eBPF backend's two halves share: the call record the programs
 * keep and write, their maps, and the backend's state.  ebpf_prog.c writes
 * the programs; ebpf.c loads them and reads what they write. */
#ifndef LP_SYSTRACE_EBPF_IMPL_H
#define LP_SYSTRACE_EBPF_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "systrace/backend.h"
#include "systrace/bpfprog.h"
#include "systrace/bpfring.h"
#include "systrace/perfring.h"

/* The tracee's registers at syscall entry, as the kernel saves them: where
 * the arguments, the return address and the stack pointer lie. */
#if defined(__x86_64__)
#define EB_REGS_SIZE 168u
#define EB_REG_SIZE BPF_DW
static const int16_t eb_arg_off[6] __attribute__((unused)) = { 112, 104, 96, 56, 72, 64 }; /* di si dx r10 r8 r9 */
#define EB_IP_OFF 128
#define EB_SP_OFF 152
#elif defined(__aarch64__)
#define EB_REGS_SIZE 272u
#define EB_REG_SIZE BPF_DW
static const int16_t eb_arg_off[6] __attribute__((unused)) = { 0, 8, 16, 24, 32, 40 }; /* x0..x5 */
#define EB_IP_OFF 256
#define EB_SP_OFF 248
#elif defined(__arm__)
#define EB_REGS_SIZE 72u
#define EB_REG_SIZE BPF_W
static const int16_t eb_arg_off[6] __attribute__((unused)) = { 0, 4, 8, 12, 16, 20 }; /* r0..r5 */
#define EB_IP_OFF 60
#define EB_SP_OFF 52
#else
#define EB_NO_ARCH 1
#define EB_REGS_SIZE 8u
#endif

#define EB_GATE_SIZE 65536u      /* slots of the gate map (a power of two) */
#define EB_STACK_WORDS 16u       /* words read from the user stack pointer up */
#define EB_TASKS_MAX 32768u      /* threads traced at once */
#define EB_DEFAULT_PAGES 1024u   /* per CPU ring: 4 MiB, 16k calls */
#define EB_RING_MAX (256u << 20) /* the BPF ring buffer: per-CPU size x CPUs, at most this */
#define EB_POLL_CALLS 8192u      /* calls taken from the ring buffer a poll, at most */
#define EB_ATTACH_SCANS 16       /* passes over /proc/<pid>/task */
#define EB_STACK_SPAN (8u << 20) /* stack words this close above sp point into the stack */
#define EB_LOW_ADDR 0x10000u     /* no code below */
#define EB_SEL_TRACED 1u         /* sel map: trace this syscall */
#define EB_SEL_PATH_SHIFT 1u     /* sel map: 1 + the index of its path argument */

/* One call as the programs keep it (per thread, in the tasks map) and
 * write it (everything before `str`, or before `regs` with a path).  Little
 * endian: the u64 pid_tgid lands as tid, then pid. */
struct eb_call {
	uint64_t key_ns;  /* the merge's key: exit time, or write time */
	uint64_t t_enter; /* 0: no call in flight */
	uint64_t t_exit;  /* 0: the thread ended inside the call */
	uint32_t tid, pid;
	uint32_t nr, pad;
	int64_t ret;
	int64_t str_len; /* bytes read with the NUL, or <= 0 */
	uint64_t ip;     /* the return address of the syscall instruction */
	uint64_t sp;     /* the user stack pointer */
	uint64_t args[6];
	uint64_t stack[EB_STACK_WORDS];
	char str[SYSREC_STR_MAX];
	unsigned char regs[EB_REGS_SIZE]; /* scratch: the registers at entry */
};

#define EB_OUT_SHORT ((int32_t)offsetof(struct eb_call, str))
#define EB_OUT_FULL ((int32_t)offsetof(struct eb_call, regs))
#define EB_OFF(f) ((int16_t)offsetof(struct eb_call, f))

enum eb_map {
	EB_TASKS,
	EB_SEL,
	EB_ZERO,
	EB_COUNTERS,
	EB_OUT,  /* the perf event array, without a ring buffer */
	EB_GATE, /* tid % EB_GATE_SIZE: 1 once a traced thread had that slot */
	EB_NMAPS,
};

/* The counters map's entries. */
enum eb_counter {
	EB_TASKS_MISSED, /* threads the fork program could not add */
	EB_CALLS_LOST,   /* calls the ring buffer had no room for */
	EB_NCOUNTERS,
};

struct eb_state {
	int maps[EB_NMAPS];
	int progs[4];
	int links[4]; /* raw tracepoint links and tracepoint events */
	int nlinks;
	struct bpfring rb; /* the output, when the kernel has ring buffers */
	struct perfrings pr;
	int *outs; /* else the output event of each per-CPU ring */
	bool lost_count;
	enum sys_arch arch;
	uint64_t lost_reported; /* perf rings: losses reported */
	uint64_t calls_lost;    /* ring buffer: losses reported */
	uint32_t exec_nr[2];    /* execve, execveat: always traced (see hold_tid) */
	uint32_t hold_tid;      /* a spawned child: its calls before exec are ours */
	struct systrace *st;    /* while draining */
};

/* The programs, written into p (ebpf_prog.c).  Each reads the maps of eb
 * by descriptor; a program that cannot be written here leaves p overflowed,
 * so that its load fails. */
void eb_prog_enter(struct bpfprog *p, const struct eb_state *eb);
void eb_prog_exit(struct bpfprog *p, const struct eb_state *eb);
void eb_prog_fork(struct bpfprog *p, const struct eb_state *eb, uint32_t child_off);
void eb_prog_task_exit(struct bpfprog *p, const struct eb_state *eb);

#endif
