/* The ptrace backend of the dynamic tracer, its entry points (see
 * bptrace.h) and its record queue: the tracer thread (bptracer.c) adds
 * records under the lock, bptrace_poll hands them out on the caller's
 * thread.  Which thread does what: bptrace_impl.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dyntrace/bptrace_impl.h"

#define BQ_FIRST (64u << 10)
#define BP_WAKE_EVERY_MS 20

bool bptrace_supported(void)
{
	return BP_SUPPORTED;
}

/* ---- the queue: the tracer thread's side ---- */

/* Under the lock: room for need more bytes in the filling buffer.  A full
 * one makes the tracer wait for the caller to take it, once per fill. */
static bool bq_room(struct bptrace *b, size_t need)
{
	struct bq *q = &b->queue;
	struct timespec deadline;
	size_t cap;

	if (q->fill.len + need > BQ_BYTES) {
		if (q->dropping)
			return false;
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_nsec += BQ_FULL_WAIT_MS * 1000000L;
		deadline.tv_sec += deadline.tv_nsec / 1000000000L;
		deadline.tv_nsec %= 1000000000L;
		while (q->fill.len + need > BQ_BYTES)
			if (pthread_cond_timedwait(&b->cond, &b->lock, &deadline) == ETIMEDOUT)
				break;
		if (q->fill.len + need > BQ_BYTES) {
			q->dropping = true;
			return false;
		}
	}
	if (q->fill.len + need <= q->fill.cap)
		return true;
	cap = q->fill.cap ? q->fill.cap : BQ_FIRST;
	while (cap < q->fill.len + need)
		cap *= 2;
	if (cap > BQ_BYTES)
		cap = BQ_BYTES;
	unsigned char *buf = realloc(q->fill.buf, cap);
	if (!buf)
		return false;
	q->fill.buf = buf;
	q->fill.cap = cap;
	return true;
}

/* Queues r and its frames (r->nframes), or counts it lost. */
static void bq_push(struct bptrace *b, const struct bq_rec *r, const uint64_t *frames)
{
	size_t fsize = (size_t)r->nframes * sizeof(*frames), need = sizeof(*r) + fsize;

	pthread_mutex_lock(&b->lock);
	if (bq_room(b, need)) {
		memcpy(b->queue.fill.buf + b->queue.fill.len, r, sizeof(*r));
		if (fsize)
			memcpy(b->queue.fill.buf + b->queue.fill.len + sizeof(*r), frames, fsize);
		b->queue.fill.len += need;
	} else {
		b->queue.lost++;
		b->queue.total++;
	}
	pthread_mutex_unlock(&b->lock);
}

static void bq_rec_init(struct bq_rec *r, uint8_t kind, const struct bp_task *t, uint64_t ns)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->pid = (uint32_t)t->tgid;
	r->tid = (uint32_t)t->tid;
	r->ns = ns;
}

void bq_func(struct bptrace *b, const struct bp_task *t, uint64_t ns, uint64_t addr, bool exit)
{
	struct bq_rec r;

	bq_rec_init(&r, exit ? BQ_EXIT : BQ_ENTRY, t, ns);
	r.addr = addr;
	bq_push(b, &r, NULL);
}

void bq_longjmp(struct bptrace *b, const struct bp_task *t, uint64_t ns, uint32_t depth)
{
	struct bq_rec r;

	bq_rec_init(&r, BQ_LONGJMP, t, ns);
	r.arg = depth;
	bq_push(b, &r, NULL);
}

void bq_exec(struct bptrace *b, const struct bp_task *t, uint64_t ns)
{
	struct bq_rec r;

	bq_rec_init(&r, BQ_EXEC, t, ns);
	bq_push(b, &r, NULL);
}

void bq_fork(struct bptrace *b, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t parent, const uint64_t *frames,
             uint32_t n)
{
	struct bq_rec r;

	memset(&r, 0, sizeof(r));
	r.kind = BQ_FORK;
	r.pid = pid;
	r.tid = tid;
	r.ns = ns;
	r.arg = parent;
	r.nframes = (uint8_t)n;
	bq_push(b, &r, frames);
}

/* ---- the caller's side ---- */

