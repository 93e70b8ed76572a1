/* The per-thread timeline: chunk index, grid and windows (see
 * serve/timeline.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "common/filter.h"
#include "common/sysevent.h"
#include "host/lib/analysis/calltree.h"
#include "host/lib/serve/timeline.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/hashindex.h"

#define GRID_FIRST_SHIFT 6u   /* 64 ns per bucket before the thread's time grows */
#define WINDOW_DEPTH_MAX 512u /* call depths sent in a window */
#define FILL_FULL 1000u       /* fill per mille of a span without gaps */
#define GOLDEN_RATIO_32 0x9e3779b1u

void timeline_init(struct timeline *tl)
{
	memset(tl, 0, sizeof(*tl));
	tl->decode_max = TIMELINE_DECODE_EVENTS_MAX;
	tl->chunks_max = TIMELINE_CHUNKS_MAX;
}

static void stream_free(struct timeline_stream *ts)
{
	uint32_t d;

	if (!ts)
		return;
	for (d = 0; d < TIMELINE_GRID_DEPTH; d++)
		free(ts->level[d]);
	free(ts->chunks);
	free(ts->lost);
	free(ts);
}

void timeline_release(struct timeline *tl)
{
	uint32_t i;

	for (i = 0; i < tl->nstreams; i++)
		stream_free(tl->streams[i]);
	free(tl->streams);
	free(tl->snap_frames);
	if (tl->have_reader)
		reader_release(&tl->r);
	timeline_init(tl);
}

static struct timeline_stream *stream_at(const struct timeline *tl, uint32_t index)
{
	return index < tl->nstreams ? tl->streams[index] : NULL;
}

void timeline_begin(void *ctx, struct walk_stream *s)
{
	struct timeline *tl = ctx;
	struct timeline_stream *ts;

	if (tl->off)
		return;
	if (s->index >= tl->nstreams) {
		uint32_t n = s->index + 1 > 2 * tl->nstreams ? s->index + 1 : 2 * tl->nstreams;
		struct timeline_stream **v = realloc(tl->streams, n * sizeof(*v));

		if (!v) {
			tl->oom = true;
			return;
		}
		memset(v + tl->nstreams, 0, (n - tl->nstreams) * sizeof(*v));
		tl->streams = v;
		tl->nstreams = n;
	}
	ts = calloc(1, sizeof(*ts));
	if (!ts) {
		tl->oom = true;
		return;
	}
	ts->ws = s;
	tl->streams[s->index] = ts;
}

/* ------------------------------------------------------------ the grid */

static void vote(struct timeline_bucket *b, uint64_t addr, uint64_t ns)
{
	if (!ns)
		return;
	if (b->cand == addr) {
		b->cand_ns += ns;
	} else if (b->cand_ns >= ns) {
		b->cand_ns -= ns;
	} else {
		b->cand = addr;
		b->cand_ns = ns - b->cand_ns;
	}
}

/* Doubles the bucket width: bucket i takes old buckets 2i and 2i + 1. */
static void grid_widen(struct timeline_stream *ts)
{
	uint32_t d, i;

	ts->width *= 2;
	ts->shift++;
	for (d = 0; d < TIMELINE_GRID_DEPTH; d++) {
		struct timeline_bucket *lv = ts->level[d];

		if (!lv)
			continue;
		for (i = 0; i < TIMELINE_GRID_BUCKETS / 2; i++) {
			struct timeline_bucket a = lv[2 * i], b = lv[2 * i + 1];

			a.busy_ns += b.busy_ns;
			a.calls += b.calls;
			a.syscalls += b.syscalls;
			vote(&a, b.cand, b.cand_ns);
			lv[i] = a;
		}
		memset(lv + TIMELINE_GRID_BUCKETS / 2, 0, TIMELINE_GRID_BUCKETS / 2 * sizeof(*lv));
	}
}

/* Called on every exit: a few bucket updates, amortised (the spans of one
 * depth do not overlap, so together they cover each bucket once). */
