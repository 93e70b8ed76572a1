/* The kernel tracks of the Chrome trace (see export/chromekernel.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/systab.h"
#include "host/lib/export/chromekernel.h"
#include "host/lib/kernel/kevent.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/util/escape.h"
#include "host/lib/util/slots.h"

#define CK_IRQ_NEST 8u
/* A wake-up this soon after a timer's expiry on its CPU is the timer's (as
 * the kernel layer counts it: klayer.c, kflow.c). */
#define CK_TIMER_WAKE_NS 200000ull
#define CK_FIRST_KEPT 256u

static const char *const softirq_names[] = { "HI",       "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
	                                     "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU" };

enum ck_wake_ctx { CKW_THREAD = 0, CKW_HARDIRQ = 1 << 0, CKW_SOFTIRQ = 1 << 1, CKW_TIMER = 1 << 2 };

/* An irq or softirq handler under way on a thread. */
struct ck_irq {
	uint64_t ns;
	bool soft;
	int32_t num; /* irq number, softirq vector */
	char name[32];
};

/* One thread's view of itself, from its own stream. */
struct ck_thread {
	uint64_t mark_ns; /* the latest slice boundary written or due on its track */
	/* the off-CPU interval under way: since its switch-out */
	bool off;
	uint64_t off_ns;
	char off_state;
	int32_t off_nr; /* the syscall it was in; -1: none */
	uint8_t off_arch;
	/* the wake-up that ended it (the first sched_waking, else sched_wakeup) */
	bool woken, woken_waking;
	uint8_t wake_ctx; /* enum ck_wake_ctx */
	uint32_t waker;
	uint64_t wake_ns;
	uint64_t timer_ns; /* the last expiry of a timer for it, on timer_cpu */
	uint32_t timer_cpu;
	/* on a CPU since its switch-in */
	bool on;
	uint64_t on_ns;
	uint32_t on_cpu;
	struct ck_irq irq[CK_IRQ_NEST];
	uint32_t nirq;
};

/* An off-CPU slice kept for its waker's name and flow. */
struct ck_off {
	uint64_t start, end, wake_ns;
	uint32_t pid, tid, waker, cpu;
	int32_t sc_nr;
	uint8_t sc_arch, wake_ctx;
	char state;
};

/* A wake-up a traced thread gave. */
struct ck_wake {
	uint64_t ns;
	uint32_t wakee, pid, tid;
};

struct chromekernel {
	struct walk *w;
	struct chromekernel_out out;
	struct klayer *kl;
	struct walk_ops ops[2];     /* its own, the kernel layer's */
	struct ck_thread **threads; /* by stream index */
	uint32_t nthreads;
	struct ck_off *offs;
	size_t noffs, offs_cap;
	struct ck_wake *wakes;
	size_t nwakes, wakes_cap;
	uint8_t cpus[EXPORT_CHROME_CPUS_MAX / 8]; /* CPUs with a slice */
	uint64_t unjoined;
	bool oom;
};

/* ---- writing ---------------------------------------------------------------- */

/* ts (or dur) in µs with the ns as three decimals, as chrome.c writes them. */
static void put_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / 1000u, ns % 1000u);
}

static void put_ts(const struct chromekernel *ck, FILE *f, uint64_t ns)
{
	put_us(f, ns > ck->out.zero_ns ? ns - ck->out.zero_ns : 0);
}

/* Starts a slice ("X") of pid/tid, through the output of no stream; NULL
 * when it cannot be written. */
static FILE *slice_begin(struct chromekernel *ck, uint32_t pid, uint32_t tid, uint64_t start, uint64_t end,
                         const char *cat)
{
	FILE *f = ck->out.begin(ck->out.ctx, NULL);

	if (!f)
		return NULL;
	fputs("{\"ph\":\"X\",\"ts\":", f);
	put_ts(ck, f, start);
	fputs(",\"dur\":", f);
	put_us(f, end > start ? end - start : 0);
	fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"cat\":\"%s\",\"name\":", pid, tid, cat);
	return f;
}

