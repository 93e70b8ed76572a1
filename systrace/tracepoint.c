/* The tracepoint backend of the syscall tracer: raw_syscalls:sys_enter and
 * sys_exit opened through perf_event_open on every online CPU, all events of
 * one CPU writing into one mmap'd ring, which tp_poll reads and merges into
 * time order.  The tracee pays only for the kernel's tracepoint and a short
 * user stack walk; everything else happens in the caller's process. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "systrace/backend.h"
#include "systrace/child.h"
#include "systrace/perfring.h"
#include "systrace/tracefs.h"

#define TP_FILTER_MAX 3072u   /* longest id filter handed to the kernel */
#define TP_THREADS_MAX 65536u /* threads of one attached process */
#define TP_ATTACH_SCANS 16    /* passes over /proc/<pid>/task */
#define TP_SAMPLE_HEAD 24u    /* sample body before the callchain: tid, time, nr */
#define TP_SAMPLE_NS 8u       /* where the time lies in a sample */

struct tp_layout {
	uint32_t enter_id, exit_id;
	struct tracefs_field type; /* common_type: which tracepoint wrote the record */
	struct tracefs_field id, args, ret;
};

/* What an older kernel may refuse; dropped one by one on EINVAL. */
enum tp_feature {
	TP_STACK_LIMIT = 1 << 0, /* sample_max_stack (Linux 4.8) */
	TP_LOST_COUNT = 1 << 1,  /* PERF_FORMAT_LOST (Linux 6.0): losses not yet reported by a record */
};

struct tp_state {
	struct tp_layout lay;
	unsigned features;
	bool features_known; /* fixed by the first event the kernel accepted */
	bool attached;       /* twins possible: see tp_attach */
	char *filter;        /* the id filter for the kernel, or NULL */
	enum sys_arch arch;
	/* spawn: the child's tid until it calls execve (what it does before
	 * is the tracer's code, and is dropped); 0 after */
	uint32_t hold_tid;
	uint32_t exec_nr[2]; /* execve, execveat; UINT32_MAX: none */
	struct perfrings pr;
	int *fds; /* every event, ring owners included */
	size_t nfds, fds_cap;
	uint64_t lost_reported; /* by PERF_RECORD_LOST */
	struct systrace *st;    /* while draining */
	char str[SYSREC_STR_MAX];
};

/* The last sample taken from a ring (in perfring.last), to drop a twin
 * when attached: tid, nr, kind, and args[0] ^ args[1] (entry) or ret. */
enum { TP_LAST_TID, TP_LAST_NR, TP_LAST_KIND, TP_LAST_VAL };

/* Parses one raw_syscalls format file: its tracepoint id and the fields
 * the reader needs.  `ret` is NULL for sys_enter, `args` NULL for sys_exit. */
static int tp_format_load(const char *root, const char *event, uint32_t *tp_id, struct tp_layout *lay, bool enter,
                          char *err, size_t errlen)
{
	struct tracefs_field type, id, more;
	char *fmt;
	int r = tracefs_format(root, "raw_syscalls", event, &fmt, tp_id, err, errlen);

	if (r)
		return r;
	r = -EINVAL;
	if (!tracefs_field(fmt, "common_type", &type) || !tracefs_field(fmt, "id", &id) ||
	    !tracefs_field(fmt, enter ? "args" : "ret", &more)) {
		snprintf(err, errlen, "cannot parse the raw_syscalls/%s format: a field is missing", event);
		goto out;
	}
	/* bounded here, so the reader may trust them against a record's size */
	if (type.size != 2 || (id.size != 4 && id.size != 8) ||
	    (enter ? more.size != 24 && more.size != 48 : more.size != 4 && more.size != 8) || type.off > 64 ||
	    id.off > 64 || more.off > 64) {
		snprintf(err, errlen, "cannot parse the raw_syscalls/%s format: unexpected field sizes", event);
		goto out;
	}
	lay->type = type;
	lay->id = id;
	if (enter)
		lay->args = more;
	else
		lay->ret = more;
	r = 0;
out:
	free(fmt);
	return r;
}

