/* libFuzzer target for the wire protocol's receiving side: the input is a TCP
 * byte stream fed to a wire_reader in pieces its first bytes choose; every
 * frame's payload is searched for keys; the input is also tried as a datagram. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/varint.h"
#include "common/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: abort, so that the fuzzer keeps the input. */
#define ENSURE(cond)                                                                          \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "fuzz_wire: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                              \
		}                                                                             \
	} while (0)

/* The input starts with a flags byte and PIECES piece sizes; the stream
 * follows. */
#define PIECES 4
#define CONTROL_SIZE (1 + PIECES)

enum fuzz_flags {
	/* rewrite each frame's checksum before reading, so that mutations of
	 * payloads reach wire_kv_get rather than stop at the CRC */
	FUZZ_FIX_CRC = 1 << 0,
	/* rewrite each frame's seq to its index */
	FUZZ_FIX_SEQ = 1 << 1,
	/* read without the seq check */
	FUZZ_ANY_SEQ = 1 << 2,
};

/* Payload lookups: keys of the protocol, one the prefix of another. */
static const char *const keys[] = { "protocol", "mac", "session", "session_count", "nonce", "pid", "k" };
static const size_t out_sizes[] = { 1, 4, 65, 300 };

/* A piece size from one control byte: 1 byte up to 64 KiB. */
static size_t piece_size(uint8_t b)
{
	return 1 + (size_t)b * b + (b == 255 ? 0xffff - 255 * 255 : 0);
}

/* Rewrites the checksums (and seqs) of the whole frames that follow each other
 * from the start of the stream, up to the first bad magic or length. */
static void stream_fix(uint8_t *s, size_t n, unsigned flags)
{
	size_t off = 0;
	uint32_t i = 0;

	while (n - off >= LP_WIRE_HEADER_SIZE) {
		uint8_t *hdr = s + off;
		uint32_t len = le32_get(hdr + 12);

		if (le32_get(hdr) != LP_WIRE_MAGIC || len > LP_WIRE_MAX_PAYLOAD || len > n - off - LP_WIRE_HEADER_SIZE)
			break;
		if (flags & FUZZ_FIX_CRC)
			le32_put(hdr + 16, crc32c(0, hdr + LP_WIRE_HEADER_SIZE, len));
		if (flags & FUZZ_FIX_SEQ)
			le32_put(hdr + 8, i);
		off += LP_WIRE_HEADER_SIZE + len;
		i++;
	}
}

/* Looks every key up in a copy of exactly the payload's size, into outputs of
 * exactly their size, so that AddressSanitizer catches a byte too far. */
static void payload_search(const uint8_t *payload, uint32_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	size_t k, s;

	ENSURE(copy);
	if (len)
		memcpy(copy, payload, len);
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (s = 0; s < sizeof(out_sizes) / sizeof(out_sizes[0]); s++) {
			char *out = malloc(out_sizes[s]);
			int ret;

			ENSURE(out);
			ret = wire_kv_get(copy, len, keys[k], out, out_sizes[s]);
			ENSURE(ret == 0 || ret == -ENOENT || ret == -E2BIG || ret == -EINVAL);
			if (ret == 0)
				ENSURE(strlen(out) < out_sizes[s] && !strchr(out, '\n'));
			else
				ENSURE(out[0] == '\0');
			free(out);
		}
	free(copy);
}

/* The frame the reader returned must be the next one of the stream, byte for
 * byte: *off is where it starts. */
static void frame_check(const struct wire_reader *r, const struct wire_frame *f, const uint8_t *s, size_t n,
                        size_t *off, uint32_t index)
{
	uint8_t hdr[LP_WIRE_HEADER_SIZE];

	ENSURE(f->len <= LP_WIRE_MAX_PAYLOAD);
	ENSURE(f->payload >= r->buf + LP_WIRE_HEADER_SIZE && f->payload + f->len <= r->buf + r->cap);
	ENSURE(n - *off >= LP_WIRE_HEADER_SIZE + (size_t)f->len);
	wire_header_put(hdr, f->type, f->seq, f->payload, f->len);
	/* the flags and reserved bytes are not looked at */
	ENSURE(!memcmp(hdr, s + *off, 5) && !memcmp(hdr + 8, s + *off + 8, 12));
	ENSURE(!memcmp(f->payload, s + *off + LP_WIRE_HEADER_SIZE, f->len));
	ENSURE(!r->check_seq || f->seq == index);
	ENSURE(!strcmp(wire_frame_name(f->type), "unknown") ==
	       (f->type < LP_FRAME_HELLO || f->type > LP_FRAME_OSCALDATA));
	*off += LP_WIRE_HEADER_SIZE + f->len;
	payload_search(f->payload, f->len);
}

static void stream_read(const uint8_t *s, size_t n, const uint8_t *control)
{
	struct wire_reader r;
	struct wire_frame f;
	size_t pos = 0, off = 0;
	uint32_t index = 0;
	unsigned piece = 0;
	int ret = 0;

	ENSURE(wire_reader_init(&r) == 0);
	r.check_seq = !(control[0] & FUZZ_ANY_SEQ);
	while (pos < n) {
		size_t avail, take = piece_size(control[1 + piece++ % PIECES]);
		uint8_t *space = wire_reader_space(&r, &avail);

		/* every whole frame has been taken: there is room */
		ENSURE(avail > 0 && avail <= r.cap && space + avail == r.buf + r.cap);
		if (take > avail)
			take = avail;
		if (take > n - pos)
			take = n - pos;
		memcpy(space, s + pos, take);
		wire_reader_commit(&r, take);
		pos += take;
		while ((ret = wire_reader_next(&r, &f)) == 1)
			frame_check(&r, &f, s, n, &off, index++);
		if (ret < 0)
			break;
	}
	if (ret < 0) {
		ENSURE(ret == -EBADMSG && r.error[0] && memchr(r.error, '\0', sizeof(r.error)));
		ENSURE(wire_reader_next(&r, &f) == -EBADMSG);
	} else {
		/* what is left is less than the frame it begins */
		ENSURE(ret == 0);
		ENSURE(n - off < LP_WIRE_HEADER_SIZE || n - off < LP_WIRE_HEADER_SIZE + (size_t)le32_get(s + off + 12));
	}
	wire_reader_release(&r);
}

static void datagram_check(const uint8_t *buf, size_t len)
{
	struct wire_frame f;

	if (wire_parse_datagram(buf, len, &f) == 0) {
		ENSURE(len == LP_WIRE_HEADER_SIZE + (size_t)f.len && f.payload == buf + LP_WIRE_HEADER_SIZE);
		ENSURE(crc32c(0, f.payload, f.len) == le32_get(buf + 16));
		payload_search(f.payload, f.len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *s;
	size_t n;

	datagram_check(data, size);
	if (size < CONTROL_SIZE)
		return 0;
	n = size - CONTROL_SIZE;
	/* a copy of exactly the stream's size, which stream_fix may change */
	s = malloc(n ? n : 1);
	ENSURE(s);
	memcpy(s, data + CONTROL_SIZE, n);
	if (data[0] & (FUZZ_FIX_CRC | FUZZ_FIX_SEQ))
		stream_fix(s, n, data[0]);
	datagram_check(s, n);
	stream_read(s, n, data);
	free(s);
	return 0;
}
