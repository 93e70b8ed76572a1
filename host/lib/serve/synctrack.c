/* The synchronisation tracks of the web UI's server (see serve/synctrack.h),
 * their answer and their section of the index file. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/syncevent.h"
#include "host/lib/serve/index_impl.h"
#include "host/lib/serve/ktrack.h"
#include "host/lib/serve/model.h"
#include "host/lib/serve/query.h"
#include "host/lib/serve/synctrack.h"
#include "host/lib/util/json.h"
#include "layerprof/format.h"

#define SYNCTRACK_FIRST 64u

void synctrack_init(struct synctrack *st)
{
	memset(st, 0, sizeof(*st));
	syncwake_init(&st->sw);
}

static void tracks_free(struct synctrack *st)
{
	for (uint32_t i = 0; i < st->nthreads; i++)
		free(st->threads[i].w);
	free(st->threads);
	st->threads = NULL;
	st->nthreads = 0;
	st->waits = 0;
}

void synctrack_release(struct synctrack *st)
{
	tracks_free(st);
	syncwake_release(&st->sw);
	memset(st, 0, sizeof(*st));
}

static void on_sync(void *ctx, struct walk_stream *s, const struct walk_sync *y)
{
	struct synctrack *st = ctx;

	st->settled = false;
	if (syncwake_add(&st->sw, s->index, s->pid, s->tid, y))
		st->oom = true;
}

static void on_end(void *ctx, struct walk_stream *s)
{
	struct synctrack *st = ctx;

	if (syncwake_thread_end(&st->sw, s->index, s->last_ns))
		st->oom = true;
}

void synctrack_walk_ops(struct synctrack *st, struct walk_ops *ops)
{
	ops->ctx = st;
	ops->sync = on_sync;
	ops->end = on_end;
}

/* Room for one more wait of thread i; NULL when memory ran out. */
static struct synctrack_wait *wait_add(struct synctrack *st, uint32_t i)
{
	struct synctrack_thread *t;

	if (i >= st->nthreads) {
		uint32_t n = i + SYNCTRACK_FIRST;
		struct synctrack_thread *g = realloc(st->threads, n * sizeof(*g));

		if (!g)
			return NULL;
		memset(g + st->nthreads, 0, (n - st->nthreads) * sizeof(*g));
		st->threads = g;
		st->nthreads = n;
	}
	t = &st->threads[i];
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : SYNCTRACK_FIRST;
		struct synctrack_wait *g = realloc(t->w, cap * sizeof(*g));

		if (!g)
			return NULL;
		t->w = g;
		t->cap = cap;
	}
	st->waits++;
	return &t->w[t->n++];
}

int synctrack_settle(struct synctrack *st, const struct walk *w, bool keep)
{
	if (w) {
		st->events = w->sync_events;
		st->has_sync = w->sync_events > 0;
	}
	if (st->settled || !st->has_sync)
		return 0;
	if (st->oom || syncwake_resolve(&st->sw))
		return -ENOMEM;
	tracks_free(st);
	/* in order of their ends: the events are, after resolve */
	for (size_t i = 0; i < st->sw.n; i++) {
		const struct syncwake_event *e = &st->sw.ev[i];
		struct synctrack_wait *t;

		if (!e->wait_ns || !syncwake_is_wait(e->op, 0, 1))
			continue;
		t = wait_add(st, e->thread);
		if (!t) {
			st->oom = true;
			return -ENOMEM;
		}
		*t = (struct synctrack_wait){ .start = e->ns - e->wait_ns,
			                      .end = e->ns,
			                      .release_ns = e->release_ns,
			                      .obj = e->obj,
			                      .obj2 = e->obj2,
			                      .func = e->func,
			                      .waker = e->waker,
			                      .flags = e->flags,
			                      .op = e->op };
	}
	st->dropped = st->sw.dropped;
	if (!keep) {
		/* a trace file's pass is over: the tracks hold what is shown */
		syncwake_release(&st->sw);
		syncwake_init(&st->sw);
	}
	st->settled = true;
	return 0;
}

/* ------------------------------------------------------------ the answer */

