/* Chunk framing: writing and checking chunk and file headers. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/crc32c.h"
#include "common/varint.h"

void chunk_header_put(uint8_t *hdr, uint8_t type, const void *payload, uint32_t len)
{
	le32_put(hdr, LP_CHUNK_MAGIC);
	hdr[4] = type;
	hdr[5] = 0;
	le16_put(hdr + 6, 0);
	le32_put(hdr + 8, len);
	le32_put(hdr + 12, crc32c(0, payload, len));
}

int chunk_header_get(const uint8_t *hdr, struct chunk_info *out)
{
	if (le32_get(hdr) != LP_CHUNK_MAGIC)
		return -EBADMSG;
	out->type = hdr[4];
	out->flags = hdr[5];
	out->len = le32_get(hdr + 8);
	out->crc = le32_get(hdr + 12);
	if (out->len > LP_CHUNK_MAX_PAYLOAD)
		return -EBADMSG;
	return 0;
}

int chunk_verify(const struct chunk_info *ci, const void *payload)
{
	return crc32c(0, payload, ci->len) == ci->crc ? 0 : -EBADMSG;
}

void trace_header_put(uint8_t *hdr)
{
	memset(hdr, 0, LP_FILE_HEADER_SIZE);
	memcpy(hdr, LP_TRACE_MAGIC, sizeof(LP_TRACE_MAGIC));
	le16_put(hdr + 8, LP_TRACE_MAJOR);
	le16_put(hdr + 10, LP_TRACE_MINOR);
}

int trace_header_get(const uint8_t *hdr, unsigned *major, unsigned *minor)
{
	if (memcmp(hdr, LP_TRACE_MAGIC, sizeof(LP_TRACE_MAGIC)))
		return -EBADMSG;
	*major = le16_get(hdr + 8);
	*minor = le16_get(hdr + 10);
	return *major == LP_TRACE_MAJOR ? 0 : -EPROTONOSUPPORT;
}

int chunk_write_fd(int fd, uint8_t type, const void *payload, uint32_t len)
{
	uint8_t hdr[LP_CHUNK_HEADER_SIZE];
	struct iovec iov[2];
	int n = 2;

	chunk_header_put(hdr, type, payload, len);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof(hdr);
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = len;
	while (n) {
		ssize_t w = writev(fd, iov + (2 - n), n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n && (size_t)w >= iov[2 - n].iov_len) {
			w -= (ssize_t)iov[2 - n].iov_len;
			n--;
		}
		if (n) {
			iov[2 - n].iov_base = (char *)iov[2 - n].iov_base + w;
			iov[2 - n].iov_len -= (size_t)w;
		}
	}
	return 0;
}
