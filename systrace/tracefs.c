/* tracefs formats, online CPUs and perf_event_open (see tracefs.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "systrace/tracefs.h"

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

int tracefs_read_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	return r;
}

const char *tracefs_root(const char *group, const char *event, char *err, size_t errlen)
{
	char path[256];

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
			snprintf(path, sizeof(path), "%s/events/%s/%s/format", tracefs_dirs[i], group, event);
			if (!access(path, R_OK))
				return tracefs_dirs[i];
		}
		/* root may mount tracefs; anyone else gets the error below */
		if (pass == 0 && (geteuid() != 0 || mount("nodev", tracefs_dirs[0], "tracefs", 0, NULL) != 0))
			break;
	}
	snprintf(err, errlen, "tracefs not found (%s events under %s or %s)", group, tracefs_dirs[0], tracefs_dirs[1]);
	return NULL;
}

int tracefs_format(const char *root, const char *group, const char *event, char **fmt, uint32_t *id, char *err,
                   size_t errlen)
{
	char path[256];
	const char *idl;
	unsigned long v;
	int r;

	*fmt = malloc(TRACEFS_FILE_MAX);
	if (!*fmt) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", root, group, event);
	r = tracefs_read_file(path, *fmt, TRACEFS_FILE_MAX);
	if (r) {
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-r));
		goto fail;
	}
	idl = strstr(*fmt, "\nID: ");
	if (!idl && !strncmp(*fmt, "ID: ", 4))
		idl = *fmt - 1;
	if (!idl || (v = strtoul(idl + 5, NULL, 10)) == 0 || v > UINT32_MAX) {
		snprintf(err, errlen, "cannot parse '%s': no ID", path);
		r = -EINVAL;
		goto fail;
	}
	*id = (uint32_t)v;
	return 0;
fail:
	free(*fmt);
	*fmt = NULL;
	return r;
}

bool tracefs_field(const char *fmt, const char *name, struct tracefs_field *f)
{
	size_t nlen = strlen(name);

	for (const char *line = fmt; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *decl = strstr(line, "field:"), *end, *word;
		const char *eol = strchr(line, '\n');
		unsigned off, size;

		if (!decl || (eol && decl > eol))
			continue;
		end = strchr(decl, ';');
		if (!end || (eol && end > eol))
			continue;
		/* the name is the last word of the declaration, before any [n] */
		word = end;
		while (word > decl && word[-1] != ' ' && word[-1] != '\t' && word[-1] != ':')
			word--;
		if ((size_t)(end - word) < nlen || strncmp(word, name, nlen) != 0 ||
		    (word + nlen != end && word[nlen] != '['))
			continue;
		if (sscanf(end, "; offset:%u; size:%u;", &off, &size) != 2 &&
		    sscanf(end, ";\toffset:%u;\tsize:%u;", &off, &size) != 2)
			return false;
		f->off = off;
		f->size = size;
		return true;
	}
	return false;
}

int tracefs_cpus(int *cpus, int max)
{
	char buf[1024];
	int n = 0;

	if (!tracefs_read_file("/sys/devices/system/cpu/online", buf, sizeof(buf))) {
		for (char *s = buf; *s && *s != '\n';) {
			char *end;
			long a = strtol(s, &end, 10), b = a;

			if (end == s)
				break;
			if (*end == '-') {
				s = end + 1;
				b = strtol(s, &end, 10);
			}
			for (long c = a; c <= b && c >= 0 && c < TRACEFS_CPUS_MAX && n < max; c++)
				cpus[n++] = (int)c;
			s = *end == ',' ? end + 1 : end;
		}
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		for (long i = 0; i < c && i < TRACEFS_CPUS_MAX && n < max; i++)
			cpus[n++] = (int)i;
	}
	return n;
}

int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	long fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

static int perf_paranoid(void)
{
	char buf[32];

	if (tracefs_read_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)))
		return INT_MIN;
	return atoi(buf);
}

int perf_open_error(int r, const char *what, char *err, size_t errlen)
{
	int paranoid = perf_paranoid();

	if ((r == -EACCES || r == -EPERM) && paranoid != INT_MIN)
		snprintf(err, errlen, "perf_event_open%s: %s (perf_event_paranoid=%d)", what, strerror(-r), paranoid);
	else
		snprintf(err, errlen, "perf_event_open%s: %s", what, strerror(-r));
	return r;
}
