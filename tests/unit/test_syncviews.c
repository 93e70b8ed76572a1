/* Unit test of the synchronisation events in the views: who released each
 * wait (trace/syncwake.c, fed directly), and, on a synthetic trace of
 * two threads written with encoder_sync, the call tree's wait leaves, the
 * Chrome export's wait slices and flows, the flow of one call, and the
 * web UI server's sync tracks (GET /api/sync_tracks), all with exact
 * figures.  The trace maps this test's own executable, so that its
 * functions get their names.
 *
 * usage: test_syncviews [<path of layerprof>]  (with it, `tree` runs too)
 *        test_syncviews --write DIR  (writes the trace into DIR, for
 *        tests/ui/test_serve.py's sync group, and checks nothing) */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/encoder.h"
#include "common/syncevent.h"
#include "host/lib/analysis/calltree.h"
#include "host/lib/trace/syncwake.h"
#include "host/lib/export/chrome.h"
#include "host/lib/export/chromesync.h"
#include "host/lib/kernel/kflow.h"
#include "host/lib/serve/api.h"
#include "host/lib/serve/model.h"
#include "host/lib/util/jsonread.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

#define MS 1000000ull
#define US 1000ull
#define T0 7000000000ull /* the trace's first event */
#define PID 4000u
#define MAIN_TID 4000u
#define WORKER_TID 4001u
#define MUTEX 0x5000u
#define SEM 0x6000u
#define COND 0x7000u
#define MAIN_PT 0x9000u /* the threads' pthread_t */
#define WORKER_PT 0xa000u

static const char *layerprof;
static char dir[256];

#define BODY __asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop; nop")
__attribute__((noinline, used)) void main_body(void)
{
	BODY;
}
__attribute__((noinline, used)) void take_lock(void)
{
	BODY;
}
__attribute__((noinline, used)) void worker_body(void)
{
	BODY;
}

