/* The memory tracer end to end: runs the mem_* programs (tests/programs)
 * under `layerprof record --memory` (and one linked with the --wrap
 * interposers, recorded without them preloaded), decodes the traces and
 * checks exact heap operations: counts, sizes, pointers, the function of
 * each call site, stack id definitions, streams of threads and of a forked
 * child, events kept when glibc aborts, and the keep-alive option.
 *
 * usage: test_memtrace BUILD_DIR
 *        test_memtrace --dump TRACE_DIR   (by hand: every heap event) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/decoder.h"
#include "common/drain.h"
#include "common/memevent.h"
#include "host/lib/trace/reader.h"
#include "host/lib/trace/symbolizer.h"
#include "tests/unit/check.h"

#define STREAMS_MAX 64u
#define SITE_MAX 64u
#define RUN_TIMEOUT_S 60

/* One decoded event of interest: a heap operation, a function entry or
 * exit (for the interleaving checks), or a TASK. */
struct tev {
	uint32_t stream;
	uint8_t type; /* LP_EV_ALLOC, LP_EV_ENTRY, LP_EV_EXIT, LP_EV_TASK */
	uint8_t op;   /* ALLOC: enum lp_mem_op; TASK: kind */
	uint8_t flags;
	uint64_t ns;
	uint64_t ptr, size, old, addr;
	uint32_t stack, depth;           /* depth: frames of the stack */
	uint64_t count, bytes, lifetime; /* FOLD */
	size_t seq;                      /* order in the file */
	char site[SITE_MAX];             /* function of the call site ("" unknown) */
	char func[SITE_MAX];             /* ENTRY/EXIT: the function */
};

struct tstack {
	uint32_t stream, id, n;
	uint64_t ips[MEMEVENT_STACK_MAX];
};

struct tstream {
	uint32_t image, pid, tid;
	uint32_t first_stack_id; /* id of its first STACK event (0: none) */
	uint64_t last_ns;
	bool forked;
};

struct trace {
	struct tev *ev;
	size_t nev, cap;
	struct tstack *stacks;
	size_t nstacks, stacks_cap;
	struct tstream streams[STREAMS_MAX];
	uint32_t nstreams;
	uint64_t undefined_ids; /* ALLOC with a stack id not defined before */
	uint64_t redefined_ids; /* STACK of an id defined before in the stream */
	uint64_t backwards;     /* events earlier than the one before in the stream */
	uint64_t bad_bodies;    /* ALLOC/STACK bodies that did not parse */
	uint64_t lost;
	bool damaged;
	struct symbolizer *sym;
};

static char bindir[1024], layerprof[1200], tmpdir[256];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 1024;
	p = realloc(p, *cap * elem);
	if (!p)
		die("realloc");
	return p;
}

static uint32_t stream_of(struct trace *t, uint32_t image, uint32_t pid, uint32_t tid)
{
	for (uint32_t i = 0; i < t->nstreams; i++)
		if (t->streams[i].image == image && t->streams[i].tid == tid && t->streams[i].pid == pid)
			return i;
	if (t->nstreams == STREAMS_MAX) {
		printf("FAIL: more than %u streams\n", STREAMS_MAX);
		exit(1);
	}
	memset(&t->streams[t->nstreams], 0, sizeof(t->streams[0]));
	t->streams[t->nstreams].image = image;
	t->streams[t->nstreams].pid = pid;
	t->streams[t->nstreams].tid = tid;
	return t->nstreams++;
}

static const struct tstack *stack_find(const struct trace *t, uint32_t stream, uint32_t id)
{
	for (size_t i = t->nstacks; i > 0; i--)
		if (t->stacks[i - 1].stream == stream && t->stacks[i - 1].id == id)
			return &t->stacks[i - 1];
	return NULL;
}

static void name_of(struct trace *t, uint32_t image, uint64_t addr, char *out)
{
	struct symbol s;

	out[0] = '\0';
	if (t->sym && !symbolizer_lookup(t->sym, image, addr, &s) && s.name)
		snprintf(out, SITE_MAX, "%s", s.name);
}

static void add_event(struct trace *t, const struct tev *e)
{
	t->ev = grow(t->ev, &t->cap, t->nev, sizeof(*t->ev));
	t->ev[t->nev] = *e;
	t->ev[t->nev].seq = t->nev;
	t->nev++;
}

static void decode_chunk(struct trace *t, struct decoder *d, const uint8_t *payload, size_t len)
{
	struct lp_event ev;
	uint32_t si;
	int r;

	if (decoder_begin(d, payload, len)) {
		t->bad_bodies++;
		return;
	}
	si = stream_of(t, d->image, d->pid, d->tid);
	while ((r = decoder_next(d, &ev)) > 0) {
		struct tstream *s = &t->streams[si];
		struct tev e = { .stream = si, .type = ev.type, .ns = ev.time };

		if (ev.time < s->last_ns)
			t->backwards++;
		s->last_ns = ev.time;
		switch (ev.type) {
		case LP_EV_MAP:
			symbolizer_add_map(t->sym, d->image, ev.base, ev.start, ev.end, ev.offset, ev.build_id,
			                   ev.build_id_len, ev.str, ev.str_len);
			break;
		case LP_EV_LOST:
			t->lost += ev.value;
			break;
		case LP_EV_TASK:
			if (ev.arg == LP_TASK_FORK)
				s->forked = true;
			e.op = ev.arg;
			e.size = ev.value; /* EXIT: the wait status */
			add_event(t, &e);
			break;
		case LP_EV_ENTRY:
		case LP_EV_EXIT:
			e.addr = ev.value;
			add_event(t, &e);
			break;
		case LP_EV_STACK: {
			struct tstack st;
			struct stackevent se;

			if (stackevent_parse(&ev, &se)) {
				t->bad_bodies++;
				break;
			}
			if (stack_find(t, si, se.id))
				t->redefined_ids++;
			if (!s->first_stack_id)
				s->first_stack_id = se.id;
			st.stream = si;
			st.id = se.id;
			st.n = se.n;
			memcpy(st.ips, se.ips, sizeof(st.ips));
			t->stacks = grow(t->stacks, &t->stacks_cap, t->nstacks, sizeof(*t->stacks));
			t->stacks[t->nstacks++] = st;
			break;
		}
		case LP_EV_ALLOC: {
			struct memevent m;
			const struct tstack *st;

			if (memevent_parse(&ev, &m)) {
				t->bad_bodies++;
				break;
			}
			e.op = m.op;
			e.flags = (uint8_t)m.flags;
			e.ptr = m.ptr;
			e.size = m.size;
			e.old = m.old;
			e.stack = m.stack;
			e.count = m.count;
			e.bytes = m.bytes;
			e.lifetime = m.lifetime_ns;
			st = stack_find(t, si, m.stack);
			if (!st) {
				t->undefined_ids++;
			} else {
				e.depth = st->n;
				/* a return address: the call is the byte before */
				if (st->n)
					e.addr = st->ips[0] - 1;
			}
			add_event(t, &e);
			break;
		}
		default:
			break;
		}
	}
	if (r < 0)
		t->bad_bodies++;
}

