/* A BPF ring buffer's consumer (see bpfring.h). */
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "systrace/bpfprog.h"
#include "systrace/bpfring.h"

int bpfring_init(struct bpfring *r, size_t size, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	int e;

	memset(r, 0, sizeof(*r));
	r->page_size = page > 0 ? (size_t)page : 4096;
	r->size = size;
	r->fd = bpf_map_new(BPF_MAP_TYPE_RINGBUF, 0, 0, (uint32_t)size, 0);
	if (r->fd < 0) {
		e = r->fd;
		snprintf(err, errlen, "bpf ring buffer: %s", strerror(-e));
		r->fd = -1;
		return e;
	}
	r->cons_map = mmap(NULL, r->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	r->prod_map = r->cons_map == MAP_FAILED
	                  ? MAP_FAILED
	                  : mmap(NULL, r->page_size + 2 * size, PROT_READ, MAP_SHARED, r->fd, (off_t)r->page_size);
	if (r->cons_map == MAP_FAILED || r->prod_map == MAP_FAILED) {
		e = -errno;
		snprintf(err, errlen, "cannot map the bpf ring buffer: %s", strerror(-e));
		if (r->cons_map == MAP_FAILED)
			r->cons_map = NULL;
		if (r->prod_map == MAP_FAILED)
			r->prod_map = NULL;
		bpfring_release(r);
		return e;
	}
	r->consumer_pos = r->cons_map;
	r->producer_pos = r->prod_map;
	r->data = (const unsigned char *)r->prod_map + r->page_size;
	return 0;
}

long bpfring_drain(struct bpfring *r, size_t max, long (*take)(void *ctx, const unsigned char *data, uint32_t len),
                   void *ctx)
{
	unsigned long cons = __atomic_load_n(r->consumer_pos, __ATOMIC_RELAXED);
	unsigned long prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);
	long n = 0;

	/* positions wrap on 32-bit kernels */
	for (size_t i = 0; i < max && (long)(prod - cons) > 0; i++) {
		const unsigned char *rec = r->data + (cons & (r->size - 1));
		uint32_t hdr = __atomic_load_n((const uint32_t *)rec, __ATOMIC_ACQUIRE);
		uint32_t len = hdr & ~(uint32_t)(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);

		if (hdr & BPF_RINGBUF_BUSY_BIT)
			break; /* still being written: next time */
		if (!(hdr & BPF_RINGBUF_DISCARD_BIT))
			n += take(ctx, rec + BPF_RINGBUF_HDR_SZ, len);
		cons += ((unsigned long)len + BPF_RINGBUF_HDR_SZ + 7) & ~7ul;
		__atomic_store_n(r->consumer_pos, cons, __ATOMIC_RELEASE);
	}
	return n;
}

bool bpfring_pending(const struct bpfring *r)
{
	return __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE) != __atomic_load_n(r->consumer_pos, __ATOMIC_RELAXED);
}

void bpfring_release(struct bpfring *r)
{
	if (r->prod_map)
		munmap(r->prod_map, r->page_size + 2 * r->size);
	if (r->cons_map)
		munmap(r->cons_map, r->page_size);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}
