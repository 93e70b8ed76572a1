/* End-to-end test of the heap reports on synthetic traces: heap events
 * written with encoder_mem/encoder_stack through the trace's chunk writer,
 * then `layerprof report --memory --format json`, `replay`, `snapshot` and
 * `memdiff` run on them, with exact expected values.  The traces map this
 * test's own executable and C library, so that call sites get real names.
 *
 * usage: test_memreport <path of layerprof> */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/encoder.h"
#include "common/memevent.h"
#include "host/lib/util/jsonread.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

#define MS 1000000ull
#define BASE_NS 5000000000ull

static const char *layerprof;
static char root[256];

/* The functions whose call sites the traces name: return addresses are
 * function + 4 (+ 8 for a second site). */
#define BODY __asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop")
__attribute__((noinline, used)) void leaky(void)
{
	BODY;
}
__attribute__((noinline, used)) void tidy(void)
{
	BODY;
}
__attribute__((noinline, used)) void twice(void)
{
	BODY;
}
__attribute__((noinline, used)) void mixer(void)
{
	BODY;
}
__attribute__((noinline, used)) void grower(void)
{
	BODY;
}
__attribute__((noinline, used)) void steady(void)
{
	BODY;
}
__attribute__((noinline, used)) void outer(void)
{
	BODY;
}

static uint64_t at(void (*fn)(void), unsigned off)
{
	return (uint64_t)(uintptr_t)fn + off;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* An address inside the C library's strdup (not a sanitizer's wrapper). */
static uint64_t in_libc_strdup(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = libc ? dlsym(libc, "strdup") : NULL;

	if (!fn) {
		fprintf(stderr, "cannot find strdup in libc.so.6\n");
		exit(2);
	}
	return (uint64_t)(uintptr_t)fn + 8;
}

/* ---- writing traces -------------------------------------------------- */

struct tracefile {
	int fd;
	struct encoder *enc;
};

static void trace_open(struct tracefile *t, const char *name)
{
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	char path[512], meta[256];
	int n;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (mkdir(path, 0700) && errno != EEXIST)
		die("mkdir");
	snprintf(path, sizeof(path), "%s/%s/%s", root, name, LP_TRACE_DATA);
	t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	t->enc = malloc(sizeof(*t->enc));
	if (t->fd < 0 || !t->enc)
		die("open");
	trace_header_put(hdr);
	if (write(t->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		die("write");
	n = snprintf(meta, sizeof(meta),
	             "layerprof=test\nclock=monotonic\nstart_monotonic_ns=%llu\ncommand=synthetic\n",
	             (unsigned long long)BASE_NS);
	if (chunk_write_fd(t->fd, LP_CHUNK_META, meta, (uint32_t)n))
		die("chunk_write_fd");
}

static void stream_begin(struct tracefile *t, uint32_t image, uint32_t pid, uint32_t tid)
{
	encoder_init(t->enc, image, pid, tid);
}

/* Writes the stream's events so far as one chunk. */
static void stream_flush(struct tracefile *t)
{
	const uint8_t *payload;
	size_t len = encoder_take(t->enc, &payload);

	if (len && chunk_write_fd(t->fd, LP_CHUNK_EVENTS, payload, (uint32_t)len))
		die("chunk_write_fd");
}

static void trace_close(struct tracefile *t)
{
	static const char end[] = "events=0\nlost=0\nstreams=0\n";

	if (chunk_write_fd(t->fd, LP_CHUNK_END, end, sizeof(end) - 1))
		die("chunk_write_fd");
	close(t->fd);
	free(t->enc);
}

struct map_ctx {
	struct encoder *e;
	uint64_t ns;
};

/* MAP events of this process's executable segments. */
static int map_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct map_ctx *m = data;
	char exe[512];
	const char *path = info->dlpi_name;
	int i;

	if (!path || !*path) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		if (n <= 0)
			return 0;
		exe[n] = '\0';
		path = exe;
	}
	if (path[0] != '/')
		return 0; /* the vdso */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		encoder_map(m->e, m->ns, info->dlpi_addr, info->dlpi_addr + ph->p_vaddr,
		            info->dlpi_addr + ph->p_vaddr + ph->p_memsz, ph->p_offset, NULL, 0, path, strlen(path));
	}
	return 0;
}