static int tev_time_cmp(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq; /* keep each stream's order */
}

static int trace_load(struct trace *t, const char *dir)
{
	static struct decoder dec;
	struct reader r;
	struct chunk_info ci;
	const uint8_t *payload;
	char err[512];

	memset(t, 0, sizeof(*t));
	t->sym = symbolizer_new(SYMBOLIZER_DEMANGLE);
	if (!t->sym)
		die("symbolizer_new");
	if (reader_open(&r, dir, err, sizeof(err))) {
		printf("FAIL: cannot read trace '%s': %s\n", dir, err);
		check_failed++;
		return -1;
	}
	while (reader_next(&r, &ci, &payload) > 0)
		if (ci.type == LP_CHUNK_EVENTS)
			decode_chunk(t, &dec, payload, ci.len);
	t->damaged = r.state != READER_OK;
	reader_release(&r);
	/* all streams in time order (the chunks of a stream come in its
	 * order, those of different streams in any) */
	qsort(t->ev, t->nev, sizeof(*t->ev), tev_time_cmp);
	/* names once every stream's code mappings are known (they come with
	 * the first stream of each process image) */
	for (size_t i = 0; i < t->nev; i++) {
		struct tev *e = &t->ev[i];
		uint32_t image = t->streams[e->stream].image;

		if (e->type == LP_EV_ENTRY || e->type == LP_EV_EXIT)
			name_of(t, image, e->addr, e->func);
		else if (e->type == LP_EV_ALLOC && e->addr)
			name_of(t, image, e->addr, e->site);
	}
	return 0;
}

static void trace_free(struct trace *t)
{
	free(t->ev);
	free(t->stacks);
	symbolizer_free(t->sym);
	memset(t, 0, sizeof(*t));
}

/* The name's function part: "objects()" and "objects" both give "objects". */
static bool same_func(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(name, want, n) && (name[n] == '\0' || name[n] == '(');
}

/* Heap operations matching op (0: any), size (UINT64_MAX: any), site (NULL:
 * any) and stream (UINT32_MAX: any). */
static uint64_t count_ops(const struct trace *t, uint8_t op, uint64_t size, const char *site, uint32_t stream)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->nev; i++) {
		const struct tev *e = &t->ev[i];

		if (e->type != LP_EV_ALLOC || (op && e->op != op) || (size != UINT64_MAX && e->size != size) ||
		    (site && !same_func(e->site, site)) || (stream != UINT32_MAX && e->stream != stream))
			continue;
		n++;
	}
	return n;
}

static uint64_t count_tasks(const struct trace *t, uint8_t kind, uint32_t stream)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->nev; i++)
		n += t->ev[i].type == LP_EV_TASK && t->ev[i].op == kind && t->ev[i].stream == stream;
	return n;
}

static const struct tev *find_op(const struct trace *t, uint8_t op, const char *site, size_t nth)
{
	for (size_t i = 0; i < t->nev; i++) {
		const struct tev *e = &t->ev[i];

		if (e->type == LP_EV_ALLOC && e->op == op && (!site || same_func(e->site, site)) && !nth--)
			return e;
	}
	return NULL;
}

/* Every trace: well-formed heap events, ids defined before use and once,
 * time never going back within a stream, nothing lost, not damaged. */
static void check_sane(const struct trace *t, const char *what)
{
	printf("  %s: %zu events, %u streams, %zu stacks\n", what, t->nev, t->nstreams, t->nstacks);
	CHECK_EQ_U64(t->bad_bodies, 0);
	CHECK_EQ_U64(t->undefined_ids, 0);
	CHECK_EQ_U64(t->redefined_ids, 0);
	CHECK_EQ_U64(t->backwards, 0);
	CHECK_EQ_U64(t->lost, 0);
	CHECK(!t->damaged);
}

/* Releases (FREE, DELETE, a REALLOC's old block) of blocks no operation
 * earlier in the trace returned: the program's are all legal, so each one
 * is a block the tracer missed.  KEPT releases are not counted. */
static uint64_t unmatched_releases(const struct trace *t)
{
	uint64_t bad = 0;

	for (size_t i = 0; i < t->nev; i++) {
		const struct tev *e = &t->ev[i];
		uint64_t p;
		bool found = false;

		if (e->type != LP_EV_ALLOC || (e->flags & LP_MEM_KEPT))
			continue;
		if (e->op == LP_MEM_FREE || e->op == LP_MEM_DELETE || e->op == LP_MEM_DELETE_ARRAY)
			p = e->ptr;
		else if (e->op == LP_MEM_REALLOC)
			p = e->old;
		else
			continue;
		if (!p)
			continue;
		for (size_t j = i; j > 0 && !found; j--) {
			const struct tev *a = &t->ev[j - 1];

			found = a->type == LP_EV_ALLOC && a->ptr == p && a->op != LP_MEM_FREE &&
			        a->op != LP_MEM_DELETE && a->op != LP_MEM_DELETE_ARRAY;
		}
		if (!found && ++bad <= 5)
			printf("  unmatched release of %#llx at %s\n", (unsigned long long)p, e->site);
	}
	return bad;
}

static void dump(const struct trace *t)
{
	static const char *const ops[] = { "?",   "MALLOC", "CALLOC", "REALLOC",  "ALIGNED", "FREE",
		                           "NEW", "NEW[]",  "DELETE", "DELETE[]", "FOLD" };

	for (size_t i = 0; i < t->nev; i++) {
		const struct tev *e = &t->ev[i];
		const struct tstream *s = &t->streams[e->stream];

		if (e->type == LP_EV_ALLOC)
			printf("%u/%u %llu %-8s flags=%u ptr=%#llx size=%llu old=%#llx stack=%u depth=%u site=%s\n",
			       s->pid, s->tid, (unsigned long long)e->ns, e->op <= 10 ? ops[e->op] : "?", e->flags,
			       (unsigned long long)e->ptr, (unsigned long long)e->size, (unsigned long long)e->old,
			       e->stack, e->depth, e->site);
		else if (e->type == LP_EV_TASK)
			printf("%u/%u %llu TASK %u\n", s->pid, s->tid, (unsigned long long)e->ns, e->op);
		else
			printf("%u/%u %llu %s %s\n", s->pid, s->tid, (unsigned long long)e->ns,
			       e->type == LP_EV_ENTRY ? "ENTRY" : "EXIT", e->func);
	}
	printf("streams %u, stacks %zu, undefined %llu, redefined %llu, backwards %llu, bad %llu, lost %llu\n",
	       t->nstreams, t->nstacks, (unsigned long long)t->undefined_ids, (unsigned long long)t->redefined_ids,
	       (unsigned long long)t->backwards, (unsigned long long)t->bad_bodies, (unsigned long long)t->lost);
}

