/* The data file of a trace being written (see trace/file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/encoder.h"
#include "common/varint.h"
#include "host/lib/trace/file.h"

#define TRACEFILE_END_MAX 1024u

static int tracefile_init(struct tracefile *tf)
{
	memset(tf, 0, sizeof(*tf));
	tf->fd = -1;
	tf->lost = calloc(TRACEFILE_LOST_STREAMS, sizeof(*tf->lost));
	return tf->lost ? 0 : -ENOMEM;
}

int tracefile_create(struct tracefile *tf, int dirfd)
{
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	int r = tracefile_init(tf);

	if (r)
		return r;
	tf->fd = openat(dirfd, LP_TRACE_DATA, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (tf->fd < 0)
		return -errno;
	trace_header_put(hdr);
	if (write(tf->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		return errno ? -errno : -EIO;
	tf->written = sizeof(hdr);
	return 0;
}

int tracefile_append(struct tracefile *tf, int dirfd, off_t valid)
{
	struct stat st;
	int r = tracefile_init(tf);

	if (r)
		return r;
	tf->fd = openat(dirfd, LP_TRACE_DATA, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (tf->fd < 0)
		return -errno;
	if (fstat(tf->fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < valid)
		return -EINVAL;
	if (ftruncate(tf->fd, valid) || lseek(tf->fd, valid, SEEK_SET) != valid)
		return -errno;
	tf->written = valid;
	return 0;
}

/* Writing stops: the file is cut back to its last whole chunk. */
static void tracefile_stop(struct tracefile *tf, int error)
{
	tf->error = error;
	if (ftruncate(tf->fd, tf->written) == 0)
		lseek(tf->fd, tf->written, SEEK_SET);
}

/* An EVENTS chunk that was not written: its events, on its stream. */
static void tracefile_count(struct tracefile *tf, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	const uint8_t *p = payload, *end = payload + len;
	uint64_t image, pid, tid, ns;
	size_t i;

	if (type != LP_CHUNK_EVENTS || !events)
		return;
	tf->unwritten += events;
	if (varint_get(&p, end, &image) || varint_get(&p, end, &pid) || varint_get(&p, end, &tid) ||
	    varint_get(&p, end, &ns) || image > UINT32_MAX || pid > UINT32_MAX || tid > UINT32_MAX) {
		tf->unwritten_unplaced += events;
		return;
	}
	for (i = 0; i < tf->nlost; i++) {
		struct tracefile_lost *l = &tf->lost[i];

		if (l->image == image && l->pid == pid && l->tid == tid) {
			l->events += events;
			if (ns > l->ns)
				l->ns = ns;
			return;
		}
	}
	if (tf->nlost == TRACEFILE_LOST_STREAMS) {
		tf->unwritten_unplaced += events;
		return;
	}
	tf->lost[tf->nlost++] = (struct tracefile_lost){ (uint32_t)image, (uint32_t)pid, (uint32_t)tid, ns, events };
}

int tracefile_write(struct tracefile *tf, uint8_t type, const void *payload, size_t len, uint64_t events)
{
	int r;

	if (tf->error) {
		tracefile_count(tf, type, payload, len, events);
		return 1;
	}
	r = chunk_write_fd(tf->fd, type, payload, (uint32_t)len);
	if (!r) {
		tf->written += (off_t)(LP_CHUNK_HEADER_SIZE + len);
		return 0;
	}
	tracefile_stop(tf, r);
	tracefile_count(tf, type, payload, len, events);
	return r;
}

void tracefile_discard(struct tracefile *tf, const char *cause)
{
	if (!tf->error)
		tf->error = -ECANCELED;
	tf->cause = cause;
}

int tracefile_end(struct tracefile *tf, const char *end, size_t len)
{
	char text[TRACEFILE_END_MAX];
	struct encoder *enc;
	const uint8_t *p;
	int error = tf->error, r = 0, n;
	size_t i;

	if (!error)
		return tracefile_write(tf, LP_CHUNK_END, end, len, 0);
	if (tf->release_reserve) {
		tf->release_reserve(tf->reserve_ctx);
		tf->release_reserve = NULL;
	}
	enc = malloc(sizeof(*enc));
	if (!enc)
		return -ENOMEM;
	/* the end goes in after the last whole chunk */
	tf->error = 0;
	for (i = 0; i < tf->nlost && !r; i++) {
		const struct tracefile_lost *l = &tf->lost[i];

		encoder_init(enc, l->image, l->pid, l->tid);
		encoder_lost(enc, l->ns, l->events);
		n = (int)encoder_take(enc, &p);
		r = tracefile_write(tf, LP_CHUNK_EVENTS, p, (size_t)n, 0);
	}
	free(enc);
	if (!r) {
		if (len > sizeof(text) / 2)
			len = sizeof(text) / 2;
		memcpy(text, end, len);
		n = snprintf(text + len, sizeof(text) - len,
		             "unwritten=%llu\nlost_cause=%s: %llu events were not written\n",
		             (unsigned long long)tf->unwritten, tf->cause ? tf->cause : strerror(-error),
		             (unsigned long long)tf->unwritten);
		r = tracefile_write(tf, LP_CHUNK_END, text, len + (size_t)n, 0);
	}
	if (!r)
		tf->error = error;
	return r < 0 ? r : 0;
}

int tracefile_close(struct tracefile *tf)
{
	int r = 0;

	if (tf->fd >= 0 && close(tf->fd))
		r = -errno;
	tf->fd = -1;
	free(tf->lost);
	tf->lost = NULL;
	return r;
}
