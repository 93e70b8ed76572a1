/* The flow of one call across the layers (see kflow.h).  The first pass
 * runs the kernel layer (klayer.h) and notes every call of the function
 * with the difference of its thread's totals between entry and exit; the
 * calls are then numbered by entry time.  The second pass keeps the steps
 * of the chosen call. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/syncevent.h"
#include "common/systab.h"
#include "host/lib/trace/syncwake.h"
#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/kflow.h"
#include "host/lib/trace/symbolizer.h"

#define KFLOW_TIMER_WAKE_NS 200000ull

struct kf_name {
	uint32_t image;
	uint64_t addr;
	bool match;
};

struct kf_open {
	uint32_t stream;
	size_t call;    /* index in calls */
	uint32_t depth; /* at its entry */
	struct klayer_parts at_entry;
};

struct kf_thread {
	uint32_t tid;
	char comm[17];
};

struct kflow {
	struct walk *w;
	char *func;
	uint64_t nth;
	uint32_t tid;
	struct klayer *kl;
	const struct kformats *kf;
	struct kf_name *names;
	uint32_t nnames, names_cap;
	struct hashindex nameindex;
	struct kflow_call *calls;
	size_t ncalls, calls_cap;
	struct kf_open *open;
	size_t nopen, open_cap;
	/* pass 2: the chosen call */
	bool capture_done, capturing;
	uint32_t c_stream, c_tid, c_depth;
	uint64_t c_start;
	struct kflow_node *nodes;
	size_t nnodes, nodes_cap;
	uint64_t dropped;
	size_t *stack; /* open CALL nodes */
	size_t nstack, stack_cap;
	size_t sys_first; /* first node of the syscall under way (in_syscall events), SIZE_MAX: none */
	size_t off_node;  /* the OFFCPU node under way, SIZE_MAX: none */
	char off_state;
	bool woken, woken_waking, wake_hard, wake_soft, wake_timer;
	uint32_t waker;
	uint64_t wake_ns, timer_ns;
	uint32_t timer_cpu;
	struct syncwake sw; /* every thread's sync events, for the waits' releasers */
	/* pass 1 looked a name up before its code's map had come (a thread's
	 * chunk read before the chunk with the maps): the symbolizer's map
	 * count then; pass 1 runs again when maps came later */
	bool unmapped;
	uint64_t unmapped_maps;
	/* every thread of pass 1 by its stream index: the releasers of waits
	 * (pass 2 has not met a stream that comes later in the trace yet) */
	struct kf_thread *threads;
	uint32_t nthreads;
	bool oom;
};

static bool name_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct kf_name *n = &((const struct kflow *)ctx)->names[item], *k = key;

	return n->addr == k->addr && n->image == k->image;
}

static bool is_func(struct kflow *kf, uint32_t image, uint64_t addr)
{
	struct kf_name k = { .image = image, .addr = addr };
	uint64_t h = hashindex_u64(addr ^ ((uint64_t)image << 48));
	char buf[1024];
	uint32_t slot;

	if (hashindex_reserve(&kf->nameindex)) {
		kf->oom = true;
		return false;
	}
	slot = hashindex_slot(&kf->nameindex, h, name_eq, kf, &k);
	if (kf->nameindex.val[slot])
		return kf->names[kf->nameindex.val[slot] - 1].match;
	if (kf->nnames == kf->names_cap) {
		uint32_t cap = kf->names_cap ? 2 * kf->names_cap : 256;
		struct kf_name *g = realloc(kf->names, cap * sizeof(*g));

		if (!g) {
			kf->oom = true;
			return false;
		}
		kf->names = g;
		kf->names_cap = cap;
	}
	k.match = !strcmp(walk_name(kf->w, image, addr, buf, sizeof(buf)), kf->func);
	if (!k.match && !kf->unmapped) {
		const char *module;
		uint64_t elf_addr;

		if (symbolizer_elf_addr(kf->w->sym, image, addr, &module, &elf_addr) == -ENOENT) {
			kf->unmapped = true;
			kf->unmapped_maps = symbolizer_map_count(kf->w->sym);
		}
	}
	kf->names[kf->nnames] = k;
	hashindex_put(&kf->nameindex, slot, h, kf->nnames++);
	return k.match;
}

/* ---- pass 1: the calls ------------------------------------------------------ */

