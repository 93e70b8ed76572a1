/* The kernel tracks of the web UI's server (see serve/ktrack.h).
 *
 * Each thread is followed through its kernel events: a switch-out ends
 * its run slice on that CPU and begins a wait, a wake-up of it from
 * elsewhere names who ended the wait, a switch-in ends the wait (kept,
 * with its time added to the call path it left on) and begins a slice.
 * An event in the thread's own context means it runs: that opens a slice
 * when none was (its first, or after a lost switch-in). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/serve/ktrack.h"

static const char *const softirq_names[] = { "HI",       "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
	                                     "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU" };

void ktrack_init(struct ktrack *kt)
{
	memset(kt, 0, sizeof(*kt));
	names_init(&kt->texts);
	kt->sorted = true;
}

void ktrack_release(struct ktrack *kt)
{
	for (uint32_t i = 0; i < kt->nthreads; i++)
		if (kt->threads[i]) {
			free(kt->threads[i]->off);
			free(kt->threads[i]->irq);
			free(kt->threads[i]);
		}
	free(kt->threads);
	free(kt->slices);
	free(kt->cpus);
	free(kt->cpu_first);
	free(kt->points);
	hashindex_release(&kt->point_index);
	names_release(&kt->texts);
	memset(kt, 0, sizeof(*kt));
}

/* ------------------------------------------------------------ storage */

struct ktrack_thread *ktrack_thread(const struct ktrack *kt, uint32_t index)
{
	return index < kt->nthreads ? kt->threads[index] : NULL;
}

struct ktrack_thread *ktrack_thread_make(struct ktrack *kt, uint32_t index)
{
	struct ktrack_thread *t;

	if (index >= WALK_STREAMS_MAX)
		return NULL;
	if (index >= kt->nthreads) {
		uint32_t n = index + 64 < WALK_STREAMS_MAX ? index + 64 : WALK_STREAMS_MAX;
		struct ktrack_thread **g = realloc(kt->threads, n * sizeof(*g));

		if (!g) {
			kt->oom = true;
			return NULL;
		}
		memset(g + kt->nthreads, 0, (n - kt->nthreads) * sizeof(*g));
		kt->threads = g;
		kt->nthreads = n;
	}
	t = kt->threads[index];
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			kt->oom = true;
			return NULL;
		}
		t->other = NAMES_NONE;
		kt->threads[index] = t;
	}
	return t;
}

/* Room for one more of n items of `size` in *arr (capacity *cap), or
 * NULL (memory ran out: kt->oom). */
static void *grow(struct ktrack *kt, void **arr, size_t n, size_t *cap, size_t size)
{
	if (n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		void *g = realloc(*arr, c * size);

		if (!g) {
			kt->oom = true;
			return NULL;
		}
		*arr = g;
		*cap = c;
	}
	return (char *)*arr + n * size;
}

struct ktrack_off *ktrack_add_off(struct ktrack *kt, struct ktrack_thread *t)
{
	size_t cap = t->off_cap;
	struct ktrack_off *o;

	if (kt->noffs >= KTRACK_ITEMS_MAX) {
		kt->dropped_off++;
		return NULL;
	}
	o = grow(kt, (void **)&t->off, t->noff, &cap, sizeof(*o));
	if (!o)
		return NULL;
	t->off_cap = (uint32_t)cap;
	t->noff++;
	kt->noffs++;
	return o;
}

struct ktrack_irq *ktrack_add_irq(struct ktrack *kt, struct ktrack_thread *t)
{
	size_t cap = t->irq_cap;
	struct ktrack_irq *q;

	if (kt->nirqs >= KTRACK_ITEMS_MAX) {
		kt->dropped_irq++;
		return NULL;
	}
	q = grow(kt, (void **)&t->irq, t->nirq, &cap, sizeof(*q));
	if (!q)
		return NULL;
	t->irq_cap = (uint32_t)cap;
	t->nirq++;
	kt->nirqs++;
	return q;
}

struct ktrack_slice *ktrack_add_slice(struct ktrack *kt)
{
	struct ktrack_slice *sl;

	if (kt->nslices >= KTRACK_ITEMS_MAX) {
		kt->dropped_slices++;
		return NULL;
	}
	sl = grow(kt, (void **)&kt->slices, kt->nslices, &kt->slices_cap, sizeof(*sl));
	if (!sl)
		return NULL;
	kt->nslices++;
	kt->sorted = false;
	return sl;
}

