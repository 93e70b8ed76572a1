/* The web UI server's view of a trace (see serve/model.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/chunk.h"
#include "host/lib/serve/index.h"
#include "host/lib/serve/model.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ the consumers */

/* The timeline's chunk index: each EVENTS chunk where it lies, in the trace
 * file, or for a live session in the saved trace (told by the save before
 * the walk is fed the chunk). */
static int chunk_begin(void *ctx, const struct walk_chunk *c)
{
	struct servemodel *m = ctx;

	if (c->type == LP_CHUNK_EVENTS && (!m->live || m->following_save))
		timeline_chunk_begin(&m->tl, m->w, m->live ? m->saved_at : c->offset, c->payload, c->len);
	return 0;
}

/* ... and a trace file's kernel layer, once its tracepoint formats are in
 * (a live session lends its own). */
static int chunk_end(void *ctx, const struct walk_chunk *c)
{
	struct servemodel *m = ctx;

	if (c->type == LP_CHUNK_EVENTS)
		timeline_chunk_end(&m->tl, m->w);
	if (!m->live && servekernel_chunk_end(&m->kern, m->w, &m->tree_ops, c))
		return -ENOMEM;
	return 0;
}

/* The model's own consumers, after those before them in the list: the
 * call trees, then the timeline and its chunk index, then the kernel
 * tracks (which read the trees' open calls). */
static void model_init(struct servemodel *m)
{
	memset(m, 0, sizeof(*m));
	names_init(&m->names);
	names_init(&m->files);
	calltree_init(&m->tree);
	timeline_init(&m->tl);
	flame_init(&m->flame);
	servekernel_init(&m->kern);
	synctrack_init(&m->sync);
	synctrack_walk_ops(&m->sync, &m->sync_ops);
	calltree_walk_ops(&m->tree, &m->tree_ops);
	m->tree_ops.sync = calltree_sync; /* the waits as leaves, as tree shows them */
	timeline_walk_ops(&m->tl, &m->tl_ops);
	m->chunk_ops = (struct walk_ops){ .ctx = m, .chunk_begin = chunk_begin, .chunk_end = chunk_end };
	m->tree_ops.next = &m->tl_ops;
	m->tl_ops.next = &m->chunk_ops;
	m->chunk_ops.next = &m->kern.track_ops;
	m->kern.track_ops.next = &m->sync_ops;
	m->saved_at = -1;
}

/* The pass over the trace file. */
static int load_trace(struct servemodel *m, const char *dir, char *err, size_t errlen)
{
	struct walk_ops prof_ops, sys_ops = { 0 };
	uint32_t i;
	int r;

	m->w = &m->own_w;
	m->prof = &m->own_prof;
	m->sys = &m->own_sys;
	profile_init(m->prof);
	r = walk_open(m->w, dir, NULL, err, errlen);
	if (r)
		return r;
	ktrack_walk_ops(&m->kern.tracks, m->w, &m->tree, &m->kern.track_ops);
	sysstats_init(m->sys, m->w, 0);
	/* The flat profile is not fed function events: it is derived from
	 * the call trees after the pass (calltree_profile), which costs one
	 * visit per call path instead of a hash lookup per event.  Whole-call
	 * records (a duration source filter) are not in the trees and go to
	 * the profile as they come. */
	prof_ops = (struct walk_ops){ .ctx = m->prof, .begin = profile_begin, .call = profile_call, .next = &sys_ops };
	sysstats_walk_ops(m->sys, &sys_ops);
	sys_ops.next = &m->tree_ops;
	m->w->quiet = true;
	r = walk_run(m->w, &prof_ops);
	for (i = 0; !r && i < m->w->nstreams; i++)
		calltree_profile(&m->tree, m->prof, m->w->streams[i]);
	if (r || m->prof->oom || m->sys->oom || m->tree.oom || m->tl.oom || m->kern.tracks.oom || m->sync.oom) {
		snprintf(err, errlen, "cannot read trace '%s': out of memory", dir);
		return -ENOMEM;
	}
	if (servemodel_refresh(m)) {
		snprintf(err, errlen, "cannot read trace '%s': out of memory", dir);
		return -ENOMEM;
	}
	return 0;
}

