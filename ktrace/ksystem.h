/* The tasks outside the traced processes whose kernel records
 * `--kernel-system` keeps: each one's process and name, learnt from the
 * records themselves (a record made in a task's context gives its pid, a
 * switch or a wake-up its name) and from /proc when a task is first named
 * by another's record.  C11 and libc only: it runs on the target.  Called
 * for every record the tracer reads: a hash probe, and two syscalls the
 * first time a task is named. */
#ifndef LP_KTRACE_KSYSTEM_H
#define LP_KTRACE_KSYSTEM_H

#include <stddef.h>
#include <stdint.h>

/* Tasks known at most; a full table is emptied and learnt again. */
#define KSYSTEM_TASKS_MAX 65536u
#define KSYSTEM_COMM 16u /* TASK_COMM_LEN */

struct ksystem_task {
	uint32_t tid;            /* 0: empty slot */
	uint32_t pid;            /* 0: not known (read /proc again) */
	char comm[KSYSTEM_COMM]; /* NUL-terminated; "" when not known */
};

struct ksystem;

/* NULL when out of memory. */
struct ksystem *ksystem_new(void);
/* Accepts NULL. */
void ksystem_free(struct ksystem *ks);
/* Task tid of process pid ran a record: its entry, made or brought up to
 * date (a tid the kernel gave to another process since).  NULL when out
 * of memory.  The pointer is valid until the next call that may add a
 * task (ksystem_ran, ksystem_named). */
const struct ksystem_task *ksystem_ran(struct ksystem *ks, uint32_t pid, uint32_t tid);
/* Task tid was named by a record another task ran (a switch's next task,
 * a wake-up's wakee, a fork's child): its entry, its process and name read
 * from /proc when not known yet.  NULL as ksystem_ran. */
const struct ksystem_task *ksystem_named(struct ksystem *ks, uint32_t tid);
/* A record gave tid's name: comm, at most n bytes, not necessarily
 * NUL-terminated.  A tid not in the table is left alone. */
void ksystem_comm(struct ksystem *ks, uint32_t tid, const char *comm, size_t n);
/* tid is made anew (a fork's child, maybe of another process than the
 * tid had before): its process is read from /proc at its next naming. */
void ksystem_forget(struct ksystem *ks, uint32_t tid);
/* The process (Tgid) of task tid and, when comm is not NULL, its name,
 * from /proc/<tid>/status; 0 (comm "") when the task is gone. */
uint32_t ksystem_read_task(uint32_t tid, char comm[KSYSTEM_COMM]);

#endif
