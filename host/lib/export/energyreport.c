/* report --energy as text and JSON (see export/energyreport.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "host/lib/energy/powertrace.h"
#include "host/lib/export/energyreport.h"
#include "host/lib/util/json.h"

/* Digits after the point: joules to the nanojoule, watts to the microwatt. */
#define ENERGYREPORT_J_DECIMALS 9
#define ENERGYREPORT_W_DECIMALS 6

/* emodel_bind takes the ctrstats result's counter names as they are */
_Static_assert(CTRSTATS_NAME_MAX == EMODEL_NAME_MAX, "counter names of one size");

int energyreport_sort_parse(enum energystats_sort *sort, const char *arg)
{
	if (!strcmp(arg, "incl") || !strcmp(arg, "total"))
		*sort = ENERGYSTATS_SORT_INCL;
	else if (!strcmp(arg, "self"))
		*sort = ENERGYSTATS_SORT_SELF;
	else if (!strcmp(arg, "calls"))
		*sort = ENERGYSTATS_SORT_CALLS;
	else
		return -EINVAL;
	return 0;
}

static const char *sort_name(enum energystats_sort sort)
{
	return sort == ENERGYSTATS_SORT_SELF ? "self" : sort == ENERGYSTATS_SORT_CALLS ? "calls" : "incl";
}

/* The architecture a name means: the trace says layerprof's (x86_64,
 * aarch64, arm, generic), the model uname's machine (armv7l, arm64, ...). */
static const char *arch_family(const char *a)
{
	if (!strcmp(a, "arm64"))
		return "aarch64";
	if (!strncmp(a, "arm", 3) && strcmp(a, "aarch64"))
		return "arm";
	if (!strcmp(a, "amd64"))
		return "x86_64";
	return a;
}

bool energyreport_other_machine(const struct walk *w, const struct emodel *m, char *buf, size_t size)
{
	char arch[64], cpu[128];
	const char *ta = walk_meta(w, "arch", arch, sizeof(arch));
	const char *tc = walk_meta(w, "cpu", cpu, sizeof(cpu));

	/* "generic": layerprof built without an architecture's code, which
	 * says nothing of the machine */
	if (ta && *ta && strcmp(ta, "generic") && m->machine.arch[0] &&
	    strcmp(arch_family(ta), arch_family(m->machine.arch))) {
		snprintf(buf, size, "the model was made on %s (%s), the trace recorded on %s: its numbers may not hold",
		         m->machine.arch, m->machine.cpu[0] ? m->machine.cpu : "CPU unknown", ta);
		return true;
	}
	if (tc && *tc && m->machine.cpu[0] && strcmp(tc, m->machine.cpu)) {
		snprintf(buf, size, "the model was made on a %s, the trace recorded on a %s: its numbers may not hold",
		         m->machine.cpu, tc);
		return true;
	}
	return false;
}

/* The model's events as a --counters list. */
static void events_list(const struct emodel *m, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t t = 0; t < m->nterms && n < size; t++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", t ? "," : "", m->terms[t].name);
}

/* ------------------------------------------------------------ text */

static void text_model(FILE *f, const struct energyreport_opts *o, const struct energystats_result *er)
{
	const struct emodel *m = o->model;

	fprintf(f, "# model: '%s'", o->model_path ? o->model_path : "");
	if (m->source[0])
		fprintf(f, ", trained against %s", m->source);
	if (m->machine.host[0] || m->machine.arch[0])
		fprintf(f, " on %s (%s%s%s)", m->machine.host[0] ? m->machine.host : "a machine", m->machine.arch,
		        m->machine.cpu[0] ? ", " : "", m->machine.cpu);
	if (m->created[0])
		fprintf(f, ", %s", m->created);
	fprintf(f, "\n# watts = %.6g", m->c0.coef);
	for (uint32_t t = 0; t < m->nterms; t++)
		fprintf(f, " + %.6g * %s/s", m->terms[t].coef, m->terms[t].name);
	fprintf(f,
	        "\n# each thread's constant share is c0 / %u × its lifetime (the paper's division of the "
	        "constant among the CPUs)\n",
	        er->cpus);
}