static void grid_add(struct timeline *tl, struct timeline_stream *ts, uint32_t depth, uint64_t a, uint64_t b,
                     uint64_t addr, bool sys)
{
	struct timeline_bucket *lv;
	uint64_t i, i0, i1;

	if (depth + 1 > ts->max_depth)
		ts->max_depth = depth + 1;
	if (depth >= TIMELINE_GRID_DEPTH)
		return;
	if (!ts->width) {
		ts->base = ts->ws->first_ns;
		ts->shift = GRID_FIRST_SHIFT;
		ts->width = 1ull << ts->shift;
	}
	if (a < ts->base)
		a = ts->base;
	if (b < a)
		b = a;
	while (b - ts->base >= ts->width * TIMELINE_GRID_BUCKETS)
		grid_widen(ts);
	lv = ts->level[depth];
	if (!lv) {
		size_t bytes = TIMELINE_GRID_BUCKETS * sizeof(*lv);

		if (ts->grid_partial || tl->grid_bytes + bytes > TIMELINE_GRID_BYTES_MAX ||
		    !(lv = calloc(TIMELINE_GRID_BUCKETS, sizeof(*lv)))) {
			ts->grid_partial = true;
			return;
		}
		tl->grid_bytes += bytes;
		ts->level[depth] = lv;
	}
	i0 = (a - ts->base) >> ts->shift;
	i1 = (b - ts->base) >> ts->shift;
	lv[i0].calls++;
	if (sys)
		lv[i0].syscalls++;
	if (__builtin_expect(i1 == i0, 1)) { /* most calls are shorter than a bucket */
		lv[i0].busy_ns += b - a;
		vote(&lv[i0], addr, b - a);
		return;
	}
	if (!((b - ts->base) & (ts->width - 1)))
		i1--;
	for (i = i0; i <= i1; i++) {
		uint64_t start = ts->base + i * ts->width, end = start + ts->width;
		uint64_t ov = (b < end ? b : end) - (a > start ? a : start);

		lv[i].busy_ns += ov;
		vote(&lv[i], addr, ov);
	}
}

void timeline_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                   unsigned flags)
{
	struct timeline *tl = ctx;
	struct timeline_stream *ts = stream_at(tl, s->index);

	if (ts)
		grid_add(tl, ts, depth, entry_ns, ns, addr, false);
}

void timeline_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct timeline *tl = ctx;
	struct timeline_stream *ts = stream_at(tl, s->index);

	if (ts && sc->has_enter)
		grid_add(tl, ts, sc->depth, sc->enter_ns, sc->has_exit ? sc->exit_ns : sc->enter_ns,
		         CALLTREE_SYSCALL_KEY(sc->arch, sc->nr), true);
}

void timeline_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct timeline *tl = ctx;
	struct timeline_stream *ts = stream_at(tl, s->index);

	if (!ts)
		return;
	if (ts->nlost == TIMELINE_LOST_MAX) {
		ts->lost[ts->nlost - 1][1] += count; /* the rest counted with the last mark */
		return;
	}
	if (!(ts->nlost & (ts->nlost - 1)) || !ts->lost) {
		uint32_t cap = ts->nlost ? 2 * ts->nlost : 16;
		uint64_t(*v)[2] = realloc(ts->lost, cap * sizeof(*v));

		if (!v)
			return;
		ts->lost = v;
	}
	ts->lost[ts->nlost][0] = ns;
	ts->lost[ts->nlost][1] = count;
	ts->nlost++;
}

void timeline_end(void *ctx, struct walk_stream *s)
{
	struct timeline *tl = ctx;
	struct timeline_stream *ts = stream_at(tl, s->index);

	if (ts)
		ts->ended = true;
}

void timeline_walk_ops(struct timeline *tl, struct walk_ops *ops)
{
	ops->ctx = tl;
	ops->begin = timeline_begin;
	ops->exit = timeline_exit;
	ops->syscall = timeline_syscall;
	ops->lost = timeline_lost;
	ops->end = timeline_end;
}

