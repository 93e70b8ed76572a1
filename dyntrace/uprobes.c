/* The uprobe backend of the dynamic tracer (see uprobes.h): its probes
 * opened as perf events on every CPU, and their records read and handed
 * out.  What to probe is chosen in uselect.c, the traced tasks followed in
 * utasks.c. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dyntrace/uprobes_impl.h"
#include "systrace/tprobes.h"

struct uprobes *uprobes_open(const struct uprobes_config *cfg, const struct uprobes_ops *ops, char *err, size_t errlen)
{
	struct uprobes *u = calloc(1, sizeof(*u));
	int r;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	u->ops = *ops;
	u->pages = cfg->buffer_pages ? cfg->buffer_pages : UPROBES_DEFAULT_PAGES;
	if (cfg->nlibs) {
		snprintf(
		    err, errlen,
		    "'%.200s:%.200s': a shared library's functions are traced by the patch backend, not the uprobe "
		    "backend",
		    cfg->libs[0].file, cfg->libs[0].glob);
		free(u);
		errno = ENOTSUP;
		return NULL;
	}
	r = probe_path(u, cfg->path, err, errlen);
	if (!r)
		r = tracefs_probe(u, err, errlen);
	if (!r)
		r = elfsyms_open(u->path, &u->sel.es, err, errlen);
	if (!r)
		r = select_functions(u, cfg, err, errlen);
	if (!r)
		r = follow_formats(u, err, errlen);
	if (!r)
		r = define_probes(u, err, errlen);
	if (!r)
		r = perfrings_init(&u->pr, u->pages, UP_SAMPLE_NS, false, err, errlen);
#ifdef UP_REG_SP
	if (!r && !(u->threads = calloc(UP_THREADS, sizeof(*u->threads)))) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
	}
#endif
	if (!r) {
		u->rings_ready = true;
		return u;
	}
	uprobes_free(u);
	errno = -r;
	return NULL;
}

/* Every event on every CPU for every task: a probe hits only where the
 * program's file is mapped, and the reader keeps the traced tasks' hits
 * (no inheritance, which the kernel does not keep exact when a process's
 * first thread ends before its others). */
static void up_attr(struct perf_event_attr *a, uint32_t tp_id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = tp_id;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
#ifdef UP_REG_SP
	a->sample_type |= PERF_SAMPLE_REGS_USER;
	a->sample_regs_user = UINT64_C(1) << UP_REG_SP;
#endif
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = ((const struct up_id *)a)->perf_id, y = ((const struct up_id *)b)->perf_id;

	return (x > y) - (x < y);
}

/* Room for every probe's descriptor: the soft limit raised to the hard
 * one if needed. */
static int fd_room(size_t need, char *err, size_t errlen)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need + UP_FD_SPARE) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need + UP_FD_SPARE ? need + UP_FD_SPARE
		                                                                                : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need + UP_FD_SPARE) {
		snprintf(err, errlen,
		         "%zu probes need as many descriptors, more than the limit of %llu (ulimit -n): choose fewer "
		         "functions with --dynamic=PATTERNS",
		         need, (unsigned long long)rl.rlim_cur);
		return -EMFILE;
	}
	return 0;
}

/* One event on ring's CPU for every task: tracepoint tp_id, which is
 * function fn's probe (kind UP_FUNC) or a follow tracepoint. */
static int open_event(struct uprobes *u, struct perfring *ring, uint32_t tp_id, uint8_t kind, uint32_t fn, bool exit,
                      char *err, size_t errlen)
{
	struct perf_event_attr attr;
	char what[300];
	uint64_t id;
	int fd, r = 0;

	up_attr(&attr, tp_id);
	fd = perf_open(&attr, -1, ring->cpu);
	if (fd < 0) {
		if (kind == UP_FUNC)
			snprintf(what, sizeof(what), " (%s probe on %s in %s, CPU %d)", exit ? "return" : "entry",
			         u->sel.fn[fn].name, u->path, ring->cpu);
		else
			snprintf(what, sizeof(what), " (sched:%s, CPU %d)", follow_names[kind], ring->cpu);
		perf_open_error(fd, what, err, errlen);
		if (fd == -EACCES || fd == -EPERM) {
			size_t l = strlen(err);

			snprintf(err + l, errlen - l, ": uprobes need root or CAP_PERFMON");
		}
		return fd;
	}
	u->fds[u->nfds++] = fd;
	if (ring->fd < 0)
		r = perfring_map(&u->pr, ring, fd, err, errlen);
	else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) != 0) {
		r = -errno;
		snprintf(err, errlen, "cannot share the CPU %d ring: %s", ring->cpu, strerror(-r));
	}
	if (!r && ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
		r = -errno;
		snprintf(err, errlen, "cannot read a probe's id: %s", strerror(-r));
	}
	if (r)
		return r;
	u->ids[u->nids].perf_id = id;
	u->ids[u->nids].fn = fn;
	u->ids[u->nids].exit = exit;
	u->ids[u->nids++].kind = kind;
	return 0;
}

