/* The kernel event tracer (see ktrace.h).  Every selected tracepoint is
 * opened for all tasks on each online CPU, its records written into that
 * CPU's ring; the reader merges the rings by time and keeps the records
 * that concern the traced threads.  Which threads those are follows from
 * the records themselves: sched_process_fork (always opened) adds the
 * children of traced threads, in time order with everything else. */
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/kernevent.h"
#include "ktrace/ksystem.h"
#include "ktrace/ktrace_impl.h"

/* ---- the traced threads -------------------------------------------------- */

static uint32_t kt_hash(uint32_t tid, uint32_t cap)
{
	return (tid * 0x9e3779b1u) & (cap - 1);
}

static struct kt_task *task_find(struct ktrace *kt, uint32_t tid)
{
	if (!tid || !kt->tasks_cap)
		return NULL;
	for (uint32_t k = kt_hash(tid, kt->tasks_cap);; k = (k + 1) & (kt->tasks_cap - 1)) {
		if (kt->tasks[k].tid == tid)
			return &kt->tasks[k];
		if (!kt->tasks[k].tid)
			return NULL;
	}
}

static int task_add(struct ktrace *kt, uint32_t pid, uint32_t tid, bool held)
{
	struct kt_task *t = task_find(kt, tid);

	if (t) {
		t->pid = pid;
		t->held = held;
		return 0;
	}
	if ((kt->ntasks + 1) * 2 > kt->tasks_cap) {
		uint32_t cap = kt->tasks_cap ? 2 * kt->tasks_cap : 256;
		struct kt_task *n = calloc(cap, sizeof(*n)), *old = kt->tasks;

		if (!n)
			return -ENOMEM;
		for (uint32_t i = 0; i < kt->tasks_cap; i++) {
			uint32_t k;

			if (!old[i].tid)
				continue;
			for (k = kt_hash(old[i].tid, cap); n[k].tid; k = (k + 1) & (cap - 1))
				;
			n[k] = old[i];
		}
		free(old);
		kt->tasks = n;
		kt->tasks_cap = cap;
	}
	for (uint32_t k = kt_hash(tid, kt->tasks_cap);; k = (k + 1) & (kt->tasks_cap - 1))
		if (!kt->tasks[k].tid) {
			kt->tasks[k] = (struct kt_task){ .tid = tid, .pid = pid, .held = held };
			kt->ntasks++;
			return 0;
		}
}

/* Removes tid (reused by a process we do not trace): the entries after it
 * in its probe run move up. */
static void task_remove(struct ktrace *kt, uint32_t tid)
{
	struct kt_task *t = task_find(kt, tid);
	uint32_t i, j;

	if (!t)
		return;
	i = (uint32_t)(t - kt->tasks);
	kt->tasks[i].tid = 0;
	kt->ntasks--;
	for (j = (i + 1) & (kt->tasks_cap - 1); kt->tasks[j].tid; j = (j + 1) & (kt->tasks_cap - 1)) {
		struct kt_task m = kt->tasks[j];

		kt->tasks[j].tid = 0;
		kt->ntasks--;
		task_add(kt, m.pid, m.tid, m.held);
	}
}

/* The process of a new task: its Tgid, or 0 (not known) when it is gone
 * already (its own records will say). */
static uint32_t task_tgid(uint32_t tid)
{
	return ksystem_read_task(tid, NULL);
}

/* ---- block requests and timers of traced threads ------------------------ */

static struct kt_assoc *assoc_slot(struct ktrace *kt, uint8_t kind, uint64_t a, uint64_t b)
{
	uint64_t h = (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full) ^ kind;

	return &kt->assoc[(h >> 40) & (KT_ASSOC - 1)];
}

static void assoc_put(struct ktrace *kt, uint8_t kind, uint64_t a, uint64_t b, uint32_t pid, uint32_t tid)
{
	*assoc_slot(kt, kind, a, b) = (struct kt_assoc){ .a = a, .b = b, .kind = kind, .pid = pid, .tid = tid };
}