void timeline_live_newest(struct timeline *tl, uint64_t ns)
{
	if (ns > tl->newest_ns)
		tl->newest_ns = ns;
}

/* ------------------------------------------------------------ the chunk index */

/* A live session's index is full: the oldest half of every thread's chunks
 * goes (windows there are drawn from the grid), and the open calls kept
 * for the rest (and for the chunk `also`, not yet indexed, or NULL) move
 * together. */
static void drop_oldest(struct timeline *tl, struct timeline_chunk *also)
{
	struct timeline_frame *v = malloc((size_t)(tl->snap_cap ? tl->snap_cap : 1) * sizeof(*v));
	uint32_t i, k, n = 0;

	tl->nchunks_all = 0;
	for (i = 0; i < tl->nstreams; i++) {
		struct timeline_stream *ts = tl->streams[i];
		uint32_t drop;

		if (!ts || !ts->nchunks)
			continue;
		drop = (ts->nchunks + 1) / 2;
		memmove(ts->chunks, ts->chunks + drop, (ts->nchunks - drop) * sizeof(*ts->chunks));
		ts->nchunks -= drop;
		ts->head_missing = true;
		tl->nchunks_all += ts->nchunks;
		for (k = 0; k < ts->nchunks; k++) {
			struct timeline_chunk *c = &ts->chunks[k];

			if (v && c->nsnap)
				memcpy(v + n, tl->snap_frames + c->snap, c->nsnap * sizeof(*v));
			c->snap = v ? n : 0;
			c->nsnap = v ? c->nsnap : 0; /* no memory: the window decoder will not know these calls */
			n += c->nsnap;
		}
	}
	if (also) {
		if (v && also->nsnap)
			memcpy(v + n, tl->snap_frames + also->snap, also->nsnap * sizeof(*v));
		also->snap = v ? n : 0;
		also->nsnap = v ? also->nsnap : 0;
		n += also->nsnap;
	}
	free(tl->snap_frames);
	tl->snap_frames = v;
	tl->snap_cap = v ? tl->snap_cap : 0;
	tl->nsnap_frames = n;
}

/* The stream of (image, tid), or NULL: the streams are few next to the
 * chunks, and this runs once per chunk. */
static struct timeline_stream *stream_of(const struct timeline *tl, uint32_t image, uint32_t tid)
{
	uint32_t i;

	for (i = tl->nstreams; i > 0; i--) {
		struct timeline_stream *ts = tl->streams[i - 1];

		if (ts && ts->ws->image == image && ts->ws->tid == tid)
			return ts;
	}
	return NULL;
}

void timeline_chunk_begin(struct timeline *tl, struct walk *w, off_t offset, const uint8_t *payload, size_t len)
{
	struct timeline_chunk *c = &tl->pending;
	struct timeline_stream *ts;

	tl->pending_valid = false;
	tl->sym = w->sym;
	if (decoder_begin(&tl->dec, payload, len))
		return;
	memset(c, 0, sizeof(*c));
	c->offset = offset;
	c->first_ns = tl->dec.time;
	tl->pending_image = tl->dec.image;
	tl->pending_tid = tl->dec.tid;
	tl->pending_events = w->events;
	tl->pending_valid = true;
	ts = stream_of(tl, tl->dec.image, tl->dec.tid);
	if (ts) {
		const struct filter_stream *fs = &ts->ws->fs;
		uint32_t n = fs->depth < TIMELINE_SNAP_MAX ? fs->depth : TIMELINE_SNAP_MAX, i;

		c->depth = fs->depth + fs->overflow;
		if (tl->live && tl->nsnap_frames + n > TIMELINE_SNAP_FRAMES_MAX)
			drop_oldest(tl, NULL);
		if (tl->nsnap_frames + n > tl->snap_cap) {
			uint32_t cap = tl->snap_cap ? tl->snap_cap : 4096;
			struct timeline_frame *v;

			while (cap < tl->nsnap_frames + n)
				cap *= 2;
			if (cap > TIMELINE_SNAP_FRAMES_MAX || !(v = realloc(tl->snap_frames, cap * sizeof(*v))))
				n = 0; /* the window decoder will not know these calls */
			else {
				tl->snap_frames = v;
				tl->snap_cap = cap;
			}
		}
		c->snap = tl->nsnap_frames;
		c->nsnap = n;
		for (i = 0; i < n; i++) {
			tl->snap_frames[c->snap + i].addr = fs->stack[i].addr;
			tl->snap_frames[c->snap + i].entry_ns = fs->stack[i].entry_ns;
		}
		tl->nsnap_frames += n;
	}
}

