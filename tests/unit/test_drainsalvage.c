/* The drain's salvage of a killed drain's session (drain_salvage), with
 * exact counts: a drain in a child process takes events from a ring and
 * is killed with SIGKILL before (or after) writing them; the ring gets
 * more events and drops; a second drain finishes the work.  Every event is
 * then either in its chunks or counted in a LOST event, once.  Also
 * drain_flush_idle: a quiet stream's partial chunk goes out, a stream
 * that wrote a chunk by itself since the last call does not. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "testring.h"
#include "common/clocksync.h"
#include "common/decoder.h"
#include "common/drain.h"
#include "layerprof/format.h"

#define CHUNKS RING_CHUNKS
#define SLOTS RING_SLOTS
#define PID RING_PID
#define TID RING_TID
#define FN 0x401000u

/* What a drain handed out, in order. */
struct sink {
	uint8_t *buf;
	size_t len, cap;
	unsigned chunks;
};

static int sink_chunk(void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	struct sink *s = ctx;

	if (type != LP_CHUNK_EVENTS)
		return 0;
	if (s->len + len + 8 > s->cap) {
		s->cap = (s->len + len + 8) * 2;
		s->buf = realloc(s->buf, s->cap);
		if (!s->buf)
			abort();
	}
	memcpy(s->buf + s->len, &len, sizeof(len));
	memcpy(s->buf + s->len + sizeof(len), payload, len);
	s->len += sizeof(len) + len;
	s->chunks++;
	return 0;
}

struct counts {
	uint64_t entries, exits, lost, ends;
};

static struct counts sink_count(const struct sink *s)
{
	static struct decoder dec;
	struct counts c = { 0 };
	struct lp_event ev;
	size_t at = 0, len;

	while (at < s->len) {
		memcpy(&len, s->buf + at, sizeof(len));
		at += sizeof(len);
		CHECK(decoder_begin(&dec, s->buf + at, len) == 0);
		while (decoder_next(&dec, &ev) == 1) {
			c.entries += ev.type == LP_EV_ENTRY;
			c.exits += ev.type == LP_EV_EXIT;
			if (ev.type == LP_EV_LOST)
				c.lost += ev.value;
			c.ends += ev.type == LP_EV_TASK && ev.arg == LP_TASK_END;
		}
		at += len;
	}
	return c;
}

static void ring_calls(struct ring *r, unsigned n)
{
	while (n--) {
		ring_put(r, LP_RAW_ENTRY, FN);
		ring_put(r, LP_RAW_EXIT, FN);
	}
}

/* The killed drain: takes everything the ring holds (5 calls and a LOST
 * of 4), flushes when asked, then dies without a word. */
static void __attribute__((noreturn)) killed_drain(const char *session, bool flush, int tell, int wait)
{
	struct drain_config cfg = {
		.ring_chunks = CHUNKS, .chunk_slots = SLOTS, .clock = LP_CLOCK_MONOTONIC, .keep_rings = true
	};
	struct sink sink = { 0 };
	struct drain_ops ops = { .ctx = &sink, .chunk = sink_chunk };
	struct drain *d = drain_new(session, &cfg, &ops);
	long taken = 0, n;
	char c = 'x';

	if (!d || write(tell, &c, 1) != 1 || read(wait, &c, 1) != 1)
		_exit(2);
	while (taken < 11 && (n = drain_poll(d)) >= 0)
		taken += n;
	if (flush)
		drain_flush_idle(d);
	if (write(tell, &c, 1) != 1)
		_exit(2);
	raise(SIGKILL);
	_exit(3);
}

