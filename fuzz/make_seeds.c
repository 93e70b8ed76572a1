/* Writes the starting inputs of the decoder fuzzer: small valid traces that
 * use every event kind, and damaged copies of them.  Usage:
 * fuzz_make_seeds DIR (the files are named seed-*). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "common/encoder.h"
#include "common/varint.h"
#include "layerprof/format.h"

/* A trace being built in memory; the seeds are small. */
#define SEED_MAX (256u << 10)

struct seed {
	uint8_t b[SEED_MAX];
	size_t n;
};

static struct encoder enc;
static struct seed s;
static const char *outdir;
static int failed;

static void seed_start(void)
{
	trace_header_put(s.b);
	s.n = LP_FILE_HEADER_SIZE;
}

static void seed_chunk(uint8_t type, const void *payload, size_t len)
{
	if (s.n + LP_CHUNK_HEADER_SIZE + len > SEED_MAX) {
		fprintf(stderr, "fuzz_make_seeds: seed over %u bytes\n", SEED_MAX);
		exit(1);
	}
	chunk_header_put(s.b + s.n, type, payload, (uint32_t)len);
	memcpy(s.b + s.n + LP_CHUNK_HEADER_SIZE, payload, len);
	s.n += LP_CHUNK_HEADER_SIZE + len;
}

static void seed_text(uint8_t type, const char *text)
{
	seed_chunk(type, text, strlen(text));
}

/* Flushes the encoder into an EVENTS chunk, adding raw `extra` bytes (hand
 * made events the encoder does not write) at its end. */
static void seed_events(const uint8_t *extra, size_t extra_len)
{
	static uint8_t buf[ENCODER_CAP + 256];
	const uint8_t *payload;
	size_t len = encoder_take(&enc, &payload);

	memcpy(buf, payload, len);
	if (extra_len)
		memcpy(buf + len, extra, extra_len);
	seed_chunk(LP_CHUNK_EVENTS, buf, len + extra_len);
}

static void seed_write(const char *name, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%s", outdir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s.b, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "fuzz_make_seeds: cannot write '%s': %s\n", path, strerror(errno));
		failed = 1;
	}
}

static void clock_chunk(void)
{
	uint8_t buf[64];
	size_t n = 0;

	n += varint_put(buf + n, 2);
	n += varint_put(buf + n, 1000000);
	n += varint_put(buf + n, 5000000000u);
	n += varint_put(buf + n, 4000000);
	n += varint_put(buf + n, 5001000000u);
	seed_chunk(LP_CHUNK_CLOCK, buf, n);
}

/* One thread: main calls a, which calls b twice. */
static void small_trace(void)
{
	seed_start();
	seed_text(LP_CHUNK_META, "version=1\nclock=tsc\ncommand=./prog\n");
	encoder_init(&enc, 1, 100, 100);
	encoder_task(&enc, 1000, LP_TASK_START, 0, "prog", 4, NULL, 0);
	encoder_map(&enc, 1000, 0x555555554000u, 0x555555555000u, 0x555555556000u, 0x1000, (const uint8_t *)"\x12\x34",
	            2, "/tmp/prog", 9);
	encoder_entry(&enc, 1010, 0x555555555100u);
	encoder_entry(&enc, 1020, 0x555555555200u);
	encoder_entry(&enc, 1030, 0x555555555300u);
	encoder_exit(&enc, 1040, 0x555555555300u);
	encoder_entry(&enc, 1050, 0x555555555300u);
	encoder_exit(&enc, 1060, 0x555555555300u);
	encoder_exit(&enc, 1070, 0x555555555200u);
	encoder_exit(&enc, 1080, 0x555555555100u);
	encoder_task(&enc, 1090, LP_TASK_END, 0, NULL, 0, NULL, 0);
	seed_events(NULL, 0);
	clock_chunk();
	seed_text(LP_CHUNK_END, "status=0\nlost=0\n");
}

