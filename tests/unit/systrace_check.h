/* What the syscall tracer's backend tests share: running a sys_* program
 * (tests/programs) under one backend while collecting its records, tallies
 * of named syscalls per thread, the checks of record order every backend
 * must pass, and the exact outcomes of the sys_* programs.  Each backend's
 * test keeps only what is its own.  A new backend's test needs little more
 * than:
 *
 *	struct systrace_config cfg;
 *	struct stc_run run = { .prog = "sys_writer" };
 *
 *	stc_bindir = argv[1];
 *	stc_config(&cfg, SYSTRACE_XYZ, NULL);
 *	if (stc_run(&cfg, &run) && CHECK(stc_exited_zero(run.status))) {
 *		stc_check_order(&run.log, &run, 0);
 *		stc_expect_writer(&run);
 *	}
 *	stc_run_free(&run);
 *
 * Its checks count in tests/unit/check.h's counters, which are the test
 * program's own (one translation unit per test).  Everything is static
 * inline, so a test uses what it needs. */
#ifndef LP_TEST_SYSTRACE_CHECK_H
#define LP_TEST_SYSTRACE_CHECK_H

#include <errno.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/systab.h"
#include "systrace/systrace.h"
#include "tests/unit/check.h"

/* The records a log keeps; beyond, it only counts them. */
#define STC_LOG_MAX 200000u
/* How long one traced program may run before it is killed. */
#define STC_RUN_TIMEOUT_NS (60ull * 1000000000ull)
/* The poll interval while a program runs, unless the run says otherwise. */
#define STC_POLL_NS 1000000L
/* The path sys_writer's opener fails to open. */
#define STC_MISSING_PATH "/nonexistent/layerprof-test"
/* Syscalls and threads a tally follows. */
#define STC_NAMES_MAX 8u
#define STC_TASKS_MAX 32u

/* The sanitizers' runtime makes syscalls of its own (it reads
 * /proc/self/maps, and LeakSanitizer stops the world from a task of its own
 * at exit): a sanitized build checks only the program's own calls. */
#if defined(__SANITIZE_ADDRESS__)
#define STC_SANITIZED 1
#else
#define STC_SANITIZED 0
#endif

/* Where the sys_* programs are built (the tests' argument): set by main
 * before a run names a program. */
static const char *stc_bindir;

static inline uint64_t stc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void stc_sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	nanosleep(&ts, NULL);
}

static inline bool stc_exited_zero(int status)
{
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The native number of syscall `name`; a name the table lacks ends the
 * test (a typo in the test, not a failure of the tracer). */
static inline uint32_t stc_nr(const char *name)
{
	int nr = sys_lookup(sys_arch_native(), name);

	if (nr < 0) {
		printf("FAIL: no syscall '%s' in the table\n", name);
		exit(1);
	}
	return (uint32_t)nr;
}

/* ---- the log: every record a run hands out ---- */

/* One record as kept: the path (the open family's) is copied, the stack
 * reduced to its depth and innermost address. */
struct stc_rec {
	uint8_t kind; /* enum sysrec_kind */
	uint8_t arch;
	uint16_t nips;
	uint32_t pid, tid, nr;
	int64_t ret;
	uint64_t ns, ip0;
	uint64_t args[6];
	bool has_str;
	char str[SYSREC_STR_MAX + 1];
};

/* Zero it (count_only as wanted) before use; stc_log_free frees it. */
struct stc_log {
	bool count_only;     /* keep no records, only count them */
	struct stc_rec *v;   /* the first STC_LOG_MAX records, in delivery order */
	size_t n, cap;       /* kept, allocated */
	uint64_t count;      /* every record handed out */
	uint64_t lost;       /* the sum of the lost callbacks' counts */
	unsigned lost_calls; /* how many lost callbacks */
};

static inline void stc_on_sys(void *ctx, const struct sysrec *rec)
{
	struct stc_log *log = ctx;
	struct stc_rec *r;

	log->count++;
	if (log->count_only)
		return;
	if (log->n == log->cap) {
		size_t cap = log->cap ? 2 * log->cap : 1024;
		struct stc_rec *v;

		if (cap > STC_LOG_MAX)
			return;
		v = realloc(log->v, cap * sizeof(*v));
		if (!v)
			return;
		log->v = v;
		log->cap = cap;
	}
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
		memcpy(r->str, rec->str, rec->str_len < SYSREC_STR_MAX ? rec->str_len : SYSREC_STR_MAX);
	}
}

