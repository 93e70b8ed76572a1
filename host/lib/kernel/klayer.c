/* The kernel layer joined with the others (see klayer.h).
 *
 * Each thread has a mode and the time it entered it; every event of the
 * thread first charges the time since to the mode (klayer_parts.ns, kept
 * as running totals), then may change the mode.  A function's share is
 * the difference of the totals between its entry and its exit, so the
 * cost per event does not grow with the depth. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/kernel/kformat.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/util/names.h"
#include "host/lib/util/slots.h"

#define KL_IRQ_NEST 8u
#define KL_WAITS_MAX (8u << 20)    /* off-CPU intervals kept for the wakers' join */
#define KL_WAKES_MAX (8u << 20)    /* wake-ups given by traced threads */
#define KL_TIMER_WAKE_NS 200000ull /* a wake-up this soon after a timer's expiry on its CPU is the timer's */
#define KL_BLOCK_OPEN 256u         /* outstanding block requests per thread */

struct kl_frame {
	uint32_t image;
	uint64_t addr, entry_ns;
	struct klayer_parts at_entry, children;
};

struct kl_fn {
	uint32_t image;
	uint64_t addr, calls, total_ns;
	struct klayer_parts incl, self;
};

struct kl_block_open {
	uint64_t dev, sector, ns;
	uint8_t sc_arch;
	int32_t sc_nr;
};

struct kl_thread {
	struct walk_stream *s;
	enum klayer_mode mode;
	enum klayer_mode nest[KL_IRQ_NEST]; /* modes an irq interrupted */
	uint32_t nnest;
	uint64_t last_ns;
	bool started;
	struct klayer_parts cum;
	bool sys_open; /* inside the syscall entered at sys_enter_ns */
	uint64_t sys_enter_ns;
	uint8_t sys_arch;
	uint32_t sys_nr;
	struct kl_frame *frames;
	uint32_t nframes, frames_cap;
	/* the off-CPU interval under way */
	bool off;
	uint64_t off_ns;
	uint32_t off_cpu; /* where it was switched out */
	uint32_t off_reason;
	bool woken, woken_waking; /* woken_waking: by a sched_waking (the waker's own context) */
	uint32_t waker_tid;
	uint32_t by_comm;  /* switched out runnable (R): the taker's name (kl->comms) */
	uint8_t waker_ctx; /* enum kl_waker_ctx */
	uint64_t wake_ns;
	/* the last expiry of this thread's timer */
	uint64_t timer_ns;
	uint32_t timer_cpu;
	struct kl_block_open blocks[KL_BLOCK_OPEN];
	uint32_t nblocks;
};

enum kl_waker_ctx {
	KLW_THREAD = 0,
	KLW_HARDIRQ,
	KLW_SOFTIRQ,
	KLW_TIMER,
	KLW_PREEMPT, /* state R: not woken, the task that took its CPU */
};

/* One off-CPU interval, joined with its waker at the end. */
struct kl_wait {
	uint32_t reason; /* index in kl->reasons */
	uint32_t wakee, waker_tid;
	uint8_t waker_ctx;
	bool woken;
	uint32_t by_comm; /* KLW_PREEMPT: the name of the task that took the CPU (kl->comms) */
	uint64_t ns, wake_ns;
};

/* A wake-up given by a traced thread: what it was doing. */
struct kl_wake {
	uint64_t ns;
	uint32_t wakee, waker;
	uint32_t image;
	uint64_t func;
	int32_t sc_nr; /* -1: not in a syscall */
	uint8_t sc_arch;
};

struct kl_reason {
	uint8_t arch;
	int32_t sc_nr; /* -1: in its own code */
	char state;
	uint64_t count, total_ns, max_ns;
};

/* A count keyed by (tracepoint id, kind of key, key). */
enum kl_key_kind { KK_THREAD, KK_FUNC, KK_SYSCALL };
struct kl_count {
	uint32_t id;
	uint8_t kind;
	uint32_t image;
	uint64_t key; /* tid, function address, or (arch << 32 | nr) */
	uint64_t count;
};

struct kl_blockrow {
	uint8_t arch;
	int32_t sc_nr;
	uint64_t issued, completed, total_ns, max_ns;
};

struct klayer {
	struct walk *w;
	const struct kformats *kf;
	struct kl_thread **threads; /* by stream index */
	uint32_t nthreads;
	struct kl_fn *fns;
	uint32_t nfns;
	size_t fns_cap;
	struct hashindex fnindex;
	struct kl_count *counts;
	uint32_t ncounts;
	size_t counts_cap;
	struct hashindex countindex;
	struct kl_reason *reasons;
	uint32_t nreasons;
	size_t reasons_cap;
	struct kl_wait *waits;
	size_t nwaits, waits_cap;
	struct kl_wake *wakes;
	size_t nwakes, wakes_cap;
	struct kl_blockrow *blocks;
	uint32_t nblocks;
	size_t blocks_cap;
	uint64_t events, undecodable, faults, switches, wakeups;
	bool wakes_sorted;
	bool has_waking;        /* the trace has sched_waking: wake-ups are counted by it */
	uint64_t unpaired;      /* switch-outs with no switch-in before the next one */
	uint64_t unpaired_cpus; /* the CPUs of those switch-outs, bit n for CPU n (CPU 63 and up: bit 63) */
	struct kother *others;  /* other processes' events (--kernel-system), kept apart */
	struct names comms;     /* the names of the tasks that took a preempted thread's CPU */
	bool oom;
};

static const char *const mode_names[KL_MODES] = { "user",      "syscall",       "off_cpu_R", "off_cpu_S",
	                                          "off_cpu_D", "off_cpu_other", "irq",       "softirq" };

