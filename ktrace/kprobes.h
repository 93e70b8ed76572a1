/* Kernel function tracing where the kernel allows it: for each function an
 * entry probe and a return probe (with the return value) written to
 * tracefs's kprobe_events, in a group of this process's own
 * ("layerprof_<pid>"), so that they are events with formats like the
 * tracepoints and the kernel tracer records them alike.  The probes are
 * the kernel's until removed: kprobes_remove removes a group,
 * kprobes_sweep those of processes that are gone (a killed recorder's). */
#ifndef LP_KTRACE_KPROBES_H
#define LP_KTRACE_KPROBES_H

#include <stdbool.h>
#include <stddef.h>

#define KPROBES_GROUP_PREFIX "layerprof_"
#define KPROBES_NAME_MAX 64u

/* This process's group name. */
void kprobes_group(char *group, size_t size);
/* Adds the probes of the comma-separated kernel functions to group under
 * tracefs root.  Returns 0, or -errno with one line in err: kprobes refused
 * (locked down, not built), a function that cannot be probed, a bad name.
 * What was added before a failure stays: remove the group. */
int kprobes_add(const char *root, const char *group, const char *functions, char *err, size_t errlen);
void kprobes_remove(const char *root, const char *group);
void kprobes_sweep(const char *root);

#endif