static void count_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct kflow *kf = ctx;
	struct kflow_call *c;
	struct kf_open *o;

	(void)flags;
	if ((kf->tid && s->tid != kf->tid) || !is_func(kf, s->image, addr))
		return;
	if (kf->ncalls == KFLOW_CALLS_MAX) {
		kf->oom = true;
		return;
	}
	if (kf->ncalls == kf->calls_cap || kf->nopen == kf->open_cap) {
		size_t cc = kf->calls_cap ? 2 * kf->calls_cap : 64, oc = kf->open_cap ? 2 * kf->open_cap : 64;
		struct kflow_call *g = kf->ncalls == kf->calls_cap ? realloc(kf->calls, cc * sizeof(*g)) : kf->calls;
		struct kf_open *go;

		if (!g) {
			kf->oom = true;
			return;
		}
		kf->calls = g;
		if (kf->ncalls == kf->calls_cap)
			kf->calls_cap = cc;
		go = kf->nopen == kf->open_cap ? realloc(kf->open, oc * sizeof(*go)) : kf->open;
		if (!go) {
			kf->oom = true;
			return;
		}
		kf->open = go;
		if (kf->nopen == kf->open_cap)
			kf->open_cap = oc;
	}
	c = &kf->calls[kf->ncalls];
	memset(c, 0, sizeof(*c));
	c->pid = s->pid;
	c->tid = s->tid;
	c->start_ns = ns;
	c->unfinished = true;
	o = &kf->open[kf->nopen++];
	o->stream = s->index;
	o->call = kf->ncalls++;
	o->depth = depth;
	c->has_parts = klayer_thread_parts(kf->kl, s, &o->at_entry);
}

static void count_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct kflow *kf = ctx;

	(void)addr;
	(void)entry_ns;
	for (size_t i = kf->nopen; i > 0; i--) {
		struct kf_open *o = &kf->open[i - 1];
		struct kflow_call *c;
		struct klayer_parts now;

		if (o->stream != s->index)
			continue;
		if (o->depth != depth)
			return; /* the innermost open call of this thread is not this one */
		c = &kf->calls[o->call];
		c->end_ns = ns;
		c->unfinished = (flags & FILTER_UNFINISHED) != 0;
		if (c->has_parts && klayer_thread_parts(kf->kl, s, &now)) {
			for (int m = 0; m < KL_MODES; m++)
				c->parts.ns[m] = now.ns[m] - o->at_entry.ns[m];
			c->parts.faults = now.faults - o->at_entry.faults;
			c->parts.switches_vol = now.switches_vol - o->at_entry.switches_vol;
			c->parts.switches_invol = now.switches_invol - o->at_entry.switches_invol;
			c->parts.irqs = now.irqs - o->at_entry.irqs;
			c->parts.softirqs = now.softirqs - o->at_entry.softirqs;
			c->parts.syscalls = now.syscalls - o->at_entry.syscalls;
		}
		memmove(o, o + 1, (kf->nopen - i) * sizeof(*o));
		kf->nopen--;
		return;
	}
}

static int call_cmp(const void *a, const void *b)
{
	const struct kflow_call *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* ---- pass 2: the chosen call's steps ------------------------------------------ */

static struct kflow_node *node_add(struct kflow *kf, uint8_t type, uint32_t depth, uint64_t ns, uint64_t dur,
                                   const char *text)
{
	struct kflow_node *n;

	if (kf->nnodes >= KFLOW_NODES_MAX) {
		kf->dropped++;
		return NULL;
	}
	if (kf->nnodes == kf->nodes_cap) {
		size_t cap = kf->nodes_cap ? 2 * kf->nodes_cap : 256;
		struct kflow_node *g = realloc(kf->nodes, cap * sizeof(*g));

		if (!g) {
			kf->oom = true;
			return NULL;
		}
		kf->nodes = g;
		kf->nodes_cap = cap;
	}
	n = &kf->nodes[kf->nnodes];
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->depth = depth;
	n->ns = ns;
	n->dur_ns = dur;
	n->text = strdup(text);
	if (!n->text) {
		kf->oom = true;
		return NULL;
	}
	kf->nnodes++;
	return n;
}

static bool capturing(struct kflow *kf, const struct walk_stream *s)
{
	return kf->capturing && s->index == kf->c_stream;
}

static uint32_t rel_depth(const struct kflow *kf, uint32_t depth)
{
	return depth > kf->c_depth ? depth - kf->c_depth : 0;
}

static void cap_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct kflow *kf = ctx;
	char name[1024];

	(void)flags;
	if (!kf->capturing && !kf->capture_done && s->tid == kf->c_tid && ns == kf->c_start &&
	    is_func(kf, s->image, addr)) {
		kf->capturing = true;
		kf->c_stream = s->index;
		kf->c_depth = depth;
	}
	if (!capturing(kf, s))
		return;
	walk_name(kf->w, s->image, addr, name, sizeof(name));
	if (!node_add(kf, KFLOW_CALL, rel_depth(kf, depth), ns, 0, name))
		return;
	if (kf->nstack == kf->stack_cap) {
		size_t cap = kf->stack_cap ? 2 * kf->stack_cap : 64;
		size_t *g = realloc(kf->stack, cap * sizeof(*g));

		if (!g) {
			kf->oom = true;
			return;
		}
		kf->stack = g;
		kf->stack_cap = cap;
	}
	kf->stack[kf->nstack++] = kf->nnodes - 1;
}

