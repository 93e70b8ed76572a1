/* Unit test of the walk's consumer list and chunk hooks: a synthetic trace
 * of two threads in five chunks, read with two consumers that log every
 * callback; both see the same events in the same order, each event to the
 * first and then the second before the next event; chunk_begin and
 * chunk_end bracket each chunk's events at the chunk's file offset; a
 * consumer that stops the pass from either hook ends it at once with its
 * value, and the walk runs again afterwards; walk_feed (a live stream) and
 * walk_run_by_time keep the same order of calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/encoder.h"
#include "host/lib/trace/walk.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

#define FMAIN 0x401000u
#define FA 0x402000u
#define FB 0x403000u
#define NCHUNKS 5u /* META, three EVENTS, END */

static char dir[256];
static off_t offsets[NCHUNKS];
/* the chunks as written, for walk_feed */
static uint8_t types[NCHUNKS];
static uint8_t *payloads[NCHUNKS];
static size_t lens[NCHUNKS];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void put_chunk(int fd, unsigned i, uint8_t type, const void *p, size_t n)
{
	offsets[i] = lseek(fd, 0, SEEK_CUR);
	types[i] = type;
	lens[i] = n;
	payloads[i] = malloc(n ? n : 1);
	if (offsets[i] < 0 || !payloads[i] || chunk_write_fd(fd, type, p, (uint32_t)n))
		die("chunk_write_fd");
	memcpy(payloads[i], p, n);
}

static void put_events(int fd, unsigned i, struct encoder *e)
{
	const uint8_t *p;
	size_t n = encoder_take(e, &p);

	put_chunk(fd, i, LP_CHUNK_EVENTS, p, n);
}

/* Thread 10: main { a { b } } in chunk 1, main's exit in chunk 3; thread
 * 11: b, 3 events lost, a left open (the walk ends it) in chunk 2. */
static void write_trace(void)
{
	static const char meta[] = "layerprof=test\ncommand=synthetic\n";
	static const char end[] = "events=1\n";
	struct encoder *e = malloc(sizeof(*e));
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0 || !e)
		die("open");
	trace_header_put(hdr);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		die("write");
	put_chunk(fd, 0, LP_CHUNK_META, meta, sizeof(meta) - 1);
	encoder_init(e, 1, 10, 10);
	encoder_entry(e, 1000, FMAIN);
	encoder_entry(e, 1100, FA);
	encoder_entry(e, 1200, FB);
	encoder_exit(e, 1300, FB);
	encoder_exit(e, 1400, FA);
	put_events(fd, 1, e);
	encoder_init(e, 1, 10, 11);
	encoder_entry(e, 1500, FB);
	encoder_exit(e, 1600, FB);
	encoder_lost(e, 1650, 3);
	encoder_entry(e, 1700, FA);
	put_events(fd, 2, e);
	encoder_init(e, 1, 10, 10);
	encoder_exit(e, 1800, FMAIN);
	put_events(fd, 3, e);
	put_chunk(fd, 4, LP_CHUNK_END, end, sizeof(end) - 1);
	close(fd);
	free(e);
}

/* ------------------------------------------------------------ the consumers */

struct logger {
	char id;
	char *log; /* shared by both consumers */
	size_t len, cap;
	bool in_chunk, bracket_ok;
	int stop;            /* returned ... */
	int stop_in_begin;   /* ... from chunk_begin (1) or chunk_end (0) */
	uint32_t stop_chunk; /* of this chunk (by count from 1); 0: never */
	uint32_t chunks;
	uint32_t nchunks; /* the pass's: events after the last are walk_end's */
};

static char shared[65536];
static size_t shared_len;

static void say(struct logger *l, bool event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct logger *l, bool event, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* the walk's end closes what is open after the last chunk */
	if (event && !l->in_chunk && l->chunks < l->nchunks)
		l->bracket_ok = false;
	if (shared_len + 256 > sizeof(shared)) {
		l->bracket_ok = false; /* more than this test writes: fails */
		return;
	}
	n = snprintf(shared + shared_len, sizeof(shared) - shared_len, "%c:", l->id);
	shared_len += (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(shared + shared_len, sizeof(shared) - shared_len, fmt, ap);
	va_end(ap);
	shared_len += (size_t)n;
	if (shared_len + 1 < sizeof(shared))
		shared[shared_len++] = '\n';
	shared[shared_len] = '\0';
}

static void log_begin(void *ctx, struct walk_stream *s)
{
	say(ctx, true, "begin %u", s->tid);
}

static void log_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	say(ctx, true, "entry %u %llu %llx", s->tid, (unsigned long long)ns, (unsigned long long)addr);
}

