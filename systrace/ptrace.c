/* The ptrace backend of the syscall tracer.  One tracer thread starts (or
 * attaches to) the program, follows its threads, forks and execs, and turns
 * the syscall stops into records; pt_poll hands them out on the caller's
 * thread.  A seccomp-bpf filter makes only the selected syscalls stop the
 * tracee, unless the tree must survive a detach (keep_running).
 *
 * Threads: every ptrace request must come from the tracing thread, so the
 * tracer thread forks the child, waits for all stops and owns the task
 * table and the per-task state.  The caller's thread only takes records out
 * of the queue, reads the exit status and, at release, signals the tasks
 * (kill or tkill need no tracer) to wake the tracer thread.  The mutex
 * guards the queue, the counters the caller reads, the task table's shape
 * and the `started`/`stop_sent` fields of each task.
 *
 * Job control: a tracee started with PTRACE_TRACEME cannot be held in a
 * group-stop with PTRACE_LISTEN, and a tracee held in a ptrace-stop would
 * not wake on SIGCONT.  So a group-stop (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU
 * delivered to the program) is resumed at once: a traced program does not
 * stop for job control, but it never hangs either, and SIGCONT passes
 * through as any other signal. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "systrace/backend.h"
#include "systrace/ptrace_arch.h"

/* The queue: records wait in one buffer while the caller empties the
 * other.  Each buffer holds at most this many records and bytes; beyond,
 * records are counted as lost. */
#define PT_QUEUE_RECORDS (64u * 1024u)
#define PT_QUEUE_BYTES (4u << 20)
#define PT_QUEUE_FIRST (64u << 10)
/* How long the tracee may be held when the queue is full before records
 * are dropped (once per fill of the queue, not per record). */
#define PT_FULL_WAIT_NS 20000000L
#define PT_TASKS_MAX 65536u
/* A frame-pointer walk stays within this distance above the stack pointer,
 * and reads the stack through a window of this many bytes. */
#define PT_STACK_SPAN (8u << 20)
#define PT_STACK_WINDOW 512u
/* Return addresses below this are not code. */
#define PT_MIN_CODE 0x1000u
/* Rescans of /proc/<pid>/task while attaching, for threads born meanwhile. */
#define PT_ATTACH_PASSES 16

/* The kernel's struct ptrace_syscall_info (Linux 5.3), declared here so the
 * build does not depend on the C library knowing it. */
#define PT_GET_SYSCALL_INFO 0x420e
enum pt_info_op {
	PT_INFO_NONE = 0,
	PT_INFO_ENTRY = 1,
	PT_INFO_EXIT = 2,
	PT_INFO_SECCOMP = 3,
};
struct pt_sysinfo {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t ip, sp;
	union {
		struct {
			uint64_t nr, args[6];
		} entry;
		struct {
			int64_t rval;
			uint8_t is_error;
		} exit;
		struct {
			uint64_t nr, args[6];
			uint32_t ret_data;
		} seccomp;
	} u;
};

#define PT_SYSCALL_SIG (SIGTRAP | 0x80)
#define PT_OPTIONS                                                                                                     \
	(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | \
	 PTRACE_O_TRACESECCOMP)

/* What pt_release asked the tracer thread to do. */
enum pt_stopping {
	PT_STOP_NONE = 0,
	PT_STOP_KILL = 1,   /* kill every tracee and reap it */
	PT_STOP_DETACH = 2, /* detach every tracee, leaving it running */
};

/* A queue entry: a record, or (kind PT_LOST) a count of lost ones. */
#define PT_LOST 3u
#define PT_NO_STR UINT32_MAX
struct pt_entry {
	uint32_t size; /* bytes, the ips and the string included; a multiple of 8 */
	uint8_t kind;
	uint8_t arch;
	uint16_t nips;
	uint32_t pid, tid, nr;
	uint32_t str_len; /* PT_NO_STR: none */
	uint64_t ns;
	int64_t ret; /* EXIT: the return value; PT_LOST: the count */
	uint64_t args[6];
	/* then nips return addresses and str_len bytes of string */
};

struct pt_queue {
	unsigned char *buf;
	size_t len, cap;
	uint32_t count;
};

enum pt_task_flag {
	PT_IN_SYSCALL = 1 << 0, /* between a call's entry and its exit */
	PT_RECORDING = 1 << 1,  /* the call in progress had its ENTER queued */
	PT_ENTER_LOST = 1 << 2, /* ... or lost: its EXIT is lost with it */
	PT_PRELUDE = 1 << 3,    /* the spawned child before its execve: not recorded */
	PT_ENTRY_DUE = 1 << 4,  /* Linux < 4.8: a syscall-entry-stop follows the seccomp stop */
};

struct pt_task {
	pid_t tid;
	pid_t tgid;     /* 0 until known; tracer thread only */
	uint32_t flags; /* enum pt_task_flag; tracer thread only */
	uint32_t nr;    /* the call in progress */
	uint64_t lost;  /* lost records not yet reported; under the lock */
	bool started;   /* its first stop was seen; under the lock */
	bool stop_sent; /* pt_release sent it SIGSTOP to detach it; under the lock */
};

/* The child's report when it cannot start the program. */
enum pt_child_stage {
	PT_CHILD_TRACEME = 1,
	PT_CHILD_SECCOMP = 2,
	PT_CHILD_EXEC = 3,
};
struct pt_child_err {
	int stage, err;
};

struct pt {
	struct systrace_config cfg;
	enum sys_arch arch;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* setup finished; the queue was emptied */
	/* under the lock */
	struct pt_queue fill;   /* records being added */
	bool dropping;          /* the queue was full: drop without waiting */
	uint64_t lost_total;    /* every lost record */
	uint64_t lost_nothread; /* lost records of tasks gone before they could be reported */
	uint64_t stops_pub;     /* `stops` as last published */
	int setup;              /* 0: starting; 1: running; < 0: -errno, reason in err */
	char err[256];
	bool main_exited, finished;
	int main_status;
	struct pt_task **tasks;
	size_t ntasks, tasks_cap;
	atomic_int stopping; /* enum pt_stopping */