/* How an off-CPU step ended. */
enum off_end_how {
	OFF_SWITCH_IN, /* its switch-in */
	OFF_RAN,       /* a record the thread made itself: the switch-in was not delivered */
	OFF_CALL_END,  /* the end of the call, with no switch-in before it */
};

static void off_text(struct kflow *kf, enum off_end_how how, char *buf, size_t size)
{
	char who[1200];

	if (how == OFF_RAN && !kf->woken)
		snprintf(buf, size, "off CPU (%c), no wake-up or switch-in seen (the kernel did not deliver them)",
		         kf->off_state);
	else if (how == OFF_CALL_END)
		snprintf(buf, size, "off CPU (%c), to the end of the call: no switch-in seen before it", kf->off_state);
	else if (kf->off_state == 'R')
		snprintf(buf, size, "off CPU, preempted (R)");
	else if (!kf->woken)
		snprintf(buf, size, "off CPU (%c), no wake-up seen", kf->off_state);
	else {
		klayer_waker_text(kf->kl, kf->c_tid, kf->wake_ns, kf->waker, kf->wake_hard, kf->wake_soft,
		                  kf->wake_timer, who, sizeof(who));
		snprintf(buf, size, "off CPU (%c), woken by %s", kf->off_state, who);
	}
}

/* Ends the off-CPU step under way at ns (klayer.c ends a wait whose
 * switch-in is not in the trace at the thread's next record too). */
static void off_end(struct kflow *kf, uint64_t ns, enum off_end_how how)
{
	char text[1400];
	struct kflow_node *n;

	if (kf->off_node == SIZE_MAX)
		return;
	n = &kf->nodes[kf->off_node];
	n->dur_ns = ns - n->ns;
	off_text(kf, how, text, sizeof(text));
	free(n->text);
	n->text = strdup(text);
	if (!n->text)
		n->text = strdup("off CPU");
	kf->off_node = SIZE_MAX;
}

static void cap_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                     unsigned flags)
{
	struct kflow *kf = ctx;

	(void)addr;
	(void)flags;
	if (!capturing(kf, s))
		return;
	if (kf->nstack)
		kf->nodes[kf->stack[--kf->nstack]].dur_ns = ns - entry_ns;
	if (depth == kf->c_depth) {
		off_end(kf, ns, OFF_CALL_END);
		kf->capturing = false;
		kf->capture_done = true;
	}
}

static void cap_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct kflow *kf = ctx;
	char name[48], args[512], ret[128], text[720];
	size_t at = kf->sys_first != SIZE_MAX ? kf->sys_first : kf->nnodes;
	struct kflow_node n;

	if (!capturing(kf, s))
		return;
	sys_name((enum sys_arch)sc->arch, sc->nr, name, sizeof(name));
	sys_format_args((enum sys_arch)sc->arch, sc->nr, sc->args, sc->nargs, sc->str, sc->str_len, args, sizeof(args));
	if (sc->has_exit)
		sys_format_ret((enum sys_arch)sc->arch, sc->nr, sc->ret, ret, sizeof(ret));
	else
		snprintf(ret, sizeof(ret), "?");
	snprintf(text, sizeof(text), "%s(%s) = %s", name, sc->has_enter ? args : "...", ret);
	if (!node_add(kf, KFLOW_SYSCALL, rel_depth(kf, sc->depth), sc->has_enter ? sc->enter_ns : sc->exit_ns,
	              sc->has_enter && sc->has_exit ? sc->exit_ns - sc->enter_ns : 0, text))
		return;
	/* its line goes before the kernel events it caused, one level up */
	n = kf->nodes[kf->nnodes - 1];
	memmove(&kf->nodes[at + 1], &kf->nodes[at], (kf->nnodes - 1 - at) * sizeof(n));
	kf->nodes[at] = n;
	for (size_t i = at + 1; i < kf->nnodes; i++)
		kf->nodes[i].depth = n.depth + 1;
	if (kf->off_node != SIZE_MAX && kf->off_node >= at)
		kf->off_node++;
	kf->sys_first = SIZE_MAX;
}

