/* Unit test of the ptrace syscall backend: runs the sys_* programs under it,
 * with and without the seccomp filter, and checks exact syscall counts per
 * thread and process, copied paths, return values, the pairing of entries
 * and exits, exit statuses, and what releasing a running tree leaves
 * behind (killed, or running and not stopped).
 *
 * usage: test_systrace_ptrace BUILD_DIR
 *        test_systrace_ptrace BUILD_DIR --bench [N [RUNS]]   (by hand, not
 *        in CI: ns per getppid call plain, under this backend, under strace)
 *        test_systrace_ptrace BUILD_DIR --count[-keep] FILTER PROG [ARG...]
 *        (by hand: calls and errors per syscall, to hold against strace -f -c) */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "systrace/backend.h"
#include "tests/unit/check.h"
#include "tests/unit/systrace_check.h"

#define MS 1000000L

static void config(struct systrace_config *cfg, const char *filter, bool keep_running)
{
	stc_config(cfg, SYSTRACE_PTRACE, filter);
	cfg->keep_running = keep_running;
}

/* Runs a sys_* program to its end under the tracer and checks what this
 * backend promises of every run: a stop for each record, nothing lost (the
 * caller polls), and each thread's records start with an entry. */
static bool run(const char *prog, const char *arg, const char *filter, bool keep_running, struct stc_run *r)
{
	struct systrace_config cfg;

	config(&cfg, filter, keep_running);
	r->prog = prog;
	r->arg = arg;
	if (!stc_run(&cfg, r))
		return false;
	CHECK(r->stats.stops >= r->stats.records);
	CHECK_EQ_U64(r->log.lost, 0);
	stc_check_order(&r->log, r, STC_ORDER_FROM_ENTRY);
	return CHECK(stc_exited_zero(r->status));
}

/* sys_writer: 100 writes of 1024 bytes, then a failing open.  Every path is
 * read at the stop, so the open of /dev/null is seen too. */
static void test_writer(bool keep_running)
{
	uint32_t nr_openat = stc_nr("openat");
	struct stc_run r = { 0 };
	size_t missing = 0, devnull = 0;

	if (run("sys_writer", NULL, "write,openat", keep_running, &r)) {
		stc_expect_writer(&r);
		for (size_t i = 0; i < r.log.n; i++) {
			const struct stc_rec *e = &r.log.v[i];

			CHECK_EQ_U64(e->pid, r.pid);
			CHECK_EQ_U64(e->tid, r.pid);
			CHECK_EQ_U64(e->arch, sys_arch_native());
			if (e->nr != nr_openat || e->kind != SYSREC_ENTER || !CHECK(e->has_str) || i + 1 >= r.log.n)
				continue;
			if (!strcmp(e->str, STC_MISSING_PATH)) {
				missing++;
				CHECK_EQ_U64(r.log.v[i + 1].ret, -ENOENT);
			} else if (!strcmp(e->str, "/dev/null")) {
				devnull++;
				CHECK(r.log.v[i + 1].ret >= 0);
			}
		}
		CHECK_EQ_U64(missing, 1);
		CHECK_EQ_U64(devnull, 1);
	}
	stc_run_free(&r);

	/* the filter: writes only */
	r = (struct stc_run){ 0 };
	if (run("sys_writer", NULL, "write", keep_running, &r))
		stc_expect_only(&r, "write", 200);
	stc_run_free(&r);
}

/* sys_threads: thread A reads 30 times, thread B 50 times; the main
 * thread's one read is the dynamic linker loading libc. */
static void test_threads(bool keep_running)
{
	struct stc_run r = { 0 };

	if (run("sys_threads", NULL, "read", keep_running, &r)) {
		stc_expect_threads(&r);
		for (size_t i = 0; i < r.log.n; i++)
			CHECK_EQ_U64(r.log.v[i].pid, r.pid);
	}
	stc_run_free(&r);
}

/* sys_fork: 7 writes in the child, 3 in the parent. */
static void test_fork(bool keep_running)
{
	struct stc_run r = { 0 };

	if (run("sys_fork", NULL, "write", keep_running, &r)) {
		stc_expect_fork(&r);
		stc_expect_only(&r, "write", 20);
	}
	stc_run_free(&r);
}

