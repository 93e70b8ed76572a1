/* Unit test of the syscall tracer's tracepoint backend: runs the sys_*
 * programs (their syscall counts are exact) under it and checks counts per
 * thread and process, return values, the filter, time order, enter/exit
 * pairing, stacks and the loss accounting of a tiny buffer.
 * usage: test_systrace_tracepoint DIR [--bench [N]]
 *        test_systrace_tracepoint --open-missing|--attach-target (children
 *        of test_path and test_attach)
 *   DIR: where the sys_* programs are built.  --bench (by hand, not in CI)
 *   times N getppid calls (default 500000) plain, under this backend and
 *   under `perf trace -s`, and prints ns per call. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "systrace/backend.h"
#include "tests/unit/check.h"

extern char **environ;

#define TEST_RECS_MAX 200000u  /* records kept per run (the lost case only counts) */
#define TEST_POLL_NS 200000L   /* poll interval while a short program runs */
#define BENCH_POLL_NS 1000000L /* the benchmark's poll interval: a recorder's rate */
#define MISSING_PATH "/nonexistent/layerprof-test"
#define OPEN_MISSING_STAY_NS 300000000L
#define ATTACH_MAIN_WRITES 5
#define ATTACH_THREAD_WRITES 10

/* The sanitizers' runtime makes syscalls of its own (it reads
 * /proc/self/maps, and LeakSanitizer stops the world from a task of its own
 * at exit): a sanitized build checks only the program's own calls. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

struct rec {
	uint8_t kind;
	uint16_t nips;
	uint32_t pid, tid, nr;
	uint64_t ns, ip0;
	int64_t ret;
	bool has_str;
	char str[SYSREC_STR_MAX + 1];
};

struct collect {
	bool keep; /* store the records, or only count them */
	struct rec *recs;
	size_t n, cap;
	uint64_t count, lost;
	unsigned lost_calls;
};

static const char *dir;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ru_ns(const struct rusage *ru)
{
	return ((uint64_t)ru->ru_utime.tv_sec + (uint64_t)ru->ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru->ru_utime.tv_usec + (uint64_t)ru->ru_stime.tv_usec) * 1000u;
}

static void on_sys(void *ctx, const struct sysrec *r)
{
	struct collect *c = ctx;
	struct rec *x;

	c->count++;
	if (!c->keep)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;
		struct rec *recs;

		if (cap > TEST_RECS_MAX)
			return;
		recs = realloc(c->recs, cap * sizeof(*recs));
		if (!recs)
			return;
		c->recs = recs;
		c->cap = cap;
	}
	x = &c->recs[c->n++];
	memset(x, 0, sizeof(*x));
	x->kind = r->kind;
	x->nips = r->nips;
	x->pid = r->pid;
	x->tid = r->tid;
	x->nr = r->nr;
	x->ns = r->ns;
	x->ret = r->ret;
	x->ip0 = r->nips ? r->ips[0] : 0;
	if (r->str) {
		x->has_str = true;
		memcpy(x->str, r->str, r->str_len < SYSREC_STR_MAX ? r->str_len : SYSREC_STR_MAX);
	}
}

static void on_lost(void *ctx, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct collect *c = ctx;

	c->lost += count;
	c->lost_calls++;
}

struct run {
	const char *filter;    /* syscall names, NULL: all */
	uint32_t buffer_pages; /* 0: the default */
	long poll_ns;          /* poll interval while running; 0: only at the end */
	const char *arg;       /* the program's argument, or NULL */
	/* results */
	pid_t pid;
	int status;
	uint64_t t0, t1; /* before the spawn, after the wait */
	uint64_t cpu_ns; /* the program's user and system time */
	struct systrace_stats stats;
};

