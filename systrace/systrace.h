/* The system call tracer: watches the system calls of a process tree and
 * hands each call's entry and exit to its user (the recorder's or the
 * agent's drain, which merges them into the thread's event stream).  Three
 * backends: eBPF programs on the raw_syscalls tracepoints that pair entry
 * and exit in the kernel (lowest overhead), the same tracepoints sampled
 * through perf_event_open, and ptrace with a seccomp-bpf filter (works
 * where perf events are refused).  C11 and libc only: it runs on the target. */
#ifndef LP_SYSTRACE_H
#define LP_SYSTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/systab.h"

#define SYSREC_IPS_MAX 16u
#define SYSREC_STR_MAX 256u

enum sysrec_kind {
	SYSREC_ENTER = 1,
	SYSREC_EXIT = 2,
};

/* One syscall entry or exit.  Pointers are valid during the callback only. */
struct sysrec {
	uint8_t kind;  /* enum sysrec_kind */
	uint8_t arch;  /* enum sys_arch of the tracee */
	uint16_t nips; /* ENTER: user stack frames in ips */
	uint32_t pid, tid;
	uint32_t nr;
	uint64_t ns;      /* CLOCK_MONOTONIC */
	uint64_t args[6]; /* ENTER: raw arguments */
	int64_t ret;      /* EXIT: raw return value (-errno on failure) */
	/* ENTER: user return addresses, innermost first: ips[0] is the
	 * address after the syscall instruction, the rest a frame-pointer
	 * walk (tracepoint, ptrace) or the words on the user stack that point
	 * into executable mappings (bpf), as far as the backend could get */
	uint64_t ips[SYSREC_IPS_MAX];
	/* ENTER: the path argument of the open family (at most
	 * SYSREC_STR_MAX bytes, no NUL), when the backend could read it;
	 * str_late: read after the call began (tracepoint backend), not at
	 * entry (bpf) or at the stop (ptrace) */
	const char *str;
	uint32_t str_len;
	bool str_late;
};

enum systrace_backend {
	SYSTRACE_AUTO = 0,
	SYSTRACE_TRACEPOINT = 1,
	SYSTRACE_PTRACE = 2,
	SYSTRACE_BPF = 3, /* the raw_syscalls tracepoints, calls paired by eBPF */
};

struct systrace_ops {
	void *ctx;
	/* every entry and exit, per thread in time order */
	void (*sys)(void *ctx, const struct sysrec *rec);
	/* records the kernel dropped (a full CPU buffer), with the
	 * thread when known (0: unknown); never silent */
	void (*lost)(void *ctx, uint32_t pid, uint32_t tid, uint64_t count);
};

struct systrace_config {
	enum systrace_backend backend;
	struct sys_set filter; /* syscalls to trace (sys_set_all for all) */
	uint32_t buffer_pages; /* bpf, tracepoint: pages per CPU buffer (power of
	                        * two); 0: the default (256) */
	/* ptrace: how long a stopped tracee is held when the record queue is
	 * full, once per fill, before records are dropped (counted); 0: a
	 * short default for live sessions (PT_FULL_WAIT_NS).  The recorder
	 * holds it as long as its rings' producers wait for it. */
	uint32_t full_wait_ms;
	/* ptrace: what systrace_free does to a tree still running.  false:
	 * kills it.  true: detaches and leaves it running, which rules out
	 * the seccomp filter (its selected syscalls would fail with ENOSYS
	 * once no tracer is attached), so every syscall stops the tracee and
	 * the filter is applied in the tracer. */
	bool keep_running;
	/* bpf: write into per-CPU perf rings even where the kernel has BPF
	 * ring buffers (what kernels before 5.8 get; for tests) */
	bool bpf_per_cpu;
	/* spawn: called with the child's pid while it is held before its
	 * exec, once the tracer follows it (the dynamic tracer opens its probes
	 * there); nonzero stops the spawn (the child is killed) with the
	 * reason in err.  Not with the ptrace backend (-ENOTSUP). */
	int (*held)(void *ctx, pid_t pid, char *err, size_t errlen);
	void *held_ctx;
};

struct systrace;

/* Starts `argv` (PATH searched, environment envp) under the syscall tracer
 * and returns once it is set up; the search is made here, before the fork
 * (progpath_find), so that the program's first recorded call is its own
 * exec, never a failed one of the search; the program runs its first instruction
 * after exec with tracing in place.  With SYSTRACE_AUTO the backends are
 * tried in the order bpf, tracepoint, ptrace; `why` receives one line
 * saying which backend was chosen and why ("bpf: raw_syscalls with eBPF
 * pairing" or "ptrace: the tracepoint backends are not available (...)").
 * On error returns NULL with errno set and the reason in err ("no syscall
 * backend works: bpf: ...; tracepoint: ...; ptrace: ...").  *pid receives
 * the program's pid. */
struct systrace *systrace_spawn(char *const argv[], char *const envp[], const struct systrace_config *cfg,
                                const struct systrace_ops *ops, pid_t *pid, char *why, size_t whylen, char *err,
                                size_t errlen);
/* Traces a running process (all its threads and its future children). */
struct systrace *systrace_attach(pid_t pid, const struct systrace_config *cfg, const struct systrace_ops *ops,
                                 char *why, size_t whylen, char *err, size_t errlen);
enum systrace_backend systrace_backend(const struct systrace *st);
/* A backend's name ("bpf", "tracepoint", "ptrace"; "auto"), and back:
 * 0, or -EINVAL for an unknown name (NULL is auto). */
const char *systrace_backend_name(enum systrace_backend id);
int systrace_backend_parse(const char *name, enum systrace_backend *out);
/* Hands the records available now to ops.sys, in time order per thread (a
 * backend may hand a bounded share: see systrace_backlog).
 * Non-blocking; call it often (the recorder calls it on each drain poll,
 * after loading the ring heads).  Returns the number of records, or
 * -errno. */
long systrace_poll(struct systrace *st);
/* True when the last systrace_poll left records in the kernel's buffers (a
 * poll takes a bounded share): poll again soon, without sleeping. */
bool systrace_backlog(const struct systrace *st);
/* The spawned program has ended; *status receives its wait status.  With
 * the ptrace backend the tracer reaps the tree itself, so the caller must
 * not waitpid the program and learns of its end here.  With the other
 * backends the caller waits for the program as usual and this returns
 * false. */
bool systrace_exited(struct systrace *st, int *status);
/* The record as a trace event for drain_syscall (common/sysevent.h):
 * the arguments a syscall has (all six when unknown), its stack and path.
 * ev's pointers point into rec. */
struct sysevent;
void sysrec_to_event(const struct sysrec *rec, struct sysevent *ev);
/* Whether execvp would find `prog` (see progpath_find; checked before a
 * spawn, since the tracer's child cannot say why an exec failed): 0 or
 * -errno. */
int systrace_check_program(const char *prog);

/* Counters for the summary. */
struct systrace_stats {
	uint64_t records; /* entries and exits handed out */
	uint64_t lost;    /* records the kernel dropped */
	uint64_t stops;   /* ptrace stops handled */
	/* eBPF: threads or children not followed (the task map was full);
	 * their syscalls are missing */
	uint64_t tasks_missed;
};
void systrace_get_stats(const struct systrace *st, struct systrace_stats *out);
/* Stops tracing: hands out what is left, detaches from every traced task
 * (see keep_running; the other backends always leave it running) and
 * frees.
 * Accepts NULL. */
void systrace_free(struct systrace *st);

#endif
