/* `report --layers` and `report --kernel` (see kreport.h): the kernel
 * layer's results (kernel/klayer.h) as text tables and JSON. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/lib/export/kreport.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/util/json.h"
#include "host/lib/util/options.h"

#define KREPORT_TEXT_ROWS 30u /* rows of each ranking in text */

static void dur(uint64_t ns, char *buf, size_t size)
{
	options_format_duration(ns, buf, size);
}

static void json_parts(struct json *j, const struct klayer_parts *p)
{
	json_u64(j, "user_ns", p->ns[KL_USER]);
	json_u64(j, "syscall_ns", p->ns[KL_SYSCALL]);
	json_u64(j, "off_cpu_ns", klayer_off_ns(p));
	json_object_begin(j, "off_cpu_by_state");
	json_u64(j, "R", p->ns[KL_OFF_R]);
	json_u64(j, "S", p->ns[KL_OFF_S]);
	json_u64(j, "D", p->ns[KL_OFF_D]);
	json_u64(j, "other", p->ns[KL_OFF_OTHER]);
	json_object_end(j);
	json_u64(j, "irq_ns", p->ns[KL_IRQ]);
	json_u64(j, "softirq_ns", p->ns[KL_SOFTIRQ]);
	json_u64(j, "page_faults", p->faults);
	json_u64(j, "context_switches", p->switches_vol + p->switches_invol);
	json_u64(j, "voluntary_switches", p->switches_vol);
	json_u64(j, "involuntary_switches", p->switches_invol);
	json_u64(j, "irqs", p->irqs);
	json_u64(j, "softirqs", p->softirqs);
	json_u64(j, "syscalls", p->syscalls);
}

static void text_parts_header(FILE *f, const char *what)
{
	fprintf(f, "%12s %12s %12s %12s %12s %8s %8s %8s  %s\n", "Total", "User", "Syscall", "Off-CPU", "Irq+Soft",
	        "Faults", "Switches", "Calls", what);
	fprintf(f, "%12s %12s %12s %12s %12s %8s %8s %8s  %s\n", "==========", "==========", "==========", "==========",
	        "==========", "======", "========", "======", "========");
}

static void text_parts(FILE *f, uint64_t total, const struct klayer_parts *p, uint64_t calls, const char *what)
{
	char t[32], u[32], s[32], o[32], i[32], c[32];

	dur(total, t, sizeof(t));
	dur(p->ns[KL_USER], u, sizeof(u));
	dur(p->ns[KL_SYSCALL], s, sizeof(s));
	dur(klayer_off_ns(p), o, sizeof(o));
	dur(p->ns[KL_IRQ] + p->ns[KL_SOFTIRQ], i, sizeof(i));
	if (calls)
		snprintf(c, sizeof(c), "%llu", (unsigned long long)calls);
	else
		snprintf(c, sizeof(c), "-");
	fprintf(f, "%12s %12s %12s %12s %12s %8llu %8llu %8s  %s\n", t, u, s, o, i, (unsigned long long)p->faults,
	        (unsigned long long)(p->switches_vol + p->switches_invol), c, what);
}

/* The unpaired switch-outs' CPUs as "CPU 1" or "CPUs 0, 3" (bit 63: "63
 * or later"). */
static void unpaired_cpus_text(uint64_t mask, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "CPU%s", mask & (mask - 1) ? "s" : "");

	for (int c = 0; c < 64 && n < size; c++)
		if (mask >> c & 1)
			n += (size_t)snprintf(buf + n, size - n, "%s %d%s", n > 4 ? "," : "", c,
			                      c == 63 ? " or later" : "");
}

static void text_unpaired(FILE *f, const struct klayer_result *r, const char *consequence)
{
	char cpus[400];

	if (!r->unpaired_switches)
		return;
	unpaired_cpus_text(r->unpaired_cpus, cpus, sizeof(cpus));
	fprintf(f,
	        "# warning: %llu switch-outs (on %s) have no switch-in before the next one: the kernel did not "
	        "deliver those records%s\n",
	        (unsigned long long)r->unpaired_switches, cpus, consequence);
}

static void json_unpaired(struct json *j, const struct klayer_result *r)
{
	json_u64(j, "unpaired_switches", r->unpaired_switches);
	json_array_begin(j, "unpaired_switch_cpus");
	for (int c = 0; c < 64; c++)
		if (r->unpaired_cpus >> c & 1)
			json_u64(j, NULL, (uint64_t)c);
	json_array_end(j);
}

/* Other processes (record --kernel-system), apart from the program's
 * tables; nothing when the trace has none. */