/* Runs argv (NULL-terminated) with extra environment entries set, output
 * to /dev/null unless keep_output; returns the wait status, or -1 when it
 * could not run or did not end within RUN_TIMEOUT_S (it is killed). */
static int run(char *const argv[], const char *const *env, bool keep_output)
{
	int status = -1;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		for (; env && *env; env += 2)
			setenv(env[0], env[1], 1);
		if (fd >= 0 && !keep_output) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	for (int waited = 0; waited < RUN_TIMEOUT_S * 100; waited++) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		struct timespec ts = { 0, 10000000 };

		if (r == pid)
			return status;
		nanosleep(&ts, NULL);
	}
	printf("FAIL: %s did not end within %d s\n", argv[0], RUN_TIMEOUT_S);
	check_failed++;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* layerprof record [opts...] -o <tmp>/<name> -- <bindir>/<prog> [arg]:
 * returns record's exit code (the program's), -1 when it did not end. */
static int record(const char *name, const char *opts, const char *prog, const char *arg, char *dir)
{
	char path[1200], optbuf[256];
	char *argv[16];
	int argc = 0, status;
	char *tok, *save = NULL;

	snprintf(dir, 512, "%s/%s", tmpdir, name);
	snprintf(path, sizeof(path), "%s%s%s", prog[0] == '/' ? "" : bindir, prog[0] == '/' ? "" : "/", prog);
	argv[argc++] = layerprof;
	argv[argc++] = "record";
	argv[argc++] = "-q";
	snprintf(optbuf, sizeof(optbuf), "%s", opts);
	for (tok = strtok_r(optbuf, " ", &save); tok && argc < 10; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc++] = "-o";
	argv[argc++] = dir;
	argv[argc++] = "--";
	argv[argc++] = path;
	if (arg)
		argv[argc++] = (char *)arg;
	argv[argc] = NULL;
	status = run(argv, NULL, false);
	if (status == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static bool load(struct trace *t, const char *name, const char *opts, const char *prog, const char *arg, int want_exit)
{
	char dir[512];
	int code = record(name, opts, prog, arg, dir);

	printf("%s: layerprof record %s %s %s: exit %d\n", name, opts, prog, arg ? arg : "", code);
	if (!CHECK_EQ_U64(code, want_exit) && code < 0)
		return false;
	if (trace_load(t, dir))
		return false;
	check_sane(t, name);
	return true;
}

/* mem_leaky: 100 x 48 bytes from leaky, never freed; 50 x 24 from tidy,
 * each freed there. */
static void check_leaky(const struct trace *t, bool instrumented)
{
	uint64_t leaked_freed = 0;

	CHECK_EQ_U64(count_ops(t, LP_MEM_MALLOC, 48, "leaky", UINT32_MAX), 100);
	CHECK_EQ_U64(count_ops(t, LP_MEM_MALLOC, 24, "tidy", UINT32_MAX), 50);
	CHECK_EQ_U64(count_ops(t, LP_MEM_FREE, 0, "tidy", UINT32_MAX), 50);
	CHECK_EQ_U64(count_ops(t, 0, UINT64_MAX, "leaky", UINT32_MAX), 100);
	CHECK_EQ_U64(count_ops(t, 0, UINT64_MAX, "tidy", UINT32_MAX), 100);
	/* each of tidy's frees releases the block its malloc just returned */
	for (size_t i = 0; i + 1 < t->nev; i++) {
		const struct tev *e = &t->ev[i];

		if (e->type != LP_EV_ALLOC || !same_func(e->site, "leaky"))
			continue;
		for (size_t j = i + 1; j < t->nev; j++)
			if (t->ev[j].type == LP_EV_ALLOC && t->ev[j].op == LP_MEM_FREE && t->ev[j].ptr == e->ptr)
				leaked_freed++;
	}
	CHECK_EQ_U64(leaked_freed, 0);
	{
		const struct tev *m = find_op(t, LP_MEM_MALLOC, "tidy", 7);
		const struct tev *f = find_op(t, LP_MEM_FREE, "tidy", 7);

		if (CHECK(m && f))
			CHECK_EQ_U64(f->ptr, m->ptr);
	}
	if (instrumented) {
		/* the heap events sit between the entry and exit of their function */
		uint64_t inside = 0, entries = 0;
		int open = 0;

		for (size_t i = 0; i < t->nev; i++) {
			const struct tev *e = &t->ev[i];

			if (e->type == LP_EV_ENTRY && !strcmp(e->func, "leaky")) {
				open = 1;
				entries++;
			} else if (e->type == LP_EV_EXIT && !strcmp(e->func, "leaky")) {
				open = 0;
			} else if (e->type == LP_EV_ALLOC && e->op == LP_MEM_MALLOC && e->size == 48 && open) {
				inside++;
			}
		}
		CHECK_EQ_U64(entries, 100);
		CHECK_EQ_U64(inside, 100);
	}
}

static void test_leaky(void)
{
	struct trace t;

	if (load(&t, "leaky", "--memory", "mem_leaky", NULL, 0)) {
		check_leaky(&t, false);
		CHECK_EQ_U64(unmatched_releases(&t), 0);
		trace_free(&t);
	}
	if (load(&t, "leaky-depth1", "--memory --mem-depth 1", "mem_leaky", NULL, 0)) {
		check_leaky(&t, false);
		for (size_t i = 0; i < t.nstacks; i++)
			if (!CHECK_EQ_U64(t.stacks[i].n, 1))
				break;
		trace_free(&t);
	}
	/* built with frame pointers: the stack goes on to main */
	if (load(&t, "leaky-fp", "--memory", "mem_leaky_fp", NULL, 0)) {
		const struct tev *e = find_op(&t, LP_MEM_MALLOC, "leaky", 0);

		check_leaky(&t, false);
		if (CHECK(e)) {
			const struct tstack *st = stack_find(&t, e->stream, e->stack);
			char caller[SITE_MAX];

			if (CHECK(st && st->n >= 2)) {
				name_of(&t, t.streams[e->stream].image, st->ips[1] - 1, caller);
				CHECK_STR(caller, "main");
			}
		}
		trace_free(&t);
	}
	if (load(&t, "leaky-instr", "--memory", "mem_leaky_instr", NULL, 0)) {
		check_leaky(&t, true);
		trace_free(&t);
	}
}

static uint64_t double_recorded(const struct trace *t);

/* The --wrap interposers: linked in with the flags `layerprof config
 * --wrap-flags` names, recorded without the preloaded ones. */
static void test_wrap(void)
{
	char rsp[1024] = "", src[1100], out[600], arg[1400], dir[512];
	struct trace t;
	FILE *p;
	int status;

	snprintf(src, sizeof(src), "%s/programs/mem_leaky.c", LP_TESTS_SOURCE_DIR);
	snprintf(arg, sizeof(arg), "%s config --wrap-flags", layerprof);
	p = popen(arg, "r");
	if (!CHECK(p != NULL))
		return;
	if (!fgets(rsp, sizeof(rsp), p))
		rsp[0] = '\0';
	CHECK_EQ_U64(pclose(p), 0);
	rsp[strcspn(rsp, "\n")] = '\0';
	printf("wrap: response file '%s'\n", rsp);
	if (!CHECK(rsp[0] == '/' && !access(rsp, R_OK)))
		return;
	snprintf(out, sizeof(out), "%s/mem_leaky_wrap", tmpdir);
	snprintf(arg, sizeof(arg), "-Wl,@%s", rsp);
	{
		char *argv[] = { LP_TEST_CC, "-O2", "-g", "-o", out, src, arg, NULL };

		status = run(argv, NULL, true);
		if (!CHECK(status == 0))
			return;
	}
	{
		/* it runs on its own, untraced */
		char *argv[] = { out, NULL };

		CHECK_EQ_U64(run(argv, NULL, false), 0);
	}
	printf("wrap: layerprof record %s (no --memory): exit %d\n", out, record("wrap", "", out, NULL, dir));
	if (trace_load(&t, dir))
		return;
	check_sane(&t, "wrap");
	check_leaky(&t, false);
	/* only the program's own calls are wrapped: nothing from libc */
	CHECK_EQ_U64(count_ops(&t, 0, UINT64_MAX, NULL, UINT32_MAX), 200);
	trace_free(&t);

	/* C++: the operators wrapped; and with the preloaded interposers too,
	 * each operation is still recorded once */
	snprintf(src, sizeof(src), "%s/programs/mem_cxx.cc", LP_TESTS_SOURCE_DIR);
	snprintf(out, sizeof(out), "%s/mem_cxx_wrap", tmpdir);
	{
		char *argv[] = { LP_TEST_CXX, "-O2", "-g", "-std=c++17", "-o", out, src, arg, NULL };

		if (!CHECK(run(argv, NULL, true) == 0))
			return;
	}
	for (int preload = 0; preload < 2; preload++) {
		const char *name = preload ? "wrap-cxx-preload" : "wrap-cxx";

		printf("%s: exit %d\n", name, record(name, preload ? "--memory" : "", out, NULL, dir));
		if (trace_load(&t, dir))
			return;
		check_sane(&t, name);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW, 24, "objects", UINT32_MAX), 10);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_DELETE, 0, "objects", UINT32_MAX), 10);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW_ARRAY, 40, "arrays", UINT32_MAX), 5);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW_ARRAY, 100, "nothrow", UINT32_MAX), 3);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW, 64, "aligned", UINT32_MAX), 2);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW, UINT64_MAX, "failing", UINT32_MAX), 1);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 24, NULL, UINT32_MAX), 0);
		CHECK_EQ_U64(double_recorded(&t), 0);
		trace_free(&t);
	}
}