static struct kt_assoc *assoc_get(struct ktrace *kt, uint8_t kind, uint64_t a, uint64_t b)
{
	struct kt_assoc *s = assoc_slot(kt, kind, a, b);

	return s->kind == kind && s->a == a && s->b == b && s->tid ? s : NULL;
}

/* ---- opening -------------------------------------------------------------- */

static void kt_attr(struct perf_event_attr *a, const struct kt_event *e, bool lost_count)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = e->sw_fault ? PERF_TYPE_SOFTWARE : PERF_TYPE_TRACEPOINT;
	a->config = e->sw_fault ? PERF_COUNT_SW_PAGE_FAULTS : e->id;
	a->sample_period = 1;
	/* one layout up to the time for every event (the reader finds the
	 * event by its identifier, the merge the time at KT_SAMPLE_NS); the
	 * software fault event has its address after the time */
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
	                 (e->sw_fault ? PERF_SAMPLE_ADDR : PERF_SAMPLE_RAW);
	if (e->sw_fault) {
		a->exclude_kernel = 1; /* faults of user code, as page_fault_user */
		a->exclude_hv = 1;
	}
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	if (lost_count)
		a->read_format = PERF_FORMAT_LOST;
}

static int kt_cmp_id(const void *a, const void *b)
{
	uint64_t x = ((const struct kt_idmap *)a)->perf_id, y = ((const struct kt_idmap *)b)->perf_id;

	return (x > y) - (x < y);
}

/* Notes an event chosen by a pattern that the kernel cannot record
 * through perf (some ftrace internals): it is left out, with a warning. */
static void skip_event(struct kt_event *e, char *warn, size_t warnlen)
{
	static const char head[] = "left out, as perf cannot open them: ";
	size_t n = strlen(warn);

	e->skip = true;
	if (n + sizeof(head) + 2 * KT_NAME_MAX + 4 >= warnlen)
		return; /* the warning is long enough */
	if (!strstr(warn, head))
		snprintf(warn + n, warnlen - n, "%s%s%s:%s", n ? "; " : "", head, e->group, e->name);
	else
		snprintf(warn + n, warnlen - n, ", %s:%s", e->group, e->name);
}

static int open_events(struct ktrace *kt, char *warn, size_t warnlen, char *err, size_t errlen)
{
	size_t total = (size_t)kt->nev * (size_t)kt->pr.nrings;

	kt->fds = malloc(total * sizeof(*kt->fds));
	kt->fd_ring = malloc(total * sizeof(*kt->fd_ring));
	kt->ids = malloc(total * sizeof(*kt->ids));
	if (!kt->fds || !kt->fd_ring || !kt->ids) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int c = 0; c < kt->pr.nrings; c++) {
		struct perfring *ring = &kt->pr.rings[c];

		for (uint32_t i = 0; i < kt->nev; i++) {
			struct kt_event *e = &kt->ev[i];
			struct perf_event_attr attr;
			char what[200];
			uint64_t pid;
			int fd, r;

			if (e->skip)
				continue;
			kt_attr(&attr, e, kt->lost_count);
			fd = perf_open(&attr, -1, ring->cpu);
			if (fd == -EINVAL && kt->lost_count && !kt->nfds) {
				/* PERF_FORMAT_LOST is Linux 6.0 */
				kt->lost_count = false;
				kt_attr(&attr, e, false);
				fd = perf_open(&attr, -1, ring->cpu);
			}
			if (fd < 0 && c == 0 && e->glob && fd != -EACCES && fd != -EPERM) {
				skip_event(e, warn, warnlen);
				continue;
			}
			if (fd < 0) {
				snprintf(what, sizeof(what), " (%s:%s, CPU %d)", e->group, e->name, ring->cpu);
				perf_open_error(fd, what, err, errlen);
				if (fd == -EACCES || fd == -EPERM) {
					size_t l = strlen(err);

					snprintf(err + l, errlen - l,
					         ": kernel events need root, CAP_PERFMON, or perf_event_paranoid -1 "
					         "(sysctl kernel.perf_event_paranoid=-1)");
				}
				return fd;
			}
			kt->fd_ring[kt->nfds] = c;
			kt->fds[kt->nfds++] = fd;
			if (ring->fd < 0)
				r = perfring_map(&kt->pr, ring, fd, err, errlen);
			else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) != 0) {
				r = -errno;
				snprintf(err, errlen, "cannot share the CPU %d ring: %s", ring->cpu, strerror(-r));
			} else {
				r = 0;
			}
			if (r)
				return r;
			if (e->filter && e->sw_fault) {
				snprintf(
				    err, errlen,
				    "--kernel-filter '%s': exceptions:page_fault_user comes from perf's page-faults "
				    "event on this kernel, which takes no filter",
				    e->filter);
				return -EINVAL;
			}
			if (e->filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, e->filter) != 0) {
				r = -errno;
				snprintf(err, errlen, "the kernel refuses --kernel-filter '%s' for %s:%s: %s%s",
				         e->filter, e->group, e->name, strerror(-r),
				         r == -EINVAL ? " (a field it names is not in this tracepoint's format: give "
				                        "the filter as group:event=EXPR)"
				                      : "");
				return r;
			}
			if (ioctl(fd, PERF_EVENT_IOC_ID, &pid) != 0) {
				r = -errno;
				snprintf(err, errlen, "cannot read the id of %s:%s: %s", e->group, e->name,
				         strerror(-r));
				return r;
			}
			kt->ids[kt->nids].perf_id = pid;
			kt->ids[kt->nids++].ev = i;
		}
	}
	qsort(kt->ids, kt->nids, sizeof(*kt->ids), kt_cmp_id);
	return 0;
}