	/* the caller's thread only */
	struct pt_queue spare;

	/* the tracer thread only (read-only once it runs) */
	char *const *argv, *const *envp;
	pid_t attach_pid;
	pid_t main_pid;
	bool seccomp;   /* the filter selects the stops */
	bool seize;     /* tasks are PTRACE_SEIZEd (attach) */
	bool have_info; /* PTRACE_GET_SYSCALL_INFO works */
	bool old_order; /* Linux < 4.8 */
	bool spawning;  /* the child has not reached its exec yet */
	int errpipe;    /* the child's report, while spawning */
	struct sock_fprog prog;
	struct pt_task *last; /* the task of the previous stop */
	uint64_t stops;
	uint64_t now; /* CLOCK_MONOTONIC at the current stop */
	size_t page;
	char str[SYSREC_STR_MAX];
};

/* What a stop says about the call. */
struct pt_call {
	int op; /* enum pt_info_op; PT_INFO_NONE: read from the registers */
	bool compat;
	uint32_t nr;
	uint64_t args[6];
	int64_t ret;
	uint64_t ip, sp;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long pt_req(int req, pid_t tid, uintptr_t addr, uintptr_t data)
{
	return ptrace((enum __ptrace_request)req, tid, (void *)addr, (void *)data);
}

/* ---- the queue ---- */

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Makes room for `need` more bytes and two records (a record and a lost
 * marker ahead of it).  `force` ignores the bounds (a gone task's last lost
 * count, at most one per task). */
static bool queue_reserve(struct pt_queue *q, size_t need, bool force)
{
	size_t cap = q->cap ? q->cap : PT_QUEUE_FIRST;
	unsigned char *buf;

	if (!force && (q->count + 2 > PT_QUEUE_RECORDS || q->len + need > PT_QUEUE_BYTES))
		return false;
	if (q->len + need <= q->cap)
		return true;
	while (cap < q->len + need)
		cap *= 2;
	if (!force && cap > PT_QUEUE_BYTES)
		cap = PT_QUEUE_BYTES;
	buf = realloc(q->buf, cap);
	if (!buf)
		return false;
	q->buf = buf;
	q->cap = cap;
	return true;
}

static void queue_put(struct pt_queue *q, const struct pt_entry *e, const uint64_t *ips, const char *str)
{
	unsigned char *p = q->buf + q->len;

	memcpy(p, e, sizeof(*e));
	p += sizeof(*e);
	if (e->nips) {
		memcpy(p, ips, e->nips * sizeof(*ips));
		p += e->nips * sizeof(*ips);
	}
	if (e->str_len != PT_NO_STR && e->str_len)
		memcpy(p, str, e->str_len);
	q->len += e->size;
	q->count++;
}

/* Under the lock: queues a lost marker for the task's unreported losses. */
static void queue_put_lost(struct pt *pt, struct pt_task *t, bool force)
{
	struct pt_entry e;

	if (!t->lost)
		return;
	if (!queue_reserve(&pt->fill, sizeof(e), force)) {
		pt->lost_nothread += t->lost;
		t->lost = 0;
		return;
	}
	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	e.kind = PT_LOST;
	e.pid = (uint32_t)(t->tgid ? t->tgid : t->tid);
	e.tid = (uint32_t)t->tid;
	e.str_len = PT_NO_STR;
	e.ret = (int64_t)t->lost;
	queue_put(&pt->fill, &e, NULL, NULL);
	t->lost = 0;
}

/* Under the lock: room for `need` bytes, waiting a little for the caller
 * to empty the queue the first time it is full. */
static bool queue_room(struct pt *pt, size_t need)
{
	struct timespec deadline;

	if (queue_reserve(&pt->fill, need, false))
		return true;
	if (pt->dropping)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += PT_FULL_WAIT_NS;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!queue_reserve(&pt->fill, need, false)) {
		if (pthread_cond_timedwait(&pt->cond, &pt->lock, &deadline) == ETIMEDOUT) {
			pt->dropping = true;
			return queue_reserve(&pt->fill, need, false);
		}
	}
	return true;
}

/* Queues one record of task t, or counts it lost.  Called at every
 * recorded stop: one lock, no allocation once the buffers have grown. */
static bool queue_push(struct pt *pt, struct pt_task *t, struct pt_entry *e, const uint64_t *ips, const char *str)
{
	size_t need;
	bool ok;

	need = sizeof(*e) + e->nips * sizeof(*ips) + (e->str_len == PT_NO_STR ? 0 : e->str_len);
	e->size = (uint32_t)round8(need);
	pthread_mutex_lock(&pt->lock);
	pt->stops_pub = pt->stops;
	ok = queue_room(pt, e->size + (t->lost ? sizeof(*e) : 0));
	if (ok) {
		queue_put_lost(pt, t, false);
		queue_put(&pt->fill, e, ips, str);
	} else {
		t->lost++;
		pt->lost_total++;
	}
	pthread_mutex_unlock(&pt->lock);
	return ok;
}

static void queue_lose(struct pt *pt, struct pt_task *t)
{
	pthread_mutex_lock(&pt->lock);
	t->lost++;
	pt->lost_total++;
	pthread_mutex_unlock(&pt->lock);
}

/* ---- the task table (shape changed by the tracer thread, under the lock) ---- */

static struct pt_task *task_find(struct pt *pt, pid_t tid)
{
	if (pt->last && pt->last->tid == tid)
		return pt->last;
	for (size_t i = 0; i < pt->ntasks; i++) {
		if (pt->tasks[i]->tid == tid) {
			pt->last = pt->tasks[i];
			return pt->last;
		}
	}
	return NULL;
}