struct point_key {
	uint32_t stream, node;
	uint64_t leaf;
};

static bool point_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct flame_point *p = &((const struct ktrack *)ctx)->points[item];
	const struct point_key *k = key;

	return p->node == k->node && p->stream == k->stream && p->leaf == k->leaf;
}

int ktrack_add_point(struct ktrack *kt, uint32_t stream, uint32_t node, uint64_t leaf, uint64_t ns, uint64_t count)
{
	struct point_key k = { stream, node, leaf };
	uint64_t h = hashindex_u64((uint64_t)stream << 32 ^ node ^ leaf * 31);
	struct flame_point *p;
	size_t cap = kt->points_cap;
	uint32_t slot;

	if (hashindex_reserve(&kt->point_index)) {
		kt->oom = true;
		return -ENOMEM;
	}
	slot = hashindex_slot(&kt->point_index, h, point_eq, kt, &k);
	if (kt->point_index.val[slot]) {
		p = &kt->points[kt->point_index.val[slot] - 1];
	} else {
		if (kt->npoints >= KTRACK_POINTS_MAX) {
			kt->dropped_points++;
			return -ENOSPC;
		}
		p = grow(kt, (void **)&kt->points, kt->npoints, &cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		kt->points_cap = (uint32_t)cap;
		memset(p, 0, sizeof(*p));
		p->stream = stream;
		p->node = node;
		p->leaf = leaf;
		hashindex_put(&kt->point_index, slot, h, kt->npoints++);
	}
	p->ns += ns;
	p->count += count;
	return 0;
}

/* ------------------------------------------------------------ the pass */

static uint16_t cpu_of(uint32_t cpu)
{
	return cpu < KTRACK_CPUS_MAX ? (uint16_t)cpu : (uint16_t)KTRACK_CPUS_MAX;
}

static void open_slice(struct ktrack_thread *t, uint64_t ns, uint32_t cpu)
{
	t->running = true;
	t->run_start = ns;
	t->run_cpu = cpu_of(cpu);
}

static void close_slice(struct ktrack *kt, struct ktrack_thread *t, struct walk_stream *s, uint64_t ns)
{
	struct ktrack_slice *sl;

	if (!t->running)
		return;
	t->running = false;
	if (t->run_cpu >= KTRACK_CPUS_MAX || ns < t->run_start || !(sl = ktrack_add_slice(kt)))
		return;
	sl->start = t->run_start;
	sl->end = ns;
	sl->thread = s->index;
	sl->cpu = t->run_cpu;
	sl->other = t->other;
}

/* The call tree node the thread is in at a kernel event: its innermost
 * open call's, 0 at the root. */
static uint32_t node_at(const struct ktrack *kt, const struct walk_stream *s, const struct walk_kernel *k)
{
	const struct calltree_stream *t = kt->ct ? calltree_stream(kt->ct, s->index) : NULL;

	if (!t || !k->depth || k->depth > t->path_cap)
		return 0;
	return t->path[k->depth - 1].node;
}

/* The wait under way ends at ns: kept, and its time charged to its path. */
static void end_wait(struct ktrack *kt, struct ktrack_thread *t, struct walk_stream *s, uint64_t ns)
{
	struct ktrack_off *o;

	t->is_off = false;
	if (ns < t->pending.start)
		return;
	t->pending.end = ns;
	ktrack_add_point(kt, s->index, t->pending_node, t->pending_leaf, ns - t->pending.start, 1);
	o = ktrack_add_off(kt, t);
	if (o)
		*o = t->pending;
}

/* An event in the thread's own context: it runs (since its first event,
 * when this is the first thing known of it). */
static void runs(struct ktrack *kt, struct ktrack_thread *t, struct walk_stream *s, const struct walk_kernel *k)
{
	if (t->is_off)
		end_wait(kt, t, s, k->ns); /* its switch-in was lost */
	if (!t->running)
		open_slice(t, t->known ? k->ns : s->first_ns, k->cpu);
	t->known = true;
}

static void switch_out(struct ktrack *kt, struct ktrack_thread *t, struct walk_stream *s, const struct walk_kernel *k,
                       const struct kevent *ev)
{
	char state = kevent_switch_state(ev), sys[48];
	struct ktrack_off *p = &t->pending;

	runs(kt, t, s, k);
	close_slice(kt, t, s, k->ns);
	t->nopen = 0; /* no handler runs on across a switch */
	memset(p, 0, sizeof(*p));
	p->start = k->ns;
	p->state = (uint8_t)(state == 'R' || state == 'S' || state == 'D' ? state : '?');
	p->cpu = cpu_of(k->cpu);
	p->who = p->sys = NAMES_NONE;
	t->pending_node = node_at(kt, s, k);
	t->pending_leaf = 0;
	if (k->in_syscall) {
		t->pending_leaf = CALLTREE_SYSCALL_KEY(k->sc_arch, k->sc_nr);
		sys_name((enum sys_arch)k->sc_arch, k->sc_nr, sys, sizeof(sys));
		p->sys = names_intern(&kt->texts, sys);
	}
	t->woken_waking = false;
	t->is_off = true;
}

static void switch_in(struct ktrack *kt, struct ktrack_thread *t, struct walk_stream *s, const struct walk_kernel *k)
{
	if (t->is_off)
		end_wait(kt, t, s, k->ns);
	close_slice(kt, t, s, k->ns); /* a switch-out was lost */
	open_slice(t, k->ns, k->cpu);
	t->known = true;
}

/* A wake-up of the thread from elsewhere, while it waits: as the kernel
 * layer reads it, sched_waking (in the waker's context) before the
 * sched_wakeup that may follow on another CPU. */
static void woken(struct ktrack_thread *t, const struct walk_kernel *k, const struct kevent *ev)
{
	struct ktrack_off *p = &t->pending;

	if (!t->is_off || (t->woken_waking && ev->kind == KEV_WAKEUP))
		return;
	t->woken_waking = ev->kind == KEV_WAKING;
	p->wake_ns = k->ns;
	p->wake_cpu = cpu_of(k->cpu);
	p->waker_tid = (uint32_t)ev->common_pid;
	if (ev->in_hardirq && t->timer_ns && t->timer_cpu == cpu_of(k->cpu) &&
	    k->ns - t->timer_ns <= KTRACK_TIMER_WAKE_NS)
		p->waker = KTRACK_WAKER_TIMER;
	else if (ev->in_hardirq)
		p->waker = KTRACK_WAKER_HARDIRQ;
	else if (ev->in_softirq)
		p->waker = KTRACK_WAKER_SOFTIRQ;
	else
		p->waker = KTRACK_WAKER_THREAD;
}

static void irq_enter(struct ktrack *kt, struct ktrack_thread *t, const struct walk_kernel *k, const struct kevent *ev)
{
	struct ktrack_irq *q;
	char what[64];

	if (t->nopen == KTRACK_IRQ_NEST)
		return;
	q = &t->open[t->nopen++];
	q->start = k->ns;
	q->cpu = cpu_of(k->cpu);
	q->soft = ev->kind == KEV_SOFTIRQ_ENTRY;
	if (!q->soft)
		snprintf(what, sizeof(what), "irq %d (%s)", ev->u.irq.irq, ev->u.irq.name);
	else if (ev->u.softirq.vec < sizeof(softirq_names) / sizeof(softirq_names[0]))
		snprintf(what, sizeof(what), "softirq %s", softirq_names[ev->u.softirq.vec]);
	else
		snprintf(what, sizeof(what), "softirq %u", ev->u.softirq.vec);
	q->what = names_intern(&kt->texts, what);
}

static void irq_exit(struct ktrack *kt, struct ktrack_thread *t, const struct walk_kernel *k, bool soft)
{
	struct ktrack_irq *q;

	if (!t->nopen || t->open[t->nopen - 1].soft != soft)
		return;
	t->nopen--;
	if (k->ns < t->open[t->nopen].start || !(q = ktrack_add_irq(kt, t)))
		return;
	*q = t->open[t->nopen];
	q->end = k->ns;
}

static void on_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k)
{
	struct ktrack *kt = ctx;
	struct ktrack_thread *t;
	struct kevent ev;
	bool own;

	/* a live session may bring more formats: take them in */
	if (!kt->kf || kt->kformat_len != kt->w->kformat_len) {
		kt->kf = klayer_formats(kt->w, NULL, 0);
		kt->kformat_len = kt->w->kformat_len;
	}
	if (!kt->kf || kevent_decode(kt->kf, k->id, k->raw, k->raw_len, &ev))
		return;
	t = ktrack_thread_make(kt, s->index);
	if (!t)
		return;
	t->ws = s;
	if (s->other && t->other == NAMES_NONE) {
		char name[48];

		if (s->tid == s->pid)
			snprintf(name, sizeof(name), "%s %u", s->comm, s->pid);
		else
			snprintf(name, sizeof(name), "%s %u/%u", s->comm, s->pid, s->tid);
		t->other = names_intern(&kt->texts, name);
	}
	if (s->other) {
		/* another process's thread (--kernel-system): only its time on
		 * the CPUs, from its switches */
		if (ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.prev_pid == s->tid) {
			close_slice(kt, t, s, k->ns);
		} else if (ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.next_pid == s->tid) {
			close_slice(kt, t, s, k->ns);
			open_slice(t, k->ns, k->cpu);
		}
		return;
	}
	own = (uint32_t)ev.common_pid == s->tid;
	switch (ev.kind) {
	case KEV_SWITCH:
		if ((uint32_t)ev.u.sw.prev_pid == s->tid)
			switch_out(kt, t, s, k, &ev);
		else if ((uint32_t)ev.u.sw.next_pid == s->tid)
			switch_in(kt, t, s, k);
		return;
	case KEV_WAKEUP:
	case KEV_WAKING:
		if ((uint32_t)ev.u.wake.pid == s->tid && !own) {
			woken(t, k, &ev);
			return;
		}
		break;
	case KEV_HRTIMER_EXPIRE_ENTRY:
	case KEV_TIMER_EXPIRE_ENTRY:
		if (!own) {
			t->timer_ns = k->ns;
			t->timer_cpu = cpu_of(k->cpu);
			return;
		}
		break;
	case KEV_IRQ_ENTRY:
	case KEV_SOFTIRQ_ENTRY:
		if (own) {
			runs(kt, t, s, k);
			irq_enter(kt, t, k, &ev);
			return;
		}
		break;
	case KEV_IRQ_EXIT:
	case KEV_SOFTIRQ_EXIT:
		if (own) {
			irq_exit(kt, t, k, ev.kind == KEV_SOFTIRQ_EXIT);
			return;
		}
		break;
	default:
		break;
	}
	if (own)
		runs(kt, t, s, k);
}