static void put_maps(struct tracefile *t, uint64_t ns)
{
	struct map_ctx m = { t->enc, ns };

	dl_iterate_phdr(map_cb, &m);
}

static void put_stack(struct tracefile *t, uint64_t ns, uint32_t id, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t ips[3] = { a, b, c };

	encoder_stack(t->enc, ns, id, ips, c ? 3 : 2);
}

static void put_mem(struct tracefile *t, uint64_t ns, uint8_t op, uint64_t ptr, uint64_t size, uint64_t old,
                    uint32_t stack)
{
	struct memevent m = { .op = op, .ptr = ptr, .size = size, .old = old, .stack = stack };

	encoder_mem(t->enc, ns, &m);
}

/* ---- running layerprof ----------------------------------------------- */

/* Runs layerprof with args (a shell word list) and returns its standard
 * output (malloc'd), or NULL. */
static char *run(const char *args, int *status)
{
	char cmd[2048], *out = NULL;
	size_t len = 0, cap = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' %s", layerprof, args);
	p = popen(cmd, "r");
	if (!p)
		die("popen");
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 65536;
			out = realloc(out, cap);
			if (!out)
				die("realloc");
		}
		n = fread(out + len, 1, 4096, p);
		if (!n)
			break;
		len += n;
	}
	out[len] = '\0';
	*status = pclose(p);
	return out;
}

static struct json_object *run_json(const char *args)
{
	char err[256];
	int status;
	char *out = run(args, &status);
	struct json_object *j = jsonread_parse(out, strlen(out), err, sizeof(err));

	if (!CHECK(j != NULL))
		printf("  layerprof %s: %s\n%.2000s\n", args, err, out);
	CHECK_EQ_U64(status, 0);
	free(out);
	return j;
}

static struct json_object *find_by(struct json_object *arr, const char *key, const char *value)
{
	struct json_object *c;
	size_t i;

	for (i = 0; (c = jsonread_at(arr, i)) != NULL; i++) {
		const char *s = jsonread_str(jsonread_get(c, key));

		if (s && !strcmp(s, value))
			return c;
	}
	return NULL;
}

static struct json_object *find_kind(struct json_object *arr, const char *kind)
{
	return find_by(arr, "kind", kind);
}

#define CHECK_U(node, key, want) CHECK_EQ_U64(jsonread_u64(jsonread_get((node), (key)), UINT64_MAX), (want))
#define CHECK_S(node, key, want) CHECK_STR(jsonread_str(jsonread_get((node), (key))), (want))

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

/* ---- the basic trace: each kind of finding, two threads, a fold --------- */