static struct pt_task *task_add(struct pt *pt, pid_t tid, pid_t tgid, uint32_t flags, bool started)
{
	struct pt_task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = tid;
	t->tgid = tgid;
	t->flags = flags;
	t->started = started;
	pthread_mutex_lock(&pt->lock);
	if (pt->ntasks == pt->tasks_cap) {
		size_t cap = pt->tasks_cap ? pt->tasks_cap * 2 : 16;
		struct pt_task **v = cap <= PT_TASKS_MAX ? realloc(pt->tasks, cap * sizeof(*v)) : NULL;

		if (!v) {
			pthread_mutex_unlock(&pt->lock);
			free(t);
			return NULL;
		}
		pt->tasks = v;
		pt->tasks_cap = cap;
	}
	pt->tasks[pt->ntasks++] = t;
	pthread_mutex_unlock(&pt->lock);
	return t;
}

/* Forgets a task that exited, was detached or changed its tid in an exec;
 * its unreported losses are queued even when the queue is full. */
static void task_remove(struct pt *pt, struct pt_task *t)
{
	pthread_mutex_lock(&pt->lock);
	queue_put_lost(pt, t, true);
	for (size_t i = 0; i < pt->ntasks; i++) {
		if (pt->tasks[i] == t) {
			pt->tasks[i] = pt->tasks[--pt->ntasks];
			break;
		}
	}
	pthread_mutex_unlock(&pt->lock);
	if (pt->last == t)
		pt->last = NULL;
	free(t);
}

static void task_start(struct pt *pt, struct pt_task *t)
{
	pthread_mutex_lock(&pt->lock);
	t->started = true;
	pthread_mutex_unlock(&pt->lock);
}

/* A numeric field ("Tgid:", "TracerPid:") of /proc/<tid>/status, or -1. */
static long proc_status_field(pid_t tid, const char *field)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, field);
	return p ? strtol(p + strlen(field), NULL, 10) : -1;
}

/* The thread group of `tid` from /proc, or -1. */
static pid_t proc_tgid(pid_t tid)
{
	return (pid_t)proc_status_field(tid, "\nTgid:");
}

static uint32_t task_pid(struct pt_task *t)
{
	if (!t->tgid) {
		pid_t g = proc_tgid(t->tid);

		t->tgid = g > 0 ? g : t->tid;
	}
	return (uint32_t)t->tgid;
}

/* ---- reading the tracee ---- */

/* Copies up to `len` bytes at `addr` of task `tid`, split at the first
 * page boundary so that a string or a frame ending just before an unmapped
 * page is still read.  Returns the bytes read, or -1. */
static ssize_t remote_read(struct pt *pt, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	size_t first = pt->page - (size_t)(addr % pt->page);
	struct iovec local = { buf, len };
	struct iovec remote[2] = { { (void *)(uintptr_t)addr, len }, { NULL, 0 } };
	int n = 1;

	if (first < len) {
		remote[0].iov_len = first;
		remote[1].iov_base = (void *)(uintptr_t)(addr + first);
		remote[1].iov_len = len - first;
		n = 2;
	}
	return process_vm_readv(tid, &local, 1, remote, (unsigned long)n, 0);
}

#if !defined(__arm__)
/* A window on the tracee's stack, refilled when a read falls outside. */
struct pt_stack {
	uint64_t base;
	size_t len;
	unsigned char buf[PT_STACK_WINDOW];
};

static bool stack_word(struct pt *pt, pid_t tid, struct pt_stack *w, uint64_t addr, uint64_t *out)
{
	if (addr < w->base || addr - w->base + PT_WORD > w->len) {
		ssize_t n = remote_read(pt, tid, addr, w->buf, sizeof(w->buf));

		if (n < (ssize_t)PT_WORD)
			return false;
		w->base = addr;
		w->len = (size_t)n;
	}
	if (PT_WORD == 8) {
		uint64_t v;

		memcpy(&v, w->buf + (addr - w->base), sizeof(v));
		*out = v;
	} else {
		uint32_t v;

		memcpy(&v, w->buf + (addr - w->base), sizeof(v));
		*out = v;
	}
	return true;
}
#endif

/* Return addresses above the syscall, innermost first, into out[max]:
 * x86-64 and aarch64 walk the frame-pointer chain ({saved fp, return
 * address} at fp), stopping at the first frame that is out of order,
 * misaligned, off the stack or points below PT_MIN_CODE.  arm has no
 * frame layout common to ARM and Thumb code: it gives the link register,
 * which in the C library's syscall wrappers is the wrapper's caller. */
static unsigned stack_walk(struct pt *pt, pid_t tid, uint64_t *out, unsigned max)
{
	struct pt_uregs regs;
	unsigned n = 0;

	if (!max || pt_regs_read(tid, &regs) < 0 || regs.compat)
		return 0;
#if defined(__arm__)
	if (regs.lr >= PT_MIN_CODE)
		out[n++] = regs.lr & ~(uint64_t)1;
	(void)pt;
#else
	struct pt_stack w = { 0, 0, { 0 } };
	uint64_t fp = regs.fp, lo = regs.sp;

	while (n < max) {
		uint64_t next, ret;

		if (fp % PT_WORD || fp < lo || fp - regs.sp >= PT_STACK_SPAN)
			break;
		if (!stack_word(pt, tid, &w, fp, &next) || !stack_word(pt, tid, &w, fp + PT_WORD, &ret))
			break;
		if (ret < PT_MIN_CODE)
			break;
		out[n++] = ret;
		lo = fp + 2 * PT_WORD;
		fp = next;
	}
#endif
	return n;
}

/* Reads the call at the current stop: PTRACE_GET_SYSCALL_INFO when the
 * kernel has it, else the registers (then c->op is PT_INFO_NONE and the
 * caller knows from the task's state whether it is an entry).  Returns 0
 * or -errno. */