const char *klayer_mode_name(enum klayer_mode m)
{
	return m < KL_MODES ? mode_names[m] : "?";
}

uint64_t klayer_off_ns(const struct klayer_parts *p)
{
	return p->ns[KL_OFF_R] + p->ns[KL_OFF_S] + p->ns[KL_OFF_D] + p->ns[KL_OFF_OTHER];
}

static void parts_sub(struct klayer_parts *d, const struct klayer_parts *a, const struct klayer_parts *b)
{
	for (int m = 0; m < KL_MODES; m++)
		d->ns[m] = a->ns[m] - b->ns[m];
	d->faults = a->faults - b->faults;
	d->switches_vol = a->switches_vol - b->switches_vol;
	d->switches_invol = a->switches_invol - b->switches_invol;
	d->irqs = a->irqs - b->irqs;
	d->softirqs = a->softirqs - b->softirqs;
	d->syscalls = a->syscalls - b->syscalls;
}

static void parts_add(struct klayer_parts *d, const struct klayer_parts *a)
{
	for (int m = 0; m < KL_MODES; m++)
		d->ns[m] += a->ns[m];
	d->faults += a->faults;
	d->switches_vol += a->switches_vol;
	d->switches_invol += a->switches_invol;
	d->irqs += a->irqs;
	d->softirqs += a->softirqs;
	d->syscalls += a->syscalls;
}

/* ---- growable arrays ---------------------------------------------------- */

/* arr (*cap items of size bytes, n used) with room for one more: arr
 * itself, or a larger copy (*cap updated, the old one gone); NULL when n
 * is at max or memory is short (kl->oom set, arr unchanged). */
static void *grow(struct klayer *kl, void *arr, size_t *cap, size_t n, size_t size, size_t max)
{
	size_t c;
	void *g;

	if (n < *cap)
		return arr;
	if (n >= max) {
		kl->oom = true;
		return NULL;
	}
	c = *cap ? 2 * *cap : 64;
	g = realloc(arr, c * size);
	if (!g) {
		kl->oom = true;
		return NULL;
	}
	*cap = c;
	return g;
}

/* ---- keyed tables -------------------------------------------------------- */

struct fn_key {
	uint32_t image;
	uint64_t addr;
};

static bool fn_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct kl_fn *f = &((const struct klayer *)ctx)->fns[item];
	const struct fn_key *k = key;

	return f->addr == k->addr && f->image == k->image;
}

static struct kl_fn *fn_get(struct klayer *kl, uint32_t image, uint64_t addr)
{
	struct fn_key k = { image, addr };
	uint64_t h = hashindex_u64(addr ^ ((uint64_t)image << 48));
	uint32_t slot;

	if (hashindex_reserve(&kl->fnindex)) {
		kl->oom = true;
		return NULL;
	}
	slot = hashindex_slot(&kl->fnindex, h, fn_eq, kl, &k);
	if (kl->fnindex.val[slot])
		return &kl->fns[kl->fnindex.val[slot] - 1];
	{
		struct kl_fn *g = grow(kl, kl->fns, &kl->fns_cap, kl->nfns, sizeof(*g), UINT32_MAX / 2);

		if (!g)
			return NULL;
		kl->fns = g;
	}
	memset(&kl->fns[kl->nfns], 0, sizeof(kl->fns[0]));
	kl->fns[kl->nfns].image = image;
	kl->fns[kl->nfns].addr = addr;
	hashindex_put(&kl->fnindex, slot, h, kl->nfns);
	return &kl->fns[kl->nfns++];
}

static bool count_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct kl_count *c = &((const struct klayer *)ctx)->counts[item], *k = key;

	return c->id == k->id && c->kind == k->kind && c->key == k->key && c->image == k->image;
}

static void count_add(struct klayer *kl, uint32_t id, uint8_t kind, uint32_t image, uint64_t key)
{
	struct kl_count k = { .id = id, .kind = kind, .image = image, .key = key };
	uint64_t h = hashindex_u64(key * 31 + id * 7 + kind + ((uint64_t)image << 40));
	uint32_t slot;

	if (hashindex_reserve(&kl->countindex)) {
		kl->oom = true;
		return;
	}
	slot = hashindex_slot(&kl->countindex, h, count_eq, kl, &k);
	if (kl->countindex.val[slot]) {
		kl->counts[kl->countindex.val[slot] - 1].count++;
		return;
	}
	{
		struct kl_count *g = grow(kl, kl->counts, &kl->counts_cap, kl->ncounts, sizeof(*g), UINT32_MAX / 2);

		if (!g)
			return;
		kl->counts = g;
	}
	k.count = 1;
	kl->counts[kl->ncounts] = k;
	hashindex_put(&kl->countindex, slot, h, kl->ncounts++);
}

static uint32_t reason_get(struct klayer *kl, uint8_t arch, int32_t sc_nr, char state)
{
	for (uint32_t i = 0; i < kl->nreasons; i++)
		if (kl->reasons[i].sc_nr == sc_nr && kl->reasons[i].arch == arch && kl->reasons[i].state == state)
			return i;
	{
		struct kl_reason *g = grow(kl, kl->reasons, &kl->reasons_cap, kl->nreasons, sizeof(*g), 1u << 20);

		if (!g)
			return UINT32_MAX;
		kl->reasons = g;
	}
	memset(&kl->reasons[kl->nreasons], 0, sizeof(kl->reasons[0]));
	kl->reasons[kl->nreasons].arch = arch;
	kl->reasons[kl->nreasons].sc_nr = sc_nr;
	kl->reasons[kl->nreasons].state = state;
	return kl->nreasons++;
}

/* ---- per thread ----------------------------------------------------------- */

static struct kl_thread *thread_of(struct klayer *kl, struct walk_stream *s)
{
	struct kl_thread *t;