static void log_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                     unsigned flags)
{
	say(ctx, true, "exit %u %llu %llx %llu", s->tid, (unsigned long long)ns, (unsigned long long)addr,
	    (unsigned long long)entry_ns);
}

static void log_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	say(ctx, true, "lost %u %llu %llu", s->tid, (unsigned long long)ns, (unsigned long long)count);
}

static void log_watermark(void *ctx, uint64_t ns)
{
	struct logger *l = ctx;

	/* before a chunk, never inside one */
	say(l, false, "watermark %llu", (unsigned long long)ns);
	if (l->in_chunk)
		l->bracket_ok = false;
}

static void log_end(void *ctx, struct walk_stream *s)
{
	struct logger *l = ctx;

	say(l, false, "end %u", s->tid);
	if (l->in_chunk)
		l->bracket_ok = false;
}

static const char *type_name(uint8_t type)
{
	switch (type) {
	case LP_CHUNK_META:
		return "meta";
	case LP_CHUNK_EVENTS:
		return "events";
	case LP_CHUNK_END:
		return "end";
	default:
		return "other";
	}
}

static int log_chunk_begin(void *ctx, const struct walk_chunk *c)
{
	struct logger *l = ctx;

	if (l->in_chunk)
		l->bracket_ok = false;
	l->chunks++;
	say(l, false, "chunk %s %lld %zu", type_name(c->type), (long long)c->offset, c->len);
	if (l->stop_chunk == l->chunks && l->stop_in_begin)
		return l->stop;
	l->in_chunk = true;
	return 0;
}

static int log_chunk_end(void *ctx, const struct walk_chunk *c)
{
	struct logger *l = ctx;

	if (!l->in_chunk)
		l->bracket_ok = false;
	l->in_chunk = false;
	say(l, false, "chunk-end %s %lld", type_name(c->type), (long long)c->offset);
	if (l->stop_chunk == l->chunks && !l->stop_in_begin)
		return l->stop;
	return 0;
}

static void consumer_init(struct logger *l, struct walk_ops *ops, char id)
{
	memset(l, 0, sizeof(*l));
	l->id = id;
	l->bracket_ok = true;
	l->nchunks = NCHUNKS;
	*ops = (struct walk_ops){ .ctx = l,
		                  .begin = log_begin,
		                  .entry = log_entry,
		                  .exit = log_exit,
		                  .lost = log_lost,
		                  .watermark = log_watermark,
		                  .end = log_end,
		                  .chunk_begin = log_chunk_begin,
		                  .chunk_end = log_chunk_end };
}

/* One consumer's lines, without the "X:" prefixes. */
static void lines_of(char id, char *out, size_t size)
{
	const char *p = shared;
	size_t n = 0;

	out[0] = '\0';
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = (size_t)(nl - p);

		if (p[0] == id && n + len < size) {
			memcpy(out + n, p + 2, len - 1);
			n += len - 1;
			out[n] = '\0';
		}
		p = nl + 1;
	}
}

/* Each line of A followed by the same line of B. */
static bool interleaved(void)
{
	const char *p = shared;

	while (*p) {
		const char *a = p, *b = strchr(a, '\n') + 1, *next;
		size_t alen = (size_t)(b - a);

		if (!*b || a[0] != 'A' || b[0] != 'B')
			return false;
		next = strchr(b, '\n') + 1;
		if ((size_t)(next - b) != alen || memcmp(a + 1, b + 1, alen - 1))
			return false;
		p = next;
	}
	return true;
}

/* What one consumer sees of the trace, in file order. */
static void expected(char *buf, size_t size, bool by_file)
{
	long long o[NCHUNKS];
	unsigned i;

	for (i = 0; i < NCHUNKS; i++)
		o[i] = by_file ? (long long)offsets[i] : -1;
	snprintf(buf, size,
	         "chunk meta %lld %zu\nchunk-end meta %lld\n"
	         "chunk events %lld %zu\nbegin 10\nentry 10 1000 401000\nentry 10 1100 402000\nentry 10 1200 403000\n"
	         "exit 10 1300 403000 1200\nexit 10 1400 402000 1100\nchunk-end events %lld\n"
	         "chunk events %lld %zu\nbegin 11\nentry 11 1500 403000\nexit 11 1600 403000 1500\nlost 11 1650 3\n"
	         "entry 11 1700 402000\nchunk-end events %lld\n"
	         "chunk events %lld %zu\nexit 10 1800 401000 1000\nchunk-end events %lld\n"
	         "chunk end %lld %zu\nchunk-end end %lld\n"
	         "end 10\nexit 11 1700 402000 1700\nend 11\n",
	         o[0], lens[0], o[0], o[1], lens[1], o[1], o[2], lens[2], o[2], o[3], lens[3], o[3], o[4], lens[4],
	         o[4]);
}

