/* Unit test of the trace directory reader: which files it refuses, and
 * where it stops on damage.  Each case writes <tmp>/<case>/data. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/varint.h"
#include "host/lib/trace/reader.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

#define ROOT_LEN 256
#define PATH_LEN 1024

static char root[ROOT_LEN];

/* <root>/<name>, in a static buffer that the next call reuses. */
static const char *path_of(const char *name, const char *file)
{
	static char buf[2][PATH_LEN];
	static int which;
	char *p = buf[which ^= 1];

	snprintf(p, PATH_LEN, "%s/%s%s%s", root, name, file ? "/" : "", file ? file : "");
	return p;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* Makes <root>/<name>/ and opens a new data file in it. */
static int new_trace(const char *name)
{
	int fd;

	if (mkdir(path_of(name, NULL), 0700) && errno != EEXIST)
		die("mkdir");
	fd = open(path_of(name, LP_TRACE_DATA), O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("open");
	return fd;
}

static void put(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("write");
}

static void put_header(int fd)
{
	uint8_t hdr[LP_FILE_HEADER_SIZE];

	trace_header_put(hdr);
	put(fd, hdr, sizeof(hdr));
}

static void put_chunk(int fd, uint8_t type, const void *payload, uint32_t len)
{
	if (chunk_write_fd(fd, type, payload, len))
		die("chunk_write_fd");
}

/* Three chunks of known sizes: META, EVENTS-sized filler, CLOCK. */
static const char meta[] = "pid=42\nclock=tsc\n";
static uint8_t body[5000];
static const uint8_t clock_payload[] = { 1, 0x80, 0x01, 0x05 };

static off_t put_three(int fd)
{
	put_header(fd);
	put_chunk(fd, LP_CHUNK_META, meta, sizeof(meta) - 1);
	put_chunk(fd, LP_CHUNK_EVENTS, body, sizeof(body));
	put_chunk(fd, LP_CHUNK_CLOCK, clock_payload, sizeof(clock_payload));
	return LP_FILE_HEADER_SIZE + 3 * LP_CHUNK_HEADER_SIZE +
	       (off_t)(sizeof(meta) - 1 + sizeof(body) + sizeof(clock_payload));
}

/* Opens a case; returns reader_open's result (the reader is released on
 * failure). */
static int open_case(struct reader *r, const char *name, char *err, size_t errlen)
{
	err[0] = 0;
	return reader_open(r, path_of(name, NULL), err, errlen);
}

static void test_refused(void)
{
	struct reader r;
	char err[512];
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	int fd;

	CHECK_EQ_U64(open_case(&r, "missing", err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "missing") != NULL);

	/* a directory without a data file */
	if (mkdir(path_of("nodata", NULL), 0700))
		die("mkdir");
	CHECK_EQ_U64(open_case(&r, "nodata", err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "data") != NULL);

	/* a regular file where the directory should be */
	fd = open(path_of("plainfile", NULL), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("open");
	put_header(fd);
	close(fd);
	CHECK_EQ_U64(open_case(&r, "plainfile", err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "not a trace directory") != NULL);

	close(new_trace("empty"));
	CHECK_EQ_U64(open_case(&r, "empty", err, sizeof(err)), -ENODATA);
	CHECK(strstr(err, "empty") != NULL);

	fd = new_trace("short");
	trace_header_put(hdr);
	put(fd, hdr, LP_FILE_HEADER_SIZE - 1);
	close(fd);
	CHECK_EQ_U64(open_case(&r, "short", err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "truncated") != NULL);

	fd = new_trace("badmagic");
	trace_header_put(hdr);
	hdr[0] = 'X';
	put(fd, hdr, sizeof(hdr));
	close(fd);
	CHECK_EQ_U64(open_case(&r, "badmagic", err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "not a layerprof trace") != NULL);

	fd = new_trace("v2");
	trace_header_put(hdr);
	le16_put(hdr + 8, 2);
	le16_put(hdr + 10, 1);
	put(fd, hdr, sizeof(hdr));
	close(fd);
	CHECK_EQ_U64(open_case(&r, "v2", err, sizeof(err)), -EPROTONOSUPPORT);
	CHECK(strstr(err, "2.1") != NULL);
}

static void test_whole(void)
{
	struct reader r;
	struct chunk_info ci;
	const uint8_t *payload;
	char err[512];
	off_t second;
	size_t i;
	int fd;

	for (i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 7 + 3);
	fd = new_trace("whole");
	put_three(fd);
	close(fd);
	if (!CHECK_EQ_U64(open_case(&r, "whole", err, sizeof(err)), 0)) {
		printf("  %s\n", err);
		return;
	}
	CHECK_EQ_U64(r.major, LP_TRACE_MAJOR);
	CHECK_EQ_U64(r.offset, LP_FILE_HEADER_SIZE);
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 1);
	CHECK_EQ_U64(ci.type, LP_CHUNK_META);
	CHECK_EQ_U64(ci.len, sizeof(meta) - 1);
	CHECK(!memcmp(payload, meta, ci.len));
	second = r.offset;
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 1);
	CHECK_EQ_U64(ci.type, LP_CHUNK_EVENTS);
	CHECK_EQ_U64(ci.len, sizeof(body));
	CHECK(!memcmp(payload, body, sizeof(body)));
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 1);
	CHECK_EQ_U64(ci.type, LP_CHUNK_CLOCK);
	CHECK(!memcmp(payload, clock_payload, sizeof(clock_payload)));
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 0);
	CHECK_EQ_U64(r.state, READER_OK);
	CHECK_EQ_U64(r.chunks, 3);
	CHECK(!r.seen_end);
	/* and back to a chunk seen before */
	CHECK_EQ_U64(reader_seek(&r, second), 0);
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 1);
	CHECK_EQ_U64(ci.type, LP_CHUNK_EVENTS);
	CHECK(!memcmp(payload, body, sizeof(body)));
	reader_release(&r);
	reader_release(&r); /* twice is harmless */

	/* a header alone is an empty, undamaged trace */
	fd = new_trace("headeronly");
	put_header(fd);
	close(fd);
	CHECK_EQ_U64(open_case(&r, "headeronly", err, sizeof(err)), 0);
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 0);
	CHECK_EQ_U64(r.state, READER_OK);
	reader_release(&r);

	/* the END chunk marks a recording that closed; empty chunks are fine */
	fd = new_trace("ended");
	put_header(fd);
	put_chunk(fd, LP_CHUNK_META, meta, sizeof(meta) - 1);
	put_chunk(fd, LP_CHUNK_EVENTS, NULL, 0);
	put_chunk(fd, LP_CHUNK_END, "status=0\n", 9);
	close(fd);
	CHECK_EQ_U64(open_case(&r, "ended", err, sizeof(err)), 0);
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 1);
	CHECK(!r.seen_end);
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 1);
	CHECK_EQ_U64(ci.len, 0);
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 1);
	CHECK_EQ_U64(ci.type, LP_CHUNK_END);
	CHECK(r.seen_end);
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 0);
	CHECK_EQ_U64(r.state, READER_OK);
	reader_release(&r);
}