static inline void stc_on_lost(void *ctx, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct stc_log *log = ctx;

	log->lost += count;
	log->lost_calls++;
}

/* The callbacks that fill `log`, for systrace_spawn or systrace_attach. */
static inline struct systrace_ops stc_log_ops(struct stc_log *log)
{
	struct systrace_ops ops = { log, stc_on_sys, stc_on_lost };

	return ops;
}

/* Kept records of `kind` (0: either) of syscall nr, on thread tid and in
 * process pid (0: any). */
static inline size_t stc_log_count(const struct stc_log *log, uint8_t kind, uint32_t nr, uint32_t tid, uint32_t pid)
{
	size_t n = 0;

	for (size_t i = 0; i < log->n; i++) {
		const struct stc_rec *r = &log->v[i];

		if ((!kind || r->kind == kind) && r->nr == nr && (!tid || r->tid == tid) && (!pid || r->pid == pid))
			n++;
	}
	return n;
}

static inline void stc_log_free(struct stc_log *log)
{
	bool count_only = log->count_only;

	free(log->v);
	memset(log, 0, sizeof(*log));
	log->count_only = count_only;
}

/* ---- running a program ---- */

/* A configuration for `backend` tracing `filter` (syscall names as for
 * --syscall-filter; NULL: all), the rest defaults.  A filter that does not
 * parse ends the test. */
static inline void stc_config(struct systrace_config *cfg, enum systrace_backend backend, const char *filter)
{
	char err[256];

	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = backend;
	if (!filter) {
		sys_set_all(&cfg->filter);
	} else if (sys_set_parse(&cfg->filter, sys_arch_native(), filter, err, sizeof(err))) {
		printf("FAIL: filter '%s': %s\n", filter, err);
		exit(1);
	}
}

/* Starts argv (PATH searched) under the tracer, its records going to log;
 * checks that the backend is the one cfg asks for (unless SYSTRACE_AUTO).
 * *pid receives the program's pid; why (whylen bytes, or NULL) why the
 * backend was chosen.  NULL, the reason printed and a check failed, when it
 * cannot be traced. */
static inline struct systrace *stc_spawn(char *const argv[], const struct systrace_config *cfg, struct stc_log *log,
                                         pid_t *pid, char *why, size_t whylen)
{
	struct systrace_ops ops = stc_log_ops(log);
	char why_[256], err[512];
	struct systrace *st;

	if (!why) {
		why = why_;
		whylen = sizeof(why_);
	}
	st = systrace_spawn(argv, NULL, cfg, &ops, pid, why, whylen, err, sizeof(err));
	if (!CHECK(st)) {
		printf("  cannot trace %s: %s\n", argv[0], err);
		return NULL;
	}
	if (cfg->backend != SYSTRACE_AUTO)
		CHECK_EQ_U64(systrace_backend(st), cfg->backend);
	return st;
}

/* One program run to its end under the tracer.  Fill in what to run and
 * zero the rest; stc_run_free frees it. */
struct stc_run {
	/* a program of stc_bindir with one argument (arg, NULL: none), or,
	 * when prog is NULL, argv (PATH searched) */
	const char *prog;
	const char *arg;
	char *const *argv;
	long poll_ns; /* the poll interval while it runs; 0: STC_POLL_NS */
	bool no_poll; /* poll only once it has ended (the records pile up) */

	/* the outcome */
	pid_t pid;
	int status;                  /* its wait status; -1: not started, or killed after STC_RUN_TIMEOUT_NS */
	uint64_t t0, t1;             /* CLOCK_MONOTONIC before the spawn, after its end was seen */
	uint64_t cpu_ns;             /* its user and system time; 0 when the tracer reaps it (ptrace) */
	struct systrace_stats stats; /* the backend's, after the last poll, before systrace_free */
	char why[256];               /* why the backend was chosen */
	struct stc_log log;          /* every record and loss, systrace_free's included */
	/* the polls after its end, until one handed nothing: how many, the
	 * records of the first, and the backlog each left behind */
	unsigned end_polls;
	long end_first;
	bool end_backlog_first, end_backlog_last;
};

