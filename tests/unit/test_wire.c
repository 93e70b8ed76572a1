/* Unit test of common/wire: the header layout, the stream reader over random
 * cuts of a long stream and at every byte boundary, each broken rule, the
 * largest frame, datagrams, key=value lookups and sending over a socket. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/varint.h"
#include "common/wire.h"
#include "tests/unit/check.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* xorshift64*: the same stream of numbers on every run. */
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1du;
}

/* Tests stop at the first allocation that fails. */
static void *test_alloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		printf("out of memory\n");
		exit(1);
	}
	return p;
}

/* A growable byte string holding frames as they travel. */
struct bytes {
	uint8_t *p;
	size_t len, cap;
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		uint8_t *p2 = test_alloc(2 * (b->len + n));

		if (b->len)
			memcpy(p2, b->p, b->len);
		free(b->p);
		b->p = p2;
		b->cap = 2 * (b->len + n);
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void bytes_frame(struct bytes *b, uint8_t type, uint32_t seq, const void *payload, uint32_t len)
{
	uint8_t hdr[LP_WIRE_HEADER_SIZE];

	wire_header_put(hdr, type, seq, payload, len);
	bytes_add(b, hdr, sizeof(hdr));
	bytes_add(b, payload, len);
}

/* Copies n bytes into the reader, as read() would, in as many pieces as the
 * space asks for. */
static void reader_feed(struct wire_reader *r, const uint8_t *p, size_t n)
{
	while (n) {
		size_t avail, take;
		uint8_t *space = wire_reader_space(r, &avail);

		if (!CHECK(avail > 0))
			return;
		take = n < avail ? n : avail;
		memcpy(space, p, take);
		wire_reader_commit(r, take);
		p += take;
		n -= take;
	}
}

static void test_header(void)
{
	static const char payload[] = "hello";
	uint8_t buf[LP_WIRE_HEADER_SIZE + 5 + 1];
	struct wire_frame f;

	wire_header_put(buf, LP_FRAME_STATUS, 0x01020304u, payload, 5);
	memcpy(buf + LP_WIRE_HEADER_SIZE, payload, 5);
	CHECK(!memcmp(buf, "LPWF", 4));
	CHECK_EQ_U64(buf[4], LP_FRAME_STATUS);
	CHECK_EQ_U64(buf[5], 0);
	CHECK_EQ_U64(le16_get(buf + 6), 0);
	CHECK(!memcmp(buf + 8, "\x04\x03\x02\x01", 4));
	CHECK(!memcmp(buf + 12, "\x05\x00\x00\x00", 4));
	CHECK_EQ_U64(le32_get(buf + 16), crc32c(0, payload, 5));

	memset(&f, 0, sizeof(f));
	CHECK_EQ_U64(wire_parse_datagram(buf, LP_WIRE_HEADER_SIZE + 5, &f), 0);
	CHECK_EQ_U64(f.type, LP_FRAME_STATUS);
	CHECK_EQ_U64(f.seq, 0x01020304u);
	CHECK_EQ_U64(f.len, 5);
	CHECK(f.payload == buf + LP_WIRE_HEADER_SIZE);

	CHECK_STR(wire_frame_name(LP_FRAME_HELLO), "HELLO");
	CHECK_STR(wire_frame_name(LP_FRAME_CHUNK), "CHUNK");
	CHECK_STR(wire_frame_name(LP_FRAME_HEARTBEAT), "HEARTBEAT");
	CHECK_STR(wire_frame_name(LP_FRAME_UDPINFO), "UDPINFO");
	CHECK_STR(wire_frame_name(LP_FRAME_OSCAL), "OSCAL");
	CHECK_STR(wire_frame_name(LP_FRAME_OSCALDATA), "OSCALDATA");
	CHECK_STR(wire_frame_name(0), "unknown");
	CHECK_STR(wire_frame_name(16), "unknown");
	CHECK_STR(wire_frame_name(~0u), "unknown");
}

/* A payload size: mostly small, some large, now and then the largest. */
static uint32_t random_len(void)
{
	uint64_t x = rng() % 100;

	if (x < 60)
		return (uint32_t)(rng() % 200);
	if (x < 95)
		return (uint32_t)(rng() % 20000);
	if (x < 99)
		return (uint32_t)(rng() % 300000);
	return LP_WIRE_MAX_PAYLOAD - (uint32_t)(rng() % 2);
}

/* 1000 random frames fed in random pieces of 1 byte to 64 KiB come out as
 * they went in. */
static void test_stream(void)
{
	enum { NFRAMES = 1000 };
	static uint32_t offs[NFRAMES];
	struct bytes s = { 0 };
	struct wire_reader r;
	struct wire_frame f;
	size_t pos = 0, avail_zero = 0;
	uint8_t *payload;
	unsigned got = 0, bad = 0, i;
	uint32_t j;

	if (!CHECK(wire_reader_init(&r) == 0))
		return;
	payload = test_alloc(LP_WIRE_MAX_PAYLOAD);
	for (i = 0; i < NFRAMES; i++) {
		uint32_t len = random_len();

		for (j = 0; j < len; j++)
			payload[j] = (uint8_t)rng();
		offs[i] = (uint32_t)s.len;
		bytes_frame(&s, (uint8_t)(1 + i % 13), i, payload, len);
	}
	while (pos < s.len) {
		size_t avail, take;
		uint8_t *space = wire_reader_space(&r, &avail);
		int ret;

		take = rng() % 4 ? 1 + rng() % 65536 : 1 + rng() % 16;
		if (take > avail)
			take = avail;
		if (take > s.len - pos)
			take = s.len - pos;
		/* every frame whole was taken: the space cannot be empty */
		if (!avail) {
			avail_zero++;
			break;
		}
		memcpy(space, s.p + pos, take);
		wire_reader_commit(&r, take);
		pos += take;
		while ((ret = wire_reader_next(&r, &f)) == 1) {
			const uint8_t *want = got < NFRAMES ? s.p + offs[got] : NULL;

			if (!want || f.type != want[4] || f.seq != got || f.len != le32_get(want + 12) ||
			    memcmp(f.payload, want + LP_WIRE_HEADER_SIZE, f.len))
				bad++;
			got++;
		}
		if (!CHECK_EQ_U64(ret, 0))
			break;
	}
	CHECK_EQ_U64(got, NFRAMES);
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(r.next_seq, NFRAMES);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 0);
	CHECK_EQ_U64(avail_zero, 0);
	wire_reader_release(&r);
	free(s.p);
	free(payload);
}