/* The state letter of /proc/<pid>/stat, or 0 when it cannot be read. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static long proc_tracer(pid_t pid)
{
	char path[64], line[256];
	long tracer = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "TracerPid:", 10))
			tracer = strtol(line + 10, NULL, 10);
	fclose(f);
	return tracer;
}

/* Every process whose parent is `ppid` is running or sleeping, untraced. */
static void check_children_free(pid_t ppid)
{
	char path[64], buf[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)ppid, (int)ppid);
	f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);

	fclose(f);
	buf[n] = '\0';
	for (char *p = buf; *p;) {
		char *end;
		long child = strtol(p, &end, 10);

		if (end == p)
			break;
		p = end;
		char st = proc_state((pid_t)child);

		/* -1: it ended meanwhile */
		if (st) {
			CHECK(st != 'T' && st != 't');
			CHECK(proc_tracer((pid_t)child) <= 0);
		}
	}
}

/* Releases a tree that is still running: killed (and reaped by the
 * tracer), or left running, not stopped and not traced. */
static void test_release(char *const argv[], const char *filter, bool keep_running)
{
	uint64_t deadline = stc_now_ns() + STC_RUN_TIMEOUT_NS;
	struct systrace_config cfg;
	struct stc_log log = { .count_only = true };
	pid_t pid = 0;
	int status;
	struct systrace *st;

	config(&cfg, filter, keep_running);
	st = stc_spawn(argv, &cfg, &log, &pid, NULL, 0);
	if (!st)
		return;
	while (log.count < 200 && stc_now_ns() < deadline) {
		systrace_poll(st);
		stc_sleep_ns(MS);
	}
	CHECK(log.count >= 200);
	CHECK(!systrace_exited(st, &status));
	systrace_free(st);
	if (!keep_running) {
		CHECK(kill(pid, 0) < 0 && errno == ESRCH);
		return;
	}
	for (int i = 0; i < 10; i++) {
		char s = proc_state(pid);

		/* D: briefly, while sh forks or execs */
		if (!CHECK(s == 'R' || s == 'S' || s == 'D'))
			printf("  %s: state '%c'\n", argv[0], s ? s : '0');
		CHECK_EQ_U64(proc_tracer(pid), 0);
		check_children_free(pid);
		stc_sleep_ns(10 * MS);
	}
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_releases(void)
{
	char getppid_path[4096];
	char *spin[] = { getppid_path, "2000000000", NULL };
	char *shloop[] = { "sh", "-c", "while :; do sleep 0.01; done", NULL };

	snprintf(getppid_path, sizeof(getppid_path), "%s/sys_getppid", stc_bindir);
	test_release(spin, "getppid", false);
	test_release(spin, "getppid", true);
	test_release(shloop, "all", false);
	test_release(shloop, "all", true);
	/* the process calls, as far as this architecture has them (arm64 has
	 * no fork nor vfork) */
	{
		static const char *const calls[] = { "execve", "clone", "clone3", "wait4", "fork", "vfork" };
		char list[128] = "";

		for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
			if (sys_lookup(sys_arch_native(), calls[i]) >= 0)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", *list ? "," : "",
				         calls[i]);
		test_release(shloop, list, true);
	}
}

/* Attaching to a running program (not our tracer's child): its calls are
 * seen from then on, on its own pid; release detaches (the program runs
 * on, untraced, not stopped) or kills it. */
