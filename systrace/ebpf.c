/* The eBPF backend of the syscall tracer: small programs on the raw_syscalls
 * tracepoints pair each call's entry and exit in the kernel and write one
 * record per call into a BPF ring buffer (Linux 5.8; per-CPU perf rings
 * before), for the traced tasks only.  The
 * tracee pays for two program runs and one output instead of two perf
 * samples with a stack walk; the words on its stack are copied instead of
 * walked (the reader keeps those that fall in code it knows: the return
 * addresses), and the path of the open family is read at entry.
 *
 * Which tasks are traced is a hash map keyed by thread id, filled at
 * spawn/attach and by a program on sched_process_fork (a traced task's new
 * threads and children); a program on sched_process_exit writes the calls a
 * thread never returned from (exit_group, a kill) and forgets the thread.
 * The programs run for every task of the system: an array lookup (a gate
 * indexed by thread id, open where a traced thread may be) turns the others
 * away before the hash lookup; with the raw tracepoints' own cost, the other
 * tasks pay about 150 ns per syscall while tracing runs (130 ns of it for
 * any program on these tracepoints). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "systrace/child.h"
#include "systrace/ebpf_impl.h"
#include "systrace/tracefs.h"

static void eb_state_free(struct eb_state *eb)
{
	if (!eb)
		return;
	for (int i = 0; i < eb->nlinks; i++)
		close(eb->links[i]);
	for (int i = 0; i < 4; i++)
		if (eb->progs[i] >= 0)
			close(eb->progs[i]);
	for (int i = 0; eb->outs && i < eb->pr.nrings; i++)
		if (eb->outs[i] >= 0)
			close(eb->outs[i]);
	free(eb->outs);
	perfrings_release(&eb->pr);
	bpfring_release(&eb->rb);
	for (int i = 0; i < EB_NMAPS; i++)
		if (eb->maps[i] >= 0)
			close(eb->maps[i]);
	free(eb);
}

/* Why this kernel or build cannot run the backend, or 0. */
static int eb_unsupported(char *err, size_t errlen)
{
#ifdef EB_NO_ARCH
	snprintf(err, errlen, "not built for this architecture");
	return -ENOTSUP;
#else
	struct utsname u;

	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__) {
		snprintf(err, errlen, "not built for big-endian machines");
		return -ENOTSUP;
	}
	/* a 32-bit program on a 64-bit kernel: the registers are laid out the
	 * kernel's way */
	if (sizeof(void *) == 4 && !uname(&u) && strstr(u.machine, "64")) {
		snprintf(err, errlen, "a 32-bit tracer on a 64-bit kernel (%s)", u.machine);
		return -ENOTSUP;
	}
	return 0;
#endif
}

/* The output events: one BPF output event per CPU, its ring mapped, its
 * descriptor in the perf event array at the CPU's number. */
static int eb_open_outputs(struct eb_state *eb, char *err, size_t errlen)
{
	char what[48];

	eb->outs = malloc((size_t)eb->pr.nrings * sizeof(*eb->outs));
	if (!eb->outs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < eb->pr.nrings; i++)
		eb->outs[i] = -1;
	eb->lost_count = true;
	for (int i = 0; i < eb->pr.nrings; i++) {
		struct perfring *ring = &eb->pr.rings[i];
		struct perf_event_attr a;
		uint32_t key = (uint32_t)ring->cpu;
		int fd, r;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_BPF_OUTPUT;
		a.sample_type = PERF_SAMPLE_RAW;
		a.sample_period = 1;
		a.read_format = eb->lost_count ? PERF_FORMAT_LOST : 0;
		fd = perf_open(&a, -1, ring->cpu);
		if (fd == -EINVAL && eb->lost_count) {
			eb->lost_count = false; /* PERF_FORMAT_LOST is Linux 6.0 */
			a.read_format = 0;
			fd = perf_open(&a, -1, ring->cpu);
		}
		if (fd < 0) {
			snprintf(what, sizeof(what), " (output, CPU %d)", ring->cpu);
			return perf_open_error(fd, what, err, errlen);
		}
		eb->outs[i] = fd;
		r = perfring_map(&eb->pr, ring, fd, err, errlen);
		if (!r && (r = bpf_map_put(eb->maps[EB_OUT], &key, &fd, BPF_ANY)) != 0)
			snprintf(err, errlen, "cannot add the CPU %d ring to the output map: %s", ring->cpu,
			         strerror(-r));
		if (r)
			return r;
	}
	return 0;
}