/* Every event kind, including the reserved ones a reader skips. */
static void all_kinds_trace(void)
{
	static const uint64_t frames[] = { 0x401000, 0x401100, 0x401200 };
	uint8_t extra[64];
	size_t n = 0;
	int i;

	seed_start();
	seed_text(LP_CHUNK_META, "version=1\nclock=monotonic\n");
	encoder_init(&enc, 2, 200, 201);
	encoder_task(&enc, 5000, LP_TASK_FORK, 100, "child", 5, frames, 3);
	encoder_entry(&enc, 5001, 0x401300);
	encoder_lost(&enc, 5002, 4096);
	encoder_exit(&enc, 5003, 0x401300);
	encoder_exit(&enc, 5004, 0x401200);
	for (i = 0; i < 20; i++)
		encoder_entry(&enc, 5010 + (uint64_t)i, 0x402000 + 0x10 * (uint64_t)i);
	encoder_longjmp(&enc, 5040, 2);
	encoder_task(&enc, 5050, LP_TASK_EXEC, 0, "/bin/true", 9, NULL, 0);
	encoder_task(&enc, 5060, LP_TASK_EXIT, 0, NULL, 0, NULL, 0);
	/* a reserved type with a 3-byte body, then an EXTENDED one */
	extra[n++] = LP_EV_MARKER;
	n += varint_put(extra + n, 1);
	n += varint_put(extra + n, 3);
	memcpy(extra + n, "abc", 3);
	n += 3;
	extra[n++] = LP_EV_EXTENDED;
	n += varint_put(extra + n, 1);
	n += varint_put(extra + n, 9);
	n += varint_put(extra + n, 2);
	memcpy(extra + n, "xy", 2);
	n += 2;
	seed_events(extra, n);
	seed_text(LP_CHUNK_END, "status=0\n");
}

/* Two threads in several chunks; recursion; addresses the fuzz target's
 * --only/--exclude classes pick (addr % 7 == 3, addr % 11 == 5). */
static void threads_trace(void)
{
	uint64_t t = 100000;
	int i, c;

	seed_start();
	seed_text(LP_CHUNK_META, "version=1\n");
	for (c = 0; c < 4; c++) {
		encoder_init(&enc, 3, 300, 300 + (uint32_t)(c & 1));
		for (i = 0; i < 40; i++)
			encoder_entry(&enc, t++, 0x400000 + 3 + 7 * (uint64_t)(i % 5));
		encoder_entry(&enc, t++, 0x400000 + 5 + 11 * 3);
		encoder_exit(&enc, t += 500, 0x400000 + 5 + 11 * 3);
		for (i = 40; i-- > 0;)
			encoder_exit(&enc, t += 1 + (uint64_t)i * 10, 0x400000 + 3 + 7 * (uint64_t)(i % 5));
		/* an exit that matches nothing, and one that skips a frame */
		encoder_exit(&enc, t++, 0xdead);
		encoder_entry(&enc, t++, 0x1000);
		encoder_entry(&enc, t++, 0x2000);
		encoder_exit(&enc, t++, 0x1000);
		seed_events(NULL, 0);
	}
	clock_chunk();
}

/* More distinct functions than the inline references reach. */
static void refs_trace(void)
{
	uint64_t i;

	seed_start();
	encoder_init(&enc, 4, 400, 400);
	for (i = 0; i < 300; i++)
		encoder_entry(&enc, 1000 + i, 0x7f0000000000u + 0x40 * (i % 37));
	for (i = 0; i < 300; i++)
		encoder_exit(&enc, 2000 + i, 0x7f0000000000u + 0x40 * ((299 - i) % 37));
	seed_events(NULL, 0);
}

int main(int argc, char **argv)
{
	size_t whole, second;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_make_seeds DIR\n");
		return 2;
	}
	outdir = argv[1];

	small_trace();
	seed_write("small", s.n);
	/* the same, cut in its EVENTS chunk and in a chunk header */
	second = LP_FILE_HEADER_SIZE + LP_CHUNK_HEADER_SIZE + strlen("version=1\nclock=tsc\ncommand=./prog\n");
	seed_write("small-cut-events", second + LP_CHUNK_HEADER_SIZE + 20);
	seed_write("small-cut-header", second + 7);
	seed_write("header-only", LP_FILE_HEADER_SIZE);
	/* a flipped payload byte: the checksum fails */
	whole = s.n;
	s.b[second + LP_CHUNK_HEADER_SIZE + 12] ^= 0x10;
	seed_write("small-bad-crc", whole);
	/* another major version */
	small_trace();
	le16_put(s.b + 8, 2);
	seed_write("version-2", s.n);

	all_kinds_trace();
	seed_write("all-kinds", s.n);
	threads_trace();
	seed_write("threads", s.n);
	refs_trace();
	seed_write("refs", s.n);

	/* garbage after a valid header */
	seed_start();
	memcpy(s.b + s.n, "LPCK\x02\x00\x00\x00\x40\x00\x00\x00garbage", 19);
	seed_write("garbage", s.n + 19);
	return failed;
}