/* The records of buf, handed to the callbacks.  Returns their number. */
static long bq_deliver(struct bptrace *b, const struct bq_buf *buf)
{
	const struct uprobes_ops *ops = &b->ops;
	long n = 0;

	for (size_t off = 0; off + sizeof(struct bq_rec) <= buf->len; n++) {
		struct bq_rec r;
		uint64_t frames[UPROBES_INHERIT_MAX];

		memcpy(&r, buf->buf + off, sizeof(r));
		off += sizeof(r);
		switch (r.kind) {
		case BQ_ENTRY:
		case BQ_EXIT:
			ops->func(ops->ctx, r.pid, r.tid, r.ns, r.addr, r.kind == BQ_EXIT);
			break;
		case BQ_LONGJMP:
			if (ops->longjmp)
				ops->longjmp(ops->ctx, r.pid, r.tid, r.ns, r.arg);
			break;
		case BQ_EXEC:
			if (ops->exec)
				ops->exec(ops->ctx, r.pid, r.tid, r.ns);
			break;
		case BQ_FORK:
			memcpy(frames, buf->buf + off, r.nframes * sizeof(*frames));
			off += r.nframes * sizeof(*frames);
			if (ops->fork)
				ops->fork(ops->ctx, r.pid, r.tid, r.ns, r.arg, frames, r.nframes);
			break;
		default:
			break;
		}
	}
	return n;
}

long bptrace_poll(struct bptrace *b)
{
	struct bq_buf taken;
	uint64_t lost;
	long n;

	if (!b)
		return 0;
	pthread_mutex_lock(&b->lock);
	taken = b->queue.fill;
	b->queue.fill = b->queue.spare;
	b->queue.fill.len = 0;
	b->queue.dropping = false;
	lost = b->queue.lost;
	b->queue.lost = 0;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	n = bq_deliver(b, &taken);
	if (lost && b->ops.lost)
		b->ops.lost(b->ops.ctx, 0, lost);
	taken.len = 0;
	b->queue.spare = taken; /* the caller's own until the next swap */
	return n;
}

bool bptrace_exited(struct bptrace *b, int *status)
{
	bool done;

	if (!b)
		return false;
	pthread_mutex_lock(&b->lock);
	done = b->main_exited;
	if (done && status)
		*status = b->main_status;
	pthread_mutex_unlock(&b->lock);
	return done;
}

/* ---- opening ---- */