static void write_basic(void)
{
	struct tracefile t;
	uint64_t T = BASE_NS;

	trace_open(&t, "basic");
	/* the worker's chunk comes first in the file although its free of
	 * the main thread's block is later: the merge by time puts it right */
	stream_begin(&t, 1, 1000, 1001);
	encoder_task(t.enc, T + 1 * MS, LP_TASK_START, 0, "worker", 6, NULL, 0);
	put_stack(&t, T + 4 * MS, 1, at(tidy, 8), at(outer, 4), 0);
	/* named although the image's mappings come in a later chunk */
	put_mem(&t, T + 4 * MS, LP_MEM_MALLOC, 0x6000, 7, 0, 1);
	put_mem(&t, T + 6 * MS, LP_MEM_FREE, 0x5000, 0, 0, 1);
	encoder_task(t.enc, T + 17 * MS, LP_TASK_END, 0, NULL, 0, NULL, 0);
	stream_flush(&t);

	stream_begin(&t, 1, 1000, 1000);
	encoder_task(t.enc, T, LP_TASK_START, 0, "main", 4, NULL, 0);
	put_maps(&t, T);
	put_stack(&t, T, 1, at(leaky, 4), at(outer, 4), 0);
	/* the innermost frame in the C library: the site is the caller */
	put_stack(&t, T, 2, in_libc_strdup(), at(tidy, 4), at(outer, 4));
	put_stack(&t, T, 3, at(twice, 4), at(outer, 4), 0);
	put_stack(&t, T, 4, at(mixer, 4), at(outer, 4), 0);
	put_stack(&t, T, 5, at(twice, 8), at(outer, 4), 0);
	put_mem(&t, T + 1 * MS, LP_MEM_MALLOC, 0x1000, 48, 0, 1);
	put_mem(&t, T + 2 * MS, LP_MEM_MALLOC, 0x2000, 48, 0, 1);
	put_mem(&t, T + 3 * MS, LP_MEM_MALLOC, 0x3000, 48, 0, 1);
	put_mem(&t, T + 5 * MS, LP_MEM_MALLOC, 0x5000, 100, 0, 2);
	put_mem(&t, T + 7 * MS, LP_MEM_MALLOC, 0x7000, 32, 0, 3);
	put_mem(&t, T + 8 * MS, LP_MEM_FREE, 0x7000, 0, 0, 3);
	put_mem(&t, T + 9 * MS, LP_MEM_FREE, 0x7000, 0, 0, 5);
	put_mem(&t, T + 10 * MS, LP_MEM_NEW, 0x8000, 16, 0, 4);
	put_mem(&t, T + 11 * MS, LP_MEM_FREE, 0x8000, 0, 0, 4);
	put_mem(&t, T + 12 * MS, LP_MEM_MALLOC, 0x9000, 64, 0, 4);
	put_mem(&t, T + 13 * MS, LP_MEM_FREE, 0x9010, 0, 0, 4);
	put_mem(&t, T + 14 * MS, LP_MEM_FREE, 0xdead0, 0, 0, 4);
	put_mem(&t, T + 15 * MS, LP_MEM_MALLOC, 0x9020, 10, 0, 4);
	{
		struct memevent m = {
			.op = LP_MEM_FOLD, .stack = 2, .count = 500, .bytes = 50000, .lifetime_ns = 1000
		};

		encoder_mem(t.enc, T + 16 * MS, &m);
	}
	/* a realloc chain at the leaky site: NULL -> a -> b -> freed by realloc(b, 0) */
	put_mem(&t, T + 16 * MS, LP_MEM_REALLOC, 0xa000, 8, 0, 1);
	put_mem(&t, T + 16 * MS + 1, LP_MEM_REALLOC, 0xb000, 24, 0xa000, 1);
	put_mem(&t, T + 16 * MS + 2, LP_MEM_REALLOC, 0, 0, 0xb000, 1);
	/* a body the reader cannot parse is counted, not fatal */
	{
		uint8_t bad[2] = { 0x80, 0x80 };

		encoder_layer(t.enc, T + 17 * MS, LP_EV_ALLOC, LP_MEM_MALLOC, bad, 2);
	}
	encoder_task(t.enc, T + 20 * MS, LP_TASK_EXIT, 0, NULL, 0, NULL, 0);
	stream_flush(&t);
	trace_close(&t);
}