/* Runs argv under the tracepoint backend, collecting into c. */
static bool run_argv(char *const argv[], struct run *run, struct collect *c)
{
	char why[256], err[256];
	struct systrace_ops ops = { c, on_sys, on_lost };
	struct systrace_config cfg;
	struct systrace *st;
	struct rusage ru;
	pid_t w;

	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = SYSTRACE_TRACEPOINT;
	cfg.buffer_pages = run->buffer_pages;
	if (run->filter) {
		if (!CHECK(sys_set_parse(&cfg.filter, sys_arch_native(), run->filter, err, sizeof(err)) == 0))
			return false;
	} else {
		sys_set_all(&cfg.filter);
	}
	run->t0 = now_ns();
	st = systrace_spawn(argv, environ, &cfg, &ops, &run->pid, why, sizeof(why), err, sizeof(err));
	if (!CHECK(st != NULL)) {
		printf("  %s: %s\n", argv[0], err);
		return false;
	}
	CHECK(systrace_backend(st) == SYSTRACE_TRACEPOINT);
	for (;;) {
		struct timespec pause = { 0, run->poll_ns ? run->poll_ns : TEST_POLL_NS };

		w = wait4(run->pid, &run->status, WNOHANG, &ru);
		if (w != 0)
			break;
		if (run->poll_ns)
			CHECK(systrace_poll(st) >= 0);
		nanosleep(&pause, NULL);
	}
	run->t1 = now_ns();
	run->cpu_ns = ru_ns(&ru);
	CHECK_EQ_U64(w, run->pid);
	while (systrace_poll(st) > 0)
		;
	CHECK(!systrace_exited(st, &run->status));
	systrace_free(st);
	/* systrace_free hands out the rest; the stats are the callbacks' sums */
	run->stats.records = c->count;
	run->stats.lost = c->lost;
	CHECK(WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0);
	return true;
}

/* Runs DIR/prog with run->arg. */
static bool run_prog(const char *prog, struct run *run, struct collect *c)
{
	char path[4096];
	char *argv[] = { path, (char *)run->arg, NULL };

	snprintf(path, sizeof(path), "%s/%s", dir, prog);
	return run_argv(argv, run, c);
}

/* Is nr a call whose exit comes first in a new task: the exec that
 * enabled the events, or the fork or clone that created the task. */
static bool starts_task(uint32_t nr)
{
	switch (nr) {
	case SYS_execve:
	case SYS_clone:
#ifdef SYS_clone3
	case SYS_clone3:
#endif
#ifdef SYS_fork
	case SYS_fork:
	case SYS_vfork:
#endif
		return true;
	default:
		return false;
	}
}

/* Does nr end without an exit record: the task's end, or a signal
 * return (the kernel clears its number, and the backend drops a record
 * without one). */
static bool no_exit(uint32_t nr)
{
	switch (nr) {
	case SYS_exit:
	case SYS_exit_group:
	case SYS_rt_sigreturn:
#ifdef SYS_sigreturn
	case SYS_sigreturn:
#endif
		return true;
	default:
		return false;
	}
}

/* Checks that hold for every run: times within the run, per thread
 * non-decreasing, entries and exits pairing up, a user stack on every
 * entry. */
static void check_common(const struct run *run, const struct collect *c)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct rec *r = &c->recs[i];
		const struct rec *prev = NULL;

		if (!CHECK(r->ns >= run->t0 && r->ns <= run->t1))
			printf("  record %zu: ns %llu outside [%llu, %llu]\n", i, (unsigned long long)r->ns,
			       (unsigned long long)run->t0, (unsigned long long)run->t1);
		if (r->kind == SYSREC_ENTER && !CHECK(r->nips >= 1 && r->ip0 != 0))
			printf("  record %zu: no user stack\n", i);
		for (size_t j = i; j-- > 0;)
			if (c->recs[j].tid == r->tid) {
				prev = &c->recs[j];
				break;
			}
		if (prev)
			CHECK(prev->ns <= r->ns);
		if (r->kind == SYSREC_EXIT) {
			bool ok = prev ? prev->kind == SYSREC_ENTER && prev->nr == r->nr : starts_task(r->nr);

			if (!CHECK(ok))
				printf("  record %zu: exit of %u on tid %u without its entry\n", i, r->nr, r->tid);
		} else if (prev && !CHECK(prev->kind == SYSREC_EXIT || no_exit(prev->nr))) {
			printf("  record %zu: entry of %u on tid %u follows entry of %u\n", i, r->nr, r->tid, prev->nr);
		}
	}
	/* a thread's last entry without an exit can only be its end */
	for (size_t i = 0; i < c->n; i++) {
		const struct rec *r = &c->recs[i];
		bool last = true;

		for (size_t j = i + 1; j < c->n && last; j++)
			last = c->recs[j].tid != r->tid;
		if (last && r->kind == SYSREC_ENTER)
			CHECK(no_exit(r->nr));
	}
}

static unsigned count_of(const struct collect *c, uint8_t kind, uint32_t nr, uint32_t tid, uint32_t pid)
{
	unsigned n = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct rec *r = &c->recs[i];

		if (r->kind == kind && r->nr == nr && (!tid || r->tid == tid) && (!pid || r->pid == pid))
			n++;
	}
	return n;
}

static void collect_free(struct collect *c)
{
	free(c->recs);
	memset(c, 0, sizeof(*c));
}

