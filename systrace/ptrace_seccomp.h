/* The seccomp-bpf filter of the ptrace backend: only the selected syscalls
 * stop the tracee, so the untraced ones cost nothing.  Only for the ptrace
 * backend (systrace/ptrace*.c). */
#ifndef LP_SYSTRACE_PTRACE_SECCOMP_H
#define LP_SYSTRACE_PTRACE_SECCOMP_H

#include <linux/filter.h>
#include <stddef.h>

#include "common/systab.h"

/* Whether this process may install a seccomp filter: 0, or -errno with
 * the reason in err. */
int pt_seccomp_probe(char *err, size_t errlen);
/* Builds the program for the native syscalls in `set` into *prog: such a
 * call stops the tracee (SECCOMP_RET_TRACE), anything else runs, and so
 * does every call of another architecture (a compat task).  0, or -ENOMEM.
 * prog->filter is the caller's, freed with pt_seccomp_release. */
int pt_seccomp_build(const struct sys_set *set, struct sock_fprog *prog);
/* Installs prog on the calling process (with no_new_privs, which an
 * unprivileged filter needs): 0, or -1 with errno set.  Async-signal-safe:
 * called in a forked child before its exec.  Until its tracer has set
 * PTRACE_O_TRACESECCOMP, a selected call would fail with ENOSYS. */
int pt_seccomp_install(const struct sock_fprog *prog);
/* Frees what pt_seccomp_build made; accepts a zeroed prog. */
void pt_seccomp_release(struct sock_fprog *prog);

#endif