void timeline_chunk_end(struct timeline *tl, struct walk *w)
{
	struct timeline_stream *ts;

	if (!tl->pending_valid)
		return;
	tl->pending_valid = false;
	ts = stream_of(tl, tl->pending_image, tl->pending_tid);
	if (!ts)
		return;
	if (tl->pending.offset < 0 && !tl->have_reader) {
		ts->head_missing = true; /* live, no file yet: nothing to read it from */
		return;
	}
	if (tl->live && tl->nchunks_all >= tl->chunks_max)
		drop_oldest(tl, &tl->pending);
	tl->pending.events = (uint32_t)(w->events - tl->pending_events);
	tl->pending.last_ns = ts->ws->last_ns;
	if (ts->nchunks == ts->chunks_cap) {
		uint32_t cap = ts->chunks_cap ? 2 * ts->chunks_cap : 16;
		struct timeline_chunk *v = realloc(ts->chunks, cap * sizeof(*v));

		if (!v) {
			tl->oom = true;
			return;
		}
		ts->chunks = v;
		ts->chunks_cap = cap;
	}
	ts->chunks[ts->nchunks++] = tl->pending;
	tl->nchunks_all++;
}

int timeline_open(struct timeline *tl, const char *dir)
{
	char err[256];
	int r = reader_open(&tl->r, dir, err, sizeof(err));

	if (!r)
		tl->have_reader = true;
	return r;
}

/* ------------------------------------------------------------ windows */

/* A span waiting at one depth: narrow ones merge into it. */
struct pending {
	bool has, narrow;
	uint64_t start, end, busy;
	uint64_t cand, cand_ns; /* the function most of it went to */
	uint32_t calls;
	unsigned flags;
};

struct window {
	struct timeline *tl;
	timeline_namer namer;
	void *ctx;
	uint32_t index;
	const struct names *nt;
	struct timeline_stream *ts;
	struct json *j;
	uint64_t origin, t0, t1, px_ns;
	struct pending *pend; /* per depth, WINDOW_DEPTH_MAX */
	uint32_t spans;
	bool truncated;
	struct hashindex used; /* the name ids sent, as items */
	bool oom;
};

/* ctx: unused; the items are the name ids themselves */
static bool id_eq(const void *ctx, uint32_t item, const void *key)
{
	(void)ctx;
	return item == *(const uint32_t *)key;
}

static uint32_t name_of(struct window *wn, uint64_t addr)
{
	uint32_t id = wn->namer(wn->ctx, wn->index, addr), slot;
	/* Fibonacci hashing: it also orders the window's "names" object,
	 * which lists the index slot by slot */
	uint64_t hash = (uint32_t)((id + 1) * GOLDEN_RATIO_32);

	if (id == NAMES_NONE) {
		wn->oom = true;
		return id;
	}
	if (hashindex_reserve(&wn->used)) {
		wn->oom = true;
		return id;
	}
	slot = hashindex_slot(&wn->used, hash, id_eq, NULL, &id);
	if (!wn->used.val[slot])
		hashindex_put(&wn->used, slot, hash, id);
	return id;
}

