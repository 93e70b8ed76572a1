/* Placeholder until the ptrace backend lands: reports itself unavailable. */
#include <errno.h>
#include <stdio.h>

#include "systrace/backend.h"

int pt_probe(char *err, size_t errlen)
{
	snprintf(err, errlen, "not built");
	return -ENOSYS;
}

int pt_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen)
{
	return pt_probe(err, errlen);
}

int pt_attach(struct systrace *st, pid_t pid, char *err, size_t errlen)
{
	return pt_probe(err, errlen);
}

long pt_poll(struct systrace *st)
{
	return 0;
}

void pt_release(struct systrace *st)
{
}

bool pt_exited(struct systrace *st, int *status)
{
	return false;
}