static inline uint64_t stc_ru_ns(const struct rusage *ru)
{
	return ((uint64_t)ru->ru_utime.tv_sec + (uint64_t)ru->ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru->ru_utime.tv_usec + (uint64_t)ru->ru_stime.tv_usec) * 1000u;
}

/* Runs the program under cfg to its end, polling as it goes, then polls
 * until nothing is left and frees the tracer.  The ptrace backend reaps the
 * program itself (systrace_exited says when it ended); with any other the
 * run waits for it, and checks the backend never says it exited.  Checks
 * that the backend's record count is the records handed out.  Returns
 * false (a check failed) when the program could not be traced; a program
 * that does not end in time is killed and fails a check. */
static inline bool stc_run(const struct systrace_config *cfg, struct stc_run *run)
{
	char path[4096];
	char *argv_prog[] = { path, (char *)run->arg, NULL };
	char *const *argv = run->argv;
	uint64_t deadline;
	struct systrace *st;
	struct rusage ru;
	bool reaps;
	int ignored;

	run->status = -1;
	if (run->prog) {
		snprintf(path, sizeof(path), "%s/%s", stc_bindir ? stc_bindir : ".", run->prog);
		argv = argv_prog;
	}
	run->t0 = stc_now_ns();
	deadline = run->t0 + STC_RUN_TIMEOUT_NS;
	st = stc_spawn(argv, cfg, &run->log, &run->pid, run->why, sizeof(run->why));
	if (!st)
		return false;
	reaps = systrace_backend(st) == SYSTRACE_PTRACE;
	memset(&ru, 0, sizeof(ru));
	for (;;) {
		if (reaps) {
			if (systrace_exited(st, &run->status))
				break;
		} else {
			pid_t w = wait4(run->pid, &run->status, WNOHANG, &ru);

			if (w == run->pid)
				break;
			if (!CHECK(w == 0)) {
				printf("  cannot wait for %s: %s\n", argv[0], strerror(errno));
				run->status = -1;
				break;
			}
		}
		if (!CHECK(stc_now_ns() < deadline)) {
			printf("  %s did not end\n", argv[0]);
			run->status = -1;
			if (!reaps) {
				kill(run->pid, SIGKILL);
				waitpid(run->pid, NULL, 0);
			}
			break;
		}
		if (!run->no_poll)
			CHECK(systrace_poll(st) >= 0);
		stc_sleep_ns(run->poll_ns > 0 ? run->poll_ns : STC_POLL_NS);
	}
	run->t1 = stc_now_ns();
	run->cpu_ns = reaps ? 0 : stc_ru_ns(&ru);
	for (long n; (n = systrace_poll(st)) > 0;) {
		if (!run->end_polls++) {
			run->end_first = n;
			run->end_backlog_first = systrace_backlog(st);
		}
		run->end_backlog_last = systrace_backlog(st);
	}
	if (!reaps)
		CHECK(!systrace_exited(st, &ignored));
	systrace_get_stats(st, &run->stats);
	CHECK_EQ_U64(run->stats.records, run->log.count);
	systrace_free(st);
	return true;
}

static inline void stc_run_free(struct stc_run *run)
{
	stc_log_free(&run->log);
}

/* ---- the order of records ---- */

/* Is nr a call whose exit may come first in a new task: the exec that
 * enabled the events, or the fork or clone that created the task. */
