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
#include <time.h>
#include <unistd.h>

#include "common/systab.h"
#include "systrace/backend.h"
#include "systrace/systrace.h"
#include "tests/unit/check.h"

/* Records kept for checking; a run that makes more only counts them. */
#define LOG_MAX 100000u
/* How long one traced program may run. */
#define RUN_TIMEOUT_NS (60ull * 1000000000ull)

struct logrec {
	uint8_t kind, arch;
	uint16_t nips;
	uint32_t pid, tid, nr;
	int64_t ret;
	uint64_t ns, ip0;
	uint64_t args[6];
	bool has_str;
	char str[SYSREC_STR_MAX + 1];
};

struct log {
	struct logrec *v;
	size_t n;
	uint64_t total, lost;
};

static const char *bindir;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void on_sys(void *ctx, const struct sysrec *rec)
{
	struct log *log = ctx;
	struct logrec *r;

	log->total++;
	if (!log->v || log->n >= LOG_MAX)
		return;
	r = &log->v[log->n++];
	memset(r, 0, sizeof(*r));
	r->kind = rec->kind;
	r->arch = rec->arch;
	r->nips = rec->nips;
	r->pid = rec->pid;
	r->tid = rec->tid;
	r->nr = rec->nr;
	r->ret = rec->ret;
	r->ns = rec->ns;
	r->ip0 = rec->nips ? rec->ips[0] : 0;
	memcpy(r->args, rec->args, sizeof(r->args));
	if (rec->str) {
		r->has_str = true;
		memcpy(r->str, rec->str, rec->str_len <= SYSREC_STR_MAX ? rec->str_len : SYSREC_STR_MAX);
	}
}

static void on_lost(void *ctx, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct log *log = ctx;

	log->lost += count;
}

static void log_init(struct log *log, bool keep)
{
	memset(log, 0, sizeof(*log));
	if (keep)
		log->v = calloc(LOG_MAX, sizeof(*log->v));
}

static int nr_of(const char *name)
{
	int nr = sys_lookup(sys_arch_native(), name);

	if (nr < 0) {
		printf("FAIL: no syscall '%s' in the table\n", name);
		exit(1);
	}
	return nr;
}

static struct systrace *start(char *const argv[], const char *filter, bool keep_running, struct log *log, pid_t *pid)
{
	struct systrace_config cfg;
	struct systrace_ops ops = { log, on_sys, on_lost };
	char why[256], err[512];
	struct systrace *st;

	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = SYSTRACE_PTRACE;
	cfg.keep_running = keep_running;
	if (sys_set_parse(&cfg.filter, sys_arch_native(), filter, err, sizeof(err))) {
		printf("FAIL: filter '%s': %s\n", filter, err);
		exit(1);
	}
	st = systrace_spawn(argv, NULL, &cfg, &ops, pid, why, sizeof(why), err, sizeof(err));
	if (!st)
		printf("FAIL: cannot trace %s: %s\n", argv[0], err);
	else
		CHECK_EQ_U64(systrace_backend(st), SYSTRACE_PTRACE);
	return st;
}

/* Runs a program to its end under the tracer; returns its wait status, or
 * -1 when it could not be traced or did not end in time. */
static int run(const char *prog, const char *arg, const char *filter, bool keep_running, struct log *log, pid_t *pid)
{
	char path[4096];
	char *argv[] = { path, (char *)arg, NULL };
	uint64_t deadline = now_ns() + RUN_TIMEOUT_NS;
	struct systrace_stats stats;
	struct systrace *st;
	int status = -1;

	snprintf(path, sizeof(path), "%s/%s", bindir, prog);
	st = start(argv, filter, keep_running, log, pid);
	if (!CHECK(st))
		return -1;
	while (!systrace_exited(st, &status)) {
		if (!CHECK(now_ns() < deadline)) {
			printf("  %s did not end\n", prog);
			status = -1;
			break;
		}
		CHECK(systrace_poll(st) >= 0);
		sleep_ms(1);
	}
	systrace_poll(st);
	systrace_get_stats(st, &stats);
	CHECK_EQ_U64(stats.records, log->total);
	CHECK(stats.stops >= log->total);
	systrace_free(st);
	CHECK_EQ_U64(log->lost, 0);
	return status;
}

static size_t count(const struct log *log, uint8_t kind, int nr, uint32_t tid)
{
	size_t n = 0;

	for (size_t i = 0; i < log->n; i++)
		if (log->v[i].kind == kind && (int)log->v[i].nr == nr && (!tid || log->v[i].tid == tid))
			n++;
	return n;
}

/* Per thread: ENTER, EXIT, ENTER, ... with the same number in each pair,
 * in time order; the pid never changes within a thread.  `killed`: the
 * last call may have no exit (the thread was killed in it). */