static uint64_t fn(void (*f)(void))
{
	return (uint64_t)(uintptr_t)f;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

#define CHECK_U(node, key, want) CHECK_EQ_U64(jsonread_u64(jsonread_get((node), (key)), UINT64_MAX), (want))
#define CHECK_S(node, key, want) CHECK_STR(jsonread_str(jsonread_get((node), (key))), (want))

/* ---- syncwake, fed directly ---------------------------------------------- */

static void add(struct syncwake *sw, uint32_t thread, uint32_t pid, uint64_t ns, uint8_t op, uint32_t flags,
                uint64_t obj, uint64_t wait_ns)
{
	struct walk_sync y = { .ns = ns, .op = op, .flags = flags, .obj = obj, .wait_ns = wait_ns };

	CHECK_EQ_U64(syncwake_add(sw, thread, pid, 100 + thread, &y), 0);
}

static const struct syncwake_event *find(const struct syncwake *sw, uint32_t thread, uint64_t ns, uint8_t op,
                                         uint64_t obj)
{
	const struct syncwake_event *e = syncwake_find(sw, thread, ns, op, obj);

	if (!CHECK(e != NULL))
		printf("  no event of thread %u at %llu\n", thread, (unsigned long long)ns);
	return e;
}

#define CHECK_WAKER(sw, thread, ns, op, obj, want_thread, want_ns)                         \
	do {                                                                               \
		const struct syncwake_event *e_ = find((sw), (thread), (ns), (op), (obj)); \
		if (e_) {                                                                  \
			CHECK_EQ_U64(e_->waker, (want_thread));                            \
			CHECK_EQ_U64(e_->release_ns, (want_ns));                           \
		}                                                                          \
	} while (0)

static void test_syncwake(void)
{
	struct syncwake sw;

	syncwake_init(&sw);
	/* added out of time order: resolve sorts */
	/* thread 1 unlocks m at 150 and 180; thread 0 waited 100..200 */
	add(&sw, 0, 1, 200, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, 0x10, 100);
	add(&sw, 1, 1, 150, LP_SYNC_MUTEX_UNLOCK, 0, 0x10, 0);
	add(&sw, 2, 1, 180, LP_SYNC_MUTEX_UNLOCK, 0, 0x10, 0);
	/* a lock taken at once: not kept */
	add(&sw, 1, 1, 120, LP_SYNC_MUTEX_LOCK, LP_SYNC_TRY, 0x10, 0);
	/* the same address in another process: not its releaser */
	add(&sw, 3, 2, 190, LP_SYNC_MUTEX_UNLOCK, 0, 0x10, 0);
	/* a release before the wait began is not the releaser */
	add(&sw, 1, 1, 290, LP_SYNC_RW_UNLOCK, 0, 0x20, 0);
	add(&sw, 0, 1, 400, LP_SYNC_WR_LOCK, LP_SYNC_CONTENDED, 0x20, 100);
	/* a condition: the signal, not the mutex; a timed-out wait has none */
	add(&sw, 1, 1, 510, LP_SYNC_COND_SIGNAL, 0, 0x30, 0);
	add(&sw, 0, 1, 520, LP_SYNC_COND_WAIT, 0, 0x30, 50);
	add(&sw, 1, 1, 560, LP_SYNC_COND_SIGNAL, 0, 0x30, 0);
	add(&sw, 0, 1, 570, LP_SYNC_COND_WAIT, LP_SYNC_TIMED | LP_SYNC_TIMEDOUT | LP_SYNC_FAILED, 0x30, 40);
	/* semaphores: the post */
	add(&sw, 2, 1, 610, LP_SYNC_SEM_POST, 0, 0x40, 0);
	add(&sw, 0, 1, 615, LP_SYNC_SEM_WAIT, 0, 0x40, 20);
	/* a barrier of three: threads 0 and 1 wait for 2, the last to
	 * arrive (at 790), whose record comes after theirs */
	add(&sw, 0, 1, 800, LP_SYNC_BARRIER_WAIT, 0, 0x50, 100);
	add(&sw, 1, 1, 801, LP_SYNC_BARRIER_WAIT, 0, 0x50, 51);
	add(&sw, 2, 1, 805, LP_SYNC_BARRIER_WAIT, LP_SYNC_SERIAL, 0x50, 15);
	/* a join: the thread that began with that pthread_t, at its end */
	add(&sw, 2, 1, 50, LP_SYNC_THREAD, 0, 0xbeef, 0);
	add(&sw, 0, 1, 1000, LP_SYNC_JOIN, 0, 0xbeef, 300);
	CHECK_EQ_U64(syncwake_thread_end(&sw, 2, 900), 0);
	/* a post at the very time the wait ended, added after it */
	add(&sw, 0, 1, 1100, LP_SYNC_SEM_WAIT, 0, 0x60, 50);
	add(&sw, 3, 1, 1100, LP_SYNC_SEM_POST, 0, 0x60, 0);
	CHECK_EQ_U64(sw.n, 19);
	CHECK_EQ_U64(syncwake_resolve(&sw), 0);
	for (size_t i = 1; i < sw.n; i++)
		CHECK(sw.ev[i - 1].ns <= sw.ev[i].ns);
	CHECK_WAKER(&sw, 0, 200, LP_SYNC_MUTEX_LOCK, 0x10, 2, 180);
	CHECK_WAKER(&sw, 0, 400, LP_SYNC_WR_LOCK, 0x20, SYNCWAKE_NONE, 0);
	CHECK_WAKER(&sw, 0, 520, LP_SYNC_COND_WAIT, 0x30, 1, 510);
	CHECK_WAKER(&sw, 0, 570, LP_SYNC_COND_WAIT, 0x30, SYNCWAKE_NONE, 0);
	CHECK_WAKER(&sw, 0, 615, LP_SYNC_SEM_WAIT, 0x40, 2, 610);
	CHECK_WAKER(&sw, 0, 800, LP_SYNC_BARRIER_WAIT, 0x50, 2, 790);
	CHECK_WAKER(&sw, 1, 801, LP_SYNC_BARRIER_WAIT, 0x50, 2, 790);
	CHECK_WAKER(&sw, 2, 805, LP_SYNC_BARRIER_WAIT, 0x50, SYNCWAKE_NONE, 0);
	CHECK_WAKER(&sw, 0, 1000, LP_SYNC_JOIN, 0xbeef, 2, 900);
	CHECK_WAKER(&sw, 0, 1100, LP_SYNC_SEM_WAIT, 0x60, 3, 1100);
	CHECK(syncwake_find(&sw, 1, 120, LP_SYNC_MUTEX_LOCK, 0x10) == NULL);
	CHECK(syncwake_is_wait(LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, 1));
	CHECK(!syncwake_is_wait(LP_SYNC_MUTEX_LOCK, 0, 0));
	CHECK(!syncwake_is_wait(LP_SYNC_MUTEX_UNLOCK, 0, 5));
	CHECK(!syncwake_is_wait(LP_SYNC_SEM_WAIT, LP_SYNC_FAILED, 5));
	syncwake_release(&sw);
}

/* ---- the synthetic trace --------------------------------------------------- */

struct map_ctx {
	struct encoder *e;
	uint64_t ns;
};

/* MAP events of this executable's code. */
static int map_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct map_ctx *m = data;
	char exe[512];
	ssize_t n;

	(void)size;
	if (info->dlpi_name && *info->dlpi_name)
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			encoder_map(m->e, m->ns, info->dlpi_addr, info->dlpi_addr + ph->p_vaddr,
			            info->dlpi_addr + ph->p_vaddr + ph->p_memsz, ph->p_offset, NULL, 0, exe,
			            strlen(exe));
	}
	return 1;
}

static void sync_ev(struct encoder *e, uint64_t ns, uint8_t op, uint32_t flags, uint64_t obj, uint64_t obj2,
                    uint64_t wait_ns)
{
	struct syncevent y = { .op = op, .flags = flags, .obj = obj, .obj2 = obj2, .wait_ns = wait_ns };

	encoder_sync(e, ns, &y);
}