	if (s->index >= kl->nthreads) {
		struct kl_thread **g = slots_grow(kl->threads, sizeof(*g), &kl->nthreads, s->index);

		if (!g) {
			kl->oom = true;
			return NULL;
		}
		kl->threads = g;
	}
	t = kl->threads[s->index];
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			kl->oom = true;
			return NULL;
		}
		t->s = s;
		/* the thread's time counts from its stream's first event */
		t->started = true;
		t->last_ns = s->first_ns;
		kl->threads[s->index] = t;
	}
	return t;
}

/* Charges the time up to ns to the thread's mode. */
static void advance(struct kl_thread *t, uint64_t ns)
{
	if (!t->started) {
		t->started = true;
		t->last_ns = ns;
		return;
	}
	if (ns > t->last_ns) {
		t->cum.ns[t->mode] += ns - t->last_ns;
		t->last_ns = ns;
	}
}

/* The mode a thread returns to when it runs again. */
static enum klayer_mode running_mode(const struct kl_thread *t)
{
	return t->sys_open ? KL_SYSCALL : KL_USER;
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct klayer *kl = ctx;
	struct kl_thread *t = thread_of(kl, s);
	struct kl_frame *f;

	(void)depth;
	(void)flags;
	if (!t)
		return;
	advance(t, ns);
	if (t->nframes == t->frames_cap) {
		uint32_t cap = t->frames_cap ? 2 * t->frames_cap : 32;
		struct kl_frame *g = realloc(t->frames, cap * sizeof(*g));

		if (!g) {
			kl->oom = true;
			return;
		}
		t->frames = g;
		t->frames_cap = cap;
	}
	f = &t->frames[t->nframes++];
	f->image = s->image;
	f->addr = addr;
	f->entry_ns = ns;
	f->at_entry = t->cum;
	memset(&f->children, 0, sizeof(f->children));
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct klayer *kl = ctx;
	struct kl_thread *t = thread_of(kl, s);
	struct klayer_parts incl, self;
	struct kl_frame *f;
	struct kl_fn *fn;

	(void)depth;
	(void)flags;
	(void)entry_ns;
	if (!t || !t->nframes)
		return;
	advance(t, ns);
	f = &t->frames[--t->nframes];
	parts_sub(&incl, &t->cum, &f->at_entry);
	parts_sub(&self, &incl, &f->children);
	if (t->nframes)
		parts_add(&t->frames[t->nframes - 1].children, &incl);
	fn = fn_get(kl, f->image, addr);
	if (!fn)
		return;
	fn->calls++;
	fn->total_ns += ns - f->entry_ns;
	parts_add(&fn->incl, &incl);
	parts_add(&fn->self, &self);
}

static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct klayer *kl = ctx;
	struct kl_thread *t = thread_of(kl, s);

	if (!t)
		return;
	if (sc->has_enter && !(t->sys_open && t->sys_enter_ns == sc->enter_ns)) {
		advance(t, sc->enter_ns);
		t->cum.syscalls++;
		if (t->mode == KL_USER)
			t->mode = KL_SYSCALL;
	}
	if (!sc->has_enter && !t->sys_open)
		t->cum.syscalls++;
	if (sc->has_exit) {
		advance(t, sc->exit_ns);
		if (t->mode == KL_SYSCALL)
			t->mode = KL_USER;
	}
	t->sys_open = false;
}

/* The syscall a kernel event happened in, if the thread is in one and the
 * thread's mode does not know yet. */
static void enter_syscall_of(struct kl_thread *t, const struct walk_kernel *k)
{
	if (!k->in_syscall || (t->sys_open && t->sys_enter_ns == k->sc_enter_ns))
		return;
	advance(t, k->sc_enter_ns);
	t->sys_open = true;
	t->sys_enter_ns = k->sc_enter_ns;
	t->sys_arch = k->sc_arch;
	t->sys_nr = k->sc_nr;
	t->cum.syscalls++;
	if (t->mode == KL_USER)
		t->mode = KL_SYSCALL;
}

static enum klayer_mode off_mode(char state)
{
	switch (state) {
	case 'R':
		return KL_OFF_R;
	case 'S':
		return KL_OFF_S;
	case 'D':
		return KL_OFF_D;
	default:
		return KL_OFF_OTHER;
	}
}

static void switch_in(struct klayer *kl, struct kl_thread *t, uint64_t ns);

/* The thread ran again, at ns at the latest, though its switch-in is not in
 * the trace: the kernel did not deliver that record (and likely not the
 * wake-up before it).  Its wait ends there, with no waker if none was
 * seen. */
static void ran_unseen(struct klayer *kl, struct kl_thread *t, uint64_t ns)
{
	if (!t->off)
		return;
	kl->unpaired++;
	kl->unpaired_cpus |= 1ull << (t->off_cpu < 63 ? t->off_cpu : 63);
	switch_in(kl, t, ns);
}

static void switch_out(struct klayer *kl, struct kl_thread *t, const struct walk_kernel *k, const struct kevent *ev)
{
	char state = kevent_switch_state(ev);

	ran_unseen(kl, t, k->ns);
	advance(t, k->ns);
	t->nnest = 0;
	t->mode = off_mode(state);
	if (state == 'R')
		t->cum.switches_invol++;
	else
		t->cum.switches_vol++;
	kl->switches++;
	t->off = true;
	t->off_ns = k->ns;
	t->off_cpu = k->cpu;
	t->woken = t->woken_waking = false;
	if (state == 'R') {
		/* not woken: it waits for the task the switch hands its CPU to */
		t->woken = true;
		t->waker_tid = (uint32_t)ev->u.sw.next_pid;
		t->waker_ctx = KLW_PREEMPT;
		t->wake_ns = k->ns;
		t->by_comm = names_intern(&kl->comms, ev->u.sw.next_comm);
	}
	t->off_reason = reason_get(kl, t->sys_open ? t->sys_arch : 0, t->sys_open ? (int32_t)t->sys_nr : -1,
	                           state == 'R' || state == 'S' || state == 'D' ? state : '?');
}

