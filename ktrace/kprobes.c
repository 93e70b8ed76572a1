/* Kernel function probes (see kprobes.h): written to tracefs's
 * kprobe_events, where each becomes an event with a format like any
 * tracepoint's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktrace/kprobes.h"

#define KPROBES_LINE_MAX 512u

/* Writes one command to kprobe_events.  Returns 0 or -errno. */
static int kprobes_write(const char *root, const char *cmd)
{
	char path[256];
	size_t len = strlen(cmd);
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/kprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (write(fd, cmd, len) != (ssize_t)len)
		r = -errno;
	close(fd);
	return r;
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
	snprintf(group, size, "%s%d", KPROBES_GROUP_PREFIX, (int)getpid());
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

/* Removes every probe of the groups `keep` says to (reading
 * kprobe_events: "p:group/name symbol ..."). */
static void remove_groups(const char *root, bool (*drop)(const char *group, const void *ctx), const void *ctx)
{
	char path[256], line[KPROBES_LINE_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kprobe_events", root);
	f = fopen(path, "re");
	if (!f)
		return;
	/* collected first: the file changes as probes go */
	char(*cmds)[KPROBES_LINE_MAX] = NULL;
	size_t n = 0, cap = 0;

	while (fgets(line, sizeof(line), f)) {
		char *slash, *space, *colon = strchr(line, ':');

		if (!colon || !(slash = strchr(colon, '/')) || !(space = strchr(slash, ' ')))
			continue;
		*slash = '\0';
		*space = '\0';
		if (!drop(colon + 1, ctx))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 16;
			char(*g)[KPROBES_LINE_MAX] = realloc(cmds, c * sizeof(*g));

			if (!g)
				break;
			cmds = g;
			cap = c;
		}
		snprintf(cmds[n++], KPROBES_LINE_MAX, "-:%s/%s\n", colon + 1, slash + 1);
	}
	fclose(f);
	for (size_t i = 0; i < n; i++)
		kprobes_write(root, cmds[i]);
	free(cmds);
}

static bool is_group(const char *group, const void *ctx)
{
	return !strcmp(group, ctx);
}

void kprobes_remove(const char *root, const char *group)
{
	remove_groups(root, is_group, group);
}

/* A group of ours whose process is gone. */
static bool is_stale(const char *group, const void *ctx)
{
	size_t plen = strlen(KPROBES_GROUP_PREFIX);
	char *end;
	long pid;

	(void)ctx;
	if (strncmp(group, KPROBES_GROUP_PREFIX, plen))
		return false;
	pid = strtol(group + plen, &end, 10);
	return !*end && pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH;
}

void kprobes_sweep(const char *root)
{
	remove_groups(root, is_stale, NULL);
}