static void check_pairs(const struct log *log, bool killed)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct logrec *a = &log->v[i];
		size_t first = 0;

		/* once per thread: at its first record */
		while (first < i && log->v[first].tid != a->tid)
			first++;
		if (first < i)
			continue;
		const struct logrec *prev = NULL;

		for (size_t j = i; j < log->n; j++) {
			const struct logrec *b = &log->v[j];

			if (b->tid != a->tid)
				continue;
			CHECK_EQ_U64(b->pid, a->pid);
			if (prev) {
				CHECK(b->ns >= prev->ns);
				CHECK_EQ_U64(b->kind, prev->kind == SYSREC_ENTER ? SYSREC_EXIT : SYSREC_ENTER);
				if (b->kind == SYSREC_EXIT)
					CHECK_EQ_U64(b->nr, prev->nr);
			} else {
				CHECK_EQ_U64(b->kind, SYSREC_ENTER);
			}
			prev = b;
		}
		if (prev && !killed)
			CHECK_EQ_U64(prev->kind, SYSREC_EXIT);
	}
}

static bool exited_zero(int status)
{
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* sys_writer: 100 writes of 1024 bytes, then a failing open. */
static void test_writer(bool keep_running)
{
	int nr_write = nr_of("write"), nr_openat = nr_of("openat");
	struct log log;
	pid_t pid = 0;
	int status;

	log_init(&log, true);
	status = run("sys_writer", NULL, "write", keep_running, &log, &pid);
	CHECK(exited_zero(status));
	CHECK_EQ_U64(count(&log, SYSREC_ENTER, nr_write, 0), 100);
	CHECK_EQ_U64(count(&log, SYSREC_EXIT, nr_write, 0), 100);
	CHECK_EQ_U64(count(&log, SYSREC_ENTER, nr_write, (uint32_t)pid), 100);
	CHECK_EQ_U64(log.n, 200);
	for (size_t i = 0; i < log.n; i++) {
		const struct logrec *r = &log.v[i];

		CHECK_EQ_U64(r->pid, pid);
		CHECK_EQ_U64(r->tid, pid);
		CHECK_EQ_U64(r->arch, sys_arch_native());
	}
	for (size_t i = 0; i < log.n; i++) {
		const struct logrec *r = &log.v[i];

		if (r->kind == SYSREC_EXIT) {
			CHECK_EQ_U64(r->ret, 1024);
		} else {
			CHECK_EQ_U64(r->args[2], 1024);
			CHECK(r->nips >= 1 && r->ip0 != 0);
			CHECK(!r->has_str);
		}
	}
	check_pairs(&log, false);
	free(log.v);

	/* the open of the missing path: its path copied, -ENOENT back */
	log_init(&log, true);
	status = run("sys_writer", NULL, "openat", keep_running, &log, &pid);
	CHECK(exited_zero(status));
	size_t missing = 0, devnull = 0;

	for (size_t i = 0; i < log.n; i++) {
		const struct logrec *r = &log.v[i];

		CHECK_EQ_U64(r->nr, nr_openat);
		if (r->kind != SYSREC_ENTER || !CHECK(r->has_str) || i + 1 >= log.n)
			continue;
		if (!strcmp(r->str, "/nonexistent/layerprof-test")) {
			missing++;
			CHECK_EQ_U64(log.v[i + 1].kind, SYSREC_EXIT);
			CHECK_EQ_U64(log.v[i + 1].ret, -ENOENT);
		} else if (!strcmp(r->str, "/dev/null")) {
			devnull++;
			CHECK(log.v[i + 1].ret >= 0);
		}
	}
	CHECK_EQ_U64(missing, 1);
	CHECK_EQ_U64(devnull, 1);
	check_pairs(&log, false);
	free(log.v);
}

/* sys_threads: thread A reads 30 times, thread B 50 times; the main
 * thread's one read is the dynamic linker loading libc. */
static void test_threads(bool keep_running)
{
	int nr_read = nr_of("read");
	uint32_t tids[8];
	size_t ntids = 0, n30 = 0, n50 = 0;
	struct log log;
	pid_t pid = 0;
	int status;

	log_init(&log, true);
	status = run("sys_threads", NULL, "read", keep_running, &log, &pid);
	CHECK(exited_zero(status));
	for (size_t i = 0; i < log.n; i++) {
		size_t k = 0;

		CHECK_EQ_U64(log.v[i].pid, pid);
		while (k < ntids && tids[k] != log.v[i].tid)
			k++;
		if (k == ntids && ntids < 8)
			tids[ntids++] = log.v[i].tid;
	}
	CHECK_EQ_U64(ntids, 3);
	for (size_t k = 0; k < ntids; k++) {
		size_t enters = count(&log, SYSREC_ENTER, nr_read, tids[k]);

		CHECK_EQ_U64(count(&log, SYSREC_EXIT, nr_read, tids[k]), enters);
		if (tids[k] == (uint32_t)pid) {
#if !defined(__SANITIZE_ADDRESS__)
			CHECK_EQ_U64(enters, 1);
#endif
		} else if (enters == 30) {
			n30++;
		} else if (enters == 50) {
			n50++;
		} else {
			CHECK_EQ_U64(enters, 30);
		}
	}
	CHECK_EQ_U64(n30, 1);
	CHECK_EQ_U64(n50, 1);
	for (size_t i = 0; i < log.n; i++)
		if (log.v[i].kind == SYSREC_EXIT && log.v[i].tid != (uint32_t)pid)
			CHECK_EQ_U64(log.v[i].ret, 512);
	check_pairs(&log, false);
	free(log.v);
}

/* sys_fork: 7 writes in the child, 3 in the parent. */
static void test_fork(bool keep_running)
{
	int nr_write = nr_of("write");
	uint32_t child = 0;
	struct log log;
	pid_t pid = 0;
	int status;

	log_init(&log, true);
	status = run("sys_fork", NULL, "write", keep_running, &log, &pid);
	CHECK(exited_zero(status));
	for (size_t i = 0; i < log.n; i++) {
		CHECK_EQ_U64(log.v[i].tid, log.v[i].pid);
		if (log.v[i].pid != (uint32_t)pid)
			child = log.v[i].pid;
	}
	CHECK(child != 0 && child != (uint32_t)pid);
	CHECK_EQ_U64(count(&log, SYSREC_ENTER, nr_write, (uint32_t)pid), 3);
	CHECK_EQ_U64(count(&log, SYSREC_EXIT, nr_write, (uint32_t)pid), 3);
	CHECK_EQ_U64(count(&log, SYSREC_ENTER, nr_write, child), 7);
	CHECK_EQ_U64(count(&log, SYSREC_EXIT, nr_write, child), 7);
	CHECK_EQ_U64(log.n, 20);
	for (size_t i = 0; i < log.n; i++)
		if (log.v[i].kind == SYSREC_EXIT)
			CHECK_EQ_U64(log.v[i].ret, 64);
	check_pairs(&log, false);
	free(log.v);
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
	uint64_t deadline = now_ns() + RUN_TIMEOUT_NS;
	struct log log;
	pid_t pid = 0;
	int status;
	struct systrace *st;

	log_init(&log, false);
	st = start(argv, filter, keep_running, &log, &pid);
	if (!CHECK(st))
		return;
	while (log.total < 200 && now_ns() < deadline) {
		systrace_poll(st);
		sleep_ms(1);
	}
	CHECK(log.total >= 200);
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
		sleep_ms(10);
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

	snprintf(getppid_path, sizeof(getppid_path), "%s/sys_getppid", bindir);
	test_release(spin, "getppid", false);
	test_release(spin, "getppid", true);
	test_release(shloop, "all", false);
	test_release(shloop, "all", true);
	test_release(shloop, "execve,clone,clone3,wait4,fork,vfork", true);
}

/* Attaching to a running program (not our tracer's child): its calls are
 * seen from then on, on its own pid; release detaches (the program runs
 * on, untraced, not stopped) or kills it. */
static void test_attach(bool keep_running)
{
	char path[4096];
	char *argv[] = { path, "2000000000", NULL };
	uint64_t deadline = now_ns() + RUN_TIMEOUT_NS;
	int nr_getppid = nr_of("getppid");
	struct systrace_config cfg;
	struct log log;
	struct systrace_ops ops = { &log, on_sys, on_lost };
	char why[256], err[512];
	struct systrace *st;
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/sys_getppid", bindir);
	pid = fork();
	if (pid == 0) {
		execv(path, argv);
		_exit(127);
	}
	if (!CHECK(pid > 0))
		return;
	sleep_ms(20);
	log_init(&log, true);
	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = SYSTRACE_PTRACE;
	cfg.keep_running = keep_running;
	sys_set_parse(&cfg.filter, sys_arch_native(), "getppid", err, sizeof(err));
	st = systrace_attach(pid, &cfg, &ops, why, sizeof(why), err, sizeof(err));
	if (!CHECK(st)) {
		printf("  attach: %s\n", err);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		free(log.v);
		return;
	}
	while (log.total < 200 && now_ns() < deadline) {
		systrace_poll(st);
		sleep_ms(1);
	}
	CHECK(log.total >= 200);
	CHECK(!systrace_exited(st, &status));
	systrace_free(st);
	for (size_t i = 0; i < log.n; i++) {
		CHECK_EQ_U64(log.v[i].pid, pid);
		CHECK_EQ_U64(log.v[i].tid, pid);
		CHECK_EQ_U64(log.v[i].nr, nr_getppid);
		if (log.v[i].kind == SYSREC_EXIT)
			CHECK_EQ_U64(log.v[i].ret, getpid());
	}
	check_pairs(&log, !keep_running);
	free(log.v);
	if (keep_running) {
		for (int i = 0; i < 5; i++) {
			char s = proc_state(pid);

			CHECK(s == 'R' || s == 'S');
			CHECK_EQ_U64(proc_tracer(pid), 0);
			sleep_ms(10);
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
	uint64_t deadline = now_ns() + RUN_TIMEOUT_NS;
	struct log log;
	struct systrace *st;
	int status = -1;
	pid_t pid;

	log_init(&log, false);
	st = start(argv, "kill", keep_running, &log, &pid);
	if (!CHECK(st))
		return;
	while (!systrace_exited(st, &status) && now_ns() < deadline) {
		systrace_poll(st);
		sleep_ms(1);
	}
	systrace_free(st);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	CHECK_EQ_U64(log.total, 4);
}

/* A caller that does not poll: the queue fills, the tracee goes on, and
 * every record is either handed out or counted lost. */
static void test_lost(void)
{
	char path[4096];
	char *argv[] = { path, "100000", NULL };
	uint64_t deadline = now_ns() + RUN_TIMEOUT_NS;
	struct log log;
	struct systrace *st;
	int status = -1;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/sys_getppid", bindir);
	log_init(&log, false);
	st = start(argv, "getppid", false, &log, &pid);
	if (!CHECK(st))
		return;
	while (!systrace_exited(st, &status) && now_ns() < deadline)
		sleep_ms(1);
	systrace_free(st);
	CHECK(exited_zero(status));
	CHECK(log.lost > 0);
	CHECK_EQ_U64(log.total + log.lost, 200000);
}

/* A program that cannot be run is reported at spawn, with the reason. */
static void test_missing(void)
{
	char *argv[] = { "/nonexistent/layerprof-prog", NULL };
	struct systrace_config cfg;
	struct systrace_ops ops = { NULL, NULL, NULL };
	char why[256], err[512] = "";
	pid_t pid = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = SYSTRACE_PTRACE;
	sys_set_all(&cfg.filter);
	CHECK(!systrace_spawn(argv, NULL, &cfg, &ops, &pid, why, sizeof(why), err, sizeof(err)));
	CHECK(strstr(err, "No such file or directory") != NULL);
}

/* ---- by hand: ns per getppid ---- */

static double run_plain(char *const argv[])
{
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return exited_zero(status) ? (double)(now_ns() - t0) : -1;
}

static double run_traced(char *const argv[], bool keep_running, uint64_t *records)
{
	struct log log;
	uint64_t t0 = now_ns();
	pid_t pid;
	int status = -1;
	struct systrace *st;

	log_init(&log, false);
	st = start(argv, "getppid", keep_running, &log, &pid);
	if (!st)
		return -1;
	while (!systrace_exited(st, &status)) {
		systrace_poll(st);
		sleep_ms(1);
	}
	systrace_free(st);
	*records = log.total;
	if (log.lost)
		printf("  lost %llu records\n", (unsigned long long)log.lost);
	return exited_zero(status) ? (double)(now_ns() - t0) : -1;
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
	snprintf(prog, sizeof(prog), "%s/sys_getppid", bindir);
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
	struct log log;
	struct systrace *st;
	int status = -1;
	pid_t pid;
	char name[64];

	log_init(&log, true);
	st = start(argv, filter, keep_running, &log, &pid);
	if (!st)
		return 1;
	while (!systrace_exited(st, &status)) {
		systrace_poll(st);
		sleep_ms(1);
	}
	systrace_free(st);
	for (size_t i = 0; i < log.n; i++) {
		if (log.v[i].nr >= SYS_NR_MAX)
			continue;
		if (log.v[i].kind == SYSREC_ENTER)
			calls[log.v[i].nr]++;
		else if (log.v[i].ret < 0 && log.v[i].ret > -4096)
			errors[log.v[i].nr]++;
	}
	printf("%9s %9s syscall  (%llu records, %llu lost, wait status %#x)\n", "calls", "errors",
	       (unsigned long long)log.total, (unsigned long long)log.lost, (unsigned)status);
	for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++)
		if (calls[nr])
			printf("%9llu %9llu %s\n", (unsigned long long)calls[nr], (unsigned long long)errors[nr],
			       sys_name(sys_arch_native(), nr, name, sizeof(name)));
	free(log.v);
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
	bindir = argv[1];
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
