/* Writing a live stream as a trace directory, and keeping the stream in
 * memory until a save starts (see live/save.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "host/lib/live/save.h"
#include "host/lib/trace/dir.h"
#include "layerprof/format.h"

#define KEEP_FIRST_CAP (1u << 20)

void livesave_init(struct livesave *sv)
{
	memset(sv, 0, sizeof(*sv));
	sv->fd = -1;
}

void livesave_release(struct livesave *sv)
{
	if (sv->fd >= 0)
		close(sv->fd);
	free(sv->kept);
	free(sv->hold_buf);
	sv->fd = -1;
	sv->kept = NULL;
	sv->kept_len = sv->kept_cap = 0;
	sv->hold_buf = NULL;
	sv->hold_len = sv->hold_cap = 0;
	sv->held = false;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int save_write(struct livesave *sv, const void *buf, size_t len)
{
	int r;

	if (sv->fd < 0)
		return sv->failed ? -EIO : 0;
	r = write_all(sv->fd, buf, len);
	if (r) {
		snprintf(sv->error, sizeof(sv->error), "cannot write trace '%s': %s", sv->dir, strerror(-r));
		close(sv->fd);
		sv->fd = -1;
		sv->failed = true;
		return r;
	}
	sv->bytes += len;
	return 0;
}

int livesave_open(struct livesave *sv, const char *dir)
{
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	struct stat st;
	int r, dfd;

	if (strlen(dir) >= sizeof(sv->dir)) {
		snprintf(sv->error, sizeof(sv->error), "path too long (%zu bytes, at most %zu)", strlen(dir),
		         sizeof(sv->dir) - 1);
		return -ENAMETOOLONG;
	}
	dfd = tracedir_create(dir, sv->error, sizeof(sv->error));
	if (dfd < 0)
		return dfd;
	sv->fd = openat(dfd, LP_TRACE_DATA, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (sv->fd < 0) {
		r = -errno;
		snprintf(sv->error, sizeof(sv->error), "cannot create trace '%s/%s': %s", dir, LP_TRACE_DATA,
		         strerror(-r));
		close(dfd);
		return r;
	}
	r = fstat(dfd, &st) ? -errno : 0;
	close(dfd);
	if (r) {
		snprintf(sv->error, sizeof(sv->error), "cannot read trace '%s': %s", dir, strerror(-r));
		return r;
	}
	sv->dir_dev = st.st_dev;
	sv->dir_ino = st.st_ino;
	strcpy(sv->dir, dir);
	sv->bytes = 0;
	sv->failed = false;
	trace_header_put(hdr);
	r = save_write(sv, hdr, sizeof(hdr));
	if (!r && sv->kept_len)
		r = save_write(sv, sv->kept, sv->kept_len);
	free(sv->kept);
	sv->kept = NULL;
	sv->kept_len = sv->kept_cap = 0;
	return r;
}

/* Keeps a received chunk in memory for a later save, within
 * LIVESAVE_KEEP_MAX; past it, nothing is kept. */
static void keep(struct livesave *sv, const void *buf, size_t len)
{
	if (sv->kept_dropped)
		return;
	if (sv->kept_len + len > sv->kept_cap) {
		size_t cap = sv->kept_cap ? sv->kept_cap : KEEP_FIRST_CAP;
		uint8_t *p;

		while (cap < sv->kept_len + len)
			cap *= 2;
		if (cap > LIVESAVE_KEEP_MAX || !(p = realloc(sv->kept, cap))) {
			free(sv->kept);
			sv->kept = NULL;
			sv->kept_len = sv->kept_cap = 0;
			sv->kept_dropped = true;
			return;
		}
		sv->kept = p;
		sv->kept_cap = cap;
	}
	memcpy(sv->kept + sv->kept_len, buf, len);
	sv->kept_len += len;
}

/* Writes what a hold kept, then forgets it. */
static int write_held(struct livesave *sv)
{
	int r = sv->hold_len ? save_write(sv, sv->hold_buf, sv->hold_len) : 0;

	free(sv->hold_buf);
	sv->hold_buf = NULL;
	sv->hold_len = sv->hold_cap = 0;
	return r;
}

/* Keeps a chunk while held; 1 when kept, else the hold is broken (the
 * file gets what was held, then the chunk is written through). */
static int hold_chunk(struct livesave *sv, const void *buf, size_t len)
{
	if (sv->hold_len + len > sv->hold_cap) {
		size_t cap = sv->hold_cap ? sv->hold_cap : KEEP_FIRST_CAP;
		uint8_t *p = NULL;

		while (cap < sv->hold_len + len)
			cap *= 2;
		if (cap <= LIVESAVE_HOLD_MAX)
			p = realloc(sv->hold_buf, cap);
		if (!p) {
			sv->hold_broken = true;
			return write_held(sv);
		}
		sv->hold_buf = p;
		sv->hold_cap = cap;
	}
	memcpy(sv->hold_buf + sv->hold_len, buf, len);
	sv->hold_len += len;
	return 1;
}

void livesave_hold(struct livesave *sv)
{
	sv->held = true;
	sv->hold_broken = false;
}

bool livesave_resume(struct livesave *sv)
{
	bool whole = !sv->hold_broken;

	sv->held = false;
	sv->hold_broken = false;
	write_held(sv);
	return whole;
}

int livesave_chunk(struct livesave *sv, const void *chunk, size_t len)
{
	off_t at = -1;
	int r = 0;

	if (sv->fd >= 0 && sv->held && !sv->hold_broken)
		r = hold_chunk(sv, chunk, len);
	if (r == 1) {
		r = 0; /* held: not in the file yet, so told without an offset */
	} else if (r == 0 && sv->fd >= 0) {
		at = (off_t)sv->bytes;
		r = save_write(sv, chunk, len);
		if (r)
			at = -1;
	} else if (r == 0 && !sv->failed) {
		keep(sv, chunk, len);
	}
	if (sv->on_chunk)
		sv->on_chunk(sv->on_chunk_ctx, sv, chunk, len, at);
	return r;
}

int livesave_close(struct livesave *sv, bool add_end, uint64_t events)
{
	char end[128];
	int n;

	if (sv->fd < 0)
		return sv->failed ? -EIO : 0;
	if (sv->held)
		sv->hold_broken = true; /* the reader's file changes under it */
	if (write_held(sv))
		return -EIO;
	if (add_end) {
		uint8_t hdr[LP_CHUNK_HEADER_SIZE];

		n = snprintf(end, sizeof(end), "closed_by=host\nevents=%" PRIu64 "\n", events);
		chunk_header_put(hdr, LP_CHUNK_END, end, (uint32_t)n);
		if (save_write(sv, hdr, sizeof(hdr)) || save_write(sv, end, (size_t)n))
			return -EIO;
	}
	if (fsync(sv->fd) || close(sv->fd)) {
		snprintf(sv->error, sizeof(sv->error), "cannot write trace '%s': %s", sv->dir, strerror(errno));
		sv->fd = -1;
		sv->failed = true;
		return -EIO;
	}
	sv->fd = -1;
	return 0;
}

void livesave_discard(struct livesave *sv)
{
	struct stat st;
	int dfd;

	if (sv->fd < 0)
		return;
	close(sv->fd);
	sv->fd = -1;
	/* through the directory we made, when the name still is it */
	dfd = open(sv->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0) {
		if (fstat(dfd, &st) == 0 && st.st_dev == sv->dir_dev && st.st_ino == sv->dir_ino)
			unlinkat(dfd, LP_TRACE_DATA, 0);
		close(dfd);
	}
	rmdir(sv->dir);
	sv->dir[0] = '\0';
}
