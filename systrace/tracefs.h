/* What both tracepoint-based backends read from the kernel: tracefs event
 * formats and ids, the online CPUs, and perf_event_open with its errors. */
#ifndef LP_SYSTRACE_TRACEFS_H
#define LP_SYSTRACE_TRACEFS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TRACEFS_FILE_MAX 16384u /* bytes read from a tracefs or sysfs file */
#define TRACEFS_CPUS_MAX 4096   /* CPU numbers at or above this are ignored */

/* Where a field lies in a tracepoint's raw record. */
struct tracefs_field {
	uint32_t off, size;
};

/* Reads a small file whole (at most size - 1 bytes) into buf,
 * NUL-terminated.  Returns 0 or -errno. */
int tracefs_read_file(const char *path, char *buf, size_t size);

/* The tracefs mount point holding events/<group>/<event>, mounting tracefs
 * first when it is missing and we are root.  Returns NULL with the reason
 * in err. */
const char *tracefs_root(const char *group, const char *event, char *err, size_t errlen);

/* Reads events/<group>/<event>/format under root into a malloc'd buffer
 * (*fmt, the caller frees) and its tracepoint id.  Returns 0 or -errno with
 * the reason in err. */
int tracefs_format(const char *root, const char *group, const char *event, char **fmt, uint32_t *id, char *err,
                   size_t errlen);

/* Finds `name` among the "field:" lines of a format. */
bool tracefs_field(const char *fmt, const char *name, struct tracefs_field *f);

/* The online CPUs ("0-3,6"), or 0..n-1 from sysconf when sysfs is missing:
 * at most max of them into cpus.  Returns their number (0: none found). */
int tracefs_cpus(int *cpus, int max);

/* perf_event_open with close-on-exec: the descriptor or -errno. */
int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu);
/* One line for a refused perf_event_open ("perf_event_open<what>: ...",
 * naming perf_event_paranoid when access was denied); returns r. */
int perf_open_error(int r, const char *what, char *err, size_t errlen);

#endif
