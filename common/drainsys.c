/* The drain's syscall side: system call records from a syscall tracer are
 * queued per thread and written into that thread's stream in time order
 * with its function events, so that readers see each call inside the
 * function that made it.  Threads without a runtime ring get a stream of
 * syscalls only. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clocksync.h"
#include "common/drain_impl.h"
#include "common/kernevent.h"
#include "common/memfold.h"
#include "common/sysevent.h"
#include "common/systab.h"

/* Records of a thread without a ring wait this long, or until this many
 * are queued, for its ring to appear (an instrumented thread makes a few
 * syscalls, in the loader or thread start, before its first function). */
#define DRAIN_SYSCALL_HOLD_NS 100000000ull
/* After an exec the wait is longer: the new image's loader runs first, and
 * the runtime it preloads opens the main thread's ring only when its
 * constructor runs, which under a slow syscall tracer (ptrace on a slow or
 * emulated CPU: a stop per call) comes well past DRAIN_SYSCALL_HOLD_NS. A
 * program without the runtime has its syscalls written this much later. */
#define DRAIN_SYSCALL_EXEC_HOLD_NS 2000000000ull
#define SYSQ_HOLD_MAX 4096u
/* Beyond this a thread's queue is written out even if ring events might
 * still come before it (memory stays bounded). */
#define SYSQ_MAX 65536u
#define SYSTHREADS_MAX 65536u
#define SYSPROCS_MAX 65536u
/* Another process's thread (--kernel-system) quiet this long gives its
 * encoder (some 180 KiB) back; its stream goes on in a new one. */
#define OTHER_IDLE_NS 1000000000ull

/* A queued record: a syscall entry or exit, a kernel event (ktrace/),
 * whose record lies in str when it fits and in a block of its own else, or
 * a function entry or exit from the dynamic tracer (dyntrace/). */
#define SYSQ_STR_MAX SYSEVENT_STR_MAX
#define SYSQ_EXEC 0xffu
#define SYSQ_FORK 0xfeu /* addr: the parent pid; str: u32 count, then the frames at 8 */
struct sysq_rec {
	uint64_t ns;
	bool kernel;
	/* LP_EV_ENTRY or LP_EV_EXIT: a function event at addr; LP_EV_LONGJMP:
	 * a return to addr frames; SYSQ_EXEC: the
	 * thread's exec as the dynamic tracer saw it; 0: not a function's */
	uint8_t func;
	union {
		uint64_t addr;
		struct sysevent ev; /* its str, when str_len, is the str below */
		struct {
			uint32_t id, cpu, len;
			bool packed;
			uint8_t *big; /* len > SYSQ_STR_MAX: the record, malloc'd */
		} k;
	};
	char str[SYSQ_STR_MAX];
};

/* A ring buffer of cap records, n from head. */
struct sysq {
	struct sysq_rec *q;
	uint32_t head, n, cap;
};

struct sysproc {
	uint32_t pid;
	uint32_t ring_image; /* latest runtime image seen for the pid; 0: none */
	uint32_t own_image;  /* image of the syscall-only streams; 0: none yet */
	bool maps_written;   /* own_image's mappings are in a stream */
	bool exited;
	int status;
};

struct systhread {
	uint32_t pid, tid;
	/* the queued records: syscalls, kernel events and function events of
	 * the dynamic tracer, each queue in time order (each tracer hands a
	 * thread's records in order), merged as they are written; n counts all */
	struct sysq sq, kq, fq;
	uint32_t n;
	struct stream *bound; /* the thread's ring stream, while open */
	struct stream *next;  /* its next image's, waiting for bound's end */
	uint32_t image;       /* image of its own stream: the last ring's, if any */
	struct encoder *own;  /* stream of syscalls only, once needed */
	uint64_t lost;        /* records lost, not yet written */
	uint64_t first_ns;    /* when the thread was first seen */
	bool dead;            /* removed: its process ended and all is written */
	bool in_wait;         /* in the runtime's futex wait for room: its exit is left out */
	bool exec_queued;     /* without a ring, a successful exec is in its queue */
	bool release;         /* nothing waits any more: the thread's end */
	/* an execve entry later than the first event of its ring (bound, or
	 * the last one it had: ring_first_ns) was written: a successful exit
	 * after it is that image's own exec, not the one that made it */
	bool exec_entered;
	uint64_t ring_first_ns;
	uint64_t seen_ns; /* its latest syscall record or ring event: with
	                   * kernel_waits_for_syscalls, kernel events after
	                   * it wait (see drain_config) */
	/* another process's thread, its kernel events kept for
	 * --kernel-system (struct kernrec.other): its stream is flagged, has
	 * no mappings, and waits for nothing */
	bool other;
	bool announced;   /* its TASK START is written (own may be let go of since) */
	bool pid_unknown; /* made by a record of pid 0: pid is the tid until one tells */
	char comm[16];    /* other: its name as the tracer last saw it */
};

struct drainsys {
	struct systhread **threads;
	uint32_t nthreads, cap;
	uint32_t *hash; /* thread index + 1, by tid */
	uint32_t hash_cap;
	struct sysproc *procs;
	uint32_t nprocs, procs_cap;
	uint64_t lost_unknown;            /* lost records of no known thread */
	int execve_nr[4], execveat_nr[4]; /* per enum sys_arch; -1: none */
	int futex_nr[4];
};

static struct drainsys *sys_get(struct drain *d)
{
	struct drainsys *ds = d->sys;
	unsigned a;
	size_t i;

