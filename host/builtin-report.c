/* layerprof report: the flat profile, per function (optionally per thread):
 * calls, total (inclusive, recursion counted once), self, avg, min, max. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/builtin.h"
#include "host/lib/json.h"
#include "host/lib/symbolizer.h"
#include "host/lib/walk.h"

#define REPORT_FUNCS_MAX (1u << 24)

static const char report_usage[] =
    "usage: layerprof report [options] [<trace dir>]\n"
    "\n"
    "Flat profile of a trace (default "
    "layerprof.data"
    "): per function its calls and\n"
    "total (inclusive), self, average, minimum and maximum time per call.\n"
    "\n"
    "  -s, --sort KEYS       sort by total, self, calls, avg, min, max or name;\n"
    "                        comma-separated, first key first (default total)\n"
    "  -t, --per-thread      one row per function and thread\n"
    "      --format FMT      text (default) or json\n" FILTER_HELP "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 trace missing, empty, damaged or of another version.\n";

/* One function's numbers in one stream, keyed by address. */
struct fstat {
	uint64_t addr;
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns;
	uint32_t active; /* activations open now: recursion counts total once */
	uint32_t used;
};

struct rstream {
	struct fstat *tab;
	uint32_t cap, n;
	uint64_t *child_ns; /* per depth: time spent in callees so far */
	uint32_t child_cap;
};

/* A row of the output: functions merged by name (and thread). */
struct row {
	char *name;
	const char *file;
	unsigned line;
	uint32_t tid, pid;
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns;
};

enum sort_key { SORT_TOTAL, SORT_SELF, SORT_CALLS, SORT_AVG, SORT_MIN, SORT_MAX, SORT_NAME };

struct report {
	struct walk w;
	bool per_thread;
	int nkeys;
	enum sort_key keys[8];
	int oom;
};

static struct fstat *fstat_get(struct report *rp, struct rstream *rs, uint64_t addr)
{
	uint32_t h, i;

	if (rs->n * 2 >= rs->cap) {
		uint32_t cap = rs->cap ? rs->cap * 2 : 256;
		struct fstat *n;

		if (cap > REPORT_FUNCS_MAX || !(n = calloc(cap, sizeof(*n)))) {
			rp->oom = 1;
			return NULL;
		}
		for (i = 0; i < rs->cap; i++) {
			if (!rs->tab[i].used)
				continue;
			h = (uint32_t)((rs->tab[i].addr * 0x9e3779b97f4a7c15ull) >> 40) & (cap - 1);
			while (n[h].used)
				h = (h + 1) & (cap - 1);
			n[h] = rs->tab[i];
		}
		free(rs->tab);
		rs->tab = n;
		rs->cap = cap;
	}
	h = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & (rs->cap - 1);
	while (rs->tab[h].used) {
		if (rs->tab[h].addr == addr)
			return &rs->tab[h];
		h = (h + 1) & (rs->cap - 1);
	}
	rs->tab[h].used = 1;
	rs->tab[h].addr = addr;
	rs->tab[h].min_ns = UINT64_MAX;
	rs->n++;
	return &rs->tab[h];
}

static void on_begin(void *ctx, struct walk_stream *s)
{
	struct report *rp = ctx;

	s->user = calloc(1, sizeof(struct rstream));
	if (!s->user)
		rp->oom = 1;
}