/* The syscalls to trace, with the index of their path argument. */
static int eb_fill_sel(struct eb_state *eb, const struct sys_set *set, char *err, size_t errlen)
{
	for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++) {
		const struct sys_info *info = sys_info(eb->arch, nr);
		uint32_t v = 0;
		int r;

		if (!sys_set_has(set, nr) && nr != eb->exec_nr[0] && nr != eb->exec_nr[1])
			continue;
		v = EB_SEL_TRACED;
		for (int i = 0; info && i < 6 && i < info->nargs; i++)
			if (info->arg[i] == SYS_ARG_PATH) {
				v |= (uint32_t)(i + 1) << EB_SEL_PATH_SHIFT;
				break;
			}
		r = bpf_map_put(eb->maps[EB_SEL], &nr, &v, BPF_ANY);
		if (r) {
			snprintf(err, errlen, "cannot fill the syscall map: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Attaches prog to a tracepoint through a perf event (any CPU will do: the
 * program runs wherever the tracepoint fires). */
static int eb_attach_tracepoint(struct eb_state *eb, uint32_t tp_id, int prog, char *err, size_t errlen)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = tp_id;
	a.sample_period = 1;
	fd = perf_open(&a, -1, eb->pr.rings[0].cpu);
	if (fd < 0)
		return perf_open_error(fd, " (sched tracepoint)", err, errlen);
	eb->links[eb->nlinks++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		int r = -errno;

		snprintf(err, errlen, "cannot attach to a sched tracepoint: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* Loads the programs and attaches them: the sched ones first, so that no
 * thread created meanwhile escapes. */
static int eb_programs(struct eb_state *eb, char *err, size_t errlen)
{
	static const char *const names[2] = { "sched_process_fork", "sched_process_exit" };
	struct tracefs_field child;
	uint32_t ids[2];
	struct bpfprog *p = malloc(sizeof(*p));
	const char *root;
	char *fmt = NULL;
	int r = 0;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	root = tracefs_root("sched", names[0], err, errlen);
	if (!root) {
		r = -ENOENT;
		goto out;
	}
	for (int i = 0; i < 2 && !r; i++) {
		r = tracefs_format(root, "sched", names[i], &fmt, &ids[i], err, errlen);
		if (!r && i == 0 && (!tracefs_field(fmt, "child_pid", &child) || child.size != 4 || child.off > 4096)) {
			snprintf(err, errlen, "cannot parse the sched_process_fork format: child_pid");
			r = -EINVAL;
		}
		free(fmt);
		fmt = NULL;
	}
	if (r)
		goto out;
	eb_prog_fork(p, eb, child.off);
	eb->progs[0] = r = bpfprog_load(p, BPF_PROG_TYPE_TRACEPOINT, err, errlen);
	if (r >= 0) {
		eb_prog_task_exit(p, eb);
		eb->progs[1] = r = bpfprog_load(p, BPF_PROG_TYPE_TRACEPOINT, err, errlen);
	}
	if (r >= 0) {
		eb_prog_exit(p, eb);
		eb->progs[2] = r = bpfprog_load(p, BPF_PROG_TYPE_RAW_TRACEPOINT, err, errlen);
	}
	if (r >= 0) {
		eb_prog_enter(p, eb);
		eb->progs[3] = r = bpfprog_load(p, BPF_PROG_TYPE_RAW_TRACEPOINT, err, errlen);
	}
	if (r < 0)
		goto out;
	r = eb_attach_tracepoint(eb, ids[0], eb->progs[0], err, errlen);
	if (!r)
		r = eb_attach_tracepoint(eb, ids[1], eb->progs[1], err, errlen);
	for (int i = 0; i < 2 && !r; i++) {
		int fd = bpf_raw_tracepoint(i == 0 ? "sys_exit" : "sys_enter", eb->progs[2 + i]);

		if (fd < 0) {
			r = fd;
			snprintf(err, errlen, "cannot attach to raw_syscalls: %s", strerror(-r));
		} else {
			eb->links[eb->nlinks++] = fd;
		}
	}
out:
	free(p);
	return r < 0 ? r : 0;
}

/* The power of two at or above `want`, within what a map holds. */
/* The ring buffer for `want` bytes: a power of two, at most EB_RING_MAX
 * (many CPUs share one buffer; the per-CPU size sets it on small machines). */
static size_t eb_ring_size(size_t want)
{
	size_t size = 1u << 16;

	while (size < want && size < EB_RING_MAX)
		size <<= 1;
	return size;
}

static struct eb_state *eb_state_new(const struct systrace *st, int *res, char *err, size_t errlen)
{
	struct eb_state *eb = calloc(1, sizeof(*eb));
	int r, ncpu = 0;

	if (!eb) {
		snprintf(err, errlen, "out of memory");
		*res = -ENOMEM;
		return NULL;
	}
	for (int i = 0; i < EB_NMAPS; i++)
		eb->maps[i] = -1;
	for (int i = 0; i < 4; i++)
		eb->progs[i] = -1;
	eb->arch = sys_arch_native();
	eb->rb.fd = -1;
	for (int i = 0; i < 2; i++) {
		int nr = sys_lookup(eb->arch, i ? "execveat" : "execve");

		eb->exec_nr[i] = nr >= 0 ? (uint32_t)nr : UINT32_MAX;
	}
	r = eb_unsupported(err, errlen);
	if (!r)
		r = perfrings_init(&eb->pr, st->cfg.buffer_pages ? st->cfg.buffer_pages : EB_DEFAULT_PAGES,
		                   4 + offsetof(struct eb_call, key_ns), false, err, errlen);
	if (r)
		goto fail;
	for (int i = 0; i < eb->pr.nrings; i++)
		if (eb->pr.rings[i].cpu + 1 > ncpu)
			ncpu = eb->pr.rings[i].cpu + 1;
	eb->maps[EB_TASKS] = bpf_map_new(BPF_MAP_TYPE_HASH, 4, sizeof(struct eb_call), EB_TASKS_MAX, BPF_F_NO_PREALLOC);
	eb->maps[EB_SEL] = bpf_map_new(BPF_MAP_TYPE_ARRAY, 4, 4, SYS_NR_MAX, 0);
	eb->maps[EB_ZERO] = bpf_map_new(BPF_MAP_TYPE_ARRAY, 4, sizeof(struct eb_call), 1, 0);
	eb->maps[EB_COUNTERS] = bpf_map_new(BPF_MAP_TYPE_ARRAY, 4, 8, EB_NCOUNTERS, 0);
	eb->maps[EB_GATE] = bpf_map_new(BPF_MAP_TYPE_ARRAY, 4, 4, EB_GATE_SIZE, 0);
	/* one ring buffer as large as the per-CPU rings together, else those */
	if (st->cfg.bpf_per_cpu ||
	    bpfring_init(&eb->rb, eb_ring_size(eb->pr.pages * eb->pr.page_size * (size_t)eb->pr.nrings), err, errlen))
		eb->maps[EB_OUT] = bpf_map_new(BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, (uint32_t)ncpu, 0);
	for (int i = 0; i < EB_NMAPS; i++)
		if (eb->maps[i] < 0 && (i != EB_OUT || eb->rb.fd < 0)) {
			r = eb->maps[i];
			snprintf(err, errlen, "bpf map: %s", strerror(-r));
			goto fail;
		}
	r = eb_fill_sel(eb, &st->cfg.filter, err, errlen);
	if (!r && eb->rb.fd < 0)
		r = eb_open_outputs(eb, err, errlen);
	if (!r)
		r = eb_programs(eb, err, errlen);
	if (r)
		goto fail;
	return eb;
fail:
	eb_state_free(eb);
	*res = r;
	return NULL;
}

/* Starts tracing thread tid (its slot is empty: a call in progress is not
 * seen, the next one is). */
static int eb_add_task(struct eb_state *eb, pid_t tid)
{
	static const struct eb_call zero;
	uint32_t key = (uint32_t)tid, slot = key & (EB_GATE_SIZE - 1), open = 1;
	int r = bpf_map_put(eb->maps[EB_TASKS], &key, &zero, BPF_NOEXIST);

	return r ? r : bpf_map_put(eb->maps[EB_GATE], &slot, &open, BPF_ANY);
}

int eb_probe(char *err, size_t errlen)
{
	struct bpfprog p;
	int r = eb_unsupported(err, errlen), fd;

	if (r)
		return r;
	/* the smallest program of the right type: refused without the rights */
	bpfprog_init(&p);
	bpfprog_emit(&p, BI_MOVI(BPF_REG_0, 0));
	bpfprog_emit(&p, BI_EXIT());
	fd = bpfprog_load(&p, BPF_PROG_TYPE_RAW_TRACEPOINT, err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int eb_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen)
{
	struct held_child child;
	struct eb_state *eb;
	int r = 0;

	eb = eb_state_new(st, &r, err, errlen);
	if (!eb)
		return r;
	r = held_child_fork(&child, st->path, argv, envp, err, errlen);
	if (r) {
		eb_state_free(eb);
		return r;
	}
	r = eb_add_task(eb, child.pid);
	if (r)
		snprintf(err, errlen, "cannot trace the child: %s", strerror(-r));
	else if (st->cfg.held)
		r = st->cfg.held(st->cfg.held_ctx, child.pid, err, errlen);
	if (r) {
		held_child_kill(&child);
	} else {
		r = held_child_run(&child, argv[0], err, errlen);
	}
	if (r) {
		eb_state_free(eb);
		return r;
	}
	*pid = child.pid;
	eb->hold_tid = (uint32_t)child.pid;
	st->impl = eb;
	return 0;
}

/* One pass over /proc/<pid>/task: traces every thread not traced yet.
 * Returns the number added, or -errno. */
static long eb_attach_scan(struct eb_state *eb, pid_t pid, char *err, size_t errlen)
{
	char path[64];
	struct dirent *de;
	long added = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir) {
		int r = -errno;

		snprintf(err, errlen, "cannot list '%s': %s", path, strerror(-r));
		return r;
	}
	while ((de = readdir(dir))) {
		long v = strtol(de->d_name, NULL, 10);
		int r;

		if (v <= 0)
			continue;
		r = eb_add_task(eb, (pid_t)v);
		if (r == -EEXIST)
			continue;
		if (r) {
			snprintf(err, errlen, "cannot trace thread %ld: %s", v, strerror(-r));
			added = r;
			break;
		}
		added++;
	}
	closedir(dir);
	return added;
}

/* Every thread now, and again until a pass finds none new: the fork
 * program follows the threads that traced ones create meanwhile. */
int eb_attach(struct systrace *st, pid_t pid, char *err, size_t errlen)
{
	struct eb_state *eb;
	long added = 0, total = 0;
	int r = 0;

	eb = eb_state_new(st, &r, err, errlen);
	if (!eb)
		return r;
	for (int scan = 0; scan < EB_ATTACH_SCANS; scan++) {
		added = eb_attach_scan(eb, pid, err, errlen);
		if (added <= 0)
			break;
		total += added;
	}
	if (added < 0)
		r = (int)added;
	else if (!total) {
		snprintf(err, errlen, "process %d has no threads left", (int)pid);
		r = -ESRCH;
	}
	if (r) {
		eb_state_free(eb);
		return r;
	}
	st->impl = eb;
	return 0;
}

/* The call's entry as a record: ips[0] the syscall's return address, then
 * the stack words that may be code addresses, innermost first: not small,
 * not into the stack itself, not repeated.  Which of them are return
 * addresses the reader tells from the mappings it knows (a word may be
 * data, or a stale return address). */
static void eb_enter_record(struct eb_state *eb, const struct eb_call *c, struct sysrec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->kind = SYSREC_ENTER;
	rec->arch = (uint8_t)eb->arch;
	rec->pid = c->pid;
	rec->tid = c->tid;
	rec->nr = c->nr;
	rec->ns = c->t_enter;
	memcpy(rec->args, c->args, sizeof(rec->args));
	rec->ips[rec->nips++] = c->ip;
	for (uint32_t i = 0; i < EB_STACK_WORDS && rec->nips < SYSREC_IPS_MAX; i++) {
		uint64_t w = sizeof(void *) == 4 ? (c->stack[i / 2] >> (i % 2 * 32)) & 0xffffffffu : c->stack[i];

		if (w >= EB_LOW_ADDR && (w < c->sp || w - c->sp >= EB_STACK_SPAN) && w != rec->ips[rec->nips - 1])
			rec->ips[rec->nips++] = w;
	}
	if (c->str_len > 0) {
		rec->str = c->str;
		rec->str_len = (uint32_t)strnlen(c->str, (size_t)c->str_len);
	}
}

/* Hands out one call as written by the programs (size bytes): its entry,
 * then its exit unless the thread ended inside it.  Returns the records
 * handed out. */
static long eb_take_call(void *ctx, const unsigned char *data, uint32_t size)
{
	struct eb_state *eb = ctx;
	struct systrace *st = eb->st;
	struct eb_call c;
	struct sysrec rec;

	if (size < (uint32_t)EB_OUT_SHORT)
		return 0;
	memset(&c, 0, sizeof(c));
	memcpy(&c, data, size < (uint32_t)EB_OUT_FULL ? size : (uint32_t)EB_OUT_FULL);
	if (size < (uint32_t)EB_OUT_FULL)
		c.str_len = 0;
	if (c.tid == eb->hold_tid) {
		/* the spawned child before its exec: the tracer's own code */
		if (c.nr != eb->exec_nr[0] && c.nr != eb->exec_nr[1])
			return 0;
		eb->hold_tid = 0;
	}
	if (c.nr >= SYS_NR_MAX || !sys_set_has(&st->cfg.filter, c.nr))
		return 0;
	eb_enter_record(eb, &c, &rec);
	st->ops.sys(st->ops.ctx, &rec);
	if (!c.t_exit) {
		st->stats.records++;
		return 1;
	}
	memset(&rec, 0, sizeof(rec));
	rec.kind = SYSREC_EXIT;
	rec.arch = (uint8_t)eb->arch;
	rec.pid = c.pid;
	rec.tid = c.tid;
	rec.nr = c.nr;
	rec.ns = c.t_exit;
	/* a 32-bit kernel hands the tracepoint's long ret zero-extended: the
	 * low half is the value (and all of it for a 32-bit program) */
	rec.ret = sizeof(long) == 4 ? (int32_t)(uint32_t)c.ret : c.ret;
	st->ops.sys(st->ops.ctx, &rec);
	st->stats.records += 2;
	return 2;
}

/* One record of the per-CPU rings' merge (perfring_take_fn). */
static long eb_take(void *ctx, struct perfring *ring, const struct perf_event_header *h, const unsigned char *body)
{
	struct eb_state *eb = ctx;
	struct systrace *st = eb->st;
	uint64_t count;
	uint32_t size, pid, tid;

	(void)ring;
	if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 4) {
		memcpy(&size, body, 4);
		return size <= h->size - sizeof(*h) - 4 ? eb_take_call(eb, body + 4, size) : 0;
	}
	/* each call lost is an entry and an exit */
	if (perfring_lost(h, body, &count, &pid, &tid)) {
		eb->lost_reported += count;
		st->stats.lost += 2 * count;
		if (st->ops.lost)
			st->ops.lost(st->ops.ctx, pid, tid, 2 * count);
	}
	return 0;
}

/* Calls the ring buffer had no room for since the last look: each is an
 * entry and an exit lost, of a thread unknown. */
static void eb_ring_losses(struct systrace *st, struct eb_state *eb)
{
	uint32_t key = EB_CALLS_LOST;
	uint64_t lost = 0;

	if (bpf_map_get(eb->maps[EB_COUNTERS], &key, &lost) || lost <= eb->calls_lost)
		return;
	st->stats.lost += 2 * (lost - eb->calls_lost);
	if (st->ops.lost)
		st->ops.lost(st->ops.ctx, 0, 0, 2 * (lost - eb->calls_lost));
	eb->calls_lost = lost;
}

long eb_poll(struct systrace *st)
{
	struct eb_state *eb = st->impl;
	struct timespec now;

	if (!eb)
		return -EINVAL;
	eb->st = st;
	if (eb->rb.fd >= 0) {
		/* a bounded share at a time: the drain writes each share out
		 * before the next, so its queues stay small (growing them by a
		 * whole ring's backlog costs a page fault every few records,
		 * slower than a busy program makes them) */
		long n = bpfring_drain(&eb->rb, EB_POLL_CALLS, eb_take_call, eb);

		st->backlog = bpfring_pending(&eb->rb);
		eb_ring_losses(st, eb);
		return n;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	return perfrings_drain(&eb->pr, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, eb_take, eb);
}

/* Losses the kernel counted but reported in no record (a full ring
 * reports them only with the next record that fits), and tasks the fork
 * program could not follow (the map was full). */
static void eb_report_unseen_losses(struct systrace *st, struct eb_state *eb)
{
	uint64_t total = 0, v[2], missed = 0;
	uint32_t key = EB_TASKS_MISSED;

	if (eb->rb.fd < 0 && eb->lost_count)
		for (int i = 0; i < eb->pr.nrings; i++)
			if (eb->outs[i] >= 0 && read(eb->outs[i], v, sizeof(v)) == (ssize_t)sizeof(v))
				total += v[1];
	if (total > eb->lost_reported) {
		st->stats.lost += 2 * (total - eb->lost_reported);
		if (st->ops.lost)
			st->ops.lost(st->ops.ctx, 0, 0, 2 * (total - eb->lost_reported));
		eb->lost_reported = total;
	}
	if (!bpf_map_get(eb->maps[EB_COUNTERS], &key, &missed))
		st->stats.tasks_missed = missed;
}

/* Calls still in progress when tracing stops: their entries. */
static void eb_unfinished(struct systrace *st, struct eb_state *eb)
{
	struct eb_call *c = malloc(sizeof(*c));
	uint32_t key, next;
	struct sysrec rec;
	const void *prev = NULL;

	if (!c)
		return;
	while (bpf_map_next(eb->maps[EB_TASKS], prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_get(eb->maps[EB_TASKS], &key, c) || !c->t_enter || c->nr >= SYS_NR_MAX ||
		    !sys_set_has(&st->cfg.filter, c->nr))
			continue;
		eb_enter_record(eb, c, &rec);
		st->ops.sys(st->ops.ctx, &rec);
		st->stats.records++;
	}
	free(c);
}

void eb_release(struct systrace *st)
{
	struct eb_state *eb = st->impl;

	if (!eb)
		return;
	/* detach first: nothing is written after the last drain */
	for (int i = eb->nlinks - 1; i >= 0; i--)
		close(eb->links[i]);
	eb->nlinks = 0;
	eb->st = st;
	if (eb->rb.fd >= 0) {
		bpfring_drain(&eb->rb, SIZE_MAX, eb_take_call, eb);
		eb_ring_losses(st, eb);
	} else {
		perfrings_drain(&eb->pr, UINT64_MAX, eb_take, eb);
	}
	eb_report_unseen_losses(st, eb);
	eb_unfinished(st, eb);
	eb_state_free(eb);
	st->impl = NULL;
}