	if (ds)
		return ds;
	ds = calloc(1, sizeof(*ds));
	if (!ds)
		return NULL;
	for (a = 0; a < 4; a++) {
		ds->execve_nr[a] = a ? sys_lookup((enum sys_arch)a, "execve") : -1;
		ds->execveat_nr[a] = a ? sys_lookup((enum sys_arch)a, "execveat") : -1;
		ds->futex_nr[a] = a ? sys_lookup((enum sys_arch)a, "futex") : -1;
	}
	d->sys = ds;
	/* rings opened before the first record */
	for (i = 0; i < d->nstreams; i++)
		drainsys_bind(d, d->streams[i]);
	return ds;
}

static struct sysproc *proc_get(struct drainsys *ds, uint32_t pid, bool create)
{
	uint32_t i;

	for (i = ds->nprocs; i > 0; i--)
		if (ds->procs[i - 1].pid == pid)
			return &ds->procs[i - 1];
	if (!create || ds->nprocs >= SYSPROCS_MAX)
		return NULL;
	if (ds->nprocs == ds->procs_cap) {
		uint32_t cap = ds->procs_cap ? 2 * ds->procs_cap : 16;
		struct sysproc *n = realloc(ds->procs, cap * sizeof(*n));

		if (!n)
			return NULL;
		ds->procs = n;
		ds->procs_cap = cap;
	}
	memset(&ds->procs[ds->nprocs], 0, sizeof(ds->procs[0]));
	ds->procs[ds->nprocs].pid = pid;
	return &ds->procs[ds->nprocs++];
}

static uint32_t hash_of(uint32_t tid, uint32_t cap)
{
	return (tid * 0x9e3779b1u) & (cap - 1);
}

static int hash_rebuild(struct drainsys *ds, uint32_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h)), i;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < ds->nthreads; i++) {
		uint32_t k = hash_of(ds->threads[i]->tid, cap);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(ds->hash);
	ds->hash = h;
	ds->hash_cap = cap;
	return 0;
}

static struct systhread *thread_find(struct drainsys *ds, uint32_t tid)
{
	uint32_t k;

	if (!ds->hash_cap)
		return NULL;
	for (k = hash_of(tid, ds->hash_cap); ds->hash[k]; k = (k + 1) & (ds->hash_cap - 1))
		if (ds->threads[ds->hash[k] - 1]->tid == tid)
			return ds->threads[ds->hash[k] - 1];
	return NULL;
}

static struct systhread *thread_new(struct drainsys *ds, uint32_t pid, uint32_t tid, uint64_t ns)
{
	struct systhread *t;
	uint32_t k;

	if (ds->nthreads >= SYSTHREADS_MAX)
		return NULL;
	if (ds->nthreads == ds->cap) {
		uint32_t cap = ds->cap ? 2 * ds->cap : 64;
		struct systhread **n = realloc(ds->threads, cap * sizeof(*n));

		if (!n)
			return NULL;
		ds->threads = n;
		ds->cap = cap;
	}
	if ((ds->nthreads + 1) * 2 > ds->hash_cap && hash_rebuild(ds, ds->hash_cap ? 2 * ds->hash_cap : 128))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	t->first_ns = ns;
	ds->threads[ds->nthreads++] = t;
	k = hash_of(tid, ds->hash_cap);
	while (ds->hash[k])
		k = (k + 1) & (ds->hash_cap - 1);
	ds->hash[k] = ds->nthreads;
	return t;
}

/* True when a record of (pid, t's tid) belongs to t: pid is t's process,
 * or is 0 (not known: see drain_kernel), or t was made by such a record
 * and nothing of it is bound or written yet, so that its queued records
 * simply go on under pid, which it takes. */
static bool thread_learns_pid(struct systhread *t, uint32_t pid)
{
	if (t->pid == pid || !pid)
		return true;
	if (!t->pid_unknown || t->bound || t->own || t->announced)
		return false;
	t->pid = pid;
	t->pid_unknown = false;
	return true;
}

static inline struct sysq_rec *sq_at(const struct sysq *q, uint32_t i)
{
	return &q->q[(q->head + i) & (q->cap - 1)];
}

static void sq_free(struct sysq *q)
{
	for (uint32_t i = 0; i < q->n; i++)
		if (sq_at(q, i)->kernel)
			free(sq_at(q, i)->k.big);
	free(q->q);
}

static void thread_free(struct systhread *t)
{
	sq_free(&t->sq);
	sq_free(&t->kq);
	sq_free(&t->fq);
	free(t->own);
	free(t);
}

/* The thread's earliest queued record (on a tie a function event, then
 * the syscall: a function's entry comes before the calls it makes, a
 * syscall's entry before what the kernel did in it); t->n must not be 0. */
static inline struct sysq *q_first(struct systhread *t)
{
	struct sysq *q;

	if (!t->kq.n)
		q = &t->sq;
	else if (!t->sq.n)
		q = &t->kq;
	else
		q = sq_at(&t->kq, 0)->ns < sq_at(&t->sq, 0)->ns ? &t->kq : &t->sq;
	if (t->fq.n && (!q->n || sq_at(&t->fq, 0)->ns <= sq_at(q, 0)->ns))
		q = &t->fq;
	return q;
}

static inline struct sysq_rec *q_front(struct systhread *t)
{
	return sq_at(q_first(t), 0);
}