static void put_syscall_arg(FILE *f, uint8_t arch, int32_t nr)
{
	char name[48];

	if (nr < 0)
		return;
	sys_name((enum sys_arch)arch, (uint32_t)nr, name, sizeof(name));
	fputs(",\"syscall\":", f);
	escape_json(f, name);
}

/* An off-CPU slice on its thread's track; who: the waker in words, NULL
 * when none is known (args.waker_tid then, when woken). */
static void put_off(struct chromekernel *ck, const struct ck_off *o, const char *who)
{
	char name[32];
	FILE *f;

	snprintf(name, sizeof(name), "off-CPU (%c)", o->state);
	f = slice_begin(ck, o->pid, o->tid, o->start, o->end, "off_cpu");
	if (!f)
		return;
	escape_json(f, name);
	fprintf(f, ",\"args\":{\"state\":\"%c\"", o->state);
	put_syscall_arg(f, o->sc_arch, o->sc_nr);
	if (who) {
		fputs(",\"waker\":", f);
		escape_json(f, who);
	} else if (o->state != 'R') {
		fprintf(f, ",\"waker_tid\":%" PRIu32, o->waker);
	}
	fprintf(f, ",\"cpu\":%" PRIu32 "}}", o->cpu);
}

/* ---- per thread --------------------------------------------------------------- */

static struct ck_thread *thread_of(struct chromekernel *ck, const struct walk_stream *s)
{
	struct ck_thread *t;

	if (s->index >= ck->nthreads) {
		struct ck_thread **g = slots_grow(ck->threads, sizeof(*g), &ck->nthreads, s->index);

		if (!g) {
			ck->oom = true;
			return NULL;
		}
		ck->threads = g;
	}
	t = ck->threads[s->index];
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			ck->oom = true;
		ck->threads[s->index] = t;
	}
	return t;
}

static void mark(struct chromekernel *ck, const struct walk_stream *s, uint64_t ns)
{
	struct ck_thread *t = thread_of(ck, s);

	if (t && ns > t->mark_ns)
		t->mark_ns = ns;
}

/* A kernel slice of the thread's track starts no earlier than the last
 * function or syscall boundary before its end, so that it nests in the
 * thread's calls even when the user and kernel clocks disagree by a little. */
static uint64_t nested_start(struct ck_thread *t, const struct walk_kernel *k, uint64_t start)
{
	if (t->mark_ns > start)
		start = t->mark_ns;
	if (k->in_syscall && k->sc_enter_ns > start && k->sc_enter_ns <= k->ns)
		start = k->sc_enter_ns;
	return start < k->ns ? start : k->ns;
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	(void)addr;
	(void)depth;
	(void)flags;
	mark(ctx, s, ns);
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	(void)addr;
	(void)depth;
	(void)entry_ns;
	(void)flags;
	mark(ctx, s, ns);
}

static void on_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	(void)addr;
	(void)duration_ns;
	mark(ctx, s, exit_ns);
}

static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	mark(ctx, s, sc->has_exit ? sc->exit_ns : s->last_ns);
}

/* The thread's scheduling slice on the CPU it leaves: "comm tid" for the
 * program's threads, "comm pid" for another process's (--kernel-system),
 * whose threads are not told apart on the CPU tracks. */
