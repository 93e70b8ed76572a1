/* A live session driven from the web page (see serve/live.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/lib/live/session.h"
#include "host/lib/serve/api.h"
#include "host/lib/serve/export.h"
#include "host/lib/serve/heap.h"
#include "host/lib/serve/http.h"
#include "host/lib/serve/live.h"
#include "host/lib/serve/model.h"
#include "host/lib/util/error.h"
#include "host/lib/util/json.h"
#include "host/lib/util/options.h"
#include "systrace/systrace.h"

#define NS_PER_MS 1000000ull
#define QUIT_WAIT_NS 2000000000ull /* for the agent's BYE after ours */
#define FILTER_WORDS_MAX 64

struct servelive {
	const struct servelive_opts *o;
	const struct servelive_io *io;
	struct livesession ls;
	struct servemodel m;
	struct servehttp h;
	struct serve_control control;
	bool http_started, model_attached;
	uint64_t interval_ns, next_push, events_seen;
	char notes[SERVELIVE_NOTES][256];
	unsigned nnotes; /* notes written so far; the last SERVELIVE_NOTES are kept */
	/* a program started from the page: its arguments (owned) */
	char *argbuf;
	char *args[SERVELIVE_ARGS_MAX + 1];
	/* without --save, the session is kept in private/live, removed at exit */
	char private[PATH_MAX], private_trace[PATH_MAX + 8];
	/* the heap view of the model's generation heap_gen (with --memory) */
	struct serveheap heap;
	bool heap_valid;
	uint64_t heap_gen;
	unsigned snapshots;    /* taken so far: they are numbered in their names */
	struct lp_warner said; /* on_say, for messages of its own */
};

void servelive_opts_init(struct servelive_opts *o)
{
	memset(o, 0, sizeof(*o));
	liveopts_init(&o->live);
	o->interval_ns = SERVELIVE_DEFAULT_INTERVAL_NS;
}

int servelive_opts_parse(struct servelive_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	int r = liveopts_parse(&o->live, c, arg, err, errlen);

	if (r < 0)
		return r;
	if (r == 1) {
		if (c != LIVEOPT_CONNECT)
			o->any = true;
		return 1;
	}
	switch (c) {
	case 'A':
		o->live.token_file = arg;
		break;
	case 'o':
		o->save = arg;
		break;
	case 'i':
		if (options_parse_duration(arg, &o->interval_ns) || o->interval_ns < SERVELIVE_MIN_INTERVAL_NS ||
		    o->interval_ns > SERVELIVE_MAX_INTERVAL_NS)
			return error_set(err, errlen, -EINVAL, "invalid --interval '%s': expected 100ms to 60s", arg);
		break;
	default:
		return 0;
	}
	o->any = true;
	return 1;
}

bool servelive_opts_any(const struct servelive_opts *o)
{
	return o->any;
}

int servelive_opts_check(struct servelive_opts *o, char **argv, int argc, char *err, size_t errlen)
{
	return liveopts_check(&o->live, argv, argc, false, err, errlen);
}

/* ------------------------------------------------------------ messages */

static void on_say(void *ctx, const char *msg)
{
	struct servelive *sl = ctx;

	snprintf(sl->notes[sl->nnotes % SERVELIVE_NOTES], sizeof(sl->notes[0]), "%s", msg);
	sl->nnotes++;
	error_warn(sl->io->say, "%s", msg);
}