/* The file's entry point (e_entry), for the load bias at each exec. */
static int read_entry(struct bptrace *b, char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	int fd = open(b->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st)) {
		int r = -errno;

		snprintf(err, errlen, "'%s': %s", b->path, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	n = pread(fd, &eh, sizeof(eh), 0);
	close(fd);
	if (n != (ssize_t)sizeof(eh)) {
		snprintf(err, errlen, "'%s': cannot read its ELF header", b->path);
		return -ENOEXEC;
	}
	b->e_entry = eh.e_entry;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	return 0;
}

/* What the breakpoints cannot trace, refused before anything runs. */
static int refuse(struct bptrace *b, const struct uprobes_config *cfg, char *err, size_t errlen)
{
	const char *cxx;

	if (!BP_SUPPORTED) {
		snprintf(err, errlen, "the ptrace backend is built for x86-64 and aarch64 only (not for this machine)");
		return -ENOTSUP;
	}
	if (cfg->nlibs) {
		snprintf(
		    err, errlen,
		    "'%.200s:%.200s': a shared library's functions are traced by the patch backend, not the ptrace "
		    "backend",
		    cfg->libs[0].file, cfg->libs[0].glob);
		return -ENOTSUP;
	}
	if (cfg->libcalls) {
		snprintf(err, errlen, "--libcalls needs the patch backend");
		return -ENOTSUP;
	}
	if (b->sel.es->machine != BP_MACHINE) {
		snprintf(err, errlen,
		         "'%.512s' is a program of another architecture than this one: its traps would be "
		         "foreign code",
		         b->path);
		return -ENOTSUP;
	}
	cxx = dsel_unwinds(b->sel.es);
	if (cxx) {
		snprintf(
		    err, errlen,
		    "'%s' uses C++ exceptions (it links %s): the ptrace backend sees a call end only at its return, "
		    "so a frame an exception unwinds would stay open; like the uprobe backend, it does not trace "
		    "such programs",
		    b->path, cxx);
		return -ENOTSUP;
	}
	return 0;
}

struct bptrace *bptrace_open(const struct uprobes_config *cfg, const struct uprobes_ops *ops, char *err, size_t errlen)
{
	struct bptrace *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;
	int r;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	b->ops = *ops;
	atomic_init(&b->stopping, BP_GO_ON);
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_condattr_destroy(&ca);
	b->path = realpath(cfg->path, NULL);
	if (!b->path) {
		r = -errno;
		snprintf(err, errlen, "'%s': %s", cfg->path, strerror(-r));
	} else {
		r = read_entry(b, err, errlen);
	}
	if (!r)
		r = elfsyms_open(b->path, &b->sel.es, err, errlen);
	if (!r)
		r = refuse(b, cfg, err, errlen);
	if (!r)
		r = dsel_functions(&b->sel, b->path, cfg, "Thumb code", err, errlen);
	if (!r)
		return b;
	bptrace_free(b);
	errno = -r;
	return NULL;
}

static void on_wake(int sig)
{
	(void)sig;
}

int bptrace_attach(struct bptrace *b, pid_t pid, char *err, size_t errlen)
{
	struct sigaction sa;
	int r;

	if (b->thread_started) {
		snprintf(err, errlen, "the ptrace backend follows one program, started once");
		return -EBUSY;
	}
	/* no SA_RESTART: the signal breaks the tracer's waitpid */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_wake;
	sigemptyset(&sa.sa_mask);
	sigaction(BP_WAKE_SIG, &sa, NULL);
	b->main_pid = pid;
	r = pthread_create(&b->thread, NULL, bp_tracer_run, b);
	if (r) {
		snprintf(err, errlen, "cannot start the tracer thread: %s", strerror(r));
		return -r;
	}
	b->thread_started = true;
	pthread_mutex_lock(&b->lock);
	while (!b->setup)
		pthread_cond_wait(&b->cond, &b->lock);
	r = b->setup < 0 ? b->setup : 0;
	if (r)
		snprintf(err, errlen, "%s", b->err);
	pthread_mutex_unlock(&b->lock);
	return r;
}

void bptrace_finish(struct bptrace *b)
{
	struct timespec deadline;

	if (!b || b->finished_called)
		return;
	b->finished_called = true;
	if (b->thread_started) {
		/* the tracer sees the request between two stops; the signal
		 * breaks a wait for one, and is sent again until it has ended
		 * (it may come just before the wait) */
		atomic_store(&b->stopping, BP_DETACH);
		pthread_mutex_lock(&b->lock);
		while (!b->finished) {
			pthread_kill(b->thread, BP_WAKE_SIG);
			pthread_mutex_unlock(&b->lock);
			bptrace_poll(b);
			pthread_mutex_lock(&b->lock);
			clock_gettime(CLOCK_MONOTONIC, &deadline);
			deadline.tv_nsec += BP_WAKE_EVERY_MS * 1000000L;
			deadline.tv_sec += deadline.tv_nsec / 1000000000L;
			deadline.tv_nsec %= 1000000000L;
			if (!b->finished)
				pthread_cond_timedwait(&b->cond, &b->lock, &deadline);
		}
		pthread_mutex_unlock(&b->lock);
		pthread_join(b->thread, NULL);
		b->thread_started = false;
	}
	bptrace_poll(b);
}

void bptrace_get_stats(const struct bptrace *b, struct uprobes_stats *st, struct bptrace_stats *bst)
{
	memset(st, 0, sizeof(*st));
	st->functions = b->sel.nfn;
	st->candidates = b->sel.candidates;
	st->skipped = b->sel.skipped;
	st->nskipped = b->sel.nskipped;
	/* the tracer thread's figures: exact once it has ended */
	st->entries = b->entries;
	st->exits = b->exits;
	st->unwound = b->unwound;
	st->lost = b->queue.total;
	if (bst) {
		memset(bst, 0, sizeof(*bst));
		bst->stops = b->stops;
		bst->steps = b->steps;
		bst->held = b->held;
		bst->too_deep = b->too_deep;
		bst->spaces = b->spaces;
		snprintf(bst->error, sizeof(bst->error), "%s", b->werr);
	}
}

void bptrace_free(struct bptrace *b)
{
	if (!b)
		return;
	bptrace_finish(b);
	/* the tracer thread has ended: what it left of its tasks goes */
	while (b->ntasks)
		task_free(b, b->tasks[b->ntasks - 1]);
	free(b->tasks);
	free(b->queue.fill.buf);
	free(b->queue.spare.buf);
	dsel_release(&b->sel);
	free(b->path);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
	free(b);
}
