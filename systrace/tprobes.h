/* Probes defined through tracefs (kprobe_events, uprobe_events): each is
 * an event with a format like a tracepoint's, in a group of this
 * process's own (PREFIX<pid>), the kernel's until removed.  What the
 * kernel tracer's kprobes and the dynamic tracer's uprobes share:
 * writing a definition, removing a group, and sweeping the groups of
 * processes that are gone (a killed recorder's). */
#ifndef LP_SYSTRACE_TPROBES_H
#define LP_SYSTRACE_TPROBES_H

#include <stddef.h>

#define TPROBES_LINE_MAX 4352u /* a definition: a path of PATH_MAX and more */

/* group = prefix followed by this process's pid. */
void tprobes_group(const char *prefix, char *group, size_t size);
/* Writes one command (with its newline) to root/file.  Returns 0 or
 * -errno. */
int tprobes_write(const char *root, const char *file, const char *cmd);
/* Removes every probe of group from root/file. */
void tprobes_remove(const char *root, const char *file, const char *group);
/* Removes the probes of the groups named prefix<pid> whose process is
 * gone. */
void tprobes_sweep(const char *root, const char *file, const char *prefix);

#endif