static void text_energy(FILE *f, const struct energystats_energy *e)
{
	fprintf(f, " %14.6f %10.3f %14.6f", e->joules, e->watts, e->constant);
}

static void text_program(FILE *f, const struct energystats_result *er)
{
	fprintf(f, "\n## program (its first to its last event: %.6f s)\n", (double)(er->t1_ns - er->t0_ns) / 1e9);
	fprintf(f, "%-28s %14s %10s %14s\n", "", "Joules", "Watts", "Constant (J)");
	if (!er->has_program) {
		fprintf(f, "# no values\n");
		return;
	}
	fprintf(f, "%-28s", "estimated");
	text_energy(f, &er->program);
	fputc('\n', f);
	for (uint32_t i = 0; i < er->nmeasured; i++) {
		const struct energystats_measured *x = &er->measured[i];
		char who[64];

		snprintf(who, sizeof(who), "measured (%s)", x->source);
		fprintf(f, "%-28.28s %14.6f %10.3f %14s  estimate's error %+.2f%%\n", who, x->joules, x->watts, "",
		        x->error_pct);
	}
	fprintf(f, "%-28s %14.6f %10.3f %14.6f\n", "the threads together", er->threads.joules, er->threads.watts,
	        er->threads.constant);
	/* negative when more threads than CPUs lived at once: their shares of
	 * the constant add up to more than the machine's */
	fprintf(f, "%-28s %14.6f %10s %14.6f  %s\n", "difference", er->program.joules - er->threads.joules, "",
	        er->rest_constant,
	        er->rest_constant >= 0 ? "the constant of CPUs no thread of the program used"
	                               : "the constant counted more than once: more threads than CPUs lived at once");
	if (er->rest_events != 0)
		fprintf(f,
		        "# of the difference, %.6f J are counts of the program in no thread's values (before a "
		        "thread's first record or after its END, children, threads not counted)\n",
		        er->rest_events);
}

static void text_cpus(FILE *f, const struct energystats_result *er)
{
	if (!er->ncpus)
		return;
	fprintf(f, "\n## per CPU (the program's counts on it; the constant: c0 / %u × the program's span)\n", er->cpus);
	fprintf(f, "%5s %14s %10s %14s\n", "CPU", "Joules", "Watts", "Constant (J)");
	for (uint32_t i = 0; i < er->ncpus; i++) {
		fprintf(f, "%5u", er->cpus_rows[i].c->cpu);
		text_energy(f, &er->cpus_rows[i].e);
		fputc('\n', f);
	}
}

static void text_threads(FILE *f, const struct energystats_result *er)
{
	fprintf(f, "\n## threads (the constant: c0 / %u × the thread's lifetime, its first to last event)\n", er->cpus);
	fprintf(f, "%8s %8s %-16s %12s %14s %10s %14s\n", "PID", "TID", "Comm", "Lifetime (s)", "Joules", "Watts",
	        "Constant (J)");
	for (uint32_t i = 0; i < er->nthreads; i++) {
		const struct energystats_thread_row *r = &er->threads_rows[i];

		fprintf(f, "%8u %8u %-16s %12.6f", r->t->s->pid, r->t->s->tid, r->t->s->comm, (double)r->e.ns / 1e9);
		text_energy(f, &r->e);
		fputc('\n', f);
	}
}