static void others_text(FILE *f, const struct klayer_result *r)
{
	char on[32];

	if (!r->nothers)
		return;
	fprintf(f, "#\n# other processes (--kernel-system): %zu, not the program's\n", r->nothers);
	fprintf(f, "%8s %-16s %8s %10s %12s %8s %8s %8s  %s\n", "Pid", "Comm", "Threads", "Events", "On-CPU",
	        "Switches", "Waits", "Preempt", "Top events");
	for (size_t i = 0; i < r->nothers && i < KREPORT_TEXT_ROWS; i++) {
		const struct kother_proc *p = &r->others[i];

		dur(p->on_cpu_ns, on, sizeof(on));
		fprintf(f, "%8u %-16s %8u %10llu %12s %8llu %8llu %8llu ", p->pid, p->comm, p->threads,
		        (unsigned long long)p->events, on, (unsigned long long)p->switches,
		        (unsigned long long)p->switches_vol, (unsigned long long)p->switches_invol);
		for (uint32_t k = 0; k < p->ntop; k++)
			fprintf(f, "%s%s %llu", k ? ", " : " ", p->top[k].name, (unsigned long long)p->top[k].count);
		fputc('\n', f);
	}
	if (r->nothers > KREPORT_TEXT_ROWS)
		fprintf(f, "# ... %zu more (--format json gives all)\n", r->nothers - KREPORT_TEXT_ROWS);
}

static void others_json(struct json *j, const struct klayer_result *r)
{
	json_array_begin(j, "other_processes");
	for (size_t i = 0; i < r->nothers; i++) {
		const struct kother_proc *p = &r->others[i];

		json_object_begin(j, NULL);
		json_u64(j, "pid", p->pid);
		json_str(j, "comm", p->comm);
		json_u64(j, "threads", p->threads);
		json_u64(j, "events", p->events);
		json_u64(j, "on_cpu_ns", p->on_cpu_ns);
		json_u64(j, "switches", p->switches);
		json_u64(j, "voluntary_switches", p->switches_vol);
		json_u64(j, "involuntary_switches", p->switches_invol);
		json_array_begin(j, "events_by_type");
		for (uint32_t k = 0; k < p->ntop; k++) {
			json_object_begin(j, NULL);
			json_str(j, "event", p->top[k].name);
			json_u64(j, "count", p->top[k].count);
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

static uint64_t thread_total(const struct klayer_thread *t)
{
	return t->last_ns > t->first_ns ? t->last_ns - t->first_ns : 0;
}

static void layers_text(FILE *f, const struct walk *w, const struct klayer_result *r)
{
	char what[64];

	fprintf(f, "# layerprof report --layers: %zu functions, %zu threads, %llu kernel events, %llu events lost\n",
	        r->nfuncs, r->nthreads, (unsigned long long)r->kernel_events, (unsigned long long)w->lost);
	if (!w->kernel_events)
		fprintf(f, "# no kernel events in this trace (record with --kernel): off-CPU, irq and fault "
		           "columns are empty\n");
	if (!w->syscalls)
		fprintf(f, "# no system calls in this trace (record with --syscalls): syscall time counts as "
		           "user time\n");
	text_unpaired(f, r, " (each of those waits ends at the thread's next kernel record of its own)");
	fprintf(f, "#\n# per thread (time from its first to its last event)\n");
	text_parts_header(f, "Thread");
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct klayer_thread *t = &r->threads[i];

		snprintf(what, sizeof(what), "%u (%s)", t->tid, t->comm);
		text_parts(f, thread_total(t), &t->parts, 0, what);
	}
	fprintf(f, "#\n# per function, inclusive\n");
	text_parts_header(f, "Function");
	for (size_t i = 0; i < r->nfuncs; i++)
		text_parts(f, r->funcs[i].total_ns, &r->funcs[i].incl, r->funcs[i].calls, r->funcs[i].name);
	fprintf(f, "#\n# per function, self (not in the functions it called)\n");
	text_parts_header(f, "Function");
	for (size_t i = 0; i < r->nfuncs; i++) {
		const struct klayer_parts *p = &r->funcs[i].self;
		uint64_t self = 0;

		for (int m = 0; m < KL_MODES; m++)
			self += p->ns[m];
		text_parts(f, self, p, r->funcs[i].calls, r->funcs[i].name);
	}
	others_text(f, r);
}

void kreport_layers_members(struct json *j, const struct walk *w, const struct klayer_result *r)
{
	json_u64(j, "kernel_events", r->kernel_events);
	json_u64(j, "undecodable_kernel_events", r->undecodable);
	json_unpaired(j, r);
	json_u64(j, "lost_events", w->lost);
	json_bool(j, "has_kernel", w->kernel_events > 0);
	json_bool(j, "has_syscalls", w->syscalls > 0);
	json_array_begin(j, "functions");
	for (size_t i = 0; i < r->nfuncs; i++) {
		const struct klayer_func *fn = &r->funcs[i];
		uint64_t self = 0;

		for (int m = 0; m < KL_MODES; m++)
			self += fn->self.ns[m];
		json_object_begin(j, NULL);
		json_str(j, "name", fn->name);
		json_u64(j, "calls", fn->calls);
		json_u64(j, "total_ns", fn->total_ns);
		json_parts(j, &fn->incl);
		json_object_begin(j, "self");
		json_u64(j, "total_ns", self);
		json_parts(j, &fn->self);
		json_object_end(j);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "threads");
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct klayer_thread *t = &r->threads[i];

		json_object_begin(j, NULL);
		json_u64(j, "pid", t->pid);
		json_u64(j, "tid", t->tid);
		json_str(j, "comm", t->comm);
		json_u64(j, "total_ns", thread_total(t));
		json_parts(j, &t->parts);
		json_object_end(j);
	}
	json_array_end(j);
	others_json(j, r);
}

static void layers_json(FILE *f, const struct walk *w, const struct klayer_result *r)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir ? w->dir : "");
	kreport_layers_members(&j, w, r);
	json_object_end(&j);
	json_finish(&j);
}

