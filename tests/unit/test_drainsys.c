/* The drain's merge of tracer records into the threads' streams
 * (common/drainsys.c), on the process a thread belongs to: a kernel record
 * that names a new thread before its process is known (pid 0) must not
 * make a stream of its own; the thread takes the process of the first
 * record that names one, whether a system call record or its ring, and a
 * later record of pid 0 joins the thread as it is.  Exact counts of each
 * stream's events. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "testring.h"
#include "common/clocksync.h"
#include "common/decoder.h"
#include "common/drain.h"
#include "common/sysevent.h"
#include "common/systab.h"
#include "layerprof/format.h"

#define CHUNKS RING_CHUNKS
#define SLOTS RING_SLOTS
#define PID RING_PID
#define TID RING_TID
#define FN 0x401000u
#define STREAMS_MAX 8

/* The events of one stream (pid, tid) the drain handed out. */
struct stream_count {
	uint32_t pid, tid;
	uint64_t entries, sys_enter, sys_exit, kernel;
};

/* What the tracers hand on the next polls (ops.collect). */
struct feed {
	struct drain *d;
	unsigned kernel0;  /* kernel records of pid 0 for TID */
	unsigned syscalls; /* getppid calls of (PID, TID) */
};

/* The drain's context: what it hands out, and what it is fed. */
struct sink {
	struct stream_count s[STREAMS_MAX];
	int n;
	struct decoder dec;
	struct feed feed;
};

static struct stream_count *count_of(struct sink *k, uint32_t pid, uint32_t tid)
{
	for (int i = 0; i < k->n; i++)
		if (k->s[i].pid == pid && k->s[i].tid == tid)
			return &k->s[i];
	if (k->n == STREAMS_MAX)
		return NULL;
	k->s[k->n] = (struct stream_count){ .pid = pid, .tid = tid };
	return &k->s[k->n++];
}

static int sink_chunk(void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	struct sink *k = ctx;
	struct stream_count *c;
	struct lp_event ev;

	(void)events;
	if (type != LP_CHUNK_EVENTS)
		return 0;
	if (!CHECK(decoder_begin(&k->dec, payload, len) == 0))
		return 0;
	c = count_of(k, k->dec.pid, k->dec.tid);
	if (!CHECK(c != NULL))
		return 0;
	while (decoder_next(&k->dec, &ev) == 1) {
		c->entries += ev.type == LP_EV_ENTRY;
		c->sys_enter += ev.type == LP_EV_SYSCALL_ENTER;
		c->sys_exit += ev.type == LP_EV_SYSCALL_EXIT;
		c->kernel += ev.type == LP_EV_KERNEL;
	}
	return 0;
}

static bool feed_collect(void *ctx)
{
	struct feed *f = &((struct sink *)ctx)->feed;
	static const uint8_t raw[16] = { 1 };
	struct kernrec k = { .id = 7, .len = sizeof(raw), .raw = raw };
	struct sysevent ev = { .arch = (uint8_t)sys_arch_native(), .nr = SYS_getppid };

	for (; f->kernel0; f->kernel0--)
		CHECK(drain_kernel(f->d, 0, TID, clocksync_monotonic_ns(), &k) == 0);
	for (; f->syscalls; f->syscalls--) {
		ev.enter = true;
		CHECK(drain_syscall(f->d, PID, TID, clocksync_monotonic_ns(), &ev) == 0);
		ev.enter = false;
		CHECK(drain_syscall(f->d, PID, TID, clocksync_monotonic_ns(), &ev) == 0);
	}
	return false;
}

enum order {
	KERNEL_FIRST_THEN_SYSCALLS, /* pid 0, then syscalls of PID, then the ring */
	KERNEL_FIRST_THEN_RING,     /* pid 0, then the ring, then syscalls */
	KERNEL_AFTER,               /* syscalls and the ring, then pid 0 */
};

static void run(enum order order, const char *what)
{
	struct drain_config cfg = { .ring_chunks = CHUNKS, .chunk_slots = SLOTS, .clock = LP_CLOCK_MONOTONIC };
	static struct sink sink;
	struct feed *f = &sink.feed;
	struct drain_ops ops = { .ctx = &sink, .chunk = sink_chunk, .collect = feed_collect };
	struct stream_count *c;
	char session[128];
	struct ring r = { 0 };
	bool ring = false;

	printf("%s\n", what);
	snprintf(session, sizeof(session), "/tmp/lp-drainsys-test-%d-%d", (int)getpid(), (int)order);
	memset(&sink, 0, sizeof(sink));
	f->d = drain_new(session, &cfg, &ops);
	if (!CHECK(f->d != NULL))
		return;
	switch (order) {
	case KERNEL_FIRST_THEN_SYSCALLS:
		f->kernel0 = 3;
		drain_poll(f->d);
		f->syscalls = 5;
		drain_poll(f->d);
		ring = CHECK(ring_make(&r, session) == 0);
		break;
	case KERNEL_FIRST_THEN_RING:
		f->kernel0 = 3;
		drain_poll(f->d);
		ring = CHECK(ring_make(&r, session) == 0);
		f->syscalls = 5;
		break;
	case KERNEL_AFTER:
		f->syscalls = 5;
		drain_poll(f->d);
		ring = CHECK(ring_make(&r, session) == 0);
		drain_poll(f->d);
		f->kernel0 = 3;
		break;
	}
	if (ring) {
		ring_put(&r, LP_RAW_ENTRY, FN);
		ring_put(&r, LP_RAW_EXIT, FN);
	}
	drain_poll(f->d);
	if (ring)
		atomic_store_explicit((_Atomic uint32_t *)&r.h->state, LP_RING_CLOSED, memory_order_release);
	drain_finish(f->d);
	drain_free(f->d);
	if (ring)
		munmap(r.h, r.size);
	/* one stream, the ring's process: every record in it */
	if (!CHECK_EQ_U64(sink.n, 1))
		for (int i = 0; i < sink.n; i++)
			printf("  stream pid %u tid %u: %llu syscall entries, %llu kernel records\n", sink.s[i].pid,
			       sink.s[i].tid, (unsigned long long)sink.s[i].sys_enter,
			       (unsigned long long)sink.s[i].kernel);
	c = count_of(&sink, PID, TID);
	if (CHECK(c != NULL)) {
		CHECK_EQ_U64(c->sys_enter, 5);
		CHECK_EQ_U64(c->sys_exit, 5);
		CHECK_EQ_U64(c->kernel, 3);
		CHECK_EQ_U64(c->entries, ring ? 1 : 0);
	}
}

int main(void)
{
	run(KERNEL_FIRST_THEN_SYSCALLS, "a thread named by the kernel first, then its system calls, then its ring");
	run(KERNEL_FIRST_THEN_RING, "a thread named by the kernel first, then its ring, then its system calls");
	run(KERNEL_AFTER, "a thread known by its system calls and its ring, then named by the kernel");
	return check_summary();
}