static int call_read(struct pt *pt, pid_t tid, struct pt_call *c)
{
	struct pt_uregs regs;
	int r;

	memset(c, 0, sizeof(*c));
	if (pt->have_info) {
		struct pt_sysinfo si;

		memset(&si, 0, sizeof(si));
		if (pt_req(PT_GET_SYSCALL_INFO, tid, sizeof(si), (uintptr_t)&si) > 0) {
			c->op = si.op;
			c->compat = si.arch != PT_AUDIT_ARCH;
			c->ip = si.ip;
			c->sp = si.sp;
			if (si.op == PT_INFO_ENTRY || si.op == PT_INFO_SECCOMP) {
				/* entry and seccomp share the layout of nr and args */
				c->nr = (uint32_t)si.u.entry.nr;
				memcpy(c->args, si.u.entry.args, sizeof(c->args));
			} else if (si.op == PT_INFO_EXIT) {
				c->ret = si.u.exit.rval;
			}
			return 0;
		}
		if (errno != EIO && errno != EINVAL)
			return -errno;
		pt->have_info = false;
	}
	r = pt_regs_read(tid, &regs);
	if (r < 0)
		return r;
	c->op = PT_INFO_NONE;
	c->compat = regs.compat;
	c->nr = regs.nr;
	memcpy(c->args, regs.args, sizeof(c->args));
	c->ret = regs.ret;
	c->ip = regs.ip;
	c->sp = regs.sp;
	return 0;
}

/* ---- records ---- */

static bool record_enter(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	const struct sys_info *si = sys_info(pt->arch, c->nr);
	uint64_t ips[SYSREC_IPS_MAX];
	struct pt_entry e;

	memset(&e, 0, sizeof(e));
	e.kind = SYSREC_ENTER;
	e.arch = (uint8_t)pt->arch;
	e.pid = task_pid(t);
	e.tid = (uint32_t)t->tid;
	e.nr = c->nr;
	e.ns = pt->now;
	memcpy(e.args, c->args, sizeof(e.args));
	ips[0] = c->ip;
	e.nips = (uint16_t)(1 + stack_walk(pt, t->tid, ips + 1, SYSREC_IPS_MAX - 1));
	e.str_len = PT_NO_STR;
	for (unsigned i = 0; si && i < 6; i++) {
		if (si->arg[i] == SYS_ARG_PATH) {
			ssize_t n = remote_read(pt, t->tid, c->args[i], pt->str, sizeof(pt->str));

			if (n >= 0) {
				const char *nul = memchr(pt->str, '\0', (size_t)n);

				e.str_len = (uint32_t)(nul ? nul - pt->str : n);
			}
			break;
		}
	}
	return queue_push(pt, t, &e, ips, pt->str);
}

static void record_exit(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	struct pt_entry e;

	memset(&e, 0, sizeof(e));
	e.kind = SYSREC_EXIT;
	e.arch = (uint8_t)pt->arch;
	e.pid = task_pid(t);
	e.tid = (uint32_t)t->tid;
	e.nr = t->nr;
	e.ns = pt->now;
	e.ret = c->ret;
	e.str_len = PT_NO_STR;
	queue_push(pt, t, &e, NULL, NULL);
}

/* ---- stops ---- */

/* The next resume will detach the task: pt_release asked for a detach and
 * no SIGSTOP of ours is on its way to it. */
static bool task_detaching(struct pt *pt, struct pt_task *t)
{
	bool pending;

	if (atomic_load(&pt->stopping) != PT_STOP_DETACH)
		return false;
	pthread_mutex_lock(&pt->lock);
	pending = t->stop_sent;
	pthread_mutex_unlock(&pt->lock);
	return !pending;
}

/* Lets the task go on, delivering `sig`: to its next syscall exit when a
 * call is in progress or every syscall is watched, else to the next stop
 * the filter asks for.  When detaching, detaches it instead. */
static void task_resume(struct pt *pt, struct pt_task *t, int sig)
{
	int req = !pt->seccomp || (t->flags & PT_IN_SYSCALL) ? PTRACE_SYSCALL : PTRACE_CONT;

	if (task_detaching(pt, t)) {
		pt_req(PTRACE_DETACH, t->tid, 0, (uintptr_t)sig);
		task_remove(pt, t);
		return;
	}
	/* ESRCH: killed meanwhile; its death is reported next */
	pt_req(req, t->tid, 0, (uintptr_t)sig);
}

/* A call starts: records it when selected. */
static void call_enter(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	t->flags = (t->flags & ~(uint32_t)(PT_RECORDING | PT_ENTER_LOST)) | PT_IN_SYSCALL;
	t->nr = c->nr;
	if (c->compat)
		return;
	if (t->flags & PT_PRELUDE) {
		if (c->nr != SYS_execve && c->nr != SYS_execveat)
			return;
		t->flags &= ~(uint32_t)PT_PRELUDE;
	}
	if (!sys_set_has(&pt->cfg.filter, c->nr) || task_detaching(pt, t))
		return;
	t->flags |= record_enter(pt, t, c) ? PT_RECORDING : PT_ENTER_LOST;
}

static void call_exit(struct pt *pt, struct pt_task *t, const struct pt_call *c)
{
	if (t->flags & PT_RECORDING)
		record_exit(pt, t, c);
	else if (t->flags & PT_ENTER_LOST)
		queue_lose(pt, t);
	t->flags &= ~(uint32_t)(PT_IN_SYSCALL | PT_RECORDING | PT_ENTER_LOST);
}

/* PTRACE_EVENT_SECCOMP: a selected call is entering.  Since Linux 4.8 the
 * next stop after PTRACE_SYSCALL is its syscall-exit-stop; before, a
 * syscall-entry-stop came first (PT_ENTRY_DUE). */
static void seccomp_stop(struct pt *pt, struct pt_task *t)
{
	struct pt_call c;

	if (!call_read(pt, t->tid, &c) && !c.compat) {
		call_enter(pt, t, &c);
		if (pt->old_order)
			t->flags |= PT_ENTRY_DUE;
	}
	task_resume(pt, t, 0);
}