/* Finds tracefs and reads both tracepoints' formats. */
static int tp_layout_load(struct tp_layout *lay, char *err, size_t errlen)
{
	const char *root = tracefs_root("raw_syscalls", "sys_enter", err, errlen);
	struct tp_layout exit_lay;
	int r;

	if (!root)
		return -ENOENT;
	memset(lay, 0, sizeof(*lay));
	r = tp_format_load(root, "sys_enter", &lay->enter_id, lay, true, err, errlen);
	if (!r)
		r = tp_format_load(root, "sys_exit", &lay->exit_id, &exit_lay, false, err, errlen);
	if (r)
		return r;
	/* both records start alike; the reader looks at common_type and id first */
	if (exit_lay.type.off != lay->type.off || exit_lay.id.off != lay->id.off || exit_lay.id.size != lay->id.size) {
		snprintf(err, errlen, "raw_syscalls sys_enter and sys_exit differ in layout");
		return -EINVAL;
	}
	lay->ret = exit_lay.ret;
	return 0;
}

static void tp_attr(struct perf_event_attr *a, const struct tp_layout *lay, unsigned features, bool enter)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = enter ? lay->enter_id : lay->exit_id;
	a->sample_period = 1;
	/* one layout for both events, so the reader needs no event id: the
	 * exit's callchain is empty (both halves excluded), costing 8 bytes */
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW;
	a->exclude_callchain_kernel = 1;
	a->exclude_callchain_user = !enter;
	if (enter && (features & TP_STACK_LIMIT))
		a->sample_max_stack = SYSREC_IPS_MAX;
	if (features & TP_LOST_COUNT)
		a->read_format = PERF_FORMAT_LOST;
	a->inherit = 1; /* threads and children created from now on */
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

/* Opens one event, settling on the first open which optional features
 * the kernel accepts. */
static int tp_open_event(struct tp_state *tp, bool enter, pid_t pid, int cpu)
{
	struct perf_event_attr attr;
	int fd;

	for (;;) {
		tp_attr(&attr, &tp->lay, tp->features, enter);
		fd = perf_open(&attr, pid, cpu);
		if (fd >= 0) {
			tp->features_known = true;
			return fd;
		}
		if (tp->features_known || (fd != -EINVAL && fd != -E2BIG && fd != -EOVERFLOW) || !tp->features)
			return fd;
		if (tp->features & TP_LOST_COUNT)
			tp->features &= ~(unsigned)TP_LOST_COUNT;
		else
			tp->features &= ~(unsigned)TP_STACK_LIMIT;
	}
}

int tp_probe(char *err, size_t errlen)
{
	struct tp_state tp;
	int fd, r;

	memset(&tp, 0, sizeof(tp));
	tp.features = TP_STACK_LIMIT | TP_LOST_COUNT;
	r = tp_layout_load(&tp.lay, err, errlen);
	if (r)
		return r;
	fd = tp_open_event(&tp, true, 0, -1);
	if (fd < 0)
		return perf_open_error(fd, "", err, errlen);
	close(fd);
	return 0;
}

/* The kernel-side id filter for the selected syscalls, as ranges:
 * "(id >= 0 && id <= 3) || id == 9".  NULL when every syscall is selected,
 * none is, or the expression would be too long; the reader checks every
 * record against the set in any case. */
static char *tp_filter_expr(const struct sys_set *set)
{
	char *buf;
	size_t len = 0;
	bool all = true, any = false;

	for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++) {
		all = all && sys_set_has(set, nr);
		any = any || sys_set_has(set, nr);
	}
	if (all || !any)
		return NULL;
	buf = malloc(TP_FILTER_MAX);
	if (!buf)
		return NULL;
	for (uint32_t a = 0; a < SYS_NR_MAX; a++) {
		uint32_t b = a;
		int n;

		if (!sys_set_has(set, a))
			continue;
		while (b + 1 < SYS_NR_MAX && sys_set_has(set, b + 1))
			b++;
		if (a == b)
			n = snprintf(buf + len, TP_FILTER_MAX - len, "%sid == %u", len ? " || " : "", a);
		else
			n = snprintf(buf + len, TP_FILTER_MAX - len, "%s(id >= %u && id <= %u)", len ? " || " : "", a,
			             b);
		if (n < 0 || (size_t)n >= TP_FILTER_MAX - len) {
			free(buf);
			return NULL;
		}
		len += (size_t)n;
		a = b;
	}
	return buf;
}