static void put_span(struct window *wn, uint32_t depth, uint64_t start, uint64_t end, uint64_t addr, uint32_t calls,
                     unsigned flags, uint64_t busy)
{
	struct json *j = wn->j;
	uint64_t len = end - start;

	if (wn->spans >= TIMELINE_SPANS_MAX) {
		wn->truncated = true;
		return;
	}
	wn->spans++;
	json_array_begin(j, NULL);
	json_u64(j, NULL, depth);
	json_i64(j, NULL, (int64_t)(start - wn->origin));
	json_i64(j, NULL, (int64_t)(end - wn->origin));
	json_u64(j, NULL, name_of(wn, addr));
	json_u64(j, NULL, calls);
	json_u64(j, NULL, flags);
	json_u64(j, NULL, len ? (busy >= len ? FILL_FULL : busy * FILL_FULL / len) : FILL_FULL);
	json_array_end(j);
}

static void flush(struct window *wn, uint32_t depth)
{
	struct pending *p = &wn->pend[depth];

	if (p->has)
		put_span(wn, depth, p->start, p->end, p->cand, p->calls, p->flags, p->busy);
	p->has = false;
}

/* One call or syscall, in time order within its depth. */
static void span(struct window *wn, uint32_t depth, uint64_t start, uint64_t end, uint64_t addr, unsigned flags)
{
	struct pending *p;
	bool narrow = end - start < wn->px_ns;

	if (end < wn->t0 || start >= wn->t1 || !addr)
		return;
	if (depth >= WINDOW_DEPTH_MAX) {
		wn->truncated = true;
		return;
	}
	p = &wn->pend[depth];
	if (p->has && p->narrow && narrow && start < p->end + wn->px_ns && end <= p->start + 2 * wn->px_ns) {
		if (end > p->end)
			p->end = end;
		p->busy += end - start;
		p->calls++;
		p->flags |= TIMELINE_MERGED | (flags & TIMELINE_SYSCALL);
		if (p->cand == addr) {
			p->cand_ns += end - start;
		} else if (p->cand_ns >= end - start) {
			p->cand_ns -= end - start;
		} else {
			p->cand = addr;
			p->cand_ns = end - start - p->cand_ns;
		}
		return;
	}
	flush(wn, depth);
	p->has = true;
	p->narrow = narrow;
	p->start = start;
	p->end = end;
	p->busy = end - start;
	p->cand = addr;
	p->cand_ns = end - start;
	p->calls = 1;
	p->flags = flags;
}

struct wframe {
	uint64_t addr, entry_ns;
};

struct wstack {
	struct wframe *f;
	uint32_t depth, cap;
};