static void syscall_stop(struct pt *pt, struct pt_task *t)
{
	struct pt_call c;
	bool entry;

	if (call_read(pt, t->tid, &c) < 0) {
		task_resume(pt, t, 0);
		return;
	}
	if (c.op == PT_INFO_ENTRY || c.op == PT_INFO_EXIT)
		entry = c.op == PT_INFO_ENTRY;
	else if (pt->seccomp)
		entry = t->flags & PT_ENTRY_DUE;
	else
		entry = !(t->flags & PT_IN_SYSCALL);
	if (pt->seccomp && entry) {
		/* the entry-stop after a seccomp stop (Linux < 4.8) */
		t->flags &= ~(uint32_t)PT_ENTRY_DUE;
	} else if (entry) {
		call_enter(pt, t, &c);
	} else if (t->flags & PT_IN_SYSCALL) {
		/* an exit with no entry seen (after an attach) is ignored */
		call_exit(pt, t, &c);
	}
	task_resume(pt, t, 0);
}

/* A fork, vfork or clone event in the parent: the new task is traced
 * already and its first stop may come before or after this. */
static void task_born(struct pt *pt, struct pt_task *parent, pid_t tid, int event)
{
	struct pt_task *t = task_find(pt, tid);
	pid_t tgid = tid;

	if (event == PTRACE_EVENT_CLONE) {
		/* a thread, or a process made by clone without SIGCHLD */
		tgid = proc_tgid(tid);
		if (tgid <= 0)
			tgid = (pid_t)task_pid(parent);
	}
	if (t) {
		t->tgid = tgid;
		return;
	}
	if (!task_add(pt, tid, tgid, 0, false))
		fprintf(stderr, "layerprof: ptrace: out of memory for task %d: not traced\n", (int)tid);
}

/* PTRACE_EVENT_EXEC in task t, now the group's leader; `former` is the tid
 * the execing thread had (another thread than the leader may call execve:
 * the leader is gone and the execing thread takes its tid).  Its call in
 * progress (the execve) continues under the new tid. */