static int open_events(struct uprobes *u, char *err, size_t errlen)
{
	size_t total = ((size_t)u->sel.nfn * 2 + 3) * (size_t)u->pr.nrings;
	int r = fd_room(total, err, errlen);

	if (r)
		return r;
	u->fds = malloc(total * sizeof(*u->fds));
	u->ids = malloc(total * sizeof(*u->ids));
	if (!u->fds || !u->ids) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int c = 0; !r && c < u->pr.nrings; c++) {
		struct perfring *ring = &u->pr.rings[c];

		/* the followers first: a fork is read before its child's hits */
		for (uint8_t k = UP_FORK; !r && k <= UP_EXIT; k++)
			r = open_event(u, ring, u->follow_id[k], k, 0, false, err, errlen);
		for (uint32_t i = 0; !r && i < u->sel.nfn; i++)
			for (int exit = 0; !r && exit < 2; exit++)
				r = open_event(u, ring, u->tp_id[2 * i + (uint32_t)exit], UP_FUNC, i, exit, err,
				               errlen);
	}
	if (!r)
		qsort(u->ids, u->nids, sizeof(*u->ids), cmp_id);
	return r;
}

int uprobes_attach(struct uprobes *u, pid_t pid, char *err, size_t errlen)
{
	int r = 0;

	if (!u->opened) {
		r = open_events(u, err, errlen);
		u->opened = !r;
		if (r)
			return r;
	}
	/* the threads there now, the events open: one made later comes by
	 * its fork record, read before its hits (the rings are read only
	 * after this) */
	r = tid_add(u, (uint32_t)pid);
	if (!r)
		r = tid_add_threads(u, (uint32_t)pid);
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else if (r == -ESRCH)
		snprintf(err, errlen, "no process %d", (int)pid);
	else if (r)
		snprintf(err, errlen, "cannot list the threads of process %d: %s", (int)pid, strerror(-r));
	return r;
}

static const struct up_id *id_find(const struct uprobes *u, uint64_t perf_id)
{
	size_t lo = 0, hi = u->nids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->ids[mid].perf_id < perf_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < u->nids && u->ids[lo].perf_id == perf_id ? &u->ids[lo] : NULL;
}

/* A follow tracepoint's record of traced task tid (current, at ns). */
static void follow(struct uprobes *u, uint8_t kind, uint32_t pid, uint32_t tid, uint64_t ns, const unsigned char *raw,
                   uint32_t rawlen)
{
	struct up_thread *t;
	uint32_t child;

	switch (kind) {
	case UP_FORK:
		if (u->child_pid.off + 4 <= rawlen) {
			memcpy(&child, raw + u->child_pid.off, 4);
			if (child && tid_add(u, child))
				u->lost++; /* its hits cannot be told from others' */
			else if (child)
				fork_frames(u, pid, tid, child, ns);
		}
		break;
	case UP_EXEC:
		t = thread_slot(u, tid);
		if (t)
			t->depth = 0; /* the old image's frames are gone */
		if (u->ops.exec)
			u->ops.exec(u->ops.ctx, pid, tid, ns);
		break;
	case UP_EXIT:
		tid_remove(u, tid);
		t = thread_slot(u, tid);
		if (t)
			t->depth = 0;
		break;
	}
}