/* Two frames cut at every byte: whatever the cut, both come out whole, and
 * not before all of their bytes are in. */
static void test_every_cut(void)
{
	uint8_t payload[37];
	struct bytes s = { 0 };
	struct wire_reader r;
	struct wire_frame f;
	size_t cut, first_end;
	unsigned i, bad = 0;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 5);
	bytes_frame(&s, LP_FRAME_CONTROL, 0, payload, sizeof(payload));
	first_end = s.len;
	bytes_frame(&s, LP_FRAME_HEARTBEAT, 1, NULL, 0);
	for (cut = 0; cut <= s.len; cut++) {
		unsigned n = 0;
		int ret;

		if (wire_reader_init(&r))
			return;
		reader_feed(&r, s.p, cut);
		while ((ret = wire_reader_next(&r, &f)) == 1) {
			if (n == 0 && (f.type != LP_FRAME_CONTROL || f.len != sizeof(payload) ||
			               memcmp(f.payload, payload, sizeof(payload))))
				bad++;
			n++;
		}
		if (ret != 0 || n != (unsigned)(cut >= first_end) + (unsigned)(cut == s.len))
			bad++;
		reader_feed(&r, s.p + cut, s.len - cut);
		while ((ret = wire_reader_next(&r, &f)) == 1) {
			if (n == 0 && (f.type != LP_FRAME_CONTROL || memcmp(f.payload, payload, sizeof(payload))))
				bad++;
			if (n == 1 && (f.type != LP_FRAME_HEARTBEAT || f.len != 0 || f.seq != 1))
				bad++;
			n++;
		}
		if (ret != 0 || n != 2)
			bad++;
		wire_reader_release(&r);
	}
	CHECK_EQ_U64(bad, 0);
	free(s.p);
}

/* Empty payloads, and the largest frame both alone and behind a frame that
 * was taken (its bytes move to the front of the buffer). */
