/* Unit test of the syscall tracer's eBPF backend: runs the sys_* programs
 * (their syscall counts are exact) under it, through the BPF ring buffer
 * and through the per-CPU perf rings older kernels get, and checks counts
 * per thread and process, paths read at entry, the spawned program's exec,
 * calls a thread never returned from, attach, the filter and the loss
 * accounting of a tiny buffer.
 * usage: test_systrace_bpf DIR
 *        test_systrace_bpf --attach-target (the child of test_attach)
 *   DIR: where the sys_* programs are built. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "systrace/backend.h"
#include "systrace/ebpf_impl.h"
#include "tests/unit/check.h"
#include "tests/unit/systrace_check.h"

#define TEST_POLL_NS 200000L

/* Runs r under the bpf backend (per_cpu: through per-CPU perf rings),
 * tracing `filter` (NULL: every syscall) with buffers of buffer_pages (0:
 * the default), and checks that it exited with 0 and that its records are
 * in order. */
static bool run_bpf(struct stc_run *r, const char *filter, uint32_t buffer_pages, bool per_cpu)
{
	struct systrace_config cfg;

	stc_config(&cfg, SYSTRACE_BPF, filter);
	cfg.buffer_pages = buffer_pages;
	cfg.bpf_per_cpu = per_cpu;
	if (!stc_run(&cfg, r) || !CHECK(stc_exited_zero(r->status)))
		return false;
	if (!r->log.count_only)
		stc_check_order(&r->log, r, 0);
	return true;
}

/* sys_writer: exact counts, and the failing openat's path, read at entry
 * (the program has ended long before any poll could read it). */
static void test_writer(bool per_cpu)
{
	static const char *const names[] = { "openat", "execve", NULL };
	struct stc_run r = { .prog = "sys_writer", .no_poll = true };
	struct stc_tally t;
	size_t first = SIZE_MAX;

	printf("sys_writer, %s\n", per_cpu ? "per-CPU perf rings" : "ring buffer");
	if (!run_bpf(&r, NULL, 0, per_cpu))
		goto out;
	stc_expect_writer(&r);
	CHECK_EQ_U64(r.log.lost, 0);
	stc_tally(&r.log, names, &t);
	if (CHECK(t.fail_has_path))
		CHECK_STR(t.fail_path, STC_MISSING_PATH);
	/* the program's exec, and nothing of the tracer's child before it */
	CHECK_EQ_U64(stc_tally_enters(&t, (uint32_t)r.pid, "execve"), 1);
	CHECK_EQ_U64(stc_tally_exits(&t, (uint32_t)r.pid, "execve"), 1);
	for (size_t i = 0; i < r.log.n && first == SIZE_MAX; i++)
		if (r.log.v[i].tid == (uint32_t)r.pid)
			first = i;
	if (CHECK(first != SIZE_MAX)) {
		CHECK_EQ_U64(r.log.v[first].kind, SYSREC_ENTER);
		CHECK_EQ_U64(r.log.v[first].nr, stc_nr("execve"));
	}
	/* exit_group never returns: its entry is written when the thread ends */
	CHECK_EQ_U64(stc_log_count(&r.log, SYSREC_ENTER, stc_nr("exit_group"), (uint32_t)r.pid, (uint32_t)r.pid), 1);
	CHECK_EQ_U64(stc_log_count(&r.log, SYSREC_EXIT, stc_nr("exit_group"), (uint32_t)r.pid, (uint32_t)r.pid), 0);
out:
	stc_run_free(&r);
}

static void test_threads(void)
{
	struct stc_run r = { .prog = "sys_threads", .poll_ns = TEST_POLL_NS };

	if (run_bpf(&r, NULL, 0, false))
		stc_expect_threads(&r);
	stc_run_free(&r);
}