struct ktrace *ktrace_open(const struct ktrace_config *cfg, const struct ktrace_ops *ops, char *warn, size_t warnlen,
                           char *err, size_t errlen)
{
	struct ktrace *kt = calloc(1, sizeof(*kt));
	const char *root;
	int r;

	warn[0] = '\0';
	if (!kt) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	kt->ops = *ops;
	kt->lost_count = true;
	if (cfg->system && !(kt->sys = ksystem_new())) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	root = tracefs_root("sched", "sched_process_fork", err, errlen);
	if (!root) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l,
		         geteuid() ? ": kernel events need root (or tracefs mounted and readable)"
		                   : ": mount it with 'mount -t tracefs nodev /sys/kernel/tracing'");
		r = -ENOENT;
		goto fail;
	}
	kt->root = root;
	if (cfg->functions) {
		kprobes_sweep(root);
		kprobes_group(kt->kgroup, sizeof(kt->kgroup));
		r = kprobes_add(root, kt->kgroup, cfg->functions, err, errlen);
		if (r)
			goto fail;
	}
	r = kselect(kt, cfg, root, warn, warnlen, err, errlen);
	if (!r)
		r = perfrings_init(&kt->pr, cfg->buffer_pages ? cfg->buffer_pages : KTRACE_DEFAULT_PAGES, KT_SAMPLE_NS,
		                   false, err, errlen);
	if (!r) {
		kt->lost_cpu = calloc((size_t)kt->pr.nrings, sizeof(*kt->lost_cpu));
		kt->cpus = calloc((size_t)kt->pr.nrings, sizeof(*kt->cpus));
		if (!kt->lost_cpu || !kt->cpus) {
			snprintf(err, errlen, "out of memory");
			r = -ENOMEM;
		}
		for (int c = 0; !r && c < kt->pr.nrings; c++)
			kt->cpus[c] = kt->pr.rings[c].cpu;
	}
	if (!r)
		r = open_events(kt, warn, warnlen, err, errlen);
	if (!r) {
		bool any = false;

		for (uint32_t i = 0; i < kt->nev; i++)
			any = any || (kt->ev[i].forward && !kt->ev[i].skip);
		if (!any) {
			snprintf(err, errlen, "no selected tracepoint can be recorded (%s)", warn);
			r = -ENOENT;
		}
	}
	if (!r)
		return kt;
fail:
	ktrace_free(kt);
	errno = -r;
	return NULL;
}