static void test_sizes(void)
{
	struct bytes s = { 0 };
	struct wire_reader r;
	struct wire_frame f;
	size_t avail, off;
	uint8_t *big;
	uint32_t i;

	if (!CHECK(wire_reader_init(&r) == 0))
		return;
	big = test_alloc(LP_WIRE_MAX_PAYLOAD + 1);
	for (i = 0; i <= LP_WIRE_MAX_PAYLOAD; i++)
		big[i] = (uint8_t)(i ^ i >> 8);

	bytes_frame(&s, LP_FRAME_BYE, 0, NULL, 0);
	reader_feed(&r, s.p, s.len);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 1);
	CHECK_EQ_U64(f.type, LP_FRAME_BYE);
	CHECK_EQ_U64(f.len, 0);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 0);

	/* alone: fills the buffer exactly */
	s.len = 0;
	bytes_frame(&s, LP_FRAME_CHUNK, 1, big, LP_WIRE_MAX_PAYLOAD);
	reader_feed(&r, s.p, s.len);
	wire_reader_space(&r, &avail);
	CHECK_EQ_U64(avail, 0);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 1);
	CHECK_EQ_U64(f.len, LP_WIRE_MAX_PAYLOAD);
	CHECK(!memcmp(f.payload, big, LP_WIRE_MAX_PAYLOAD));
	wire_reader_space(&r, &avail);
	CHECK_EQ_U64(avail, LP_WIRE_HEADER_SIZE + LP_WIRE_MAX_PAYLOAD);

	/* behind a small frame, read in 64 KiB pieces */
	s.len = 0;
	bytes_frame(&s, LP_FRAME_STATUS, 2, "x=1\n", 4);
	bytes_frame(&s, LP_FRAME_CHUNK, 3, big + 1, LP_WIRE_MAX_PAYLOAD);
	bytes_frame(&s, LP_FRAME_CHUNK, 4, big, LP_WIRE_MAX_PAYLOAD);
	for (off = 0; off < s.len;) {
		uint8_t *space = wire_reader_space(&r, &avail);
		size_t n = s.len - off < 65536 ? s.len - off : 65536;
		int ret;

		if (!CHECK(avail > 0))
			break;
		n = n < avail ? n : avail;
		memcpy(space, s.p + off, n);
		wire_reader_commit(&r, n);
		off += n;
		while ((ret = wire_reader_next(&r, &f)) == 1) {
			if (f.seq == 2)
				CHECK(f.len == 4 && !memcmp(f.payload, "x=1\n", 4));
			else if (f.seq == 3)
				CHECK(f.len == LP_WIRE_MAX_PAYLOAD && !memcmp(f.payload, big + 1, f.len));
			else
				CHECK(f.seq == 4 && f.len == LP_WIRE_MAX_PAYLOAD && !memcmp(f.payload, big, f.len));
		}
		CHECK_EQ_U64(ret, 0);
	}
	CHECK_EQ_U64(r.next_seq, 5);

	/* one byte more than the largest: refused from its header alone */
	s.len = 0;
	bytes_frame(&s, LP_FRAME_CHUNK, 5, big, LP_WIRE_MAX_PAYLOAD + 1);
	reader_feed(&r, s.p, LP_WIRE_HEADER_SIZE);
	CHECK_EQ_U64(wire_reader_next(&r, &f), -EBADMSG);
	CHECK_STR(r.error, "frame too long (1048641 bytes)");
	wire_reader_release(&r);
	free(s.p);
	free(big);
}

/* A good frame, then bad bytes: the good one comes out, then -EBADMSG with
 * this message, for good. */
static void expect_error(const struct bytes *s, bool check_seq, const char *message)
{
	struct wire_reader r;
	struct wire_frame f;

	if (wire_reader_init(&r))
		return;
	r.check_seq = check_seq;
	reader_feed(&r, s->p, s->len);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 1);
	CHECK_EQ_U64(f.type, LP_FRAME_HELLO);
	CHECK_EQ_U64(wire_reader_next(&r, &f), -EBADMSG);
	CHECK_STR(r.error, message);
	CHECK_EQ_U64(wire_reader_next(&r, &f), -EBADMSG);
	wire_reader_release(&r);
}

