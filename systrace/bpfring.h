/* The consumer side of a BPF ring buffer (BPF_MAP_TYPE_RINGBUF): one ring
 * shared by every CPU, records in the order programs reserved them, so a
 * thread's records come in its own order without a merge. */
#ifndef LP_SYSTRACE_BPFRING_H
#define LP_SYSTRACE_BPFRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpfring {
	int fd; /* the map; -1 when none */
	size_t size, page_size;
	void *cons_map, *prod_map;
	/* the kernel's positions are unsigned long: 32 bits on a 32-bit kernel
	 * (reading 64 there takes the next word as the high half). A 32-bit
	 * program on a 64-bit kernel reads and writes the low halves, which
	 * holds for the first 4 GiB of records, as with libbpf. */
	unsigned long *consumer_pos;       /* ours: written */
	const unsigned long *producer_pos; /* the kernel's */
	const unsigned char *data;         /* size bytes, mapped twice in a row */
};

/* Creates the map (size: bytes, a power of two and a multiple of the page
 * size) and maps it.  Returns 0 or -errno (-EINVAL or -ENOTSUP on kernels
 * before 5.8) with the reason in err. */
int bpfring_init(struct bpfring *r, size_t size, char *err, size_t errlen);
/* Hands complete records to take (data, length), at most max of them,
 * and frees their room.  Returns the sum of take's results. */
long bpfring_drain(struct bpfring *r, size_t max, long (*take)(void *ctx, const unsigned char *data, uint32_t len),
                   void *ctx);
/* True when records are waiting (complete or still being written). */
bool bpfring_pending(const struct bpfring *r);
/* Unmaps and closes.  Accepts one never set up (fd -1 and no maps). */
void bpfring_release(struct bpfring *r);

#endif