static void kernel_text(FILE *f, const struct walk *w, const struct klayer_result *r)
{
	char a[32], b[32], c[32];
	size_t i;

	fprintf(f,
	        "# layerprof report --kernel: %llu kernel events (%llu undecodable), %llu switches, %llu page "
	        "faults, %llu events lost\n",
	        (unsigned long long)r->kernel_events, (unsigned long long)r->undecodable,
	        (unsigned long long)r->switches, (unsigned long long)r->faults, (unsigned long long)w->lost);
	if (!w->kernel_events) {
		fprintf(f, "# no kernel events in this trace (record with --kernel)\n");
		return;
	}
	text_unpaired(f, r,
	              " (each of those waits ends at the thread's next kernel record of its own, its waker unknown)");
	fprintf(f, "#\n# events per type (in the streams of the threads they concern)\n%10s  %s\n", "Count", "Event");
	for (i = 0; i < r->nevents; i++)
		fprintf(f, "%10llu  %s\n", (unsigned long long)r->events[i].count, r->events[i].name);
	fprintf(f, "#\n# per thread\n%10s  %-40s %s\n", "Count", "Event", "Thread");
	for (i = 0; i < r->nby_thread && i < KREPORT_TEXT_ROWS; i++)
		fprintf(f, "%10llu  %-40s %s\n", (unsigned long long)r->by_thread[i].count, r->by_thread[i].event,
		        r->by_thread[i].what);
	fprintf(f, "#\n# per function running then\n%10s  %-40s %s\n", "Count", "Event", "Function");
	for (i = 0; i < r->nby_func && i < KREPORT_TEXT_ROWS; i++)
		fprintf(f, "%10llu  %-40s %s\n", (unsigned long long)r->by_func[i].count, r->by_func[i].event,
		        r->by_func[i].what);
	fprintf(f, "#\n# per system call under way\n%10s  %-40s %s\n", "Count", "Event", "Syscall");
	for (i = 0; i < r->nby_syscall && i < KREPORT_TEXT_ROWS; i++)
		fprintf(f, "%10llu  %-40s %s\n", (unsigned long long)r->by_syscall[i].count, r->by_syscall[i].event,
		        r->by_syscall[i].what);
	fprintf(f, "#\n# off-CPU time per reason (syscall, state) and who woke the thread\n");
	fprintf(f, "%12s %8s %12s %12s  %-5s %s\n", "Total", "Count", "Avg", "Max", "State", "Syscall / wakers");
	for (i = 0; i < r->nwaits; i++) {
		const struct klayer_wait *wt = &r->waits[i];

		dur(wt->total_ns, a, sizeof(a));
		dur(wt->count ? wt->total_ns / wt->count : 0, b, sizeof(b));
		dur(wt->max_ns, c, sizeof(c));
		fprintf(f, "%12s %8llu %12s %12s  %-5c %s\n", a, (unsigned long long)wt->count, b, c, wt->state,
		        wt->syscall[0]     ? wt->syscall
		        : wt->state == 'R' ? "(preempted)"
		                           : "(in its own code)");
		for (uint32_t k = 0; k < wt->nwakers; k++)
			fprintf(f, "%12s %8llu %12s %12s  %-5s   %s %s\n", "", (unsigned long long)wt->wakers[k].count,
			        "", "", "", wt->state == 'R' ? "preempted by" : "woken by", wt->wakers[k].who);
		if (wt->unknown_wakers)
			fprintf(f, "%12s %8llu %12s %12s  %-5s   woken by (no wake-up event seen)\n", "",
			        (unsigned long long)wt->unknown_wakers, "", "", "");
	}
	if (r->nblocks) {
		fprintf(f, "#\n# block requests per issuing syscall\n%8s %9s %12s %12s  %s\n", "Issued", "Completed",
		        "Avg", "Max", "Syscall");
		for (i = 0; i < r->nblocks; i++) {
			const struct klayer_block *bk = &r->blocks[i];

			dur(bk->completed ? bk->total_ns / bk->completed : 0, a, sizeof(a));
			dur(bk->max_ns, b, sizeof(b));
			fprintf(f, "%8llu %9llu %12s %12s  %s\n", (unsigned long long)bk->issued,
			        (unsigned long long)bk->completed, a, b, bk->syscall[0] ? bk->syscall : "(none)");
		}
	}
	others_text(f, r);
}