static void test_basic(void)
{
	char args[1024];
	struct json_object *j;
	struct json_object *sites, *s, *il, *ov, *tot, *p;

	write_basic();
	snprintf(args, sizeof(args), "report --memory --format json '%s/basic'", root);
	j = run_json(args);
	if (!j)
		return;
	CHECK(jsonread_bool(jsonread_get(j, "complete"), false));
	CHECK_U(j, "origin_ns", BASE_NS);
	tot = jsonread_get(j, "totals");
	CHECK_U(tot, "allocs", 1 + 3 + 1 + 500 + 1 + 3 + 2);
	CHECK_U(tot, "frees", 1 + 500 + 1 + 1 + 2);
	CHECK_U(tot, "live_objects", 5);
	CHECK_U(tot, "live_bytes", 161);
	CHECK_U(tot, "peak_bytes", 251);
	CHECK_U(tot, "peak_ns", BASE_NS + 5 * MS);
	CHECK_U(tot, "folded", 500);
	CHECK_U(tot, "folded_bytes", 50000);
	CHECK_U(tot, "unfreed_objects", 5);
	CHECK_U(tot, "unfreed_bytes", 161);
	CHECK_U(tot, "illegal", 4);
	CHECK_U(tot, "never_allocated", 1);
	CHECK_U(tot, "double_free", 1);
	CHECK_U(tot, "interior_pointer", 1);
	CHECK_U(tot, "mismatch", 1);
	CHECK_U(tot, "overlaps", 1);
	CHECK_U(tot, "malformed_events", 1);
	CHECK_U(tot, "late_events", 0);

	sites = jsonread_get(j, "sites");
	CHECK_EQ_U64(jsonread_count(sites), 5);
	/* sorted by live bytes: leaky first */
	s = jsonread_at(sites, 0);
	CHECK_S(s, "function", "leaky");
	CHECK_S(s, "call_site", "leaky+0x4");
	CHECK(ends_with(jsonread_str(jsonread_get(s, "file")), "test_memreport.c"));
	CHECK(jsonread_u64(jsonread_get(s, "line"), 0) > 0);
	CHECK_U(s, "live_objects", 3);
	CHECK_U(s, "live_bytes", 144);
	CHECK_U(s, "peak_bytes", 168); /* 144 and realloc's 24 */
	CHECK_U(s, "allocs", 5);
	CHECK_U(s, "frees", 2);
	CHECK_U(s, "bytes_allocated", 144 + 8 + 24);
	CHECK_U(s, "unfreed_objects", 3);
	CHECK_U(s, "at_peak_bytes", 144);
	CHECK(!jsonread_bool(jsonread_get(s, "growing"), true));
	CHECK_EQ_U64(jsonread_count(jsonread_get(s, "stack")), 2);
	CHECK_S(jsonread_at(jsonread_get(s, "stack"), 1), "function", "outer");

	s = jsonread_at(sites, 1);
	CHECK_S(s, "function", "mixer");
	CHECK_U(s, "live_objects", 1);
	CHECK_U(s, "live_bytes", 10);
	CHECK_U(s, "allocs", 3);
	CHECK_U(s, "frees", 1);

	s = jsonread_at(sites, 2);
	CHECK_S(s, "call_site", "tidy+0x8");
	CHECK_S(s, "function", "tidy");
	CHECK_U(s, "live_bytes", 7);
	CHECK_U(s, "unfreed_objects", 1);

	/* the C library frame is skipped; the worker's release is its own site */
	s = find_by(sites, "call_site", "tidy+0x4");
	if (CHECK(s)) {
		CHECK_S(s, "function", "tidy");
		CHECK_U(s, "allocs", 501);
		CHECK_U(s, "frees", 501);
		CHECK_U(s, "folded", 500);
		CHECK_U(s, "folded_bytes", 50000);
		CHECK_U(s, "live_objects", 0);
		CHECK_U(s, "peak_bytes", 100);
		CHECK_U(s, "at_peak_bytes", 100);
		CHECK_EQ_U64(jsonread_count(jsonread_get(s, "stack")), 3);
	}
	CHECK(find_by(sites, "call_site", "twice+0x8") == NULL); /* releases only: not shown */
	s = find_by(sites, "call_site", "twice+0x4");
	if (CHECK(s)) {
		CHECK_U(s, "allocs", 1);
		CHECK_U(s, "frees", 1);
	}
	s = find_by(jsonread_get(j, "functions"), "function", "leaky");
	if (CHECK(s))
		CHECK_U(s, "live_bytes", 144);

	il = jsonread_get(j, "illegal");
	CHECK_EQ_U64(jsonread_count(il), 4);
	s = find_kind(il, "double_free");
	if (CHECK(s)) {
		CHECK_S(s, "function", "twice");
		CHECK_S(s, "call_site", "twice+0x8");
		CHECK_S(s, "operation", "free");
		CHECK_S(s, "ptr", "0x7000");
		CHECK_U(s, "time_ns", BASE_NS + 9 * MS);
		CHECK_U(s, "tid", 1000);
		CHECK_S(jsonread_at(jsonread_get(s, "stack"), 0), "name", "twice+0x8");
		CHECK_S(jsonread_get(s, "first_release"), "call_site", "twice+0x4");
		CHECK_U(jsonread_get(s, "first_release"), "time_ns", BASE_NS + 8 * MS);
		CHECK_S(jsonread_at(jsonread_get(jsonread_get(s, "first_release"), "stack"), 0), "name", "twice+0x4");
		CHECK_S(jsonread_get(s, "block"), "operation", "malloc");
		CHECK_U(jsonread_get(s, "block"), "size", 32);
		CHECK_S(jsonread_get(s, "block"), "function", "twice");
	}
	s = find_kind(il, "mismatch");
	if (CHECK(s)) {
		CHECK_S(s, "function", "mixer");
		CHECK_S(s, "operation", "free");
		CHECK_S(jsonread_get(s, "block"), "operation", "new");
		CHECK_S(jsonread_get(s, "block"), "ptr", "0x8000");
	}
	s = find_kind(il, "interior_pointer");
	if (CHECK(s)) {
		CHECK_S(s, "ptr", "0x9010");
		CHECK_S(jsonread_get(s, "block"), "ptr", "0x9000");
		CHECK_U(jsonread_get(s, "block"), "size", 64);
	}
	s = find_kind(il, "never_allocated");
	if (CHECK(s)) {
		CHECK_S(s, "ptr", "0xdead0");
		CHECK(jsonread_get(s, "block") == NULL);
	}
	ov = jsonread_get(j, "overlaps");
	CHECK_EQ_U64(jsonread_count(ov), 1);
	s = jsonread_at(ov, 0);
	CHECK_S(s, "ptr", "0x9020");
	CHECK_U(s, "size", 10);
	CHECK_S(s, "function", "mixer");
	CHECK_S(jsonread_get(s, "live_block"), "ptr", "0x9000");
	CHECK_U(jsonread_get(s, "live_block"), "size", 64);

	p = jsonread_at(jsonread_get(j, "processes"), 0);
	CHECK_U(p, "pid", 1000);
	CHECK(jsonread_bool(jsonread_get(p, "exited"), false));
	CHECK_U(p, "exit_status", 0);
	CHECK_U(p, "unfreed_objects", 5);
	jsonread_release(j);

	/* at the peak (5 ms): leaky's three, tidy's two blocks */
	snprintf(args, sizeof(args), "report --memory --at-peak --format json '%s/basic'", root);
	j = run_json(args);
	if (j) {
		CHECK_U(j, "state_ns", BASE_NS + 5 * MS);
		CHECK_U(jsonread_get(j, "totals"), "live_bytes", 251);
		CHECK_U(jsonread_get(j, "totals"), "peak_ns", BASE_NS + 5 * MS);
		CHECK_EQ_U64(jsonread_count(jsonread_get(j, "sites")), 3);
		s = jsonread_at(jsonread_get(j, "sites"), 0);
		CHECK_S(s, "function", "leaky");
		CHECK_U(s, "live_bytes", 144);
		s = jsonread_at(jsonread_get(j, "sites"), 1);
		CHECK_S(s, "call_site", "tidy+0x4");
		CHECK_U(s, "live_bytes", 100);
		CHECK_U(jsonread_get(j, "totals"), "illegal", 0);
		jsonread_release(j);
	}
}