static void test_badfree(void)
{
	static const char *const modes[] = { "double", "stack", "interior" };
	struct trace t;
	char name[64];

	for (int keep = 0; keep < 2; keep++) {
		for (size_t i = 0; i < 3; i++) {
			const struct tev *a, *f, *f2;

			snprintf(name, sizeof(name), "badfree-%s%s", modes[i], keep ? "-keep" : "");
			/* glibc aborts: 128 + SIGABRT */
			if (!load(&t, name, keep ? "--memory --keep-alive" : "--memory", "mem_badfree", modes[i],
			          keep ? 0 : 128 + SIGABRT))
				continue;
			a = find_op(&t, i == 2 ? LP_MEM_CALLOC : LP_MEM_MALLOC, "victim", 0);
			f = find_op(&t, LP_MEM_FREE, "release", 0);
			f2 = find_op(&t, LP_MEM_FREE, "release", 1);
			CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, UINT64_MAX, "release", UINT32_MAX), i == 0 ? 2 : 1);
			if (i == 0 && CHECK(a && f && f2)) {
				CHECK_EQ_U64(a->size, 40);
				CHECK_EQ_U64(f->ptr, a->ptr);
				CHECK_EQ_U64(f2->ptr, a->ptr);
				CHECK_EQ_U64(f->flags, 0);
				CHECK_EQ_U64(f2->flags, keep ? LP_MEM_KEPT : 0);
			} else if (i == 1 && CHECK(f)) {
				/* a pointer no allocation returned */
				CHECK(!a);
				for (size_t j = 0; j < t.nev; j++)
					if (t.ev[j].type == LP_EV_ALLOC && t.ev[j].op != LP_MEM_FREE &&
					    t.ev[j].ptr == f->ptr)
						CHECK(!"stack pointer allocated");
				CHECK_EQ_U64(f->flags, keep ? LP_MEM_KEPT : 0);
			} else if (i == 2 && CHECK(a && f)) {
				CHECK_EQ_U64(a->size, 64);
				CHECK_EQ_U64(f->ptr, a->ptr + 16);
				CHECK_EQ_U64(f->flags, keep ? LP_MEM_KEPT : 0);
			}
			trace_free(&t);
		}
	}
	/* keep-alive without a recording: the program still goes on */
	{
		char path[1200], lib[2200];
		char *argv[] = { path, "double", NULL };
		const char *env[] = {
			"LD_PRELOAD", lib, "LAYERPROF_MEM_KEEPALIVE", "1", "LAYERPROF_SESSION", "", NULL
		};

		snprintf(path, sizeof(path), "%s/mem_badfree", bindir);
		snprintf(lib, sizeof(lib), "%s/../runtime/liblayerprof.so:%s/../runtime/liblayerprof-mem.so", bindir,
		         bindir);
		CHECK_EQ_U64(run(argv, env, false), 0);
	}
}