int ktrace_follow(struct ktrace *kt, pid_t pid, bool held)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int r = task_add(kt, (uint32_t)pid, (uint32_t)pid, held);

	if (r || held)
		return r;
	/* a running process: its threads too (those it makes from now on
	 * come with their sched_process_fork) */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!r && (de = readdir(dir))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid > 0 && tid != pid)
			r = task_add(kt, (uint32_t)pid, (uint32_t)tid, false);
	}
	closedir(dir);
	return r;
}

/* ---- reading -------------------------------------------------------------- */

static uint64_t get_u(const uint8_t *raw, uint32_t len, struct tracefs_field f)
{
	uint32_t v32 = 0;
	uint64_t v64 = 0;

	if (f.off + f.size > len)
		return 0;
	if (f.size == 4) {
		memcpy(&v32, raw + f.off, 4);
		return v32;
	}
	if (f.size == 8)
		memcpy(&v64, raw + f.off, 8);
	return v64;
}

static const struct kt_event *event_of(const struct ktrace *kt, uint64_t perf_id)
{
	size_t lo = 0, hi = kt->nids;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (kt->ids[mid].perf_id < perf_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < kt->nids && kt->ids[lo].perf_id == perf_id ? &kt->ev[kt->ids[lo].ev] : NULL;
}

struct kt_target {
	uint32_t pid, tid;
	bool other; /* not traced: kept for --kernel-system */
	char comm[KSYSTEM_COMM];
};

/* The targets of one record at most: the traced tasks (the one running,
 * those named, a block request's or timer's owner) and, with
 * --kernel-system, the other tasks (the one running and those named). */
#define KT_TARGETS (2 * KT_PIDFIELDS + 4)

static void target_add(struct kt_target *t, int *n, uint32_t pid, uint32_t tid)
{
	for (int i = 0; i < *n; i++)
		if (t[i].tid == tid)
			return;
	t[*n].pid = pid;
	t[*n].other = false;
	t[(*n)++].tid = tid;
}

static void other_add(struct kt_target *t, int *n, const struct ksystem_task *task)
{
	for (int i = 0; i < *n; i++)
		if (t[i].tid == task->tid)
			return;
	t[*n].pid = task->pid;
	t[*n].tid = task->tid;
	t[*n].other = true;
	memcpy(t[(*n)++].comm, task->comm, KSYSTEM_COMM);
}

static void comm_of(struct ktrace *kt, uint32_t tid, const uint8_t *raw, uint32_t len, struct tracefs_field f)
{
	if (f.size && f.off + f.size <= len)
		ksystem_comm(kt->sys, tid, (const char *)raw + f.off, f.size);
}

/* --kernel-system: the tasks outside the traced processes that a record
 * concerns, the one that ran it and those it names (the idle task, pid 0,
 * is none of them).  traced: the running task is a traced one. */
static void other_targets(struct ktrace *kt, const struct kt_event *e, const uint8_t *raw, uint32_t len, uint32_t pid,
                          uint32_t tid, bool traced, struct kt_target *to, int *n)
{
	const struct ksystem_task *t;

	/* ksystem_comm adds no task: t stays valid across it */
	if (tid && !traced && (t = ksystem_ran(kt->sys, pid, tid))) {
		comm_of(kt, tid, raw, len, e->runcomm);
		other_add(to, n, t);
	}
	for (int i = 0; i < e->npidf; i++) {
		uint32_t named = (uint32_t)get_u(raw, len, e->pidf[i]);

		if (!named || named == tid || task_find(kt, named) || !(t = ksystem_named(kt->sys, named)))
			continue;
		comm_of(kt, named, raw, len, e->commf[i]);
		other_add(to, n, t);
	}
}

/* One sample: follows forks and execs, then hands the record to every
 * traced thread it concerns. */
static long kt_sample(struct ktrace *kt, const unsigned char *body, size_t len)
{
	struct kt_target to[KT_TARGETS];
	const struct kt_event *e;
	const struct kt_task *cur;
	struct kernrec k;
	uint64_t perf_id, ns;
	uint32_t pid, tid, cpu, raw_size;
	uint8_t sw_raw[KT_SW_FAULT_SIZE];
	const uint8_t *raw;
	int n = 0;

	if (len < KT_SAMPLE_HEAD)
		return 0;
	memcpy(&perf_id, body, 8);
	memcpy(&pid, body + 8, 4);
	memcpy(&tid, body + 12, 4);
	memcpy(&ns, body + 16, 8);
	e = event_of(kt, perf_id);
	if (!e)
		return 0;
	if (e->sw_fault) {
		/* identifier, pid/tid, time, addr, cpu: made a record */
		uint64_t addr;
		int32_t spid = (int32_t)tid;
		uint16_t type = (uint16_t)e->id;

		if (len < 40)
			return 0;
		memcpy(&addr, body + 24, 8);
		memcpy(&cpu, body + 32, 4);
		memset(sw_raw, 0, sizeof(sw_raw));
		memcpy(sw_raw, &type, 2);
		memcpy(sw_raw + 4, &spid, 4);
		memcpy(sw_raw + 8, &addr, 8);
		raw = sw_raw;
		raw_size = KT_SW_FAULT_SIZE;
	} else {
		memcpy(&cpu, body + 24, 4);
		memcpy(&raw_size, body + 32, 4);
		if (len < KT_SAMPLE_HEAD + 4 || raw_size > len - KT_SAMPLE_HEAD - 4)
			return 0;
		raw = body + KT_SAMPLE_HEAD + 4;
	}
	kt->records++;
	cur = task_find(kt, tid);
	if (cur && cur->held) {
		/* the spawned child before its exec runs the caller's code */
		if (!e->exec)
			return 0;
		task_add(kt, pid, tid, false);
		cur = task_find(kt, tid);
	}
	if (e->fork) {
		uint32_t parent = (uint32_t)get_u(raw, raw_size, e->parent);
		uint32_t child = (uint32_t)get_u(raw, raw_size, e->child);
		const struct kt_task *pt = task_find(kt, parent), *ct = task_find(kt, child);

		if (pt && !pt->held)
			task_add(kt, task_tgid(child), child, false);
		else if (ct && !ct->held) /* the spawned child is known before its fork is read */
			task_remove(kt, child);
		if (kt->sys && !(pt && !pt->held))
			ksystem_forget(kt->sys, child); /* a tid another process may have had */
		cur = task_find(kt, tid);               /* the table may have moved */
	}
	if (!e->forward)
		return 0;
	if (cur) {
		target_add(to, &n, pid, tid);
		if (cur->pid != pid) /* its process, learnt from its own records */
			task_add(kt, pid, tid, false);
	}
	for (int i = 0; i < e->npidf; i++) {
		uint32_t named = (uint32_t)get_u(raw, raw_size, e->pidf[i]);
		const struct kt_task *t = named && named != tid ? task_find(kt, named) : NULL;

		if (t && !t->held)
			target_add(to, &n, t->pid, t->tid);
	}
	if (e->block) {
		uint64_t dev = get_u(raw, raw_size, e->dev), sector = get_u(raw, raw_size, e->sector);
		struct kt_assoc *a = assoc_get(kt, 1, dev + 1, sector);

		if (e->complete && a) {
			target_add(to, &n, a->pid, a->tid);
			a->tid = 0;
		} else if (!e->complete && cur) {
			assoc_put(kt, 1, dev + 1, sector, pid, tid);
		}
	}
	if (e->timer) {
		uint64_t ptr = get_u(raw, raw_size, e->tptr);
		struct kt_assoc *a = assoc_get(kt, 2, ptr, 0);

		if (e->timer_start && cur)
			assoc_put(kt, 2, ptr, 0, pid, tid);
		else if (e->timer_start && a)
			a->tid = 0; /* another task's now */
		else if (a) {
			target_add(to, &n, a->pid, a->tid);
			if (e->timer_cancel)
				a->tid = 0;
		}
	}
	if (kt->sys)
		other_targets(kt, e, raw, raw_size, pid, tid, cur != NULL, to, &n);
	k.id = e->id;
	k.cpu = cpu;
	k.len = raw_size;
	k.packed = e->packed;
	k.raw = raw;
	for (int i = 0; i < n; i++) {
		k.other = to[i].other;
		k.comm = to[i].other ? to[i].comm : NULL;
		kt->ops.event(kt->ops.ctx, to[i].pid, to[i].tid, ns, &k);
	}
	kt->kept += (uint64_t)n;
	if (n && raw_size > KERNEVENT_RAW_MAX)
		kt->cut++;
	return n;
}

static long kt_take(void *ctx, struct perfring *ring, const struct perf_event_header *h, const unsigned char *body)
{
	struct ktrace *kt = ctx;

	if (h->type == PERF_RECORD_SAMPLE)
		return kt_sample(kt, body, h->size - sizeof(*h));
	if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		uint64_t count;
		int c = (int)(ring - kt->pr.rings);

		memcpy(&count, body + 8, 8);
		kt->lost += count;
		kt->lost_cpu[c] += count;
		if (kt->ops.lost)
			kt->ops.lost(kt->ops.ctx, (uint32_t)ring->cpu, count);
	}
	return 0;
}

