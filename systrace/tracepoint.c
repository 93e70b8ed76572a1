/* Placeholder until the tracepoint backend lands: reports itself unavailable. */
#include <errno.h>
#include <stdio.h>

#include "systrace/backend.h"

int tp_probe(char *err, size_t errlen)
{
	snprintf(err, errlen, "not built");
	return -ENOSYS;
}

int tp_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen)
{
	return tp_probe(err, errlen);
}

int tp_attach(struct systrace *st, pid_t pid, char *err, size_t errlen)
{
	return tp_probe(err, errlen);
}

long tp_poll(struct systrace *st)
{
	return 0;
}

void tp_release(struct systrace *st)
{
}