static void keyrows_json(struct json *j, const char *key, const char *what, const struct klayer_keyrow *rows, size_t n)
{
	json_array_begin(j, key);
	for (size_t i = 0; i < n; i++) {
		json_object_begin(j, NULL);
		json_str(j, "event", rows[i].event);
		json_str(j, what, rows[i].what);
		json_u64(j, "count", rows[i].count);
		json_object_end(j);
	}
	json_array_end(j);
}

void kreport_kernel_members(struct json *j, const struct walk *w, const struct klayer_result *r)
{
	char st[2] = "?";

	json_u64(j, "kernel_events", r->kernel_events);
	json_u64(j, "undecodable_kernel_events", r->undecodable);
	json_u64(j, "lost_events", w->lost);
	json_u64(j, "context_switches", r->switches);
	json_u64(j, "page_faults", r->faults);
	json_u64(j, "wakeups_given", r->wakeups);
	json_unpaired(j, r);
	json_array_begin(j, "events");
	for (size_t i = 0; i < r->nevents; i++) {
		json_object_begin(j, NULL);
		json_str(j, "event", r->events[i].name);
		json_u64(j, "count", r->events[i].count);
		json_object_end(j);
	}
	json_array_end(j);
	keyrows_json(j, "by_thread", "tid", r->by_thread, r->nby_thread);
	keyrows_json(j, "by_function", "function", r->by_func, r->nby_func);
	keyrows_json(j, "by_syscall", "syscall", r->by_syscall, r->nby_syscall);
	json_array_begin(j, "off_cpu");
	for (size_t i = 0; i < r->nwaits; i++) {
		const struct klayer_wait *wt = &r->waits[i];

		json_object_begin(j, NULL);
		json_str(j, "syscall", wt->syscall);
		st[0] = wt->state;
		json_str(j, "state", st);
		json_u64(j, "count", wt->count);
		json_u64(j, "total_ns", wt->total_ns);
		json_u64(j, "max_ns", wt->max_ns);
		json_u64(j, "unknown_wakers", wt->unknown_wakers);
		json_array_begin(j, "wakers");
		for (uint32_t k = 0; k < wt->nwakers; k++) {
			json_object_begin(j, NULL);
			json_str(j, "who", wt->wakers[k].who);
			json_u64(j, "count", wt->wakers[k].count);
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "block");
	for (size_t i = 0; i < r->nblocks; i++) {
		json_object_begin(j, NULL);
		json_str(j, "syscall", r->blocks[i].syscall);
		json_u64(j, "issued", r->blocks[i].issued);
		json_u64(j, "completed", r->blocks[i].completed);
		json_u64(j, "total_ns", r->blocks[i].total_ns);
		json_u64(j, "max_ns", r->blocks[i].max_ns);
		json_object_end(j);
	}
	json_array_end(j);
	others_json(j, r);
}

static void kernel_json(FILE *f, const struct walk *w, const struct klayer_result *r)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir ? w->dir : "");
	kreport_kernel_members(&j, w, r);
	json_object_end(&j);
	json_finish(&j);
}

int export_kernel_write(struct walk *w, bool layers, bool json, FILE *f)
{
	struct walk_ops ops = { 0 };
	struct klayer *kl = klayer_new(w);
	struct klayer_result r;
	int rc;

	if (!kl)
		return -ENOMEM;
	klayer_walk_ops(kl, &ops);
	rc = walk_run(w, &ops);
	if (!rc)
		rc = klayer_collect(kl, &r);
	if (rc) {
		klayer_free(kl);
		return rc < 0 ? rc : -ENOMEM;
	}
	if (layers && json)
		layers_json(f, w, &r);
	else if (layers)
		layers_text(f, w, &r);
	else if (json)
		kernel_json(f, w, &r);
	else
		kernel_text(f, w, &r);
	klayer_result_release(&r);
	klayer_free(kl);
	return ferror(f) ? -EIO : 0;
}
