/* The META chunk's text, from struct meta: one writer for the recorder and
 * the agent, so that both say the same keys the same way. */
#include "common/meta.h"

#include <stdio.h>
#include <string.h>

#include "common/clocksync.h"
#include "common/systab.h"
#include "layerprof/format.h"
#include "lp_arch.h"
#include "lp_version.h"

/* Moves *n past what snprintf wrote (r), keeping it below size: text that
 * did not fit is cut, and the buffer stays NUL-terminated. */
static void meta_advance(size_t *n, size_t size, int r)
{
	if (r > 0)
		*n += (size_t)r < size - *n ? (size_t)r : size - *n - 1;
}

void meta_init(struct meta *m)
{
	memset(m, 0, sizeof(*m));
	m->version = LP_VERSION;
	if (uname(&m->uts))
		memset(&m->uts, 0, sizeof(m->uts));
	m->arch = LP_ARCH_NAME;
	m->start_monotonic_ns = clocksync_monotonic_ns();
}

size_t meta_format(const struct meta *m, char *buf, size_t size)
{
	size_t n = 0;
	int i;

	meta_advance(&n, size,
	             snprintf(buf + n, size - n, "layerprof=%s\nhost=%s\nkernel=%s\narch=%s\nclock=%s\n", m->version,
	                      m->uts.nodename, m->uts.release, m->arch,
	                      m->clock == LP_CLOCK_MONOTONIC ? "monotonic" : "counter"));
	if (m->buffer_size)
		meta_advance(&n, size,
		             snprintf(buf + n, size - n, "buffer_size=%llu\n", (unsigned long long)m->buffer_size));
	if (m->has_session)
		meta_advance(&n, size, snprintf(buf + n, size - n, "session=%u\npid=%d\n", m->session, m->pid));
	meta_advance(&n, size,
	             snprintf(buf + n, size - n, "ring_full=%s\nstart_monotonic_ns=%llu\n",
	                      m->ring_wait ? "wait" : "discard", (unsigned long long)m->start_monotonic_ns));
	if (m->has_realtime)
		meta_advance(&n, size, snprintf(buf + n, size - n, "start_realtime=%lld\n", m->start_realtime));
	meta_advance(&n, size, snprintf(buf + n, size - n, "filtered=%d\n", m->filtered ? 1 : 0));
	if (m->syscalls)
		meta_advance(&n, size,
		             snprintf(buf + n, size - n, "syscall_arch=%s\n", sys_arch_name(sys_arch_native())));
	if (m->kernel_events)
		meta_advance(&n, size, snprintf(buf + n, size - n, "kernel=1\nkernel_events=%u\n", m->kernel_events));
	if (m->kernel_events && m->kernel_system)
		meta_advance(&n, size, snprintf(buf + n, size - n, "kernel_system=1\n"));
	if (m->attached)
		meta_advance(&n, size, snprintf(buf + n, size - n, "attached=1\n"));
	if (m->mem == META_MEM_OPTIONS)
		meta_advance(&n, size,
		             snprintf(buf + n, size - n,
		                      "memory=1\nmem_depth=%u\nmem_keep_alive=%d\nmem_fold_ns=%llu\n", m->mem_depth,
		                      m->mem_keep_alive ? 1 : 0, (unsigned long long)m->mem_fold_ns));
	else if (m->mem == META_MEM_ON)
		meta_advance(&n, size, snprintf(buf + n, size - n, "memory=1\n"));
	if (m->sync)
		meta_advance(&n, size, snprintf(buf + n, size - n, "sync=%s\n", m->sync));
	if (m->counters && *m->counters)
		meta_advance(&n, size, snprintf(buf + n, size - n, "counters=%s\n", m->counters));
	if (m->counters_unavailable && *m->counters_unavailable)
		meta_advance(&n, size,
		             snprintf(buf + n, size - n, "counters.unavailable=%s\n", m->counters_unavailable));
	if (m->counters_read && *m->counters_read)
		meta_advance(&n, size, snprintf(buf + n, size - n, "counters.read=%s\n", m->counters_read));
	if (m->counters_scope && *m->counters_scope)
		meta_advance(&n, size, snprintf(buf + n, size - n, "counters.scope=%s\n", m->counters_scope));
	if (m->power_sources && *m->power_sources)
		meta_advance(&n, size,
		             snprintf(buf + n, size - n, "power.sources=%s\npower.interval_ms=%u\n", m->power_sources,
		                      m->power_interval_ms));
	/* the command last: it runs to the end of its line */
	meta_advance(&n, size, snprintf(buf + n, size - n, "command="));
	if (n > size - 2)
		n = size - 2; /* room for the newline and the NUL */
	for (i = 0; i < m->argc && n < size - 2; i++) {
		const char *a = m->argv[i];

		if (i)
			buf[n++] = ' ';
		while (*a && n < size - 2) {
			char c = *a++;

			buf[n++] = c == '\n' ? ' ' : c;
		}
	}
	buf[n++] = '\n';
	buf[n] = '\0';
	return n;
}
