/* A thread's ring made by hand in a session directory, as the runtime makes
 * one (for the drain's tests): RING_CHUNKS chunks of RING_SLOTS slots of
 * (RING_PID, RING_TID), image 1, CLOCK_MONOTONIC; ring_put publishes one
 * slot. */
#ifndef LP_TESTS_TESTRING_H
#define LP_TESTS_TESTRING_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/clocksync.h"
#include "layerprof/format.h"

#define RING_CHUNKS 2u
#define RING_SLOTS 64u
#define RING_HEADER 4096u
#define RING_PID 4242u
#define RING_TID 4243u

struct ring {
	struct lp_ring_header *h;
	struct lp_slot *slots;
	size_t size;
};

static inline int ring_make(struct ring *r, const char *session)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s%u.%u.1", session, LP_RING_PREFIX, RING_PID, RING_TID);
	r->size = RING_HEADER + (size_t)(RING_CHUNKS + 1) * RING_SLOTS * sizeof(struct lp_slot);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)r->size))
		return -1;
	r->h = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r->h == MAP_FAILED)
		return -1;
	r->slots = (struct lp_slot *)((char *)r->h + RING_HEADER);
	r->h->version = LP_SHM_VERSION;
	r->h->header_size = RING_HEADER;
	r->h->slot_size = sizeof(struct lp_slot);
	r->h->ring_chunks = RING_CHUNKS;
	r->h->chunk_slots = RING_SLOTS;
	r->h->pid = RING_PID;
	r->h->tid = RING_TID;
	r->h->image = 1;
	r->h->clock = LP_CLOCK_MONOTONIC;
	r->h->ptr_bits = 64;
	atomic_store_explicit((_Atomic uint32_t *)&r->h->magic, LP_RING_MAGIC, memory_order_release);
	return 0;
}

static inline void ring_put(struct ring *r, uint32_t type, uint64_t payload)
{
	uint32_t head = r->h->head;
	struct lp_slot *s = &r->slots[head % (RING_CHUNKS * RING_SLOTS)];

	s->time = clocksync_monotonic_ns();
	s->word = payload | (uint64_t)type << LP_SLOT_TYPE_SHIFT;
	atomic_store_explicit((_Atomic uint32_t *)&r->h->head, head + 1, memory_order_release);
}

#endif