static void on_end(void *ctx, struct walk_stream *s)
{
	struct ktrack *kt = ctx;
	struct ktrack_thread *t = ktrack_thread(kt, s->index);

	if (!t)
		return;
	close_slice(kt, t, s, s->last_ns);
	t->nopen = 0;
	t->is_off = false; /* switched out for good (its exit): no wait */
}

void ktrack_walk_ops(struct ktrack *kt, struct walk *w, const struct calltree *ct, struct walk_ops *ops)
{
	kt->w = w;
	kt->ct = ct;
	ops->ctx = kt;
	ops->others = true; /* their slices on the CPUs */
	ops->kernel = on_kernel;
	ops->end = on_end;
}

/* ------------------------------------------------------------ after the pass */

static int slice_cmp(const void *a, const void *b)
{
	const struct ktrack_slice *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

int ktrack_settle(struct ktrack *kt)
{
	uint16_t *cpus;
	size_t *first;
	uint32_t n = 0;

	if (kt->sorted)
		return 0;
	qsort(kt->slices, kt->nslices, sizeof(*kt->slices), slice_cmp);
	for (size_t i = 0; i < kt->nslices; i++)
		n += !i || kt->slices[i].cpu != kt->slices[i - 1].cpu;
	cpus = malloc((n + 1) * sizeof(*cpus));
	first = malloc((n + 1) * sizeof(*first));
	if (!cpus || !first) {
		free(cpus);
		free(first);
		kt->oom = true;
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < kt->nslices; i++)
		if (!i || kt->slices[i].cpu != kt->slices[i - 1].cpu) {
			cpus[n] = kt->slices[i].cpu;
			first[n++] = i;
		}
	first[n] = kt->nslices;
	free(kt->cpus);
	free(kt->cpu_first);
	kt->cpus = cpus;
	kt->cpu_first = first;
	kt->ncpus = n;
	kt->sorted = true;
	return 0;
}

size_t ktrack_first_after(const void *items, size_t n, size_t size, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t end;

		memcpy(&end, (const char *)items + mid * size + sizeof(uint64_t), sizeof(end));
		if (end > t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}