static void test_errors(void)
{
	static const char hello[] = "protocol=1\n";
	struct bytes s = { 0 };
	struct wire_reader r;
	struct wire_frame f;
	size_t second;

	bytes_frame(&s, LP_FRAME_HELLO, 0, hello, sizeof(hello) - 1);
	second = s.len;

	bytes_frame(&s, LP_FRAME_AUTH, 1, "mac=", 4);
	s.p[second] ^= 1;
	expect_error(&s, true, "bad magic");

	s.len = second;
	bytes_frame(&s, LP_FRAME_AUTH, 1, "mac=", 4);
	le32_put(s.p + second + 12, 0xffffffffu);
	expect_error(&s, true, "frame too long (4294967295 bytes)");

	s.len = second;
	bytes_frame(&s, LP_FRAME_AUTH, 1, "mac=", 4);
	s.p[s.len - 1] ^= 0x40;
	expect_error(&s, true, "checksum mismatch");
	s.p[s.len - 1] ^= 0x40;
	s.p[second + 16] ^= 0x01; /* the checksum itself */
	expect_error(&s, true, "checksum mismatch");

	s.len = second;
	bytes_frame(&s, LP_FRAME_AUTH, 7, "mac=", 4);
	expect_error(&s, true, "sequence 7, expected 1");
	s.len = second;
	bytes_frame(&s, LP_FRAME_AUTH, 0, "mac=", 4);
	expect_error(&s, true, "sequence 0, expected 1");

	/* without the seq check any seq is taken, and the next expected follows it */
	s.len = second;
	bytes_frame(&s, LP_FRAME_AUTH, 7, "mac=", 4);
	if (wire_reader_init(&r))
		return;
	r.check_seq = false;
	reader_feed(&r, s.p, s.len);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 1);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 1);
	CHECK_EQ_U64(f.seq, 7);
	CHECK_EQ_U64(r.next_seq, 8);
	CHECK_EQ_U64(wire_reader_next(&r, &f), 0);
	wire_reader_release(&r);

	/* a bad magic is found from the header alone, garbage too */
	if (wire_reader_init(&r))
		return;
	reader_feed(&r, (const uint8_t *)"GET / HTTP/1.1\r\nHost: x\r\n", 25);
	CHECK_EQ_U64(wire_reader_next(&r, &f), -EBADMSG);
	CHECK_STR(r.error, "bad magic");
	wire_reader_release(&r);
	wire_reader_release(&r); /* a zeroed reader is accepted */
	free(s.p);
}

static void test_datagram(void)
{
	struct bytes s = { 0 };
	struct wire_frame f;
	uint8_t *exact;

	bytes_frame(&s, LP_FRAME_CHUNK, 42, "\x01\x00\x00\x00payload", 11);
	/* exactly sized, so that AddressSanitizer sees a read past it */
	exact = test_alloc(s.len);
	memcpy(exact, s.p, s.len);
	CHECK_EQ_U64(wire_parse_datagram(exact, s.len, &f), 0);
	CHECK_EQ_U64(f.type, LP_FRAME_CHUNK);
	CHECK_EQ_U64(f.seq, 42);
	CHECK_EQ_U64(f.len, 11);
	CHECK(f.payload == exact + LP_WIRE_HEADER_SIZE && !memcmp(f.payload + 4, "payload", 7));

	CHECK_EQ_U64(wire_parse_datagram(exact, s.len - 1, &f), -EBADMSG); /* short payload */
	CHECK_EQ_U64(wire_parse_datagram(exact, LP_WIRE_HEADER_SIZE, &f), -EBADMSG);
	CHECK_EQ_U64(wire_parse_datagram(exact, LP_WIRE_HEADER_SIZE - 1, &f), -EBADMSG);
	CHECK_EQ_U64(wire_parse_datagram(exact, 0, &f), -EBADMSG);
	bytes_add(&s, "", 1);
	CHECK_EQ_U64(wire_parse_datagram(s.p, s.len, &f), -EBADMSG); /* a trailing byte */
	s.len--;
	s.p[s.len - 1] ^= 1;
	CHECK_EQ_U64(wire_parse_datagram(s.p, s.len, &f), -EBADMSG); /* checksum */
	s.p[s.len - 1] ^= 1;
	s.p[3] = 'X';
	CHECK_EQ_U64(wire_parse_datagram(s.p, s.len, &f), -EBADMSG); /* magic */

	s.len = 0;
	bytes_frame(&s, LP_FRAME_HEARTBEAT, 0, NULL, 0);
	CHECK_EQ_U64(wire_parse_datagram(s.p, s.len, &f), 0);
	CHECK_EQ_U64(f.len, 0);
	free(exact);
	free(s.p);
}

/* Looks key up in a copy of exactly len bytes of p. */
static int kv(const char *p, size_t len, const char *key, char *out, size_t size)
{
	uint8_t *copy = test_alloc(len ? len : 1);
	int ret;

	memcpy(copy, p, len);
	ret = wire_kv_get(copy, len, key, out, size);
	free(copy);
	return ret;
}