static void cap_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k)
{
	struct kflow *kf = ctx;
	const struct kformat_event *fe;
	char text[1400];
	struct kevent ev;
	uint32_t depth;
	struct kflow_node *n;

	if (!capturing(kf, s))
		return;
	depth = rel_depth(kf, k->depth);
	if (k->in_syscall && kf->sys_first == SIZE_MAX)
		kf->sys_first = kf->nnodes;
	if (!kf->kf || kevent_decode(kf->kf, k->id, k->raw, k->raw_len, &ev)) {
		snprintf(text, sizeof(text), "tracepoint %u (undecodable)", k->id);
		node_add(kf, KFLOW_KERNEL, depth, k->ns, 0, text);
		return;
	}
	if ((uint32_t)ev.common_pid == s->tid && !(ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.next_pid == s->tid))
		off_end(kf, k->ns, OFF_RAN);
	if (ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.prev_pid == s->tid) {
		kf->off_state = kevent_switch_state(&ev);
		kf->woken = kf->woken_waking = false;
		if (node_add(kf, KFLOW_OFFCPU, depth, k->ns, 0, "off CPU"))
			kf->off_node = kf->nnodes - 1;
		return;
	}
	if (ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.next_pid == s->tid) {
		off_end(kf, k->ns, OFF_SWITCH_IN);
		return;
	}
	if ((ev.kind == KEV_WAKEUP || ev.kind == KEV_WAKING) && (uint32_t)ev.u.wake.pid == s->tid &&
	    (uint32_t)ev.common_pid != s->tid) {
		if (kf->woken_waking && ev.kind == KEV_WAKEUP)
			return;
		kf->woken_waking = ev.kind == KEV_WAKING;
		kf->woken = true;
		kf->waker = (uint32_t)ev.common_pid;
		kf->wake_ns = k->ns;
		kf->wake_hard = ev.in_hardirq;
		kf->wake_soft = ev.in_softirq;
		kf->wake_timer = ev.in_hardirq && kf->timer_ns && kf->timer_cpu == k->cpu &&
		                 k->ns - kf->timer_ns <= KFLOW_TIMER_WAKE_NS;
		return;
	}
	if ((ev.kind == KEV_HRTIMER_EXPIRE_ENTRY || ev.kind == KEV_TIMER_EXPIRE_ENTRY) &&
	    (uint32_t)ev.common_pid != s->tid) {
		kf->timer_ns = k->ns;
		kf->timer_cpu = k->cpu;
	}
	kevent_format(kf->kf, k->id, k->raw, k->raw_len, text, sizeof(text));
	n = node_add(kf, KFLOW_KERNEL, depth, k->ns, 0, text);
	fe = ev.fmt;
	if (n && fe) {
		char name[160];

		snprintf(name, sizeof(name), "%s:%s", fe->system, fe->name);
		n->event = strdup(name);
	}
}

static void cap_mem(void *ctx, struct walk_stream *s, const struct walk_mem *m)
{
	struct kflow *kf = ctx;
	char text[128];

	if (!capturing(kf, s))
		return;
	snprintf(text, sizeof(text), "heap op %u: size %llu at 0x%llx", m->op, (unsigned long long)m->size,
	         (unsigned long long)m->ptr);
	node_add(kf, KFLOW_MEM, rel_depth(kf, m->depth), m->time, 0, text);
}

static void cap_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct kflow *kf = ctx;
	char text[64];

	if (!capturing(kf, s))
		return;
	snprintf(text, sizeof(text), "%llu events lost", (unsigned long long)count);
	node_add(kf, KFLOW_LOST, kf->nstack ? kf->nodes[kf->stack[kf->nstack - 1]].depth + 1 : 0, ns, 0, text);
}