static inline bool stc_starts_task(uint32_t nr)
{
	static const char *const names[] = { "execve", "clone", "clone3", "fork", "vfork" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (sys_lookup(sys_arch_native(), names[i]) == (int)nr)
			return true;
	return false;
}

/* Does nr end without an exit record: the task's end, or a signal return
 * (the kernel clears its number, and a backend may drop a record without
 * one). */
static inline bool stc_no_exit(uint32_t nr)
{
	static const char *const names[] = { "exit", "exit_group", "rt_sigreturn", "sigreturn" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (sys_lookup(sys_arch_native(), names[i]) == (int)nr)
			return true;
	return false;
}

enum stc_order_flag {
	/* the tree was killed: a thread's last call may have no exit */
	STC_ORDER_KILLED = 1 << 0,
	/* every thread's first record is an entry: the backend follows a
	 * task from its first stop, not from inside the call that made it */
	STC_ORDER_FROM_ENTRY = 1 << 1,
};

/* Checks that hold for every backend, per thread: records in time order
 * (and within [run->t0, run->t1] when run is given), the pid never
 * changing, entries and exits alternating with the same number in a pair
 * (an exit may open a thread's records for a call that starts a task; an
 * entry of a call that does not return may have no exit); and a user stack
 * on every entry.  flags: enum stc_order_flag. */
static inline void stc_check_order(const struct stc_log *log, const struct stc_run *run, unsigned flags)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct stc_rec *r = &log->v[i];
		const struct stc_rec *prev = NULL;
		bool last = true;

		if (run && !CHECK(r->ns >= run->t0 && r->ns <= run->t1))
			printf("  record %zu: ns %llu outside [%llu, %llu]\n", i, (unsigned long long)r->ns,
			       (unsigned long long)run->t0, (unsigned long long)run->t1);
		if (r->kind == SYSREC_ENTER && !CHECK(r->nips >= 1 && r->ip0 != 0))
			printf("  record %zu: no user stack\n", i);
		for (size_t j = i; j-- > 0;) {
			if (log->v[j].tid == r->tid) {
				prev = &log->v[j];
				break;
			}
		}
		if (prev) {
			CHECK(prev->ns <= r->ns);
			CHECK_EQ_U64(r->pid, prev->pid);
		}
		if (r->kind == SYSREC_EXIT) {
			bool ok = prev ? prev->kind == SYSREC_ENTER && prev->nr == r->nr
			               : !(flags & STC_ORDER_FROM_ENTRY) && stc_starts_task(r->nr);

			if (!CHECK(ok))
				printf("  record %zu: exit of %u on tid %u without its entry\n", i, r->nr, r->tid);
		} else if (prev && !CHECK(prev->kind == SYSREC_EXIT || stc_no_exit(prev->nr))) {
			printf("  record %zu: entry of %u on tid %u follows entry of %u\n", i, r->nr, r->tid, prev->nr);
		}
		/* a thread's last entry without an exit can only be its end */
		for (size_t j = i + 1; j < log->n && last; j++)
			last = log->v[j].tid != r->tid;
		if (last && r->kind == SYSREC_ENTER && !(flags & STC_ORDER_KILLED) && !CHECK(stc_no_exit(r->nr)))
			printf("  record %zu: the last call of tid %u, %u, has no exit\n", i, r->tid, r->nr);
	}
}

/* ---- tallies ---- */

/* One thread's calls of the tallied syscalls. */
struct stc_task {
	uint32_t pid, tid;
	uint64_t records;                 /* of any syscall */
	uint64_t enters[STC_NAMES_MAX];   /* per tallied name */
	uint64_t exits[STC_NAMES_MAX];    /* ... */
	uint64_t failures[STC_NAMES_MAX]; /* exits returning -errno */
};

/* A log summed up per thread for a few syscalls, the way the sys_*
 * programs state what they do ("thread A: 30 reads"). */
struct stc_tally {
	size_t nnames;
	const char *names[STC_NAMES_MAX]; /* as given (not copied) */
	uint32_t nrs[STC_NAMES_MAX];
	/* the threads, in the order of their first record (of any syscall);
	 * records of threads beyond STC_TASKS_MAX are only counted */
	struct stc_task tasks[STC_TASKS_MAX];
	size_t ntasks;
	uint64_t untallied;
	/* the first failed call of a tallied syscall: its name's index
	 * (-1: none failed), thread, errno and the path its entry carried */
	int fail_name;
	uint32_t fail_tid;
	int fail_errno;
	bool fail_has_path;
	char fail_path[SYSREC_STR_MAX + 1];
	uint64_t count, lost; /* the log's */
};

/* Tallies log for names (a NULL-terminated list, at most STC_NAMES_MAX;
 * unknown names end the test). */