static void text_functions(FILE *f, const struct energyreport_opts *o, const struct energystats_result *er)
{
	fprintf(f,
	        "\n## functions (inclusive: from entry to exit; self: less the direct callees; the constant: c0 / "
	        "%u × the time; sorted by %s)\n",
	        er->cpus, sort_name(o->sort));
	fprintf(f, "%10s %14s %10s %12s %14s %10s %12s  %sFunction\n", "Calls", "Incl (J)", "Incl (W)", "Incl (s)",
	        "Self (J)", "Self (W)", "Self (s)", o->per_thread ? "TID     " : "");
	if (!er->nfns)
		fprintf(f, "# no function has counter values\n");
	for (size_t i = 0; i < er->nfns; i++) {
		const struct energystats_fn_row *r = &er->fns[i];

		fprintf(f, "%10" PRIu64 " %14.6f %10.3f %12.6f %14.6f %10.3f %12.6f  ", r->fn->calls, r->incl.joules,
		        r->incl.watts, (double)r->incl.ns / 1e9, r->self.joules, r->self.watts,
		        (double)r->self.ns / 1e9);
		if (o->per_thread)
			fprintf(f, "%-6u  ", r->fn->tid);
		fprintf(f, "%s\n", r->fn->name);
	}
}

static void text_limits(FILE *f, const struct walk *w, const struct ctrstats *st, const struct energystats *es)
{
	if (st->unwound)
		fprintf(f,
		        "# %" PRIu64
		        " calls left by a longjmp: no counts of their own, their callers' self holds them\n",
		        st->unwound);
	if (es->untimed_rows)
		fprintf(f,
		        "# %" PRIu64 " functions have counts and no time (left out by a filter): the constant "
		        "has no share in them\n",
		        es->untimed_rows);
	if (st->deep_dropped || es->deep_dropped)
		fprintf(f, "# calls deeper than %u: left out\n", CTRSTATS_DEPTH_MAX);
	if (st->fns_dropped || es->fns_dropped)
		fprintf(f, "# calls of functions over the first %u: left out\n", CTRSTATS_FUNCS_MAX);
	if (st->threads_dropped || es->threads_dropped)
		fprintf(f, "# threads over the first %u: left out\n", CTRSTATS_THREADS_MAX);
	if (w->lost)
		fprintf(f, "# %" PRIu64 " events lost: the numbers are incomplete\n", w->lost);
	if (w->r.lost_cause[0])
		fprintf(f, "# %s\n", w->r.lost_cause);
}

static void write_text(FILE *f, struct walk *w, const struct energyreport_opts *o, const struct ctrstats *st,
                       const struct energystats *es, const struct ctrstats_result *res,
                       const struct energystats_result *er)
{
	char buf[512], scope[16];

	fprintf(f, "# layerprof report --energy: %u threads, %zu functions, %" PRIu64 " events lost\n", er->nthreads,
	        er->nfns, w->lost);
	text_model(f, o, er);
	if (energyreport_other_machine(w, o->model, buf, sizeof(buf)))
		fprintf(f, "# warning: %s\n", buf);
	if (walk_meta(w, "counters.scope", scope, sizeof(scope)) && !strcmp(scope, "user"))
		fprintf(f,
		        "# counted in user space only (perf_event_paranoid): the kernel's part of the events is left "
		        "out\n");
	if (walk_meta(w, "counters.read", scope, sizeof(scope)) && !strcmp(scope, "none"))
		fprintf(f, "# no values at function entry and exit (counters.read=none): no energy per function\n");
	if (res->ncpus && res->ncpus != er->cpus)
		fprintf(
		    f, "# the trace has values of %u CPUs, the model's machine had %u: the constant is divided by %u\n",
		    res->ncpus, er->cpus, er->cpus);
	if (!res->from_process && res->has_program)
		fprintf(f, "# no program totals in the trace: the program is the sum of its threads\n");
	text_program(f, er);
	text_cpus(f, er);
	text_threads(f, er);
	text_functions(f, o, er);
	text_limits(f, w, st, es);
}

/* ------------------------------------------------------------ JSON */