static uint64_t *child_slot(struct report *rp, struct rstream *rs, uint32_t depth)
{
	if (depth >= rs->child_cap) {
		uint32_t cap = rs->child_cap ? rs->child_cap : 64;
		uint64_t *n;

		while (cap <= depth)
			cap *= 2;
		n = realloc(rs->child_ns, cap * sizeof(*n));
		if (!n) {
			rp->oom = 1;
			return NULL;
		}
		rs->child_ns = n;
		rs->child_cap = cap;
	}
	return &rs->child_ns[depth];
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct report *rp = ctx;
	struct rstream *rs = s->user;
	uint64_t *c;
	struct fstat *f;

	if (!rs || !(c = child_slot(rp, rs, depth)))
		return;
	*c = 0;
	if (flags & FILTER_INHERITED)
		return; /* entered in the parent process, not a call here */
	f = fstat_get(rp, rs, addr);
	if (!f)
		return;
	f->calls++;
	f->active++;
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct report *rp = ctx;
	struct rstream *rs = s->user;
	uint64_t dur = ns - entry_ns, self;
	struct fstat *f;

	if (!rs || depth >= rs->child_cap)
		return;
	self = dur > rs->child_ns[depth] ? dur - rs->child_ns[depth] : 0;
	if (depth)
		rs->child_ns[depth - 1] += dur;
	if (flags & FILTER_INHERITED)
		return;
	f = fstat_get(rp, rs, addr);
	if (!f)
		return;
	if (f->active)
		f->active--;
	if (!f->active)
		f->total_ns += dur;
	f->self_ns += self;
	f->sum_ns += dur;
	if (dur < f->min_ns)
		f->min_ns = dur;
	if (dur > f->max_ns)
		f->max_ns = dur;
}

static uint64_t key_value(const struct row *r, enum sort_key k)
{
	switch (k) {
	case SORT_TOTAL:
		return r->total_ns;
	case SORT_SELF:
		return r->self_ns;
	case SORT_CALLS:
		return r->calls;
	case SORT_AVG:
		return r->calls ? r->sum_ns / r->calls : 0;
	case SORT_MIN:
		return r->min_ns;
	case SORT_MAX:
		return r->max_ns;
	default:
		return 0;
	}
}

static const struct report *sort_ctx;

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
	int i, c;

	for (i = 0; i < sort_ctx->nkeys; i++) {
		enum sort_key k = sort_ctx->keys[i];

		if (k == SORT_NAME) {
			c = strcmp(x->name, y->name);
			if (c)
				return c;
			continue;
		}
		if (key_value(x, k) != key_value(y, k))
			return key_value(x, k) > key_value(y, k) ? -1 : 1;
	}
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Merges the per-stream tables into rows, by name (and thread). */
static struct row **collect_rows(struct report *rp, size_t *nrows)
{
	struct walk *w = &rp->w;
	struct row **rows = NULL, *r;
	size_t n = 0, cap = 0, hcap = 1024, i;
	size_t *hash = calloc(hcap, sizeof(*hash));
	uint32_t si, j;

	if (!hash)
		return NULL;
	for (si = 0; si < w->nstreams; si++) {
		struct walk_stream *s = w->streams[si];
		struct rstream *rs = s->user;

		if (!rs)
			continue;
		for (j = 0; j < rs->cap; j++) {
			struct fstat *f = &rs->tab[j];
			char buf[1024];
			struct symbol sym;
			uint64_t h = 1469598103934665603ull;
			const char *p, *name;

			if (!f->used || !f->calls)
				continue;
			name = walk_name(w, s->image, f->addr, buf, sizeof(buf));
			for (p = name; *p; p++)
				h = (h ^ (unsigned char)*p) * 1099511628211ull;
			if (rp->per_thread)
				h ^= (uint64_t)s->tid * 0x9e3779b97f4a7c15ull;
			i = (size_t)(h % hcap);
			while (hash[i]) {
				r = rows[hash[i] - 1];
				if (!strcmp(r->name, name) && (!rp->per_thread || r->tid == s->tid))
					break;
				i = (i + 1) % hcap;
			}
			if (hash[i]) {
				r = rows[hash[i] - 1];
			} else {
				if (n == cap) {
					struct row **nr;

					cap = cap ? 2 * cap : 256;
					nr = realloc(rows, cap * sizeof(*nr));
					if (!nr)
						goto nomem;
					rows = nr;
				}
				r = calloc(1, sizeof(*r));
				if (!r || !(r->name = strdup(name)))
					goto nomem;
				r->min_ns = UINT64_MAX;
				r->tid = s->tid;
				r->pid = s->pid;
				if (!symbolizer_lookup(w->sym, s->image, f->addr, &sym)) {
					r->file = sym.file;
					r->line = sym.line;
				}
				rows[n++] = r;
				hash[i] = n;
				if (n * 2 > hcap) {
					size_t k, *nh = calloc(hcap * 2, sizeof(*nh));

					if (!nh)
						goto nomem;
					hcap *= 2;
					for (k = 0; k < n; k++) {
						uint64_t hh = 1469598103934665603ull;

						for (p = rows[k]->name; *p; p++)
							hh = (hh ^ (unsigned char)*p) * 1099511628211ull;
						if (rp->per_thread)
							hh ^= (uint64_t)rows[k]->tid * 0x9e3779b97f4a7c15ull;
						i = (size_t)(hh % hcap);
						while (nh[i])
							i = (i + 1) % hcap;
						nh[i] = k + 1;
					}
					free(hash);
					hash = nh;
				}
			}
			r->calls += f->calls;
			r->total_ns += f->total_ns;
			r->self_ns += f->self_ns;
			r->sum_ns += f->sum_ns;
			if (f->min_ns < r->min_ns)
				r->min_ns = f->min_ns;
			if (f->max_ns > r->max_ns)
				r->max_ns = f->max_ns;
		}
	}
	free(hash);
	sort_ctx = rp;
	if (n)
		qsort(rows, n, sizeof(*rows), row_cmp);
	*nrows = n;
	return rows ? rows : calloc(1, sizeof(*rows));
nomem:
	free(hash);
	rp->oom = 1;
	*nrows = n;
	return rows;
}