static void task_exec(struct pt *pt, struct pt_task *t, pid_t former)
{
	if (former != t->tid) {
		struct pt_task *old = task_find(pt, former);

		if (old) {
			t->flags = old->flags;
			t->nr = old->nr;
			pthread_mutex_lock(&pt->lock);
			t->lost += old->lost;
			old->lost = 0;
			t->stop_sent = old->stop_sent;
			pthread_mutex_unlock(&pt->lock);
			task_remove(pt, old);
		}
	}
	t->tgid = t->tid;
	t->flags &= ~(uint32_t)PT_PRELUDE;
	if (t->tid == pt->main_pid && pt->spawning) {
		pt->spawning = false;
		close(pt->errpipe);
		pt->errpipe = -1;
		pthread_mutex_lock(&pt->lock);
		pt->setup = 1;
		pthread_cond_broadcast(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
	}
}

static void event_stop(struct pt *pt, struct pt_task *t, int event)
{
	unsigned long msg = 0;

	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		if (!pt_req(PTRACE_GETEVENTMSG, t->tid, 0, (uintptr_t)&msg))
			task_born(pt, t, (pid_t)msg, event);
		break;
	case PTRACE_EVENT_EXEC:
		if (!pt_req(PTRACE_GETEVENTMSG, t->tid, 0, (uintptr_t)&msg))
			task_exec(pt, t, (pid_t)msg);
		break;
	case PTRACE_EVENT_SECCOMP:
		seccomp_stop(pt, t);
		return;
	case PTRACE_EVENT_STOP:
		/* seized tasks: the first stop, an interrupt or a group-stop */
		if (!t->started)
			task_start(pt, t);
		break;
	default:
		break;
	}
	task_resume(pt, t, 0);
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* A signal-delivery-stop or a group-stop. */
static void signal_stop(struct pt *pt, struct pt_task *t, int sig)
{
	siginfo_t si;
	bool ours = false;

	if (!t->started) {
		task_start(pt, t);
		if (sig == SIGSTOP && !pt->seize) {
			/* the SIGSTOP every new task begins with */
			task_resume(pt, t, 0);
			return;
		}
	}
	if (sig == SIGSTOP && atomic_load(&pt->stopping) == PT_STOP_DETACH) {
		pthread_mutex_lock(&pt->lock);
		ours = t->stop_sent;
		t->stop_sent = false;
		pthread_mutex_unlock(&pt->lock);
	}
	if (ours) {
		task_resume(pt, t, 0);
		return;
	}
	if (is_stop_signal(sig) && pt_req(PTRACE_GETSIGINFO, t->tid, 0, (uintptr_t)&si) < 0 && errno == EINVAL) {
		/* a group-stop: resumed, see the top of the file */
		task_resume(pt, t, 0);
		return;
	}
	task_resume(pt, t, sig);
}

/* The child ended before its exec: says why in pt->err. */
static void spawn_failed(struct pt *pt, int status)
{
	struct pt_child_err ce;
	const char *what = pt->argv[0];
	int r;

	if (read(pt->errpipe, &ce, sizeof(ce)) == (ssize_t)sizeof(ce) && ce.err > 0) {
		r = -ce.err;
		if (ce.stage == PT_CHILD_TRACEME)
			snprintf(pt->err, sizeof(pt->err), "PTRACE_TRACEME: %s", strerror(ce.err));
		else if (ce.stage == PT_CHILD_SECCOMP)
			snprintf(pt->err, sizeof(pt->err), "cannot install the seccomp filter: %s", strerror(ce.err));
		else
			snprintf(pt->err, sizeof(pt->err), "cannot run '%s': %s", what, strerror(ce.err));
	} else {
		r = -ECHILD;
		snprintf(pt->err, sizeof(pt->err), "'%s' ended before it started (wait status %#x)", what,
		         (unsigned)status);
	}
	pt->spawning = false;
	close(pt->errpipe);
	pt->errpipe = -1;
	pthread_mutex_lock(&pt->lock);
	pt->setup = r;
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
}

static void task_gone(struct pt *pt, pid_t tid, int status)
{
	struct pt_task *t = task_find(pt, tid);

	if (tid == pt->main_pid) {
		pthread_mutex_lock(&pt->lock);
		pt->main_exited = true;
		pt->main_status = status;
		pthread_mutex_unlock(&pt->lock);
		if (pt->spawning)
			spawn_failed(pt, status);
	}
	if (t)
		task_remove(pt, t);
}

static void pt_handle(struct pt *pt, pid_t tid, int status)
{
	struct pt_task *t;
	int sig, event;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		task_gone(pt, tid, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	pt->now = now_ns();
	if (!(++pt->stops & 1023)) {
		pthread_mutex_lock(&pt->lock);
		pt->stops_pub = pt->stops;
		pthread_mutex_unlock(&pt->lock);
	}
	t = task_find(pt, tid);
	if (!t) {
		/* a new task whose first stop came before its parent's event */
		t = task_add(pt, tid, 0, 0, false);
		if (!t) {
			pt_req(PTRACE_DETACH, tid, 0, 0);
			return;
		}
	}
	if (atomic_load(&pt->stopping) == PT_STOP_KILL) {
		/* SIGKILL ends the stop; the death is reported next */
		kill(tid, SIGKILL);
		return;
	}
	sig = WSTOPSIG(status);
	event = (unsigned)status >> 16;
	if (sig == PT_SYSCALL_SIG)
		syscall_stop(pt, t);
	else if (event)
		event_stop(pt, t, event);
	else
		signal_stop(pt, t, sig);
}

/* ---- starting ---- */

/* The seccomp program: a native call whose number is in the filter stops
 * the tracee (SECCOMP_RET_TRACE), anything else runs.  Ranges of numbers
 * are tested in ascending order, four instructions each (2053 at most,
 * under BPF_MAXINSNS), with jumps of at most three so no offset overflows. */
static int filter_build(struct pt *pt)
{
	const struct sys_set *set = &pt->cfg.filter;
	struct sock_filter *ins;
	unsigned n = 0, ranges = 0;

	for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++)
		if (sys_set_has(set, nr) && (nr == 0 || !sys_set_has(set, nr - 1)))
			ranges++;
	ins = calloc(5 + 4 * ranges, sizeof(*ins));
	if (!ins)
		return -ENOMEM;
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	ins[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PT_AUDIT_ARCH, 1, 0);
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (uint32_t lo = 0; lo < SYS_NR_MAX; lo++) {
		uint32_t hi = lo;

		if (!sys_set_has(set, lo))
			continue;
		while (hi + 1 < SYS_NR_MAX && sys_set_has(set, hi + 1))
			hi++;
		/* above the range: the next one; below: no later range holds it */
		ins[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, hi, 3, 0);
		ins[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 1);
		ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
		ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		lo = hi;
	}
	ins[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	pt->prog.len = (unsigned short)n;
	pt->prog.filter = ins;
	return 0;
}

/* In the forked child: only async-signal-safe calls until the exec. */
static void __attribute__((noreturn)) child_fail(int fd, int stage)
{
	struct pt_child_err ce = { stage, errno };

	if (write(fd, &ce, sizeof(ce)) < 0)
		_exit(127);
	_exit(127);
}

/* The child stops for its tracer before it installs the filter: until the
 * tracer has set PTRACE_O_TRACESECCOMP, a call the filter selects would
 * fail with ENOSYS, and raise() itself makes calls a filter may select. */
static void __attribute__((noreturn)) child_run(struct pt *pt, int fd)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
		child_fail(fd, PT_CHILD_TRACEME);
	raise(SIGSTOP);
	if (pt->seccomp && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	                    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &pt->prog, 0, 0) < 0))
		child_fail(fd, PT_CHILD_SECCOMP);
	execvpe(pt->argv[0], pt->argv, pt->envp);
	child_fail(fd, PT_CHILD_EXEC);
}

static int options(const struct pt *pt)
{
	return PT_OPTIONS | (pt->cfg.keep_running ? 0 : PTRACE_O_EXITKILL);
}

/* Forks the child and handles its first stop; the loop then runs it up to
 * its exec, which ends the setup. */
static int pt_do_spawn(struct pt *pt)
{
	int fds[2], status, r;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(pt->err, sizeof(pt->err), "cannot create a pipe: %s", strerror(-r));
		return r;
	}
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child_run(pt, fds[1]);
	}
	if (pid < 0) {
		r = -errno;
		snprintf(pt->err, sizeof(pt->err), "cannot fork: %s", strerror(-r));
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	close(fds[1]);
	pt->errpipe = fds[0];
	pt->main_pid = pid;
	while (waitpid(pid, &status, __WALL) < 0) {
		if (errno != EINTR) {
			r = -errno;
			snprintf(pt->err, sizeof(pt->err), "cannot wait for the child: %s", strerror(-r));
			goto kill;
		}
	}
	if (!WIFSTOPPED(status)) {
		pt->spawning = true;
		spawn_failed(pt, status);
		return pt->setup;
	}
	if (pt_req(PTRACE_SETOPTIONS, pid, 0, (uintptr_t)options(pt)) < 0) {
		r = -errno;
		snprintf(pt->err, sizeof(pt->err), "PTRACE_SETOPTIONS: %s", strerror(-r));
		goto kill;
	}
	if (!task_add(pt, pid, pid, pt->seccomp ? 0 : PT_PRELUDE, true)) {
		r = -ENOMEM;
		snprintf(pt->err, sizeof(pt->err), "out of memory");
		goto kill;
	}
	pt->spawning = true;
	pt_req(pt->seccomp ? PTRACE_CONT : PTRACE_SYSCALL, pid, 0, 0);
	return 0;
kill:
	/* the loop reaps it (not spawning: the reason stays) */
	kill(pid, SIGKILL);
	return r;
}