/* Takes the front record off (after put_record or a drop). */
static inline void q_pop(struct systhread *t)
{
	struct sysq *q = q_first(t);

	q->head = (q->head + 1) & (q->cap - 1);
	q->n--;
	t->n--;
}

/* The time of the queued record at about the middle (for q_relieve). */
static uint64_t q_middle_ns(struct systhread *t)
{
	uint64_t a = t->sq.n ? sq_at(&t->sq, t->sq.n / 2)->ns : 0, b = t->kq.n ? sq_at(&t->kq, t->kq.n / 2)->ns : 0;
	uint64_t c = t->fq.n ? sq_at(&t->fq, t->fq.n / 2)->ns : 0;

	a = a > b ? a : b;
	return a > c ? a : c;
}

/* Room for one more record at the queue's end (grown as needed); NULL
 * when the thread has SYSQ_MAX records queued or memory is short. */
static struct sysq_rec *q_room(struct systhread *t, struct sysq *q, int *err)
{
	*err = -ENOSPC;
	if (t->n >= SYSQ_MAX)
		return NULL;
	if (q->n == q->cap) {
		uint32_t cap = q->cap ? 2 * q->cap : 16, i;
		struct sysq_rec *n;

		*err = -ENOMEM;
		n = malloc(cap * sizeof(*n));
		if (!n)
			return NULL;
		for (i = 0; i < q->n; i++)
			n[i] = *sq_at(q, i);
		free(q->q);
		q->q = n;
		q->cap = cap;
		q->head = 0;
	}
	return sq_at(q, q->n);
}

/* Makes the record just filled at the queue's end take its place in time
 * order: a tracer hands a thread's records in order, but for the odd one
 * the kernel wrote late. */
static void q_settle(struct sysq *q)
{
	uint32_t i = q->n - 1;
	struct sysq_rec r;

	if (!i || sq_at(q, i - 1)->ns <= sq_at(q, i)->ns)
		return;
	r = *sq_at(q, i);
	while (i && sq_at(q, i - 1)->ns > r.ns) {
		*sq_at(q, i) = *sq_at(q, i - 1);
		i--;
	}
	*sq_at(q, i) = r;
}

static int q_push(struct systhread *t, uint64_t ns, const struct sysevent *ev)
{
	int err = 0;
	struct sysq_rec *r = q_room(t, &t->sq, &err);

	if (!r)
		return err;
	r->ns = ns;
	r->kernel = false;
	r->func = 0;
	r->ev = *ev;
	if (ev->str && ev->str_len) {
		r->ev.str_len = ev->str_len < SYSQ_STR_MAX ? ev->str_len : SYSQ_STR_MAX;
		memcpy(r->str, ev->str, r->ev.str_len);
	} else {
		r->ev.str_len = 0;
	}
	r->ev.str = NULL;
	t->sq.n++;
	t->n++;
	q_settle(&t->sq);
	return 0;
}

static int q_push_kernel(struct systhread *t, uint64_t ns, const struct kernrec *k)
{
	int err = 0;
	struct sysq_rec *r = q_room(t, &t->kq, &err);
	uint32_t len = k->len < KERNEVENT_RAW_MAX ? k->len : KERNEVENT_RAW_MAX;

	if (!r)
		return err;
	r->ns = ns;
	r->kernel = true;
	r->func = 0;
	r->k.id = k->id;
	r->k.cpu = k->cpu;
	r->k.len = len;
	r->k.packed = k->packed;
	r->k.big = NULL;
	if (len > SYSQ_STR_MAX) {
		r->k.big = malloc(len);
		if (!r->k.big)
			return -ENOMEM;
		memcpy(r->k.big, k->raw, len);
	} else {
		memcpy(r->str, k->raw, len);
	}
	t->kq.n++;
	t->n++;
	q_settle(&t->kq);
	return 0;
}

static int q_push_func(struct systhread *t, uint64_t ns, uint64_t addr, uint8_t func)
{
	int err = 0;
	struct sysq_rec *r = q_room(t, &t->fq, &err);

	if (!r)
		return err;
	r->ns = ns;
	r->kernel = false;
	r->func = func;
	r->addr = addr;
	t->fq.n++;
	t->n++;
	q_settle(&t->fq);
	return 0;
}

static void put_record(struct encoder *e, struct sysq_rec *r)
{
	struct sysevent ev;

	if (r->func == SYSQ_EXEC)
		return; /* a mark in the queue, not an event */
	if (r->func == SYSQ_FORK) {
		uint64_t frames[DRAIN_FORK_FRAMES_MAX];
		uint32_t n;

		memcpy(&n, r->str, 4);
		memcpy(frames, r->str + 8, (size_t)n * 8);
		encoder_task(e, r->ns, LP_TASK_FORK, r->addr, NULL, 0, frames, n);
		return;
	}
	if (r->func == LP_EV_LONGJMP) {
		encoder_longjmp(e, r->ns, r->addr);
		return;
	}
	if (r->func) {
		encoder_put_func(e, r->ns, r->func, r->addr);
		return;
	}
	if (r->kernel) {
		encoder_kernel(e, r->ns, r->k.id, r->k.cpu, r->k.big ? r->k.big : (const uint8_t *)r->str, r->k.len,
		               r->k.packed);
		free(r->k.big);
		r->k.big = NULL;
		return;
	}
	ev = r->ev;
	ev.str = ev.str_len ? r->str : NULL;
	if (ev.enter)
		encoder_syscall_enter(e, r->ns, ev.arch, ev.nr, ev.flags, ev.args, ev.nargs, ev.ips, ev.nips, ev.str,
		                      ev.str_len);
	else
		encoder_syscall_exit(e, r->ns, ev.arch, ev.nr, ev.ret);
}

