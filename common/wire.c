/* Frames of the live wire protocol: header codec, the stream reader that
 * bounds and checks every frame before it is used, datagrams and sending. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <assert.h>

#include "common/crc32c.h"
#include "common/varint.h"
#include "common/wire.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* without it, the caller must ignore SIGPIPE */
#endif

/* Header fields, by offset. */
#define WIRE_OFF_MAGIC 0
#define WIRE_OFF_TYPE 4
#define WIRE_OFF_FLAGS 5
#define WIRE_OFF_RESERVED 6
#define WIRE_OFF_SEQ 8
#define WIRE_OFF_LEN 12
#define WIRE_OFF_CRC 16

/* Below this much free room at the end of the buffer, the reader moves the
 * unread bytes to the front rather than ask for tiny reads. */
#define WIRE_READ_MIN 4096u

static const char *const wire_names[] = {
	[LP_FRAME_HELLO] = "HELLO",     [LP_FRAME_AUTH] = "AUTH",           [LP_FRAME_WELCOME] = "WELCOME",
	[LP_FRAME_ERROR] = "ERROR",     [LP_FRAME_START] = "START",         [LP_FRAME_ATTACH] = "ATTACH",
	[LP_FRAME_SESSION] = "SESSION", [LP_FRAME_CHUNK] = "CHUNK",         [LP_FRAME_CONTROL] = "CONTROL",
	[LP_FRAME_STATUS] = "STATUS",   [LP_FRAME_HEARTBEAT] = "HEARTBEAT", [LP_FRAME_BYE] = "BYE",
	[LP_FRAME_UDPINFO] = "UDPINFO", [LP_FRAME_OSCAL] = "OSCAL",         [LP_FRAME_OSCALDATA] = "OSCALDATA",
};

const char *wire_frame_name(unsigned type)
{
	if (type < sizeof(wire_names) / sizeof(wire_names[0]) && wire_names[type])
		return wire_names[type];
	return "unknown";
}

void wire_header_put(uint8_t *hdr, uint8_t type, uint32_t seq, const void *payload, uint32_t len)
{
	le32_put(hdr + WIRE_OFF_MAGIC, LP_WIRE_MAGIC);
	hdr[WIRE_OFF_TYPE] = type;
	hdr[WIRE_OFF_FLAGS] = 0;
	le16_put(hdr + WIRE_OFF_RESERVED, 0);
	le32_put(hdr + WIRE_OFF_SEQ, seq);
	le32_put(hdr + WIRE_OFF_LEN, len);
	le32_put(hdr + WIRE_OFF_CRC, crc32c(0, payload, len));
}

/* Fills f from a header whose payload follows it and has been checked. */
static void wire_frame_fill(struct wire_frame *f, const uint8_t *hdr)
{
	f->type = hdr[WIRE_OFF_TYPE];
	f->seq = le32_get(hdr + WIRE_OFF_SEQ);
	f->len = le32_get(hdr + WIRE_OFF_LEN);
	f->payload = hdr + LP_WIRE_HEADER_SIZE;
}

int wire_reader_init(struct wire_reader *r)
{
	memset(r, 0, sizeof(*r));
	r->cap = LP_WIRE_HEADER_SIZE + LP_WIRE_MAX_PAYLOAD;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		r->cap = 0;
		return -ENOMEM;
	}
	r->check_seq = true;
	return 0;
}

