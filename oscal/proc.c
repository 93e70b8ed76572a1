/* The process group: identity calls, processes (fork, vfork, exec,
 * posix_spawn: timed from the call in the parent to the point that proves
 * it happened), threads, scheduling and resource queries.  Every child is
 * reaped before its sample returns. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oscal/suite.h"

extern char **environ;

#define TRUE_PATH "/bin/true" /* the program fork-exec and posix_spawn run */

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

/* ------------------------------------------------------------ identity and queries */

static int one_getpid(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	pid_t p = getpid();
	T1;
	return p > 0 ? 0 : suite_err(c, "getpid");
}

static int one_getppid(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	pid_t p = getppid();
	T1;
	return p >= 0 ? 0 : suite_err(c, "getppid");
}

static int one_gettid(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	pid_t p = suite_gettid();
	T1;
	return p > 0 ? 0 : suite_err(c, "gettid");
}

static int one_getuid(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	uid_t u = getuid();
	T1;
	(void)u;
	return 0;
}

static int one_sched_yield(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = sched_yield();
	T1;
	return r < 0 ? suite_err(c, "sched_yield") : 0;
}

static int one_getrusage(struct suite_ctx *c, uint64_t *ns)
{
	struct rusage ru;
	T0;
	int r = getrusage(RUSAGE_SELF, &ru);
	T1;
	return r < 0 ? suite_err(c, "getrusage") : 0;
}

static int one_uname(struct suite_ctx *c, uint64_t *ns)
{
	struct utsname u;
	T0;
	int r = uname(&u);
	T1;
	return r < 0 ? suite_err(c, "uname") : 0;
}

static int one_getrlimit(struct suite_ctx *c, uint64_t *ns)
{
	struct rlimit rl;
	T0;
	int r = getrlimit(RLIMIT_NOFILE, &rl);
	T1;
	return r < 0 ? suite_err(c, "getrlimit") : 0;
}

static int one_getpriority(struct suite_ctx *c, uint64_t *ns)
{
	errno = 0;
	T0;
	int r = getpriority(PRIO_PROCESS, 0);
	T1;
	return r == -1 && errno ? suite_err(c, "getpriority") : 0;
}

static int one_setpriority(struct suite_ctx *c, uint64_t *ns)
{
	errno = 0;
	int now = getpriority(PRIO_PROCESS, 0);
	if (now == -1 && errno)
		return suite_err(c, "getpriority");
	T0;
	int r = setpriority(PRIO_PROCESS, 0, now);
	T1;
	return r < 0 ? suite_err(c, "setpriority to the current nice value") : 0;
}

static int one_getaffinity(struct suite_ctx *c, uint64_t *ns)
{
	cpu_set_t set;
	T0;
	int r = sched_getaffinity(0, sizeof(set), &set);
	T1;
	return r < 0 ? suite_err(c, "sched_getaffinity") : 0;
}

static int one_setaffinity(struct suite_ctx *c, uint64_t *ns)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return suite_err(c, "sched_getaffinity");
	T0;
	int r = sched_setaffinity(0, sizeof(set), &set);
	T1;
	return r < 0 ? suite_err(c, "sched_setaffinity to the current set") : 0;
}

static int one_getscheduler(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = sched_getscheduler(0);
	T1;
	return r < 0 ? suite_err(c, "sched_getscheduler") : 0;
}

/* SCHED_FIFO at the lowest priority, SCHED_OTHER again at once (not timed):
 * a skip where real-time scheduling is not permitted. */
static int one_setscheduler_fifo(struct suite_ctx *c, uint64_t *ns)
{
	struct sched_param fifo = { .sched_priority = 1 }, other = { .sched_priority = 0 };
	T0;
	int r = sched_setscheduler(0, SCHED_FIFO, &fifo);
	T1;
	if (r < 0) {
		c->why = "SCHED_FIFO needs CAP_SYS_NICE or RLIMIT_RTPRIO";
		return suite_err(c, "sched_setscheduler SCHED_FIFO priority 1");
	}
	if (sched_setscheduler(0, SCHED_OTHER, &other) < 0)
		return suite_err(c, "sched_setscheduler back to SCHED_OTHER");
	return 0;
}