/* The stream of thread id `index` (walk_stream.index), or NULL. */
/* Notes the threads of pass 1 by stream index. */
static int threads_note(struct kflow *kf)
{
	struct walk *w = kf->w;
	uint32_t n = 0;

	for (uint32_t i = 0; i < w->nstreams; i++)
		if (w->streams[i]->index >= n)
			n = w->streams[i]->index + 1;
	free(kf->threads);
	kf->threads = n ? calloc(n, sizeof(*kf->threads)) : NULL;
	kf->nthreads = kf->threads ? n : 0;
	if (n && !kf->threads)
		return -ENOMEM;
	for (uint32_t i = 0; i < w->nstreams; i++) {
		struct kf_thread *t = &kf->threads[w->streams[i]->index];

		t->tid = w->streams[i]->tid;
		snprintf(t->comm, sizeof(t->comm), "%s", w->streams[i]->comm);
	}
	return 0;
}

static const struct kf_thread *thread_by_index(const struct kflow *kf, uint32_t index)
{
	return index < kf->nthreads && kf->threads[index].tid ? &kf->threads[index] : NULL;
}

static void sync_text(struct kflow *kf, const struct walk_sync *y, const struct syncwake_event *e, char *buf,
                      size_t size)
{
	const struct kf_thread *o = e && e->waker != SYNCWAKE_NONE ? thread_by_index(kf, e->waker) : NULL;
	const char *how;
	char obj[64];

	if (y->op == LP_SYNC_COND_WAIT)
		snprintf(obj, sizeof(obj), "0x%llx (mutex 0x%llx)", (unsigned long long)y->obj,
		         (unsigned long long)y->obj2);
	else
		snprintf(obj, sizeof(obj), "0x%llx", (unsigned long long)y->obj);
	if (y->flags & LP_SYNC_TIMEDOUT) {
		snprintf(buf, size, "%s %s, timed out", syncevent_op_name(y->op), obj);
		return;
	}
	if (y->flags & LP_SYNC_FAILED) {
		snprintf(buf, size, "%s %s, failed", syncevent_op_name(y->op), obj);
		return;
	}
	if (!o) {
		snprintf(buf, size, "%s %s, no release seen", syncevent_op_name(y->op), obj);
		return;
	}
	switch (y->op) {
	case LP_SYNC_COND_WAIT:
		how = "signalled by";
		break;
	case LP_SYNC_SEM_WAIT:
		how = "posted by";
		break;
	case LP_SYNC_BARRIER_WAIT:
		how = "last to arrive:";
		break;
	case LP_SYNC_JOIN:
		how = "ended:";
		break;
	default:
		how = "released by";
		break;
	}
	snprintf(buf, size, "%s %s, %s thread %u (%s)", syncevent_op_name(y->op), obj, how, o->tid, o->comm);
}

/* A sync wait in the call: a step from its beginning, before the system
 * calls and kernel events of the wait (already there), which go one level
 * down, inside it. */
static void cap_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y)
{
	struct kflow *kf = ctx;
	uint64_t wait = y->wait_ns < y->ns ? y->wait_ns : y->ns, begin = y->ns - wait;
	const struct syncwake_event *e;
	const struct kf_thread *o;
	struct kflow_node n;
	char text[256];
	size_t at;

	if (!capturing(kf, s) || !wait || !syncwake_is_wait(y->op, 0, 1))
		return;
	e = syncwake_find(&kf->sw, s->index, y->ns, y->op, y->obj);
	sync_text(kf, y, e, text, sizeof(text));
	if (!node_add(kf, KFLOW_SYNC, rel_depth(kf, y->depth), begin, wait, text))
		return;
	if (e && e->waker != SYNCWAKE_NONE && (o = thread_by_index(kf, e->waker))) {
		kf->nodes[kf->nnodes - 1].waker_tid = o->tid;
		kf->nodes[kf->nnodes - 1].release_ns = e->release_ns;
	}
	n = kf->nodes[kf->nnodes - 1];
	at = kf->nnodes - 1;
	while (at > 0 && kf->nodes[at - 1].type != KFLOW_CALL && kf->nodes[at - 1].ns >= begin &&
	       kf->nodes[at - 1].depth >= n.depth)
		at--;
	memmove(&kf->nodes[at + 1], &kf->nodes[at], (kf->nnodes - 1 - at) * sizeof(n));
	kf->nodes[at] = n;
	for (size_t i = at + 1; i < kf->nnodes; i++)
		kf->nodes[i].depth++;
	if (kf->off_node != SIZE_MAX && kf->off_node >= at)
		kf->off_node++;
	if (kf->sys_first != SIZE_MAX && kf->sys_first >= at)
		kf->sys_first++;
}

