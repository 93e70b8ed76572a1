/* Kernel function probes (see kprobes.h): written to tracefs's
 * kprobe_events, where each becomes an event with a format like any
 * tracepoint's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktrace/kprobes.h"
#include "systrace/tprobes.h"

#define KPROBES_LINE_MAX 512u

static int kprobes_write(const char *root, const char *cmd)
{
	return tprobes_write(root, "kprobe_events", cmd);
}

/* The event name of function fn: letters, digits and '_' (a compiler's
 * "foo.isra.0" becomes "foo_isra_0"). */
static void event_name(const char *fn, size_t len, char *out, size_t size)
{
	size_t i;

	for (i = 0; i < len && i + 1 < size; i++) {
		char c = fn[i];

		out[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
	}
	out[i] = '\0';
}

static bool valid_function(const char *fn, size_t len)
{
	if (!len || len >= KPROBES_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = fn[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.'))
			return false;
	}
	return true;
}

void kprobes_group(char *group, size_t size)
{
	tprobes_group(KPROBES_GROUP_PREFIX, group, size);
}

int kprobes_add(const char *root, const char *group, const char *functions, char *err, size_t errlen)
{
	const char *p = functions;
	int n = 0;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char fn[KPROBES_NAME_MAX], name[KPROBES_NAME_MAX], cmd[KPROBES_LINE_MAX];
		int r;

		if (!valid_function(p, len)) {
			snprintf(err, errlen, "invalid kernel function '%.*s': a symbol name, e.g. vfs_read", (int)len,
			         p);
			return -EINVAL;
		}
		snprintf(fn, sizeof(fn), "%.*s", (int)len, p);
		event_name(p, len, name, sizeof(name));
		snprintf(cmd, sizeof(cmd), "p:%s/%s %s\n", group, name, fn);
		r = kprobes_write(root, cmd);
		if (!r) {
			snprintf(cmd, sizeof(cmd), "r:%s/%s__return %s ret=$retval\n", group, name, fn);
			r = kprobes_write(root, cmd);
		}
		if (r == -ENOENT && n == 0 && access(root, F_OK) == 0) {
			char path[256];

			snprintf(path, sizeof(path), "%s/kprobe_events", root);
			if (access(path, F_OK)) {
				snprintf(err, errlen,
				         "kernel function tracing needs kprobes, which this kernel lacks (no %s)",
				         path);
				return r;
			}
		}
		if (r == -EPERM || r == -EACCES || r == -ENODEV) {
			snprintf(err, errlen,
			         "kernel function tracing needs kprobes: this kernel refuses them (kprobe_events: %s)",
			         strerror(-r));
			return r;
		}
		if (r) {
			snprintf(err, errlen,
			         "cannot probe kernel function '%s': %s (not a function the kernel can probe?)", fn,
			         strerror(-r));
			return r;
		}
		n++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (!n) {
		snprintf(err, errlen, "no kernel function given");
		return -EINVAL;
	}
	return 0;
}

void kprobes_remove(const char *root, const char *group)
{
	tprobes_remove(root, "kprobe_events", group);
}

void kprobes_sweep(const char *root)
{
	tprobes_sweep(root, "kprobe_events", KPROBES_GROUP_PREFIX);
}