static void test_basic_text(void)
{
	char args[1024], *out;
	int status;

	snprintf(args, sizeof(args), "report --memory '%s/basic'", root);
	out = run(args, &status);
	CHECK_EQ_U64(status, 0);
	CHECK(strstr(out, "double_free: free(0x7000) in twice") != NULL);
	CHECK(strstr(out, "already released by free") != NULL);
	CHECK(strstr(out, "mismatch: free(0x8000) in mixer") != NULL);
	CHECK(strstr(out, "free of a block from new") != NULL);
	CHECK(strstr(out, "overlap: malloc(10) = 0x9020") != NULL);
	CHECK(strstr(out, "# unfreed at exit: 5 blocks, 161 bytes") != NULL);
	CHECK(strstr(out, "# folded: 500 short-lived blocks (50000 bytes)") != NULL);
	free(out);

	snprintf(args, sizeof(args), "replay '%s/basic'", root);
	out = run(args, &status);
	CHECK_EQ_U64(status, 0);
	CHECK(strstr(out, "[mem] malloc(48) = 0x1000  leaky+0x4") != NULL);
	/* named although the worker's chunk comes before the maps */
	CHECK(strstr(out, "[mem] free(0x5000)  tidy+0x8") != NULL);
	CHECK(strstr(out, "[mem] realloc(0xa000, 24) = 0xb000") != NULL);
	CHECK(strstr(out, "[mem] fold: 500 blocks, 50000 bytes") != NULL);
	CHECK(strstr(out, "[mem] realloc(NULL, 8) = 0xa000  leaky+0x4") != NULL);
	CHECK(strstr(out, "[mem] realloc(0xb000, 0) = NULL  leaky+0x4") != NULL);
	free(out);
}

/* ---- lost events: what follows them is marked ------------------------- */