static inline void stc_tally(const struct stc_log *log, const char *const names[], struct stc_tally *t)
{
	memset(t, 0, sizeof(*t));
	t->fail_name = -1;
	for (; t->nnames < STC_NAMES_MAX && names[t->nnames]; t->nnames++) {
		t->names[t->nnames] = names[t->nnames];
		t->nrs[t->nnames] = stc_nr(names[t->nnames]);
	}
	t->count = log->count;
	t->lost = log->lost;
	for (size_t i = 0; i < log->n; i++) {
		const struct stc_rec *r = &log->v[i];
		struct stc_task *k = NULL;
		size_t name = 0;

		for (size_t j = 0; j < t->ntasks && !k; j++)
			if (t->tasks[j].tid == r->tid)
				k = &t->tasks[j];
		if (!k && t->ntasks < STC_TASKS_MAX) {
			k = &t->tasks[t->ntasks++];
			k->pid = r->pid;
			k->tid = r->tid;
		}
		if (!k) {
			t->untallied++;
			continue;
		}
		k->records++;
		while (name < t->nnames && t->nrs[name] != r->nr)
			name++;
		if (name == t->nnames)
			continue;
		if (r->kind == SYSREC_ENTER) {
			k->enters[name]++;
			continue;
		}
		k->exits[name]++;
		if (r->ret >= 0 || r->ret < -4095)
			continue;
		k->failures[name]++;
		if (t->fail_name >= 0)
			continue;
		t->fail_name = (int)name;
		t->fail_tid = r->tid;
		t->fail_errno = (int)-r->ret;
		for (size_t j = i; j-- > 0;) {
			if (log->v[j].tid == r->tid) {
				const struct stc_rec *e = &log->v[j];

				if (e->kind == SYSREC_ENTER && e->nr == r->nr && e->has_str) {
					t->fail_has_path = true;
					memcpy(t->fail_path, e->str, sizeof(t->fail_path));
				}
				break;
			}
		}
	}
}

/* The tally's thread tid, or NULL. */
static inline const struct stc_task *stc_tally_task(const struct stc_tally *t, uint32_t tid)
{
	for (size_t i = 0; i < t->ntasks; i++)
		if (t->tasks[i].tid == tid)
			return &t->tasks[i];
	return NULL;
}

static inline size_t stc_tally_name(const struct stc_tally *t, const char *name)
{
	size_t i = 0;

	while (i < t->nnames && strcmp(t->names[i], name))
		i++;
	if (i == t->nnames) {
		printf("FAIL: '%s' is not tallied\n", name);
		exit(1);
	}
	return i;
}

/* Entries (exits) of the tallied syscall `name` on thread tid (0: on all). */
static inline uint64_t stc_tally_enters(const struct stc_tally *t, uint32_t tid, const char *name)
{
	size_t k = stc_tally_name(t, name);
	uint64_t n = 0;

	for (size_t i = 0; i < t->ntasks; i++)
		if (!tid || t->tasks[i].tid == tid)
			n += t->tasks[i].enters[k];
	return n;
}

static inline uint64_t stc_tally_exits(const struct stc_tally *t, uint32_t tid, const char *name)
{
	size_t k = stc_tally_name(t, name);
	uint64_t n = 0;

	for (size_t i = 0; i < t->ntasks; i++)
		if (!tid || t->tasks[i].tid == tid)
			n += t->tasks[i].exits[k];
	return n;
}

/* ---- what the sys_* programs do (tests/programs/sys_*.c) ---- */

/* Exits of syscall nr on thread tid (0: any) returning other than `ret`. */
static inline size_t stc_exits_not_returning(const struct stc_log *log, uint32_t nr, uint32_t tid, int64_t ret)
{
	size_t n = 0;

	for (size_t i = 0; i < log->n; i++) {
		const struct stc_rec *r = &log->v[i];

		if (r->kind == SYSREC_EXIT && r->nr == nr && (!tid || r->tid == tid) && r->ret != ret)
			n++;
	}
	return n;
}

/* A run traced for syscall `name` only: `records` records, all of it. */
static inline void stc_expect_only(const struct stc_run *run, const char *name, uint64_t records)
{
	CHECK_EQ_U64(run->log.count, records);
	CHECK_EQ_U64(stc_log_count(&run->log, 0, stc_nr(name), 0, 0), run->log.n);
}

/* sys_writer, traced for write and openat at least: on its one thread, 100
 * writes returning 1024, and an openat of STC_MISSING_PATH failing with
 * ENOENT: the first failed call of the two (its path checked when the
 * backend could read it; the caller checks whether it must have).  Each
 * write entry's third argument is 1024. */