static bool is_exec(const struct drainsys *ds, const struct sysq_rec *r);
static void exec_note(const struct drainsys *ds, struct systhread *t, const struct sysq_rec *r);

/* A kernel event that must wait for the thread's syscall records (see
 * drain_config.kernel_waits_for_syscalls); none waits once the thread's
 * process has ended or the drain finishes. */
static bool kernel_held(const struct drain *d, const struct systhread *t, const struct sysq_rec *r)
{
	return r->kernel && d->cfg.kernel_waits_for_syscalls && r->ns > t->seen_ns && !t->release && !t->other;
}

/* The thread's newer image's ring (t->next) takes its records from now
 * on, instead of the bound, older one. */
static void handover(struct drain *d, struct systhread *t)
{
	struct stream *old = t->bound, *n = t->next;

	t->next = NULL;
	n->sys_waiting = NULL;
	old->sys = NULL;
	old->sys_next = UINT64_MAX;
	t->image = old->ring->image;
	t->ring_first_ns = old->first_ns;
	t->bound = NULL;
	t->exec_queued = false;
	drainsys_bind(d, n);
}

/* Writes the queued records up to `upto` into e, the bound stream's;
 * returns the time of the next one left (UINT64_MAX: none, or the
 * thread's records now go to its newer image's stream). */
static uint64_t q_write(struct drain *d, struct systhread *t, struct encoder *e, uint64_t upto)
{
	if (t->lost && t->n) {
		encoder_lost(e, q_front(t)->ns, t->lost);
		t->lost = 0;
	}
	while (t->n && q_front(t)->ns <= upto) {
		struct sysq_rec *r = q_front(t);

		if (kernel_held(d, t, r))
			break;
		/* a newer image's ring waits: it takes over at the exec the
		 * dynamic tracer saw that ended the bound ring's image (not the
		 * one that began it, before the ring's first event) */
		if (t->next && t->bound && r->func == SYSQ_EXEC && t->bound->first_ns && t->bound->first_ns < r->ns) {
			q_pop(t);
			handover(d, t);
			return UINT64_MAX;
		}
		/* an exec the dynamic tracer saw: while the thread's ring is
		 * the old image's (its first event before the exec), what
		 * follows waits for the new image's */
		if (r->func == SYSQ_EXEC) {
			if (t->bound && t->bound->first_ns && t->bound->first_ns < r->ns) {
				t->exec_queued = true;
				break;
			}
			q_pop(t);
			continue;
		}
		/* the image's own exec: what follows is the next image's, which
		 * waits for its ring (the exit of the exec that made this image
		 * is written here) */
		if (t->bound && t->exec_entered && is_exec(d->sys, r)) {
			t->exec_queued = true;
			break;
		}
		exec_note(d->sys, t, r);
		put_record(e, r);
		q_pop(t);
		if (encoder_full(e))
			drain_flush_encoder(d, e);
	}
	return t->n ? q_front(t)->ns : UINT64_MAX;
}

void drainsys_bind(struct drain *d, struct stream *s)
{
	struct drainsys *ds = d->sys;
	struct sysproc *p = proc_get(ds, s->ring->pid, true);
	struct systhread *t = thread_find(ds, s->ring->tid);

	if (p && s->ring->image > p->ring_image)
		p->ring_image = s->ring->image;
	if (!t || !thread_learns_pid(t, s->ring->pid))
		t = thread_new(ds, s->ring->pid, s->ring->tid, 0);
	if (!t)
		return;
	/* with the dynamic tracer, whose exec marks say where an image ends:
	 * two images' rings of the thread open at once (both new to one
	 * scan, or the old one still draining) take turns, the older first,
	 * the newer from the exec on (q_write) or once the older ends
	 * (drainsys_unbind) */
	if (t->bound && t->bound != s && t->bound->ring->pid == s->ring->pid && !t->bound->closed && drain_eager(d)) {
		struct stream *older = t->bound->ring->image < s->ring->image ? t->bound : s;
		struct stream *newer = older == s ? t->bound : s;

		if (t->next && t->next != newer)
			t->next->sys_waiting = NULL;
		newer->sys = NULL;
		newer->sys_next = UINT64_MAX;
		newer->sys_waiting = t;
		t->next = newer;
		if (older == t->bound)
			return;
		t->bound = NULL;
	}
	if (t->bound) {
		/* the old image's stream takes no more of the thread's records */
		t->bound->sys = NULL;
		t->bound->sys_next = UINT64_MAX;
	}
	if (t->own)
		drain_flush_encoder(d, t->own);
	t->bound = s;
	t->exec_entered = false;
	t->ring_first_ns = 0;
	s->sys = t;
	s->sys_next = t->n ? q_front(t)->ns : UINT64_MAX;
}

void drainsys_emit(struct stream *s, uint64_t ns)
{
	struct systhread *t = s->sys;

	if (ns > t->seen_ns)
		t->seen_ns = ns;
	s->sys_next = q_write(s->d, t, s->enc, ns);
}

void drainsys_forget(struct stream *s)
{
	if (s->sys_waiting && s->sys_waiting->next == s)
		s->sys_waiting->next = NULL;
	s->sys_waiting = NULL;
}