static void test_writer(void)
{
	struct run run = { .poll_ns = TEST_POLL_NS / 4 };
	struct collect c = { .keep = true };
	const struct rec *open_enter = NULL, *open_exit = NULL;
	unsigned exits_1024 = 0;

	if (!run_prog("sys_writer", &run, &c))
		goto out;
	check_common(&run, &c);
	CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_write, run.pid, run.pid), 100);
	CHECK_EQ_U64(count_of(&c, SYSREC_EXIT, SYS_write, run.pid, run.pid), 100);
	CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_write, 0, 0), 100); /* one tid only */
	for (size_t i = 0; i < c.n; i++) {
		const struct rec *r = &c.recs[i];

		if (r->kind == SYSREC_EXIT && r->nr == SYS_write && r->ret == 1024)
			exits_1024++;
		/* the program's last openat is the missing path */
		if (r->nr == SYS_openat && r->kind == SYSREC_ENTER)
			open_enter = r;
		if (r->nr == SYS_openat && r->kind == SYSREC_EXIT)
			open_exit = r;
	}
	CHECK_EQ_U64(exits_1024, 100);
	if (CHECK(open_enter && open_exit)) {
		CHECK_EQ_U64(open_exit->ret, -ENOENT);
		CHECK(open_exit->ns >= open_enter->ns);
		if (open_enter->has_str)
			CHECK_STR(open_enter->str, MISSING_PATH);
		printf("sys_writer: the openat path was %s\n",
		       open_enter->has_str ? "read" : "not read (the program had ended)");
	}
	CHECK_EQ_U64(run.stats.lost, 0);
out:
	collect_free(&c);
}

/* The child of test_path: opens the missing path, then stays a while so
 * that the poll finds the process (and the path's memory) still there. */
static int open_missing(void)
{
	struct timespec pause = { 0, OPEN_MISSING_STAY_NS };
	int fd = open(MISSING_PATH, O_RDONLY);

	nanosleep(&pause, NULL);
	return fd < 0 && errno == ENOENT ? 0 : 1;
}

/* A path the backend reads: sys_writer's program ends right after its
 * open, too soon for a poll, so this test runs its own child, which stays
 * (the path is read when the poll comes, not when the call starts). */
static void test_path(void)
{
	char self[4096];
	char *argv[] = { self, "--open-missing", NULL };
	struct run run = { .poll_ns = TEST_POLL_NS };
	struct collect c = { .keep = true };
	const struct rec *found = NULL, *done = NULL;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (!CHECK(n > 0))
		return;
	self[n] = '\0';
	if (!run_argv(argv, &run, &c))
		goto out;
	check_common(&run, &c);
	for (size_t i = 0; i < c.n && !found; i++)
		if (c.recs[i].kind == SYSREC_ENTER && c.recs[i].nr == SYS_openat && c.recs[i].has_str &&
		    !strcmp(c.recs[i].str, MISSING_PATH))
			found = &c.recs[i];
	if (!CHECK(found))
		goto out;
	for (const struct rec *r = found + 1; r < c.recs + c.n && !done; r++)
		if (r->tid == found->tid)
			done = r;
	CHECK(done && done->kind == SYSREC_EXIT && done->nr == SYS_openat && done->ret == -ENOENT);
out:
	collect_free(&c);
}

static void test_threads(void)
{
	struct run run = { .poll_ns = TEST_POLL_NS };
	struct collect c = { .keep = true };
	uint32_t tids[8];
	unsigned ntids = 0, with_reads = 0;

	if (!run_prog("sys_threads", &run, &c))
		goto out;
	check_common(&run, &c);
	/* the program's threads in order of their first record */
	for (size_t i = 0; i < c.n; i++) {
		uint32_t tid = c.recs[i].tid;
		unsigned k = 0;

		if (c.recs[i].pid != (uint32_t)run.pid || tid == (uint32_t)run.pid)
			continue;
		while (k < ntids && tids[k] != tid)
			k++;
		if (k == ntids && ntids < 8)
			tids[ntids++] = tid;
	}
	/* thread A reads 30 times and starts first, B reads 50 times */
	for (unsigned k = 0; k < ntids; k++) {
		unsigned enters = count_of(&c, SYSREC_ENTER, SYS_read, tids[k], run.pid);

		CHECK_EQ_U64(count_of(&c, SYSREC_EXIT, SYS_read, tids[k], run.pid), enters);
		if (!enters)
			continue;
		CHECK_EQ_U64(enters, with_reads ? 50 : 30);
		with_reads++;
	}
	CHECK_EQ_U64(with_reads, 2);
	if (!SANITIZED) {
		CHECK_EQ_U64(ntids, 2);
		/* main: ld.so reads libc's ELF header once, the program never */
		CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_read, run.pid, run.pid), 1);
		CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_read, 0, 0), 81);
	}