/* ---- the whole ---------------------------------------------------------------- */

struct kflow *kflow_new(struct walk *w, const char *func, uint64_t nth, uint32_t tid)
{
	struct kflow *kf = calloc(1, sizeof(*kf));

	if (!kf)
		return NULL;
	kf->w = w;
	kf->nth = nth;
	kf->tid = tid;
	kf->func = strdup(func);
	kf->kl = klayer_new(w);
	kf->sys_first = kf->off_node = SIZE_MAX;
	syncwake_init(&kf->sw);
	if (!kf->func || !kf->kl) {
		kflow_free(kf);
		return NULL;
	}
	return kf;
}

/* Pass 1: the kernel layer, the calls of the function, every thread's
 * sync events. */
static int count_pass(struct kflow *kf)
{
	struct walk_ops ops[3] = { { 0 }, { 0 }, { 0 } };

	klayer_walk_ops(kf->kl, &ops[0]);
	ops[1].ctx = kf;
	ops[1].entry = count_entry;
	ops[1].exit = count_exit;
	ops[0].next = &ops[1];
	syncwake_walk_ops(&kf->sw, &ops[2]);
	ops[1].next = &ops[2];
	return walk_run(kf->w, &ops[0]);
}

/* Forgets what pass 1 found, for running it again. */
static int count_reset(struct kflow *kf)
{
	kf->ncalls = kf->nopen = 0;
	kf->nnames = 0;
	hashindex_clear(&kf->nameindex);
	klayer_free(kf->kl);
	kf->kl = klayer_new(kf->w);
	syncwake_release(&kf->sw);
	syncwake_init(&kf->sw);
	return kf->kl ? 0 : -ENOMEM;
}

int kflow_run(struct kflow *kf)
{
	struct walk_ops ops = { 0 };
	const struct kflow_call *c;
	int r;

	r = count_pass(kf);
	/* names looked up before their maps came matched nothing: once the
	 * maps are known, the calls are counted again */
	if (!r && !kf->oom && kf->unmapped && symbolizer_map_count(kf->w->sym) != kf->unmapped_maps) {
		kf->unmapped = false;
		r = count_reset(kf);
		if (!r)
			r = count_pass(kf);
	}
	if (r)
		return r;
	if (kf->oom || syncwake_resolve(&kf->sw) || threads_note(kf))
		return -ENOMEM;
	qsort(kf->calls, kf->ncalls, sizeof(*kf->calls), call_cmp);
	for (size_t i = 0; i < kf->ncalls; i++)
		kf->calls[i].n = i + 1;
	c = kflow_chosen(kf);
	if (!c)
		return 0;
	kf->kf = klayer_formats(kf->w, NULL, 0);
	kf->c_tid = c->tid;
	kf->c_start = c->start_ns;
	ops.ctx = kf;
	ops.entry = cap_entry;
	ops.exit = cap_exit;
	ops.syscall = cap_syscall;
	ops.kernel = cap_kernel;
	ops.mem = cap_mem;
	ops.lost = cap_lost;
	ops.sync = cap_sync;
	r = walk_run(kf->w, &ops);
	if (!r && kf->oom)
		r = -ENOMEM;
	return r;
}

const struct kflow_call *kflow_calls(const struct kflow *kf, size_t *n)
{
	*n = kf->ncalls;
	return kf->calls;
}

const struct kflow_call *kflow_chosen(const struct kflow *kf)
{
	return kf->nth && kf->nth <= kf->ncalls ? &kf->calls[kf->nth - 1] : NULL;
}

const struct kflow_node *kflow_nodes(const struct kflow *kf, size_t *n, uint64_t *dropped)
{
	*n = kf->nnodes;
	*dropped = kf->dropped;
	return kf->nodes;
}