static void switch_in(struct klayer *kl, struct kl_thread *t, uint64_t ns)
{
	struct kl_reason *r;

	advance(t, ns);
	t->mode = running_mode(t);
	if (!t->off)
		return; /* its switch-out is before the trace */
	t->off = false;
	if (t->off_reason == UINT32_MAX)
		return;
	r = &kl->reasons[t->off_reason];
	r->count++;
	r->total_ns += ns - t->off_ns;
	if (ns - t->off_ns > r->max_ns)
		r->max_ns = ns - t->off_ns;
	{
		struct kl_wait *g = grow(kl, kl->waits, &kl->waits_cap, kl->nwaits, sizeof(*g), KL_WAITS_MAX);

		if (!g)
			return;
		kl->waits = g;
	}
	kl->waits[kl->nwaits++] = (struct kl_wait){ .reason = t->off_reason,
		                                    .wakee = t->s->tid,
		                                    .waker_tid = t->waker_tid,
		                                    .waker_ctx = t->waker_ctx,
		                                    .woken = t->woken,
		                                    .by_comm = t->by_comm,
		                                    .ns = ns - t->off_ns,
		                                    .wake_ns = t->wake_ns };
}

static void woken(struct kl_thread *t, const struct walk_kernel *k, const struct kevent *ev)
{
	/* sched_waking tells the waker; the sched_wakeup that follows it may
	 * run on another CPU, from an IPI */
	if (t->woken_waking && ev->kind == KEV_WAKEUP)
		return;
	t->woken_waking = ev->kind == KEV_WAKING;
	t->woken = true;
	t->waker_tid = (uint32_t)ev->common_pid;
	t->wake_ns = k->ns;
	if (ev->in_hardirq && t->timer_ns && t->timer_cpu == k->cpu && k->ns - t->timer_ns <= KL_TIMER_WAKE_NS)
		t->waker_ctx = KLW_TIMER;
	else if (ev->in_hardirq)
		t->waker_ctx = KLW_HARDIRQ;
	else if (ev->in_softirq)
		t->waker_ctx = KLW_SOFTIRQ;
	else
		t->waker_ctx = KLW_THREAD;
}

static void gave_wakeup(struct klayer *kl, struct walk_stream *s, const struct walk_kernel *k, uint32_t wakee)
{
	{
		struct kl_wake *g = grow(kl, kl->wakes, &kl->wakes_cap, kl->nwakes, sizeof(*g), KL_WAKES_MAX);

		if (!g)
			return;
		kl->wakes = g;
	}
	kl->wakes_sorted = false; /* a live session collects again later */
	kl->wakes[kl->nwakes++] = (struct kl_wake){ .ns = k->ns,
		                                    .wakee = wakee,
		                                    .waker = s->tid,
		                                    .image = s->image,
		                                    .func = k->func,
		                                    .sc_nr = k->in_syscall ? (int32_t)k->sc_nr : -1,
		                                    .sc_arch = k->sc_arch };
}

static void block_issued(struct klayer *kl, struct kl_thread *t, const struct walk_kernel *k, const struct kevent *ev)
{
	struct kl_block_open *b;

	(void)kl;
	if (t->nblocks == KL_BLOCK_OPEN)
		memmove(t->blocks, t->blocks + 1, (KL_BLOCK_OPEN - 1) * sizeof(t->blocks[0])), t->nblocks--;
	b = &t->blocks[t->nblocks++];
	b->dev = ev->u.block.dev;
	b->sector = ev->u.block.sector;
	b->ns = k->ns;
	b->sc_arch = k->sc_arch;
	b->sc_nr = k->in_syscall ? (int32_t)k->sc_nr : -1;
}

static struct kl_blockrow *blockrow(struct klayer *kl, uint8_t arch, int32_t sc_nr)
{
	for (uint32_t i = 0; i < kl->nblocks; i++)
		if (kl->blocks[i].sc_nr == sc_nr && kl->blocks[i].arch == arch)
			return &kl->blocks[i];
	{
		struct kl_blockrow *g = grow(kl, kl->blocks, &kl->blocks_cap, kl->nblocks, sizeof(*g), 1u << 16);

		if (!g)
			return NULL;
		kl->blocks = g;
	}
	memset(&kl->blocks[kl->nblocks], 0, sizeof(kl->blocks[0]));
	kl->blocks[kl->nblocks].arch = arch;
	kl->blocks[kl->nblocks].sc_nr = sc_nr;
	return &kl->blocks[kl->nblocks++];
}

/* Requests the thread issued: counted per syscall when first seen (insert
 * or issue, whichever comes first), their latency when they complete. */
static void on_block(struct klayer *kl, struct kl_thread *t, const struct walk_kernel *k, const struct kevent *ev,
                     bool own)
{
	for (uint32_t i = t->nblocks; i > 0; i--) {
		struct kl_block_open *b = &t->blocks[i - 1];
		struct kl_blockrow *row;

		if (b->dev != ev->u.block.dev || b->sector != ev->u.block.sector)
			continue;
		if (ev->kind != KEV_BLOCK_COMPLETE)
			return; /* inserted, now issued: the same request */
		row = blockrow(kl, b->sc_arch, b->sc_nr);
		if (row) {
			row->completed++;
			row->total_ns += k->ns - b->ns;
			if (k->ns - b->ns > row->max_ns)
				row->max_ns = k->ns - b->ns;
		}
		memmove(b, b + 1, (t->nblocks - i) * sizeof(*b));
		t->nblocks--;
		return;
	}
	if (ev->kind != KEV_BLOCK_COMPLETE && own) {
		struct kl_blockrow *row = blockrow(kl, k->sc_arch, k->in_syscall ? (int32_t)k->sc_nr : -1);

		if (row)
			row->issued++;
		block_issued(kl, t, k, ev);
	}
}