static int tp_keep_fd(struct tp_state *tp, int fd)
{
	if (tp->nfds == tp->fds_cap) {
		size_t cap = tp->fds_cap ? 2 * tp->fds_cap : 64;
		int *fds = realloc(tp->fds, cap * sizeof(*fds));

		if (!fds)
			return -ENOMEM;
		tp->fds = fds;
		tp->fds_cap = cap;
	}
	tp->fds[tp->nfds++] = fd;
	return 0;
}

/* Opens sys_enter and sys_exit for task `tid` on every CPU, each writing
 * into that CPU's ring.  Returns 0, -ESRCH when the task is gone, or -errno
 * with the reason in err. */
static int tp_open_task(struct tp_state *tp, pid_t tid, char *err, size_t errlen)
{
	char what[64];

	for (int i = 0; i < tp->pr.nrings; i++) {
		struct perfring *ring = &tp->pr.rings[i];

		for (int enter = 1; enter >= 0; enter--) {
			int fd = tp_open_event(tp, enter, tid, ring->cpu), r;

			if (fd == -ESRCH)
				return fd;
			if (fd < 0) {
				snprintf(what, sizeof(what), " (task %d, CPU %d)", (int)tid, ring->cpu);
				return perf_open_error(fd, what, err, errlen);
			}
			r = tp_keep_fd(tp, fd);
			if (r) {
				close(fd);
				snprintf(err, errlen, "out of memory");
				return r;
			}
			if (ring->fd < 0) {
				r = perfring_map(&tp->pr, ring, fd, err, errlen);
			} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) != 0) {
				r = -errno;
				snprintf(err, errlen, "cannot share the CPU %d ring: %s", ring->cpu, strerror(-r));
			}
			if (r)
				return r;
			/* a kernel that refuses the filter costs the tracee more, not
			 * correctness: the reader drops unselected syscalls itself */
			if (tp->filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, tp->filter) != 0) {
				free(tp->filter);
				tp->filter = NULL;
			}
		}
	}
	return 0;
}

static void tp_state_free(struct tp_state *tp)
{
	if (!tp)
		return;
	perfrings_release(&tp->pr);
	for (size_t i = 0; i < tp->nfds; i++)
		close(tp->fds[i]);
	free(tp->fds);
	free(tp->filter);
	free(tp);
}

static struct tp_state *tp_state_new(const struct systrace *st, int *res, char *err, size_t errlen)
{
	struct tp_state *tp = calloc(1, sizeof(*tp));
	struct sys_set sel;
	int r;

	if (!tp) {
		snprintf(err, errlen, "out of memory");
		*res = -ENOMEM;
		return NULL;
	}
	tp->arch = sys_arch_native();
	tp->features = TP_STACK_LIMIT | TP_LOST_COUNT;
	r = tp_layout_load(&tp->lay, err, errlen);
	if (!r)
		r = perfrings_init(&tp->pr, st->cfg.buffer_pages, TP_SAMPLE_NS, true, err, errlen);
	if (r) {
		tp_state_free(tp);
		*res = r;
		return NULL;
	}
	/* the kernel passes the execs on, so that the spawned child's
	 * first one ends its hold; the reader drops them when unselected */
	sel = st->cfg.filter;
	for (int i = 0; i < 2; i++) {
		int nr = sys_lookup(tp->arch, i ? "execveat" : "execve");

		tp->exec_nr[i] = nr >= 0 ? (uint32_t)nr : UINT32_MAX;
		if (nr >= 0 && (uint32_t)nr < SYS_NR_MAX)
			sel.bits[nr / 64] |= UINT64_C(1) << (nr % 64);
	}
	tp->filter = tp_filter_expr(&sel);
	return tp;
}