int servemodel_load(struct servemodel *m, const char *dir, unsigned flags, char *err, size_t errlen)
{
	uint64_t t = now_ns();
	char why[512];
	int r;

	model_init(m);
	m->dir = dir;
	r = -ENOENT;
	if (!(flags & (SERVEMODEL_NO_INDEX | SERVEMODEL_REINDEX))) {
		r = serveindex_read(m, dir, why, sizeof(why));
		if (r == -ENOMEM) {
			snprintf(err, errlen, "cannot read the index of trace '%s': out of memory", dir);
			return r;
		}
		if (r && r != -ENOENT)
			snprintf(m->index_note, sizeof(m->index_note), "%s: reading the trace again", why);
	}
	if (r) {
		r = load_trace(m, dir, err, errlen);
		if (r)
			return r;
		if (!(flags & SERVEMODEL_NO_INDEX) && serveindex_write(m, dir, why, sizeof(why)))
			snprintf(m->index_note, sizeof(m->index_note), "%s", why);
	} else {
		m->from_index = true;
		if (flame_build(&m->flame, &m->tree) || servekernel_refresh(m)) {
			snprintf(err, errlen, "cannot read trace '%s': out of memory", dir);
			return -ENOMEM;
		}
		m->flame_valid = true;
	}
	r = timeline_open(&m->tl, dir);
	if (r) {
		snprintf(err, errlen, "cannot read trace '%s' again: %s", dir, strerror(-r));
		return r;
	}
	r = serveheap_load(&m->heap, dir, m->w, !(flags & (SERVEMODEL_NO_INDEX | SERVEMODEL_REINDEX)),
	                   !(flags & SERVEMODEL_NO_INDEX), err, errlen);
	if (r)
		return r;
	m->load_ns = now_ns() - t;
	return 0;
}

int servemodel_attach(struct servemodel *m, struct walk *w, struct profile *prof, struct sysstats *sys,
                      struct walk_ops *ops)
{
	model_init(m);
	m->live = true;
	m->tl.live = true;
	m->w = w;
	m->prof = prof;
	m->sys = sys;
	ktrack_walk_ops(&m->kern.tracks, m->w, &m->tree, &m->kern.track_ops);
	walk_chain(ops, &m->tree_ops);
	return 0;
}

/* A chunk the live session received, as the saved trace took it, before
 * the walk is fed it: where the timeline's chunk_begin finds it. */
static void saved_chunk(void *ctx, const struct livesave *sv, const void *chunk, size_t len, off_t offset)
{
	struct servemodel *m = ctx;
	struct chunk_info ci;

	m->saved_at = -1;
	if (len < LP_CHUNK_HEADER_SIZE || chunk_header_get(chunk, &ci) || ci.type != LP_CHUNK_EVENTS ||
	    ci.len != len - LP_CHUNK_HEADER_SIZE)
		return;
	if (offset >= 0 && !m->tl.have_reader && timeline_open(&m->tl, sv->dir))
		offset = -1;
	m->saved_at = offset;
}

void servemodel_follow_save(struct servemodel *m, struct livesave *sv)
{
	sv->on_chunk = saved_chunk;
	sv->on_chunk_ctx = m;
	m->following_save = true;
}

void servemodel_timeline_off(struct servemodel *m)
{
	m->timeline_off = true;
	m->tree_ops.next = &m->kern.track_ops; /* neither the timeline nor its chunk index */
}

void servemodel_live_settle(struct servemodel *m)
{
	if (!m->live || m->timeline_off)
		return;
	timeline_live_newest(&m->tl, m->w->last_ns);
}

void servemodel_touch(struct servemodel *m)
{
	m->rows_valid = false;
	m->flame_valid = false;
	m->sync.settled = false;
	m->info_valid = false;
	m->sys_valid = false;
	m->generation++;
}