static void on_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k)
{
	struct klayer *kl = ctx;
	struct kl_thread *t;
	struct kevent ev;
	bool own;

	/* again when a live session brings more formats (cheap otherwise) */
	kl->kf = klayer_formats(kl->w, NULL, 0);
	if (s->other) {
		bool ok = kl->kf && !kevent_decode(kl->kf, k->id, k->raw, k->raw_len, &ev);

		kother_kernel(kl->others, s, k, ok ? &ev : NULL);
		return;
	}
	t = thread_of(kl, s);
	if (!t)
		return;
	kl->events++;
	if (!kl->kf || kevent_decode(kl->kf, k->id, k->raw, k->raw_len, &ev)) {
		kl->undecodable++;
		return;
	}
	count_add(kl, k->id, KK_THREAD, 0, s->tid);
	if (k->func)
		count_add(kl, k->id, KK_FUNC, s->image, k->func);
	if (k->in_syscall)
		count_add(kl, k->id, KK_SYSCALL, 0, (uint64_t)k->sc_arch << 32 | k->sc_nr);
	own = (uint32_t)ev.common_pid == s->tid;
	kl->has_waking = kl->has_waking || ev.kind == KEV_WAKING;
	/* a record made by the thread itself: it runs (its switch-out is
	 * handled below).  Only the kernel's records tell, which share its
	 * clock: the program's own events may be converted from another
	 * counter and land a little off. */
	if (own && ev.kind != KEV_SWITCH)
		ran_unseen(kl, t, k->ns);
	/* the thread was running unless this is about it from elsewhere */
	if (own || ev.kind == KEV_SWITCH)
		enter_syscall_of(t, k);
	switch (ev.kind) {
	case KEV_SWITCH:
		if ((uint32_t)ev.u.sw.prev_pid == s->tid)
			switch_out(kl, t, k, &ev);
		else if ((uint32_t)ev.u.sw.next_pid == s->tid)
			switch_in(kl, t, k->ns);
		break;
	case KEV_WAKEUP:
	case KEV_WAKING:
		if ((uint32_t)ev.u.wake.pid == s->tid && !own)
			woken(t, k, &ev);
		else if (own && (uint32_t)ev.u.wake.pid != s->tid) {
			if (ev.kind == KEV_WAKING || !kl->has_waking)
				kl->wakeups++;
			gave_wakeup(kl, s, k, (uint32_t)ev.u.wake.pid);
		}
		break;
	case KEV_FAULT_USER:
		if (own) {
			advance(t, k->ns);
			t->cum.faults++;
			kl->faults++;
		}
		break;
	case KEV_IRQ_ENTRY:
	case KEV_SOFTIRQ_ENTRY:
		if (own) {
			advance(t, k->ns);
			if (t->nnest < KL_IRQ_NEST)
				t->nest[t->nnest++] = t->mode;
			t->mode = ev.kind == KEV_IRQ_ENTRY ? KL_IRQ : KL_SOFTIRQ;
			if (ev.kind == KEV_IRQ_ENTRY)
				t->cum.irqs++;
			else
				t->cum.softirqs++;
		}
		break;
	case KEV_IRQ_EXIT:
	case KEV_SOFTIRQ_EXIT:
		if (own && (t->mode == KL_IRQ || t->mode == KL_SOFTIRQ)) {
			advance(t, k->ns);
			t->mode = t->nnest ? t->nest[--t->nnest] : running_mode(t);
		}
		break;
	case KEV_HRTIMER_EXPIRE_ENTRY:
	case KEV_TIMER_EXPIRE_ENTRY:
		if (!own) {
			t->timer_ns = k->ns;
			t->timer_cpu = k->cpu;
		}
		break;
	case KEV_BLOCK_INSERT:
	case KEV_BLOCK_ISSUE:
	case KEV_BLOCK_COMPLETE:
		on_block(kl, t, k, &ev, own);
		break;
	default:
		break;
	}
}

static void on_end(void *ctx, struct walk_stream *s)
{
	struct klayer *kl = ctx;
	struct kl_thread *t = s->other ? NULL : thread_of(kl, s);

	if (t)
		advance(t, s->last_ns);
}

void klayer_walk_ops(struct klayer *kl, struct walk_ops *ops)
{
	ops->ctx = kl;
	ops->others = true;
	ops->entry = on_entry;
	ops->exit = on_exit_ev;
	ops->syscall = on_syscall;
	ops->kernel = on_kernel;
	ops->end = on_end;
}

struct klayer *klayer_new(struct walk *w)
{
	struct klayer *kl = calloc(1, sizeof(*kl));

	if (!kl)
		return NULL;
	kl->w = w;
	names_init(&kl->comms);
	kl->others = kother_new();
	if (!kl->others) {
		free(kl);
		return NULL;
	}
	return kl;
}

void klayer_free(struct klayer *kl)
{
	if (!kl)
		return;
	kother_free(kl->others);
	names_release(&kl->comms);
	for (uint32_t i = 0; i < kl->nthreads; i++)
		if (kl->threads[i]) {
			free(kl->threads[i]->frames);
			free(kl->threads[i]);
		}
	free(kl->threads);
	free(kl->fns);
	hashindex_release(&kl->fnindex);
	free(kl->counts);
	hashindex_release(&kl->countindex);
	free(kl->reasons);
	free(kl->waits);
	free(kl->wakes);
	free(kl->blocks);
	free(kl);
}