int tp_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen)
{
	struct held_child child;
	struct tp_state *tp;
	int r = 0;

	tp = tp_state_new(st, &r, err, errlen);
	if (!tp)
		return r;
	r = held_child_fork(&child, st->path, argv, envp, err, errlen);
	if (r) {
		tp_state_free(tp);
		return r;
	}
	tp->hold_tid = (uint32_t)child.pid;
	r = tp_open_task(tp, child.pid, err, errlen);
	if (r == -ESRCH)
		snprintf(err, errlen, "the child died before exec");
	if (!r && st->cfg.held)
		r = st->cfg.held(st->cfg.held_ctx, child.pid, err, errlen);
	if (r)
		held_child_kill(&child);
	else
		r = held_child_run(&child, argv[0], err, errlen);
	if (r) {
		tp_state_free(tp);
		return r;
	}
	*pid = child.pid;
	st->impl = tp;
	return 0;
}

static int tp_cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* One pass over /proc/<pid>/task: opens the events of every thread not in
 * tids yet.  Returns the number of threads added, or -errno. */
static long tp_attach_scan(struct tp_state *tp, pid_t pid, pid_t *tids, size_t *ntids, char *err, size_t errlen)
{
	char path[64];
	struct dirent *de;
	long added = 0;
	DIR *dir;
	size_t known = *ntids;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir) {
		int r = -errno;

		snprintf(err, errlen, "cannot list '%s': %s", path, strerror(-r));
		return r;
	}
	while ((de = readdir(dir))) {
		long v = strtol(de->d_name, NULL, 10);
		pid_t tid = (pid_t)v;
		int r;

		if (v <= 0 || bsearch(&tid, tids, known, sizeof(*tids), tp_cmp_tid))
			continue;
		if (*ntids == TP_THREADS_MAX) {
			snprintf(err, errlen, "process %d has more than %u threads", (int)pid, TP_THREADS_MAX);
			added = -E2BIG;
			break;
		}
		r = tp_open_task(tp, tid, err, errlen);
		if (r == -ESRCH) /* the thread ended meanwhile */
			continue;
		if (r) {
			added = r;
			break;
		}
		tids[(*ntids)++] = tid;
		added++;
	}
	closedir(dir);
	qsort(tids, *ntids, sizeof(*tids), tp_cmp_tid);
	return added;
}

/* Every thread gets its own events (with inherit, so threads and children
 * it creates later are followed); threads created while we scan are caught
 * by scanning again until a pass finds none new.  A thread created during
 * the scan by one whose events were open already has inherited them, and
 * gets its own as well: each of its calls is then written twice, back to
 * back in the same ring, and the reader drops the twin (tp_twin).  Costs 2
 * descriptors per thread and CPU. */
int tp_attach(struct systrace *st, pid_t pid, char *err, size_t errlen)
{
	struct tp_state *tp;
	pid_t *tids = NULL;
	size_t ntids = 0;
	long added = 0;
	int r = 0, scan;

	tp = tp_state_new(st, &r, err, errlen);
	if (!tp)
		return r;
	tp->attached = true;
	tids = malloc(TP_THREADS_MAX * sizeof(*tids));
	if (!tids) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	for (scan = 0; scan < TP_ATTACH_SCANS; scan++) {
		added = tp_attach_scan(tp, pid, tids, &ntids, err, errlen);
		if (added <= 0)
			break;
	}
	if (added < 0)
		r = (int)added;
	else if (!ntids) {
		snprintf(err, errlen, "process %d has no threads left", (int)pid);
		r = -ESRCH;
	}
out:
	free(tids);
	if (r)
		tp_state_free(tp);
	else
		st->impl = tp;
	return r;
}