static int one_prctl(struct suite_ctx *c, uint64_t *ns)
{
	char name[32];
	T0;
	int r = prctl(PR_GET_NAME, name, 0, 0, 0);
	T1;
	return r < 0 ? suite_err(c, "prctl PR_GET_NAME") : 0;
}

static long (*volatile p_sysconf)(int) = sysconf;

static int one_sysconf(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	long r = p_sysconf(_SC_NPROCESSORS_ONLN);
	T1;
	return r < 0 ? suite_err(c, "sysconf(_SC_NPROCESSORS_ONLN)") : 0;
}

/* ------------------------------------------------------------ processes */

/* Reaps pid; a child that did not exit with 0 is an error. */
static int reap(struct suite_ctx *c, pid_t pid, const char *what)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return suite_err(c, "waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		c->what = what;
		return -ECHILD;
	}
	return 0;
}

static int one_fork(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	pid_t p = fork();
	T1;
	if (p == 0)
		_exit(0);
	if (p < 0)
		return suite_err(c, "fork");
	return reap(c, p, "the forked child's exit");
}

static int one_fork_exit_wait(struct suite_ctx *c, uint64_t *ns)
{
	int err;
	T0;
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	if (p < 0)
		return suite_err(c, "fork");
	err = reap(c, p, "the forked child's exit");
	T1;
	return err;
}

/* A shared page where a child writes the time of its first instruction. */
static int setup_shared(struct suite_ctx *c)
{
	c->p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c->p == MAP_FAILED) {
		c->p = NULL;
		return suite_err(c, "mmap of a shared page");
	}
	c->len = 4096;
	return 0;
}

static void done_shared(struct suite_ctx *c)
{
	if (c->p)
		munmap(c->p, c->len);
	c->p = NULL;
}

static int one_fork_child(struct suite_ctx *c, uint64_t *ns)
{
	volatile uint64_t *t = c->p;
	int err;
	*t = 0;
	uint64_t t0 = suite_now();
	pid_t p = fork();
	if (p == 0) {
		*t = suite_now();
		_exit(0);
	}
	if (p < 0)
		return suite_err(c, "fork");
	if ((err = reap(c, p, "the forked child's exit")) < 0)
		return err;
	*ns = *t - t0;
	return 0;
}

/* vfork in a function of its own: the child only calls _exit. */
static pid_t __attribute__((noinline)) vfork_exit(void)
{
	pid_t p = vfork();
	if (p == 0)
		_exit(0);
	return p;
}

static int one_vfork_exit_wait(struct suite_ctx *c, uint64_t *ns)
{
	int err;
	T0;
	pid_t p = vfork_exit();
	if (p < 0)
		return suite_err(c, "vfork");
	err = reap(c, p, "the vforked child's exit");
	T1;
	return err;
}

static int setup_true(struct suite_ctx *c)
{
	if (access(TRUE_PATH, X_OK) < 0) {
		c->unavailable = 1;
		return suite_err(c, "access of " TRUE_PATH);
	}
	return 0;
}

static int one_fork_exec_wait(struct suite_ctx *c, uint64_t *ns)
{
	static char *const argv[] = { (char *)TRUE_PATH, NULL };
	int err;
	T0;
	pid_t p = fork();
	if (p == 0) {
		execve(TRUE_PATH, argv, environ);
		_exit(127);
	}
	if (p < 0)
		return suite_err(c, "fork");
	err = reap(c, p, "fork and execve of " TRUE_PATH);
	T1;
	return err;
}

static int one_posix_spawn_wait(struct suite_ctx *c, uint64_t *ns)
{
	static char *const argv[] = { (char *)TRUE_PATH, NULL };
	pid_t p;
	int r, err;
	T0;
	r = posix_spawn(&p, TRUE_PATH, NULL, NULL, argv, environ);
	if (r) {
		errno = r;
		return suite_err(c, "posix_spawn of " TRUE_PATH);
	}
	err = reap(c, p, "posix_spawn of " TRUE_PATH);
	T1;
	return err;
}

/* waitpid of a child that has exited already (a zombie) */
static int one_waitpid_exited(struct suite_ctx *c, uint64_t *ns)
{
	siginfo_t si;
	int st;
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	if (p < 0)
		return suite_err(c, "fork");
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT) < 0)
		if (errno != EINTR)
			return suite_err(c, "waitid WNOWAIT");
	T0;
	pid_t r = waitpid(p, &st, 0);
	T1;
	return r == p ? 0 : suite_err(c, "waitpid");
}

