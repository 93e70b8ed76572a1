/* A program forked and held before its exec, so that a backend can set
 * tracing up for its pid first (the tracepoint and eBPF backends). */
#ifndef LP_SYSTRACE_CHILD_H
#define LP_SYSTRACE_CHILD_H

#include <stddef.h>
#include <sys/types.h>

struct held_child {
	pid_t pid;
	int sock; /* our end: one byte lets the child exec */
};

/* Forks a child that waits for held_child_run before exec'ing the file
 * `path` (see progpath_exec) with argv and environment envp or ours: its
 * last call before the exec is the read of that one byte.  Returns 0 or
 * -errno with the reason in err. */
int held_child_fork(struct held_child *c, const char *path, char *const argv[], char *const envp[], char *err,
                    size_t errlen);
/* Lets the child exec and waits for the outcome: 0 once the exec
 * succeeded, else -errno with the reason in err and the child reaped. */
int held_child_run(struct held_child *c, const char *prog, char *err, size_t errlen);
/* Kills and reaps a child that will not run. */
void held_child_kill(struct held_child *c);

#endif