static void json_energy(struct json *j, const char *key, const struct energystats_energy *e)
{
	json_object_begin(j, key);
	json_u64(j, "ns", e->ns);
	json_fixed(j, "joules", e->joules, ENERGYREPORT_J_DECIMALS);
	json_fixed(j, "constant_joules", e->constant, ENERGYREPORT_J_DECIMALS);
	json_fixed(j, "event_joules", e->joules - e->constant, ENERGYREPORT_J_DECIMALS);
	if (e->ns)
		json_fixed(j, "watts", e->watts, ENERGYREPORT_W_DECIMALS);
	else
		json_null(j, "watts");
	json_object_end(j);
}

static void json_model(struct json *j, const struct energyreport_opts *o, const struct energystats_result *er)
{
	const struct emodel *m = o->model;

	json_object_begin(j, "model");
	json_str(j, "file", o->model_path ? o->model_path : "");
	json_str(j, "source", m->source);
	json_str(j, "created", m->created);
	json_object_begin(j, "machine");
	json_str(j, "arch", m->machine.arch);
	json_str(j, "cpu", m->machine.cpu);
	json_str(j, "host", m->machine.host);
	json_u64(j, "cpus", m->machine.cpus);
	json_object_end(j);
	json_f64(j, "const", m->c0.coef);
	json_array_begin(j, "terms");
	for (uint32_t t = 0; t < m->nterms; t++) {
		json_object_begin(j, NULL);
		json_str(j, "event", m->terms[t].name);
		json_f64(j, "coef", m->terms[t].coef);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
	json_u64(j, "cpus", er->cpus);
}

static void json_program(struct json *j, const struct energystats_result *er)
{
	if (!er->has_program) {
		json_null(j, "program");
		return;
	}
	json_object_begin(j, "program");
	json_u64(j, "first_ns", er->t0_ns);
	json_u64(j, "last_ns", er->t1_ns);
	json_energy(j, "estimated", &er->program);
	json_array_begin(j, "measured");
	for (uint32_t i = 0; i < er->nmeasured; i++) {
		const struct energystats_measured *x = &er->measured[i];

		json_object_begin(j, NULL);
		json_str(j, "source", x->source);
		json_fixed(j, "joules", x->joules, ENERGYREPORT_J_DECIMALS);
		json_fixed(j, "watts", x->watts, ENERGYREPORT_W_DECIMALS);
		json_fixed(j, "error_pct", x->error_pct, 3);
		json_object_end(j);
	}
	json_array_end(j);
	json_energy(j, "threads", &er->threads);
	json_object_begin(j, "difference");
	json_fixed(j, "joules", er->program.joules - er->threads.joules, ENERGYREPORT_J_DECIMALS);
	json_fixed(j, "constant_joules", er->rest_constant, ENERGYREPORT_J_DECIMALS);
	json_fixed(j, "event_joules", er->rest_events, ENERGYREPORT_J_DECIMALS);
	json_object_end(j);
	json_object_end(j);
}

static void write_json(FILE *f, struct walk *w, const struct energyreport_opts *o, const struct ctrstats_result *res,
                       const struct energystats *es, const struct energystats_result *er)
{
	struct json j;
	char buf[512];
	uint32_t i;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir ? w->dir : "");
	json_u64(&j, "lost_events", w->lost);
	json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
	json_model(&j, o, er);
	json_array_begin(&j, "warnings");
	if (energyreport_other_machine(w, o->model, buf, sizeof(buf)))
		json_str(&j, NULL, buf);
	json_array_end(&j);
	json_str(&j, "program_source", res->from_process ? "process" : "threads");
	json_program(&j, er);
	json_array_begin(&j, "per_cpu");
	for (i = 0; i < er->ncpus; i++) {
		json_object_begin(&j, NULL);
		json_u64(&j, "cpu", er->cpus_rows[i].c->cpu);
		json_energy(&j, "estimated", &er->cpus_rows[i].e);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "threads");
	for (i = 0; i < er->nthreads; i++) {
		const struct energystats_thread_row *r = &er->threads_rows[i];

		json_object_begin(&j, NULL);
		json_u64(&j, "pid", r->t->s->pid);
		json_u64(&j, "tid", r->t->s->tid);
		json_str(&j, "comm", r->t->s->comm);
		json_u64(&j, "first_ns", r->t->s->first_ns);
		json_u64(&j, "last_ns", r->t->s->last_ns);
		json_energy(&j, "estimated", &r->e);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_str(&j, "sort", sort_name(o->sort));
	json_array_begin(&j, "functions");
	for (size_t r = 0; r < er->nfns; r++) {
		const struct energystats_fn_row *fn = &er->fns[r];

		json_object_begin(&j, NULL);
		json_str(&j, "name", fn->fn->name);
		json_u64(&j, "calls", fn->fn->calls);
		if (o->per_thread) {
			json_u64(&j, "tid", fn->fn->tid);
			json_u64(&j, "pid", fn->fn->pid);
		}
		json_energy(&j, "inclusive", &fn->incl);
		json_energy(&j, "self", &fn->self);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_u64(&j, "untimed_functions", es->untimed_rows);
	json_object_end(&j);
	json_finish(&j);
}

/* ------------------------------------------------------------ the pass */

/* The meters' energy over the program's span, when the trace has samples. */
static void measured_add(struct powertrace *pt, const struct walk *w, struct energystats_result *er)
{
	if (!powertrace_finish(pt, w))
		return;
	for (uint32_t s = 0; s < pt->nsources; s++) {
		double joules = powertrace_joules(pt, s, er->t0_ns, er->t1_ns);

		if (joules >= 0)
			energystats_measured_add(er, pt->names[s], joules);
	}
}

int energyreport_write(struct walk *w, const struct energyreport_opts *o, FILE *f, char *err, size_t errlen)
{
	struct walk_ops ops = { 0 }, eops = { 0 }, pops = { 0 };
	struct ctrstats_order order;
	struct ctrstats st;
	struct energystats es;
	struct powertrace pt;
	struct ctrstats_result res = { 0 };
	struct energystats_result er = { 0 };
	uint32_t map[EMODEL_TERMS_MAX];
	char need[512];
	int r;

	ctrstats_init(&st, w, o->per_thread ? CTRSTATS_PER_THREAD : 0);
	energystats_init(&es, w, o->per_thread ? ENERGYSTATS_PER_THREAD : 0);
	powertrace_init(&pt);
	ctrstats_walk_ops(&st, &ops);
	energystats_walk_ops(&es, &eops);
	powertrace_walk_ops(&pt, &pops);
	walk_chain(&ops, &eops);
	walk_chain(&ops, &pops);
	r = walk_run(w, &ops);
	if (r || st.oom || es.oom) {
		r = r ? r : -ENOMEM;
		goto out;
	}
	if (!w->counter_events) {
		snprintf(err, errlen, "the trace '%s' was not recorded with --counters", w->dir ? w->dir : "");
		r = -ENODATA;
		goto out;
	}
	ctrstats_order_default(&order);
	r = ctrstats_collect(&st, &order, &res, err, errlen);
	if (r)
		goto out;
	r = emodel_bind(o->model, (const char(*)[EMODEL_NAME_MAX])res.names, res.n, map, err, errlen);
	if (r) {
		size_t n = strlen(err);

		events_list(o->model, need, sizeof(need));
		snprintf(err + n, n < errlen ? errlen - n : 0, " (record it with --counters=%s)", need);
		r = -ENOENT;
		goto out;
	}
	r = energystats_collect(&es, o->model, map, &res, o->sort, &er);
	if (r)
		goto out;
	measured_add(&pt, w, &er);
	if (o->fmt == EXPORT_REPORT_JSON)
		write_json(f, w, o, &res, &es, &er);
	else
		write_text(f, w, o, &st, &es, &res, &er);
	if (ferror(f))
		r = -EIO;
out:
	energystats_result_release(&er);
	ctrstats_result_release(&res);
	powertrace_release(&pt);
	energystats_release(&es);
	ctrstats_release(&st);
	return r;
}