/* ------------------------------------------------------------ threads */

struct thread_probe {
	uint64_t started;
	pid_t tid;
	atomic_int ended;
};

static void *probe_thread(void *arg)
{
	struct thread_probe *t = arg;
	t->started = suite_now();
	t->tid = suite_gettid();
	atomic_store(&t->ended, 1);
	return NULL;
}

static int thread_err(struct suite_ctx *c, int r, const char *what)
{
	errno = r;
	return suite_err(c, what);
}

static int one_pthread_create(struct suite_ctx *c, uint64_t *ns)
{
	struct thread_probe t = { 0 };
	pthread_t th;
	uint64_t t0 = suite_now();
	int r = pthread_create(&th, NULL, probe_thread, &t);
	if (r)
		return thread_err(c, r, "pthread_create");
	pthread_join(th, NULL);
	*ns = t.started - t0;
	return 0;
}

static int one_pthread_create_return(struct suite_ctx *c, uint64_t *ns)
{
	struct thread_probe t = { 0 };
	pthread_t th;
	T0;
	int r = pthread_create(&th, NULL, probe_thread, &t);
	T1;
	if (r)
		return thread_err(c, r, "pthread_create");
	pthread_join(th, NULL);
	return 0;
}

static int one_pthread_create_join(struct suite_ctx *c, uint64_t *ns)
{
	struct thread_probe t = { 0 };
	pthread_t th;
	T0;
	int r = pthread_create(&th, NULL, probe_thread, &t);
	if (r)
		return thread_err(c, r, "pthread_create");
	r = pthread_join(th, NULL);
	T1;
	return r ? thread_err(c, r, "pthread_join") : 0;
}

static int one_pthread_join(struct suite_ctx *c, uint64_t *ns)
{
	struct thread_probe t = { 0 };
	pthread_t th;
	int r = pthread_create(&th, NULL, probe_thread, &t);
	if (r)
		return thread_err(c, r, "pthread_create");
	while (!atomic_load(&t.ended))
		sched_yield();
	suite_wait_sleeping(t.tid, 1); /* returns once the thread is gone */
	T0;
	r = pthread_join(th, NULL);
	T1;
	return r ? thread_err(c, r, "pthread_join") : 0;
}

static pthread_key_t key; /* pthread_[sg]etspecific's, from setup to done */

static int setup_key(struct suite_ctx *c)
{
	pthread_key_t *k = &key;
	int r = pthread_key_create(k, NULL);
	if (r)
		return thread_err(c, r, "pthread_key_create");
	c->p = k;
	return 0;
}

static void done_key(struct suite_ctx *c)
{
	if (c->p)
		pthread_key_delete(*(pthread_key_t *)c->p);
	c->p = NULL;
}

static int one_setspecific(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_setspecific(*(pthread_key_t *)c->p, c);
	T1;
	return r ? thread_err(c, r, "pthread_setspecific") : 0;
}

static void *(*volatile p_getspecific)(pthread_key_t) = pthread_getspecific;

static int one_getspecific(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	void *v = p_getspecific(*(pthread_key_t *)c->p);
	T1;
	(void)v;
	return 0;
}

static int one_key_create(struct suite_ctx *c, uint64_t *ns)
{
	pthread_key_t k;
	T0;
	int r = pthread_key_create(&k, NULL);
	T1;
	if (r)
		return thread_err(c, r, "pthread_key_create");
	pthread_key_delete(k);
	return 0;
}

#define P(name, call, cond, setup, one, done, desc)                                    \
	{                                                                              \
		name, call, cond, "process", "", "", SUITE_NOX, setup, one, done, desc \
	}