static void test_fork(bool per_cpu)
{
	struct stc_run r = { .prog = "sys_fork", .poll_ns = TEST_POLL_NS };

	if (run_bpf(&r, NULL, 0, per_cpu))
		stc_expect_fork(&r);
	stc_run_free(&r);
}

static void test_filter(void)
{
	struct stc_run r = { .prog = "sys_writer", .poll_ns = TEST_POLL_NS };

	if (run_bpf(&r, "write", 0, false)) {
		stc_expect_only(&r, "write", 200);
		CHECK_EQ_U64(stc_log_count(&r.log, SYSREC_ENTER, SYS_write, r.pid, r.pid), 100);
		CHECK_EQ_U64(stc_log_count(&r.log, SYSREC_EXIT, SYS_write, r.pid, r.pid), 100);
	}
	stc_run_free(&r);
}

/* The smallest buffers, read only at the end: most calls are lost, each
 * counted as its entry and exit. */
static void test_lost(bool per_cpu)
{
	struct stc_run r = { .prog = "sys_getppid", .arg = "200000", .no_poll = true, .log.count_only = true };

	if (run_bpf(&r, NULL, 1, per_cpu)) {
		CHECK(r.log.lost_calls > 0);
		CHECK(r.log.lost > 0 && r.log.lost % 2 == 0);
		if (!CHECK(r.log.count + r.log.lost >= 400000))
			printf("  records %llu + lost %llu\n", (unsigned long long)r.log.count,
			       (unsigned long long)r.log.lost);
	}
	stc_run_free(&r);
}

/* A backlog larger than one poll's share: the first poll after the end
 * hands EB_POLL_CALLS records (a call's entry and exit each) and says records
 * are left; the polls after it hand the rest, the last leaving none. */
static void test_backlog(void)
{
	struct stc_run r = { .prog = "sys_getppid", .arg = "30000", .no_poll = true, .log.count_only = true };

	printf("a backlog of 30000 calls\n");
	if (run_bpf(&r, "getppid", 0, false)) {
		/* (a sanitizer's runtime makes a getppid call or two of its own) */
		CHECK_EQ_U64(r.log.lost, 0);
		CHECK(r.log.count >= 60000 && r.log.count <= 60008);
		CHECK_EQ_U64(r.end_polls, r.log.count / 2 / EB_POLL_CALLS + 1);
		/* the share may begin with the program's exec, which the
		 * tracer takes to know the program started, and the filter
		 * then leaves out */
		CHECK(r.end_first == 2 * EB_POLL_CALLS || r.end_first == 2 * (EB_POLL_CALLS - 1));
		CHECK(r.end_backlog_first);
		CHECK(!r.end_backlog_last);
	}
	stc_run_free(&r);
}

/* Attaching to a running process: its calls from then on, and those of the
 * thread it starts afterwards. */
static void test_attach(void)
{
	struct stc_log log = { 0 };
	pid_t pid = stc_attach_run(SYSTRACE_BPF, &log);

	if (pid) {
		stc_expect_attach(&log, pid);
		/* the read it was blocked in began before: not seen at all */
		CHECK_EQ_U64(stc_log_count(&log, SYSREC_EXIT, SYS_read, pid, pid), 0);
		stc_check_order(&log, NULL, STC_ORDER_FROM_ENTRY);
	}
	stc_log_free(&log);
}

int main(int argc, char **argv)
{
	char why[256];

	if (argc == 2 && !strcmp(argv[1], "--attach-target"))
		return stc_attach_target();
	if (argc != 2) {
		fprintf(stderr, "usage: test_systrace_bpf DIR\n");
		return 2;
	}
	stc_bindir = argv[1];
	if (eb_probe(why, sizeof(why))) {
		printf("skipped: the bpf backend does not work here: %s\n", why);
		return 77;
	}
	test_writer(false);
	test_writer(true);
	test_threads();
	test_fork(false);
	test_fork(true);
	test_filter();
	test_lost(false);
	test_lost(true);
	test_backlog();
	test_attach();
	return check_summary();
}