static void flush(int fd, struct encoder *e)
{
	const uint8_t *p;
	size_t n = encoder_take(e, &p);

	if (n && chunk_write_fd(fd, LP_CHUNK_EVENTS, p, (uint32_t)n))
		die("chunk_write_fd");
}

/* Times in ms from T0:
 *
 * worker (4001): starts at 0 (THREAD WORKER_PT); worker_body 1..20 {
 *   take_lock 2..11 { lock MUTEX at 2 (no wait); unlock at 10 };
 *   post SEM at 12; signal COND at 15 }; ends at 21.
 * main (4000): starts at 0 (THREAD MAIN_PT); main_body 1..26 {
 *   create WORKER_PT at 1;
 *   take_lock 3..11 { lock MUTEX waited 4..10.5 (released by the worker
 *     at 10); unlock at 10.6 };
 *   sem-wait SEM 11.5..13 (posted at 12); cond-wait COND 14..16
 *   (signalled at 15); cond-wait COND timed out 16.5..17.5;
 *   join WORKER_PT 18..22 (the worker ended at 21);
 *   take_lock 23..25 { lock MUTEX waited 23.5..24 (no release in it);
 *     unlock at 24.5 } }. */
static void write_trace(void)
{
	struct encoder *e = malloc(sizeof(*e)), *em = malloc(sizeof(*em));
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	static const char meta[] = "layerprof=test\nclock=monotonic\ncommand=synthetic\nsync=preload\n";
	static const char end[] = "events=0\nlost=0\nstreams=2\n";
	struct map_ctx m;
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, LP_TRACE_DATA);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || !e || !em)
		die("open");
	trace_header_put(hdr);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    chunk_write_fd(fd, LP_CHUNK_META, meta, sizeof(meta) - 1))
		die("write");

	/* main's start with the code mappings, then the worker's chunk: its
	 * releases come in the file before the waits they end */
	encoder_init(em, 1, PID, MAIN_TID);
	encoder_task(em, T0, LP_TASK_START, 0, "main", 4, NULL, 0);
	m = (struct map_ctx){ em, T0 };
	dl_iterate_phdr(map_cb, &m);
	sync_ev(em, T0, LP_SYNC_THREAD, 0, MAIN_PT, 0, 0);
	flush(fd, em);

	encoder_init(e, 1, PID, WORKER_TID);
	encoder_task(e, T0, LP_TASK_START, 0, "worker", 6, NULL, 0);
	sync_ev(e, T0, LP_SYNC_THREAD, 0, WORKER_PT, 0, 0);
	encoder_entry(e, T0 + 1 * MS, fn(worker_body));
	encoder_entry(e, T0 + 2 * MS, fn(take_lock));
	sync_ev(e, T0 + 2 * MS, LP_SYNC_MUTEX_LOCK, 0, MUTEX, 0, 0);
	sync_ev(e, T0 + 10 * MS, LP_SYNC_MUTEX_UNLOCK, 0, MUTEX, 0, 0);
	encoder_exit(e, T0 + 11 * MS, fn(take_lock));
	sync_ev(e, T0 + 12 * MS, LP_SYNC_SEM_POST, 0, SEM, 0, 0);
	sync_ev(e, T0 + 15 * MS, LP_SYNC_COND_SIGNAL, 0, COND, 0, 0);
	encoder_exit(e, T0 + 20 * MS, fn(worker_body));
	encoder_task(e, T0 + 21 * MS, LP_TASK_END, 0, NULL, 0, NULL, 0);
	flush(fd, e);

	free(e);
	e = em;
	encoder_entry(e, T0 + 1 * MS, fn(main_body));
	sync_ev(e, T0 + 1 * MS, LP_SYNC_CREATE, 0, WORKER_PT, 0, 0);
	encoder_entry(e, T0 + 3 * MS, fn(take_lock));
	sync_ev(e, T0 + 10500 * US, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, MUTEX, 0, 6500 * US);
	sync_ev(e, T0 + 10600 * US, LP_SYNC_MUTEX_UNLOCK, 0, MUTEX, 0, 0);
	encoder_exit(e, T0 + 11 * MS, fn(take_lock));
	sync_ev(e, T0 + 13 * MS, LP_SYNC_SEM_WAIT, 0, SEM, 0, 1500 * US);
	sync_ev(e, T0 + 16 * MS, LP_SYNC_COND_WAIT, 0, COND, MUTEX, 2 * MS);
	sync_ev(e, T0 + 17500 * US, LP_SYNC_COND_WAIT, LP_SYNC_TIMED | LP_SYNC_TIMEDOUT | LP_SYNC_FAILED, COND, MUTEX,
	        1 * MS);
	sync_ev(e, T0 + 22 * MS, LP_SYNC_JOIN, 0, WORKER_PT, 0, 4 * MS);
	encoder_entry(e, T0 + 23 * MS, fn(take_lock));
	sync_ev(e, T0 + 24 * MS, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, MUTEX, 0, 500 * US);
	sync_ev(e, T0 + 24500 * US, LP_SYNC_MUTEX_UNLOCK, 0, MUTEX, 0, 0);
	encoder_exit(e, T0 + 25 * MS, fn(take_lock));
	encoder_exit(e, T0 + 26 * MS, fn(main_body));
	flush(fd, e);
	if (chunk_write_fd(fd, LP_CHUNK_END, end, sizeof(end) - 1))
		die("write");
	close(fd);
	free(e);
}