static void test_realloc(void)
{
	struct trace t;
	const struct tev *e, *prev;
	uint64_t size = 16;

	if (!load(&t, "realloc", "--memory", "mem_realloc", NULL, 0))
		return;
	prev = find_op(&t, LP_MEM_MALLOC, "chain", 0);
	if (CHECK(prev))
		CHECK_EQ_U64(prev->size, 16);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_REALLOC, UINT64_MAX, "chain", UINT32_MAX), 10);
	for (size_t i = 0; prev && i < 10; i++) {
		e = find_op(&t, LP_MEM_REALLOC, "chain", i);
		size *= 2;
		if (!CHECK(e))
			break;
		CHECK_EQ_U64(e->size, size);
		CHECK_EQ_U64(e->old, prev->ptr);
		CHECK(e->ptr != 0);
		prev = e;
	}
	e = find_op(&t, LP_MEM_FREE, "chain", 0);
	if (CHECK(e && prev))
		CHECK_EQ_U64(e->ptr, prev->ptr);
	CHECK_EQ_U64(count_ops(&t, 0, UINT64_MAX, "chain", UINT32_MAX), 12);

	CHECK_EQ_U64(count_ops(&t, LP_MEM_REALLOC, UINT64_MAX, "edges", UINT32_MAX), 3);
	e = find_op(&t, LP_MEM_REALLOC, "edges", 0);
	if (CHECK(e)) {
		CHECK_EQ_U64(e->size, 100);
		CHECK_EQ_U64(e->old, 0);
	}
	e = find_op(&t, LP_MEM_REALLOC, "edges", 1);
	if (CHECK(e)) {
		CHECK_EQ_U64(e->size, 80);
		CHECK_EQ_U64(e->old, 0);
	}
	prev = find_op(&t, LP_MEM_MALLOC, "edges", 0);
	e = find_op(&t, LP_MEM_REALLOC, "edges", 2);
	if (CHECK(e && prev)) {
		CHECK_EQ_U64(prev->size, 8);
		CHECK_EQ_U64(e->old, prev->ptr);
		CHECK_EQ_U64(e->ptr, 0);
		CHECK_EQ_U64(e->size, 0);
		CHECK_EQ_U64(e->flags, 0);
	}
	CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, UINT64_MAX, "edges", UINT32_MAX), 2);

	e = find_op(&t, LP_MEM_CALLOC, "family", 0);
	if (CHECK(e))
		CHECK_EQ_U64(e->size, 120);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_ALIGNED, UINT64_MAX, "family", UINT32_MAX), 4);
	{
		static const uint64_t sizes[] = { 100, 64, 48, 100 }, aligns[] = { 64, 32, 16, 4096 };

		for (size_t i = 0; i < 4; i++) {
			e = find_op(&t, LP_MEM_ALIGNED, "family", i);
			if (!CHECK(e))
				break;
			CHECK_EQ_U64(e->size, sizes[i]);
			CHECK_EQ_U64(e->ptr % aligns[i], 0);
		}
	}
	CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, UINT64_MAX, "family", UINT32_MAX), 5);
	CHECK_EQ_U64(unmatched_releases(&t), 0);
	trace_free(&t);
}

/* A block recorded by two operations at once (operator new and the malloc
 * inside it) would show as an allocation of a live block. */
static uint64_t double_recorded(const struct trace *t)
{
	uint64_t bad = 0;

	for (size_t i = 0; i < t->nev; i++) {
		const struct tev *e = &t->ev[i];

		if (e->type != LP_EV_ALLOC || !e->ptr || e->op == LP_MEM_FREE || e->op == LP_MEM_DELETE ||
		    e->op == LP_MEM_DELETE_ARRAY)
			continue;
		for (size_t j = i + 1; j < t->nev; j++) {
			const struct tev *g = &t->ev[j];

			if (g->type != LP_EV_ALLOC)
				continue;
			if ((g->op == LP_MEM_FREE || g->op == LP_MEM_DELETE || g->op == LP_MEM_DELETE_ARRAY ||
			     (g->op == LP_MEM_REALLOC && g->old == e->ptr)) &&
			    g->ptr == e->ptr)
				break;
			if (g->op != LP_MEM_FREE && g->op != LP_MEM_DELETE && g->op != LP_MEM_DELETE_ARRAY &&
			    g->ptr == e->ptr) {
				bad++;
				break;
			}
		}
	}
	return bad;
}

static void test_cxx(void)
{
	struct trace t;
	const struct tev *a, *f;

	if (load(&t, "cxx", "--memory", "mem_cxx", NULL, 0)) {
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW, 24, "objects", UINT32_MAX), 10);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_DELETE, 0, "objects", UINT32_MAX), 10);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW_ARRAY, 40, "arrays", UINT32_MAX), 5);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_DELETE_ARRAY, 0, "arrays", UINT32_MAX), 5);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW_ARRAY, 100, "nothrow", UINT32_MAX), 3);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_DELETE_ARRAY, 0, "nothrow", UINT32_MAX), 3);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW, 64, "aligned", UINT32_MAX), 2);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_DELETE, 0, "aligned", UINT32_MAX), 2);
		a = find_op(&t, LP_MEM_NEW, "aligned", 1);
		if (CHECK(a))
			CHECK_EQ_U64(a->ptr % 64, 0);
		a = find_op(&t, LP_MEM_NEW, "failing", 0);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_NEW, UINT64_MAX, "failing", UINT32_MAX), 1);
		if (CHECK(a)) {
			CHECK_EQ_U64(a->flags, LP_MEM_FAILED);
			CHECK_EQ_U64(a->ptr, 0);
			CHECK_EQ_U64(a->size, SIZE_MAX / 2);
		}
		/* the malloc inside operator new is not recorded as well */
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 24, NULL, UINT32_MAX), 0);
		CHECK_EQ_U64(double_recorded(&t), 0);
		/* the std::bad_alloc object is allocated and freed in the trace */
		CHECK_EQ_U64(unmatched_releases(&t), 0);
		trace_free(&t);
	}
	if (load(&t, "cxx-free-new", "--memory", "mem_cxx", "free-new", 0)) {
		f = find_op(&t, LP_MEM_FREE, "free_it", 0);
		if (CHECK(f)) {
			a = NULL;
			for (size_t i = 0; i < t.nev; i++)
				if (t.ev[i].type == LP_EV_ALLOC && t.ev[i].op == LP_MEM_NEW && t.ev[i].ptr == f->ptr)
					a = &t.ev[i];
			if (CHECK(a))
				CHECK_EQ_U64(a->size, 24);
		}
		trace_free(&t);
	}
	if (load(&t, "cxx-delete-malloc", "--memory", "mem_cxx", "delete-malloc", 0)) {
		f = find_op(&t, LP_MEM_DELETE, "delete_obj", 0);
		a = find_op(&t, LP_MEM_MALLOC, "main", 0);
		if (CHECK(f && a)) {
			CHECK_EQ_U64(a->size, 24);
			CHECK_EQ_U64(f->ptr, a->ptr);
		}
		trace_free(&t);
	}
	if (load(&t, "cxx-delete-array", "--memory", "mem_cxx", "delete-array", 0)) {
		f = find_op(&t, LP_MEM_DELETE, "delete_int", 0);
		a = find_op(&t, LP_MEM_NEW_ARRAY, "main", 0);
		if (CHECK(f && a)) {
			CHECK_EQ_U64(a->size, 16);
			CHECK_EQ_U64(f->ptr, a->ptr);
		}
		trace_free(&t);
	}
}

