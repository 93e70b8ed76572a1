/* What the two syscall backends provide to systrace.c, which chooses
 * between them.  Not for users of the tracer: see systrace.h. */
#ifndef LP_SYSTRACE_BACKEND_H
#define LP_SYSTRACE_BACKEND_H

#include <limits.h>

#include "systrace/systrace.h"

struct systrace {
	enum systrace_backend backend;
	struct systrace_config cfg;
	struct systrace_ops ops;
	struct systrace_stats stats; /* the backend keeps these up to date */
	void *impl;                  /* the backend's state */
	bool backlog;                /* the last poll left records behind */
	/* spawn: the program's file, found by systrace_spawn before the
	 * backend forks (progpath_find), so that the child's first call is
	 * the program's own exec */
	char path[PATH_MAX];
};

/* Each backend: probe says whether it can work here (0, or -errno with
 * the reason in err) without starting anything; spawn and attach set
 * st->impl and return 0 or -errno with the reason in err, leaving nothing
 * behind on failure (a forked child is killed and reaped); poll hands out
 * records through st->ops and returns their number or -errno; exited is
 * systrace_exited; release frees st->impl (detaching as systrace_free
 * says). */
int tp_probe(char *err, size_t errlen);
int tp_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen);
int tp_attach(struct systrace *st, pid_t pid, char *err, size_t errlen);
long tp_poll(struct systrace *st);
void tp_release(struct systrace *st);

int eb_probe(char *err, size_t errlen);
int eb_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen);
int eb_attach(struct systrace *st, pid_t pid, char *err, size_t errlen);
long eb_poll(struct systrace *st);
void eb_release(struct systrace *st);

int pt_probe(char *err, size_t errlen);
int pt_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen);
int pt_attach(struct systrace *st, pid_t pid, char *err, size_t errlen);
long pt_poll(struct systrace *st);
bool pt_exited(struct systrace *st, int *status);
void pt_release(struct systrace *st);

#endif