/* The summary from the walk: the threads in order of first event (the
 * walk's order once it ended; by first event now, while it goes on). */
static int collect_info(struct servemodel *m)
{
	struct walk *w = m->w;
	struct serve_info *in = &m->info;
	struct serve_thread *v;
	char buf[1024];
	uint32_t i;

	v = realloc(in->threads, (w->nstreams + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	in->threads = v;
	in->nthreads = 0;
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];
		struct serve_thread *t;

		if (s->other)
			continue; /* another process's (--kernel-system): not a thread of the program */
		t = &in->threads[in->nthreads++];

		memset(t, 0, sizeof(*t));
		t->id = s->index;
		t->pid = s->pid;
		t->tid = s->tid;
		t->image = s->image;
		t->parent_pid = s->parent_pid;
		t->status = s->status;
		memcpy(t->comm, s->comm, sizeof(t->comm));
		t->after_exec = s->after_exec;
		t->exited = s->exited;
		t->first_ns = s->first_ns;
		t->last_ns = s->last_ns;
		t->calls = s->calls;
		t->lost = s->lost;
		t->syscalls = s->syscalls;
	}
	in->events = w->events;
	in->lost = w->lost;
	in->syscall_events = w->syscalls;
	in->first_ns = w->first_ns;
	in->last_ns = w->last_ns;
	in->complete = !m->live && w->r.state == READER_OK && w->r.seen_end;
	in->damaged = !m->live && w->r.state == READER_DAMAGED;
	snprintf(in->damage, sizeof(in->damage), "%s", in->damaged ? w->r.damage : "");
	in->filtered_at_record = w->filtered_at_record;
	in->source_filtered = w->source_filtered;
	snprintf(in->command, sizeof(in->command), "%s", walk_meta(w, "command", buf, sizeof(buf)) ? buf : "");
	snprintf(in->host, sizeof(in->host), "%.*s", (int)sizeof(in->host) - 1,
	         walk_meta(w, "host", buf, sizeof(buf)) ? buf : "");
	return 0;
}

int servemodel_refresh(struct servemodel *m)
{
	static const struct profile_order by_total = { .keys = { PROFILE_TOTAL }, .nkeys = 1 };

	if (!m->w) /* read from an index: nothing changes */
		return 0;
	if (!m->info_valid) {
		if (collect_info(m))
			return -ENOMEM;
		m->info_valid = true;
	}
	if (!m->rows_valid) {
		profile_rows_release(&m->rows);
		if (profile_collect(m->w, 0, &by_total, &m->rows))
			return -ENOMEM;
		m->rows_valid = true;
	}
	if (!m->sys_valid) {
		sysstats_result_release(&m->sysres);
		if (sysstats_collect(m->sys, &m->sysres))
			return -ENOMEM;
		m->sys_valid = true;
	}
	if (calltree_name(&m->tree, m->w, &m->names))
		return -ENOMEM;
	if (!m->flame_valid) {
		if (flame_build(&m->flame, &m->tree))
			return -ENOMEM;
		m->flame_valid = true;
	}
	if (servekernel_refresh(m) || synctrack_settle(&m->sync, m->w, m->live))
		return -ENOMEM;
	return 0;
}

uint32_t servemodel_name(void *ctx, uint32_t index, uint64_t addr)
{
	struct servemodel *m = ctx;
	struct calltree_stream *t = calltree_stream(&m->tree, index);
	uint32_t id = t ? calltree_addr_name(t, addr) : NAMES_NONE;
	char buf[1024];

	if (id != NAMES_NONE)
		return id;
	calltree_key_name(t && t->ws ? m->w : NULL, t && t->ws ? t->ws->image : 0, addr, false, buf, sizeof(buf));
	return names_intern(&m->names, buf);
}

void servemodel_release(struct servemodel *m)
{
	free(m->info.threads);
	serveheap_release(&m->heap);
	servekernel_release(&m->kern);
	synctrack_release(&m->sync);
	sysstats_result_release(&m->sysres);
	names_release(&m->files);
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