static void test_kv(void)
{
	static const char hello[] = "protocol=1\nagent=layerprofd 0.1.0\nmac=\nsession_count=2\nsession=5\n"
	                            "caps=startstop,udp\nnonce=abcd";
	static const char nul[] = "a=1\0\nb=2\n\0c=3\nd=x\0y\n\0\0\nbin\0ary=4\ne=5";
	size_t n = sizeof(hello) - 1;
	char out[64];

	CHECK_EQ_U64(kv(hello, n, "protocol", out, sizeof(out)), 0);
	CHECK_STR(out, "1");
	CHECK_EQ_U64(kv(hello, n, "agent", out, sizeof(out)), 0);
	CHECK_STR(out, "layerprofd 0.1.0");
	CHECK_EQ_U64(kv(hello, n, "caps", out, sizeof(out)), 0);
	CHECK_STR(out, "startstop,udp");
	CHECK_EQ_U64(kv(hello, n, "arch", out, sizeof(out)), -ENOENT);
	CHECK_STR(out, "");

	/* an empty value */
	strcpy(out, "junk");
	CHECK_EQ_U64(kv(hello, n, "mac", out, sizeof(out)), 0);
	CHECK_STR(out, "");

	/* a key that is the prefix of another, before and after it */
	CHECK_EQ_U64(kv(hello, n, "session", out, sizeof(out)), 0);
	CHECK_STR(out, "5");
	CHECK_EQ_U64(kv(hello, n, "session_count", out, sizeof(out)), 0);
	CHECK_STR(out, "2");
	CHECK_EQ_U64(kv(hello, n, "sess", out, sizeof(out)), -ENOENT);
	CHECK_EQ_U64(kv(hello, n, "protocol=1", out, sizeof(out)), -ENOENT);
	CHECK_EQ_U64(kv("session_count=2\nsession=5", 25, "session", out, sizeof(out)), 0);
	CHECK_STR(out, "5");

	/* the last line without its newline, and a length that cuts it */
	CHECK_EQ_U64(kv(hello, n, "nonce", out, sizeof(out)), 0);
	CHECK_STR(out, "abcd");
	CHECK_EQ_U64(kv(hello, n - 2, "nonce", out, sizeof(out)), 0);
	CHECK_STR(out, "ab");
	CHECK_EQ_U64(kv(hello, n - 4, "nonce", out, sizeof(out)), 0);
	CHECK_STR(out, "");
	CHECK_EQ_U64(kv(hello, n - 5, "nonce", out, sizeof(out)), -ENOENT);
	CHECK_EQ_U64(kv("k=v", 3, "k", out, sizeof(out)), 0);
	CHECK_STR(out, "v");
	CHECK_EQ_U64(kv("k=", 2, "k", out, sizeof(out)), 0);
	CHECK_STR(out, "");
	CHECK_EQ_U64(kv("k", 1, "k", out, sizeof(out)), -ENOENT);
	CHECK_EQ_U64(kv("", 0, "k", out, sizeof(out)), -ENOENT);
	CHECK_EQ_U64(wire_kv_get(NULL, 0, "k", out, sizeof(out)), -ENOENT);

	/* the first line with the key wins; lines without '=' are skipped */
	CHECK_EQ_U64(kv("k\nk=1\nk=2\n", 10, "k", out, sizeof(out)), 0);
	CHECK_STR(out, "1");
	CHECK_EQ_U64(kv("\n\n=x\nk==\n", 9, "k", out, sizeof(out)), 0);
	CHECK_STR(out, "=");
	CHECK_EQ_U64(kv("k=a\r\n", 5, "k", out, sizeof(out)), 0);
	CHECK_STR(out, "a\r"); /* lines end at '\n' only */

	/* a value that does not fit with its NUL */
	strcpy(out, "junk");
	CHECK_EQ_U64(kv(hello, n, "nonce", out, 4), -E2BIG);
	CHECK_STR(out, "");
	CHECK_EQ_U64(kv(hello, n, "nonce", out, 5), 0);
	CHECK_STR(out, "abcd");
	CHECK_EQ_U64(kv(hello, n, "mac", out, 1), 0);
	CHECK_EQ_U64(kv(hello, n, "mac", out, 0), -E2BIG);

	/* NUL bytes: not in a value, but elsewhere they are only bytes */
	n = sizeof(nul) - 1;
	CHECK_EQ_U64(kv(nul, n, "a", out, sizeof(out)), -EINVAL);
	CHECK_EQ_U64(kv(nul, n, "b", out, sizeof(out)), 0);
	CHECK_STR(out, "2");
	CHECK_EQ_U64(kv(nul, n, "c", out, sizeof(out)), -ENOENT);
	CHECK_EQ_U64(kv(nul, n, "d", out, sizeof(out)), -EINVAL);
	CHECK_EQ_U64(kv(nul, n, "bin", out, sizeof(out)), -ENOENT);
	CHECK_EQ_U64(kv(nul, n, "e", out, sizeof(out)), 0);
	CHECK_STR(out, "5");
}