/* ---- the trace's formats ---------------------------------------------------- */

static void formats_free(void *cache)
{
	kformats_free(cache);
}

const struct kformats *klayer_formats(struct walk *w, char *err, size_t errlen)
{
	struct kformats *kf = w->kformat_cache;
	char why[256];
	size_t at;

	if (!err) {
		err = why;
		errlen = sizeof(why);
	}
	err[0] = '\0';
	if (!w->kformat_len)
		return kf && w->kformat_cache_len ? kf : NULL;
	if (kf && w->kformat_cache_len == w->kformat_len)
		return kf;
	if (!kf || w->kformat_cache_len > w->kformat_len) {
		/* a new pass: start again */
		kformats_free(kf);
		w->kformat_cache = NULL;
		if (kformats_new(&kf)) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		w->kformat_cache = kf;
		w->kformat_cache_free = formats_free;
		w->kformat_cache_len = 0;
	}
	for (at = w->kformat_cache_len; at + 4 <= w->kformat_len;) {
		uint32_t len;

		memcpy(&len, w->kformat + at, 4);
		if (len > w->kformat_len - at - 4)
			break;
		/* a malformed payload adds nothing: its events stay undecodable */
		kformats_add(kf, w->kformat + at + 4, len, err, errlen);
		at += 4 + len;
	}
	w->kformat_cache_len = at;
	return kformats_count(kf) ? kf : NULL;
}

/* ---- results ------------------------------------------------------------------ */

static char *fn_name(struct klayer *kl, uint32_t image, uint64_t addr)
{
	char buf[1024];

	return strdup(walk_name(kl->w, image, addr, buf, sizeof(buf)));
}

static void event_name(const struct klayer *kl, uint32_t id, char *buf, size_t size)
{
	const struct kformat_event *e = kl->kf ? kformats_find(kl->kf, id) : NULL;

	if (e)
		snprintf(buf, size, "%s:%s", e->system, e->name);
	else
		snprintf(buf, size, "tracepoint %u", id);
}

static void syscall_name(uint8_t arch, int32_t nr, char *buf, size_t size)
{
	if (nr < 0)
		buf[0] = '\0';
	else
		sys_name((enum sys_arch)arch, (uint32_t)nr, buf, size);
}

static int func_cmp(const void *a, const void *b)
{
	const struct klayer_func *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int func_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct klayer_func *)a)->name, ((const struct klayer_func *)b)->name);
}

static int evrow_cmp(const void *a, const void *b)
{
	const struct klayer_evrow *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int keyrow_cmp(const void *a, const void *b)
{
	const struct klayer_keyrow *x = a, *y = b;
	int c;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	c = strcmp(x->event, y->event);
	return c ? c : strcmp(x->what, y->what);
}

static int wait_cmp(const void *a, const void *b)
{
	const struct klayer_wait *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->syscall, y->syscall);
}

static int wake_cmp(const void *a, const void *b)
{
	const struct kl_wake *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return (x->wakee > y->wakee) - (x->wakee < y->wakee);
}

static int collect_funcs(struct klayer *kl, struct klayer_result *out)
{
	size_t n = 0;

	out->funcs = calloc(kl->nfns ? kl->nfns : 1, sizeof(*out->funcs));
	if (!out->funcs)
		return -ENOMEM;
	for (uint32_t i = 0; i < kl->nfns; i++) {
		struct klayer_func *f = &out->funcs[n];

		f->name = fn_name(kl, kl->fns[i].image, kl->fns[i].addr);
		if (!f->name)
			return -ENOMEM;
		f->calls = kl->fns[i].calls;
		f->total_ns = kl->fns[i].total_ns;
		f->incl = kl->fns[i].incl;
		f->self = kl->fns[i].self;
		n++;
	}
	/* the same function in several images or threads: one row */
	qsort(out->funcs, n, sizeof(*out->funcs), func_name_cmp);
	out->nfuncs = 0;
	for (size_t i = 0; i < n; i++) {
		struct klayer_func *last = out->nfuncs ? &out->funcs[out->nfuncs - 1] : NULL;

		if (last && !strcmp(last->name, out->funcs[i].name)) {
			last->calls += out->funcs[i].calls;
			last->total_ns += out->funcs[i].total_ns;
			parts_add(&last->incl, &out->funcs[i].incl);
			parts_add(&last->self, &out->funcs[i].self);
			free(out->funcs[i].name);
			continue;
		}
		out->funcs[out->nfuncs++] = out->funcs[i];
	}
	qsort(out->funcs, out->nfuncs, sizeof(*out->funcs), func_cmp);
	return 0;
}

static int collect_threads(struct klayer *kl, struct klayer_result *out)
{
	struct walk *w = kl->w;

	out->threads = calloc(w->nstreams ? w->nstreams : 1, sizeof(*out->threads));
	if (!out->threads)
		return -ENOMEM;
	for (uint32_t i = 0; i < w->nstreams; i++) {
		struct walk_stream *s = w->streams[i];
		struct kl_thread *t = s->index < kl->nthreads ? kl->threads[s->index] : NULL;
		struct klayer_thread *o;

		if (!s->selected)
			continue;
		o = &out->threads[out->nthreads++];
		o->image = s->image;
		o->pid = s->pid;
		o->tid = s->tid;
		memcpy(o->comm, s->comm, sizeof(o->comm));
		o->first_ns = s->first_ns;
		o->last_ns = s->last_ns;
		if (t)
			o->parts = t->cum;
		else
			o->parts.ns[KL_USER] = s->last_ns - s->first_ns;
	}
	return 0;
}

