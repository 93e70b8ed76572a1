/* Trace directory reader (see reader.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/lib/trace/reader.h"

int reader_open(struct reader *r, const char *dir, char *err, size_t errlen)
{
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	struct stat st;
	size_t n;
	int e;

	memset(r, 0, sizeof(*r));
	if (stat(dir, &st)) {
		e = -errno;
		snprintf(err, errlen, "cannot open trace '%s': %s", dir, strerror(errno));
		return e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "'%s' is a file, not a trace directory (a trace is a directory holding '%s')",
		         dir, LP_TRACE_DATA);
		return -EBADMSG;
	}
	r->path = malloc(strlen(dir) + sizeof("/" LP_TRACE_DATA));
	r->buf = malloc(LP_CHUNK_MAX_PAYLOAD);
	if (!r->path || !r->buf) {
		reader_release(r);
		snprintf(err, errlen, "cannot open trace '%s': out of memory", dir);
		return -ENOMEM;
	}
	sprintf(r->path, "%s/%s", dir, LP_TRACE_DATA);
	r->f = fopen(r->path, "rb");
	if (!r->f && errno == ENOENT) {
		snprintf(err, errlen, "'%s' is a directory but not a trace: it holds no file '%s'", dir, LP_TRACE_DATA);
		reader_release(r);
		return -ENOENT;
	}
	if (!r->f) {
		e = -errno;
		snprintf(err, errlen, "cannot open trace '%s': %s: %s", dir, LP_TRACE_DATA, strerror(errno));
		reader_release(r);
		return e;
	}
	if (fstat(fileno(r->f), &st)) {
		e = -errno;
		snprintf(err, errlen, "cannot read trace '%s': %s", r->path, strerror(errno));
		reader_release(r);
		return e;
	}
	/* fopen opens a directory too: its reads would fail with EISDIR */
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "'%s' is a directory, not a trace file", r->path);
		reader_release(r);
		return -EBADMSG;
	}
	r->size = st.st_size;
	n = fread(hdr, 1, sizeof(hdr), r->f);
	if (n == 0 && ferror(r->f)) {
		e = -errno;
		snprintf(err, errlen, "cannot read trace '%s': %s", r->path, strerror(errno));
		reader_release(r);
		return e ? e : -EIO;
	}
	if (n == 0) {
		snprintf(err, errlen, "trace '%s' is empty", dir);
		reader_release(r);
		return -ENODATA;
	}
	if (n < sizeof(hdr)) {
		snprintf(err, errlen, "trace '%s' is truncated: the file header is cut after %zu bytes", dir, n);
		reader_release(r);
		return -EBADMSG;
	}
	e = trace_header_get(hdr, &r->major, &r->minor);
	if (e == -EBADMSG) {
		snprintf(err, errlen, "'%s' is not a layerprof trace (bad magic)", dir);
		reader_release(r);
		return e;
	}
	if (e == -EPROTONOSUPPORT) {
		snprintf(err, errlen, "trace '%s' has format version %u.%u; this layerprof reads version %u.x", dir,
		         r->major, r->minor, LP_TRACE_MAJOR);
		reader_release(r);
		return e;
	}
	r->offset = LP_FILE_HEADER_SIZE;
	return 0;
}

static void damaged(struct reader *r, const char *what)
{
	r->state = READER_DAMAGED;
	snprintf(r->damage, sizeof(r->damage), "%s at byte %lld (after %llu whole chunks)", what, (long long)r->offset,
	         (unsigned long long)r->chunks);
}

/* The value of "lost_cause=" in an END chunk's text, if any. */
static void end_cause(struct reader *r, const uint8_t *text, size_t len)
{
	static const char key[] = "lost_cause=";
	size_t i = 0, n;

	while (i < len) {
		const uint8_t *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;

		if (end - i > sizeof(key) - 1 && !memcmp(text + i, key, sizeof(key) - 1)) {
			n = end - i - (sizeof(key) - 1);
			if (n >= sizeof(r->lost_cause))
				n = sizeof(r->lost_cause) - 1;
			memcpy(r->lost_cause, text + i + sizeof(key) - 1, n);
			r->lost_cause[n] = '\0';
			return;
		}
		i = end + 1;
	}
}

int reader_next(struct reader *r, struct chunk_info *ci, const uint8_t **payload)
{
	uint8_t hdr[LP_CHUNK_HEADER_SIZE];
	size_t n;

	if (r->state != READER_OK)
		return 0;
	n = fread(hdr, 1, sizeof(hdr), r->f);
	if (n == 0 && feof(r->f))
		return 0;
	if (n < sizeof(hdr)) {
		damaged(r, "truncated chunk header");
		return 0;
	}
	if (chunk_header_get(hdr, ci)) {
		damaged(r, "corrupt chunk header");
		return 0;
	}
	if (fread(r->buf, 1, ci->len, r->f) != ci->len) {
		damaged(r, "truncated chunk");
		return 0;
	}
	if (chunk_verify(ci, r->buf)) {
		damaged(r, "checksum mismatch");
		return 0;
	}
	r->offset += LP_CHUNK_HEADER_SIZE + ci->len;
	r->chunks++;
	if (ci->type == LP_CHUNK_END) {
		r->seen_end = true;
		end_cause(r, r->buf, ci->len);
	}
	*payload = r->buf;
	return 1;
}

int reader_seek(struct reader *r, off_t offset)
{
	if (fseeko(r->f, offset, SEEK_SET))
		return -errno;
	r->offset = offset;
	return 0;
}

void reader_release(struct reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->path);
	free(r->buf);
	r->f = NULL;
	r->path = NULL;
	r->buf = NULL;
}
