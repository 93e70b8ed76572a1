/* Finding and starting the program a recorder runs: the PATH search that
 * execvp makes, done once in the recorder before it forks, so that the
 * program's own first system call is the exec of its file (a syscall
 * tracer then sees no failed execve from the search); and the file a
 * running process runs, for a tracer that attaches to it.  C11 and libc
 * only. */
#ifndef LP_PROGPATH_H
#define LP_PROGPATH_H

#include <stddef.h>
#include <sys/types.h>

/* Finds `prog` as execvp would: a name holding a '/' as it is, else the
 * first executable regular file <dir>/<prog> for the directories of $PATH
 * (an empty entry is the current directory; without $PATH, /bin:/usr/bin).
 * On success writes the path into out (size bytes) and returns 0; else
 * -ENOENT (found nowhere), -EACCES (found, but not an executable file),
 * -ENAMETOOLONG.  The file may still change before it is run: progpath_exec
 * reports what the exec itself says. */
int progpath_find(const char *prog, char *out, size_t size);

/* The executable file process `pid` runs, as a path that names that very
 * file now (what a tracer that defines its probes by path needs): the
 * link /proc/<pid>/exe, checked against the file the path leads to.  On
 * success writes the path into out (size bytes) and returns 0; else
 * -ESRCH (no such process, or none with a file: a kernel thread, a
 * process that has ended), -EACCES (another user's process, to a caller
 * who may not look), -ENOENT (the file was deleted since the process
 * started it), -ESTALE (the path leads to another file now: replaced
 * since, or the process sees another mount namespace), -ENAMETOOLONG.
 * The path is the process's, as it saw it: out is cut at " (deleted)". */
int progpath_running(pid_t pid, char *out, size_t size);

/* Runs the file `path` (from progpath_find) with argv and envp, like
 * execve; a file the kernel cannot run (ENOEXEC: a script without "#!")
 * goes to /bin/sh, as execvp does.  Returns only on failure: -errno of the
 * exec.  Async-signal-safe (no allocation): for a forked child. */
int progpath_exec(const char *path, char *const argv[], char *const envp[]);

#endif
