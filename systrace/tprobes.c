/* Probes defined through tracefs (see tprobes.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "systrace/tprobes.h"

void tprobes_group(const char *prefix, char *group, size_t size)
{
	snprintf(group, size, "%s%d", prefix, (int)getpid());
}

int tprobes_write(const char *root, const char *file, const char *cmd)
{
	char path[256];
	size_t len = strlen(cmd);
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", root, file);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (write(fd, cmd, len) != (ssize_t)len)
		r = -errno;
	close(fd);
	return r;
}

/* Removes every probe of the groups drop says to (reading the file:
 * "p:group/name target ..."). */
static void remove_groups(const char *root, const char *file, bool (*drop)(const char *group, const void *ctx),
                          const void *ctx)
{
	char path[256], *line = NULL;
	size_t linecap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, file);
	f = fopen(path, "re");
	if (!f)
		return;
	/* collected first: the file changes as probes go */
	char(*cmds)[160] = NULL;
	size_t n = 0, cap = 0;

	while (getline(&line, &linecap, f) > 0) {
		char *slash, *space, *colon = strchr(line, ':');

		if (!colon || !(slash = strchr(colon, '/')) || !(space = strchr(slash, ' ')))
			continue;
		*slash = '\0';
		*space = '\0';
		if (!drop(colon + 1, ctx))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 16;
			char(*g)[160] = realloc(cmds, c * sizeof(*g));

			if (!g)
				break;
			cmds = g;
			cap = c;
		}
		snprintf(cmds[n++], sizeof(cmds[0]), "-:%.60s/%.90s\n", colon + 1, slash + 1);
	}
	free(line);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		tprobes_write(root, file, cmds[i]);
	free(cmds);
}

static bool is_group(const char *group, const void *ctx)
{
	return !strcmp(group, ctx);
}

void tprobes_remove(const char *root, const char *file, const char *group)
{
	remove_groups(root, file, is_group, group);
}

/* A group of ours (ctx: the prefix) whose process is gone. */
static bool is_stale(const char *group, const void *ctx)
{
	const char *prefix = ctx;
	size_t plen = strlen(prefix);
	char *end;
	long pid;

	if (strncmp(group, prefix, plen))
		return false;
	pid = strtol(group + plen, &end, 10);
	return !*end && pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH;
}

void tprobes_sweep(const char *root, const char *file, const char *prefix)
{
	remove_groups(root, file, is_stale, prefix);
}