/* Writes the three chunks, cuts the file at `cut` and flips a bit of the
 * byte at `flip` (either may be -1: not done), then checks that the reader
 * keeps `kept` chunks and reports `what`. */
static void damaged_case(const char *name, off_t cut, off_t flip, unsigned kept, const char *what)
{
	struct reader r;
	struct chunk_info ci;
	const uint8_t *payload;
	char err[512], at[64];
	off_t offset = 0;
	unsigned n = 0;
	int fd = new_trace(name);

	put_three(fd);
	if (cut >= 0 && ftruncate(fd, cut))
		die("ftruncate");
	if (flip >= 0) {
		uint8_t b;

		if (pread(fd, &b, 1, flip) != 1)
			die("pread");
		b ^= 0x40;
		if (pwrite(fd, &b, 1, flip) != 1)
			die("pwrite");
	}
	close(fd);
	if (!CHECK_EQ_U64(open_case(&r, name, err, sizeof(err)), 0)) {
		printf("  %s: %s\n", name, err);
		return;
	}
	while (n <= 3) {
		offset = r.offset;
		if (reader_next(&r, &ci, &payload) != 1)
			break;
		n++;
	}
	if (!CHECK_EQ_U64(n, kept))
		printf("  case %s\n", name);
	CHECK_EQ_U64(r.chunks, kept);
	CHECK_EQ_U64(r.state, READER_DAMAGED);
	if (!CHECK(strstr(r.damage, what) != NULL))
		printf("  case %s: damage \"%s\", want \"%s\"\n", name, r.damage, what);
	/* the damage names the offset of the chunk that failed */
	snprintf(at, sizeof(at), "at byte %lld", (long long)offset);
	if (!CHECK(strstr(r.damage, at) != NULL))
		printf("  case %s: damage \"%s\", want \"%s\"\n", name, r.damage, at);
	/* and reading stays stopped */
	CHECK_EQ_U64(reader_next(&r, &ci, &payload), 0);
	reader_release(&r);
}

static void test_damaged(void)
{
	const off_t first = LP_FILE_HEADER_SIZE;
	const off_t second = first + LP_CHUNK_HEADER_SIZE + (off_t)(sizeof(meta) - 1);
	const off_t third = second + LP_CHUNK_HEADER_SIZE + (off_t)sizeof(body);

	/* cut inside the third chunk's payload */
	damaged_case("cut-payload", third + LP_CHUNK_HEADER_SIZE + 2, -1, 2, "truncated");
	/* cut inside the third chunk's header */
	damaged_case("cut-header", third + 5, -1, 2, "truncated");
	/* cut inside the second chunk's payload */
	damaged_case("cut-second", second + LP_CHUNK_HEADER_SIZE + 100, -1, 1, "truncated");
	/* a payload byte changed in the second chunk */
	damaged_case("flip-payload", -1, second + LP_CHUNK_HEADER_SIZE + 1234, 1, "checksum mismatch");
	/* a changed checksum in the first chunk */
	damaged_case("flip-crc", -1, first + 13, 0, "checksum mismatch");
	/* a changed magic in the third chunk */
	damaged_case("flip-magic", -1, third + 1, 2, "corrupt chunk header");
	/* a length past the maximum in the second chunk */
	damaged_case("flip-length", -1, second + 10, 1, "corrupt chunk header");
}

/* Removes what the cases made; a failure here only leaves files behind. */
static void cleanup(void)
{
	static const char *names[] = { "nodata",     "empty",        "short",    "badmagic",    "v2",
		                       "whole",      "headeronly",   "ended",    "cut-payload", "cut-header",
		                       "cut-second", "flip-payload", "flip-crc", "flip-magic",  "flip-length" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		unlink(path_of(names[i], LP_TRACE_DATA));
		rmdir(path_of(names[i], NULL));
	}
	unlink(path_of("plainfile", NULL));
	if (rmdir(root))
		perror(root);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%s/lp-reader-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root))
		die("mkdtemp");
	test_refused();
	test_whole();
	test_damaged();
	cleanup();
	return check_summary();
}
