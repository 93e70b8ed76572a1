/* Per-CPU perf rings, read and merged into time order: what both
 * tracepoint-based backends share.  Each online CPU has one mmap'd ring;
 * every event opened on that CPU writes into it (PERF_EVENT_IOC_SET_OUTPUT
 * or a BPF perf event array). */
#ifndef LP_SYSTRACE_PERFRING_H
#define LP_SYSTRACE_PERFRING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PERFRING_DEFAULT_PAGES 256u
#define PERFRING_PAGES_MAX (1u << 16) /* data pages per CPU ring */
#define PERFRING_RECORD_MAX 65536u    /* perf_event_header.size is 16 bits */

struct perfring {
	int cpu;
	int fd; /* the event that owns the mapping; -1 until mapped */
	struct perf_event_mmap_page *page;
	size_t map_len;
	unsigned char *data;
	uint64_t data_size; /* a power of two */
	/* the merge's cursor during one drain */
	uint64_t pos, end;
	uint64_t next_ns;
	uint32_t next_size;
	bool has_next;
	/* free for the backend: e.g. the last record taken, to drop a twin */
	uint64_t last[4];
};

/* Called for each record in merged order; body is the record after its
 * header (contiguous, even when it wrapped the ring end).  Returns the
 * number of syscall records it handed out. */
typedef long (*perfring_take_fn)(void *ctx, struct perfring *ring, const struct perf_event_header *h,
                                 const unsigned char *body);

struct perfrings {
	struct perfring *rings;
	int nrings;
	uint32_t pages; /* data pages per ring */
	size_t page_size;
	/* where a sample's time (u64 CLOCK_MONOTONIC ns) lies in its body: the
	 * merge key; other records use their sample_id time when they have one */
	uint32_t sample_ns_off;
	bool id_has_time;      /* sample_id_all with PERF_SAMPLE_TIME last */
	unsigned char *bounce; /* PERFRING_RECORD_MAX bytes */
};

/* One ring per online CPU, none mapped yet; pages a power of two up to
 * PERFRING_PAGES_MAX (0: the default).  Returns 0 or -errno with the
 * reason in err. */
int perfrings_init(struct perfrings *pr, uint32_t pages, uint32_t sample_ns_off, bool id_has_time, char *err,
                   size_t errlen);
/* Maps ring's buffer through event fd, which then owns it. */
int perfring_map(struct perfrings *pr, struct perfring *ring, int fd, char *err, size_t errlen);
/* Hands every record up to `limit` (ns) from all rings to take, merged by
 * time, and frees their room.  Returns the sum of take's results. */
long perfrings_drain(struct perfrings *pr, uint64_t limit, perfring_take_fn take, void *ctx);
/* A PERF_RECORD_LOST's count, and its task when sample_id carries one
 * (0 otherwise).  False when the record is too short. */
bool perfring_lost(const struct perf_event_header *h, const unsigned char *body, uint64_t *count, uint32_t *pid,
                   uint32_t *tid);
/* Unmaps every ring (the event descriptors belong to the backend). */
void perfrings_release(struct perfrings *pr);

#endif
