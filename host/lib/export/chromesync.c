/* The synchronisation waits of the Chrome trace (see export/chromesync.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/syncevent.h"
#include "host/lib/trace/syncwake.h"
#include "host/lib/export/chromesync.h"
#include "host/lib/util/escape.h"
#include "layerprof/format.h"

struct chromesync {
	struct walk *w;
	struct chromekernel_out out;
	struct syncwake sw;
	struct walk_ops ops;
	const struct walk_stream **by_index; /* owned, during chromesync_finish */
	uint32_t nby;
};

/* ts (or dur) in µs with the ns as three decimals, as chrome.c writes them. */
static void put_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / 1000u, ns % 1000u);
}

static void put_ts(const struct chromesync *cs, FILE *f, uint64_t ns)
{
	put_us(f, ns > cs->out.zero_ns ? ns - cs->out.zero_ns : 0);
}

/* The stream of a thread id (walk_stream.index), or NULL. */
static const struct walk_stream *stream_of(const struct chromesync *cs, uint32_t thread)
{
	return thread < cs->nby ? cs->by_index[thread] : NULL;
}

static void put_slice(struct chromesync *cs, const struct syncwake_event *e, const struct walk_stream *waker)
{
	const struct walk_stream *s = stream_of(cs, e->thread);
	char name[96], text[1024];
	FILE *f;

	if (!s || !(f = cs->out.begin(cs->out.ctx, NULL)))
		return;
	fputs("{\"ph\":\"X\",\"ts\":", f);
	put_ts(cs, f, e->ns - e->wait_ns);
	fputs(",\"dur\":", f);
	put_us(f, e->wait_ns);
	snprintf(name, sizeof(name), "wait %s 0x%" PRIx64, syncevent_op_name(e->op), e->obj);
	fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"cat\":\"sync\",\"name\":", s->pid, s->tid);
	escape_json(f, name);
	fprintf(f, ",\"args\":{\"op\":\"%s\",\"object\":\"0x%" PRIx64 "\"", syncevent_op_name(e->op), e->obj);
	if (e->op == LP_SYNC_COND_WAIT)
		fprintf(f, ",\"mutex\":\"0x%" PRIx64 "\"", e->obj2);
	if (e->func) {
		fputs(",\"function\":", f);
		escape_json(f, walk_name(cs->w, s->image, e->func, text, sizeof(text)));
	}
	if (e->site) {
		fputs(",\"call_site\":", f);
		escape_json(f, walk_name(cs->w, s->image, e->site, text, sizeof(text)));
	}
	if (e->flags & LP_SYNC_TIMEDOUT)
		fputs(",\"timed_out\":true", f);
	else if (e->flags & LP_SYNC_FAILED)
		fputs(",\"failed\":true", f);
	if (waker) {
		fprintf(f, ",\"released_by\":%" PRIu32 ",\"released_by_comm\":", waker->tid);
		escape_json(f, waker->comm);
	}
	fputs("}}", f);
}

static void put_flow(struct chromesync *cs, uint64_t id, char ph, const struct walk_stream *s, uint64_t ns)
{
	FILE *f = cs->out.begin(cs->out.ctx, NULL);

	if (!f)
		return;
	fprintf(f, "{\"ph\":\"%c\",%s\"id\":%" PRIu64 ",\"ts\":", ph, ph == 'f' ? "\"bp\":\"e\"," : "", id);
	put_ts(cs, f, ns);
	fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"cat\":\"sync\",\"name\":\"release\"}", s->pid, s->tid);
}

int chromesync_finish(struct chromesync *cs)
{
	uint64_t id = EXPORT_CHROME_SYNC_FLOW_BASE;
	int r = syncwake_resolve(&cs->sw);

	if (r)
		return r;
	cs->nby = cs->w->nstreams;
	cs->by_index = calloc(cs->nby ? cs->nby : 1, sizeof(*cs->by_index));
	if (!cs->by_index)
		return -ENOMEM;
	for (uint32_t i = 0; i < cs->w->nstreams; i++)
		if (cs->w->streams[i]->index < cs->nby)
			cs->by_index[cs->w->streams[i]->index] = cs->w->streams[i];
	for (size_t i = 0; i < cs->sw.n; i++) {
		const struct syncwake_event *e = &cs->sw.ev[i];
		const struct walk_stream *waker, *s;

		/* waits, also those that timed out or failed: not releases */
		if (!e->wait_ns || !syncwake_is_wait(e->op, 0, 1))
			continue;
		waker = e->waker != SYNCWAKE_NONE ? stream_of(cs, e->waker) : NULL;
		put_slice(cs, e, waker);
		if (!waker || !e->release_ns || !(s = stream_of(cs, e->thread)))
			continue;
		put_flow(cs, id, 's', waker, e->release_ns);
		put_flow(cs, id, 'f', s, e->ns);
		id++;
	}
	free(cs->by_index);
	cs->by_index = NULL;
	cs->nby = 0;
	return 0;
}

struct chromesync *chromesync_new(struct walk *w, const struct chromekernel_out *out)
{
	struct chromesync *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	cs->w = w;
	cs->out = *out;
	syncwake_init(&cs->sw);
	return cs;
}

void chromesync_chain(struct chromesync *cs, struct walk_ops *list)
{
	memset(&cs->ops, 0, sizeof(cs->ops));
	syncwake_walk_ops(&cs->sw, &cs->ops);
	walk_chain(list, &cs->ops);
}

uint64_t chromesync_dropped(const struct chromesync *cs)
{
	return cs->sw.dropped;
}

void chromesync_free(struct chromesync *cs)
{
	if (!cs)
		return;
	syncwake_release(&cs->sw);
	free(cs);
}