static void test_attach(bool keep_running)
{
	char path[4096];
	char *argv[] = { path, "2000000000", NULL };
	uint64_t deadline = stc_now_ns() + STC_RUN_TIMEOUT_NS;
	uint32_t nr_getppid = stc_nr("getppid");
	struct systrace_config cfg;
	struct stc_log log = { 0 };
	struct systrace_ops ops = stc_log_ops(&log);
	char why[256], err[512];
	struct systrace *st;
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/sys_getppid", stc_bindir);
	pid = fork();
	if (pid == 0) {
		execv(path, argv);
		_exit(127);
	}
	if (!CHECK(pid > 0))
		return;
	stc_sleep_ns(20 * MS);
	config(&cfg, "getppid", keep_running);
	st = systrace_attach(pid, &cfg, &ops, why, sizeof(why), err, sizeof(err));
	if (!CHECK(st)) {
		printf("  attach: %s\n", err);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return;
	}
	while (log.count < 200 && stc_now_ns() < deadline) {
		systrace_poll(st);
		stc_sleep_ns(MS);
	}
	CHECK(log.count >= 200);
	CHECK(!systrace_exited(st, &status));
	systrace_free(st);
	for (size_t i = 0; i < log.n; i++) {
		CHECK_EQ_U64(log.v[i].pid, pid);
		CHECK_EQ_U64(log.v[i].tid, pid);
		CHECK_EQ_U64(log.v[i].nr, nr_getppid);
		if (log.v[i].kind == SYSREC_EXIT)
			CHECK_EQ_U64(log.v[i].ret, getpid());
	}
	stc_check_order(&log, NULL, STC_ORDER_FROM_ENTRY | (keep_running ? 0 : STC_ORDER_KILLED));
	stc_log_free(&log);
	if (keep_running) {
		for (int i = 0; i < 5; i++) {
			char s = proc_state(pid);

			CHECK(s == 'R' || s == 'S');
			CHECK_EQ_U64(proc_tracer(pid), 0);
			stc_sleep_ns(10 * MS);
		}
		CHECK(kill(pid, SIGKILL) == 0);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	} else {
		/* killed, and reaped by the tracer thread: a thread of its
		 * parent process */
		CHECK(kill(pid, 0) < 0 && errno == ESRCH);
	}
}

/* A traced program that stops itself and is continued does not hang (the
 * group-stop is resumed at once); its exit status comes back. */
static void test_job_control(bool keep_running)
{
	char *argv[] = { "sh", "-c", "kill -STOP $$; kill -CONT $$; exit 3", NULL };
	struct systrace_config cfg;
	struct stc_run r = { .argv = argv };

	config(&cfg, "kill", keep_running);
	if (stc_run(&cfg, &r)) {
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3);
		CHECK_EQ_U64(r.log.count, 4);
	}
	stc_run_free(&r);
}

/* A caller that does not poll: the queue fills, the tracee goes on, and
 * every record is either handed out or counted lost. */
static void test_lost(void)
{
	struct systrace_config cfg;
	struct stc_run r = { .prog = "sys_getppid", .arg = "100000", .no_poll = true, .log.count_only = true };

	config(&cfg, "getppid", false);
	if (stc_run(&cfg, &r)) {
		CHECK(stc_exited_zero(r.status));
		CHECK(r.log.lost > 0);
		CHECK_EQ_U64(r.log.count + r.log.lost, 200000);
	}
	stc_run_free(&r);
}

/* A program that cannot be run is reported at spawn, with the reason. */
static void test_missing(void)
{
	char *argv[] = { "/nonexistent/layerprof-prog", NULL };
	struct systrace_config cfg;
	struct systrace_ops ops = { NULL, NULL, NULL };
	char why[256], err[512] = "";
	pid_t pid = 0;

	config(&cfg, NULL, false);
	CHECK(!systrace_spawn(argv, NULL, &cfg, &ops, &pid, why, sizeof(why), err, sizeof(err)));
	CHECK(strstr(err, "No such file or directory") != NULL);
}

/* ---- by hand: ns per getppid ---- */

static double run_plain(char *const argv[])
{
	uint64_t t0 = stc_now_ns();
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return stc_exited_zero(status) ? (double)(stc_now_ns() - t0) : -1;
}