static void cpu_slice(struct chromekernel *ck, const struct walk_stream *s, const struct ck_thread *t,
                      const struct walk_kernel *k, const struct kevent *ev)
{
	char name[48];
	FILE *f;

	if (!t->on || t->on_cpu != k->cpu || k->cpu >= EXPORT_CHROME_CPUS_MAX ||
	    !(f = slice_begin(ck, EXPORT_CHROME_CPU_PID, EXPORT_CHROME_CPU_PID + k->cpu, t->on_ns, k->ns, "sched")))
		return;
	snprintf(name, sizeof(name), "%s %" PRIu32, s->comm, s->other ? s->pid : s->tid);
	escape_json(f, name);
	fprintf(f, ",\"args\":{\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"comm\":", s->pid, s->tid);
	escape_json(f, s->comm);
	fprintf(f, ",\"end_state\":\"%c\"%s}}", kevent_switch_state(ev), s->other ? ",\"other_process\":true" : "");
	ck->cpus[k->cpu / 8] |= (uint8_t)(1u << k->cpu % 8);
}

static void switch_out(struct chromekernel *ck, struct walk_stream *s, struct ck_thread *t, const struct walk_kernel *k,
                       const struct kevent *ev)
{
	cpu_slice(ck, s, t, k, ev);
	t->on = false;
	t->nirq = 0;
	t->off = true;
	t->off_ns = k->ns;
	t->off_state = kevent_switch_state(ev);
	t->off_nr = k->in_syscall ? (int32_t)k->sc_nr : -1;
	t->off_arch = k->sc_arch;
	t->woken = t->woken_waking = false;
}

static void switch_in(struct chromekernel *ck, struct walk_stream *s, struct ck_thread *t, const struct walk_kernel *k)
{
	struct ck_off o;

	t->on = true;
	t->on_ns = k->ns;
	t->on_cpu = k->cpu;
	if (!t->off)
		return; /* its switch-out is before the trace */
	t->off = false;
	o = (struct ck_off){ .start = nested_start(t, k, t->off_ns),
		             .end = k->ns,
		             .wake_ns = t->wake_ns,
		             .pid = s->pid,
		             .tid = s->tid,
		             .waker = t->waker,
		             .cpu = k->cpu,
		             .sc_nr = t->off_nr,
		             .sc_arch = t->off_arch,
		             .wake_ctx = t->wake_ctx,
		             .state = t->off_state };
	t->mark_ns = k->ns;
	if (o.state == 'R')
		put_off(ck, &o, NULL);
	else if (!t->woken)
		put_off(ck, &o, "(no wake-up event seen)");
	else if (ck->noffs < EXPORT_CHROME_KERNEL_KEPT_MAX) {
		/* the waker's name needs the whole pass */
		if (ck->noffs == ck->offs_cap) {
			size_t cap = ck->offs_cap ? 2 * ck->offs_cap : CK_FIRST_KEPT;
			struct ck_off *g = realloc(ck->offs, cap * sizeof(*g));

			if (!g) {
				ck->oom = true;
				return;
			}
			ck->offs = g;
			ck->offs_cap = cap;
		}
		ck->offs[ck->noffs++] = o;
	} else {
		ck->unjoined++;
		put_off(ck, &o, NULL);
	}
}

static void woken(struct ck_thread *t, const struct walk_kernel *k, const struct kevent *ev)
{
	/* sched_waking runs in the waker; the sched_wakeup after it may run
	 * on another CPU, from an IPI */
	if (!t->off || (t->woken_waking && ev->kind == KEV_WAKEUP))
		return;
	t->woken_waking = ev->kind == KEV_WAKING;
	t->woken = true;
	t->waker = (uint32_t)ev->common_pid;
	t->wake_ns = k->ns;
	t->wake_ctx = CKW_THREAD;
	if (ev->in_hardirq && t->timer_ns && t->timer_cpu == k->cpu && k->ns - t->timer_ns <= CK_TIMER_WAKE_NS)
		t->wake_ctx = CKW_TIMER;
	else if (ev->in_hardirq)
		t->wake_ctx = CKW_HARDIRQ;
	else if (ev->in_softirq)
		t->wake_ctx = CKW_SOFTIRQ;
}