const struct suite_def suite_proc[] = {
	P("getpid", "getpid", "", NULL, one_getpid, NULL, "getpid(2)"),
	P("getppid", "getppid", "", NULL, one_getppid, NULL, "getppid(2)"),
	P("gettid", "gettid", "", NULL, one_gettid, NULL, "gettid(2)"),
	P("getuid", "getuid", "", NULL, one_getuid, NULL, "getuid(2)"),
	P("sched_yield", "sched_yield", "", NULL, one_sched_yield, NULL, "sched_yield(2)"),
	P("getrusage", "getrusage", "", NULL, one_getrusage, NULL, "getrusage(2) RUSAGE_SELF"),
	P("uname", "uname", "", NULL, one_uname, NULL, "uname(2)"),
	P("getrlimit", "getrlimit", "", NULL, one_getrlimit, NULL, "getrlimit(2) RLIMIT_NOFILE"),
	P("getpriority", "getpriority", "", NULL, one_getpriority, NULL, "getpriority(2) of this process"),
	P("setpriority", "setpriority", "", NULL, one_setpriority, NULL, "setpriority(2) to the current nice value"),
	P("sched_getaffinity", "sched_getaffinity", "", NULL, one_getaffinity, NULL, "sched_getaffinity(2)"),
	P("sched_setaffinity", "sched_setaffinity", "", NULL, one_setaffinity, NULL,
	  "sched_setaffinity(2) to the current CPU set"),
	P("sched_getscheduler", "sched_getscheduler", "", NULL, one_getscheduler, NULL, "sched_getscheduler(2)"),
	P("sched_setscheduler-fifo", "sched_setscheduler", "fifo", NULL, one_setscheduler_fifo, NULL,
	  "sched_setscheduler(2) to SCHED_FIFO priority 1 (back to SCHED_OTHER not timed)"),
	P("prctl-get_name", "prctl", "get_name", NULL, one_prctl, NULL, "prctl(2) PR_GET_NAME"),
	P("sysconf-nprocessors", "sysconf", "nprocessors_onln", NULL, one_sysconf, NULL,
	  "sysconf(3) _SC_NPROCESSORS_ONLN"),
	P("fork", "fork", "", NULL, one_fork, NULL, "fork(2) to its return in the parent (the child exits at once)"),
	P("fork-child", "fork", "child", setup_shared, one_fork_child, done_shared,
	  "fork(2) in the parent to the child's first instruction"),
	P("fork-exit-wait", "fork", "exit-wait", NULL, one_fork_exit_wait, NULL,
	  "fork(2), the child's _exit(2), to waitpid(2)'s return in the parent"),
	P("vfork-exit-wait", "vfork", "exit-wait", NULL, one_vfork_exit_wait, NULL,
	  "vfork(2), the child's _exit(2), to waitpid(2)'s return in the parent"),
	P("fork-exec-wait", "execve", "fork-exec-wait", setup_true, one_fork_exec_wait, NULL,
	  "fork(2), execve(2) of " TRUE_PATH " in the child, to waitpid(2)'s return"),
	P("posix_spawn-wait", "posix_spawn", "wait", setup_true, one_posix_spawn_wait, NULL,
	  "posix_spawn(3) of " TRUE_PATH " to waitpid(2)'s return"),
	P("waitpid-exited", "waitpid", "exited", NULL, one_waitpid_exited, NULL,
	  "waitpid(2) of a child that has exited already"),
	P("pthread_create", "pthread_create", "", NULL, one_pthread_create, NULL,
	  "pthread_create(3) in the creator to the new thread's first instruction"),
	P("pthread_create-return", "pthread_create", "return", NULL, one_pthread_create_return, NULL,
	  "pthread_create(3) to its return in the creator"),
	P("pthread_create-join", "pthread_create", "join", NULL, one_pthread_create_join, NULL,
	  "pthread_create(3) of an empty thread and pthread_join(3) of it"),
	P("pthread_join", "pthread_join", "ended", NULL, one_pthread_join, NULL,
	  "pthread_join(3) of a thread that has ended"),
	P("pthread_key_create", "pthread_key_create", "", NULL, one_key_create, NULL,
	  "pthread_key_create(3) (pthread_key_delete not timed)"),
	P("pthread_setspecific", "pthread_setspecific", "", setup_key, one_setspecific, done_key,
	  "pthread_setspecific(3)"),
	P("pthread_getspecific", "pthread_getspecific", "", setup_key, one_getspecific, done_key,
	  "pthread_getspecific(3)"),
};
const size_t suite_proc_n = sizeof(suite_proc) / sizeof(suite_proc[0]);
