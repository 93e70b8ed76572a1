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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "systrace/backend.h"
#include "tests/unit/check.h"
#include "tests/unit/systrace_check.h"

#define TEST_POLL_NS 200000L   /* poll interval while a short program runs */
#define BENCH_POLL_NS 1000000L /* the benchmark's poll interval: a recorder's rate */
#define OPEN_MISSING_STAY_NS 300000000L

/* Runs r under the tracepoint backend, tracing `filter` (NULL: every
 * syscall) through buffers of buffer_pages (0: the default), and checks
 * that it exited with 0 and that its records are in order. */
static bool run_tp(struct stc_run *r, const char *filter, uint32_t buffer_pages)
{
	struct systrace_config cfg;

	stc_config(&cfg, SYSTRACE_TRACEPOINT, filter);
	cfg.buffer_pages = buffer_pages;
	if (!stc_run(&cfg, r) || !CHECK(stc_exited_zero(r->status)))
		return false;
	if (!r->log.count_only)
		stc_check_order(&r->log, r, 0);
	return true;
}

/* sys_writer, every syscall traced.  The path of its failing openat is
 * read when the poll comes, and the program may have ended by then. */
static void test_writer(void)
{
	static const char *const names[] = { "openat", NULL };
	struct stc_run r = { .prog = "sys_writer", .poll_ns = TEST_POLL_NS / 4 };
	struct stc_tally t;

	if (run_tp(&r, NULL, 0)) {
		stc_expect_writer(&r);
		CHECK_EQ_U64(r.log.lost, 0);
		stc_tally(&r.log, names, &t);
		printf("sys_writer: the openat path was %s\n",
		       t.fail_has_path ? "read" : "not read (the program had ended)");
	}
	stc_run_free(&r);
}

/* The child of test_path: opens the missing path, then stays a while so
 * that the poll finds the process (and the path's memory) still there. */
static int open_missing(void)
{
	struct timespec pause = { 0, OPEN_MISSING_STAY_NS };
	int fd = open(STC_MISSING_PATH, O_RDONLY);

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
	struct stc_run r = { .argv = argv, .poll_ns = TEST_POLL_NS };
	const struct stc_rec *found = NULL, *done = NULL;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (!CHECK(n > 0))
		return;
	self[n] = '\0';
	if (!run_tp(&r, NULL, 0))
		goto out;
	for (size_t i = 0; i < r.log.n && !found; i++)
		if (r.log.v[i].kind == SYSREC_ENTER && r.log.v[i].nr == SYS_openat && r.log.v[i].has_str &&
		    !strcmp(r.log.v[i].str, STC_MISSING_PATH))
			found = &r.log.v[i];
	if (!CHECK(found))
		goto out;
	for (const struct stc_rec *e = found + 1; e < r.log.v + r.log.n && !done; e++)
		if (e->tid == found->tid)
			done = e;
	CHECK(done && done->kind == SYSREC_EXIT && done->nr == SYS_openat && done->ret == -ENOENT);
out:
	stc_run_free(&r);
}

/* sys_threads, every syscall traced: a thread's first record is the exit
 * of the clone that made it, so thread A, which starts first, comes first. */
static void test_threads(void)
{
	static const char *const names[] = { "read", NULL };
	struct stc_run r = { .prog = "sys_threads", .poll_ns = TEST_POLL_NS };
	struct stc_tally t;

	if (run_tp(&r, NULL, 0)) {
		stc_expect_threads(&r);
		stc_tally(&r.log, names, &t);
		for (size_t i = 0; i < t.ntasks; i++) {
			if (t.tasks[i].pid == (uint32_t)r.pid && t.tasks[i].tid != (uint32_t)r.pid &&
			    t.tasks[i].enters[0]) {
				CHECK_EQ_U64(t.tasks[i].enters[0], 30);
				break;
			}
		}
	}
	stc_run_free(&r);
}

static void test_fork(void)
{
	struct stc_run r = { .prog = "sys_fork", .poll_ns = TEST_POLL_NS };

	if (run_tp(&r, NULL, 0))
		stc_expect_fork(&r);
	stc_run_free(&r);
}