static void test_lossy(void)
{
	struct tracefile t;
	char args[1024];
	struct json_object *j;
	struct json_object *il;

	trace_open(&t, "lossy");
	stream_begin(&t, 1, 3000, 3000);
	encoder_task(t.enc, BASE_NS, LP_TASK_START, 0, "lossy", 5, NULL, 0);
	put_maps(&t, BASE_NS);
	put_stack(&t, BASE_NS, 1, at(twice, 4), at(outer, 4), 0);
	put_mem(&t, BASE_NS + 1 * MS, LP_MEM_FREE, 0x2000, 0, 0, 1);
	encoder_lost(t.enc, BASE_NS + 2 * MS, 3);
	put_mem(&t, BASE_NS + 3 * MS, LP_MEM_FREE, 0x3000, 0, 0, 1);
	stream_flush(&t);
	trace_close(&t);
	snprintf(args, sizeof(args), "report --memory --format json '%s/lossy'", root);
	j = run_json(args);
	if (!j)
		return;
	CHECK_U(j, "lost_events", 3);
	CHECK_U(jsonread_get(j, "totals"), "never_allocated", 2);
	CHECK_U(jsonread_get(j, "totals"), "illegal_after_loss", 1);
	il = jsonread_get(j, "illegal");
	CHECK_EQ_U64(jsonread_count(il), 2);
	CHECK_S(jsonread_at(il, 0), "ptr", "0x2000");
	CHECK(!jsonread_bool(jsonread_get(jsonread_at(il, 0), "after_loss"), true));
	CHECK_S(jsonread_at(il, 1), "ptr", "0x3000");
	CHECK(jsonread_bool(jsonread_get(jsonread_at(il, 1), "after_loss"), false));
	jsonread_release(j);
}

/* ---- time order across threads, far beyond any window ------------------- */

/* The main thread's chunk, which allocates a block at 1 ms, comes after
 * 600000 operations of a worker that frees it at 2 ms: the chunks are
 * merged by time, so the free is legal and nothing is late. */
static void test_order(void)
{
	struct tracefile t;
	char args[1024];
	struct json_object *j;
	struct json_object *s;
	uint32_t k;

	trace_open(&t, "order");
	stream_begin(&t, 1, 5000, 5001);
	encoder_task(t.enc, BASE_NS + 1, LP_TASK_START, 0, "worker", 6, NULL, 0);
	put_stack(&t, BASE_NS + 2 * MS, 1, at(tidy, 8), at(outer, 4), 0);
	put_mem(&t, BASE_NS + 2 * MS, LP_MEM_FREE, 0xabc000, 0, 0, 1);
	for (k = 0; k < 300000; k++) {
		put_mem(&t, BASE_NS + 3 * MS + 2 * k, LP_MEM_MALLOC, 0x100000 + (k % 64) * 64, 48, 0, 1);
		put_mem(&t, BASE_NS + 3 * MS + 2 * k + 1, LP_MEM_FREE, 0x100000 + (k % 64) * 64, 0, 0, 1);
		if (encoder_full(t.enc))
			stream_flush(&t);
	}
	stream_flush(&t);
	stream_begin(&t, 1, 5000, 5000);
	encoder_task(t.enc, BASE_NS, LP_TASK_START, 0, "main", 4, NULL, 0);
	put_maps(&t, BASE_NS);
	put_stack(&t, BASE_NS, 1, at(leaky, 4), at(outer, 4), 0);
	put_mem(&t, BASE_NS + 1 * MS, LP_MEM_MALLOC, 0xabc000, 4096, 0, 1);
	encoder_task(t.enc, BASE_NS + 1000 * MS, LP_TASK_EXIT, 0, NULL, 0, NULL, 0);
	stream_flush(&t);
	trace_close(&t);
	snprintf(args, sizeof(args), "report --memory --format json '%s/order'", root);
	j = run_json(args);
	if (!j)
		return;
	CHECK_U(jsonread_get(j, "totals"), "illegal", 0);
	CHECK_U(jsonread_get(j, "totals"), "late_events", 0);
	CHECK_U(jsonread_get(j, "totals"), "live_objects", 0);
	CHECK_U(jsonread_get(j, "totals"), "allocs", 300001);
	CHECK_U(jsonread_get(j, "totals"), "frees", 300001);
	s = find_by(jsonread_get(j, "sites"), "function", "leaky");
	if (CHECK(s)) {
		CHECK_U(s, "frees", 1);
		CHECK_U(s, "peak_bytes", 4096);
	}
	/* the worker's stack names tidy+0x8 although the maps come last */
	s = find_by(jsonread_get(j, "sites"), "call_site", "tidy+0x8");
	if (CHECK(s))
		CHECK_U(s, "allocs", 300000);
	jsonread_release(j);
}