/* Reads frames from fd until EOF with a reader; returns how many, checking
 * each against what send_frames sends. */
static unsigned read_frames(int fd, uint8_t *big, unsigned *bad)
{
	struct wire_reader r;
	struct wire_frame f;
	unsigned n = 0;
	int ret;

	if (wire_reader_init(&r))
		return 0;
	for (;;) {
		size_t avail;
		uint8_t *space = wire_reader_space(&r, &avail);
		ssize_t got = read(fd, space, avail);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		wire_reader_commit(&r, (size_t)got);
		while ((ret = wire_reader_next(&r, &f)) == 1) {
			if (f.seq != n || f.type != LP_FRAME_CHUNK + n % 2)
				++*bad;
			else if (n % 2 && f.len != 0)
				++*bad;
			else if (!(n % 2) && (f.len != LP_WIRE_MAX_PAYLOAD - n || memcmp(f.payload, big + n, f.len)))
				++*bad;
			n++;
		}
		if (ret < 0) {
			printf("reader: %s\n", r.error);
			++*bad;
			break;
		}
	}
	wire_reader_release(&r);
	return n;
}

/* In a child: sends large and empty frames by turns, then exits. */
static void send_frames(int fd, const uint8_t *big, unsigned count)
{
	uint32_t seq = 0;
	unsigned i;

	for (i = 0; i < count; i++) {
		int ret = i % 2 ? wire_send(fd, LP_FRAME_CHUNK + 1, &seq, NULL, 0)
		                : wire_send(fd, LP_FRAME_CHUNK, &seq, big + i, LP_WIRE_MAX_PAYLOAD - i);

		if (ret) {
			printf("wire_send: %s\n", strerror(-ret));
			_exit(1);
		}
	}
	_exit(seq == count ? 0 : 1);
}

/* wire_send on a socket (sendmsg) and on a pipe (writev), read back by a
 * reader while a child process writes. */
static void test_send(void)
{
	enum { COUNT = 6 };
	uint8_t *big = test_alloc(LP_WIRE_MAX_PAYLOAD + COUNT);
	int fds[2], kind, status;
	uint32_t seq;
	unsigned i;

	for (i = 0; i < LP_WIRE_MAX_PAYLOAD + COUNT; i++)
		big[i] = (uint8_t)(i * 13 + (i >> 12));
	for (kind = 0; kind < 2; kind++) {
		unsigned bad = 0, n;
		pid_t pid;

		if (!CHECK((kind ? pipe(fds) : socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) == 0))
			break;
		pid = fork();
		if (!CHECK(pid >= 0))
			break;
		if (pid == 0) {
			close(fds[0]);
			send_frames(fds[1], big, COUNT);
		}
		close(fds[1]);
		n = read_frames(fds[0], big, &bad);
		close(fds[0]);
		CHECK_EQ_U64(n, COUNT);
		CHECK_EQ_U64(bad, 0);
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}

	/* too long: nothing sent, seq kept */
	seq = 3;
	CHECK_EQ_U64(wire_send(1, LP_FRAME_CHUNK, &seq, big, LP_WIRE_MAX_PAYLOAD + 1), -EMSGSIZE);
	CHECK_EQ_U64(seq, 3);

	/* a closed peer is an error, not a SIGPIPE that ends the process */
	if (CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0)) {
		close(fds[1]);
		CHECK_EQ_U64(wire_send(fds[0], LP_FRAME_BYE, &seq, NULL, 0), -EPIPE);
		CHECK_EQ_U64(seq, 4);
		close(fds[0]);
	}
	CHECK_EQ_U64(wire_send(-1, LP_FRAME_BYE, &seq, NULL, 0), -EBADF);
	free(big);
}