static int collect_counts(struct klayer *kl, struct klayer_result *out)
{
	size_t cap = kl->ncounts ? kl->ncounts : 1;

	out->events = calloc(cap, sizeof(*out->events));
	out->by_thread = calloc(cap, sizeof(*out->by_thread));
	out->by_func = calloc(cap, sizeof(*out->by_func));
	out->by_syscall = calloc(cap, sizeof(*out->by_syscall));
	if (!out->events || !out->by_thread || !out->by_func || !out->by_syscall)
		return -ENOMEM;
	for (uint32_t i = 0; i < kl->ncounts; i++) {
		const struct kl_count *c = &kl->counts[i];
		struct klayer_keyrow *row;
		char ev[136], what[1100];
		size_t j;

		event_name(kl, c->id, ev, sizeof(ev));
		if (c->kind == KK_THREAD) {
			for (j = 0; j < out->nevents && strcmp(out->events[j].name, ev); j++)
				;
			if (j == out->nevents)
				snprintf(out->events[out->nevents++].name, sizeof(out->events[0].name), "%s", ev);
			out->events[j].count += c->count;
			snprintf(what, sizeof(what), "%llu", (unsigned long long)c->key);
			row = &out->by_thread[out->nby_thread++];
		} else if (c->kind == KK_FUNC) {
			char name[1024];

			snprintf(what, sizeof(what), "%s", walk_name(kl->w, c->image, c->key, name, sizeof(name)));
			row = NULL;
			for (j = 0; j < out->nby_func; j++)
				if (!strcmp(out->by_func[j].event, ev) && !strcmp(out->by_func[j].what, what)) {
					row = &out->by_func[j];
					break;
				}
			if (row) {
				row->count += c->count;
				continue;
			}
			row = &out->by_func[out->nby_func++];
		} else {
			syscall_name((uint8_t)(c->key >> 32), (int32_t)(uint32_t)c->key, what, sizeof(what));
			row = &out->by_syscall[out->nby_syscall++];
		}
		row->event = strdup(ev);
		row->what = strdup(what);
		row->count = c->count;
		if (!row->event || !row->what)
			return -ENOMEM;
	}
	qsort(out->events, out->nevents, sizeof(*out->events), evrow_cmp);
	qsort(out->by_thread, out->nby_thread, sizeof(*out->by_thread), keyrow_cmp);
	qsort(out->by_func, out->nby_func, sizeof(*out->by_func), keyrow_cmp);
	qsort(out->by_syscall, out->nby_syscall, sizeof(*out->by_syscall), keyrow_cmp);
	return 0;
}

/* The stream of thread tid: a traced one's, else another process's
 * (--kernel-system); NULL when there is none. */
static const struct walk_stream *thread_stream(const struct klayer *kl, uint32_t tid)
{
	const struct walk_stream *other = NULL;

	for (uint32_t i = 0; i < kl->w->nstreams; i++) {
		const struct walk_stream *s = kl->w->streams[i];

		if (s->tid == tid && !s->other)
			return s;
		if (s->tid == tid && !other)
			other = s;
	}
	return other;
}

/* Who woke one wait, in words. */
static void waker_text(struct klayer *kl, const struct kl_wait *wt, char *buf, size_t size)
{
	struct kl_wake key = { .ns = wt->wake_ns, .wakee = wt->wakee }, *g;
	const struct walk_stream *ws;
	const char *comm;

	switch (wt->waker_ctx) {
	case KLW_PREEMPT:
		ws = thread_stream(kl, wt->waker_tid);
		if (wt->waker_tid == 0)
			snprintf(buf, size, "idle task");
		else if (ws && !ws->other)
			snprintf(buf, size, "thread %u (%s)", ws->tid, ws->comm);
		else if (ws && ws->tid == ws->pid)
			snprintf(buf, size, "process %u (%s)", ws->pid, ws->comm);
		else if (ws)
			snprintf(buf, size, "process %u (%s) thread %u", ws->pid, ws->comm, ws->tid);
		else
			snprintf(buf, size, "task %u (%s, not traced)", wt->waker_tid,
			         wt->by_comm != NAMES_NONE ? names_get(&kl->comms, wt->by_comm) : "?");
		return;
	case KLW_TIMER:
		snprintf(buf, size, "timer (hardirq)");
		return;
	case KLW_HARDIRQ:
		snprintf(buf, size, "hardirq");
		return;
	case KLW_SOFTIRQ:
		snprintf(buf, size, "softirq");
		return;
	default:
		break;
	}
	g = bsearch(&key, kl->wakes, kl->nwakes, sizeof(*kl->wakes), wake_cmp);
	ws = thread_stream(kl, wt->waker_tid);
	comm = ws ? ws->comm : NULL;
	if (!g && ws && ws->other) {
		/* another process's thread: the process is what the reader knows */
		if (ws->tid == ws->pid)
			snprintf(buf, size, "process %u (%s)", ws->pid, comm);
		else
			snprintf(buf, size, "process %u (%s) thread %u", ws->pid, comm, ws->tid);
	} else if (g) {
		char fn[1024] = "", sc[40];

		if (g->func)
			walk_name(kl->w, g->image, g->func, fn, sizeof(fn));
		syscall_name(g->sc_arch, g->sc_nr, sc, sizeof(sc));
		snprintf(buf, size, "thread %u (%s) in %s%s%s", g->waker, comm ? comm : "?", fn[0] ? fn : "?",
		         sc[0] ? ", syscall " : "", sc);
	} else if (wt->waker_tid == 0) {
		snprintf(buf, size, "idle task (irq)");
	} else {
		snprintf(buf, size, "task %u%s%s%s", wt->waker_tid, comm ? " (" : " (not traced)", comm ? comm : "",
		         comm ? ")" : "");
	}
}