static void gave_wakeup(struct chromekernel *ck, const struct walk_stream *s, const struct walk_kernel *k,
                        uint32_t wakee)
{
	if (ck->nwakes >= EXPORT_CHROME_KERNEL_KEPT_MAX) {
		ck->unjoined++;
		return;
	}
	if (ck->nwakes == ck->wakes_cap) {
		size_t cap = ck->wakes_cap ? 2 * ck->wakes_cap : CK_FIRST_KEPT;
		struct ck_wake *g = realloc(ck->wakes, cap * sizeof(*g));

		if (!g) {
			ck->oom = true;
			return;
		}
		ck->wakes = g;
		ck->wakes_cap = cap;
	}
	ck->wakes[ck->nwakes++] = (struct ck_wake){ .ns = k->ns, .wakee = wakee, .pid = s->pid, .tid = s->tid };
}

static void irq_exit(struct chromekernel *ck, const struct walk_stream *s, struct ck_thread *t,
                     const struct walk_kernel *k, bool soft)
{
	const struct ck_irq *q;
	char name[64];
	FILE *f;

	if (!t->nirq || t->irq[t->nirq - 1].soft != soft)
		return; /* its entry is before the trace, or was lost */
	q = &t->irq[--t->nirq];
	if (soft && q->num >= 0 && (size_t)q->num < sizeof(softirq_names) / sizeof(softirq_names[0]))
		snprintf(name, sizeof(name), "softirq %s", softirq_names[q->num]);
	else if (soft)
		snprintf(name, sizeof(name), "softirq %" PRId32, q->num);
	else if (q->name[0])
		snprintf(name, sizeof(name), "irq %" PRId32 " (%s)", q->num, q->name);
	else
		snprintf(name, sizeof(name), "irq %" PRId32, q->num);
	f = slice_begin(ck, s->pid, s->tid, nested_start(t, k, q->ns), k->ns, soft ? "softirq" : "irq");
	t->mark_ns = k->ns;
	if (!f)
		return;
	escape_json(f, name);
	fprintf(f, ",\"args\":{\"%s\":%" PRId32 ",\"cpu\":%" PRIu32 "}}", soft ? "vec" : "irq", q->num, k->cpu);
}

static void irq_entry(struct ck_thread *t, const struct walk_kernel *k, const struct kevent *ev, bool soft)
{
	struct ck_irq *q;

	if (t->nirq == CK_IRQ_NEST)
		return;
	q = &t->irq[t->nirq++];
	q->ns = k->ns;
	q->soft = soft;
	q->num = soft ? (int32_t)ev->u.softirq.vec : ev->u.irq.irq;
	snprintf(q->name, sizeof(q->name), "%s", soft ? "" : ev->u.irq.name);
}

static void fault(struct chromekernel *ck, const struct walk_stream *s, const struct walk_kernel *k,
                  const struct kevent *ev)
{
	FILE *f = ck->out.begin(ck->out.ctx, s);

	if (!f)
		return;
	fputs("{\"ph\":\"i\",\"s\":\"t\",\"ts\":", f);
	put_ts(ck, f, k->ns);
	fprintf(f,
	        ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"cat\":\"page_fault\",\"name\":\"%s\",\"args\":{\"address\":"
	        "\"0x%" PRIx64 "\",\"ip\":\"0x%" PRIx64 "\",\"error_code\":%" PRIu64 "}}",
	        s->pid, s->tid, ev->kind == KEV_FAULT_USER ? "page fault" : "page fault (kernel)", ev->u.fault.address,
	        ev->u.fault.ip, ev->u.fault.error_code);
}