static double run_traced(char *const argv[], bool keep_running, uint64_t *records)
{
	struct systrace_config cfg;
	struct stc_run r = { .argv = argv, .log.count_only = true };
	uint64_t t0 = stc_now_ns(), t;
	bool ok;

	config(&cfg, "getppid", keep_running);
	ok = stc_run(&cfg, &r) && stc_exited_zero(r.status);
	t = stc_now_ns() - t0;
	*records = r.log.count;
	if (r.log.lost)
		printf("  lost %llu records\n", (unsigned long long)r.log.lost);
	stc_run_free(&r);
	return ok ? (double)t : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Runs each way `reps` times in turn (so that a noisy neighbour hits them
 * alike) and prints the best and the median ns per call. */
#define BENCH_WAYS 5
#define BENCH_REPS_MAX 15
static int bench(long n, int reps)
{
	static const char *const names[BENCH_WAYS] = {
		"plain",
		"layerprof ptrace, seccomp filter",
		"layerprof ptrace, keep_running",
		"strace -f -c -e trace=getppid",
		"strace -f -c",
	};
	char prog[4096], num[32];
	char *plain[] = { prog, num, NULL };
	char *strace_sel[] = { "strace", "-f", "-c", "-o", "/dev/null", "-e", "trace=getppid", prog, num, NULL };
	char *strace_all[] = { "strace", "-f", "-c", "-o", "/dev/null", prog, num, NULL };
	double t[BENCH_WAYS][BENCH_REPS_MAX];
	uint64_t recs[2] = { 0, 0 };

	if (reps < 1 || reps > BENCH_REPS_MAX)
		reps = 5;
	snprintf(prog, sizeof(prog), "%s/sys_getppid", stc_bindir);
	snprintf(num, sizeof(num), "%ld", n);
	for (int r = 0; r < reps; r++) {
		t[0][r] = run_plain(plain);
		t[1][r] = run_traced(plain, false, &recs[0]);
		t[2][r] = run_traced(plain, true, &recs[1]);
		t[3][r] = run_plain(strace_sel);
		t[4][r] = run_plain(strace_all);
	}
	printf("getppid x %ld, %d runs each; ns per call (wall time of a run / calls): best, median\n", n, reps);
	for (int w = 0; w < BENCH_WAYS; w++) {
		qsort(t[w], (size_t)reps, sizeof(double), cmp_double);
		printf("  %-34s %8.0f %8.0f", names[w], t[w][0] / (double)n, t[w][reps / 2] / (double)n);
		if (w == 1 || w == 2)
			printf("  (%llu records)", (unsigned long long)recs[w - 1]);
		printf("\n");
	}
	return 0;
}

/* By hand: per syscall, the calls seen (entries) and the failed ones, in
 * the form of strace -f -c's calls and errors columns, for comparing. */
static int count_calls(const char *filter, bool keep_running, char *const argv[])
{
	static uint64_t calls[SYS_NR_MAX], errors[SYS_NR_MAX];
	struct systrace_config cfg;
	struct stc_run r = { .argv = argv };
	char name[64];

	config(&cfg, filter, keep_running);
	if (!stc_run(&cfg, &r))
		return 1;
	for (size_t i = 0; i < r.log.n; i++) {
		const struct stc_rec *e = &r.log.v[i];

		if (e->nr >= SYS_NR_MAX)
			continue;
		if (e->kind == SYSREC_ENTER)
			calls[e->nr]++;
		else if (e->ret < 0 && e->ret > -4096)
			errors[e->nr]++;
	}
	printf("%9s %9s syscall  (%llu records, %llu lost, wait status %#x)\n", "calls", "errors",
	       (unsigned long long)r.log.count, (unsigned long long)r.log.lost, (unsigned)r.status);
	for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++)
		if (calls[nr])
			printf("%9llu %9llu %s\n", (unsigned long long)calls[nr], (unsigned long long)errors[nr],
			       sys_name(sys_arch_native(), nr, name, sizeof(name)));
	stc_run_free(&r);
	return 0;
}

int main(int argc, char **argv)
{
	char err[256];

	if (argc < 2) {
		fprintf(stderr, "usage: test_systrace_ptrace BUILD_DIR [--bench [N [RUNS]] | --count[-keep] FILTER "
		                "PROG [ARG...]]\n");
		return 2;
	}
	stc_bindir = argv[1];
	setvbuf(stdout, NULL, _IONBF, 0);
#if defined(__SANITIZE_ADDRESS__)
	/* the sanitized sys_* programs: LeakSanitizer cannot run under
	 * ptrace and would fail them at exit */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif
	if (pt_probe(err, sizeof(err)) < 0) {
		printf("skip: the ptrace backend cannot work here: %s\n", err);
		return 77;
	}
	if (argc > 4 && !strcmp(argv[2], "--count"))
		return count_calls(argv[3], false, argv + 4);
	if (argc > 4 && !strcmp(argv[2], "--count-keep"))
		return count_calls(argv[3], true, argv + 4);
	if (argc > 2 && !strcmp(argv[2], "--bench"))
		return bench(argc > 3 ? atol(argv[3]) : 500000, argc > 4 ? atoi(argv[4]) : 5);
	test_missing();
	for (int keep = 0; keep < 2; keep++) {
		printf("%s\n", keep ? "keep_running: every syscall stops" : "seccomp filter");
		test_writer(keep);
		test_threads(keep);
		test_fork(keep);
		test_job_control(keep);
	}
	test_lost();
	test_releases();
	test_attach(true);
	test_attach(false);
	return check_summary();
}
