/* Synthetic counter traces for the unit tests of the counters' consumers
 * (test_ctrstats.c, test_energystats.c): chunks kept in memory, a thread's
 * events with its counter records, this executable's code mapped so that
 * addresses get names, and the trace written out as a trace directory.
 * Header only, as check.h. */
#ifndef LP_TESTS_CTRTRACE_H
#define LP_TESTS_CTRTRACE_H

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/ctrevent.h"
#include "common/encoder.h"
#include "layerprof/format.h"

static void ctrtrace_die(const char *what)
{
	perror(what);
	exit(2);
}

#define TRACE_CHUNKS_MAX 64u

/* A trace kept in memory as its chunks: fed to a walk, or written out. */
struct trace {
	uint32_t n;
	uint8_t type[TRACE_CHUNKS_MAX];
	uint8_t *payload[TRACE_CHUNKS_MAX];
	size_t len[TRACE_CHUNKS_MAX];
	struct encoder *e;
};

static void trace_chunk(struct trace *t, uint8_t type, const void *p, size_t len)
{
	if (t->n == TRACE_CHUNKS_MAX)
		ctrtrace_die("too many chunks");
	t->type[t->n] = type;
	t->payload[t->n] = malloc(len ? len : 1);
	if (!t->payload[t->n])
		ctrtrace_die("malloc");
	memcpy(t->payload[t->n], p, len);
	t->len[t->n++] = len;
}

struct map_ctx {
	struct encoder *e;
};

/* MAP events of this executable's code, so that addresses get names. */
static int map_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct map_ctx *m = data;
	char exe[512];
	ssize_t n;
	int i;

	(void)size;
	if (info->dlpi_name && *info->dlpi_name)
		return 0; /* libraries: not called */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		encoder_map(m->e, 1, info->dlpi_addr, info->dlpi_addr + ph->p_vaddr,
		            info->dlpi_addr + ph->p_vaddr + ph->p_memsz, ph->p_offset, NULL, 0, exe, strlen(exe));
	}
	return 1;
}

/* A trace with META "counters=<counters>" (NULL: no key). */
static void trace_init(struct trace *t, const char *counters, const char *extra)
{
	char meta[1024];
	int n;

	memset(t, 0, sizeof(*t));
	t->e = malloc(sizeof(*t->e));
	if (!t->e)
		ctrtrace_die("malloc");
	n = snprintf(meta, sizeof(meta), "layerprof=test\nclock=monotonic\ncommand=synthetic\n%s%s%s%s",
	             counters ? "counters=" : "", counters ? counters : "", counters ? "\n" : "", extra ? extra : "");
	trace_chunk(t, LP_CHUNK_META, meta, (size_t)n);
}

/* Begins the events of a thread (image 1); the first thread also maps
 * this executable. */
static void thread_begin(struct trace *t, uint32_t pid, uint32_t tid)
{
	encoder_init(t->e, 1, pid, tid);
	if (t->n == 1) {
		struct map_ctx m = { t->e };

		dl_iterate_phdr(map_cb, &m);
	}
}

static void thread_flush(struct trace *t)
{
	const uint8_t *p;
	size_t len = encoder_take(t->e, &p);

	if (len)
		trace_chunk(t, LP_CHUNK_EVENTS, p, len);
}

static void trace_release(struct trace *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->payload[i]);
	free(t->e);
}

/* One counter record of kind with values v[0..n). */
static void put(struct trace *t, uint64_t ns, uint8_t kind, uint64_t fn, uint32_t n, const uint64_t *v)
{
	struct ctrevent c = { .kind = kind, .fn = fn, .n = n };

	memcpy(c.values, v, n * sizeof(v[0]));
	encoder_counter(t->e, ns, &c);
	if (encoder_full(t->e))
		thread_flush(t);
}

static void trace_write(const char *root, const struct trace *t, const char *name, char *dir, size_t size)
{
	static const char end[] = "events=0\nlost=0\nstreams=0\n";
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	char path[512];
	int fd;

	snprintf(dir, size, "%s/%s", root, name);
	if (mkdir(dir, 0700) && errno != EEXIST)
		ctrtrace_die("mkdir");
	snprintf(path, sizeof(path), "%s/%s", dir, LP_TRACE_DATA);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		ctrtrace_die("open");
	trace_header_put(hdr);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		ctrtrace_die("write");
	for (uint32_t i = 0; i < t->n; i++)
		if (chunk_write_fd(fd, t->type[i], t->payload[i], (uint32_t)t->len[i]))
			ctrtrace_die("chunk_write_fd");
	if (chunk_write_fd(fd, LP_CHUNK_END, end, sizeof(end) - 1))
		ctrtrace_die("chunk_write_fd");
	close(fd);
}

#endif