static void on_kernel(void *ctx, struct walk_stream *s, const struct walk_kernel *k)
{
	struct chromekernel *ck = ctx;
	const struct kformats *kf = klayer_formats(ck->w, NULL, 0);
	struct ck_thread *t = thread_of(ck, s);
	struct kevent ev;
	bool own;

	if (!t || !kf || kevent_decode(kf, k->id, k->raw, k->raw_len, &ev))
		return;
	if (s->other) {
		/* another process (--kernel-system): on the CPU tracks only */
		if (ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.prev_pid == s->tid) {
			cpu_slice(ck, s, t, k, &ev);
			t->on = false;
		} else if (ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.next_pid == s->tid) {
			t->on = true;
			t->on_ns = k->ns;
			t->on_cpu = k->cpu;
		}
		return;
	}
	own = (uint32_t)ev.common_pid == s->tid;
	/* a record the thread made itself while it seemed off the CPU: the
	 * kernel did not deliver its switch-in, and the wait ends here, as
	 * report --kernel (klayer.c) ends it */
	if (own && t->off && !(ev.kind == KEV_SWITCH && (uint32_t)ev.u.sw.next_pid == s->tid)) {
		switch_in(ck, s, t, k);
		if (ev.kind == KEV_SWITCH)
			t->on = false; /* when it ran in between is not known: no slice */
	}
	switch (ev.kind) {
	case KEV_SWITCH:
		if ((uint32_t)ev.u.sw.prev_pid == s->tid)
			switch_out(ck, s, t, k, &ev);
		else if ((uint32_t)ev.u.sw.next_pid == s->tid)
			switch_in(ck, s, t, k);
		break;
	case KEV_WAKEUP:
	case KEV_WAKING:
		if ((uint32_t)ev.u.wake.pid == s->tid && !own)
			woken(t, k, &ev);
		else if (own && (uint32_t)ev.u.wake.pid != s->tid)
			gave_wakeup(ck, s, k, (uint32_t)ev.u.wake.pid);
		break;
	case KEV_HRTIMER_EXPIRE_ENTRY:
	case KEV_TIMER_EXPIRE_ENTRY:
		if (!own) {
			t->timer_ns = k->ns;
			t->timer_cpu = k->cpu;
		}
		break;
	case KEV_FAULT_USER:
	case KEV_FAULT_KERNEL:
		if (own)
			fault(ck, s, k, &ev);
		break;
	case KEV_IRQ_ENTRY:
	case KEV_SOFTIRQ_ENTRY:
		if (own)
			irq_entry(t, k, &ev, ev.kind == KEV_SOFTIRQ_ENTRY);
		break;
	case KEV_IRQ_EXIT:
	case KEV_SOFTIRQ_EXIT:
		if (own)
			irq_exit(ck, s, t, k, ev.kind == KEV_SOFTIRQ_EXIT);
		break;
	default:
		break;
	}
}

/* ---- the end of the pass -------------------------------------------------------- */

static int wake_cmp(const void *a, const void *b)
{
	const struct ck_wake *x = a, *y = b;

	if (x->wakee != y->wakee)
		return x->wakee < y->wakee ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The wake-up waker gave wakee at ns, as its own stream has it. */
static const struct ck_wake *wake_find(const struct chromekernel *ck, uint32_t wakee, uint64_t ns, uint32_t waker)
{
	size_t lo = 0, hi = ck->nwakes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ck_wake *m = &ck->wakes[mid];

		if (m->wakee < wakee || (m->wakee == wakee && m->ns < ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ck->nwakes && ck->wakes[lo].wakee == wakee && ck->wakes[lo].ns == ns; lo++)
		if (ck->wakes[lo].tid == waker)
			return &ck->wakes[lo];
	return NULL;
}

static void put_flow(struct chromekernel *ck, uint64_t id, char ph, uint32_t pid, uint32_t tid, uint64_t ns)
{
	FILE *f = ck->out.begin(ck->out.ctx, NULL);

	if (!f)
		return;
	fprintf(f, "{\"ph\":\"%c\",%s\"id\":%" PRIu64 ",\"ts\":", ph, ph == 'f' ? "\"bp\":\"e\"," : "", id);
	put_ts(ck, f, ns);
	fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"cat\":\"wakeup\",\"name\":\"wake-up\"}", pid, tid);
}

static void put_cpu_names(struct chromekernel *ck)
{
	bool any = false;
	FILE *f;

	for (uint32_t cpu = 0; cpu < EXPORT_CHROME_CPUS_MAX; cpu++) {
		if (!(ck->cpus[cpu / 8] & (1u << cpu % 8)))
			continue;
		any = true;
		if ((f = ck->out.begin(ck->out.ctx, NULL)))
			fprintf(f,
			        "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
			        ",\"name\":\"thread_name\",\"args\":{\"name\":\"CPU %" PRIu32 "\"}}",
			        EXPORT_CHROME_CPU_PID, EXPORT_CHROME_CPU_PID + cpu, cpu);
		if ((f = ck->out.begin(ck->out.ctx, NULL)))
			fprintf(f,
			        "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
			        ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%" PRIu32 "}}",
			        EXPORT_CHROME_CPU_PID, EXPORT_CHROME_CPU_PID + cpu, cpu);
	}
	if (any && (f = ck->out.begin(ck->out.ctx, NULL)))
		fprintf(f,
		        "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
		        ",\"name\":\"process_name\",\"args\":{\"name\":\"CPUs\"}}",
		        EXPORT_CHROME_CPU_PID, EXPORT_CHROME_CPU_PID);
}