/* ADDR:PORT as the agent (any host allowed, port required) and the host
 * (host required, default port) read it. */
static void test_split_address(void)
{
	char host[64], port[8];

	CHECK_EQ_U64(wire_split_address("dev:7878", host, sizeof(host), port, sizeof(port), NULL, false), 0);
	CHECK_STR(host, "dev");
	CHECK_STR(port, "7878");
	CHECK_EQ_U64(wire_split_address("[::1]:9", host, sizeof(host), port, sizeof(port), NULL, false), 0);
	CHECK_STR(host, "::1");
	CHECK_STR(port, "9");
	CHECK_EQ_U64(wire_split_address("10.0.0.2", host, sizeof(host), port, sizeof(port), "7878", false), 0);
	CHECK_STR(port, "7878");
	CHECK_EQ_U64(wire_split_address(":7878", host, sizeof(host), port, sizeof(port), NULL, true), 0);
	CHECK_STR(host, "");
	CHECK_EQ_U64((uint64_t)wire_split_address(":7878", host, sizeof(host), port, sizeof(port), NULL, false),
	             (uint64_t)-EINVAL);
	CHECK_EQ_U64((uint64_t)wire_split_address("dev", host, sizeof(host), port, sizeof(port), NULL, true),
	             (uint64_t)-EINVAL);
	CHECK_EQ_U64((uint64_t)wire_split_address("::1:80", host, sizeof(host), port, sizeof(port), NULL, true),
	             (uint64_t)-EINVAL);
	CHECK_EQ_U64((uint64_t)wire_split_address("[::1", host, sizeof(host), port, sizeof(port), "1", true),
	             (uint64_t)-EINVAL);
	CHECK_EQ_U64((uint64_t)wire_split_address("dev:0", host, sizeof(host), port, sizeof(port), NULL, true),
	             (uint64_t)-EINVAL);
	CHECK_EQ_U64((uint64_t)wire_split_address("dev:65536", host, sizeof(host), port, sizeof(port), NULL, true),
	             (uint64_t)-EINVAL);
	CHECK_EQ_U64((uint64_t)wire_split_address("dev:80x", host, sizeof(host), port, sizeof(port), NULL, true),
	             (uint64_t)-EINVAL);
	CHECK_EQ_U64(
	    (uint64_t)wire_split_address("a-very-long-host-name-that-does-not-fit-in-sixty-four-bytes-at-all:1", host,
	                                 sizeof(host), port, sizeof(port), NULL, true),
	    (uint64_t)-EINVAL);
}

/* "unix:PATH" addresses, the default socket's path, and a header's length. */
static void test_unix_address(void)
{
	char out[LP_WIRE_UNIX_PATH_MAX + 1], small[20];
	uint8_t hdr[LP_WIRE_HEADER_SIZE];

	CHECK_STR(wire_unix_path("unix:/run/a.sock"), "/run/a.sock");
	CHECK_STR(wire_unix_path("unix:"), "");
	CHECK(wire_unix_path("dev:7878") == NULL);
	CHECK(wire_unix_path("unix") == NULL);
	CHECK(wire_unix_path("[::1]:9") == NULL);
	CHECK_EQ_U64(wire_unix_default(out, sizeof(out), 1000, NULL), 0);
	CHECK_STR(out, "/tmp/layerprofd-1000");
	CHECK_EQ_U64(wire_unix_default(out, sizeof(out), 0, LP_WIRE_UNIX_NAME), 0);
	CHECK_STR(out, "/tmp/layerprofd-0/agent.sock");
	CHECK_EQ_U64((uint64_t)wire_unix_default(small, sizeof(small), 4000000000u, LP_WIRE_UNIX_NAME),
	             (uint64_t)-ENAMETOOLONG);
	wire_header_put(hdr, LP_FRAME_AUTH, 0, "abc", 3);
	CHECK_EQ_U64(wire_header_len(hdr), 3);
	wire_header_put(hdr, LP_FRAME_CHUNK, 7, NULL, 0);
	hdr[12] = 0xff;
	hdr[15] = 0x7f; /* whatever a peer claims: the receiver bounds it */
	CHECK_EQ_U64(wire_header_len(hdr), 0x7f0000ffu);
}

int main(void)
{
	test_header();
	test_stream();
	test_every_cut();
	test_sizes();
	test_errors();
	test_datagram();
	test_kv();
	test_send();
	test_split_address();
	test_unix_address();
	return check_summary();
}