long ktrace_poll(struct ktrace *kt)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return perfrings_drain(&kt->pr, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, kt_take, kt);
}

size_t ktrace_format_chunks(const struct ktrace *kt)
{
	return kt->nchunks;
}

const uint8_t *ktrace_format_chunk(const struct ktrace *kt, size_t i, size_t *len)
{
	size_t start = i ? kt->chunk_end[i - 1] : 0;

	*len = kt->chunk_end[i] - start;
	return kt->formats + start;
}

const char *ktrace_selection(const struct ktrace *kt)
{
	return kt->selection;
}

void ktrace_get_stats(const struct ktrace *kt, struct ktrace_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->records = kt->records;
	st->kept = kt->kept;
	st->lost = kt->lost;
	st->cut = kt->cut;
	st->ncpus = (uint32_t)kt->pr.nrings;
	st->lost_cpu = kt->lost_cpu;
	st->cpus = kt->cpus;
	for (uint32_t i = 0; i < kt->nev; i++)
		st->events += kt->ev[i].forward && !kt->ev[i].skip;
}

void ktrace_finish(struct ktrace *kt)
{
	if (!kt || kt->finished)
		return;
	kt->finished = true;
	for (size_t i = 0; i < kt->nfds; i++)
		ioctl(kt->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	perfrings_drain(&kt->pr, UINT64_MAX, kt_take, kt);
	if (!kt->lost_count)
		return;
	/* a full ring reports its loss with the next record that fits, which
	 * may never come: the events count it too */
	for (int c = 0; c < kt->pr.nrings; c++) {
		uint64_t total = 0, v[2];

		for (size_t i = 0; i < kt->nfds; i++)
			if (kt->fd_ring[i] == c && read(kt->fds[i], v, sizeof(v)) == (ssize_t)sizeof(v))
				total += v[1];
		if (total > kt->lost_cpu[c]) {
			uint64_t more = total - kt->lost_cpu[c];

			kt->lost_cpu[c] = total;
			kt->lost += more;
			if (kt->ops.lost)
				kt->ops.lost(kt->ops.ctx, (uint32_t)kt->pr.rings[c].cpu, more);
		}
	}
}

void ktrace_free(struct ktrace *kt)
{
	if (!kt)
		return;
	perfrings_release(&kt->pr);
	for (size_t i = 0; i < kt->nfds; i++)
		close(kt->fds[i]);
	/* once no event uses them */
	if (kt->kgroup[0])
		kprobes_remove(kt->root, kt->kgroup);
	for (uint32_t i = 0; i < kt->nev; i++)
		free(kt->ev[i].fmt);
	free(kt->ev);
	free(kt->fds);
	free(kt->fd_ring);
	free(kt->ids);
	free(kt->tasks);
	free(kt->formats);
	free(kt->chunk_end);
	free(kt->selection);
	free(kt->lost_cpu);
	free(kt->cpus);
	ksystem_free(kt->sys);
	free(kt);
}
