/* The ptrace backend's seccomp-bpf filter; see ptrace_seccomp.h. */
#include <errno.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "systrace/ptrace_arch.h"
#include "systrace/ptrace_seccomp.h"

int pt_seccomp_probe(char *err, size_t errlen)
{
	int r;

	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
		r = -errno;
		snprintf(err, errlen, "seccomp is not available: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* Ranges of numbers are tested in ascending order, four instructions each
 * (2053 at most, under BPF_MAXINSNS), with jumps of at most three so no
 * offset overflows. */
int pt_seccomp_build(const struct sys_set *set, struct sock_fprog *prog)
{
	struct sock_filter *ins;
	unsigned n = 0, ranges = 0;

	for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++)
		if (sys_set_has(set, nr) && (nr == 0 || !sys_set_has(set, nr - 1)))
			ranges++;
	ins = calloc(5 + 4 * ranges, sizeof(*ins));
	if (!ins)
		return -ENOMEM;
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	ins[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PT_AUDIT_ARCH, 1, 0);
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (uint32_t lo = 0; lo < SYS_NR_MAX; lo++) {
		uint32_t hi = lo;

		if (!sys_set_has(set, lo))
			continue;
		while (hi + 1 < SYS_NR_MAX && sys_set_has(set, hi + 1))
			hi++;
		/* above the range: the next one; below: no later range holds it */
		ins[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, hi, 3, 0);
		ins[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 1);
		ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
		ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		lo = hi;
	}
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog->len = (unsigned short)n;
	prog->filter = ins;
	return 0;
}

int pt_seccomp_install(const struct sock_fprog *prog)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) < 0)
		return -1;
	return 0;
}

void pt_seccomp_release(struct sock_fprog *prog)
{
	free(prog->filter);
	prog->filter = NULL;
	prog->len = 0;
}
