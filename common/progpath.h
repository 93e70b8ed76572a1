/* Finding and starting the program a recorder runs: the PATH search that
 * execvp makes, done once in the recorder before it forks, so that the
 * program's own first system call is the exec of its file (a syscall
 * tracer then sees no failed execve from the search).  C11 and libc only. */
#ifndef LP_PROGPATH_H
#define LP_PROGPATH_H

#include <stddef.h>

/* Finds `prog` as execvp would: a name holding a '/' as it is, else the
 * first executable regular file <dir>/<prog> for the directories of $PATH
 * (an empty entry is the current directory; without $PATH, /bin:/usr/bin).
 * On success writes the path into out (size bytes) and returns 0; else
 * -ENOENT (found nowhere), -EACCES (found, but not an executable file),
 * -ENAMETOOLONG.  The file may still change before it is run: progpath_exec
 * reports what the exec itself says. */
int progpath_find(const char *prog, char *out, size_t size);

/* Runs the file `path` (from progpath_find) with argv and envp, like
 * execve; a file the kernel cannot run (ENOEXEC: a script without "#!")
 * goes to /bin/sh, as execvp does.  Returns only on failure: -errno of the
 * exec.  Async-signal-safe (no allocation): for a forked child. */
int progpath_exec(const char *path, char *const argv[], char *const envp[]);

#endif