int chromekernel_finish(struct chromekernel *ck)
{
	uint64_t id = 0;

	if (ck->nwakes)
		qsort(ck->wakes, ck->nwakes, sizeof(*ck->wakes), wake_cmp);
	for (size_t i = 0; i < ck->noffs; i++) {
		const struct ck_off *o = &ck->offs[i];
		const struct ck_wake *g;
		char who[1200];

		klayer_waker_text(ck->kl, o->tid, o->wake_ns, o->waker, o->wake_ctx & CKW_HARDIRQ,
		                  o->wake_ctx & CKW_SOFTIRQ, o->wake_ctx & CKW_TIMER, who, sizeof(who));
		put_off(ck, o, who);
		if (o->wake_ctx != CKW_THREAD || !(g = wake_find(ck, o->tid, o->wake_ns, o->waker)))
			continue;
		id++;
		put_flow(ck, id, 's', g->pid, g->tid, g->ns);
		put_flow(ck, id, 'f', o->pid, o->tid, o->end);
	}
	put_cpu_names(ck);
	return ck->oom ? -ENOMEM : 0;
}

/* ---- the consumer ------------------------------------------------------------------ */

struct chromekernel *chromekernel_new(struct walk *w, const struct chromekernel_out *out)
{
	struct chromekernel *ck = calloc(1, sizeof(*ck));

	if (!ck)
		return NULL;
	ck->w = w;
	ck->out = *out;
	ck->kl = klayer_new(w);
	if (!ck->kl) {
		free(ck);
		return NULL;
	}
	return ck;
}

void chromekernel_chain(struct chromekernel *ck, struct walk_ops *list)
{
	memset(ck->ops, 0, sizeof(ck->ops));
	ck->ops[0].ctx = ck;
	ck->ops[0].others = true; /* their slices on the CPU tracks */
	ck->ops[0].entry = on_entry;
	ck->ops[0].exit = on_exit_ev;
	ck->ops[0].call = on_call;
	ck->ops[0].syscall = on_syscall;
	ck->ops[0].kernel = on_kernel;
	klayer_walk_ops(ck->kl, &ck->ops[1]);
	walk_chain(list, &ck->ops[0]);
	walk_chain(list, &ck->ops[1]);
}

uint64_t chromekernel_unjoined(const struct chromekernel *ck)
{
	return ck->unjoined;
}

void chromekernel_free(struct chromekernel *ck)
{
	if (!ck)
		return;
	for (uint32_t i = 0; i < ck->nthreads; i++)
		free(ck->threads[i]);
	free(ck->threads);
	free(ck->offs);
	free(ck->wakes);
	klayer_free(ck->kl);
	free(ck);
}