/* Waits narrower than a pixel, and the gaps between them, are merged into
 * one box per pixel at most (as the kernel tracks' boxes). */
struct sbox {
	bool have;
	uint64_t start, end, busy, longest;
	uint32_t count;
	const struct synctrack_wait *best; /* the longest wait in it */
};

struct swindow {
	struct servemodel *m;
	uint64_t origin, from, to, px_ns;
	struct names names; /* texts of this answer */
	uint64_t items, hidden;
	bool oom;
};

static uint64_t rel(const struct swindow *wd, uint64_t ns)
{
	return ns > wd->origin ? ns - wd->origin : 0;
}

static void put_text(struct swindow *wd, struct json *j, const char *s)
{
	uint32_t id = s ? names_intern(&wd->names, s) : NAMES_NONE;

	if (s && id == NAMES_NONE)
		wd->oom = true;
	if (id == NAMES_NONE)
		json_null(j, NULL);
	else
		json_u64(j, NULL, id);
}

static const struct serve_thread *info_thread(const struct serve_info *in, uint32_t id)
{
	for (uint32_t i = 0; i < in->nthreads; i++)
		if (in->threads[i].id == id)
			return &in->threads[i];
	return NULL;
}

/* [start, end, operation, object, releaser thread id or null, release or
 * null, count, fill, function] */
static void put_box(struct swindow *wd, struct json *j, uint32_t thread, const struct sbox *bx)
{
	const struct synctrack_wait *w = bx->best;
	char obj[64], fname[1024];
	uint32_t id;

	if (wd->items >= SYNCTRACK_ITEMS_MAX) {
		wd->hidden++;
		return;
	}
	wd->items++;
	json_array_begin(j, NULL);
	json_u64(j, NULL, rel(wd, bx->start));
	json_u64(j, NULL, rel(wd, bx->end));
	put_text(wd, j, syncevent_op_name(w->op));
	if (w->op == LP_SYNC_COND_WAIT)
		snprintf(obj, sizeof(obj), "0x%" PRIx64 " (mutex 0x%" PRIx64 ")", w->obj, w->obj2);
	else
		snprintf(obj, sizeof(obj), "0x%" PRIx64 "%s", w->obj,
		         w->flags & LP_SYNC_TIMEDOUT ? ", timed out"
		         : w->flags & LP_SYNC_FAILED ? ", failed"
		                                     : "");
	put_text(wd, j, obj);
	if (bx->count == 1 && w->waker != SYNCWAKE_NONE && info_thread(&wd->m->info, w->waker))
		json_u64(j, NULL, w->waker);
	else
		json_null(j, NULL);
	if (bx->count == 1 && w->release_ns)
		json_u64(j, NULL, rel(wd, w->release_ns));
	else
		json_null(j, NULL);
	json_u64(j, NULL, bx->count);
	json_u64(j, NULL, bx->end > bx->start ? bx->busy * 1000 / (bx->end - bx->start) : 1000);
	id = w->func ? servemodel_name(wd->m, thread, w->func) : NAMES_NONE;
	snprintf(fname, sizeof(fname), "%s", id != NAMES_NONE ? names_get(&wd->m->names, id) : "");
	put_text(wd, j, fname[0] ? fname : NULL);
	json_array_end(j);
}

static void put_waits(struct swindow *wd, struct json *j, uint32_t thread)
{
	const struct synctrack_thread *t = thread < wd->m->sync.nthreads ? &wd->m->sync.threads[thread] : NULL;
	struct sbox bx = { 0 };
	size_t i = t ? ktrack_first_after(t->w, t->n, sizeof(*t->w), wd->from) : 0;

	json_array_begin(j, "waits");
	for (; t && i < t->n && t->w[i].start < wd->to; i++) {
		const struct synctrack_wait *w = &t->w[i];
		uint64_t a = w->start, b = w->end;

		if (bx.have && b - a < wd->px_ns && bx.end - bx.start < wd->px_ns && a >= bx.end &&
		    b - bx.start <= wd->px_ns) {
			bx.end = b;
			bx.busy += b - a;
			bx.count++;
			if (b - a > bx.longest) {
				bx.longest = b - a;
				bx.best = w;
			}
			continue;
		}
		if (bx.have)
			put_box(wd, j, thread, &bx);
		bx = (struct sbox){
			.have = true, .start = a, .end = b, .busy = b - a, .longest = b - a, .count = 1, .best = w
		};
	}
	if (bx.have)
		put_box(wd, j, thread, &bx);
	json_array_end(j);
}