/* Are we (the tracer thread) tracing `tid` already?  A thread born while
 * attaching is traced from its birth (PTRACE_O_TRACECLONE). */
static bool traced_by_us(pid_t tid)
{
	return proc_status_field(tid, "\nTracerPid:") == (long)syscall(SYS_gettid);
}

/* Seizes every thread of the process, rescanning for threads born
 * meanwhile, and interrupts each so that the loop can start watching its
 * syscalls.  On failure the loop detaches what was seized. */
static int pt_do_attach(struct pt *pt)
{
	pid_t pid = pt->attach_pid;
	char path[64];
	int r = 0;

	pt->main_pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (int pass = 0; pass < PT_ATTACH_PASSES; pass++) {
		DIR *d = opendir(path);
		struct dirent *de;
		int added = 0;

		if (!d) {
			r = -errno;
			snprintf(pt->err, sizeof(pt->err), "cannot list the threads of %d: %s", (int)pid, strerror(-r));
			goto fail;
		}
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);

			if (tid <= 0 || task_find(pt, tid))
				continue;
			if (pt_req(PTRACE_SEIZE, tid, 0, (uintptr_t)options(pt)) < 0) {
				if (errno == ESRCH)
					continue;
				if (errno != EPERM || !traced_by_us(tid)) {
					r = -errno;
					snprintf(pt->err, sizeof(pt->err), "cannot attach to thread %d of %d: %s",
					         (int)tid, (int)pid, strerror(-r));
					closedir(d);
					goto fail;
				}
			} else {
				pt_req(PTRACE_INTERRUPT, tid, 0, 0);
			}
			if (!task_add(pt, tid, pid, 0, false)) {
				r = -ENOMEM;
				snprintf(pt->err, sizeof(pt->err), "out of memory");
				closedir(d);
				goto fail;
			}
			added++;
		}
		closedir(d);
		if (!added)
			break;
	}
	if (pt->ntasks)
		return 0;
	r = -ESRCH;
	snprintf(pt->err, sizeof(pt->err), "no such process: %d", (int)pid);
fail:
	atomic_store(&pt->stopping, PT_STOP_DETACH);
	return r;
}

static void *pt_thread(void *arg)
{
	struct pt *pt = arg;
	sigset_t all;
	int r;

	/* signals for the program go to its other threads, except SIGCHLD:
	 * every ptrace stop sends this thread one, which the kernel drops at
	 * once when it is ignored (the default) and not blocked; blocked, it
	 * would be queued and wake another thread on each stop */
	sigfillset(&all);
	sigdelset(&all, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	r = pt->attach_pid ? pt_do_attach(pt) : pt_do_spawn(pt);
	if (r < 0 || !pt->spawning) {
		pthread_mutex_lock(&pt->lock);
		pt->setup = r < 0 ? r : 1;
		pthread_cond_broadcast(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
	}
	for (;;) {
		int status;
		pid_t tid;

		if (atomic_load(&pt->stopping) == PT_STOP_DETACH && !pt->ntasks)
			break;
		/* __WNOTHREAD: only this thread's children and tracees, never
		 * other children of the process */
		tid = waitpid(-1, &status, __WALL | __WNOTHREAD);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: every tracee is gone */
		}
		pt_handle(pt, tid, status);
	}
	pthread_mutex_lock(&pt->lock);
	while (pt->ntasks) {
		/* gone without a report (ECHILD): nothing left to trace */
		struct pt_task *t = pt->tasks[--pt->ntasks];

		queue_put_lost(pt, t, true);
		free(t);
	}
	pt->last = NULL;
	pt->stops_pub = pt->stops;
	pt->finished = true;
	if (!pt->setup) {
		pt->setup = -ECHILD;
		snprintf(pt->err, sizeof(pt->err), "the tracer ended before the program started");
	}
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
	if (pt->errpipe >= 0)
		close(pt->errpipe);
	pt->errpipe = -1;
	return NULL;
}

static void pt_free(struct pt *pt)
{
	if (!pt)
		return;
	for (size_t i = 0; i < pt->ntasks; i++)
		free(pt->tasks[i]);
	free(pt->tasks);
	free(pt->fill.buf);
	free(pt->spare.buf);
	free(pt->prog.filter);
	pthread_cond_destroy(&pt->cond);
	pthread_mutex_destroy(&pt->lock);
	free(pt);
}

static struct pt *pt_new(const struct systrace *st)
{
	struct pt *pt = calloc(1, sizeof(*pt));
	pthread_condattr_t ca;
	struct utsname u;
	int major = 0, minor = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (!pt)
		return NULL;
	pt->cfg = st->cfg;
	pt->arch = sys_arch_native();
	pt->errpipe = -1;
	pt->have_info = true;
	pt->page = page > 0 ? (size_t)page : 4096;
	if (!uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2)
		pt->old_order = major < 4 || (major == 4 && minor < 8);
	atomic_init(&pt->stopping, PT_STOP_NONE);
	pthread_mutex_init(&pt->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pt->cond, &ca);
	pthread_condattr_destroy(&ca);
	return pt;
}

/* Runs the tracer thread and waits for the end of its setup. */
static int pt_start(struct systrace *st, struct pt *pt, char *err, size_t errlen)
{
	int r = pthread_create(&pt->thread, NULL, pt_thread, pt);

	if (r) {
		snprintf(err, errlen, "cannot start the tracer thread: %s", strerror(r));
		pt_free(pt);
		return -r;
	}
	pt->thread_started = true;
	pthread_mutex_lock(&pt->lock);
	while (!pt->setup)
		pthread_cond_wait(&pt->cond, &pt->lock);
	r = pt->setup;
	if (r < 0)
		snprintf(err, errlen, "%s", pt->err);
	pthread_mutex_unlock(&pt->lock);
	if (r < 0) {
		pthread_join(pt->thread, NULL);
		pt_free(pt);
		return r;
	}
	st->impl = pt;
	return 0;
}

int pt_probe(char *err, size_t errlen)
{
	int status, r;
	pid_t pid;

	if (!PT_AUDIT_ARCH) {
		snprintf(err, errlen, "no register access for this architecture");
		return -ENOSYS;
	}
	/* a trial child that asks to be traced and stops: under qemu-user or
	 * a seccomp policy without ptrace, PTRACE_TRACEME fails */
	pid = fork();
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(errno > 0 && errno < 126 ? errno : 126);
		raise(SIGSTOP);
		_exit(0);
	}
	if (pid < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot fork: %s", strerror(-r));
		return r;
	}
	while (waitpid(pid, &status, __WALL) < 0) {
		if (errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "cannot wait for the trial child: %s", strerror(-r));
			kill(pid, SIGKILL);
			return r;
		}
	}
	if (!WIFSTOPPED(status)) {
		r = WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : EPERM;
		snprintf(err, errlen, "ptrace is not available: PTRACE_TRACEME: %s", strerror(r));
		return -r;
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
		;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
		r = -errno;
		snprintf(err, errlen, "seccomp is not available: %s", strerror(-r));
		return r;
	}
	return 0;
}