out:
	collect_free(&c);
}

static void test_fork(void)
{
	struct run run = { .poll_ns = TEST_POLL_NS };
	struct collect c = { .keep = true };
	uint32_t child = 0;
	unsigned others = 0, writers = 0;

	if (!run_prog("sys_fork", &run, &c))
		goto out;
	check_common(&run, &c);
	/* the other processes: the forked child, the one that writes */
	for (size_t i = 0; i < c.n; i++) {
		uint32_t pid = c.recs[i].pid;
		bool seen = false;

		if (pid == (uint32_t)run.pid)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = c.recs[j].pid == pid;
		if (seen)
			continue;
		others++;
		if (count_of(&c, SYSREC_ENTER, SYS_write, 0, pid)) {
			writers++;
			child = pid;
		}
	}
	CHECK_EQ_U64(writers, 1);
	if (!SANITIZED)
		CHECK_EQ_U64(others, 1);
	CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_write, child, child), 7);
	CHECK_EQ_U64(count_of(&c, SYSREC_EXIT, SYS_write, child, child), 7);
	CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_write, run.pid, run.pid), 3);
	CHECK_EQ_U64(count_of(&c, SYSREC_EXIT, SYS_write, run.pid, run.pid), 3);
out:
	collect_free(&c);
}

/* The child of test_attach: waits for a byte on stdin (the test attaches
 * meanwhile), then writes ATTACH_MAIN_WRITES times to /dev/null and starts
 * a thread that writes ATTACH_THREAD_WRITES times. */
static void *attach_thread(void *arg)
{
	int fd = *(int *)arg;

	for (int i = 0; i < ATTACH_THREAD_WRITES; i++)
		if (write(fd, "x", 1) != 1)
			return arg;
	return NULL;
}

static int attach_target(void)
{
	int fd = open("/dev/null", O_WRONLY), bad = 0;
	pthread_t t;
	void *res;
	char go;

	if (fd < 0 || read(0, &go, 1) != 1)
		return 2;
	for (int i = 0; i < ATTACH_MAIN_WRITES; i++)
		bad += write(fd, "x", 1) != 1;
	if (pthread_create(&t, NULL, attach_thread, &fd) || pthread_join(t, &res))
		return 2;
	return bad || res ? 1 : 0;
}

/* Attaching to a running process: its calls from then on, and those of the
 * thread it starts afterwards. */
static void test_attach(void)
{
	char self[4096], why[256], err[256];
	struct collect c = { .keep = true };
	struct systrace_ops ops = { &c, on_sys, on_lost };
	struct systrace_config cfg;
	struct systrace *st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int go[2], status = -1;
	uint32_t thread = 0;
	pid_t pid;

	if (!CHECK(n > 0 && pipe(go) == 0))
		return;
	self[n] = '\0';
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		dup2(go[0], 0);
		execl(self, self, "--attach-target", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = SYSTRACE_TRACEPOINT;
	sys_set_all(&cfg.filter);
	/* let the child reach its read: attaching to the exec itself works too,
	 * but then the calls counted below would include ld.so's */
	nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
	st = systrace_attach(pid, &cfg, &ops, why, sizeof(why), err, sizeof(err));
	if (!CHECK(st != NULL))
		printf("  attach: %s\n", err);
	CHECK(write(go[1], "g", 1) == 1);
	close(go[1]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!st)
		goto out;
	while (systrace_poll(st) > 0)
		;
	systrace_free(st);
	for (size_t i = 0; i < c.n; i++) {
		if (!SANITIZED)
			CHECK_EQ_U64(c.recs[i].pid, pid);
		if (c.recs[i].pid == (uint32_t)pid && c.recs[i].tid != (uint32_t)pid)
			thread = c.recs[i].tid;
	}
	CHECK(thread != 0);
	CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_write, pid, pid), ATTACH_MAIN_WRITES);
	CHECK_EQ_U64(count_of(&c, SYSREC_EXIT, SYS_write, pid, pid), ATTACH_MAIN_WRITES);
	CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_write, thread, pid), ATTACH_THREAD_WRITES);
	CHECK_EQ_U64(count_of(&c, SYSREC_EXIT, SYS_write, thread, pid), ATTACH_THREAD_WRITES);
	/* attached in the middle of the read: its exit comes without the entry */
	if (CHECK(c.n > 0)) {
		CHECK_EQ_U64(c.recs[0].kind, SYSREC_EXIT);
		CHECK_EQ_U64(c.recs[0].nr, SYS_read);
		CHECK_EQ_U64(c.recs[0].ret, 1);
	}