static void test_threads(void)
{
	struct trace t;
	uint32_t makers[2], takers[2], nm = 0, nt = 0;

	if (!load(&t, "threads", "--memory", "mem_threads", NULL, 0))
		return;
	for (uint32_t s = 0; s < t.nstreams; s++) {
		uint64_t made = count_ops(&t, LP_MEM_MALLOC, 72, "make", s);
		uint64_t taken = count_ops(&t, LP_MEM_FREE, 0, "take", s);

		if (made && nm < 2)
			makers[nm++] = s;
		if (taken && nt < 2)
			takers[nt++] = s;
		if (made || taken) {
			CHECK(!(made && taken));
			CHECK(t.streams[s].tid != t.streams[s].pid); /* not main */
			CHECK_EQ_U64(made + taken, 100);
		}
	}
	CHECK_EQ_U64(nm, 2);
	CHECK_EQ_U64(nt, 2);
	if (nm != 2 || nt != 2) {
		trace_free(&t);
		return;
	}
	/* each taker freed exactly the blocks of one maker, the two takers
	 * those of different makers */
	{
		int of[2] = { -1, -1 };

		for (uint32_t k = 0; k < 2; k++) {
			for (uint32_t m = 0; m < 2; m++) {
				uint64_t match = 0;

				for (size_t i = 0; i < t.nev; i++) {
					const struct tev *f = &t.ev[i];

					if (f->type != LP_EV_ALLOC || f->stream != takers[k] || f->op != LP_MEM_FREE)
						continue;
					for (size_t j = 0; j < i; j++)
						if (t.ev[j].type == LP_EV_ALLOC && t.ev[j].stream == makers[m] &&
						    t.ev[j].op == LP_MEM_MALLOC && t.ev[j].ptr == f->ptr) {
							match++;
							break;
						}
				}
				if (match == 100)
					of[k] = (int)m;
				else
					CHECK_EQ_U64(match, 0);
			}
		}
		CHECK(of[0] >= 0 && of[1] >= 0 && of[0] != of[1]);
	}
	CHECK_EQ_U64(unmatched_releases(&t), 0);
	trace_free(&t);
}

static void test_fork(void)
{
	struct trace t;
	uint32_t child = UINT32_MAX, parent = UINT32_MAX;

	if (!load(&t, "fork", "--memory", "mem_fork", NULL, 0))
		return;
	for (uint32_t s = 0; s < t.nstreams; s++) {
		if (t.streams[s].forked)
			child = s;
		else if (count_ops(&t, LP_MEM_MALLOC, 56, "keep", s))
			parent = s;
	}
	if (CHECK(child != UINT32_MAX && parent != UINT32_MAX)) {
		CHECK(t.streams[child].pid != t.streams[parent].pid);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 88, "work", child), 5);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "work", child), 5);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 56, NULL, child), 0);
		CHECK_EQ_U64(t.streams[child].first_stack_id, 1);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 56, "keep", parent), 3);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 88, "work", parent), 2);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "work", parent), 2);
		/* the child's _exit(0), which the parent collected with
		 * waitpid, ends the child's process; the parent's end its own */
		CHECK_EQ_U64(count_tasks(&t, LP_TASK_EXIT, child), 1);
		CHECK_EQ_U64(count_tasks(&t, LP_TASK_EXIT, parent), 1);
		for (size_t i = 0; i < t.nev; i++)
			if (t.ev[i].type == LP_EV_TASK && t.ev[i].op == LP_TASK_EXIT)
				CHECK_EQ_U64(t.ev[i].size, 0);
	}
	trace_free(&t);
}

/* mem_forkreuse: the parent allocates and frees after its fork, before the
 * child's first heap operation.  The child's FORK carries the time of the
 * fork: before the parent's operations after it, whose blocks are not the
 * child's. */
static void test_fork_time(void)
{
	struct trace t;
	uint32_t child = UINT32_MAX, parent = UINT32_MAX;
	const struct tev *fork_ev = NULL, *after = NULL, *first = NULL;

	if (!load(&t, "forkreuse", "--memory", "mem_forkreuse", NULL, 0))
		return;
	for (uint32_t s = 0; s < t.nstreams; s++) {
		if (t.streams[s].forked)
			child = s;
		else if (count_ops(&t, LP_MEM_MALLOC, 48, "before", s))
			parent = s;
	}
	if (!CHECK(child != UINT32_MAX && parent != UINT32_MAX)) {
		trace_free(&t);
		return;
	}
	CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 48, "before", parent), 4);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "before", parent), 1);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 32, "after", parent), 1);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "after", parent), 1);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "parent_end", parent), 4);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 32, "child_work", child), 1);
	CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "child_work", child), 2);
	CHECK_EQ_U64(count_ops(&t, 0, UINT64_MAX, NULL, child), 3);
	for (size_t i = 0; i < t.nev; i++) {
		const struct tev *e = &t.ev[i];

		if (e->stream == child && e->type == LP_EV_TASK && e->op == LP_TASK_FORK && !fork_ev)
			fork_ev = e;
		if (e->stream == child && e->type == LP_EV_ALLOC && !first)
			first = e;
		if (e->stream == parent && e->type == LP_EV_ALLOC && same_func(e->site, "after") && !after)
			after = e;
	}
	if (CHECK(fork_ev && after && first)) {
		if (!CHECK(fork_ev->ns < after->ns))
			printf("  FORK at %llu, the parent's first operation after the fork at %llu\n",
			       (unsigned long long)fork_ev->ns, (unsigned long long)after->ns);
		CHECK(first->ns > after->ns); /* the child waited for the parent */
	}
	trace_free(&t);
}