/* [release, from thread id, to thread id, end of the wait, operation]:
 * at most one per thread and pixel. */
static void put_arrows(struct swindow *wd, struct json *j, const uint32_t *shown, uint32_t nshown)
{
	const struct synctrack *st = &wd->m->sync;
	uint64_t more = 0, count = 0;

	json_array_begin(j, "arrows");
	for (uint32_t s = 0; s < nshown; s++) {
		const struct synctrack_thread *t = shown[s] < st->nthreads ? &st->threads[shown[s]] : NULL;
		uint64_t last_px = UINT64_MAX;

		for (size_t i = t ? ktrack_first_after(t->w, t->n, sizeof(*t->w), wd->from) : 0; t && i < t->n; i++) {
			const struct synctrack_wait *w = &t->w[i];

			if (w->start >= wd->to)
				break;
			if (w->waker == SYNCWAKE_NONE || !w->release_ns || w->release_ns < wd->from ||
			    w->release_ns >= wd->to || !info_thread(&wd->m->info, w->waker) ||
			    (w->release_ns - wd->from) / wd->px_ns == last_px)
				continue;
			if (count == SYNCTRACK_ARROWS_MAX) {
				more++;
				continue;
			}
			last_px = (w->release_ns - wd->from) / wd->px_ns;
			count++;
			json_array_begin(j, NULL);
			json_u64(j, NULL, rel(wd, w->release_ns));
			json_u64(j, NULL, w->waker);
			json_u64(j, NULL, shown[s]);
			json_u64(j, NULL, rel(wd, w->end));
			put_text(wd, j, syncevent_op_name(w->op));
			json_array_end(j);
		}
	}
	json_array_end(j);
	json_u64(j, "arrows_more", more);
}

int synctrack_answer(struct servemodel *m, const struct serve_query *q, struct json *j, FILE *out)
{
	const struct serve_info *in = &m->info;
	struct synctrack *st = &m->sync;
	uint64_t span = in->last_ns > in->first_ns ? in->last_ns - in->first_ns : 1, from, to, px, thread, more = 0;
	uint32_t shown[SYNCTRACK_THREADS_MAX], nshown = 0;
	struct swindow wd = { .m = m, .origin = in->first_ns };

	if (!st->has_sync) {
		json_object_begin(j, NULL);
		json_bool(j, "sync", false);
		json_str(j, "reason",
		         m->live ? "no sync events in this session: start the program with --sync" : SYNCTRACK_NO_SYNC);
		json_object_end(j);
		return HTTP_OK;
	}
	if (!servequery_u64(q, "from", 0, UINT64_MAX / 4, &from) ||
	    !servequery_u64(q, "to", span + 1, UINT64_MAX / 4, &to) ||
	    !servequery_u64(q, "px", 1000, TIMELINE_PX_MAX, &px) || to <= from || !px)
		return servequery_error(out, HTTP_BAD_REQUEST, "from < to (ns from the start), px up to 16384");
	if (!servequery_u64(q, "thread", UINT64_MAX, UINT64_MAX, &thread) ||
	    (thread != UINT64_MAX && !info_thread(in, (uint32_t)thread)))
		return servequery_error(out, HTTP_NOT_FOUND, "no such thread");
	wd.from = in->first_ns + from;
	wd.to = in->first_ns + to;
	wd.px_ns = (to - from) / px ? (to - from) / px : 1;
	names_init(&wd.names);
	/* the asked thread first, then the others alive in the window (a
	 * releaser needs its row for the arrow) */
	if (thread != UINT64_MAX)
		shown[nshown++] = (uint32_t)thread;
	for (uint32_t i = 0; i < in->nthreads; i++) {
		const struct serve_thread *t = &in->threads[i];

		if (t->id == thread || t->last_ns < wd.from || t->first_ns >= wd.to)
			continue;
		if (nshown == SYNCTRACK_THREADS_MAX)
			more++;
		else
			shown[nshown++] = t->id;
	}
	json_object_begin(j, NULL);
	json_bool(j, "sync", true);
	json_u64(j, "from", from);
	json_u64(j, "to", to);
	json_u64(j, "px", px);
	json_array_begin(j, "threads");
	for (uint32_t s = 0; s < nshown; s++) {
		const struct serve_thread *t = info_thread(in, shown[s]);

		json_object_begin(j, NULL);
		json_u64(j, "id", shown[s]);
		json_u64(j, "tid", t ? t->tid : 0);
		json_str(j, "comm", t ? t->comm : "");
		json_u64(j, "first", t ? rel(&wd, t->first_ns) : 0);
		json_u64(j, "last", t ? rel(&wd, t->last_ns) : 0);
		put_waits(&wd, j, shown[s]);
		json_object_end(j);
	}
	json_array_end(j);
	json_u64(j, "threads_more", more);
	put_arrows(&wd, j, shown, nshown);
	json_object_begin(j, "names");
	for (uint32_t i = 0; i < wd.names.n; i++) {
		char key[16];

		snprintf(key, sizeof(key), "%u", i);
		json_str(j, key, names_get(&wd.names, i));
	}
	json_object_end(j);
	json_u64(j, "hidden", wd.hidden);
	json_u64(j, "waits", st->waits);
	json_u64(j, "dropped", st->dropped);
	json_object_end(j);
	names_release(&wd.names);
	return wd.oom ? -HTTP_SERVER_ERROR : HTTP_OK;
}