/* ------------------------------------------------------------ the tests */

/* A and B in a list, B stopping the pass (stop != 0) at its chunk
 * `stop_chunk` from chunk_begin or chunk_end; returns walk_run's value. */
static int run_pair(struct walk *w, int stop, uint32_t stop_chunk, bool in_begin, struct logger *a, struct logger *b)
{
	struct walk_ops oa, ob;

	consumer_init(a, &oa, 'A');
	consumer_init(b, &ob, 'B');
	walk_chain(&oa, &ob);
	b->stop = stop;
	b->stop_chunk = stop_chunk;
	b->stop_in_begin = in_begin;
	shared_len = 0;
	shared[0] = '\0';
	return walk_run(w, &oa);
}

static void test_two_consumers(struct walk *w)
{
	struct walk_ops x = { 0 }, y = { 0 }, z = { 0 };
	struct logger a, b;
	char got[8192], want[8192];

	/* walk_chain appends a list at the end of a list */
	walk_chain(&x, &y);
	walk_chain(&x, &z);
	CHECK(x.next == &y && y.next == &z && !z.next);

	CHECK_EQ_U64(run_pair(w, 0, 0, false, &a, &b), 0);
	CHECK(interleaved());
	expected(want, sizeof(want), true);
	lines_of('A', got, sizeof(got));
	CHECK_STR(got, want);
	lines_of('B', got, sizeof(got));
	CHECK_STR(got, want);
	CHECK(a.bracket_ok && b.bracket_ok);
	CHECK_EQ_U64(a.chunks, NCHUNKS);
	CHECK_EQ_U64(w->r.state, READER_OK);
	CHECK(w->r.seen_end);
}

/* The second consumer stops at the second EVENTS chunk (the third chunk):
 * from chunk_end, after the first consumer's chunk_end of it; from
 * chunk_begin, after the first's chunk_begin, with no event or chunk_end
 * of it.  Nothing follows either (no end); then a whole pass again. */
static void test_stop(struct walk *w)
{
	char want[8192], got[8192], *cut;
	struct logger a, b;

	expected(want, sizeof(want), true);
	CHECK_EQ_U64(run_pair(w, -ECANCELED, 3, false, &a, &b), -ECANCELED);
	CHECK(interleaved());
	lines_of('A', got, sizeof(got));
	cut = strstr(want, "chunk-end events 108\n");
	if (CHECK(cut != NULL)) {
		char c = cut[strlen("chunk-end events 108\n")];

		cut[strlen("chunk-end events 108\n")] = '\0';
		CHECK_STR(got, want);
		cut[strlen("chunk-end events 108\n")] = c;
	}
	CHECK(!strstr(shared, "end 1"));
	CHECK_EQ_U64(w->r.state, READER_OK);

	CHECK_EQ_U64(run_pair(w, -EINTR, 3, true, &a, &b), -EINTR);
	CHECK(strstr(shared, "A:chunk events 108 ") != NULL);
	CHECK(strstr(shared, "B:chunk events 108 ") != NULL);
	CHECK(!strstr(shared, "begin 11"));
	CHECK(!strstr(shared, "chunk-end events 108"));
	CHECK(!strstr(shared, "end 1"));
	/* the last line is B's chunk_begin that stopped */
	CHECK(shared_len > 20 &&
	      !strcmp(shared + shared_len - strlen("B:chunk events 108 22\n"), "B:chunk events 108 22\n"));

	CHECK_EQ_U64(run_pair(w, 0, 0, false, &a, &b), 0);
	lines_of('B', got, sizeof(got));
	CHECK_STR(got, want);
}

/* A list longer than WALK_CONSUMERS_MAX is refused before any callback;
 * one of WALK_CONSUMERS_MAX is fed whole, the last one too. */