/* Whether the kernel is a 32-bit ARM one (uname's machine armv*). */
static bool kernel_is_arm32(void)
{
	struct utsname u;

	return uname(&u) == 0 && !strncmp(u.machine, "armv", 4);
}

/* Attaching to a running process: its calls from then on, and those of the
 * thread it starts afterwards. */
static void test_attach(void)
{
	struct stc_log log = { 0 };
	pid_t pid = stc_attach_run(SYSTRACE_TRACEPOINT, &log);

	if (pid) {
		stc_expect_attach(&log, pid);
		/* attached in the middle of the read: its exit comes without the
		 * entry; a 32-bit ARM kernel writes no exit record for a call
		 * entered before tracing began, so there the write that follows
		 * comes first */
		if (CHECK(log.n > 0) && !kernel_is_arm32()) {
			CHECK_EQ_U64(log.v[0].kind, SYSREC_EXIT);
			CHECK_EQ_U64(log.v[0].nr, SYS_read);
			CHECK_EQ_U64(log.v[0].ret, 1);
		} else if (log.n > 0) {
			CHECK_EQ_U64(log.v[0].kind, SYSREC_ENTER);
			CHECK_EQ_U64(log.v[0].nr, SYS_write);
		}
	}
	stc_log_free(&log);
}

static void test_filter(void)
{
	struct stc_run r = { .prog = "sys_writer", .poll_ns = TEST_POLL_NS };

	if (run_tp(&r, "write", 0)) {
		stc_expect_only(&r, "write", 200);
		CHECK_EQ_U64(stc_log_count(&r.log, SYSREC_ENTER, SYS_write, r.pid, r.pid), 100);
		CHECK_EQ_U64(stc_log_count(&r.log, SYSREC_EXIT, SYS_write, r.pid, r.pid), 100);
	}
	stc_run_free(&r);
}

/* The smallest ring (one data page), read only at the end: nearly every
 * record is lost, and each one is counted. */
static void test_lost(void)
{
	struct stc_run r = { .prog = "sys_getppid", .arg = "200000", .no_poll = true, .log.count_only = true };

	if (run_tp(&r, NULL, 1)) {
		CHECK(r.log.lost_calls > 0);
		CHECK(r.log.lost > 0);
		if (!CHECK(r.log.count + r.log.lost >= 400000))
			printf("  records %llu + lost %llu\n", (unsigned long long)r.log.count,
			       (unsigned long long)r.log.lost);
	}
	stc_run_free(&r);
}

/* Runs argv; *wall and *cpu receive its wall time and its CPU time
 * (with its reaped children's).  Returns false if it failed. */
static bool bench_cmd(char *const argv[], uint64_t *wall, uint64_t *cpu)
{
	uint64_t t0 = stc_now_ns();
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
	*wall = stc_now_ns() - t0;
	*cpu = stc_ru_ns(&ru);
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
	struct stc_run run = { .prog = "sys_getppid", .arg = count, .poll_ns = BENCH_POLL_NS, .log.count_only = true };
	uint64_t wall, cpu, perf_wall, perf_cpu;

	snprintf(path, sizeof(path), "%s/sys_getppid", stc_bindir);
	snprintf(count, sizeof(count), "%ld", n);
	if (!bench_cmd(plain, &wall, &cpu) || !run_tp(&run, NULL, 0))
		return 1;
	printf("getppid x %ld, polling every %ld us\n", n, BENCH_POLL_NS / 1000);
	bench_line("plain, wall", wall, wall, n);
	bench_line("plain, cpu", cpu, cpu, n);
	bench_line("tracepoint backend, wall", run.t1 - run.t0, wall, n);
	bench_line("tracepoint backend, cpu", run.cpu_ns, cpu, n);
	printf("  (%llu records, %llu lost)\n", (unsigned long long)run.log.count, (unsigned long long)run.log.lost);
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
		return stc_attach_target();
	stc_bindir = argv[1];
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