/* The heap operations of one process replayed in the trace's time order
 * against the set of live pointers: an allocation of a pointer that is
 * live, or a release of one that is not, means two threads' operations
 * came out of order (the program's own are all legal).  Returns how many. */
static uint64_t order_faults(const struct trace *t, uint32_t pid)
{
	uint64_t *set, bad = 0;
	size_t cap = 1u << 16, used = 0;

	for (size_t i = 0; i < t->nev; i++)
		used += t->ev[i].type == LP_EV_ALLOC;
	while (cap < 4 * used)
		cap *= 2;
	set = calloc(cap, sizeof(*set));
	if (!set)
		die("calloc");
	for (size_t i = 0; i < t->nev; i++) {
		const struct tev *e = &t->ev[i];
		bool release = e->op == LP_MEM_FREE || e->op == LP_MEM_DELETE || e->op == LP_MEM_DELETE_ARRAY;
		size_t k;

		if (e->type != LP_EV_ALLOC || t->streams[e->stream].pid != pid || !e->ptr || e->op == LP_MEM_REALLOC ||
		    e->op == LP_MEM_FOLD)
			continue;
		/* open addressing; a release leaves a tombstone (~0) */
		for (k = (e->ptr * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1); set[k] && set[k] != e->ptr;
		     k = (k + 1) & (cap - 1))
			;
		if (release) {
			if (set[k] == e->ptr)
				set[k] = ~0ull;
			else if (++bad <= 5)
				printf("  %llu: release of %#llx, not live\n", (unsigned long long)e->ns,
				       (unsigned long long)e->ptr);
		} else if (set[k] == e->ptr) {
			if (++bad <= 5)
				printf("  %llu: allocation of %#llx, live\n", (unsigned long long)e->ns,
				       (unsigned long long)e->ptr);
		} else {
			set[k] = e->ptr;
		}
	}
	free(set);
	return bad;
}

/* mem_churn3, again and again with both clocks: three threads hand each
 * other a million blocks through a shared pool and free them all.  In the
 * trace's time order every block is allocated before it is released and
 * released before its address is handed out again, and the process's EXIT
 * comes after the last event of every one of its threads (its main thread
 * made its last heap operation long before the others). */
static void test_churn_order(void)
{
	static const char *const opts[] = { "--memory", "--memory --clock monotonic" };

	for (int run = 0; run < 6; run++) {
		struct trace t;
		uint32_t pid = 0, exits = 0;
		uint64_t last = 0, exit_ns = 0;
		char name[32];

		snprintf(name, sizeof(name), "churn%d", run);
		if (!load(&t, name, opts[run % 2], "mem_churn3", NULL, 0))
			continue;
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 40, "churn_alloc", UINT32_MAX), 999999);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "churn_free", UINT32_MAX) +
		                 count_ops(&t, LP_MEM_FREE, 0, "pool_drain", UINT32_MAX),
		             999999);
		for (uint32_t s = 0; s < t.nstreams; s++)
			if (t.streams[s].pid == t.streams[s].tid)
				pid = t.streams[s].pid;
		for (size_t i = 0; i < t.nev; i++) {
			const struct tev *e = &t.ev[i];

			if (t.streams[e->stream].pid != pid)
				continue;
			if (e->type == LP_EV_TASK && e->op == LP_TASK_EXIT) {
				exits++;
				exit_ns = e->ns;
			} else if (e->ns > last) {
				last = e->ns;
			}
		}
		CHECK_EQ_U64(exits, 1);
		if (!CHECK(exit_ns >= last))
			printf("  %s: EXIT at %llu, %llu ns before the process's last event\n", name,
			       (unsigned long long)exit_ns, (unsigned long long)(last - exit_ns));
		CHECK_EQ_U64(order_faults(&t, pid), 0);
		trace_free(&t);
	}
}

static void test_forever(void)
{
	char dir[512], path[1200];
	struct trace t;
	int status = -1;
	pid_t pid;

	if (load(&t, "forever", "--memory", "mem_forever", "200", 0)) {
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 64, "grow", UINT32_MAX), 200);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 128, "churn", UINT32_MAX), 600);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "churn", UINT32_MAX), 600);
		trace_free(&t);
	}
	/* never ending: killed (record passes SIGTERM on), the trace holds
	 * every operation up to then */
	snprintf(dir, sizeof(dir), "%s/forever-killed", tmpdir);
	snprintf(path, sizeof(path), "%s/mem_forever", bindir);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 2);
		execl(layerprof, layerprof, "record", "-q", "--memory", "-o", dir, "--", path, (char *)NULL);
		_exit(127);
	}
	{
		struct timespec ts = { 0, 300000000 };

		nanosleep(&ts, NULL);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM);
	if (trace_load(&t, dir))
		return;
	check_sane(&t, "forever-killed");
	{
		uint64_t grown = count_ops(&t, LP_MEM_MALLOC, 64, "grow", UINT32_MAX);
		uint64_t made = count_ops(&t, LP_MEM_MALLOC, 128, "churn", UINT32_MAX);
		uint64_t freed = count_ops(&t, LP_MEM_FREE, 0, "churn", UINT32_MAX);

		printf("  forever-killed: %llu iterations\n", (unsigned long long)grown);
		CHECK(grown >= 10);
		/* killed in the middle of an iteration at most */
		CHECK(made >= 3 * (grown - 1) && made <= 3 * grown);
		CHECK(freed <= made && made - freed <= 3);
		CHECK_EQ_U64(unmatched_releases(&t), 0);
	}
	trace_free(&t);
}

/* Sums the FOLD events of a site: blocks and bytes. */
static void fold_sums(const struct trace *t, const char *site, uint64_t *count, uint64_t *bytes, uint64_t lifetime)
{
	*count = *bytes = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct tev *e = &t->ev[i];

		if (e->type != LP_EV_ALLOC || e->op != LP_MEM_FOLD || !same_func(e->site, site))
			continue;
		CHECK_EQ_U64(e->lifetime, lifetime);
		CHECK(e->count > 0);
		*count += e->count;
		*bytes += e->bytes;
	}
}

/* --mem-fold: short-lived blocks only counted, the others as before, every
 * block accounted for once. */
