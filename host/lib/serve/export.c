/* GET /api/export of `layerprof serve` (see serve/export.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/lib/export/chrome.h"
#include "host/lib/export/folded.h"
#include "host/lib/export/report.h"
#include "host/lib/heap/feed.h"
#include "host/lib/heap/heap.h"
#include "host/lib/heap/snapshot.h"
#include "host/lib/live/save.h"
#include "host/lib/serve/export.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/options.h"

#define TAR_BLOCK 512u
#define TAR_NAME_MAX 100u
#define TAR_PREFIX_MAX 155u
#define TAR_OCTAL_SIZE_MAX 077777777777ull /* 11 octal digits */

const struct serveexport_format serveexport_formats[] = {
	{ "html", "text/html; charset=utf-8", ".report.html" },
	{ "xml", "application/xml", ".report.xml" },
	{ "json", "application/json", ".report.json" },
	{ "text", "text/plain; charset=utf-8", ".report.txt" },
	{ "syscalls-json", "application/json", ".syscalls.json" },
	{ "syscalls-text", "text/plain; charset=utf-8", ".syscalls.txt" },
	{ "memory-html", "text/html; charset=utf-8", ".memory.html" },
	{ "memory-xml", "application/xml", ".memory.xml" },
	{ "memory-json", "application/json", ".memory.json" },
	{ "memory-text", "text/plain; charset=utf-8", ".memory.txt" },
	{ "chrome", "application/json", ".chrome.json" },
	{ "folded", "text/plain; charset=utf-8", ".folded" },
	{ "raw", "application/x-tar", ".tar" },
	{ "snapshot", "application/json", ".snapshot" },
	{ NULL, NULL, NULL },
};