static void waker_add(struct klayer_wait *w, const char *who, uint64_t *spill)
{
	for (uint32_t i = 0; i < w->nwakers; i++)
		if (!strcmp(w->wakers[i].who, who)) {
			w->wakers[i].count++;
			return;
		}
	if (w->nwakers == KLAYER_WAKERS_MAX) {
		(*spill)++;
		return;
	}
	w->wakers[w->nwakers].who = strdup(who);
	if (w->wakers[w->nwakers].who)
		w->wakers[w->nwakers++].count = 1;
}

static int collect_waits(struct klayer *kl, struct klayer_result *out)
{
	uint64_t spill = 0;

	out->waits = calloc(kl->nreasons ? kl->nreasons : 1, sizeof(*out->waits));
	if (!out->waits)
		return -ENOMEM;
	for (uint32_t i = 0; i < kl->nreasons; i++) {
		struct klayer_wait *w = &out->waits[i];

		syscall_name(kl->reasons[i].arch, kl->reasons[i].sc_nr, w->syscall, sizeof(w->syscall));
		w->state = kl->reasons[i].state;
		w->count = kl->reasons[i].count;
		w->total_ns = kl->reasons[i].total_ns;
		w->max_ns = kl->reasons[i].max_ns;
	}
	out->nwaits = kl->nreasons;
	if (!kl->wakes_sorted && kl->nwakes)
		qsort(kl->wakes, kl->nwakes, sizeof(*kl->wakes), wake_cmp);
	kl->wakes_sorted = true;
	for (size_t i = 0; i < kl->nwaits; i++) {
		struct klayer_wait *w = &out->waits[kl->waits[i].reason];
		char who[1200];

		if (!kl->waits[i].woken) {
			w->unknown_wakers++;
			continue;
		}
		waker_text(kl, &kl->waits[i], who, sizeof(who));
		waker_add(w, who, &spill);
	}
	qsort(out->waits, out->nwaits, sizeof(*out->waits), wait_cmp);
	/* a thread switched out for good (its exit) never waited */
	while (out->nwaits && !out->waits[out->nwaits - 1].count)
		out->nwaits--;
	return 0;
}

static int collect_blocks(struct klayer *kl, struct klayer_result *out)
{
	out->blocks = calloc(kl->nblocks ? kl->nblocks : 1, sizeof(*out->blocks));
	if (!out->blocks)
		return -ENOMEM;
	for (uint32_t i = 0; i < kl->nblocks; i++) {
		struct klayer_block *b = &out->blocks[out->nblocks++];

		syscall_name(kl->blocks[i].arch, kl->blocks[i].sc_nr, b->syscall, sizeof(b->syscall));
		b->issued = kl->blocks[i].issued;
		b->completed = kl->blocks[i].completed;
		b->total_ns = kl->blocks[i].total_ns;
		b->max_ns = kl->blocks[i].max_ns;
	}
	return 0;
}

bool klayer_thread_parts(struct klayer *kl, const struct walk_stream *s, struct klayer_parts *out)
{
	const struct kl_thread *t = s->index < kl->nthreads ? kl->threads[s->index] : NULL;

	if (!t || !t->started)
		return false;
	*out = t->cum;
	return true;
}

void klayer_waker_text(struct klayer *kl, uint32_t wakee, uint64_t wake_ns, uint32_t waker_tid, bool hardirq,
                       bool softirq, bool timer, char *buf, size_t size)
{
	struct kl_wait wt = { .wakee = wakee, .waker_tid = waker_tid, .wake_ns = wake_ns, .woken = true };

	wt.waker_ctx = timer ? KLW_TIMER : hardirq ? KLW_HARDIRQ : softirq ? KLW_SOFTIRQ : KLW_THREAD;
	if (!kl->wakes_sorted && kl->nwakes)
		qsort(kl->wakes, kl->nwakes, sizeof(*kl->wakes), wake_cmp);
	kl->wakes_sorted = true;
	waker_text(kl, &wt, buf, size);
}

int klayer_collect(struct klayer *kl, struct klayer_result *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	r = collect_funcs(kl, out);
	if (!r)
		r = collect_threads(kl, out);
	if (!r)
		r = collect_counts(kl, out);
	if (!r)
		r = collect_waits(kl, out);
	if (!r)
		r = collect_blocks(kl, out);
	if (!r)
		r = kother_collect(kl->others, kl->kf, &out->others, &out->nothers);
	out->kernel_events = kl->events;
	out->undecodable = kl->undecodable;
	out->faults = kl->faults;
	out->switches = kl->switches;
	out->wakeups = kl->wakeups;
	out->unpaired_switches = kl->unpaired;
	out->unpaired_cpus = kl->unpaired_cpus;
	out->oom = kl->oom || kother_oom(kl->others);
	if (r)
		klayer_result_release(out);
	return r;
}

static void keyrows_free(struct klayer_keyrow *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++) {
		free(rows[i].event);
		free(rows[i].what);
	}
	free(rows);
}

void klayer_result_release(struct klayer_result *r)
{
	for (size_t i = 0; r->funcs && i < r->nfuncs; i++)
		free(r->funcs[i].name);
	free(r->funcs);
	free(r->threads);
	free(r->events);
	keyrows_free(r->by_thread, r->nby_thread);
	keyrows_free(r->by_func, r->nby_func);
	keyrows_free(r->by_syscall, r->nby_syscall);
	for (size_t i = 0; r->waits && i < r->nwaits; i++)
		for (uint32_t j = 0; j < r->waits[i].nwakers; j++)
			free(r->waits[i].wakers[j].who);
	free(r->waits);
	free(r->blocks);
	free(r->others);
	memset(r, 0, sizeof(*r));
}