void drainsys_unbind(struct stream *s)
{
	struct systhread *t = s->sys;

	t->release = true;
	q_write(s->d, t, s->enc, UINT64_MAX);
	t->release = false;
	if (t->bound != s)
		return; /* handed over to the thread's newer image's stream */
	if (t->lost) {
		encoder_lost(s->enc, s->enc->last_ns, t->lost);
		t->lost = 0;
	}
	t->image = s->ring->image;
	t->ring_first_ns = s->first_ns;
	t->bound = NULL;
	s->sys = NULL;
	s->sys_next = UINT64_MAX;
	if (t->next) {
		struct stream *n = t->next;

		t->next = NULL;
		n->sys_waiting = NULL;
		if (!n->closed)
			drainsys_bind(s->d, n);
	}
}

/* ---- streams of syscalls only ------------------------------------------ */

/* The page-aligned address of the first PT_LOAD segment of the ELF image
 * in buf (n bytes read from the file's start), or UINT64_MAX.  One body for
 * both classes: Ehdr and Phdr name the 32- or 64-bit types. */
#define FIRST_LOAD(Ehdr, Phdr)                                                             \
	do {                                                                               \
		Ehdr eh;                                                                   \
		memcpy(&eh, buf, sizeof(eh));                                              \
		for (i = 0; i < eh.e_phnum; i++) {                                         \
			Phdr ph;                                                           \
			uint64_t off = eh.e_phoff + (uint64_t)i * eh.e_phentsize;          \
			if (eh.e_phentsize < sizeof(ph) || off + sizeof(ph) > (uint64_t)n) \
				break;                                                     \
			memcpy(&ph, buf + off, sizeof(ph));                                \
			if (ph.p_type == PT_LOAD) {                                        \
				vaddr = ph.p_vaddr;                                        \
				break;                                                     \
			}                                                                  \
		}                                                                          \
	} while (0)

/* The load bias of an ELF file mapped with its first byte at `start`:
 * start minus the page-aligned address of its first PT_LOAD segment. */
static uint64_t elf_bias(const char *path, uint64_t start)
{
	unsigned char buf[4096];
	uint64_t vaddr = UINT64_MAX, page = (uint64_t)sysconf(_SC_PAGESIZE);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i;

	if (fd < 0)
		return start;
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < (ssize_t)sizeof(Elf32_Ehdr) || memcmp(buf, ELFMAG, SELFMAG))
		return start;
	if (buf[EI_CLASS] == ELFCLASS64 && n >= (ssize_t)sizeof(Elf64_Ehdr))
		FIRST_LOAD(Elf64_Ehdr, Elf64_Phdr);
	else if (buf[EI_CLASS] == ELFCLASS32)
		FIRST_LOAD(Elf32_Ehdr, Elf32_Phdr);
	if (vaddr == UINT64_MAX)
		return start;
	return start - (vaddr & ~(page - 1));
}

/* Writes MAP events for the executable file mappings of process pid, as
 * /proc/<pid>/maps shows them now. */
static void write_maps(struct encoder *e, uint64_t ns, uint32_t pid)
{
	char path[64], line[4400], first_path[4096] = "";
	uint64_t first_start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8], file[4096];
		int pos = 0;

		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &start, &end, perms, &off, &pos) < 4)
			continue;
		if (sscanf(line + pos, " %4095[^\n]", file) != 1 || file[0] != '/')
			continue;
		/* the lowest mapping of a file comes first: remember it */
		if (strcmp(file, first_path)) {
			snprintf(first_path, sizeof(first_path), "%s", file);
			first_start = start - off;
		}
		if (perms[2] != 'x')
			continue;
		encoder_map(e, ns, elf_bias(file, first_start), start, end, off, NULL, 0, file, strlen(file));
		if (encoder_full(e))
			break;
	}
	fclose(f);
}

