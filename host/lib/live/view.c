/* Drawing the live profile: text in place, plain snapshots, or JSON (see
 * live/view.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/systab.h"
#include "host/lib/analysis/profile.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/live/view.h"
#include "host/lib/util/options.h"

#define TABLE_FIXED_COLS 66 /* width of the numbers before the name */
#define PATHS_FIXED_COLS 38 /* width of the numbers before a path */

static const char *const mode_names[] = { "flat", "paths", "syscalls", "memory", "layers" };

static void json_layers(struct json *j, const struct liveview_info *in);

void liveview_init(struct liveview *v, bool json, bool tty)
{
	v->json = json;
	v->tty = tty && !json;
}

void liveview_clear(const struct liveview *v)
{
	if (v->tty)
		fputs("\033[H\033[2J", stdout);
}

const char *liveview_describe_status(int status, char *buf, size_t size)
{
	if (status < 0)
		snprintf(buf, size, "ended (exit status unknown)");
	else if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "was killed by signal %d (%s)%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
		         WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "ended with wait status %d", status);
	return buf;
}

const char *liveview_when(uint64_t first_ns, uint64_t ns, char *buf, size_t size)
{
	char d[32];

	if (!ns)
		snprintf(buf, size, "an unknown time");
	else if (first_ns && ns >= first_ns)
		snprintf(buf, size, "+%s", options_format_duration(ns - first_ns, d, sizeof(d)));
	else
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	return buf;
}

const char *liveview_mode_name(enum liveview_mode mode)
{
	return (unsigned)mode < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[mode] : "flat";
}