static void test_too_many(struct walk *w)
{
	struct walk_ops ops[WALK_CONSUMERS_MAX + 1];
	struct logger l[WALK_CONSUMERS_MAX + 1];
	uint32_t i;

	for (i = 0; i <= WALK_CONSUMERS_MAX; i++) {
		consumer_init(&l[i], &ops[i], 'A');
		if (i)
			ops[i - 1].next = &ops[i];
	}
	shared_len = 0;
	shared[0] = '\0';
	CHECK_EQ_U64(walk_run(w, &ops[0]), -E2BIG);
	CHECK_EQ_U64(shared_len, 0);
	ops[WALK_CONSUMERS_MAX - 1].next = NULL;
	CHECK_EQ_U64(walk_run(w, &ops[0]), 0);
	CHECK_EQ_U64(l[WALK_CONSUMERS_MAX - 1].chunks, NCHUNKS);
	CHECK(strstr(shared, "entry 11 1700 402000") != NULL);
	CHECK_EQ_U64(l[WALK_CONSUMERS_MAX].chunks, 0);
}

/* A live stream: the same calls, offsets unknown (-1); walk_feed returns
 * the value a consumer stopped with. */
static void test_feed(void)
{
	struct walk_ops oa, ob;
	struct logger a, b;
	char want[8192], got[8192];
	struct walk w;
	char err[256];
	unsigned i;

	if (walk_open(&w, NULL, NULL, err, sizeof(err)))
		die(err);
	consumer_init(&a, &oa, 'A');
	consumer_init(&b, &ob, 'B');
	oa.next = &ob;
	shared_len = 0;
	walk_begin(&w, &oa);
	for (i = 0; i < NCHUNKS; i++)
		CHECK_EQ_U64(walk_feed(&w, types[i], payloads[i], lens[i]), 0);
	walk_end(&w);
	CHECK(interleaved());
	expected(want, sizeof(want), false);
	lines_of('A', got, sizeof(got));
	CHECK_STR(got, want);
	CHECK(a.bracket_ok && b.bracket_ok);

	consumer_init(&a, &oa, 'A');
	consumer_init(&b, &ob, 'B');
	oa.next = &ob;
	b.stop = -EPIPE;
	b.stop_chunk = 2;
	walk_begin(&w, &oa);
	CHECK_EQ_U64(walk_feed(&w, types[0], payloads[0], lens[0]), 0);
	CHECK_EQ_U64(walk_feed(&w, types[1], payloads[1], lens[1]), -EPIPE);
	CHECK_EQ_U64(a.chunks, 2);
	walk_release(&w);
}

/* By time: thread 11's chunk (1500) before thread 10's second (1800); a
 * watermark before each chunk, none inside one. */
static void test_by_time(struct walk *w)
{
	struct walk_ops oa, ob;
	struct logger a, b;
	char got[8192];

	consumer_init(&a, &oa, 'A');
	consumer_init(&b, &ob, 'B');
	oa.next = &ob;
	a.nchunks = b.nchunks = 4; /* META and EVENTS */
	shared_len = 0;
	CHECK_EQ_U64(walk_run_by_time(w, &oa), 0);
	CHECK(interleaved());
	CHECK(a.bracket_ok && b.bracket_ok);
	CHECK_EQ_U64(a.chunks, 4); /* META and EVENTS */
	lines_of('A', got, sizeof(got));
	CHECK(strstr(got, "watermark 0\nchunk meta ") == got);
	CHECK(strstr(got, "watermark 1000\nchunk events 65 ") != NULL);
	CHECK(strstr(got, "watermark 1500\nchunk events 108 ") != NULL);
	CHECK(strstr(got, "watermark 1800\nchunk events 146 ") != NULL);
	CHECK(strstr(got, "chunk events 108 ") < strstr(got, "chunk events 146 "));
}

int main(void)
{
	struct walk w;
	char err[512], path[512];
	unsigned i;

	snprintf(dir, sizeof(dir), "/tmp/lp-test-walk-%ld", (long)getpid());
	if (mkdir(dir, 0700))
		die("mkdir");
	write_trace();
	if (walk_open(&w, dir, NULL, err, sizeof(err)))
		die(err);
	test_two_consumers(&w);
	test_stop(&w);
	test_by_time(&w);
	test_too_many(&w);
	test_feed();
	walk_release(&w);
	snprintf(path, sizeof(path), "%s/data", dir);
	unlink(path);
	rmdir(dir);
	for (i = 0; i < NCHUNKS; i++)
		free(payloads[i]);
	return check_summary();
}