int pt_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen)
{
	struct pt *pt = pt_new(st);
	int r;

	if (!pt) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pt->argv = argv;
	pt->envp = envp ? envp : environ;
	pt->seccomp = !st->cfg.keep_running;
	if (pt->seccomp && filter_build(pt) < 0) {
		snprintf(err, errlen, "out of memory");
		pt_free(pt);
		return -ENOMEM;
	}
	r = pt_start(st, pt, err, errlen);
	if (!r)
		*pid = ((struct pt *)st->impl)->main_pid;
	return r;
}

int pt_attach(struct systrace *st, pid_t pid, char *err, size_t errlen)
{
	struct pt *pt;

	if (pid <= 0) {
		snprintf(err, errlen, "invalid pid %d", (int)pid);
		return -EINVAL;
	}
	pt = pt_new(st);
	if (!pt) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pt->attach_pid = pid;
	pt->seize = true;
	return pt_start(st, pt, err, errlen);
}

long pt_poll(struct systrace *st)
{
	struct pt *pt = st->impl;
	struct pt_queue q;
	uint64_t lost_nothread;
	long n = 0;

	if (!pt)
		return 0;
	pthread_mutex_lock(&pt->lock);
	q = pt->fill;
	pt->fill = pt->spare;
	pt->dropping = false;
	lost_nothread = pt->lost_nothread;
	pt->lost_nothread = 0;
	st->stats.lost = pt->lost_total;
	st->stats.stops = pt->stops_pub;
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);

	for (size_t off = 0; off < q.len;) {
		const struct pt_entry *e = (const struct pt_entry *)(const void *)(q.buf + off);
		struct sysrec rec;

		off += e->size;
		if (e->kind == PT_LOST) {
			if (st->ops.lost)
				st->ops.lost(st->ops.ctx, e->pid, e->tid, (uint64_t)e->ret);
			continue;
		}
		memset(&rec, 0, sizeof(rec));
		rec.kind = e->kind;
		rec.arch = e->arch;
		rec.nips = e->nips;
		rec.pid = e->pid;
		rec.tid = e->tid;
		rec.nr = e->nr;
		rec.ns = e->ns;
		memcpy(rec.args, e->args, sizeof(rec.args));
		rec.ret = e->ret;
		memcpy(rec.ips, e + 1, e->nips * sizeof(uint64_t));
		if (e->str_len != PT_NO_STR) {
			rec.str = (const char *)(e + 1) + e->nips * sizeof(uint64_t);
			rec.str_len = e->str_len;
		}
		if (st->ops.sys)
			st->ops.sys(st->ops.ctx, &rec);
		n++;
	}
	if (lost_nothread && st->ops.lost)
		st->ops.lost(st->ops.ctx, 0, 0, lost_nothread);
	st->stats.records += (uint64_t)n;
	q.len = 0;
	q.count = 0;
	pt->spare = q;
	return n;
}

bool pt_exited(struct systrace *st, int *status)
{
	struct pt *pt = st->impl;
	bool done;

	if (!pt)
		return false;
	pthread_mutex_lock(&pt->lock);
	done = pt->main_exited;
	if (done && status)
		*status = pt->main_status;
	pthread_mutex_unlock(&pt->lock);
	return done;
}

/* Wakes the tracer thread into killing or detaching every task.  Killing:
 * SIGKILL to each, and the tracer kills whatever else stops.  Detaching:
 * SIGSTOP (tkill) to each task that has had its first stop; the tracer
 * detaches it at that signal's stop, passing no signal, so that it goes on
 * running; a task not signalled is detached at its next stop.  A task
 * whose first stop is still to come is not signalled: its own SIGSTOP
 * would merge with ours and a second one could stop it after the detach. */
static void pt_stop_tasks(struct pt *pt)
{
	int mode = pt->cfg.keep_running ? PT_STOP_DETACH : PT_STOP_KILL;

	pthread_mutex_lock(&pt->lock);
	if (!pt->finished) {
		atomic_store(&pt->stopping, mode);
		for (size_t i = 0; i < pt->ntasks; i++) {
			struct pt_task *t = pt->tasks[i];

			if (mode == PT_STOP_KILL)
				kill(t->tid, SIGKILL);
			else if (t->started && !t->stop_sent && !syscall(SYS_tkill, t->tid, SIGSTOP))
				t->stop_sent = true;
		}
	}
	pthread_mutex_unlock(&pt->lock);
}

void pt_release(struct systrace *st)
{
	struct pt *pt = st->impl;

	if (!pt)
		return;
	if (pt->thread_started) {
		pt_stop_tasks(pt);
		pthread_join(pt->thread, NULL);
	}
	pt_poll(st);
	pt_free(pt);
	st->impl = NULL;
}