/* ------------------------------------------------------------ the index file */

void serveindex_write_sync(struct indexout *o, const struct synctrack *st)
{
	uint32_t threads = st->nthreads;

	while (threads && !st->threads[threads - 1].n)
		threads--;
	put_u8(o, st->has_sync);
	put_u64(o, st->events);
	put_u64(o, st->dropped);
	put_u32(o, threads);
	for (uint32_t i = 0; i < threads; i++) {
		const struct synctrack_thread *t = &st->threads[i];

		put_u32(o, t->n);
		for (uint32_t k = 0; k < t->n; k++) {
			const struct synctrack_wait *w = &t->w[k];

			put_u64(o, w->start);
			put_u64(o, w->end);
			put_u64(o, w->release_ns);
			put_u64(o, w->obj);
			put_u64(o, w->obj2);
			put_u64(o, w->func);
			put_u32(o, w->waker);
			put_u32(o, w->flags);
			put_u8(o, w->op);
		}
	}
}

/* The bytes of one wait in the file. */
#define SYNCTRACK_WAIT_BYTES (6 * 8 + 2 * 4 + 1)

int serveindex_read_sync(struct indexin *c, struct synctrack *st)
{
	uint32_t threads;

	st->has_sync = get_u8(c) != 0;
	st->events = get_u64(c);
	st->dropped = get_u64(c);
	threads = get_u32(c);
	if (threads > WALK_STREAMS_MAX || !room_for(c, threads, 4))
		return -EBADMSG;
	for (uint32_t i = 0; i < threads && !c->bad; i++) {
		uint32_t n = get_u32(c);
		uint64_t last_end = 0;

		if (!room_for(c, n, SYNCTRACK_WAIT_BYTES))
			return -EBADMSG;
		for (uint32_t k = 0; k < n; k++) {
			struct synctrack_wait *w = wait_add(st, i);

			if (!w)
				return -ENOMEM;
			w->start = get_u64(c);
			w->end = get_u64(c);
			w->release_ns = get_u64(c);
			w->obj = get_u64(c);
			w->obj2 = get_u64(c);
			w->func = get_u64(c);
			w->waker = get_u32(c);
			w->flags = get_u32(c);
			w->op = get_u8(c);
			/* the window's search needs the ends in order */
			if (w->end < w->start || w->end < last_end || w->op >= LP_SYNC_OPS)
				return -EBADMSG;
			last_end = w->end;
		}
	}
	st->settled = true;
	return c->bad ? -EBADMSG : 0;
}