out:
	collect_free(&c);
}

static void test_filter(void)
{
	struct run run = { .filter = "write", .poll_ns = TEST_POLL_NS };
	struct collect c = { .keep = true };

	if (!run_prog("sys_writer", &run, &c))
		goto out;
	check_common(&run, &c);
	CHECK_EQ_U64(c.n, 200);
	CHECK_EQ_U64(count_of(&c, SYSREC_ENTER, SYS_write, run.pid, run.pid), 100);
	CHECK_EQ_U64(count_of(&c, SYSREC_EXIT, SYS_write, run.pid, run.pid), 100);
out:
	collect_free(&c);
}

/* The smallest ring (one data page), read only at the end: nearly every
 * record is lost, and each one is counted. */
static void test_lost(void)
{
	struct run run = { .buffer_pages = 1, .arg = "200000" };
	struct collect c = { .keep = false };

	if (!run_prog("sys_getppid", &run, &c))
		return;
	CHECK(c.lost_calls > 0);
	CHECK(c.lost > 0);
	if (!CHECK(c.count + c.lost >= 400000))
		printf("  records %llu + lost %llu\n", (unsigned long long)c.count, (unsigned long long)c.lost);
}

/* Runs argv; *wall and *cpu receive its wall time and its CPU time
 * (with its reaped children's).  Returns false if it failed. */
static bool bench_cmd(char *const argv[], uint64_t *wall, uint64_t *cpu)
{
	uint64_t t0 = now_ns();
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return false;
	*wall = now_ns() - t0;
	*cpu = ru_ns(&ru);
	return true;
}

/* ns per call of n calls: the total and the part above the plain run. */
static void bench_line(const char *what, uint64_t ns, uint64_t base, long n)
{
	printf("  %-28s %8.1f ns/call (+%.1f)\n", what, (double)ns / (double)n,
	       ((double)ns - (double)base) / (double)n);
}

/* Wall time includes waiting for the two shared CPUs; CPU time is the
 * traced program's own (perf's includes perf's, its parent). */
static int bench(long n)
{
	char path[4096], count[32];
	char *plain[] = { path, count, NULL };
	char *perf[] = { "perf", "trace", "-s", "-o", "/dev/null", "--", path, count, NULL };
	struct run run = { .poll_ns = BENCH_POLL_NS, .arg = count };
	struct collect c = { .keep = false };
	uint64_t wall, cpu, perf_wall, perf_cpu;

	snprintf(path, sizeof(path), "%s/sys_getppid", dir);
	snprintf(count, sizeof(count), "%ld", n);
	if (!bench_cmd(plain, &wall, &cpu) || !run_prog("sys_getppid", &run, &c))
		return 1;
	printf("getppid x %ld, polling every %ld us\n", n, BENCH_POLL_NS / 1000);
	bench_line("plain, wall", wall, wall, n);
	bench_line("plain, cpu", cpu, cpu, n);
	bench_line("tracepoint backend, wall", run.t1 - run.t0, wall, n);
	bench_line("tracepoint backend, cpu", run.cpu_ns, cpu, n);
	printf("  (%llu records, %llu lost)\n", (unsigned long long)c.count, (unsigned long long)c.lost);
	if (bench_cmd(perf, &perf_wall, &perf_cpu)) {
		bench_line("perf trace -s, wall", perf_wall, wall, n);
		bench_line("perf trace -s, cpu (+perf)", perf_cpu, cpu, n);
	} else {
		printf("  perf trace -s did not run\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[256];
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: test_systrace_tracepoint DIR [--bench [N]]\n");
		return 2;
	}
	if (!strcmp(argv[1], "--open-missing"))
		return open_missing();
	if (!strcmp(argv[1], "--attach-target"))
		return attach_target();
	dir = argv[1];
	r = tp_probe(err, sizeof(err));
	if (r) {
		printf("skipped: the tracepoint backend is not available here: %s\n", err);
		return 77;
	}
	if (argc > 2 && !strcmp(argv[2], "--bench"))
		return bench(argc > 3 ? atol(argv[3]) : 500000);
	test_writer();
	test_path();
	test_threads();
	test_fork();
	test_attach();
	test_filter();
	test_lost();
	return check_summary();
}