static inline void stc_expect_writer(const struct stc_run *run)
{
	static const char *const names[] = { "write", "openat", NULL };
	uint32_t pid = (uint32_t)run->pid;
	struct stc_tally t;

	stc_tally(&run->log, names, &t);
	CHECK_EQ_U64(stc_tally_enters(&t, pid, "write"), 100);
	CHECK_EQ_U64(stc_tally_exits(&t, pid, "write"), 100);
	CHECK_EQ_U64(stc_tally_enters(&t, 0, "write"), 100);
	CHECK_EQ_U64(stc_exits_not_returning(&run->log, stc_nr("write"), 0, 1024), 0);
	for (size_t i = 0; i < run->log.n; i++)
		if (run->log.v[i].kind == SYSREC_ENTER && run->log.v[i].nr == t.nrs[0])
			CHECK_EQ_U64(run->log.v[i].args[2], 1024);
	if (CHECK_EQ_U64(t.fail_name, 1)) {
		CHECK_EQ_U64(t.fail_tid, pid);
		CHECK_EQ_U64(t.fail_errno, ENOENT);
		if (t.fail_has_path)
			CHECK_STR(t.fail_path, STC_MISSING_PATH);
	}
}

/* sys_threads, traced for read at least: two threads besides main read
 * 512 bytes, one 30 times and the other 50; main reads once (the dynamic
 * linker loading libc) and no other thread of the program appears. */
static inline void stc_expect_threads(const struct stc_run *run)
{
	static const char *const names[] = { "read", NULL };
	uint32_t pid = (uint32_t)run->pid;
	unsigned others = 0, n30 = 0, n50 = 0;
	struct stc_tally t;

	stc_tally(&run->log, names, &t);
	for (size_t i = 0; i < t.ntasks; i++) {
		const struct stc_task *k = &t.tasks[i];

		if (k->pid != pid || k->tid == pid)
			continue;
		others++;
		CHECK_EQ_U64(k->exits[0], k->enters[0]);
		CHECK_EQ_U64(stc_exits_not_returning(&run->log, t.nrs[0], k->tid, 512), 0);
		if (k->enters[0] == 30)
			n30++;
		else if (k->enters[0] == 50)
			n50++;
		else if (k->enters[0] || !STC_SANITIZED)
			CHECK_EQ_U64(k->enters[0], 30);
	}
	CHECK_EQ_U64(n30, 1);
	CHECK_EQ_U64(n50, 1);
	if (!STC_SANITIZED) {
		CHECK_EQ_U64(others, 2);
		CHECK_EQ_U64(stc_tally_enters(&t, pid, "read"), 1);
		CHECK_EQ_U64(stc_tally_exits(&t, pid, "read"), 1);
		CHECK_EQ_U64(stc_tally_enters(&t, 0, "read"), 81);
	}
}

/* sys_fork, traced for write at least: the forked child writes 64 bytes 7
 * times, the parent 3 times, each on its only thread; no other process
 * writes, or (unsanitized) appears at all. */
static inline void stc_expect_fork(const struct stc_run *run)
{
	static const char *const names[] = { "write", NULL };
	uint32_t pid = (uint32_t)run->pid, child = 0;
	unsigned writers = 0, others = 0;
	struct stc_tally t;

	stc_tally(&run->log, names, &t);
	for (size_t i = 0; i < t.ntasks; i++) {
		const struct stc_task *k = &t.tasks[i];

		if (k->pid == pid)
			continue;
		others++;
		if (!k->enters[0])
			continue;
		writers++;
		child = k->pid;
		CHECK_EQ_U64(k->tid, k->pid);
	}
	CHECK_EQ_U64(writers, 1);
	if (!STC_SANITIZED)
		CHECK_EQ_U64(others, 1);
	CHECK(child != 0 && child != pid);
	CHECK_EQ_U64(stc_tally_enters(&t, child, "write"), 7);
	CHECK_EQ_U64(stc_tally_exits(&t, child, "write"), 7);
	CHECK_EQ_U64(stc_tally_enters(&t, pid, "write"), 3);
	CHECK_EQ_U64(stc_tally_exits(&t, pid, "write"), 3);
	CHECK_EQ_U64(stc_tally_enters(&t, 0, "write"), 10);
	CHECK_EQ_U64(stc_exits_not_returning(&run->log, t.nrs[0], 0, 64), 0);
}

/* ---- attaching: a child of the test that waits, then writes ---- */

#define STC_ATTACH_MAIN_WRITES 5
#define STC_ATTACH_THREAD_WRITES 10

static inline void *stc_attach_thread(void *arg)
{
	int fd = *(int *)arg;

	for (int i = 0; i < STC_ATTACH_THREAD_WRITES; i++)
		if (write(fd, "x", 1) != 1)
			return arg;
	return NULL;
}

