/* The META chunk's text, from struct meta: one writer for the recorder and
 * the agent, so that both say the same keys the same way. */
#include "common/meta.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/clocksync.h"
#include "common/systab.h"
#include "layerprof/format.h"
#include "lp_arch.h"

#define META_VERSION "0.1.0"

struct meta_buf {
	char *p;
	size_t size, n;
};

static void meta_add(struct meta_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to b, cut at its end (n stays below size). */
static void meta_add(struct meta_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(b->p + b->n, b->size - b->n, fmt, ap);
	va_end(ap);
	if (r > 0)
		b->n += (size_t)r < b->size - b->n ? (size_t)r : b->size - b->n - 1;
}

void meta_init(struct meta *m)
{
	memset(m, 0, sizeof(*m));
	m->version = META_VERSION;
	if (uname(&m->uts))
		memset(&m->uts, 0, sizeof(m->uts));
	m->arch = LP_ARCH_NAME;
	m->start_monotonic_ns = clocksync_monotonic_ns();
}

size_t meta_format(const struct meta *m, char *buf, size_t size)
{
	struct meta_buf b = { .p = buf, .size = size };
	int i;

	meta_add(&b, "layerprof=%s\nhost=%s\nkernel=%s\narch=%s\nclock=%s\n", m->version, m->uts.nodename,
	         m->uts.release, m->arch, m->clock == LP_CLOCK_MONOTONIC ? "monotonic" : "counter");
	if (m->buffer_size)
		meta_add(&b, "buffer_size=%llu\n", (unsigned long long)m->buffer_size);
	if (m->has_session)
		meta_add(&b, "session=%u\npid=%d\n", m->session, m->pid);
	meta_add(&b, "ring_full=%s\nstart_monotonic_ns=%llu\n", m->ring_wait ? "wait" : "discard",
	         (unsigned long long)m->start_monotonic_ns);
	if (m->has_realtime)
		meta_add(&b, "start_realtime=%lld\n", m->start_realtime);
	meta_add(&b, "filtered=%d\n", m->filtered ? 1 : 0);
	if (m->syscalls)
		meta_add(&b, "syscall_arch=%s\n", sys_arch_name(sys_arch_native()));
	if (m->attached)
		meta_add(&b, "attached=1\n");
	if (m->mem == META_MEM_OPTIONS)
		meta_add(&b, "memory=1\nmem_depth=%u\nmem_keep_alive=%d\nmem_fold_ns=%llu\n", m->mem_depth,
		         m->mem_keep_alive ? 1 : 0, (unsigned long long)m->mem_fold_ns);
	else if (m->mem == META_MEM_ON)
		meta_add(&b, "memory=1\n");
	/* the command last: it runs to the end of its line */
	meta_add(&b, "command=");
	if (b.n > size - 2)
		b.n = size - 2; /* room for the newline and the NUL */
	for (i = 0; i < m->argc && b.n < size - 2; i++) {
		const char *a = m->argv[i];

		if (i)
			buf[b.n++] = ' ';
		while (*a && b.n < size - 2) {
			char c = *a++;

			buf[b.n++] = c == '\n' ? ' ' : c;
		}
	}
	buf[b.n++] = '\n';
	buf[b.n] = '\0';
	return b.n;
}
