/* Drawing the live profile: text in place, plain snapshots, or JSON (see
 * liveview.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/lib/liveview.h"
#include "host/lib/options.h"
#include "host/lib/profile.h"

#define TABLE_FIXED_COLS 66 /* width of the numbers before the name */
#define PATHS_FIXED_COLS 38 /* width of the numbers before a path */

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
		snprintf(buf, size, "+%s", format_duration(ns - first_ns, d, sizeof(d)));
	else
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	return buf;
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static void json_paths(struct json *j, const struct liveview_info *in, const struct livepaths_rows *paths)
{
	size_t i;

	json_str(j, "view", in->paths_view ? "paths" : "flat");
	if (!in->paths_view)
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

static void draw_json(struct liveview *v, const struct liveview_info *in, const struct profile_rows *rows,
                      const struct livepaths_rows *paths)
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
	json_object_end(j);
	json_finish(j);
}

/* The lines above the table: connection, state, counts, messages. */
static void draw_header(const struct liveview_info *in, uint64_t first_ns, const char *eol)
{
	char a[32], b[64], what[160];
	size_t i;

	printf("layerprof live  %s  session %" PRIu32 "  pid %" PRIu32 "  %s%s", or_empty(in->peer), in->session,
	       in->pid, format_duration(in->elapsed_ns, a, sizeof(a)), eol);
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
	if (in->filtered)
		printf("call %s hidden: %s%s", in->paths_view ? "paths" : "tree", LIVEVIEW_FILTERED_WHY, eol);
	if (in->paths_view && !in->filtered && in->paths && in->paths->folded)
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

		printf("%12s %12s %10" PRIu64 "  ", format_duration(r->total_ns, a, sizeof(a)),
		       format_duration(r->self_ns, b, sizeof(b)), r->calls);
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

		printf("%12s %12s %10" PRIu64 " %12s %12s  %.*s%s", format_duration(r->total_ns, a, sizeof(a)),
		       in->filtered ? "-" : format_duration(r->self_ns, b, sizeof(b)), r->calls,
		       format_duration(profile_row_avg(r), c, sizeof(c)), format_duration(r->max_ns, d, sizeof(d)),
		       width ? room : INT_MAX, r->name, eol);
	}
	if (rows->n > max)
		printf("(%zu more functions)%s", rows->n - max, eol);
}

/* The table of the view chosen: paths (unless filtered) or functions. */
static void draw_body(const struct liveview_info *in, const struct profile_rows *rows,
                      const struct livepaths_rows *paths, size_t max, int width, const char *eol)
{
	if (!in->paths_view)
		draw_table(in, rows, max, width, eol);
	else if (!in->filtered)
		draw_paths(paths, max, width, eol);
}

static void draw_text(struct liveview *v, const struct liveview_info *in, uint64_t first_ns,
                      const struct profile_rows *rows, const struct livepaths_rows *paths)
{
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
		draw_body(in, rows, paths, max, width, "\033[K\n");
		fputs("\033[K\n", stdout);
		if (in->prompt)
			printf("%s%.*s\033[K", in->prompt, (int)in->line_len, in->line);
		else
			printf("keys: s start  t stop  f filter  w save  v view  q quit   %s\033[K",
			       or_empty(in->note));
		fputs("\033[J", stdout);
	} else {
		printf("--- %s%s\n", in->final ? "final " : "", in->paths_view ? "call paths" : "profile");
		draw_header(in, first_ns, "\n");
		printf("\n");
		draw_body(in, rows, paths, in->final ? SIZE_MAX : max, 0, "\n");
		printf("\n");
	}
}

int liveview_draw(struct liveview *v, struct walk *w, const struct liveview_info *in)
{
	static const struct profile_order by_total = { .keys = { PROFILE_TOTAL }, .nkeys = 1 };
	struct livepaths_rows paths = { 0 };
	struct profile_rows rows;

	if (profile_collect(w, 0, &by_total, &rows))
		return -ENOMEM;
	if (in->paths_view && !in->filtered && in->paths && livepaths_collect(in->paths, w, &paths)) {
		profile_rows_release(&rows);
		return -ENOMEM;
	}
	if (v->json)
		draw_json(v, in, &rows, &paths);
	else
		draw_text(v, in, w->first_ns, &rows, &paths);
	fflush(stdout);
	profile_rows_release(&rows);
	livepaths_rows_release(&paths);
	return 0;
}