int liveview_mode_parse(const char *name, enum liveview_mode *mode)
{
	unsigned i;

	if (!strcmp(name, "mem")) {
		*mode = LIVEVIEW_MEMORY;
		return 0;
	}
	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (!strcmp(name, mode_names[i])) {
			*mode = (enum liveview_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static void json_paths(struct json *j, const struct liveview_info *in, const struct livepaths_rows *paths)
{
	size_t i;

	json_str(j, "view", liveview_mode_name(in->mode));
	if (in->mode != LIVEVIEW_PATHS)
		return;
	if (in->filtered || !in->paths) {
		json_null(j, "paths");
		json_str(j, "paths_hidden", LIVEVIEW_FILTERED_WHY);
		return;
	}
	json_u64(j, "path_nodes", in->paths->n);
	json_u64(j, "paths_folded_calls", in->paths->folded);
	json_array_begin(j, "paths");
	for (i = 0; i < paths->n; i++) {
		const struct livepaths_row *r = &paths->row[i];

		json_object_begin(j, NULL);
		json_str(j, "path", r->path);
		json_u64(j, "depth", r->depth);
		json_u64(j, "calls", r->calls);
		json_u64(j, "total_ns", r->total_ns);
		json_u64(j, "self_ns", r->self_ns);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_udp(struct json *j, const struct liveudp *u)
{
	if (!u) {
		json_null(j, "udp");
		return;
	}
	json_object_begin(j, "udp");
	json_u64(j, "datagrams", u->datagrams);
	json_u64(j, "lost_datagrams", liveudp_lost_datagrams(u));
	json_u64(j, "late_datagrams", u->late);
	json_u64(j, "bad_datagrams", u->bad);
	json_u64(j, "events", u->events);
	json_u64(j, "sent_events", u->sent_events);
	json_u64(j, "lost_events", liveudp_lost_events(u));
	json_u64(j, "rcvbuf", (uint64_t)u->rcvbuf);
	json_object_end(j);
}

/* The syscalls, as `report --syscalls --format json` gives them. */
static void json_syscalls(struct json *j, const struct liveview_info *in, const struct sysstats_result *sys)
{
	if (in->sys_backend && in->sys_backend[0])
		json_str(j, "syscall_backend", in->sys_backend);
	else
		json_null(j, "syscall_backend");
	json_u64(j, "syscall_calls", in->sys ? in->sys->calls : 0);
	json_u64(j, "syscall_errors", in->sys ? in->sys->errors : 0);
	sysstats_json(j, sys, false);
	json_layers(j, in);
}

static void draw_json(struct liveview *v, const struct liveview_info *in, const struct profile_rows *rows,
                      const struct livepaths_rows *paths, const struct sysstats_result *sys)
{
	struct json *j = &v->j;
	size_t i;

	json_init(j, stdout);
	json_object_begin(j, NULL);
	json_u64(j, "time_ns", in->elapsed_ns);
	json_bool(j, "final", in->final);
	json_str(j, "agent", or_empty(in->agent));
	json_str(j, "agent_caps", or_empty(in->caps));
	json_u64(j, "session", in->session);
	json_u64(j, "pid", in->pid);
	json_bool(j, "tracing", in->tracing);
	json_u64(j, "events", in->events);
	json_u64(j, "chunks", in->chunks);
	json_u64(j, "lost_events", in->lost);
	if (in->lost_at_ns)
		json_u64(j, "lost_at_ns", in->lost_at_ns);
	else
		json_null(j, "lost_at_ns");
	json_bool(j, "filtered", in->filtered);
	json_str(j, "filters", or_empty(in->filters));
	if (in->saving && in->saving[0])
		json_str(j, "saving", in->saving);
	else
		json_null(j, "saving");
	json_array_begin(j, "exited");
	for (i = 0; i < in->nexits; i++) {
		int st = in->exits[i].status;

		json_object_begin(j, NULL);
		json_u64(j, "pid", in->exits[i].pid);
		json_i64(j, "status", st);
		if (st >= 0 && WIFEXITED(st))
			json_u64(j, "exit_code", (uint64_t)WEXITSTATUS(st));
		else if (st >= 0 && WIFSIGNALED(st))
			json_u64(j, "signal", (uint64_t)WTERMSIG(st));
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "functions");
	for (i = 0; i < rows->n; i++) {
		const struct profile_row *r = &rows->row[i];

		json_object_begin(j, NULL);
		json_str(j, "name", r->name);
		json_u64(j, "calls", r->calls);
		json_u64(j, "total_ns", r->total_ns);
		if (in->filtered)
			json_null(j, "self_ns");
		else
			json_u64(j, "self_ns", r->self_ns);
		json_u64(j, "avg_ns", profile_row_avg(r));
		json_u64(j, "min_ns", r->min_ns == UINT64_MAX ? 0 : r->min_ns);
		json_u64(j, "max_ns", r->max_ns);
		json_object_end(j);
	}
	json_array_end(j);
	json_udp(j, in->udp);
	json_paths(j, in, paths);
	json_syscalls(j, in, sys);
	if (in->mem)
		livemem_json(in->mem, j);
	else
		json_null(j, "memory");
	json_object_end(j);
	json_finish(j);
}

/* The lines above the table: connection, state, counts, messages. */
static void draw_header(const struct liveview_info *in, uint64_t first_ns, const char *eol)
{
	char a[32], b[64], what[160];
	size_t i;

	printf("layerprof live  %s  session %" PRIu32 "  pid %" PRIu32 "  %s%s", or_empty(in->peer), in->session,
	       in->pid, options_format_duration(in->elapsed_ns, a, sizeof(a)), eol);
	printf("tracing %s  %" PRIu64 " events  %" PRIu64 " chunks", in->tracing ? "on" : "off", in->events,
	       in->chunks);
	if (in->saving_now)
		printf("  saving to '%s' (%" PRIu64 " bytes)", in->saving, in->saved_bytes);
	printf("%s", eol);
	if (in->lost)
		printf("%" PRIu64 " events lost (at %s)%s", in->lost,
		       liveview_when(first_ns, in->lost_at_ns, b, sizeof(b)), eol);
	if (in->udp && liveudp_lost_datagrams(in->udp))
		printf("UDP: %" PRIu64 " of %" PRIu64 " datagrams lost (%" PRIu64 " events)%s",
		       liveudp_lost_datagrams(in->udp), in->udp->datagrams + liveudp_lost_datagrams(in->udp),
		       liveudp_lost_events(in->udp), eol);
	for (i = 0; i < in->nexits; i++)
		printf("process %" PRIu32 " %s%s", in->exits[i].pid,
		       liveview_describe_status(in->exits[i].status, what, sizeof(what)), eol);
	if (in->bad_chunks)
		printf("%" PRIu64 " chunks held undecodable events (skipped)%s", in->bad_chunks, eol);
	if (in->filters && in->filters[0])
		printf("filters: %s%s", in->filters, eol);
	if (in->sys_backend && in->sys_backend[0] && in->sys)
		printf("syscalls by %s: %" PRIu64 " calls, %" PRIu64 " errors%s", in->sys_backend, in->sys->calls,
		       in->sys->errors, eol);
	if (in->filtered && in->mode != LIVEVIEW_SYSCALLS && in->mode != LIVEVIEW_MEMORY && in->mode != LIVEVIEW_LAYERS)
		printf("call %s hidden: %s%s", in->mode == LIVEVIEW_PATHS ? "paths" : "tree", LIVEVIEW_FILTERED_WHY,
		       eol);
	if (in->mode == LIVEVIEW_PATHS && !in->filtered && in->paths && in->paths->folded)
		printf("%" PRIu64 " calls on paths not kept (limit of %" PRIu32 " paths)%s", in->paths->folded,
		       in->paths->max, eol);
}

/* The hot paths: a path too wide for the terminal loses its root end. */
static void draw_paths(const struct livepaths_rows *paths, size_t max, int width, const char *eol)
{
	char a[32], b[32];
	size_t i;

	printf("%12s %12s %10s  %s%s", "Total", "Self", "Calls", "Call path", eol);
	for (i = 0; i < paths->n && i < max; i++) {
		const struct livepaths_row *r = &paths->row[i];
		size_t len = strlen(r->path),
		       room = width > PATHS_FIXED_COLS + 12 ? (size_t)width - PATHS_FIXED_COLS : 0;
		const char *p = r->path;

		printf("%12s %12s %10" PRIu64 "  ", options_format_duration(r->total_ns, a, sizeof(a)),
		       options_format_duration(r->self_ns, b, sizeof(b)), r->calls);
		if (room && len > room)
			printf("...%s%s", p + len - (room - 3), eol);
		else
			printf("%s%s", p, eol);
	}
	if (paths->n > max)
		printf("(%zu more paths)%s", paths->n - max, eol);
}

static void draw_table(const struct liveview_info *in, const struct profile_rows *rows, size_t max, int width,
                       const char *eol)
{
	char a[32], b[32], c[32], d[32];
	size_t i;

	printf("%12s %12s %10s %12s %12s  %s%s", "Total", "Self", "Calls", "Avg", "Max", "Function", eol);
	for (i = 0; i < rows->n && i < max; i++) {
		const struct profile_row *r = &rows->row[i];
		int room = width > TABLE_FIXED_COLS ? width - TABLE_FIXED_COLS : 10;

		printf("%12s %12s %10" PRIu64 " %12s %12s  %.*s%s", options_format_duration(r->total_ns, a, sizeof(a)),
		       in->filtered ? "-" : options_format_duration(r->self_ns, b, sizeof(b)), r->calls,
		       options_format_duration(profile_row_avg(r), c, sizeof(c)),
		       options_format_duration(r->max_ns, d, sizeof(d)), width ? room : INT_MAX, r->name, eol);
	}
	if (rows->n > max)
		printf("(%zu more functions)%s", rows->n - max, eol);
}

/* Per syscall, then the functions making them: each table gets half the
 * rows. */
static void draw_syscalls(const struct liveview_info *in, const struct sysstats_result *sys, size_t max, int width,
                          const char *eol)
{
	size_t half = max == SIZE_MAX ? max : (max + 1) / 2, i;
	char a[32], b[32], c[32];
	int room = width > 50 ? width - 50 : 10;

	if (!in->sys_backend || !in->sys_backend[0]) {
		printf("no system calls traced in this session (live --syscalls)%s", eol);
		return;
	}
	printf("%10s %8s %12s %12s %12s  %s%s", "Calls", "Errors", "Total", "Avg", "Max", "Syscall", eol);
	for (i = 0; i < sys->nrows && i < half; i++) {
		const struct sysstats_row *r = &sys->rows[i];

		printf("%10" PRIu64 " %8" PRIu64 " %12s %12s %12s  %s%s", r->calls, r->errors,
		       options_format_duration(r->total_ns, a, sizeof(a)),
		       options_format_duration(r->timed ? r->total_ns / r->timed : 0, b, sizeof(b)),
		       options_format_duration(r->max_ns, c, sizeof(c)), r->name, eol);
	}
	if (sys->nrows > half)
		printf("(%zu more syscalls)%s", sys->nrows - half, eol);
	printf("%s%10s %8s %12s  %-16s %s%s", eol, "Calls", "Errors", "Total", "Syscall", "Function", eol);
	for (i = 0; i < sys->nfns && i < half; i++) {
		const struct sysstats_fn *fn = &sys->fns[i];

		printf("%10" PRIu64 " %8" PRIu64 " %12s  %-16s %.*s%s", fn->calls, fn->errors,
		       options_format_duration(fn->total_ns, a, sizeof(a)), fn->syscall, width ? room : INT_MAX,
		       fn->name, eol);
	}
	if (sys->nfns > half)
		printf("(%zu more functions making syscalls)%s", sys->nfns - half, eol);
}

/* The table of the view chosen: paths (unless filtered), syscalls or
 * functions. */
/* Time per layer per function (LIVEVIEW_LAYERS). */
static void draw_layers(const struct liveview_info *in, size_t max, const char *eol)
{
	struct klayer_result r;
	char t[32], u[32], s[32], o[32], i[32];

	if (!in->kl) {
		printf("no kernel events in this session (live --kernel)%s", eol);
		return;
	}
	if (klayer_collect(in->kl, &r)) {
		printf("out of memory%s", eol);
		return;
	}
	printf("%llu kernel events, %llu switches, %llu page faults%s%12s %12s %12s %12s %12s %7s %8s  %s%s",
	       (unsigned long long)r.kernel_events, (unsigned long long)r.switches, (unsigned long long)r.faults, eol,
	       "Total", "User", "Syscall", "Off-CPU", "Irq+Soft", "Faults", "Switches", "Function", eol);
	for (size_t k = 0; k < r.nfuncs && k < max; k++) {
		const struct klayer_func *f = &r.funcs[k];

		options_format_duration(f->total_ns, t, sizeof(t));
		options_format_duration(f->incl.ns[KL_USER], u, sizeof(u));
		options_format_duration(f->incl.ns[KL_SYSCALL], s, sizeof(s));
		options_format_duration(klayer_off_ns(&f->incl), o, sizeof(o));
		options_format_duration(f->incl.ns[KL_IRQ] + f->incl.ns[KL_SOFTIRQ], i, sizeof(i));
		printf("%12s %12s %12s %12s %12s %7llu %8llu  %s%s", t, u, s, o, i, (unsigned long long)f->incl.faults,
		       (unsigned long long)(f->incl.switches_vol + f->incl.switches_invol), f->name, eol);
	}
	klayer_result_release(&r);
}

static void json_layers(struct json *j, const struct liveview_info *in)
{
	struct klayer_result r;

	if (!in->kl || klayer_collect(in->kl, &r)) {
		json_null(j, "layers");
		return;
	}
	json_array_begin(j, "layers");
	for (size_t k = 0; k < r.nfuncs; k++) {
		const struct klayer_func *f = &r.funcs[k];

		json_object_begin(j, NULL);
		json_str(j, "name", f->name);
		json_u64(j, "calls", f->calls);
		json_u64(j, "total_ns", f->total_ns);
		json_u64(j, "user_ns", f->incl.ns[KL_USER]);
		json_u64(j, "syscall_ns", f->incl.ns[KL_SYSCALL]);
		json_u64(j, "off_cpu_ns", klayer_off_ns(&f->incl));
		json_u64(j, "irq_ns", f->incl.ns[KL_IRQ] + f->incl.ns[KL_SOFTIRQ]);
		json_u64(j, "page_faults", f->incl.faults);
		json_u64(j, "context_switches", f->incl.switches_vol + f->incl.switches_invol);
		json_u64(j, "voluntary_switches", f->incl.switches_vol);
		json_object_end(j);
	}
	json_array_end(j);
	klayer_result_release(&r);
}

static void draw_body(const struct liveview_info *in, uint64_t first_ns, const struct profile_rows *rows,
                      const struct livepaths_rows *paths, const struct sysstats_result *sys, size_t max, int width,
                      const char *eol)
{
	if (in->mode == LIVEVIEW_LAYERS)
		draw_layers(in, max, eol);
	else if (in->mode == LIVEVIEW_MEMORY && !in->mem)
		printf("no heap operations traced in this session (live --memory)%s", eol);
	else if (in->mode == LIVEVIEW_MEMORY)
		livemem_text(in->mem, max, width, eol, first_ns);
	else if (in->mode == LIVEVIEW_SYSCALLS)
		draw_syscalls(in, sys, max, width, eol);
	else if (in->mode == LIVEVIEW_FLAT)
		draw_table(in, rows, max, width, eol);
	else if (!in->filtered)
		draw_paths(paths, max, width, eol);
}

static void draw_text(struct liveview *v, const struct liveview_info *in, uint64_t first_ns,
                      const struct profile_rows *rows, const struct livepaths_rows *paths,
                      const struct sysstats_result *sys)
{
	static const char *const titles[] = { "profile", "call paths", "syscalls", "memory", "layers" };
	struct winsize ws = { 0 };
	int height = 0, width = 0;
	size_t max = LIVEVIEW_ROWS_PLAIN;

	if (v->tty && !in->final) {
		if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
			height = ws.ws_row;
			width = ws.ws_col;
		}
		max = height > 14 ? (size_t)height - 12 : 2;
		/* home, then each line cleared as it is written: no flicker */
		fputs("\033[H", stdout);
		draw_header(in, first_ns, "\033[K\n");
		fputs("\033[K\n", stdout);
		draw_body(in, first_ns, rows, paths, sys, max, width, "\033[K\n");
		fputs("\033[K\n", stdout);
		if (in->prompt)
			printf("%s%.*s\033[K", in->prompt, (int)in->line_len, in->line);
		else
			printf("keys: s start  t stop  f filter  w save  v view  m memory  q quit   %s\033[K",
			       or_empty(in->note));
		fputs("\033[J", stdout);
	} else {
		printf("--- %s%s\n", in->final ? "final " : "", titles[in->mode]);
		draw_header(in, first_ns, "\n");
		printf("\n");
		draw_body(in, first_ns, rows, paths, sys, in->final ? SIZE_MAX : max, 0, "\n");
		printf("\n");
		if (in->mem && in->mode != LIVEVIEW_MEMORY) {
			/* off a terminal the heap is always shown: nobody switches */
			printf("--- %smemory\n", in->final ? "final " : "");
			livemem_text(in->mem, in->final ? SIZE_MAX : max, 0, "\n", first_ns);
			printf("\n");
		}
	}
}

int liveview_draw(struct liveview *v, struct walk *w, const struct liveview_info *in)
{
	static const struct profile_order by_total = { .keys = { PROFILE_TOTAL }, .nkeys = 1 };
	struct livepaths_rows paths = { 0 };
	struct sysstats_result sys = { 0 };
	struct profile_rows rows;
	int r = -ENOMEM;

	if (profile_collect(w, 0, &by_total, &rows))
		return -ENOMEM;
	if (in->mode == LIVEVIEW_PATHS && !in->filtered && in->paths && livepaths_collect(in->paths, w, &paths))
		goto out;
	if (in->sys && (v->json || in->mode == LIVEVIEW_SYSCALLS) && sysstats_collect(in->sys, &sys))
		goto out;
	if (v->json)
		draw_json(v, in, &rows, &paths, &sys);
	else
		draw_text(v, in, w->first_ns, &rows, &paths, &sys);
	fflush(stdout);
	r = 0;
out:
	profile_rows_release(&rows);
	livepaths_rows_release(&paths);
	sysstats_result_release(&sys);
	return r;
}