static void open_trace(struct walk *w)
{
	char err[256];

	if (walk_open(w, dir, NULL, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
}

static const struct walk_stream *stream_of_tid(const struct walk *w, uint32_t tid)
{
	for (uint32_t i = 0; i < w->nstreams; i++)
		if (w->streams[i]->tid == tid)
			return w->streams[i];
	return NULL;
}

/* ---- the call tree --------------------------------------------------------- */

static uint32_t child(const struct calltree_stream *t, uint32_t parent, uint64_t addr)
{
	for (uint32_t c = t->nodes[parent].first_child; c; c = t->nodes[c].next_sibling)
		if (t->nodes[c].addr == addr)
			return c;
	return 0;
}

static void check_node(const struct calltree_stream *t, uint32_t i, uint64_t calls, uint64_t total, uint64_t self,
                       uint64_t min, uint64_t max)
{
	if (!CHECK(i != 0))
		return;
	CHECK_EQ_U64(t->nodes[i].calls, calls);
	CHECK_EQ_U64(t->nodes[i].total_ns, total);
	CHECK_EQ_U64(t->nodes[i].self_ns, self);
	CHECK_EQ_U64(t->nodes[i].min_ns, min);
	CHECK_EQ_U64(t->nodes[i].max_ns, max);
}

static void test_tree(bool all)
{
	struct walk w;
	struct calltree ct;
	struct walk_ops ops = { 0 };
	const struct walk_stream *s;
	const struct calltree_stream *t;
	uint32_t mb, tl;
	char name[128];

	open_trace(&w);
	calltree_init(&ct);
	calltree_walk_ops(&ct, &ops);
	ops.sync = calltree_sync;
	ct.sync_all = all;
	CHECK_EQ_U64(walk_run(&w, &ops), 0);
	CHECK_EQ_U64(w.sync_events, 15);
	CHECK_EQ_U64(w.sync_malformed, 0);
	s = stream_of_tid(&w, MAIN_TID);
	t = s ? calltree_stream(&ct, s->index) : NULL;
	if (!CHECK(t != NULL))
		goto out;
	mb = child(t, 0, fn(main_body));
	tl = child(t, mb, fn(take_lock));
	/* main_body's self: 25 ms less take_lock's 10, the join's 4, the
	 * cond-waits' 3 and the sem-wait's 1.5 */
	check_node(t, mb, 1, 25 * MS, 6500 * US, 25 * MS, 25 * MS);
	check_node(t, tl, 2, 10 * MS, 3 * MS, 2 * MS, 8 * MS);
	check_node(t, child(t, tl, CALLTREE_SYNC_KEY(LP_SYNC_MUTEX_LOCK, MUTEX)), 2, 7 * MS, 7 * MS, 500 * US,
	           6500 * US);
	check_node(t, child(t, mb, CALLTREE_SYNC_KEY(LP_SYNC_SEM_WAIT, SEM)), 1, 1500 * US, 1500 * US, 1500 * US,
	           1500 * US);
	check_node(t, child(t, mb, CALLTREE_SYNC_KEY(LP_SYNC_COND_WAIT, COND)), 2, 3 * MS, 3 * MS, 1 * MS, 2 * MS);
	check_node(t, child(t, mb, CALLTREE_SYNC_KEY(LP_SYNC_JOIN, WORKER_PT)), 1, 4 * MS, 4 * MS, 4 * MS, 4 * MS);
	/* the waits only, or every operation */
	CHECK_EQ_U64(t->nodes[mb].nchildren, all ? 5 : 4);
	CHECK_EQ_U64(t->nodes[tl].nchildren, all ? 2 : 1);
	CHECK_EQ_U64(t->nodes[0].nchildren, all ? 2 : 1);
	if (all) {
		check_node(t, child(t, tl, CALLTREE_SYNC_KEY(LP_SYNC_MUTEX_UNLOCK, MUTEX)), 2, 0, 0, 0, 0);
		check_node(t, child(t, mb, CALLTREE_SYNC_KEY(LP_SYNC_CREATE, WORKER_PT)), 1, 0, 0, 0, 0);
		check_node(t, child(t, 0, CALLTREE_SYNC_KEY(LP_SYNC_THREAD, MAIN_PT)), 1, 0, 0, 0, 0);
	}
	CHECK(CALLTREE_IS_SYNC(CALLTREE_SYNC_KEY(LP_SYNC_JOIN, WORKER_PT)));
	CHECK(!CALLTREE_IS_KERNEL(CALLTREE_SYNC_KEY(LP_SYNC_JOIN, WORKER_PT)));
	CHECK(CALLTREE_IS_LEAF(CALLTREE_SYNC_KEY(LP_SYNC_JOIN, WORKER_PT)));
	CHECK_STR(calltree_key_name(&w, 1, CALLTREE_SYNC_KEY(LP_SYNC_MUTEX_LOCK, MUTEX), true, name, sizeof(name)),
	          "[wait] mutex-lock 0x5000");
	CHECK_STR(calltree_key_name(&w, 1, CALLTREE_SYNC_KEY(LP_SYNC_SEM_POST, SEM), true, name, sizeof(name)),
	          "[sync] sem-post 0x6000");
	CHECK_STR(calltree_key_name(&w, 1, CALLTREE_SYNC_KEY(LP_SYNC_COND_WAIT, COND), false, name, sizeof(name)),
	          "cond-wait 0x7000");
	/* the worker took its lock at once: no leaf */
	s = stream_of_tid(&w, WORKER_TID);
	t = s ? calltree_stream(&ct, s->index) : NULL;
	if (CHECK(t != NULL)) {
		uint32_t wb = child(t, 0, fn(worker_body));

		check_node(t, wb, 1, 19 * MS, 10 * MS, 19 * MS, 19 * MS);
		CHECK_EQ_U64(t->nodes[child(t, wb, fn(take_lock))].nchildren, all ? 2 : 0);
	}
out:
	calltree_release(&ct);
	walk_release(&w);
}

/* Runs layerprof with args and returns its standard output (malloc'd). */
static char *run(const char *args, int *status)
{
	char cmd[2048], *out;
	size_t len = 0, cap = 1 << 20;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' %s", layerprof, args);
	p = popen(cmd, "r");
	out = malloc(cap);
	if (!p || !out)
		die("popen");
	len = fread(out, 1, cap - 1, p);
	out[len] = '\0';
	*status = pclose(p);
	return out;
}

static void test_tree_command(void)
{
	char args[512], *out;
	int status;

	if (!layerprof)
		return;
	snprintf(args, sizeof(args), "tree --tid %u '%s'", MAIN_TID, dir);
	out = run(args, &status);
	CHECK_EQ_U64(status, 0);
	if (!CHECK(strstr(out, "    7.000 ms     7.000 ms          2      [wait] mutex-lock 0x5000\n") != NULL) ||
	    !CHECK(strstr(out, "    4.000 ms     4.000 ms          1    [wait] join 0xa000\n") != NULL) ||
	    !CHECK(strstr(out, "[sync]") == NULL))
		printf("%s", out);
	free(out);
	snprintf(args, sizeof(args), "tree --sync-all --format json '%s'", dir);
	out = run(args, &status);
	CHECK_EQ_U64(status, 0);
	if (!CHECK(strstr(out, "\"name\":\"mutex-unlock 0x5000\",\"sync\":true,\"op\":\"mutex-unlock\","
	                       "\"object\":\"0x5000\",\"calls\":2") != NULL))
		printf("%s", out);
	free(out);
}

/* ---- the Chrome export ----------------------------------------------------- */

static struct json_object *find_event(struct json_object *events, const char *ph, const char *cat, uint64_t tid,
                                      double ts)
{
	struct json_object *ev;

	for (size_t i = 0; (ev = jsonread_at(events, i)) != NULL; i++) {
		const char *p = jsonread_str(jsonread_get(ev, "ph")), *c = jsonread_str(jsonread_get(ev, "cat"));

		if (p && c && !strcmp(p, ph) && !strcmp(c, cat) && jsonread_u64(jsonread_get(ev, "tid"), 0) == tid &&
		    jsonread_f64(jsonread_get(ev, "ts"), -1) == ts)
			return ev;
	}
	printf("  no %s event of %s on thread %llu at %.3f\n", ph, cat, (unsigned long long)tid, ts);
	return NULL;
}

static void check_flow(struct json_object *events, uint64_t from_tid, double from_ts, uint64_t to_tid, double to_ts)
{
	struct json_object *s = find_event(events, "s", "sync", from_tid, from_ts);
	struct json_object *f = find_event(events, "f", "sync", to_tid, to_ts);

	if (!CHECK(s && f))
		return;
	CHECK_EQ_U64(jsonread_u64(jsonread_get(s, "id"), 0), jsonread_u64(jsonread_get(f, "id"), 1));
	CHECK_S(f, "bp", "e");
	CHECK_S(s, "name", "release");
	CHECK_EQ_U64(jsonread_u64(jsonread_get(s, "pid"), 0), PID);
}

static void test_chrome(void)
{
	struct walk w;
	char *buf = NULL, err[256];
	size_t len = 0, nsync = 0, nflow = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_object *doc, *events, *ev, *args;

	if (!f)
		die("open_memstream");
	open_trace(&w);
	CHECK_EQ_U64(export_chrome(&w, f, NULL), 0);
	fclose(f);
	walk_release(&w);
	doc = jsonread_parse(buf, len, err, sizeof(err));
	if (!CHECK(doc != NULL)) {
		printf("  %s\n", err);
		free(buf);
		return;
	}
	events = jsonread_get(doc, "traceEvents");
	for (size_t i = 0; (ev = jsonread_at(events, i)) != NULL; i++) {
		const char *c = jsonread_str(jsonread_get(ev, "cat")), *p = jsonread_str(jsonread_get(ev, "ph"));

		if (c && !strcmp(c, "sync"))
			*(p && !strcmp(p, "X") ? &nsync : &nflow) += 1;
	}
	/* six waits (the timed-out one too), four of them released by the
	 * worker: an "s" and an "f" each */
	CHECK_EQ_U64(nsync, 6);
	CHECK_EQ_U64(nflow, 8);
	ev = find_event(events, "X", "sync", MAIN_TID, 4000.0);
	if (CHECK(ev != NULL)) {
		CHECK_S(ev, "name", "wait mutex-lock 0x5000");
		CHECK_EQ_U64((uint64_t)(jsonread_f64(jsonread_get(ev, "dur"), 0) * 1000), 6500000);
		args = jsonread_get(ev, "args");
		CHECK_S(args, "op", "mutex-lock");
		CHECK_S(args, "object", "0x5000");
		CHECK_S(args, "function", "take_lock");
		CHECK_U(args, "released_by", WORKER_TID);
		CHECK_S(args, "released_by_comm", "worker");
	}
	ev = find_event(events, "X", "sync", MAIN_TID, 14000.0);
	if (CHECK(ev != NULL)) {
		CHECK_S(ev, "name", "wait cond-wait 0x7000");
		CHECK_S(jsonread_get(ev, "args"), "mutex", "0x5000");
		CHECK_S(jsonread_get(ev, "args"), "function", "main_body");
	}
	ev = find_event(events, "X", "sync", MAIN_TID, 16500.0);
	if (CHECK(ev != NULL)) {
		CHECK(jsonread_bool(jsonread_get(jsonread_get(ev, "args"), "timed_out"), false));
		CHECK(jsonread_get(jsonread_get(ev, "args"), "released_by") == NULL);
	}
	ev = find_event(events, "X", "sync", MAIN_TID, 23500.0);
	if (CHECK(ev != NULL))
		CHECK(jsonread_get(jsonread_get(ev, "args"), "released_by") == NULL);
	check_flow(events, WORKER_TID, 10000.0, MAIN_TID, 10500.0);
	check_flow(events, WORKER_TID, 12000.0, MAIN_TID, 13000.0);
	check_flow(events, WORKER_TID, 15000.0, MAIN_TID, 16000.0);
	check_flow(events, WORKER_TID, 21000.0, MAIN_TID, 22000.0);
	jsonread_release(doc);
	free(buf);
}

/* ---- the flow of one call ---------------------------------------------------- */

static void test_flow(void)
{
	struct walk w;
	struct kflow *kf;
	const struct kflow_node *nd;
	const struct kflow_call *c;
	size_t n;
	uint64_t dropped;

	open_trace(&w);
	/* take_lock's calls by start: the worker's (2 ms), main's (3, 23) */
	kf = kflow_new(&w, "take_lock", 2, 0);
	if (!CHECK(kf != NULL) || !CHECK_EQ_U64(kflow_run(kf), 0))
		goto out;
	c = kflow_chosen(kf);
	if (!CHECK(c != NULL))
		goto out;
	CHECK_EQ_U64(c->tid, MAIN_TID);
	nd = kflow_nodes(kf, &n, &dropped);
	if (!CHECK_EQ_U64(n, 2))
		goto out;
	CHECK_EQ_U64(nd[0].type, KFLOW_CALL);
	CHECK_EQ_U64(nd[1].type, KFLOW_SYNC);
	CHECK_EQ_U64(nd[1].depth, 1);
	CHECK_EQ_U64(nd[1].ns, T0 + 4 * MS);
	CHECK_EQ_U64(nd[1].dur_ns, 6500 * US);
	CHECK_STR(nd[1].text, "mutex-lock 0x5000, released by thread 4001 (worker)");
	CHECK_EQ_U64(nd[1].waker_tid, WORKER_TID);
	CHECK_EQ_U64(nd[1].release_ns, T0 + 10 * MS);
	kflow_free(kf);
	/* main_body: every wait of main, in time order */
	kf = kflow_new(&w, "main_body", 1, 0);
	if (!CHECK(kf != NULL) || !CHECK_EQ_U64(kflow_run(kf), 0))
		goto out;
	nd = kflow_nodes(kf, &n, &dropped);
	if (!CHECK_EQ_U64(n, 9))
		goto out;
	CHECK_STR(nd[3].text, "sem-wait 0x6000, posted by thread 4001 (worker)");
	CHECK_STR(nd[4].text, "cond-wait 0x7000 (mutex 0x5000), signalled by thread 4001 (worker)");
	CHECK_STR(nd[5].text, "cond-wait 0x7000 (mutex 0x5000), timed out");
	CHECK_STR(nd[6].text, "join 0xa000, ended: thread 4001 (worker)");
	CHECK_EQ_U64(nd[6].release_ns, T0 + 21 * MS);
	CHECK_STR(nd[8].text, "mutex-lock 0x5000, no release seen");
	CHECK_EQ_U64(nd[8].depth, 2);
	CHECK_EQ_U64(nd[8].waker_tid, 0);
out:
	kflow_free(kf);
	walk_release(&w);
}

/* ---- the web UI server's sync tracks ------------------------------------------ */

struct args {
	const char *keys[4], *vals[4];
};

static const char *arg_get(void *ctx, const char *key)
{
	const struct args *a = ctx;

	for (int i = 0; i < 4 && a->keys[i]; i++)
		if (!strcmp(a->keys[i], key))
			return a->vals[i];
	return NULL;
}

/* The answer to GET /api/<what>?thread=<thread>&px=<px>; the caller frees it. */
static char *answer(struct servemodel *m, const char *what, const char *thread, const char *px, int *status)
{
	struct args a = { { "thread", "px" }, { thread, px } };
	struct serve_query q = { arg_get, &a };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		die("open_memstream");
	*status = serveapi_get(m, what, &q, f);
	fclose(f);
	return buf;
}

static struct json_object *thread_row(struct json_object *threads, uint64_t tid)
{
	struct json_object *t;

	for (size_t i = 0; (t = jsonread_at(threads, i)) != NULL; i++)
		if (jsonread_u64(jsonread_get(t, "tid"), 0) == tid)
			return t;
	return NULL;
}

static const char *name_of(struct json_object *doc, struct json_object *id)
{
	char key[24];

	snprintf(key, sizeof(key), "%llu", (unsigned long long)jsonread_u64(id, UINT64_MAX));
	return jsonread_str(jsonread_get(jsonread_get(doc, "names"), key));
}

/* One wait box: [start, end, op, object, releaser id, release, count,
 * fill, function], times from the trace's first event. */
static void check_wait(struct json_object *doc, struct json_object *box, uint64_t start, uint64_t end, const char *op,
                       const char *obj, int64_t waker, int64_t release, const char *func)
{
	if (!CHECK(box != NULL) || !CHECK_EQ_U64(jsonread_count(box), 9))
		return;
	CHECK_EQ_U64(jsonread_u64(jsonread_at(box, 0), 0), start);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(box, 1), 0), end);
	CHECK_STR(name_of(doc, jsonread_at(box, 2)), op);
	CHECK_STR(name_of(doc, jsonread_at(box, 3)), obj);
	if (waker < 0)
		CHECK(jsonread_u64(jsonread_at(box, 4), UINT64_MAX) == UINT64_MAX);
	else
		CHECK_EQ_U64(jsonread_u64(jsonread_at(box, 4), UINT64_MAX), (uint64_t)waker);
	if (release < 0)
		CHECK(jsonread_u64(jsonread_at(box, 5), UINT64_MAX) == UINT64_MAX);
	else
		CHECK_EQ_U64(jsonread_u64(jsonread_at(box, 5), UINT64_MAX), (uint64_t)release);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(box, 6), 0), 1);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(box, 7), 0), 1000);
	CHECK_STR(name_of(doc, jsonread_at(box, 8)), func);
}