void kflow_free(struct kflow *kf)
{
	if (!kf)
		return;
	for (size_t i = 0; i < kf->nnodes; i++) {
		free(kf->nodes[i].text);
		free(kf->nodes[i].event);
	}
	free(kf->nodes);
	free(kf->stack);
	free(kf->calls);
	free(kf->open);
	free(kf->names);
	free(kf->threads);
	hashindex_release(&kf->nameindex);
	klayer_free(kf->kl);
	syncwake_release(&kf->sw);
	free(kf->func);
	free(kf);
}

/* ---- JSON --------------------------------------------------------------------- */

static const char *const kflow_type_names[] = { "call", "syscall", "kernel", "off_cpu", "mem", "lost", "sync" };

static void json_call_layers(struct json *j, const struct kflow_call *c)
{
	const struct klayer_parts *p = &c->parts;

	json_u64(j, "duration_ns", c->end_ns - c->start_ns);
	json_u64(j, "user_ns", p->ns[KL_USER]);
	json_u64(j, "syscall_ns", p->ns[KL_SYSCALL]);
	json_u64(j, "off_cpu_ns", klayer_off_ns(p));
	json_u64(j, "irq_ns", p->ns[KL_IRQ]);
	json_u64(j, "softirq_ns", p->ns[KL_SOFTIRQ]);
	json_u64(j, "syscalls", p->syscalls);
	json_u64(j, "page_faults", p->faults);
	json_u64(j, "context_switches", p->switches_vol + p->switches_invol);
	json_u64(j, "voluntary_switches", p->switches_vol);
	json_u64(j, "involuntary_switches", p->switches_invol);
	json_bool(j, "unfinished", c->unfinished);
}

void kflow_json_calls(struct json *j, const char *func, const struct kflow *kf, uint64_t limit, bool counts)
{
	json_object_begin(j, NULL);
	json_str(j, "function", func);
	json_array_begin(j, "calls");
	for (size_t i = 0; i < kf->ncalls && i < limit; i++) {
		const struct kflow_call *c = &kf->calls[i];

		json_object_begin(j, NULL);
		json_u64(j, "n", c->n);
		json_u64(j, "pid", c->pid);
		json_u64(j, "tid", c->tid);
		json_u64(j, "start_ns", c->start_ns);
		json_call_layers(j, c);
		json_object_end(j);
	}
	json_array_end(j);
	if (counts) {
		json_u64(j, "ncalls", kf->ncalls);
		json_u64(j, "more", kf->ncalls > limit ? kf->ncalls - limit : 0);
	}
	json_object_end(j);
}

void kflow_json_call(struct json *j, const char *func, const struct kflow *kf, uint64_t limit, bool counts)
{
	const struct kflow_call *c = kflow_chosen(kf);

	json_object_begin(j, NULL);
	json_str(j, "function", func);
	json_u64(j, "n", c->n);
	json_u64(j, "pid", c->pid);
	json_u64(j, "tid", c->tid);
	json_u64(j, "start_ns", c->start_ns);
	json_call_layers(j, c);
	json_u64(j, "steps_dropped", kf->dropped);
	json_array_begin(j, "steps");
	for (size_t i = 0; i < kf->nnodes && i < limit; i++) {
		const struct kflow_node *nd = &kf->nodes[i];

		json_object_begin(j, NULL);
		json_str(j, "type",
		         nd->type < sizeof(kflow_type_names) / sizeof(kflow_type_names[0]) ? kflow_type_names[nd->type]
		                                                                           : "?");
		json_u64(j, "time_ns", nd->ns);
		json_u64(j, "depth", nd->depth);
		if (nd->dur_ns || nd->type == KFLOW_CALL || nd->type == KFLOW_SYSCALL)
			json_u64(j, "duration_ns", nd->dur_ns);
		if (nd->event)
			json_str(j, "event", nd->event);
		if (nd->waker_tid) {
			json_u64(j, "waker_tid", nd->waker_tid);
			if (nd->release_ns)
				json_u64(j, "release_ns", nd->release_ns);
		}
		json_str(j, nd->type == KFLOW_CALL ? "name" : "text", nd->text);
		json_object_end(j);
	}
	json_array_end(j);
	if (counts) {
		json_u64(j, "ncalls", kf->ncalls);
		json_u64(j, "steps_more", kf->nnodes > limit ? kf->nnodes - limit : 0);
	}
	json_object_end(j);
}