static const char *state_name(enum livesession_state s)
{
	static const char *const names[] = { "idle", "connecting", "running", "closing", "done", "failed" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ------------------------------------------------------------ the page's view of the session */

static void put_state(struct servelive *sl, struct json *j)
{
	struct livesession *ls = &sl->ls;
	char desc[512];
	unsigned i, first;
	int k;

	livesession_collect_exits(ls);
	livefilter_describe(&ls->filter, desc, sizeof(desc));
	json_str(j, "state", state_name(ls->state));
	json_bool(j, "tracing", ls->tracing);
	json_u64(j, "session", ls->session);
	json_u64(j, "pid", ls->pid);
	json_str(j, "peer", ls->nc.peer);
	json_str(j, "agent", ls->nc.agent);
	json_str(j, "arch", ls->nc.arch);
	json_str(j, "caps", ls->nc.caps);
	json_str(j, "filters", ls->filter.active ? desc : "");
	json_bool(j, "filtered", livesession_filtered(ls));
	json_u64(j, "interval_ms", sl->interval_ns / NS_PER_MS);
	json_u64(j, "events", ls->w.events);
	json_u64(j, "chunks", ls->chunks);
	json_u64(j, "lost_events", livesession_lost(ls));
	json_u64(j, "bad_chunks", ls->bad_chunks);
	json_u64(j, "generation", sl->m.generation);
	json_str(j, "syscall_backend", ls->sys_backend);
	json_str(j, "saving", livesave_active(&ls->save) ? ls->save.dir : "");
	json_bool(j, "kept_privately", sl->private[0] && ls->save.dir[0]);
	json_bool(j, "memory", ls->mem.on);
	json_bool(j, "exports", ls->save.dir[0] && !ls->save.failed);
	if (ls->attach_pid)
		json_u64(j, "attach", (uint64_t)ls->attach_pid);
	json_array_begin(j, "argv");
	for (k = 0; k < ls->argc; k++)
		json_str(j, NULL, ls->argv[k]);
	json_array_end(j);
	json_array_begin(j, "exits");
	for (i = 0; i < ls->nexits; i++) {
		json_object_begin(j, NULL);
		json_u64(j, "pid", ls->exits[i].pid);
		json_i64(j, "status", ls->exits[i].status);
		json_object_end(j);
	}
	json_array_end(j);
	/* sessions the agent still knows (from WELCOME): the process picker */
	json_array_begin(j, "agent_sessions");
	if (ls->nc.welcome) {
		const char *p = ls->nc.welcome;

		while ((p = strstr(p, "session="))) {
			unsigned long id = 0, pid = 0;
			const char *pp = strstr(p, "pid=");

			id = strtoul(p + 8, NULL, 10);
			if (pp)
				pid = strtoul(pp + 4, NULL, 10);
			json_object_begin(j, NULL);
			json_u64(j, "session", id);
			json_u64(j, "pid", pid);
			json_bool(j, "running",
			          strstr(p, "state=running") &&
			              (!strchr(p, '\n') || strstr(p, "state=running") < strchr(p, '\n')));
			json_object_end(j);
			p += 8;
		}
	}
	json_array_end(j);
	json_array_begin(j, "notes");
	first = sl->nnotes > SERVELIVE_NOTES ? sl->nnotes - SERVELIVE_NOTES : 0;
	for (i = first; i < sl->nnotes; i++)
		json_str(j, NULL, sl->notes[i % SERVELIVE_NOTES]);
	json_array_end(j);
}

static void control_state(void *ctx, FILE *out)
{
	struct json *j = malloc(sizeof(*j));

	if (!j) {
		fputs("{}", out);
		return;
	}
	json_init(j, out);
	json_object_begin(j, NULL);
	put_state(ctx, j);
	json_object_end(j);
	json_finish(j);
	free(j);
}

/* Writes the answer to a command into out (NULL: a command of serve's own,
 * answered to no one) and returns its status. */
static int answer(FILE *out, int status, const char *msg)
{
	if (!out)
		return status;
	fputs(status == HTTP_OK ? "{\"ok\":" : "{\"error\":", out);
	json_write_string(out, msg);
	fputs("}\n", out);
	return status;
}

static int command_filter(struct servelive *sl, const char *body, FILE *out)
{
	char *buf = malloc(strlen(body) + 8), *words[FILTER_WORDS_MAX + 1];
	struct filter_opts opts;
	char err[512];
	int n;

	if (!buf)
		return answer(out, HTTP_BAD_REQUEST, "out of memory");
	snprintf(buf, strlen(body) + 8, "filter %s", body);
	n = liveopts_split_words(buf, buf, words, FILTER_WORDS_MAX, false);
	if (n < 0) {
		free(buf);
		return answer(out, HTTP_BAD_REQUEST, "unbalanced quotes or too many words");
	}
	if (n == 1 || (n == 2 && !strcmp(words[1], "clear"))) {
		memset(&opts, 0, sizeof(opts));
		livesession_set_filters(&sl->ls, &opts, NULL);
		free(buf);
		return answer(out, HTTP_OK, "filters cleared");
	}
	err[0] = '\0';
	if (livefilter_parse(n, words, &opts, err, sizeof(err))) {
		free(buf);
		return answer(out, HTTP_BAD_REQUEST, err);
	}
	livesession_set_filters(&sl->ls, &opts, buf); /* buf now the filter's */
	return answer(out, HTTP_OK, "filters set");
}

/* ------------------------------------------------------------ the kept trace */

/* The private trace directory (made on first use: $TMPDIR or /tmp,
 * layerprof-serve-XXXXXX/live), or NULL after saying why not. */
static const char *private_dir(struct servelive *sl)
{
	const char *tmp = getenv("TMPDIR");

	if (sl->private_trace[0])
		return sl->private_trace;
	if (!tmp || !*tmp || strlen(tmp) > PATH_MAX / 2)
		tmp = "/tmp";
	snprintf(sl->private, sizeof(sl->private), "%s/layerprof-serve-XXXXXX", tmp);
	if (!mkdtemp(sl->private)) {
		error_warn(&sl->said, "cannot make a directory for the trace in '%s': %s", tmp, strerror(errno));
		sl->private[0] = '\0';
		return NULL;
	}
	snprintf(sl->private_trace, sizeof(sl->private_trace), "%s/live", sl->private);
	return sl->private_trace;
}

/* Removes the private trace: the files the session and the exports wrote
 * in it, then the directories. */
static void private_remove(struct servelive *sl)
{
	DIR *d;
	struct dirent *e;

	if (!sl->private[0])
		return;
	d = opendir(sl->private_trace);
	while (d && (e = readdir(d))) {
		char path[sizeof(sl->private_trace) + 256];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", sl->private_trace, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(sl->private_trace);
	if (rmdir(sl->private))
		error_warn(sl->io->say, "cannot remove '%s': %s", sl->private, strerror(errno));
	sl->private[0] = '\0';
}

static int control_export_hold(void *ctx, char *dir, size_t size)
{
	struct servelive *sl = ctx;
	struct livesave *sv = &sl->ls.save;

	if (!sv->dir[0] || (!livesave_active(sv) && sv->failed)) {
		snprintf(dir, size, "%s", sv->failed ? sv->error : "no session yet: nothing to export");
		return sv->failed ? -EIO : -ENOENT;
	}
	snprintf(dir, size, "%s", sv->dir);
	livesave_hold(sv);
	return 0;
}

static bool control_export_resume(void *ctx)
{
	struct servelive *sl = ctx;
	bool still = livesave_resume(&sl->ls.save);

	if (sl->ls.save.failed && !livesave_active(&sl->ls.save))
		error_warn(&sl->said, "%s; saving stopped", sl->ls.save.error);
	return still;
}

/* ------------------------------------------------------------ the heap */

/* Brings the heap view up to the model's generation: settles the state
 * (at most once per generation) and builds the document. */
static int heap_refresh(struct servelive *sl)
{
	struct livesession *ls = &sl->ls;
	int r;

	if (sl->heap_valid && sl->heap_gen == sl->m.generation)
		return 0;
	serveheap_release(&sl->heap);
	sl->heap_valid = false;
	livemem_settle(&ls->mem, livesession_now());
	r = serveheap_from_live(&sl->heap, &ls->mem, ls->save.dir[0] ? ls->save.dir : NULL);
	if (r)
		return r;
	sl->heap_valid = true;
	sl->heap_gen = sl->m.generation;
	return 0;
}

static int control_heap(void *ctx, const char *what, const struct serve_query *q, FILE *out)
{
	struct servelive *sl = ctx;

	if (!sl->ls.mem.on)
		return serveheap_answer(
		    &sl->heap, what, "this live session does not trace the heap: start serve --connect with --memory",
		    q, out);
	if (!sl->ls.w.mem_ops && !strcmp(what, "heap")) {
		fputs("{\"heap\":false,\"reason\":", out);
		json_write_string(out, sl->ls.session ? "no heap operations yet (a program started without "
		                                        "liblayerprof-mem.so preloaded sends none)"
		                                      : "no session yet: start a program or attach a process");
		fputs("}\n", out);
		return HTTP_OK;
	}
	if (heap_refresh(sl))
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	return serveheap_answer(&sl->heap, what, "no heap operations yet", q, out);
}

static int control_snapshot(void *ctx, FILE *f, char *name, size_t size)
{
	struct servelive *sl = ctx;
	struct livesession *ls = &sl->ls;
	struct livemem_snapinfo si = { .target = ls->addr };
	char command[1024], buf[32], base[128];
	/* the trace directory's name, as the exports' are made */
	const struct serveexport_format bare = { "snapshot", "application/json", "" };
	int r;

	if (!ls->mem.on || !ls->w.mem_ops) {
		snprintf(name, size, "%s",
		         ls->mem.on ? "no heap operations yet" : "start serve --connect with --memory for snapshots");
		return -ENOENT;
	}
	livemem_settle(&ls->mem, livesession_now());
	si.command = walk_meta(&ls->w, "command", command, sizeof(command));
	si.origin_ns =
	    walk_meta(&ls->w, "start_monotonic_ns", buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : ls->w.first_ns;
	r = livemem_snapshot_write(&ls->mem, f, &si);
	if (r) {
		snprintf(name, size, "cannot write the snapshot: %s", strerror(-r));
		return r;
	}
	sl->snapshots++;
	serveexport_filename(ls->save.dir[0] ? ls->save.dir : "live", &bare, base, sizeof(base));
	snprintf(name, size, "%s-%u.snapshot", base, sl->snapshots);
	error_warn(&sl->said, "snapshot %u: %" PRIu64 " live blocks, %" PRIu64 " bytes", sl->snapshots,
	           ls->mem.h.live_objects, ls->mem.h.live_bytes);
	return 0;
}

/* Starts the session with the target in ls (a program or a pid). */
static int begin_session(struct servelive *sl, FILE *out)
{
	struct livesession *ls = &sl->ls;
	const char *dir = sl->o->save ? sl->o->save : private_dir(sl);

	if (!dir)
		return answer(out, HTTP_BAD_REQUEST, "cannot keep the trace");
	if (!livesave_active(&ls->save) && livesave_open(&ls->save, dir)) {
		error_warn(&sl->said, "cannot save: %s", ls->save.error);
		return answer(out, HTTP_BAD_REQUEST, "cannot save the trace");
	}
	if (livesession_start(ls, !sl->o->live.stopped))
		return answer(out, HTTP_BAD_REQUEST, "the agent did not take the session");
	return answer(out, HTTP_OK, "session requested");
}

static int command_launch(struct servelive *sl, const char *body, size_t len, FILE *out)
{
	struct livesession *ls = &sl->ls;
	int n = 0;
	char *p;

	if (ls->state != LIVESESSION_IDLE)
		return answer(out, HTTP_CONFLICT, "a session has begun already");
	free(sl->argbuf);
	sl->argbuf = malloc(len + 1);
	if (!sl->argbuf)
		return answer(out, HTTP_BAD_REQUEST, "out of memory");
	memcpy(sl->argbuf, body, len + 1);
	/* one argument per line */
	for (p = sl->argbuf; *p && n < SERVELIVE_ARGS_MAX;) {
		char *nl = strchr(p, '\n');

		if (nl)
			*nl = '\0';
		if (*p)
			sl->args[n++] = p;
		if (!nl)
			break;
		p = nl + 1;
	}
	if (!n)
		return answer(out, HTTP_BAD_REQUEST, "no program given (one argument per line)");
	sl->args[n] = NULL;
	ls->argv = sl->args;
	ls->argc = n;
	return begin_session(sl, out);
}

static int command_attach(struct servelive *sl, const char *body, FILE *out)
{
	struct livesession *ls = &sl->ls;
	char *end;
	long pid;

	if (ls->state != LIVESESSION_IDLE)
		return answer(out, HTTP_CONFLICT, "a session has begun already");
	errno = 0;
	pid = strtol(body, &end, 10);
	while (*end == '\n' || *end == ' ' || *end == '\r')
		end++;
	if (errno || *end || pid <= 0 || pid > INT_MAX)
		return answer(out, HTTP_BAD_REQUEST, "expected a process id");
	ls->attach_pid = pid;
	return begin_session(sl, out);
}

static int control_command(void *ctx, const char *cmd, const char *body, size_t len, FILE *out)
{
	struct servelive *sl = ctx;
	struct livesession *ls = &sl->ls;

	if (!strcmp(cmd, "start") || !strcmp(cmd, "stop")) {
		bool on = !strcmp(cmd, "start");

		if (ls->state != LIVESESSION_RUNNING && ls->state != LIVESESSION_CONNECTING)
			return answer(out, HTTP_CONFLICT, "no session is running");
		if (livesession_set_tracing(ls, on))
			return answer(out, HTTP_BAD_REQUEST, "the agent could not be told");
		error_warn(&sl->said, "tracing %s", on ? "on" : "off");
		return answer(out, HTTP_OK, on ? "tracing on" : "tracing off");
	}
	if (!strcmp(cmd, "filter")) {
		if (ls->state > LIVESESSION_RUNNING)
			return answer(out, HTTP_CONFLICT, "the session has ended");
		return command_filter(sl, body, out);
	}
	if (!strcmp(cmd, "period")) {
		uint64_t ns;
		char text[64];

		snprintf(text, sizeof(text), "%.*s", (int)strcspn(body, " \r\n"), body);
		if (options_parse_duration(text, &ns) || ns < SERVELIVE_MIN_INTERVAL_NS ||
		    ns > SERVELIVE_MAX_INTERVAL_NS)
			return answer(out, HTTP_BAD_REQUEST, "period: a duration from 100ms to 60s");
		sl->interval_ns = ns;
		sl->next_push = 0; /* the next round pushes, then at the new period */
		return answer(out, HTTP_OK, "period set");
	}
	if (!strcmp(cmd, "launch"))
		return command_launch(sl, body, len, out);
	if (!strcmp(cmd, "attach"))
		return command_attach(sl, body, out);
	if (!strcmp(cmd, "quit")) {
		livesession_close(ls);
		return answer(out, HTTP_OK, "session closing");
	}
	return answer(out, HTTP_NOT_FOUND, "commands: start, stop, filter, period, launch, attach, quit");
}

/* ------------------------------------------------------------ the loop */

/* The update pushed to the page: the session's state, small. */
static void push(struct servelive *sl)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json *j = malloc(sizeof(*j));

	if (!f || !j) {
		if (f)
			fclose(f);
		free(j);
		free(buf);
		return;
	}
	json_init(j, f);
	json_object_begin(j, NULL);
	json_u64(j, "generation", sl->m.generation);
	json_str(j, "state", state_name(sl->ls.state));
	json_bool(j, "tracing", sl->ls.tracing);
	json_u64(j, "events", sl->ls.w.events);
	json_u64(j, "lost_events", livesession_lost(&sl->ls));
	json_u64(j, "interval_ms", sl->interval_ns / NS_PER_MS);
	json_u64(j, "notes", sl->nnotes);
	json_object_end(j);
	free(j);
	if (!fclose(f) && len < SERVEHTTP_EVENT_MAX)
		servehttp_notify(&sl->h, buf);
	free(buf);
}

/* Takes what the agent sent and keeps the timers; under the lock. */
static void round_locked(struct servelive *sl, const struct pollfd *pfd, int polled)
{
	struct livesession *ls = &sl->ls;

	if (polled > 0 && (pfd[1].revents & (POLLIN | POLLERR)))
		livesession_receive_udp(ls);
	if (polled > 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
		livesession_receive(ls);
	if (ls->state < LIVESESSION_DONE)
		livesession_tick(ls, livesession_now());
	if (ls->state >= LIVESESSION_DONE && ls->session && !ls->walk_ended) {
		/* the end: calls still open close, the saved trace ends */
		walk_end(&ls->w);
		ls->walk_ended = true;
		if (ls->mem.on)
			livemem_finish(&ls->mem);
		if (livesave_active(&ls->save) &&
		    livesave_close(&ls->save, ls->state == LIVESESSION_DONE && !ls->end_seen, ls->w.events))
			error_warn(&sl->said, "%s", ls->save.error);
		error_warn(&sl->said, "the session ended (%s)", state_name(ls->state));
		servemodel_touch(&sl->m);
	}
	if (ls->w.events != sl->events_seen) {
		sl->events_seen = ls->w.events;
		servemodel_touch(&sl->m);
	}
	sl->m.kern.kl = ls->kl; /* the session's kernel layer (--kernel), made when it began */
}

static void live_loop(struct servelive *sl, volatile sig_atomic_t *quit, const sigset_t *wait_mask)
{
	struct livesession *ls = &sl->ls;
	uint64_t quit_at = 0;

	for (;;) {
		struct pollfd pfd[2] = { { .fd = ls->state < LIVESESSION_DONE ? ls->nc.fd : -1, .events = POLLIN },
			                 { .fd = ls->state < LIVESESSION_DONE ? ls->udp.fd : -1, .events = POLLIN } };
		uint64_t now = livesession_now(), next = sl->next_push;
		int r, timeout;

		if (*quit && !quit_at) {
			quit_at = now;
			pthread_mutex_lock(&sl->h.lock);
			if (ls->state == LIVESESSION_IDLE)
				ls->state = LIVESESSION_DONE;
			livesession_close(ls);
			pthread_mutex_unlock(&sl->h.lock);
		}
		if (quit_at && (ls->state >= LIVESESSION_DONE || now - quit_at > QUIT_WAIT_NS))
			break;
		if (ls->state < LIVESESSION_DONE && livesession_next_tick(ls) < next)
			next = livesession_next_tick(ls);
		timeout = next <= now ? 0 : (int)((next - now + NS_PER_MS - 1) / NS_PER_MS);
		if (quit_at && timeout > 100)
			timeout = 100;
		{
			struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000 };

			r = ppoll(pfd, 2, &ts, wait_mask);
		}
		if (r < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&sl->h.lock);
		round_locked(sl, pfd, r);
		pthread_mutex_unlock(&sl->h.lock);
		now = livesession_now();
		if (now >= sl->next_push) {
			pthread_mutex_lock(&sl->h.lock);
			push(sl);
			pthread_mutex_unlock(&sl->h.lock);
			sl->next_push = now + sl->interval_ns;
		}
	}
}

int servelive_run(const struct servelive_opts *o, const char *bind, unsigned port, const char *token,
                  volatile sig_atomic_t *quit, const sigset_t *wait_mask, const struct servelive_io *io, char *err,
                  size_t errlen)
{
	struct servelive *sl = calloc(1, sizeof(*sl));
	struct livesession *ls;
	int code = -EIO, r;

	err[0] = '\0';
	if (!sl)
		return error_set(err, errlen, -ENOMEM, "out of memory");
	sl->o = o;
	sl->io = io;
	sl->said = (struct lp_warner){ .fn = on_say, .ctx = sl };
	sl->interval_ns = o->interval_ns;
	ls = &sl->ls;
	if (livesession_init(ls)) {
		code = error_set(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	liveopts_apply(&o->live, ls);
	ls->flush_ms = (uint32_t)(sl->interval_ns / 4 / NS_PER_MS);
	if (ls->flush_ms < LIVESESSION_FLUSH_MIN_MS)
		ls->flush_ms = LIVESESSION_FLUSH_MIN_MS;
	if (ls->flush_ms > LIVESESSION_FLUSH_MAX_MS)
		ls->flush_ms = LIVESESSION_FLUSH_MAX_MS;
	ls->say = on_say;
	ls->say_ctx = sl;
	ls->complain = *io->say;
	servemodel_attach(&sl->m, &ls->w, &ls->prof, &ls->sys, &ls->ops);
	if (getenv("LAYERPROF_BENCH_NO_TIMELINE"))
		servemodel_timeline_off(&sl->m); /* bench/serve: what the timeline costs */
	else
		servemodel_follow_save(&sl->m, &ls->save); /* the timeline reads windows from the saved trace */
	sl->model_attached = true;
	r = livesession_connect(ls);
	if (r) {
		code = r == -EINVAL ? -EINVAL : -EIO;
		goto out;
	}
	sl->control = (struct serve_control){ .ctx = sl,
		                              .state = control_state,
		                              .command = control_command,
		                              .heap = control_heap,
		                              .export_hold = control_export_hold,
		                              .export_resume = control_export_resume,
		                              .snapshot = control_snapshot };
	if (servehttp_start(&sl->h, &sl->m, &sl->control, bind, port, token, err, errlen)) {
		servehttp_stop(&sl->h);
		goto out;
	}
	sl->http_started = true;
	/* the session is started before the address is announced: whoever
	 * reads it finds the session connecting, not idle */
	if (ls->argc || ls->attach_pid) {
		pthread_mutex_lock(&sl->h.lock);
		begin_session(sl, NULL);
		pthread_mutex_unlock(&sl->h.lock);
	} else {
		error_warn(&sl->said, "connected: choose a program to start or a process to attach in the page");
	}
	io->ready(io->ctx, &sl->h, ls->nc.peer, ls->nc.agent);
	live_loop(sl, quit, wait_mask);
	code = ls->state == LIVESESSION_FAILED ? -EIO : 0;
out:
	if (sl->http_started)
		servehttp_stop(&sl->h);
	if (!ls->session)
		livesave_discard(&ls->save);
	if (sl->model_attached)
		servemodel_release(&sl->m);
	serveheap_release(&sl->heap);
	livesession_release(ls);
	private_remove(sl);
	free(sl->argbuf);
	free(sl);
	return code;
}