/* The sync tracks of main's window, from a pass or from the index file:
 * the same answer either way. */
static char *check_tracks(unsigned flags)
{
	struct servemodel m;
	struct json_object *doc, *main_t, *worker_t, *waits, *arrows, *a;
	char err[256], id[16], *out;
	uint64_t main_id, worker_id;
	int status;

	if (servemodel_load(&m, dir, flags, err, sizeof(err))) {
		CHECK(!"servemodel_load");
		printf("  %s\n", err);
		servemodel_release(&m);
		return NULL;
	}
	CHECK_EQ_U64(m.from_index, flags == 0);
	out = answer(&m, "summary", NULL, NULL, &status);
	CHECK_EQ_U64(status, 200);
	CHECK(strstr(out, "\"sync\":true,\"sync_events\":15") != NULL);
	free(out);
	main_id = worker_id = UINT64_MAX;
	for (uint32_t i = 0; i < m.info.nthreads; i++) {
		if (m.info.threads[i].tid == MAIN_TID)
			main_id = m.info.threads[i].id;
		if (m.info.threads[i].tid == WORKER_TID)
			worker_id = m.info.threads[i].id;
	}
	snprintf(id, sizeof(id), "%llu", (unsigned long long)main_id);
	/* the waits are leaves of the page's call tree and flame graph too */
	{
		const struct calltree_stream *t = calltree_stream(&m.tree, (uint32_t)main_id);
		uint32_t mb = t ? child(t, 0, fn(main_body)) : 0, wait = 0, nsync = 0;

		if (CHECK(t != NULL) && CHECK(mb != 0)) {
			wait = child(t, mb, CALLTREE_SYNC_KEY(LP_SYNC_COND_WAIT, COND));
			check_node(t, wait, 2, 3 * MS, 3 * MS, 1 * MS, 2 * MS);
			CHECK_EQ_U64(t->nodes[mb].self_ns, 6500 * US);
		}
		for (uint32_t i = 1; i < m.flame.paths.n; i++) {
			if (m.flame.nodes[i].kind != FLAME_SYNC)
				continue;
			nsync++;
			if (!strcmp(names_get(&m.names, m.flame.nodes[i].name), "mutex-lock 0x5000"))
				CHECK_EQ_U64(m.flame.nodes[i].total_ns, 7 * MS);
		}
		/* main's four (operation, object) under its functions; none of
		 * the worker's, which did not wait */
		CHECK_EQ_U64(nsync, 4);
		out = answer(&m, "flame", NULL, NULL, &status);
		CHECK_EQ_U64(status, 200);
		if (!CHECK(strstr(out, "\"join 0xa000\",4000000,4000000,1,0,0,1]") != NULL))
			printf("%s\n", out);
		free(out);
	}
	out = answer(&m, "sync_tracks", id, "10000", &status);
	CHECK_EQ_U64(status, 200);
	doc = jsonread_parse(out, strlen(out), err, sizeof(err));
	if (!CHECK(doc != NULL)) {
		printf("  %s\n%s\n", err, out);
		goto out;
	}
	CHECK(jsonread_bool(jsonread_get(doc, "sync"), false));
	CHECK_U(doc, "waits", 6);
	CHECK_U(doc, "dropped", 0);
	/* the asked thread first, then the other alive in the window */
	main_t = jsonread_at(jsonread_get(doc, "threads"), 0);
	worker_t = thread_row(jsonread_get(doc, "threads"), WORKER_TID);
	CHECK_U(main_t, "tid", MAIN_TID);
	CHECK_S(main_t, "comm", "main");
	if (!CHECK(worker_t != NULL))
		goto out;
	CHECK_EQ_U64(jsonread_count(jsonread_get(worker_t, "waits")), 0);
	waits = jsonread_get(main_t, "waits");
	if (!CHECK_EQ_U64(jsonread_count(waits), 6)) {
		printf("%s\n", out);
		goto out;
	}
	check_wait(doc, jsonread_at(waits, 0), 4 * MS, 10500 * US, "mutex-lock", "0x5000", (int64_t)worker_id, 10 * MS,
	           "take_lock");
	check_wait(doc, jsonread_at(waits, 1), 11500 * US, 13 * MS, "sem-wait", "0x6000", (int64_t)worker_id, 12 * MS,
	           "main_body");
	check_wait(doc, jsonread_at(waits, 2), 14 * MS, 16 * MS, "cond-wait", "0x7000 (mutex 0x5000)",
	           (int64_t)worker_id, 15 * MS, "main_body");
	check_wait(doc, jsonread_at(waits, 3), 16500 * US, 17500 * US, "cond-wait", "0x7000 (mutex 0x5000)", -1, -1,
	           "main_body");
	check_wait(doc, jsonread_at(waits, 4), 18 * MS, 22 * MS, "join", "0xa000", (int64_t)worker_id, 21 * MS,
	           "main_body");
	check_wait(doc, jsonread_at(waits, 5), 23500 * US, 24 * MS, "mutex-lock", "0x5000", -1, -1, "take_lock");
	/* an arrow from the worker's row at each release to main's */
	arrows = jsonread_get(doc, "arrows");
	if (!CHECK_EQ_U64(jsonread_count(arrows), 4))
		goto out;
	a = jsonread_at(arrows, 0);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(a, 0), 0), 10 * MS);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(a, 1), 0), worker_id);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(a, 2), 0), main_id);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(a, 3), 0), 10500 * US);
	CHECK_STR(name_of(doc, jsonread_at(a, 4)), "mutex-lock");
	a = jsonread_at(arrows, 3);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(a, 0), 0), 21 * MS);
	CHECK_EQ_U64(jsonread_u64(jsonread_at(a, 3), 0), 22 * MS);
	CHECK_STR(name_of(doc, jsonread_at(a, 4)), "join");
out:
	jsonread_release(doc);
	servemodel_release(&m);
	return out;
}

static void test_serve(void)
{
	char *pass, *again, *indexed;

	pass = check_tracks(SERVEMODEL_NO_INDEX);
	/* written to the index, then read from it */
	again = check_tracks(SERVEMODEL_REINDEX);
	indexed = check_tracks(0);
	if (CHECK(pass && again && indexed)) {
		CHECK_STR(again, pass);
		CHECK_STR(indexed, pass);
	}
	free(pass);
	free(again);
	free(indexed);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");

	if (argc == 3 && !strcmp(argv[1], "--write")) {
		snprintf(dir, sizeof(dir), "%s", argv[2]);
		if (mkdir(dir, 0700) && errno != EEXIST)
			die("mkdir");
		write_trace();
		return 0;
	}
	layerprof = argc > 1 ? argv[1] : NULL;
	snprintf(dir, sizeof(dir), "%s/lp-syncviews-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp");
	test_syncwake();
	write_trace();
	test_tree(false);
	test_tree(true);
	test_tree_command();
	test_chrome();
	test_flow();
	test_serve();
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "%s '%s'", getenv("LP_KEEP") ? "echo kept" : "rm -rf", dir);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return check_summary();
}