static void print_text(struct report *rp, struct row **rows, size_t n)
{
	struct walk *w = &rp->w;
	char a[32], b[32], c[32], d[32], e[32];
	uint64_t calls = 0;
	size_t i;

	for (i = 0; i < w->nstreams; i++)
		calls += w->streams[i]->calls;
	printf("# layerprof report: %llu calls, %zu functions, %u threads, %llu events lost\n",
	       (unsigned long long)calls, n, w->nstreams, (unsigned long long)w->lost);
	if (w->filtered_at_record)
		printf("# recorded with filters: calls outside them are not in this trace\n");
	printf("#\n");
	printf("%12s %12s %10s %12s %12s %12s  %s%s\n", "Total", "Self", "Calls", "Avg", "Min", "Max",
	       rp->per_thread ? "TID     " : "", "Function");
	printf("%12s %12s %10s %12s %12s %12s  %s%s\n", "==========", "==========", "========", "==========",
	       "==========", "==========", rp->per_thread ? "======  " : "", "========");
	for (i = 0; i < n; i++) {
		const struct row *r = rows[i];

		printf("%12s %12s %10llu %12s %12s %12s  ", format_duration(r->total_ns, a, sizeof(a)),
		       format_duration(r->self_ns, b, sizeof(b)), (unsigned long long)r->calls,
		       format_duration(r->calls ? r->sum_ns / r->calls : 0, c, sizeof(c)),
		       format_duration(r->min_ns, d, sizeof(d)), format_duration(r->max_ns, e, sizeof(e)));
		if (rp->per_thread)
			printf("%-6u  ", r->tid);
		printf("%s\n", r->name);
	}
	if (w->lost)
		printf("\n# %llu events lost: the profile is incomplete\n", (unsigned long long)w->lost);
}