static void test_fold(void)
{
	uint64_t count, bytes, unfolded;
	struct trace t;

	if (load(&t, "fold", "--memory --mem-fold 1s", "mem_forever", "200", 0)) {
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 64, "grow", UINT32_MAX), 200);
		fold_sums(&t, "churn", &count, &bytes, 1000000000ull);
		unfolded = count_ops(&t, LP_MEM_MALLOC, 128, "churn", UINT32_MAX);
		CHECK_EQ_U64(count + unfolded, 600);
		CHECK_EQ_U64(bytes, 128 * count);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "churn", UINT32_MAX), unfolded);
		/* only the first round of a new call site goes out unfolded */
		CHECK(count >= 590);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FOLD, UINT64_MAX, "grow", UINT32_MAX), 0);
		CHECK_EQ_U64(unmatched_releases(&t), 0);
		trace_free(&t);
	}
	/* a lifetime no block lives within: nothing folded */
	if (load(&t, "fold-none", "--memory --mem-fold 1ns", "mem_forever", "50", 0)) {
		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 128, "churn", UINT32_MAX), 150);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FREE, 0, "churn", UINT32_MAX), 150);
		CHECK_EQ_U64(count_ops(&t, LP_MEM_FOLD, UINT64_MAX, NULL, UINT32_MAX), 0);
		trace_free(&t);
	}
	/* with function events: held back with the heap events, in time order */
	if (load(&t, "fold-instr", "--memory --mem-fold 1s", "mem_leaky_instr", NULL, 0)) {
		uint64_t entries = 0;

		CHECK_EQ_U64(count_ops(&t, LP_MEM_MALLOC, 48, "leaky", UINT32_MAX), 100);
		fold_sums(&t, "tidy", &count, &bytes, 1000000000ull);
		unfolded = count_ops(&t, LP_MEM_MALLOC, 24, "tidy", UINT32_MAX);
		CHECK_EQ_U64(count + unfolded, 50);
		CHECK(count >= 49);
		for (size_t i = 0; i < t.nev; i++)
			entries += t.ev[i].type == LP_EV_ENTRY && !strcmp(t.ev[i].func, "tidy");
		CHECK_EQ_U64(entries, 50);
		trace_free(&t);
	}
}

static int epoch_chunk(void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	return chunk_write_fd(*(int *)ctx, type, payload, (uint32_t)len);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Tracing turned off and on again (as the agent does): the stacks get new
 * ids, defined again before their first use after it. */
static void test_epoch(void)
{
	char session[600], dir[600], data[700], prog[1200], lib[2200];
	struct drain_config cfg = { .ring_chunks = 64, .chunk_slots = 4096, .clock = LP_CLOCK_MONOTONIC };
	struct drain_ops ops = { 0 };
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	uint64_t start, off_ms = 0, on_ms = 0;
	struct drain *d;
	struct trace t;
	int fd, status = -1;
	pid_t pid;

	snprintf(session, sizeof(session), "%s/epoch-session", tmpdir);
	snprintf(dir, sizeof(dir), "%s/epoch", tmpdir);
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(prog, sizeof(prog), "%s/mem_forever", bindir);
	snprintf(lib, sizeof(lib), "%s/../runtime/liblayerprof.so:%s/../runtime/liblayerprof-mem.so", bindir, bindir);
	if (mkdir(dir, 0700))
		die("mkdir");
	fd = open(data, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("open");
	trace_header_put(hdr);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		die("write");
	ops.ctx = &fd;
	ops.chunk = epoch_chunk;
	d = drain_new(session, &cfg, &ops);
	if (!CHECK(d != NULL))
		return;
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		setenv(LP_ENV_SESSION, session, 1);
		setenv("LD_PRELOAD", lib, 1);
		execl(prog, prog, "300", (char *)NULL);
		_exit(127);
	}
	start = ms_now();
	for (;;) {
		struct timespec ts = { 0, 2000000 };
		uint64_t now = ms_now() - start;

		drain_poll(d);
		if (!off_ms && now >= 80) {
			drain_set_enabled(d, false);
			off_ms = now;
		} else if (off_ms && !on_ms && now >= 160) {
			drain_set_enabled(d, true);
			on_ms = now;
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			drain_process_exited(d, pid, status);
			break;
		}
		if (now > RUN_TIMEOUT_S * 1000) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			CHECK(!"mem_forever 300 did not end");
			break;
		}
		nanosleep(&ts, NULL);
	}
	CHECK_EQ_U64(drain_finish(d), 0);
	drain_free(d);
	close(fd);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	printf("epoch: off at %llu ms, on at %llu ms\n", (unsigned long long)off_ms, (unsigned long long)on_ms);
	if (trace_load(&t, dir))
		return;
	check_sane(&t, "epoch");
	{
		uint64_t grown = count_ops(&t, LP_MEM_MALLOC, 64, "grow", UINT32_MAX);
		const struct tev *first = find_op(&t, LP_MEM_MALLOC, "grow", 0);
		const struct tev *last = find_op(&t, LP_MEM_MALLOC, "grow", grown ? grown - 1 : 0);

		/* some iterations ran untraced, on both sides some traced */
		CHECK(grown > 10 && grown < 290);
		if (CHECK(first && last)) {
			const struct tstack *a = stack_find(&t, first->stream, first->stack);
			const struct tstack *b = stack_find(&t, last->stream, last->stack);

			/* the same stack under a new id after tracing came back */
			CHECK(last->stack > first->stack);
			if (CHECK(a && b))
				CHECK(a->n == b->n && !memcmp(a->ips, b->ips, a->n * sizeof(a->ips[0])));
		}
	}
	trace_free(&t);
}

int main(int argc, char **argv)
{
	struct trace t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--dump")) {
		if (trace_load(&t, argv[2]))
			return 1;
		dump(&t);
		trace_free(&t);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: test_memtrace BUILD_DIR | --dump TRACE_DIR\n");
		return 2;
	}
	snprintf(bindir, sizeof(bindir), "%s/tests", argv[1]);
	snprintf(layerprof, sizeof(layerprof), "%s/host/layerprof", argv[1]);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lp-memtrace-XXXXXX");
	if (!mkdtemp(tmpdir))
		die("mkdtemp");
	test_leaky();
	test_wrap();
	test_badfree();
	test_realloc();
	test_cxx();
	test_threads();
	test_fork();
	test_fork_time();
	test_churn_order();
	test_forever();
	test_epoch();
	test_fold();
	if (!check_failed) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			printf("cannot remove %s\n", tmpdir);
	} else {
		printf("traces kept in %s\n", tmpdir);
	}
	return check_summary();
}