/* The test program run with --attach-target: waits for a byte on stdin
 * (the test attaches meanwhile), then writes STC_ATTACH_MAIN_WRITES times
 * to /dev/null and starts a thread that writes STC_ATTACH_THREAD_WRITES
 * times.  Returns its exit status. */
static inline int stc_attach_target(void)
{
	int fd = open("/dev/null", O_WRONLY), bad = 0;
	pthread_t t;
	void *res;
	char go;

	if (fd < 0 || read(0, &go, 1) != 1)
		return 2;
	for (int i = 0; i < STC_ATTACH_MAIN_WRITES; i++)
		bad += write(fd, "x", 1) != 1;
	if (pthread_create(&t, NULL, stc_attach_thread, &fd) || pthread_join(t, &res))
		return 2;
	return bad || res ? 1 : 0;
}

/* Runs this test program with --attach-target, attaches to it under
 * backend once it waits in its read, lets it go and collects every record
 * into log until it has ended and the tracer is freed.  Returns its pid
 * (checked to exit 0), or 0 when it could not run or be attached to. */
/* Waits (up to STC_RUN_TIMEOUT_NS) until pid sits in read(0, ...), as
 * /proc/PID/syscall shows it; false if it never does. */
static inline bool stc_wait_in_read0(pid_t pid)
{
	uint64_t deadline = stc_now_ns() + STC_RUN_TIMEOUT_NS;
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	while (stc_now_ns() < deadline) {
		FILE *f = fopen(path, "r");
		long nr = -1;
		unsigned long arg0 = 1;

		if (f) {
			if (fgets(line, sizeof(line), f) && sscanf(line, "%ld %lx", &nr, &arg0) != 2)
				nr = -1;
			fclose(f);
		}
		if (nr == SYS_read && arg0 == 0)
			return true;
		stc_sleep_ns(1000000L);
	}
	return false;
}

static inline pid_t stc_attach_run(enum systrace_backend backend, struct stc_log *log)
{
	char self[4096], why[256], err[256];
	struct systrace_ops ops = stc_log_ops(log);
	struct systrace_config cfg;
	struct systrace *st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int go[2], status = -1;
	pid_t pid;

	if (!CHECK(n > 0 && pipe(go) == 0))
		return 0;
	self[n] = '\0';
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		dup2(go[0], 0);
		execl(self, self, "--attach-target", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	stc_config(&cfg, backend, NULL);
	/* let the child reach its read: attaching to the exec itself works too,
	 * but then the calls counted would include ld.so's (and a slow machine,
	 * or an emulated one, takes long to get there) */
	if (!stc_wait_in_read0(pid))
		printf("  the attach target never waited in its read (its records start earlier)\n");
	st = systrace_attach(pid, &cfg, &ops, why, sizeof(why), err, sizeof(err));
	if (!CHECK(st != NULL))
		printf("  attach: %s\n", err);
	CHECK(write(go[1], "g", 1) == 1);
	close(go[1]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!st)
		return 0;
	while (systrace_poll(st) > 0)
		;
	systrace_free(st);
	return pid;
}

/* What every backend must see of the attach target: every record of its
 * process, and the writes of its main thread and of the thread it starts
 * after the attach, entries and exits. */
static inline void stc_expect_attach(const struct stc_log *log, pid_t pid)
{
	uint32_t thread = 0;

	for (size_t i = 0; i < log->n; i++) {
		if (!STC_SANITIZED)
			CHECK_EQ_U64(log->v[i].pid, pid);
		if (log->v[i].pid == (uint32_t)pid && log->v[i].tid != (uint32_t)pid)
			thread = log->v[i].tid;
	}
	CHECK(thread != 0);
	CHECK_EQ_U64(stc_log_count(log, SYSREC_ENTER, SYS_write, pid, pid), STC_ATTACH_MAIN_WRITES);
	CHECK_EQ_U64(stc_log_count(log, SYSREC_EXIT, SYS_write, pid, pid), STC_ATTACH_MAIN_WRITES);
	CHECK_EQ_U64(stc_log_count(log, SYSREC_ENTER, SYS_write, thread, pid), STC_ATTACH_THREAD_WRITES);
	CHECK_EQ_U64(stc_log_count(log, SYSREC_EXIT, SYS_write, thread, pid), STC_ATTACH_THREAD_WRITES);
}

#endif