void wire_reader_release(struct wire_reader *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Bytes the frame at r->start takes once whole: its header while that is
 * incomplete; the whole buffer when its length is out of bounds (next fails
 * on it without waiting for more). */
static size_t wire_reader_need(const struct wire_reader *r)
{
	uint32_t len;

	if (r->len - r->start < LP_WIRE_HEADER_SIZE)
		return LP_WIRE_HEADER_SIZE;
	len = le32_get(r->buf + r->start + WIRE_OFF_LEN);
	if (len > LP_WIRE_MAX_PAYLOAD)
		return r->cap;
	return LP_WIRE_HEADER_SIZE + (size_t)len;
}

uint8_t *wire_reader_space(struct wire_reader *r, size_t *avail)
{
	size_t pending = r->len - r->start;

	if (!pending) {
		r->start = r->len = 0;
	} else if (r->start && (r->cap - r->len < WIRE_READ_MIN || r->start + wire_reader_need(r) > r->cap)) {
		/* the frame begun would not fit behind the start: the one copy of a
		 * partial frame, at most once per frame */
		memmove(r->buf, r->buf + r->start, pending);
		r->start = 0;
		r->len = pending;
	}
	*avail = r->cap - r->len;
	return r->buf + r->len;
}

void wire_reader_commit(struct wire_reader *r, size_t n)
{
	assert(n <= r->cap - r->len);
	r->len += n;
}

int wire_reader_next(struct wire_reader *r, struct wire_frame *f)
{
	const uint8_t *hdr = r->buf + r->start;
	size_t pending = r->len - r->start;
	uint32_t len, seq;

	if (r->failed)
		return -EBADMSG;
	if (pending < LP_WIRE_HEADER_SIZE)
		return 0;
	if (le32_get(hdr + WIRE_OFF_MAGIC) != LP_WIRE_MAGIC) {
		snprintf(r->error, sizeof(r->error), "bad magic");
		goto fail;
	}
	len = le32_get(hdr + WIRE_OFF_LEN);
	if (len > LP_WIRE_MAX_PAYLOAD) {
		snprintf(r->error, sizeof(r->error), "frame too long (%lu bytes)", (unsigned long)len);
		goto fail;
	}
	if (pending - LP_WIRE_HEADER_SIZE < len)
		return 0;
	if (crc32c(0, hdr + LP_WIRE_HEADER_SIZE, len) != le32_get(hdr + WIRE_OFF_CRC)) {
		snprintf(r->error, sizeof(r->error), "checksum mismatch");
		goto fail;
	}
	seq = le32_get(hdr + WIRE_OFF_SEQ);
	if (r->check_seq && seq != r->next_seq) {
		snprintf(r->error, sizeof(r->error), "sequence %lu, expected %lu", (unsigned long)seq,
		         (unsigned long)r->next_seq);
		goto fail;
	}
	r->next_seq = seq + 1;
	wire_frame_fill(f, hdr);
	r->start += LP_WIRE_HEADER_SIZE + (size_t)len;
	return 1;
fail:
	r->failed = true;
	return -EBADMSG;
}

uint32_t wire_header_len(const uint8_t *hdr)
{
	return le32_get(hdr + WIRE_OFF_LEN);
}

int wire_parse_datagram(const uint8_t *buf, size_t len, struct wire_frame *f)
{
	uint32_t plen;

	if (len < LP_WIRE_HEADER_SIZE || le32_get(buf + WIRE_OFF_MAGIC) != LP_WIRE_MAGIC)
		return -EBADMSG;
	plen = le32_get(buf + WIRE_OFF_LEN);
	if (plen > LP_WIRE_MAX_PAYLOAD || plen != len - LP_WIRE_HEADER_SIZE)
		return -EBADMSG;
	if (crc32c(0, buf + LP_WIRE_HEADER_SIZE, plen) != le32_get(buf + WIRE_OFF_CRC))
		return -EBADMSG;
	wire_frame_fill(f, buf);
	return 0;
}

int wire_send(int fd, uint8_t type, uint32_t *seq, const void *payload, uint32_t len)
{
	uint8_t hdr[LP_WIRE_HEADER_SIZE];
	struct iovec iov[2];
	int first = 0, count = len ? 2 : 1;
	bool sock = true;

	if (len > LP_WIRE_MAX_PAYLOAD)
		return -EMSGSIZE;
	wire_header_put(hdr, type, *seq, payload, len);
	++*seq;
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof(hdr);
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = len;
	while (first < count) {
		ssize_t w;

		if (sock) {
			struct msghdr msg;

			memset(&msg, 0, sizeof(msg));
			msg.msg_iov = iov + first;
			msg.msg_iovlen = count - first;
			w = sendmsg(fd, &msg, MSG_NOSIGNAL);
			if (w < 0 && errno == ENOTSOCK) {
				sock = false;
				continue;
			}
		} else {
			w = writev(fd, iov + first, count - first);
		}
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO; /* no progress on a blocking fd: do not spin */
		while (first < count && (size_t)w >= iov[first].iov_len) {
			w -= (ssize_t)iov[first].iov_len;
			first++;
		}
		if (first < count) {
			iov[first].iov_base = (uint8_t *)iov[first].iov_base + w;
			iov[first].iov_len -= (size_t)w;
		}
	}
	return 0;
}

int wire_kv_get(const uint8_t *payload, size_t len, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key), pos = 0;

	if (size)
		out[0] = '\0';
	while (pos < len) {
		const uint8_t *line = payload + pos;
		const uint8_t *nl = memchr(line, '\n', len - pos);
		size_t llen = nl ? (size_t)(nl - line) : len - pos;

		if (llen > klen && line[klen] == '=' && !memcmp(line, key, klen)) {
			const uint8_t *value = line + klen + 1;
			size_t vlen = llen - klen - 1;

			if (memchr(value, '\0', vlen))
				return -EINVAL;
			if (vlen >= size)
				return -E2BIG;
			memcpy(out, value, vlen);
			out[vlen] = '\0';
			return 0;
		}
		pos += llen + 1;
	}
	return -ENOENT;
}

int wire_split_address(const char *addr, char *host, size_t hsize, char *port, size_t psize, const char *default_port,
                       bool allow_any_host)
{
	const char *h = addr, *p = NULL;
	size_t hlen;
	char *end;
	long v;

	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close)
			return -EINVAL;
		h = addr + 1;
		hlen = (size_t)(close - h);
		if (close[1] == ':')
			p = close + 2;
		else if (close[1])
			return -EINVAL;
	} else {
		const char *colon = strrchr(addr, ':');

		if (colon && strchr(addr, ':') != colon)
			return -EINVAL; /* a bare IPv6 address needs brackets */
		hlen = colon ? (size_t)(colon - addr) : strlen(addr);
		if (colon)
			p = colon + 1;
	}
	if ((!hlen && !allow_any_host) || hlen >= hsize)
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (!p)
		p = default_port;
	if (!p)
		return -EINVAL;
	errno = 0;
	v = strtol(p, &end, 10);
	if (!*p || *end || errno || v < 1 || v > 65535 || strlen(p) >= psize)
		return -EINVAL;
	strcpy(port, p);
	return 0;
}

const char *wire_unix_path(const char *addr)
{
	size_t n = strlen(LP_WIRE_UNIX_PREFIX);

	return strncmp(addr, LP_WIRE_UNIX_PREFIX, n) ? NULL : addr + n;
}

int wire_unix_default(char *out, size_t size, unsigned uid, const char *name)
{
	int n = snprintf(out, size, LP_WIRE_UNIX_DIR_FMT "%s%s", uid, name ? "/" : "", name ? name : "");

	return n < 0 || (size_t)n >= size || (size_t)n > LP_WIRE_UNIX_PATH_MAX ? -ENAMETOOLONG : 0;
}