/* ---- a stream with more stack ids than the reader keeps ------------------ */

static void test_many_stacks(void)
{
	struct tracefile t;
	char args[1024];
	struct json_object *j;
	struct json_object *s;
	uint32_t id;

	trace_open(&t, "stacks");
	stream_begin(&t, 1, 4000, 4000);
	encoder_task(t.enc, BASE_NS, LP_TASK_START, 0, "stacks", 6, NULL, 0);
	put_maps(&t, BASE_NS);
	for (id = 1; id <= 70000; id++) {
		put_stack(&t, BASE_NS + id, id, at(leaky, 4), at(outer, 4), 0x1000 + id);
		if (encoder_full(t.enc))
			stream_flush(&t);
	}
	put_mem(&t, BASE_NS + 1 * MS, LP_MEM_MALLOC, 0x1000, 10, 0, 70000);
	put_mem(&t, BASE_NS + 2 * MS, LP_MEM_MALLOC, 0x2000, 20, 0, 40000);
	put_mem(&t, BASE_NS + 3 * MS, LP_MEM_MALLOC, 0x3000, 30, 0, 1);
	stream_flush(&t);
	trace_close(&t);
	snprintf(args, sizeof(args), "report --memory --format json '%s/stacks'", root);
	j = run_json(args);
	if (!j)
		return;
	/* the table was full at id 65537: ids up to 65537 - 32768 went */
	CHECK_U(jsonread_get(j, "totals"), "forgotten_stacks", 32769);
	CHECK_U(jsonread_get(j, "totals"), "dropped_stacks", 0);
	CHECK_U(jsonread_get(j, "totals"), "unknown_stacks", 1);
	s = find_by(jsonread_get(j, "sites"), "function", "leaky");
	if (CHECK(s)) {
		CHECK_U(s, "live_objects", 2);
		CHECK_U(s, "live_bytes", 30);
	}
	s = find_by(jsonread_get(j, "sites"), "function", "[unknown]");
	if (CHECK(s))
		CHECK_U(s, "live_bytes", 30);
	jsonread_release(j);
}

/* ---- growth, snapshots and memdiff -------------------------------------- */

static void write_grow(void)
{
	struct tracefile t;
	uint64_t T = BASE_NS, k;

	trace_open(&t, "grow");
	stream_begin(&t, 1, 2000, 2000);
	encoder_task(t.enc, T, LP_TASK_START, 0, "grow", 4, NULL, 0);
	put_maps(&t, T);
	put_stack(&t, T, 1, at(grower, 4), at(outer, 4), 0);
	put_stack(&t, T, 2, at(steady, 4), at(outer, 4), 0);
	/* 2 s: grower keeps 100 bytes every 10 ms; steady holds one block of
	 * 1000 and replaces it every 10 ms */
	for (k = 1; k <= 200; k++) {
		uint64_t ns = T + k * 10 * MS;

		put_mem(&t, ns, LP_MEM_MALLOC, 0x100000 + k * 0x100, 100, 0, 1);
		if (k > 1)
			put_mem(&t, ns + 1, LP_MEM_FREE, 0x900000 + (k - 1) * 0x1000, 0, 0, 2);
		put_mem(&t, ns + 2, LP_MEM_MALLOC, 0x900000 + k * 0x1000, 1000, 0, 2);
		if (encoder_full(t.enc))
			stream_flush(&t);
	}
	stream_flush(&t);
	trace_close(&t);
}

