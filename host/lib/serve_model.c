/* The web UI server's view of a trace (see serve_model.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/chunk.h"
#include "host/lib/serve_model.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ the walk callbacks */

static void on_begin(void *ctx, struct walk_stream *s)
{
	struct servemodel *m = ctx;

	if (m->inner.begin)
		m->inner.begin(m->inner.ctx, s);
	calltree_begin(&m->tree, s);
	timeline_begin(&m->tl, s);
}

static void on_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct servemodel *m = ctx;

	if (m->inner.entry)
		m->inner.entry(m->inner.ctx, s, ns, addr, depth, flags);
	calltree_entry(&m->tree, s, ns, addr, depth, flags);
}

static void on_exit_ev(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	struct servemodel *m = ctx;

	if (m->inner.exit)
		m->inner.exit(m->inner.ctx, s, ns, addr, depth, entry_ns, flags);
	calltree_exit(&m->tree, s, ns, addr, depth, entry_ns, flags);
	timeline_exit(&m->tl, s, ns, addr, depth, entry_ns, flags);
}

static void on_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct servemodel *m = ctx;

	if (m->inner.lost)
		m->inner.lost(m->inner.ctx, s, ns, count);
	timeline_lost(&m->tl, s, ns, count);
}

static void on_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	struct servemodel *m = ctx;

	if (m->inner.call)
		m->inner.call(m->inner.ctx, s, exit_ns, addr, duration_ns);
}

static void on_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	struct servemodel *m = ctx;

	if (m->inner.syscall)
		m->inner.syscall(m->inner.ctx, s, sc);
	calltree_syscall(&m->tree, s, sc);
	timeline_syscall(&m->tl, s, sc);
}

static void on_end(void *ctx, struct walk_stream *s)
{
	struct servemodel *m = ctx;

	if (m->inner.end)
		m->inner.end(m->inner.ctx, s);
}

static void model_init(struct servemodel *m)
{
	memset(m, 0, sizeof(*m));
	names_init(&m->names);
	calltree_init(&m->tree);
	timeline_init(&m->tl);
	flame_init(&m->flame);
	m->ops = (struct walk_ops){ .ctx = m,
		                    .begin = on_begin,
		                    .entry = on_entry,
		                    .exit = on_exit_ev,
		                    .lost = on_lost,
		                    .call = on_call,
		                    .syscall = on_syscall,
		                    .end = on_end };
}

/* The trace file's own consumers, behind the model's callbacks. */
static void trace_begin(void *ctx, struct walk_stream *s)
{
	profile_begin(((struct servemodel *)ctx)->prof, s);
}

static void trace_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	profile_entry(((struct servemodel *)ctx)->prof, s, ns, addr, depth, flags);
}

static void trace_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	profile_exit(((struct servemodel *)ctx)->prof, s, ns, addr, depth, entry_ns, flags);
}

static void trace_call(void *ctx, struct walk_stream *s, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	profile_call(((struct servemodel *)ctx)->prof, s, exit_ns, addr, duration_ns);
}

static void trace_syscall(void *ctx, struct walk_stream *s, const struct walk_syscall *sc)
{
	sysstats_syscall(((struct servemodel *)ctx)->sys, s, sc);
}

/* walk_run, with the timeline told where each chunk is. */
static int read_all(struct servemodel *m)
{
	struct walk *w = m->w;
	const uint8_t *payload;
	struct chunk_info ci;
	off_t at;
	int r;

	walk_begin(w, &m->ops);
	reader_seek(&w->r, LP_FILE_HEADER_SIZE);
	w->r.state = READER_OK;
	for (at = w->r.offset; reader_next(&w->r, &ci, &payload) > 0; at = w->r.offset) {
		if (ci.type == LP_CHUNK_EVENTS)
			timeline_chunk_begin(&m->tl, w, at, payload, ci.len);
		r = walk_feed(w, ci.type, payload, ci.len);
		if (ci.type == LP_CHUNK_EVENTS)
			timeline_chunk_end(&m->tl, w);
		if (r == -ENOMEM)
			return r;
		if (r) {
			w->r.state = READER_DAMAGED;
			snprintf(w->r.damage, sizeof(w->r.damage),
			         "undecodable events in the chunk ending at byte %lld", (long long)w->r.offset);
			break;
		}
	}
	walk_end(w);
	return 0;
}

int servemodel_load(struct servemodel *m, const char *dir, char *err, size_t errlen)
{
	uint64_t t = now_ns();
	int r;

	model_init(m);
	m->w = &m->own_w;
	m->prof = &m->own_prof;
	m->sys = &m->own_sys;
	profile_init(m->prof);
	r = walk_open(m->w, dir, NULL, err, errlen);
	if (r)
		return r;
	sysstats_init(m->sys, m->w, 0);
	m->inner = (struct walk_ops){ .ctx = m,
		                      .begin = trace_begin,
		                      .entry = trace_entry,
		                      .exit = trace_exit,
		                      .call = trace_call,
		                      .syscall = trace_syscall };
	if (read_all(m) || m->prof->oom || m->sys->oom || m->tree.oom || m->tl.oom) {
		snprintf(err, errlen, "cannot read trace '%s': out of memory", dir);
		return -ENOMEM;
	}
	r = timeline_open(&m->tl, dir);
	if (r) {
		snprintf(err, errlen, "cannot read trace '%s' again: %s", dir, strerror(-r));
		return r;
	}
	if (servemodel_refresh(m)) {
		snprintf(err, errlen, "cannot read trace '%s': out of memory", dir);
		return -ENOMEM;
	}
	m->load_ns = now_ns() - t;
	return 0;
}

int servemodel_attach(struct servemodel *m, struct walk *w, struct profile *prof, struct sysstats *sys,
                      struct walk_ops *ops)
{
	model_init(m);
	m->live = true;
	m->w = w;
	m->prof = prof;
	m->sys = sys;
	m->inner = *ops;
	*ops = m->ops;
	return 0;
}

void servemodel_touch(struct servemodel *m)
{
	m->rows_valid = false;
	m->flame_valid = false;
	m->generation++;
}

int servemodel_refresh(struct servemodel *m)
{
	static const struct profile_order by_total = { .keys = { PROFILE_TOTAL }, .nkeys = 1 };

	if (!m->rows_valid) {
		profile_rows_release(&m->rows);
		if (profile_collect(m->w, 0, &by_total, &m->rows))
			return -ENOMEM;
		m->rows_valid = true;
	}
	if (calltree_name(&m->tree, m->w, &m->names))
		return -ENOMEM;
	if (!m->flame_valid) {
		if (flame_build(&m->flame, &m->tree))
			return -ENOMEM;
		m->flame_valid = true;
	}
	return 0;
}

void servemodel_release(struct servemodel *m)
{
	profile_rows_release(&m->rows);
	flame_release(&m->flame);
	timeline_release(&m->tl);
	calltree_release(&m->tree);
	names_release(&m->names);
	if (m->w == &m->own_w) {
		sysstats_release(&m->own_sys);
		profile_release(&m->own_prof);
		walk_release(&m->own_w);
	}
	memset(m, 0, sizeof(*m));
}