/* Little helpers for the raw record, whose fields are only 4-byte aligned. */
static uint64_t tp_get_u(const unsigned char *p, uint32_t size)
{
	uint32_t v32;
	uint64_t v64;

	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

static int64_t tp_get_s(const unsigned char *p, uint32_t size)
{
	int32_t v32;
	int64_t v64;

	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

/* Copies the path argument from the tracee, now: the call began earlier,
 * so the memory may have changed (str_late).  A process that is gone
 * leaves the record without its path.  The read is split at the page end
 * so that a path near an unmapped page still comes through. */
static void tp_read_path(struct tp_state *tp, struct sysrec *rec)
{
	const struct sys_info *info = sys_info((enum sys_arch)rec->arch, rec->nr);
	struct iovec local, remote[2];
	uint64_t addr = 0;
	size_t first;
	ssize_t n;

	if (!info)
		return;
	for (int i = 0; i < 6 && i < info->nargs; i++)
		if (info->arg[i] == SYS_ARG_PATH) {
			addr = rec->args[i];
			break;
		}
	if (!addr || addr > UINTPTR_MAX)
		return;
	first = tp->pr.page_size - (size_t)(addr % tp->pr.page_size);
	if (first > SYSREC_STR_MAX)
		first = SYSREC_STR_MAX;
	local.iov_base = tp->str;
	local.iov_len = SYSREC_STR_MAX;
	remote[0].iov_base = (void *)(uintptr_t)addr;
	remote[0].iov_len = first;
	remote[1].iov_base = (void *)(uintptr_t)(addr + first);
	remote[1].iov_len = SYSREC_STR_MAX - first;
	n = process_vm_readv((pid_t)rec->pid, &local, 1, remote, first < SYSREC_STR_MAX ? 2 : 1, 0);
	if (n <= 0)
		return;
	rec->str = tp->str;
	rec->str_len = (uint32_t)strnlen(tp->str, (size_t)n);
	rec->str_late = true;
}

/* A sample of either tracepoint: body is the record after its header. */
static bool tp_sample(struct systrace *st, struct tp_state *tp, const unsigned char *body, size_t len,
                      struct sysrec *rec)
{
	const struct tp_layout *lay = &tp->lay;
	const unsigned char *raw;
	uint64_t nchain, type;
	uint32_t raw_size;
	size_t at;
	int64_t id;
	bool enter;

	if (len < TP_SAMPLE_HEAD)
		return false;
	memset(rec, 0, sizeof(*rec));
	memcpy(&rec->pid, body, 4);
	memcpy(&rec->tid, body + 4, 4);
	memcpy(&rec->ns, body + 8, 8);
	memcpy(&nchain, body + 16, 8);
	if (nchain > (len - TP_SAMPLE_HEAD) / 8)
		return false;
	at = TP_SAMPLE_HEAD + (size_t)nchain * 8;
	if (len - at < 4)
		return false;
	memcpy(&raw_size, body + at, 4);
	raw = body + at + 4;
	if (raw_size > len - at - 4 || raw_size < lay->id.off + lay->id.size ||
	    raw_size < lay->type.off + lay->type.size)
		return false;
	type = tp_get_u(raw + lay->type.off, 4) & 0xffff;
	if (type != lay->enter_id && type != lay->exit_id)
		return false;
	enter = type == lay->enter_id;
	id = tp_get_s(raw + lay->id.off, lay->id.size);
	if (rec->tid == tp->hold_tid) {
		/* the spawned child before its exec: the tracer's own code */
		if (!enter || id < 0 || ((uint64_t)id != tp->exec_nr[0] && (uint64_t)id != tp->exec_nr[1]))
			return false;
		tp->hold_tid = 0;
	}
	/* -1: no syscall (e.g. a tracer skipped it); the reader filters too */
	if (id < 0 || !sys_set_has(&st->cfg.filter, (uint32_t)id))
		return false;
	rec->kind = enter ? SYSREC_ENTER : SYSREC_EXIT;
	rec->arch = (uint8_t)tp->arch;
	rec->nr = (uint32_t)id;
	if (enter) {
		uint32_t asize = lay->args.size / 6;

		if (raw_size < lay->args.off + lay->args.size)
			return false;
		for (int i = 0; i < 6; i++)
			rec->args[i] = tp_get_u(raw + lay->args.off + (size_t)i * asize, asize);
		/* PERF_CONTEXT_USER and friends mark where the user part begins */
		for (uint64_t i = 0; i < nchain && rec->nips < SYSREC_IPS_MAX; i++) {
			uint64_t ip;

			memcpy(&ip, body + TP_SAMPLE_HEAD + i * 8, 8);
			if (ip < PERF_CONTEXT_MAX)
				rec->ips[rec->nips++] = ip;
		}
	} else {
		if (raw_size < lay->ret.off + lay->ret.size)
			return false;
		rec->ret = tp_get_s(raw + lay->ret.off, lay->ret.size);
	}
	return true;
}

/* Is rec the twin of the sample just before it in the same ring: the
 * same hit written by two events of one thread (see tp_attach).  One
 * thread's calls alternate between entry and exit, so an entry directly
 * after the same entry cannot be a new call, except for calls that have no
 * exit record (signal returns) entered again with the same arguments
 * before anything else in this ring: rare enough to accept. */
static bool tp_twin(struct tp_state *tp, struct perfring *ring, const struct sysrec *rec)
{
	uint64_t now[4] = { rec->tid, rec->nr, rec->kind,
		            rec->kind == SYSREC_ENTER ? rec->args[0] ^ rec->args[1] : (uint64_t)rec->ret };
	bool twin;

	if (!tp->attached)
		return false;
	twin = !memcmp(ring->last, now, sizeof(now));
	memcpy(ring->last, now, sizeof(now));
	return twin;
}

/* Hands out one record of the merge (perfring_take_fn). */
static long tp_take(void *ctx, struct perfring *ring, const struct perf_event_header *h, const unsigned char *body)
{
	struct tp_state *tp = ctx;
	struct systrace *st = tp->st;
	struct sysrec rec;
	uint64_t count;
	uint32_t pid, tid;

	if (h->type == PERF_RECORD_SAMPLE) {
		if (!tp_sample(st, tp, body, h->size - sizeof(*h), &rec) || tp_twin(tp, ring, &rec))
			return 0;
		if (rec.kind == SYSREC_ENTER)
			tp_read_path(tp, &rec);
		st->ops.sys(st->ops.ctx, &rec);
		st->stats.records++;
		return 1;
	}
	if (perfring_lost(h, body, &count, &pid, &tid)) {
		tp->lost_reported += count;
		st->stats.lost += count;
		if (st->ops.lost)
			st->ops.lost(st->ops.ctx, pid, tid, count);
	}
	return 0;
}

static long tp_drain(struct systrace *st, struct tp_state *tp, uint64_t limit)
{
	tp->st = st;
	return perfrings_drain(&tp->pr, limit, tp_take, tp);
}

/* Records are handed out only up to the time the poll began.  A record
 * written earlier is complete by then, and a thread's earlier records
 * complete before its later ones begin; so a record of a thread that
 * moved to a CPU whose ring we read later cannot overtake one still being
 * written on the CPU it left. */
long tp_poll(struct systrace *st)
{
	struct tp_state *tp = st->impl;
	struct timespec now;

	if (!tp)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return tp_drain(st, tp, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
}

/* Losses the kernel counted but reported in no record: a full ring emits
 * its PERF_RECORD_LOST only with the next record that fits, which never
 * comes once the traced program has ended.  PERF_FORMAT_LOST reads each
 * event's count (losses of inherited events are counted on ours). */
static void tp_report_unseen_losses(struct systrace *st, struct tp_state *tp)
{
	uint64_t total = 0, v[2];

	if (!(tp->features & TP_LOST_COUNT))
		return;
	for (size_t i = 0; i < tp->nfds; i++)
		if (read(tp->fds[i], v, sizeof(v)) == (ssize_t)sizeof(v))
			total += v[1];
	if (total <= tp->lost_reported)
		return;
	st->stats.lost += total - tp->lost_reported;
	if (st->ops.lost)
		st->ops.lost(st->ops.ctx, 0, 0, total - tp->lost_reported);
	tp->lost_reported = total;
}

void tp_release(struct systrace *st)
{
	struct tp_state *tp = st->impl;

	if (!tp)
		return;
	tp_drain(st, tp, UINT64_MAX);
	tp_report_unseen_losses(st, tp);
	tp_state_free(tp);
	st->impl = NULL;
}