static void test_grow(void)
{
	char args[2048], *out;
	struct json_object *s;
	struct json_object *j;
	double rate;
	int status;

	write_grow();
	snprintf(args, sizeof(args), "report --memory --format json '%s/grow'", root);
	j = run_json(args);
	if (!j)
		return;
	s = find_by(jsonread_get(j, "sites"), "function", "grower");
	if (CHECK(s)) {
		CHECK_U(s, "live_objects", 200);
		CHECK_U(s, "live_bytes", 20000);
		CHECK(jsonread_bool(jsonread_get(s, "growing"), false));
		rate = jsonread_f64(jsonread_get(s, "growth_bytes_per_s"), 0);
		if (!CHECK(rate > 9900 && rate < 10100))
			printf("  rate %f\n", rate);
		CHECK(jsonread_f64(jsonread_get(s, "growth_confidence"), 0) > 0.99);
		CHECK(jsonread_u64(jsonread_get(s, "growth_samples"), 0) >= 16);
	}
	s = find_by(jsonread_get(j, "sites"), "function", "steady");
	if (CHECK(s)) {
		CHECK_U(s, "live_objects", 1);
		CHECK_U(s, "live_bytes", 1000);
		CHECK(!jsonread_bool(jsonread_get(s, "growing"), true));
	}
	jsonread_release(j);

	/* snapshots at 0.5 s and at the end; memdiff between them */
	snprintf(args, sizeof(args), "snapshot --at 500ms -o '%s/s1.json' '%s/grow'", root, root);
	free(run(args, &status));
	CHECK_EQ_U64(status, 0);
	snprintf(args, sizeof(args), "snapshot -o '%s/s2.json' '%s/grow'", root, root);
	free(run(args, &status));
	CHECK_EQ_U64(status, 0);
	snprintf(args, sizeof(args), "memdiff --format json '%s/s1.json' '%s/s2.json'", root, root);
	j = run_json(args);
	if (j) {
		CHECK_U(jsonread_get(j, "from"), "live_objects", 51);
		CHECK_U(jsonread_get(j, "from"), "live_bytes", 6000);
		CHECK_U(jsonread_get(j, "from"), "time_ns", BASE_NS + 500 * MS);
		CHECK_U(jsonread_get(j, "to"), "live_bytes", 21000);
		CHECK_U(j, "interval_ns", 1500 * MS + 2);
		CHECK_EQ_U64(jsonread_count(jsonread_get(j, "sites")), 1); /* steady did not change */
		s = jsonread_at(jsonread_get(j, "sites"), 0);
		CHECK_S(s, "function", "grower");
		CHECK_S(s, "call_site", "grower+0x4");
		CHECK_U(s, "live_objects_before", 50);
		CHECK_U(s, "live_objects_after", 200);
		CHECK_EQ_U64(jsonread_u64(jsonread_get(s, "live_objects_change"), 0), 150);
		CHECK_EQ_U64(jsonread_u64(jsonread_get(s, "live_bytes_change"), 0), 15000);
		CHECK_EQ_U64(jsonread_u64(jsonread_get(s, "allocs_change"), 0), 150);
		jsonread_release(j);
	}
	snprintf(args, sizeof(args), "memdiff --all --format json '%s/s1.json' '%s/s2.json'", root, root);
	j = run_json(args);
	if (j) {
		CHECK_EQ_U64(jsonread_count(jsonread_get(j, "sites")), 2);
		s = jsonread_at(jsonread_get(j, "sites"), 1);
		CHECK_S(s, "function", "steady");
		CHECK(jsonread_f64(jsonread_get(s, "live_bytes_change"), 1) == 0);
		jsonread_release(j);
	}
	/* the reverse: shrinking, with negative changes */
	snprintf(args, sizeof(args), "memdiff '%s/s2.json' '%s/s1.json'", root, root);
	out = run(args, &status);
	CHECK_EQ_U64(status, 0);
	CHECK(strstr(out, "-150       -15000") != NULL);
	free(out);
	/* not a snapshot */
	snprintf(args, sizeof(args), "memdiff '%s/grow/data' '%s/s1.json' 2>/dev/null", root, root);
	free(run(args, &status));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
}

int main(int argc, char **argv)
{
	char cmd[600];

	if (argc < 2) {
		fprintf(stderr, "usage: test_memreport <path of layerprof>\n");
		return 2;
	}
	layerprof = argv[1];
	snprintf(root, sizeof(root), "/tmp/lp-memreport-XXXXXX");
	if (!mkdtemp(root))
		die("mkdtemp");
	test_basic();
	test_basic_text();
	test_lossy();
	test_many_stacks();
	test_order();
	test_grow();
	if (!check_failed) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd))
			printf("cannot remove %s\n", root);
	} else {
		printf("traces kept in %s\n", root);
	}
	return check_summary();
}
