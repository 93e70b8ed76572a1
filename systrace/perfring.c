/* Per-CPU perf rings and their time-ordered merge (see perfring.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "systrace/perfring.h"
#include "systrace/tracefs.h"

#define PERFRING_NO_TIME 0u

int perfrings_init(struct perfrings *pr, uint32_t pages, uint32_t sample_ns_off, bool id_has_time, char *err,
                   size_t errlen)
{
	int cpus[TRACEFS_CPUS_MAX], n;
	long page_size = sysconf(_SC_PAGESIZE);

	memset(pr, 0, sizeof(*pr));
	if (!pages)
		pages = PERFRING_DEFAULT_PAGES;
	if (pages & (pages - 1) || pages > PERFRING_PAGES_MAX) {
		snprintf(err, errlen, "buffer size %u pages: not a power of two up to %u", pages, PERFRING_PAGES_MAX);
		return -EINVAL;
	}
	n = tracefs_cpus(cpus, TRACEFS_CPUS_MAX);
	if (!n) {
		snprintf(err, errlen, "no online CPU found");
		return -ENODEV;
	}
	pr->rings = calloc((size_t)n, sizeof(*pr->rings));
	pr->bounce = malloc(PERFRING_RECORD_MAX);
	if (!pr->rings || !pr->bounce) {
		perfrings_release(pr);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		pr->rings[i].cpu = cpus[i];
		pr->rings[i].fd = -1;
	}
	pr->nrings = n;
	pr->pages = pages;
	pr->page_size = page_size > 0 ? (size_t)page_size : 4096;
	pr->sample_ns_off = sample_ns_off;
	pr->id_has_time = id_has_time;
	return 0;
}

int perfring_map(struct perfrings *pr, struct perfring *ring, int fd, char *err, size_t errlen)
{
	size_t len = (size_t)(pr->pages + 1) * pr->page_size;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		int r = -errno;

		snprintf(err, errlen, "cannot map the CPU %d ring (%u pages): %s", ring->cpu, pr->pages, strerror(-r));
		return r;
	}
	ring->page = p;
	ring->map_len = len;
	if (ring->page->data_size) {
		ring->data = (unsigned char *)p + ring->page->data_offset;
		ring->data_size = ring->page->data_size;
	} else {
		ring->data = (unsigned char *)p + pr->page_size;
		ring->data_size = (uint64_t)pr->pages * pr->page_size;
	}
	ring->fd = fd;
	return 0;
}

static void ring_copy(const struct perfring *ring, uint64_t pos, void *dst, size_t len)
{
	size_t off = (size_t)(pos & (ring->data_size - 1));
	size_t first = ring->data_size - off < len ? (size_t)(ring->data_size - off) : len;

	memcpy(dst, ring->data + off, first);
	memcpy((unsigned char *)dst + first, ring->data, len - first);
}

/* Looks at the record at the ring's cursor: its size and time.  Records
 * later than `limit` stay in the ring for the next drain. */
static void ring_peek(const struct perfrings *pr, struct perfring *ring, uint64_t limit)
{
	struct perf_event_header h;
	uint64_t ns = PERFRING_NO_TIME;

	ring->has_next = false;
	if (ring->end - ring->pos < sizeof(h))
		return;
	ring_copy(ring, ring->pos, &h, sizeof(h));
	if (h.size < sizeof(h) || h.size % 8 || h.size > ring->end - ring->pos) {
		/* cannot happen with a sane kernel; resynchronise at the head */
		ring->pos = ring->end;
		return;
	}
	if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + pr->sample_ns_off + 8)
		ring_copy(ring, ring->pos + sizeof(h) + pr->sample_ns_off, &ns, sizeof(ns));
	else if (pr->id_has_time &&
	         (h.type == PERF_RECORD_LOST || h.type == PERF_RECORD_THROTTLE || h.type == PERF_RECORD_UNTHROTTLE) &&
	         h.size >= sizeof(h) + 16)
		ring_copy(ring, ring->pos + h.size - 8, &ns, sizeof(ns));
	if (ns > limit)
		return;
	ring->next_ns = ns;
	ring->next_size = h.size;
	ring->has_next = true;
}

static long ring_take(struct perfrings *pr, struct perfring *ring, perfring_take_fn take, void *ctx)
{
	size_t off = (size_t)(ring->pos & (ring->data_size - 1));
	const unsigned char *p = ring->data + off;
	struct perf_event_header h;
	long n;

	if (off + ring->next_size > ring->data_size) {
		ring_copy(ring, ring->pos, pr->bounce, ring->next_size);
		p = pr->bounce;
	}
	memcpy(&h, p, sizeof(h));
	n = take(ctx, ring, &h, p + sizeof(h));
	ring->pos += ring->next_size;
	return n;
}

/* Each ring is in time order already, so a merge that takes the earliest
 * head (the lower CPU on ties) gives the sorted, stable order without
 * copying the records.  Threads migrate between CPUs, which is why per
 * thread order needs the merge.  O(records x CPUs). */
long perfrings_drain(struct perfrings *pr, uint64_t limit, perfring_take_fn take, void *ctx)
{
	long n = 0;

	for (int i = 0; i < pr->nrings; i++) {
		struct perfring *ring = &pr->rings[i];

		if (!ring->page)
			continue;
		ring->end = __atomic_load_n(&ring->page->data_head, __ATOMIC_ACQUIRE);
		ring->pos = ring->page->data_tail;
		ring_peek(pr, ring, limit);
	}
	for (;;) {
		struct perfring *best = NULL;

		for (int i = 0; i < pr->nrings; i++) {
			struct perfring *ring = &pr->rings[i];

			if (ring->has_next && (!best || ring->next_ns < best->next_ns))
				best = ring;
		}
		if (!best)
			break;
		n += ring_take(pr, best, take, ctx);
		ring_peek(pr, best, limit);
	}
	for (int i = 0; i < pr->nrings; i++)
		if (pr->rings[i].page)
			__atomic_store_n(&pr->rings[i].page->data_tail, pr->rings[i].pos, __ATOMIC_RELEASE);
	return n;
}

bool perfring_lost(const struct perf_event_header *h, const unsigned char *body, uint64_t *count, uint32_t *pid,
                   uint32_t *tid)
{
	*pid = *tid = 0;
	if (h->type != PERF_RECORD_LOST || h->size < sizeof(*h) + 16)
		return false;
	memcpy(count, body + 8, 8);
	/* sample_id: tid (pid, tid), then time */
	if (h->size >= sizeof(*h) + 32) {
		memcpy(pid, body + h->size - sizeof(*h) - 16, 4);
		memcpy(tid, body + h->size - sizeof(*h) - 12, 4);
	}
	return true;
}

void perfrings_release(struct perfrings *pr)
{
	for (int i = 0; i < pr->nrings; i++)
		if (pr->rings && pr->rings[i].page)
			munmap(pr->rings[i].page, pr->rings[i].map_len);
	free(pr->rings);
	free(pr->bounce);
	memset(pr, 0, sizeof(*pr));
}