static int push(struct wstack *st, uint64_t addr, uint64_t ns)
{
	if (st->depth == st->cap) {
		uint32_t cap = st->cap ? 2 * st->cap : 256;
		struct wframe *v;

		if (cap > FILTER_STACK_MAX)
			return -ENOSPC;
		v = realloc(st->f, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		st->f = v;
		st->cap = cap;
	}
	st->f[st->depth].addr = addr;
	st->f[st->depth].entry_ns = ns;
	st->depth++;
	return 0;
}

static void pop(struct window *wn, struct wstack *st, uint64_t ns, unsigned flags)
{
	struct wframe *f = &st->f[--st->depth];

	span(wn, st->depth, f->entry_ns, ns, f->addr, flags);
}

/* Decodes chunks [c0, c1] of the stream again. */
static int decode_window(struct window *wn, uint32_t c0, uint32_t c1)
{
	struct timeline *tl = wn->tl;
	struct timeline_stream *ts = wn->ts;
	const struct timeline_chunk *first = &ts->chunks[c0];
	struct wstack st = { 0 };
	struct decoder *d = &tl->dec;
	uint32_t overflow = 0, i, k;
	bool sc_open = false;
	uint64_t sc_key = 0, sc_ns = 0, last = first->first_ns;
	uint32_t sc_depth = 0;
	int r = 0;

	for (i = 0; i < first->depth && i < FILTER_STACK_MAX; i++) {
		const struct timeline_frame *f = i < first->nsnap ? &tl->snap_frames[first->snap + i] : NULL;

		if (push(&st, f ? f->addr : 0, f ? f->entry_ns : first->first_ns)) {
			r = -ENOMEM;
			goto out;
		}
	}
	for (k = c0; k <= c1 && !wn->oom; k++) {
		const uint8_t *payload;
		struct chunk_info ci;
		struct lp_event ev;

		tl->r.state = READER_OK; /* a live file's end was met before: it has grown since */
		if (reader_seek(&tl->r, ts->chunks[k].offset) || reader_next(&tl->r, &ci, &payload) <= 0 ||
		    ci.type != LP_CHUNK_EVENTS || decoder_begin(d, payload, ci.len)) {
			r = -EIO;
			goto out;
		}
		while (decoder_next(d, &ev) > 0) {
			last = ev.time;
			if (sc_open && ev.type <= LP_EV_EXIT) {
				span(wn, sc_depth, sc_ns, ev.time, sc_key, TIMELINE_SYSCALL | TIMELINE_CUT);
				sc_open = false;
			}
			if (ev.type <= LP_EV_EXIT && tl->sym)
				ev.value = symbolizer_code_addr(tl->sym, d->image, ev.value, ev.time);
			switch (ev.type) {
			case LP_EV_ENTRY:
				if (overflow || push(&st, ev.value, ev.time))
					overflow++;
				break;
			case LP_EV_EXIT:
				if (overflow) {
					overflow--;
					break;
				}
				for (i = st.depth; i > 0 && st.f[i - 1].addr != ev.value; i--)
					;
				if (!i)
					break; /* matches no open call */
				while (st.depth > i)
					pop(wn, &st, ev.time, TIMELINE_CUT);
				pop(wn, &st, ev.time, 0);
				break;
			case LP_EV_LONGJMP:
				overflow = 0;
				while (st.depth > ev.value)
					pop(wn, &st, ev.time, TIMELINE_CUT);
				break;
			case LP_EV_TASK:
				if (ev.arg == LP_TASK_FORK)
					for (i = 0; i < ev.nframes; i++)
						if (push(&st,
						         tl->sym ? symbolizer_code_addr(tl->sym, d->image, ev.frames[i],
						                                        ev.time)
						                 : ev.frames[i],
						         ev.time))
							overflow++;
				break;
			case LP_EV_SYSCALL_ENTER:
			case LP_EV_SYSCALL_EXIT: {
				struct sysevent se;

				if (sysevent_parse(&ev, &se))
					break;
				if (se.enter) {
					if (sc_open)
						span(wn, sc_depth, sc_ns, ev.time, sc_key,
						     TIMELINE_SYSCALL | TIMELINE_CUT);
					sc_open = true;
					sc_key = CALLTREE_SYSCALL_KEY(se.arch, se.nr);
					sc_ns = ev.time;
					sc_depth = st.depth;
				} else if (sc_open && sc_key == CALLTREE_SYSCALL_KEY(se.arch, se.nr)) {
					span(wn, sc_depth, sc_ns, ev.time, sc_key, TIMELINE_SYSCALL);
					sc_open = false;
				}
				break;
			}
			default:
				break;
			}
		}
	}
	/* calls still open: they end after what was read (or, at the end of
	 * the thread, are unfinished there; in a live session they run on to
	 * the newest event, or past the window) */
	{
		bool last_chunk = c1 + 1 == ts->nchunks, end = last_chunk && (!tl->live || ts->ended);
		uint64_t reach = last_chunk && !end && tl->newest_ns < wn->t1 ? tl->newest_ns : wn->t1;
		uint64_t at = end ? last : (reach > last ? reach : last);

		if (sc_open)
			span(wn, sc_depth, sc_ns, at, sc_key, TIMELINE_SYSCALL | (end ? TIMELINE_CUT : TIMELINE_OPEN));
		while (st.depth)
			pop(wn, &st, at, end ? TIMELINE_CUT : TIMELINE_OPEN);
	}
out:
	free(st.f);
	return r;
}

/* Draws the window from the grid: runs of buckets with the same function. */
static void grid_window(struct window *wn)
{
	struct timeline_stream *ts = wn->ts;
	uint64_t i0, i1, i;
	uint32_t d;

	if (!ts->width || wn->t1 <= ts->base)
		return;
	i0 = wn->t0 > ts->base ? (wn->t0 - ts->base) / ts->width : 0;
	i1 = (wn->t1 - 1 - ts->base) / ts->width;
	if (i1 >= TIMELINE_GRID_BUCKETS)
		i1 = TIMELINE_GRID_BUCKETS - 1;
	for (d = 0; d < TIMELINE_GRID_DEPTH && d < ts->max_depth; d++) {
		const struct timeline_bucket *lv = ts->level[d];
		uint64_t run_start = 0, run_busy = 0, run_cand = 0;
		uint32_t run_calls = 0, run_sys = 0;
		uint64_t max_run = wn->px_ns * 2 > ts->width ? wn->px_ns * 2 : ts->width;
		bool in_run = false;

		if (!lv)
			continue;
		for (i = i0; i <= i1 + 1; i++) {
			uint64_t start = ts->base + i * ts->width;
			bool busy = i <= i1 && lv[i].busy_ns;

			if (in_run && (!busy || lv[i].cand != run_cand || start + ts->width - run_start > max_run)) {
				put_span(wn, d, run_start, start, run_cand, run_calls,
				         TIMELINE_MERGED | (run_sys ? TIMELINE_SYSCALL : 0), run_busy);
				in_run = false;
			}
			if (!busy)
				continue;
			if (!in_run) {
				in_run = true;
				run_start = start;
				run_busy = run_calls = run_sys = 0;
				run_cand = lv[i].cand;
			}
			run_busy += lv[i].busy_ns;
			run_calls += lv[i].calls;
			run_sys += lv[i].syscalls;
		}
	}
}

/* A live thread's calls still running are in no grid yet (it takes calls
 * as they end): drawn open from their entry to the newest event. */
static void open_calls(struct window *wn)
{
	const struct walk_stream *s = wn->ts->ws;
	uint64_t end = wn->tl->newest_ns > s->last_ns ? wn->tl->newest_ns : s->last_ns;
	uint32_t d;

	for (d = 0; d < s->fs.depth && d < WINDOW_DEPTH_MAX; d++) {
		const struct filter_frame *f = &s->fs.stack[d];

		if (f->entry_ns < wn->t1 && end >= wn->t0)
			put_span(wn, d, f->entry_ns, end, f->addr, 1, TIMELINE_OPEN, end - f->entry_ns);
	}
	if (s->sc_pending && s->sc.has_enter && !s->sc.has_exit && s->sc.depth < WINDOW_DEPTH_MAX &&
	    s->sc.enter_ns < wn->t1 && end >= wn->t0)
		put_span(wn, s->sc.depth, s->sc.enter_ns, end, CALLTREE_SYSCALL_KEY(s->sc.arch, s->sc.nr), 1,
		         TIMELINE_SYSCALL | TIMELINE_OPEN, end - s->sc.enter_ns);
}

/* Whether every chunk of [c0, c1] can be read again, and nothing of the
 * window is before the index. */
static bool readable(const struct window *wn, uint32_t c0, uint32_t c1)
{
	const struct timeline_stream *ts = wn->ts;
	uint32_t i;

	if (!wn->tl->have_reader || c0 >= ts->nchunks)
		return false;
	if (ts->head_missing && c0 == 0 && wn->t0 < ts->chunks[0].first_ns)
		return false;
	for (i = c0; i <= c1 && i < ts->nchunks; i++)
		if (ts->chunks[i].offset < 0)
			return false;
	return true;
}

int timeline_window(struct timeline *tl, timeline_namer namer, void *ctx, const struct names *nt, uint32_t index,
                    uint64_t origin_ns, uint64_t t0, uint64_t t1, uint32_t px, struct json *j)
{
	struct timeline_stream *ts = stream_at(tl, index);
	struct window wn = {
		.tl = tl, .namer = namer, .ctx = ctx, .index = index, .nt = nt, .ts = ts, .j = j, .origin = origin_ns
	};
	uint64_t events = 0;
	uint32_t c0, c1, i, depth;
	bool exact, open;
	int r = 0;

	if (!ts)
		return -ENOENT;
	if (!px)
		px = 1;
	if (px > TIMELINE_PX_MAX)
		px = TIMELINE_PX_MAX;
	wn.t0 = origin_ns + t0;
	wn.t1 = origin_ns + (t1 > t0 ? t1 : t0 + 1);
	wn.px_ns = (wn.t1 - wn.t0) / px;
	if (!wn.px_ns)
		wn.px_ns = 1;
	/* the chunks that hold the window: the first that ends in it or
	 * after, to the last that begins before its end */
	for (c0 = 0; c0 < ts->nchunks && ts->chunks[c0].last_ns < wn.t0; c0++)
		;
	for (c1 = c0; c1 + 1 < ts->nchunks && ts->chunks[c1 + 1].first_ns < wn.t1; c1++)
		;
	for (i = c0; i < ts->nchunks && i <= c1; i++)
		events += ts->chunks[i].events;
	exact = readable(&wn, c0, c1) && events <= tl->decode_max;
	if (!exact && ts->grid_partial && (!ts->width || !ts->level[0]))
		exact = readable(&wn, c0, c1); /* no grid: decode, as far as the bound allows */
	open = tl->live && !ts->ended;
	wn.pend = calloc(WINDOW_DEPTH_MAX, sizeof(*wn.pend));
	if (!wn.pend)
		return -ENOMEM;
	json_str(j, "mode", exact ? "exact" : "aggregate");
	json_u64(j, "events", events);
	depth = ts->max_depth;
	if (open && ts->ws->fs.depth > depth)
		depth = ts->ws->fs.depth;
	if (open && ts->ws->sc_pending && ts->ws->sc.depth + 1 > depth)
		depth = ts->ws->sc.depth + 1;
	json_u64(j, "max_depth", depth);
	json_u64(j, "px_ns", wn.px_ns);
	json_bool(j, "running", open);
	json_array_begin(j, "spans");
	if (exact && c0 < ts->nchunks) {
		r = decode_window(&wn, c0, c1);
		for (i = 0; i < WINDOW_DEPTH_MAX; i++)
			flush(&wn, i);
	} else if (!exact) {
		grid_window(&wn);
		if (open)
			open_calls(&wn);
	}
	json_array_end(j);
	json_bool(j, "truncated", wn.truncated);
	json_object_begin(j, "names");
	for (i = 0; i < wn.used.cap; i++) {
		char key[16];

		if (!wn.used.val[i])
			continue;
		snprintf(key, sizeof(key), "%u", wn.used.val[i] - 1);
		json_str(j, key, names_get(nt, wn.used.val[i] - 1));
	}
	json_object_end(j);
	json_array_begin(j, "lost");
	for (i = 0; i < ts->nlost; i++) {
		if (ts->lost[i][0] < wn.t0 || ts->lost[i][0] >= wn.t1)
			continue;
		json_array_begin(j, NULL);
		json_i64(j, NULL, (int64_t)(ts->lost[i][0] - origin_ns));
		json_u64(j, NULL, ts->lost[i][1]);
		json_array_end(j);
	}
	json_array_end(j);
	free(wn.pend);
	hashindex_release(&wn.used);
	if (!r && wn.oom)
		r = -ENOMEM;
	return r;
}