const struct serveexport_format *serveexport_find(const char *name)
{
	const struct serveexport_format *f;

	for (f = serveexport_formats; name && f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

/* The directory's last component, without trailing slashes, into buf. */
static const char *base_name(const char *dir, char *buf, size_t size)
{
	size_t n = strlen(dir), i;
	const char *b;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	for (b = dir + n; b > dir && b[-1] != '/'; b--)
		;
	n -= (size_t)(b - dir);
	if (!n || (n == 1 && *b == '/') || (n == 1 && *b == '.') || (n == 2 && !strncmp(b, "..", 2)))
		b = "trace", n = 5;
	if (n >= size)
		n = size - 1;
	for (i = 0; i < n; i++) {
		char c = b[i];

		buf[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		                 c == '_' || c == '-'
		             ? c
		             : '_';
	}
	buf[n] = '\0';
	return buf;
}

const char *serveexport_filename(const char *dir, const struct serveexport_format *fmt, char *buf, size_t size)
{
	char base[128];

	snprintf(buf, size, "%s%s", base_name(dir, base, sizeof(base)), fmt->suffix);
	return buf;
}

/* ------------------------------------------------------------ raw: a tar archive */

static void tar_octal(char *field, size_t width, uint64_t v)
{
	snprintf(field, width, "%0*" PRIo64, (int)width - 1, v);
}

/* One ustar header: name under prefix (the archive's top directory). */
static int tar_header(FILE *f, const char *prefix, const char *name, char type, uint64_t size, uint64_t mtime)
{
	unsigned char h[TAR_BLOCK];
	unsigned sum = 0, i;

	memset(h, 0, sizeof(h));
	if (strlen(name) >= TAR_NAME_MAX || strlen(prefix) >= TAR_PREFIX_MAX)
		return -ENAMETOOLONG;
	memcpy(h, name, strlen(name));
	tar_octal((char *)h + 100, 8, type == '5' ? 0755 : 0644);
	tar_octal((char *)h + 108, 8, 0);
	tar_octal((char *)h + 116, 8, 0);
	if (size <= TAR_OCTAL_SIZE_MAX) {
		tar_octal((char *)h + 124, 12, size);
	} else {
		/* larger: base-256, as GNU tar and bsdtar read it */
		h[124] = 0x80;
		for (i = 0; i < 8; i++)
			h[135 - i] = (unsigned char)(size >> (8 * i));
	}
	tar_octal((char *)h + 136, 12, mtime & TAR_OCTAL_SIZE_MAX);
	memset(h + 148, ' ', 8);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memcpy(h + 345, prefix, strlen(prefix));
	for (i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	return fwrite(h, 1, sizeof(h), f) == sizeof(h) ? 0 : -EIO;
}

/* The files of a trace directory that the raw export holds, in name order:
 * the trace and the heap snapshot `live --save --memory` puts beside it.
 * Nothing else in the directory is the trace's (serve's caches, or what
 * someone else put there). */
static const char *const raw_names[] = { LP_TRACE_DATA, LIVESAVE_SNAPSHOT_NAME };

/* Copies exactly size bytes of the open file fd (which it closes) to f,
 * then the padding to a block. */
static int tar_copy(FILE *f, int fd, uint64_t size)
{
	static const char zeros[TAR_BLOCK];
	char buf[65536];
	FILE *in = fdopen(fd, "rb");
	uint64_t left = size;
	int r = 0;

	if (!in) {
		r = -errno;
		close(fd);
		return r;
	}
	while (left && !r) {
		size_t want = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		size_t got = fread(buf, 1, want, in);

		if (got < want)
			r = -EIO; /* the file shrank while read */
		else if (fwrite(buf, 1, got, f) != got)
			r = -EIO;
		left -= got;
	}
	fclose(in);
	if (!r && size % TAR_BLOCK && fwrite(zeros, 1, TAR_BLOCK - size % TAR_BLOCK, f) != TAR_BLOCK - size % TAR_BLOCK)
		r = -EIO;
	return r;
}

/* The trace directory as a ustar archive: a directory named after it, then
 * the trace's own files (raw_names) in name order, each with its size and
 * modification time, owner 0, mode 0644.  Each is opened without following
 * a link and taken only when it is a regular file: a link planted in the
 * directory never brings another file into the archive. */
static int write_raw(const char *dir, FILE *f, char *err, size_t errlen)
{
	static const char zeros[2 * TAR_BLOCK];
	char base[128], top[TAR_PREFIX_MAX];
	struct stat st;
	size_t i;
	int r, dfd, fd;

	base_name(dir, base, sizeof(base));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot list trace '%s': %s", dir, strerror(-r));
		return r;
	}
	snprintf(top, sizeof(top), "%s/", base);
	r = fstat(dfd, &st) ? -errno : tar_header(f, "", top, '5', 0, (uint64_t)st.st_mtime);
	for (i = 0; i < sizeof(raw_names) / sizeof(raw_names[0]) && !r; i++) {
		fd = openat(dfd, raw_names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			if (errno != ENOENT && errno != ELOOP)
				r = -errno;
			continue;
		}
		if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			close(fd);
			continue;
		}
		r = tar_header(f, base, raw_names[i], '0', (uint64_t)st.st_size, (uint64_t)st.st_mtime);
		if (r)
			close(fd);
		else
			r = tar_copy(f, fd, (uint64_t)st.st_size);
	}
	close(dfd);
	if (!r && fwrite(zeros, 1, sizeof(zeros), f) != sizeof(zeros))
		r = -EIO;
	if (r)
		snprintf(err, errlen, "cannot archive trace '%s': %s", dir, strerror(-r));
	return r;
}

/* ------------------------------------------------------------ the writers */

/* The heap at the end of the trace as `layerprof snapshot DIR` writes it. */
static int write_snapshot(struct walk *w, const char *dir, FILE *f)
{
	struct snapshot_meta meta = { .source = "trace", .trace = dir };
	struct heapfeed feed = { 0 };
	struct heap h = { 0 };
	char command[1024];
	int r;

	r = heapfeed_pass(w, &h, &feed, 0);
	if (!r && !w->mem_ops)
		r = -ENOENT;
	if (!r) {
		meta.origin_ns = export_report_origin(w);
		meta.time_ns = h.now_ns;
		meta.command = walk_meta(w, "command", command, sizeof(command));
		r = snapshot_write(f, w, &h, &meta);
	}
	heapfeed_release(&feed);
	heap_release(&h);
	return r;
}

int serveexport_write(const char *dir, const struct serveexport_format *fmt, FILE *f, char *err, size_t errlen)
{
	struct export_report_opts o = { .fmt = EXPORT_REPORT_TEXT, .order = { .keys = { PROFILE_TOTAL }, .nkeys = 1 } };
	struct filter_opts fopts = { 0 };
	const char *name = fmt->name;
	struct walk w;
	int r;

	if (!strcmp(name, "raw"))
		return write_raw(dir, f, err, errlen);
	r = walk_open(&w, dir, &fopts, err, errlen);
	if (r)
		return r;
	if (!strcmp(name, "snapshot")) {
		r = write_snapshot(&w, dir, f);
	} else if (!strcmp(name, "chrome")) {
		r = export_chrome(&w, f, NULL);
	} else if (!strcmp(name, "folded")) {
		r = export_folded(&w, 0, f, NULL);
	} else {
		if (!strncmp(name, "memory-", 7)) {
			o.what = EXPORT_REPORT_MEMORY;
			name += 7;
		} else if (!strncmp(name, "syscalls-", 9)) {
			o.what = EXPORT_REPORT_SYSCALLS;
			name += 9;
		}
		o.fmt = export_report_format_parse(name);
		r = export_report_write(&w, &o, f);
	}
	if (!r && ferror(f))
		r = -EIO;
	if (r)
		snprintf(err, errlen, "cannot export trace '%s': %s", dir,
		         r == -ENOMEM   ? "out of memory"
		         : r == -ENOENT ? "no heap operations (recorded without --memory)"
		                        : "cannot write the file");
	walk_release(&w);
	return r;
}