static void test_salvage(bool flushed)
{
	char session[128], kept[256], c;
	struct sink sink = { 0 };
	struct drain_ops ops = { .ctx = &sink, .chunk = sink_chunk };
	struct counts n;
	struct ring r;
	struct lp_control ctl;
	struct drain *d;
	int tell[2], wait_[2], status, dirfd, fd;
	pid_t child;

	snprintf(session, sizeof(session), "/tmp/lp-salvage-test-%d", (int)getpid());
	if (!CHECK(pipe(tell) == 0 && pipe(wait_) == 0))
		return;
	child = fork();
	if (child == 0)
		killed_drain(session, flushed, tell[1], wait_[0]);
	CHECK(read(tell[0], &c, 1) == 1);
	if (!CHECK(ring_make(&r, session) == 0))
		return;
	ring_calls(&r, 5);
	ring_put(&r, LP_RAW_LOST, 4);
	CHECK(write(wait_[1], &c, 1) == 1);
	CHECK(read(tell[0], &c, 1) == 1);
	CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(tell[0]);
	close(tell[1]);
	close(wait_[0]);
	close(wait_[1]);
	/* what the killed drain left: the ring under its kept name, its tail
	 * and what it had not written */
	snprintf(kept, sizeof(kept), "%s/%s%u.%u.1", session, LP_RING_DRAINED_PREFIX, PID, TID);
	CHECK(access(kept, F_OK) == 0);
	CHECK_EQ_U64(r.h->tail, 11);
	CHECK_EQ_U64(r.h->unwritten, flushed ? 0 : 10);
	CHECK_EQ_U64(r.h->lost_written, flushed ? 4 : 0);
	/* the program goes on: 3 more calls, 3 more events dropped, then its
	 * thread ends */
	ring_calls(&r, 3);
	ring_put(&r, LP_RAW_LOST, 3);
	atomic_store_explicit((_Atomic uint64_t *)&r.h->dropped, 7 + 3, memory_order_release);
	atomic_store_explicit((_Atomic uint32_t *)&r.h->state, LP_RING_CLOSED, memory_order_release);

	dirfd = open(session, O_RDONLY | O_DIRECTORY);
	d = drain_salvage(dirfd, &ops);
	if (!CHECK(d != NULL))
		return;
	snprintf(kept, sizeof(kept), "%s/%s", session, LP_CONTROL_NAME);
	fd = open(kept, O_RDONLY);
	CHECK(fd >= 0 && read(fd, &ctl, sizeof(ctl)) == (ssize_t)sizeof(ctl) && !(ctl.flags & LP_CTL_ENABLED));
	close(fd);
	while (drain_poll(d) > 0)
		;
	CHECK(drain_finish(d) == 0);
	drain_free(d);
	close(dirfd);
	CHECK(rmdir(session) == 0); /* emptied */
	munmap(r.h, r.size);

	n = sink_count(&sink);
	CHECK_EQ_U64(n.entries, 3);
	CHECK_EQ_U64(n.exits, 3);
	CHECK_EQ_U64(n.ends, 1);
	/* not written by the killed drain: its 10 events (unless flushed), the
	 * 4 of its LOST slot (unless flushed), 6 dropped later */
	CHECK_EQ_U64(n.lost, flushed ? 6 : 10 + 4 + 6);
	free(sink.buf);
}

/* A quiet stream's partial chunk goes out on the period; one that wrote a
 * chunk by itself meanwhile is left alone. */
static void test_flush_idle(void)
{
	struct drain_config cfg = {
		.ring_chunks = CHUNKS, .chunk_slots = SLOTS, .clock = LP_CLOCK_MONOTONIC, .chunk_bytes = 1024
	};
	struct sink sink = { 0 };
	struct drain_ops ops = { .ctx = &sink, .chunk = sink_chunk };
	char session[128];
	struct drain *d;
	struct ring r;
	unsigned i;

	snprintf(session, sizeof(session), "/tmp/lp-flush-test-%d", (int)getpid());
	d = drain_new(session, &cfg, &ops);
	if (!CHECK(d != NULL) || !CHECK(ring_make(&r, session) == 0))
		return;
	ring_calls(&r, 2);
	drain_poll(d);
	CHECK_EQ_U64(sink.chunks, 0);
	drain_flush_idle(d);
	CHECK_EQ_U64(sink.chunks, 1); /* quiet: flushed */
	drain_flush_idle(d);
	CHECK_EQ_U64(sink.chunks, 1); /* nothing new */
	/* busy: enough calls to fill 1 KiB chunks by themselves (over
	 * polls, within the ring), leaving a partial one */
	for (i = 0; i < 21; i++) {
		ring_calls(&r, 25);
		drain_poll(d);
	}
	CHECK(sink.chunks > 1);
	i = sink.chunks;
	drain_flush_idle(d);
	CHECK_EQ_U64(sink.chunks, i); /* it wrote chunks meanwhile: left alone */
	/* one call more: whatever it leaves goes out in one chunk (or, if it
	 * filled the chunk, that chunk was the one) */
	ring_calls(&r, 1);
	drain_poll(d);
	drain_flush_idle(d);
	CHECK_EQ_U64(sink.chunks, i + 1);
	atomic_store_explicit((_Atomic uint32_t *)&r.h->state, LP_RING_CLOSED, memory_order_release);
	drain_finish(d);
	drain_free(d);
	munmap(r.h, r.size);
	free(sink.buf);
}

int main(void)
{
	test_salvage(false);
	test_salvage(true);
	test_flush_idle();
	return check_summary();
}