static void print_json(struct report *rp, struct row **rows, size_t n)
{
	struct walk *w = &rp->w;
	struct json j;
	uint32_t i;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_str(&j, "trace", w->dir);
	json_u64(&j, "lost_events", w->lost);
	json_u64(&j, "events", w->events);
	json_bool(&j, "complete", w->r.state == READER_OK && w->r.seen_end);
	json_bool(&j, "filtered_at_record", w->filtered_at_record);
	json_array_begin(&j, "threads");
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		json_object_begin(&j, NULL);
		json_u64(&j, "pid", s->pid);
		json_u64(&j, "tid", s->tid);
		json_u64(&j, "image", s->image);
		json_str(&j, "comm", s->comm);
		json_u64(&j, "calls", s->calls);
		json_u64(&j, "lost_events", s->lost);
		if (s->parent_pid)
			json_u64(&j, "parent_pid", s->parent_pid);
		json_bool(&j, "after_exec", s->after_exec);
		if (s->exited)
			json_u64(&j, "exit_status", s->status);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "functions");
	for (i = 0; i < n; i++) {
		const struct row *r = rows[i];

		json_object_begin(&j, NULL);
		json_str(&j, "name", r->name);
		json_u64(&j, "calls", r->calls);
		json_u64(&j, "total_ns", r->total_ns);
		json_u64(&j, "self_ns", r->self_ns);
		json_u64(&j, "avg_ns", r->calls ? r->sum_ns / r->calls : 0);
		json_u64(&j, "min_ns", r->min_ns == UINT64_MAX ? 0 : r->min_ns);
		json_u64(&j, "max_ns", r->max_ns);
		if (rp->per_thread) {
			json_u64(&j, "tid", r->tid);
			json_u64(&j, "pid", r->pid);
		}
		if (r->file) {
			json_str(&j, "file", r->file);
			json_u64(&j, "line", r->line);
		}
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

static int parse_sort(struct report *rp, const char *arg)
{
	static const char *const names[] = { "total", "self", "calls", "avg", "min", "max", "name" };
	char buf[256], *tok, *save = NULL;
	size_t i;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	rp->nkeys = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == sizeof(names) / sizeof(names[0]) || rp->nkeys == 8)
			return -1;
		rp->keys[rp->nkeys++] = (enum sort_key)i;
	}
	return rp->nkeys ? 0 : -1;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "per-thread", no_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct walk_ops ops = { .begin = on_begin, .entry = on_entry, .exit = on_exit_ev };
	struct report rp = { .nkeys = 1, .keys = { SORT_TOTAL } };
	struct filter_opts fopts = { 0 };
	const char *dir = "layerprof.data";
	struct row **rows;
	bool json = false;
	char err[512];
	size_t n = 0, i;
	int c, r, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:thF:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_sort(&rp, optarg)) {
				fprintf(stderr,
				        "layerprof report: invalid --sort '%s': use total, self, calls, avg, min, "
				        "max, name\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case 't':
			rp.per_thread = true;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "layerprof report: invalid --format '%s': text or json\n", optarg);
				return LP_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'h':
			fputs(report_usage, stdout);
			return LP_EXIT_OK;
		default:
			r = filter_opts_parse(&fopts, c, optarg, "report");
			if (r == 1)
				break;
			if (r == 0)
				fputs(report_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind < argc)
		dir = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "layerprof report: one trace at a time ('%s' is extra)\n", argv[optind]);
		return LP_EXIT_USAGE;
	}
	r = walk_open(&rp.w, dir, &fopts, err, sizeof(err));
	if (r) {
		fprintf(stderr, "layerprof report: %s\n", err);
		return r == -ENOMEM ? LP_EXIT_FAILURE : LP_EXIT_TRACE;
	}
	ops.ctx = &rp;
	if (walk_run(&rp.w, &ops) || rp.oom) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", dir);
		walk_release(&rp.w);
		return LP_EXIT_FAILURE;
	}
	code = walk_report_condition(&rp.w, "report");
	rows = collect_rows(&rp, &n);
	if (rp.oom || !rows) {
		fprintf(stderr, "layerprof report: out of memory reading '%s'\n", dir);
		code = LP_EXIT_FAILURE;
	} else if (json) {
		print_json(&rp, rows, n);
	} else {
		print_text(&rp, rows, n);
	}
	for (i = 0; i < n; i++) {
		free(rows[i]->name);
		free(rows[i]);
	}
	free(rows);
	for (i = 0; i < rp.w.nstreams; i++) {
		struct rstream *rs = rp.w.streams[i]->user;

		if (rs) {
			free(rs->tab);
			free(rs->child_ns);
			free(rs);
		}
	}
	walk_release(&rp.w);
	return code;
}