static void read_comm(uint32_t pid, uint32_t tid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/* The thread's stream of syscalls only, set up on first use: in the image
 * of its last ring, or of its process's latest ring, or in an image of its
 * own whose mappings come from /proc. */
static struct encoder *own_stream(struct drain *d, struct systhread *t, uint64_t ns)
{
	struct sysproc *p = proc_get(d->sys, t->pid, true);
	char comm[32];

	if (t->own)
		return t->own;
	if (!t->image && p && p->ring_image && !t->other)
		t->image = p->ring_image;
	if (!t->image && p) {
		if (!p->own_image)
			p->own_image = atomic_fetch_add_explicit((_Atomic uint32_t *)&d->control->next_image, 1,
			                                         memory_order_relaxed);
		t->image = p->own_image;
	}
	t->own = malloc(sizeof(*t->own));
	if (!t->own)
		return NULL;
	encoder_init(t->own, t->image, t->pid, t->tid);
	if (d->cfg.chunk_bytes)
		encoder_set_target(t->own, d->cfg.chunk_bytes);
	if (t->announced)
		return t->own; /* an other thread's stream, going on after a quiet time */
	t->announced = true;
	d->stats.streams++;
	if (t->other) {
		/* named by the tracer: the task may be gone from /proc by now */
		encoder_task(t->own, ns, LP_TASK_START, LP_TASK_START_OTHER, t->comm, strnlen(t->comm, 16), NULL, 0);
		return t->own;
	}
	read_comm(t->pid, t->tid, comm, sizeof(comm));
	encoder_task(t->own, ns, LP_TASK_START, 0, comm, strlen(comm), NULL, 0);
	if (p && t->image == p->own_image && !p->maps_written) {
		write_maps(t->own, ns, t->pid);
		p->maps_written = true;
	}
	return t->own;
}

/* Ends a thread's own stream (its process is gone). */
static void own_close(struct drain *d, struct systhread *t)
{
	struct sysproc *p = proc_get(d->sys, t->pid, false);
	struct encoder *e = t->own;

	if (!e)
		return;
	if (t->lost) {
		encoder_lost(e, e->last_ns, t->lost);
		t->lost = 0;
	}
	if (p && p->exited && t->tid == t->pid)
		encoder_task(e, e->last_ns, LP_TASK_EXIT, (uint64_t)(uint32_t)p->status, NULL, 0, NULL, 0);
	else
		encoder_task(e, e->last_ns, LP_TASK_END, 0, NULL, 0, NULL, 0);
	drain_flush_encoder(d, e);
}

/* After a successful exec the process is a new image: its syscall-only
 * streams start again with the new mappings. */
static void after_exec(struct drain *d, uint32_t pid)
{
	struct drainsys *ds = d->sys;
	struct sysproc *p = proc_get(ds, pid, false);
	uint32_t i;

	if (!p)
		return;
	for (i = 0; i < ds->nthreads; i++) {
		struct systhread *t = ds->threads[i];

		if (t->pid != pid || t->bound)
			continue;
		if (t->own) {
			own_close(d, t);
			free(t->own);
			t->own = NULL;
		}
		t->image = 0;
	}
	p->own_image = 0;
	p->ring_image = 0;
	p->maps_written = false;
}

static bool is_exec_ev(const struct drainsys *ds, const struct sysevent *ev)
{
	return ev->arch < 4 && !ev->enter && ev->ret == 0 &&
	       ((int)ev->nr == ds->execve_nr[ev->arch] || (int)ev->nr == ds->execveat_nr[ev->arch]);
}

static bool is_exec(const struct drainsys *ds, const struct sysq_rec *r)
{
	return !r->kernel && !r->func && is_exec_ev(ds, &r->ev);
}

/* Follows a ring thread's execve calls as they are written (see
 * exec_entered): an entry sets it, a failed exit clears it. */
static void exec_note(const struct drainsys *ds, struct systhread *t, const struct sysq_rec *r)
{
	const struct sysevent *ev = &r->ev;

	if (r->kernel || r->func || ev->arch >= 4 ||
	    ((int)ev->nr != ds->execve_nr[ev->arch] && (int)ev->nr != ds->execveat_nr[ev->arch]))
		return;
	/* after the ring's first event: the image's own exec (the exec that
	 * made the image comes before its runtime wrote anything) */
	if (ev->enter) {
		uint64_t first = t->bound ? t->bound->first_ns : t->ring_first_ns;

		t->exec_entered = first && r->ns > first;
	} else if (ev->ret != 0)
		t->exec_entered = false;
}

/* Writes queued records of a thread without a ring into its own stream,
 * watching for exec; with stop_at_exec, what follows an exec stays queued
 * to wait for the new image's ring. */
static void own_write(struct drain *d, struct systhread *t, bool stop_at_exec)
{
	struct encoder *e;

	while (t->n) {
		struct sysq_rec *r = q_front(t);
		bool exec = is_exec(d->sys, r);

		if (kernel_held(d, t, r))
			return;
		if (r->func == SYSQ_EXEC) {
			/* the dynamic tracer's exec after the thread's last ring
			 * (the old image's): what follows waits for the new
			 * image's ring, for a while */
			if (stop_at_exec && t->ring_first_ns && t->ring_first_ns < r->ns &&
			    r->ns + DRAIN_SYSCALL_EXEC_HOLD_NS > clocksync_monotonic_ns()) {
				t->exec_queued = true;
				return;
			}
			q_pop(t);
			continue;
		}
		if (exec && t->exec_entered) {
			/* the exec that ended the image of the thread's last ring
			 * (read after that ring closed): it and what follows are
			 * the next image's, which waits for its own ring */
			t->exec_entered = false;
			t->ring_first_ns = 0;
			after_exec(d, t->pid);
			t->exec_queued = true;
			if (stop_at_exec)
				return;
		}
		exec_note(d->sys, t, r);
		e = own_stream(d, t, r->ns);
		if (!e)
			return;
		if (t->lost) {
			encoder_lost(e, r->ns, t->lost);
			t->lost = 0;
		}
		put_record(e, r);
		q_pop(t);
		if (encoder_full(e))
			drain_flush_encoder(d, e);
		if (exec) {
			after_exec(d, t->pid);
			t->exec_queued = t->n > 0;
			if (stop_at_exec)
				return;
		}
	}
}

/* ---- the drain's calls ---------------------------------------------------- */

/* True for the entry and exit of a futex call the runtime made to wait for
 * room in the thread's ring (struct lp_ring_header.wait_uaddr): the
 * program did not make it. */
static bool runtime_wait(const struct drainsys *ds, struct systhread *t, const struct sysevent *ev)
{
	uint64_t uaddr;

	if (ev->arch >= 4 || ds->futex_nr[ev->arch] < 0 || ev->nr != (uint32_t)ds->futex_nr[ev->arch])
		return false;
	if (!ev->enter) {
		bool ours = t->in_wait;

		t->in_wait = false;
		return ours;
	}
	if (!t->bound || !ev->nargs)
		return false;
	uaddr = atomic_load_explicit((_Atomic uint64_t *)&t->bound->ring->wait_uaddr, memory_order_relaxed);
	t->in_wait = uaddr && ev->args[0] == uaddr;
	uaddr = atomic_load_explicit((_Atomic uint64_t *)&t->bound->ring->wake_uaddr, memory_order_relaxed);
	t->in_wait |= uaddr && ev->args[0] == uaddr;
	return t->in_wait;
}

/* The thread a record of (pid, tid) goes to, made on first sight; NULL
 * when memory is short (the record is counted lost). */
static struct systhread *thread_for(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns)
{
	struct drainsys *ds = sys_get(d);
	struct systhread *t;

	if (!ds)
		return NULL;
	t = thread_find(ds, tid);
	if (t && !thread_learns_pid(t, pid) && !t->bound && !t->n) {
		/* the tid was reused by another process */
		own_close(d, t);
		free(t->own);
		t->own = NULL;
		t->image = 0;
		t->pid = pid;
		t->pid_unknown = t->other = t->announced = false;
		t->comm[0] = '\0';
	}
	if (!t && (t = thread_new(ds, pid ? pid : tid, tid, ns)))
		t->pid_unknown = !pid;
	return t;
}

/* A thread far behind writes out the oldest half of its queue, in case no
 * ring event ever comes to order them. */
static void q_relieve(struct drain *d, struct systhread *t)
{
	struct encoder *e;

	if (t->n < SYSQ_MAX)
		return;
	e = t->bound ? t->bound->enc : own_stream(d, t, q_front(t)->ns);
	t->release = true;
	if (e)
		q_write(d, t, e, q_middle_ns(t));
	t->release = false;
}

/* The thread a record goes to, with room made in its queue; NULL (the
 * record counted lost) when memory is short. */
static struct systhread *thread_taking(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns)
{
	struct systhread *t;

	d->sys_polled++;
	t = thread_for(d, pid, tid, ns);
	if (!t) {
		d->stats.lost++;
		return NULL;
	}
	q_relieve(d, t);
	return t;
}

/* After a push: r is its result (a failure counts the record lost); a
 * bound stream learns of a record earlier than its next one. */
static int pushed(struct drain *d, struct systhread *t, uint64_t ns, int r)
{
	if (r) {
		t->lost++;
		d->stats.lost++;
		return r;
	}
	if (t->bound && ns < t->bound->sys_next)
		t->bound->sys_next = q_front(t)->ns;
	return 0;
}

int drain_syscall(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, const struct sysevent *ev)
{
	struct systhread *t = thread_taking(d, pid, tid, ns);
	int r;

	if (!t)
		return -ENOMEM;
	if (runtime_wait(d->sys, t, ev))
		return 0;
	if (ns > t->seen_ns)
		t->seen_ns = ns;
	r = q_push(t, ns, ev);
	if (!r && !t->bound && is_exec_ev(d->sys, ev))
		t->exec_queued = true;
	return pushed(d, t, ns, r);
}

int drain_kernel(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, const struct kernrec *k)
{
	struct systhread *t = thread_taking(d, pid, tid, ns);

	if (!t)
		return -ENOMEM;
	if (k->other && !t->bound) {
		t->other = true;
		if (!t->announced && k->comm)
			snprintf(t->comm, sizeof(t->comm), "%s", k->comm);
	}
	return pushed(d, t, ns, q_push_kernel(t, ns, k));
}

int drain_func(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t addr, bool exit)
{
	struct systhread *t = thread_taking(d, pid, tid, ns);

	if (!t)
		return -ENOMEM;
	return pushed(d, t, ns, q_push_func(t, ns, addr, exit ? LP_EV_EXIT : LP_EV_ENTRY));
}

int drain_func_exec(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns)
{
	struct systhread *t = thread_taking(d, pid, tid, ns);

	if (!t)
		return -ENOMEM;
	return pushed(d, t, ns, q_push_func(t, ns, 0, SYSQ_EXEC));
}

int drain_func_longjmp(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t depth)
{
	struct systhread *t = thread_taking(d, pid, tid, ns);

	if (!t)
		return -ENOMEM;
	return pushed(d, t, ns, q_push_func(t, ns, depth, LP_EV_LONGJMP));
}

int drain_func_fork(struct drain *d, uint32_t pid, uint32_t tid, uint64_t ns, uint32_t parent, const uint64_t *frames,
                    uint32_t n)
{
	struct systhread *t = thread_taking(d, pid, tid, ns);
	struct sysq_rec *r;
	int err;

	_Static_assert(8 + DRAIN_FORK_FRAMES_MAX * 8 <= SYSQ_STR_MAX, "the frames fit in a queued record");
	if (!t)
		return -ENOMEM;
	if (n > DRAIN_FORK_FRAMES_MAX)
		n = DRAIN_FORK_FRAMES_MAX;
	err = q_push_func(t, ns, parent, SYSQ_FORK);
	if (!err) {
		/* q_settle may have moved it: find it by kind and time */
		for (uint32_t i = t->fq.n; i > 0; i--) {
			r = sq_at(&t->fq, i - 1);
			if (r->func == SYSQ_FORK && r->ns == ns) {
				memcpy(r->str, &n, 4);
				memcpy(r->str + 8, frames, (size_t)n * 8);
				break;
			}
		}
	}
	return pushed(d, t, ns, err);
}

void drain_syscalls_lost(struct drain *d, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct drainsys *ds = sys_get(d);
	struct systhread *t = ds && tid ? thread_find(ds, tid) : NULL;

	d->stats.lost += count;
	if (t)
		t->lost += count;
	else if (ds)
		ds->lost_unknown += count;
}

/* Another process's thread: no ring will come, so its records are written
 * at once (the tracer hands them in time order); its end is not known
 * (the drain is told of the traced processes' only), so a quiet thread
 * gives its encoder back instead. */
static void other_after_poll(struct drain *d, struct systhread *t, uint64_t t0)
{
	own_write(d, t, false);
	if (t->lost && !t->n && t->own) {
		encoder_lost(t->own, t->own->last_ns, t->lost);
		t->lost = 0;
	}
	if (t->own && !t->n && t->own->last_ns + OTHER_IDLE_NS <= t0) {
		drain_flush_encoder(d, t->own);
		free(t->own);
		t->own = NULL;
	}
}

void drainsys_after_poll(struct drain *d, uint64_t t0)
{
	struct drainsys *ds = d->sys;
	uint32_t i, j;

	for (i = 0; i < ds->nthreads; i++) {
		struct systhread *t = ds->threads[i];
		struct sysproc *p;
		uint64_t hold;

		if (t->bound) {
			t->exec_queued = false;
			/* not past the events a folding stage still holds: they
			 * come first */
			uint64_t upto = t0;

			if (t->bound->fold) {
				uint64_t held = memfold_oldest_ns(t->bound->fold);

				if (held < upto)
					upto = held;
			}
			if (t->n && q_front(t)->ns <= upto) {
				struct stream *b = t->bound;
				uint64_t next = q_write(d, t, b->enc, upto);

				if (t->bound == b)
					b->sys_next = next;
			}
			continue;
		}
		if (t->other) {
			other_after_poll(d, t, t0);
			continue;
		}
		p = proc_get(ds, t->pid, false);
		hold = t->exec_queued ? DRAIN_SYSCALL_EXEC_HOLD_NS : DRAIN_SYSCALL_HOLD_NS;
		if (t->n && (t->own || q_front(t)->ns + hold <= t0 || t->n >= SYSQ_HOLD_MAX || (p && p->exited))) {
			t->release = p && p->exited;
			own_write(d, t, !(p && p->exited));
			t->release = false;
		}
		if (!t->n)
			t->exec_queued = false;
		if (t->lost && !t->n && t->own) {
			encoder_lost(t->own, t->own->last_ns, t->lost);
			t->lost = 0;
		}
		if (!t->n && p && p->exited) {
			own_close(d, t);
			t->dead = true;
		}
	}
	if (ds->lost_unknown) {
		/* the kernel could not say whose: the program's first stream
		 * takes them (not another process's: readers keep those apart) */
		struct encoder *e = d->nstreams ? d->streams[0]->enc : NULL;

		for (i = 0; !e && i < ds->nthreads; i++)
			if (ds->threads[i]->own && !ds->threads[i]->dead && !ds->threads[i]->other)
				e = ds->threads[i]->own;
		if (e) {
			encoder_lost(e, e->last_ns, ds->lost_unknown);
			ds->lost_unknown = 0;
		}
	}
	for (i = j = 0; i < ds->nthreads; i++) {
		if (ds->threads[i]->dead)
			thread_free(ds->threads[i]);
		else
			ds->threads[j++] = ds->threads[i];
	}
	if (j != ds->nthreads) {
		ds->nthreads = j;
		hash_rebuild(ds, ds->hash_cap);
	}
}

int drain_adopt_process(struct drain *d, pid_t pid)
{
	struct systhread *t = thread_for(d, (uint32_t)pid, (uint32_t)pid, clocksync_monotonic_ns());

	/* its main thread's stream begins now, with the mappings */
	if (!t || !own_stream(d, t, t->first_ns))
		return -ENOMEM;
	return 0;
}

void drainsys_process_exited(struct drain *d, uint32_t pid, int status)
{
	struct sysproc *p = proc_get(d->sys, pid, true);

	if (p) {
		p->exited = true;
		p->status = status;
	}
}

void drainsys_flush(struct drain *d)
{
	uint32_t i;

	for (i = 0; i < d->sys->nthreads; i++)
		if (d->sys->threads[i]->own)
			drain_flush_encoder(d, d->sys->threads[i]->own);
}

void drainsys_set_chunk_bytes(struct drain *d, uint32_t bytes)
{
	uint32_t i;

	for (i = 0; i < d->sys->nthreads; i++)
		if (d->sys->threads[i]->own)
			encoder_set_target(d->sys->threads[i]->own, bytes ? bytes : LP_CHUNK_TARGET_PAYLOAD);
}

void drainsys_finish(struct drain *d)
{
	struct drainsys *ds = d->sys;
	uint32_t i;

	for (i = 0; i < ds->nthreads; i++) {
		struct systhread *t = ds->threads[i];

		t->release = true;
		own_write(d, t, false);
		own_close(d, t);
	}
	if (ds->lost_unknown) {
		for (i = 0; i < ds->nthreads; i++) {
			struct encoder *e = ds->threads[i]->own;

			if (e && !ds->threads[i]->other) {
				encoder_lost(e, e->last_ns, ds->lost_unknown);
				drain_flush_encoder(d, e);
				ds->lost_unknown = 0;
				break;
			}
		}
	}
}

void drainsys_free(struct drain *d)
{
	struct drainsys *ds = d->sys;
	uint32_t i;

	if (!ds)
		return;
	for (i = 0; i < ds->nthreads; i++)
		thread_free(ds->threads[i]);
	free(ds->threads);
	free(ds->hash);
	free(ds->procs);
	free(ds);
	d->sys = NULL;
}