static long up_sample(struct uprobes *u, const unsigned char *body, size_t len)
{
	uint64_t perf_id, ip, ns, addr, abi = 0, sp = 0;
	uint32_t pt[2], rawlen = 0;
	size_t off = UP_SAMPLE_SIZE;
	const struct up_id *id;
	const struct dsel_fn *f;
	struct up_pid *p;

	if (len < UP_SAMPLE_SIZE)
		return 0;
	memcpy(&perf_id, body, 8);
	memcpy(&ip, body + 8, 8);
	memcpy(pt, body + 16, 8);
	memcpy(&ns, body + UP_SAMPLE_NS, 8);
	/* the raw record (its size, then itself), then the user registers:
	 * their ABI and, unless none, the stack pointer */
	if (off + 4 <= len)
		memcpy(&rawlen, body + off, 4);
	if (rawlen > len - off - 4)
		return 0;
	off += 4 + rawlen;
#ifdef UP_REG_SP
	if (off + 8 <= len) {
		memcpy(&abi, body + off, 8);
		if (abi != PERF_SAMPLE_REGS_ABI_NONE && off + 16 <= len)
			memcpy(&sp, body + off + 8, 8);
		else
			abi = PERF_SAMPLE_REGS_ABI_NONE;
	}
#endif
	id = id_find(u, perf_id);
	if (!id || !tid_find(u, pt[1], false)) {
		u->others += id && id->kind == UP_FUNC;
		return 0;
	}
	if (u->threads) {
		struct up_thread *t = thread_slot(u, pt[1]);

		if (t && t->forker)
			inherit_frames(u, t, pt[0], pt[1]);
	}
	if (id->kind != UP_FUNC) {
		follow(u, id->kind, pt[0], pt[1], ns, body + UP_SAMPLE_SIZE + 4, rawlen);
		return 0;
	}
	f = &u->sel.fn[id->fn];
	if (!id->exit) {
		/* the probe's address in this process: its load bias */
		u->entries++;
		p = pid_slot(u, pt[0], true);
		p->bias = ip - f->addr;
		addr = ip;
		if (abi != PERF_SAMPLE_REGS_ABI_NONE)
			entry_unwind(u, pt[0], pt[1], ns, sp, id->fn);
	} else {
		u->exits++;
		p = pid_slot(u, pt[0], false);
		if (!p) {
			u->unattributed++;
			return 0;
		}
		addr = p->bias + f->addr;
		exit_unwind(u, pt[1], id->fn);
	}
	u->ops.func(u->ops.ctx, pt[0], pt[1], ns, addr, id->exit);
	return 1;
}

static long up_take(void *ctx, struct perfring *ring, const struct perf_event_header *h, const unsigned char *body)
{
	struct uprobes *u = ctx;

	if (h->type == PERF_RECORD_SAMPLE)
		return up_sample(u, body, h->size - sizeof(*h));
	if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		uint64_t count;

		memcpy(&count, body + 8, 8);
		u->lost += count;
		if (u->ops.lost)
			u->ops.lost(u->ops.ctx, (uint32_t)ring->cpu, count);
	}
	return 0;
}

long uprobes_poll(struct uprobes *u)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return perfrings_drain(&u->pr, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, up_take, u);
}

void uprobes_get_stats(const struct uprobes *u, struct uprobes_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->functions = u->sel.nfn;
	st->candidates = u->sel.candidates;
	st->entries = u->entries;
	st->exits = u->exits;
	st->lost = u->lost;
	st->unattributed = u->unattributed;
	st->unwound = u->unwound;
	st->others = u->others;
	st->events = (uint32_t)u->nfds;
	st->skipped = u->sel.skipped;
	st->nskipped = u->sel.nskipped;
}

void uprobes_finish(struct uprobes *u)
{
	if (!u || u->finished)
		return;
	u->finished = true;
	for (size_t i = 0; i < u->nfds; i++)
		ioctl(u->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	perfrings_drain(&u->pr, UINT64_MAX, up_take, u);
}

void uprobes_free(struct uprobes *u)
{
	if (!u)
		return;
	if (u->rings_ready)
		perfrings_release(&u->pr);
	for (size_t i = 0; i < u->nfds; i++)
		close(u->fds[i]);
	/* once no event uses them */
	if (u->group[0])
		tprobes_remove(u->root, "uprobe_events", u->group);
	free(u->tp_id);
	for (uint32_t i = 0; u->threads && i < UP_THREADS; i++)
		free(u->threads[i].stack);
	free(u->threads);
	free(u->tids);
	free(u->fds);
	free(u->ids);
	dsel_release(&u->sel);
	free(u->path);
	free(u);
}
