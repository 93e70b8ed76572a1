/* The kernel layer in the web UI's server (see serve/kernel.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/kernel/klayer.h"
#include "host/lib/export/kreport.h"
#include "host/lib/serve/kernel.h"
#include "host/lib/serve/model.h"
#include "host/lib/serve/query.h"
#include "host/lib/util/json.h"

void servekernel_init(struct servekernel *k)
{
	memset(k, 0, sizeof(*k));
	ktrack_init(&k->tracks);
	flame_init(&k->offcpu);
}

void servekernel_release(struct servekernel *k)
{
	klayer_free(k->own);
	ktrack_release(&k->tracks);
	free(k->layers_doc);
	free(k->kernel_doc);
	flame_release(&k->offcpu);
	memset(k, 0, sizeof(*k));
}

int servekernel_chunk_end(struct servekernel *k, struct walk *w, struct walk_ops *list, const struct walk_chunk *c)
{
	if (c->type != LP_CHUNK_KFORMAT || k->own)
		return 0;
	k->own = klayer_new(w);
	if (!k->own)
		return -ENOMEM;
	klayer_walk_ops(k->own, &k->own_ops);
	walk_chain(list, &k->own_ops);
	k->kl = k->own;
	return 0;
}

/* ------------------------------------------------------------ the documents */

/* One document: an object of the members `put` writes. */
static int doc_write(char **doc, size_t *len,
                     void (*put)(struct json *, const struct walk *, const struct klayer_result *),
                     const struct walk *w, const struct klayer_result *r)
{
	struct json j;
	FILE *f;

	free(*doc);
	*doc = NULL;
	*len = 0;
	f = open_memstream(doc, len);
	if (!f)
		return -ENOMEM;
	json_init(&j, f);
	json_object_begin(&j, NULL);
	put(&j, w, r);
	json_object_end(&j);
	json_finish(&j);
	return fclose(f) ? -ENOMEM : 0;
}

static int docs_build(struct servekernel *k, const struct walk *w)
{
	struct klayer_result r;
	int rc = klayer_collect(k->kl, &r);

	if (rc)
		return rc;
	rc = doc_write(&k->layers_doc, &k->layers_len, kreport_layers_members, w, &r);
	if (!rc)
		rc = doc_write(&k->kernel_doc, &k->kernel_len, kreport_kernel_members, w, &r);
	klayer_result_release(&r);
	return rc;
}

/* The wakers of a trace file's waits in the kernel layer's words (once the
 * pass is over: klayer_waker_text sorts what it needs on first use). */
static void name_wakers(struct servekernel *k)
{
	struct ktrack *kt = &k->tracks;
	char who[1200];

	for (uint32_t i = 0; i < kt->nthreads; i++) {
		struct ktrack_thread *t = kt->threads[i];

		for (uint32_t n = 0; t && t->ws && n < t->noff; n++) {
			struct ktrack_off *o = &t->off[n];

			if (o->waker == KTRACK_WAKER_NONE || o->state == 'R')
				continue;
			klayer_waker_text(k->kl, t->ws->tid, o->wake_ns, o->waker_tid, o->waker == KTRACK_WAKER_HARDIRQ,
			                  o->waker == KTRACK_WAKER_SOFTIRQ, o->waker == KTRACK_WAKER_TIMER, who,
			                  sizeof(who));
			o->who = names_intern(&kt->texts, who);
		}
	}
}

int servekernel_refresh(struct servemodel *m)
{
	struct servekernel *k = &m->kern;
	bool stale = !k->docs_valid || (m->live && k->docs_gen != m->generation);

	if (m->w) {
		/* the program's: other processes' (--kernel-system) are apart */
		k->kernel_events = m->w->kernel_events - m->w->other_kernel_events;
		k->has_kernel = m->w->kernel_events > 0;
	}
	if (!k->has_kernel)
		return 0;
	if (m->w && k->kl && stale) {
		if (ktrack_settle(&k->tracks))
			return -ENOMEM;
		if (!m->live && !k->docs_valid)
			name_wakers(k);
		if (docs_build(k, m->w))
			return -ENOMEM;
		k->docs_valid = true;
		k->docs_gen = m->generation;
		k->offcpu_valid = false;
		if (k->own) {
			/* a trace file's pass is over and its documents written:
			 * what the layer holds (every wake-up and wait) is needed
			 * no more.  Its consumer stays in the walk's list, empty. */
			struct walk_ops *next = k->own_ops.next;

			klayer_free(k->own);
			k->own = k->kl = NULL;
			memset(&k->own_ops, 0, sizeof(k->own_ops));
			k->own_ops.next = next;
		}
	}
	if (!k->offcpu_valid) {
		if (flame_build_points(&k->offcpu, &m->tree, k->tracks.points, k->tracks.npoints, &m->names,
		                       "(no function)"))
			return -ENOMEM;
		k->offcpu_valid = true;
	}
	return 0;
}

/* ------------------------------------------------------------ the answers */

int servekernel_none(const struct servemodel *m, struct json *j)
{
	json_object_begin(j, NULL);
	json_bool(j, "kernel", false);
	json_str(j, "reason",
	         m->live ? "no kernel events in this session: start serve --connect with --kernel"
	                 : SERVEKERNEL_NO_KERNEL);
	json_object_end(j);
	return HTTP_OK;
}

/* A document with the served trace's path as its "trace" and kernel: true. */
static int put_doc(struct servemodel *m, const char *doc, size_t len, struct json *j, FILE *out)
{
	if (!doc || len < 3 || doc[0] != '{')
		return servekernel_none(m, j);
	fputs("{\"trace\":", out);
	json_write_string(out, m->dir ? m->dir : "");
	fputs(",\"kernel\":true,", out);
	fwrite(doc + 1, 1, len - 1, out); /* the members, the '}' and the newline */
	return HTTP_OK;
}

/* Intervals narrower than a pixel, and the gaps between them, are merged
 * into one box per pixel at most: an answer has at most a few boxes per
 * pixel of each track however many intervals the window holds. */
struct box {
	bool have;
	uint64_t start, end, busy, longest;
	uint32_t count;
	const void *best; /* the longest item in it */
};

/* Whether [a, b) joins the box (both narrow and within one pixel). */
static bool box_takes(const struct box *bx, uint64_t a, uint64_t b, uint64_t px_ns)
{
	return bx->have && b - a < px_ns && bx->end - bx->start < px_ns && a >= bx->end && b - bx->start <= px_ns;
}

static void box_add(struct box *bx, uint64_t a, uint64_t b, const void *item)
{
	if (!bx->have) {
		*bx = (struct box){
			.have = true, .start = a, .end = b, .busy = b - a, .longest = b - a, .count = 1, .best = item
		};
		return;
	}
	bx->end = b;
	bx->busy += b - a;
	bx->count++;
	if (b - a > bx->longest) {
		bx->longest = b - a;
		bx->best = item;
	}
}

static uint64_t fill_of(const struct box *bx)
{
	return bx->end > bx->start ? bx->busy * 1000 / (bx->end - bx->start) : 1000;
}

struct window {
	struct servemodel *m;
	uint64_t origin, from, to, px_ns; /* absolute trace ns */
	struct names names;               /* the texts this answer uses */
	uint64_t items, hidden;
	bool oom;
};

static uint64_t rel(const struct window *wd, uint64_t ns)
{
	return ns > wd->origin ? ns - wd->origin : 0;
}

/* A text of the tracks' as an id of this answer's names; null for none. */
static void put_text(struct window *wd, struct json *j, const char *s)
{
	uint32_t id = s ? names_intern(&wd->names, s) : NAMES_NONE;

	if (s && id == NAMES_NONE)
		wd->oom = true;
	if (id == NAMES_NONE)
		json_null(j, NULL);
	else
		json_u64(j, NULL, id);
}

static const char *text_of(const struct ktrack *kt, uint32_t id)
{
	return id == NAMES_NONE ? NULL : names_get(&kt->texts, id);
}

/* The traced thread tid running at ns, or NULL. */
static const struct serve_thread *thread_at(const struct serve_info *in, uint32_t tid, uint64_t ns)
{
	for (uint32_t i = 0; i < in->nthreads; i++)
		if (in->threads[i].tid == tid && in->threads[i].first_ns <= ns && ns <= in->threads[i].last_ns)
			return &in->threads[i];
	return NULL;
}

/* Who woke a wait, in words: the kernel layer's (a trace file), or from
 * what the tracks know (a live session); "" when no wake-up was seen (or
 * none was needed: preempted). */
static void who_text(const struct window *wd, const struct ktrack_off *o, char *buf, size_t size)
{
	const char *known = text_of(&wd->m->kern.tracks, o->who);
	const struct serve_thread *t;

	switch (o->waker) {
	case KTRACK_WAKER_NONE:
		buf[0] = '\0';
		return;
	case KTRACK_WAKER_TIMER:
		snprintf(buf, size, "timer (hardirq)");
		return;
	case KTRACK_WAKER_HARDIRQ:
		snprintf(buf, size, "hardirq");
		return;
	case KTRACK_WAKER_SOFTIRQ:
		snprintf(buf, size, "softirq");
		return;
	default:
		break;
	}
	t = thread_at(&wd->m->info, o->waker_tid, o->wake_ns);
	if (known)
		snprintf(buf, size, "%s", known);
	else if (!o->waker_tid)
		snprintf(buf, size, "idle task (irq)");
	else if (t)
		snprintf(buf, size, "thread %u (%s)", o->waker_tid, t->comm);
	else
		snprintf(buf, size, "task %u (not traced)", o->waker_tid);
}

static bool room(struct window *wd)
{
	if (wd->items >= SERVEKERNEL_ITEMS_MAX) {
		wd->hidden++;
		return false;
	}
	wd->items++;
	return true;
}

static void put_off_box(struct window *wd, struct json *j, const struct box *bx)
{
	const struct ktrack_off *o = bx->best;
	char st[2] = { (char)o->state, '\0' }, who[1200];

	if (!room(wd))
		return;
	who_text(wd, o, who, sizeof(who));
	json_array_begin(j, NULL);
	json_u64(j, NULL, rel(wd, bx->start));
	json_u64(j, NULL, rel(wd, bx->end));
	json_str(j, NULL, st);
	put_text(wd, j, who[0] ? who : NULL);
	put_text(wd, j, text_of(&wd->m->kern.tracks, o->sys));
	if (bx->count == 1 && o->wake_ns)
		json_u64(j, NULL, rel(wd, o->wake_ns));
	else
		json_null(j, NULL);
	json_u64(j, NULL, bx->count);
	json_u64(j, NULL, fill_of(bx));
	json_array_end(j);
}

static void put_irq_box(struct window *wd, struct json *j, const struct box *bx)
{
	const struct ktrack_irq *q = bx->best;

	if (!room(wd))
		return;
	json_array_begin(j, NULL);
	json_u64(j, NULL, rel(wd, bx->start));
	json_u64(j, NULL, rel(wd, bx->end));
	put_text(wd, j, text_of(&wd->m->kern.tracks, q->what));
	json_u64(j, NULL, bx->count);
	json_u64(j, NULL, fill_of(bx));
	json_array_end(j);
}

static void put_slice_box(struct window *wd, struct json *j, const struct box *bx)
{
	const struct ktrack_slice *sl = bx->best;

	if (!room(wd))
		return;
	json_array_begin(j, NULL);
	json_u64(j, NULL, rel(wd, bx->start));
	json_u64(j, NULL, rel(wd, bx->end));
	json_u64(j, NULL, sl->thread);
	json_u64(j, NULL, bx->count);
	json_u64(j, NULL, fill_of(bx));
	if (sl->other != NAMES_NONE) /* another process's thread (--kernel-system): named */
		put_text(wd, j, names_get(&wd->m->kern.tracks.texts, sl->other));
	json_array_end(j);
}

/* The items of one track in the window, boxed: items of `size` bytes
 * (start and end first), ends never decreasing; irq lists may nest
 * (KTRACK_IRQ_NEST deep), so a few past the window's end are looked at. */
static void put_track(struct window *wd, struct json *j, const char *key, const void *items, size_t n, size_t size,
                      void (*put)(struct window *, struct json *, const struct box *))
{
	struct box bx = { 0 };
	size_t i = ktrack_first_after(items, n, size, wd->from), past = 0;

	json_array_begin(j, key);
	for (; i < n && past <= KTRACK_IRQ_NEST; i++) {
		uint64_t a, b;

		memcpy(&a, (const char *)items + i * size, 8);
		memcpy(&b, (const char *)items + i * size + 8, 8);
		if (a >= wd->to) {
			past++;
			continue;
		}
		if (b < a)
			continue;
		if (!box_takes(&bx, a, b, wd->px_ns)) {
			if (bx.have)
				put(wd, j, &bx);
			bx.have = false;
		}
		box_add(&bx, a, b, (const char *)items + i * size);
	}
	if (bx.have)
		put(wd, j, &bx);
	json_array_end(j);
}

/* Arrows from the waker to the thread woken, at most one per thread and
 * pixel: [wake, from thread (null: not traced), from CPU, to thread,
 * switch-in, who woke it]. */
static void put_arrows(struct window *wd, struct json *j, const uint32_t *shown, uint32_t nshown)
{
	const struct ktrack *kt = &wd->m->kern.tracks;
	static const char *const kinds[] = { "none", "thread", "hardirq", "softirq", "timer" };
	uint64_t more = 0, count = 0;

	json_array_begin(j, "arrows");
	for (uint32_t s = 0; s < nshown; s++) {
		const struct ktrack_thread *t = ktrack_thread(kt, shown[s]);
		uint64_t last_px = UINT64_MAX;
		size_t i;

		if (!t)
			continue;
		for (i = ktrack_first_after(t->off, t->noff, sizeof(*t->off), wd->from); i < t->noff; i++) {
			const struct ktrack_off *o = &t->off[i];
			const struct serve_thread *from;

			if (o->start >= wd->to)
				break;
			if (o->waker == KTRACK_WAKER_NONE || o->wake_ns < wd->from || o->wake_ns >= wd->to ||
			    (o->wake_ns - wd->from) / wd->px_ns == last_px)
				continue;
			if (count == SERVEKERNEL_ARROWS_MAX) {
				more++;
				continue;
			}
			last_px = (o->wake_ns - wd->from) / wd->px_ns;
			count++;
			from =
			    o->waker == KTRACK_WAKER_THREAD ? thread_at(&wd->m->info, o->waker_tid, o->wake_ns) : NULL;
			json_array_begin(j, NULL);
			json_u64(j, NULL, rel(wd, o->wake_ns));
			if (from)
				json_u64(j, NULL, from->id);
			else
				json_null(j, NULL);
			json_u64(j, NULL, o->wake_cpu);
			json_u64(j, NULL, shown[s]);
			json_u64(j, NULL, rel(wd, o->end));
			json_str(j, NULL, kinds[o->waker < 5 ? o->waker : 0]);
			json_array_end(j);
		}
	}
	json_array_end(j);
	json_u64(j, "arrows_more", more);
}

/* The threads drawn: the asked one first, then those with kernel tracks
 * alive in the window, in order of first event. */
static uint32_t pick_threads(struct window *wd, int64_t first, uint32_t *shown, uint64_t *more)
{
	const struct serve_info *in = &wd->m->info;
	const struct ktrack *kt = &wd->m->kern.tracks;
	uint32_t n = 0;

	*more = 0;
	if (first >= 0 && ktrack_thread(kt, (uint32_t)first))
		shown[n++] = (uint32_t)first;
	for (uint32_t i = 0; i < in->nthreads; i++) {
		const struct serve_thread *t = &in->threads[i];

		if ((int64_t)t->id == first || !ktrack_thread(kt, t->id) || t->last_ns < wd->from ||
		    t->first_ns >= wd->to)
			continue;
		if (n == SERVEKERNEL_THREADS_MAX)
			(*more)++;
		else
			shown[n++] = t->id;
	}
	return n;
}

static const struct serve_thread *info_thread(const struct serve_info *in, uint32_t id)
{
	for (uint32_t i = 0; i < in->nthreads; i++)
		if (in->threads[i].id == id)
			return &in->threads[i];
	return NULL;
}

static int get_tracks(struct servemodel *m, const struct serve_query *q, struct json *j, FILE *out)
{
	const struct serve_info *in = &m->info;
	struct ktrack *kt = &m->kern.tracks;
	uint64_t span = in->last_ns > in->first_ns ? in->last_ns - in->first_ns : 1, from, to, px, thread, tmore,
	         cmore = 0;
	uint32_t shown[SERVEKERNEL_THREADS_MAX], nshown;
	struct window wd = { .m = m, .origin = in->first_ns };

	if (!servequery_u64(q, "from", 0, UINT64_MAX / 4, &from) ||
	    !servequery_u64(q, "to", span + 1, UINT64_MAX / 4, &to) ||
	    !servequery_u64(q, "px", 1000, TIMELINE_PX_MAX, &px) || to <= from || !px)
		return servequery_error(out, HTTP_BAD_REQUEST, "from < to (ns from the start), px up to 16384");
	if (!servequery_u64(q, "thread", UINT64_MAX, UINT64_MAX, &thread) ||
	    (thread != UINT64_MAX && !info_thread(in, (uint32_t)thread)))
		return servequery_error(out, HTTP_NOT_FOUND, "no such thread");
	if (ktrack_settle(kt))
		return servequery_error(out, HTTP_SERVER_ERROR, "out of memory");
	wd.from = in->first_ns + from;
	wd.to = in->first_ns + to;
	wd.px_ns = (to - from) / px ? (to - from) / px : 1;
	names_init(&wd.names);
	nshown = pick_threads(&wd, thread == UINT64_MAX ? -1 : (int64_t)thread, shown, &tmore);

	json_object_begin(j, NULL);
	json_bool(j, "kernel", true);
	json_u64(j, "from", from);
	json_u64(j, "to", to);
	json_u64(j, "px", px);
	json_array_begin(j, "threads");
	for (uint32_t s = 0; s < nshown; s++) {
		const struct ktrack_thread *t = ktrack_thread(kt, shown[s]);
		const struct serve_thread *st = info_thread(in, shown[s]);

		json_object_begin(j, NULL);
		json_u64(j, "id", shown[s]);
		json_u64(j, "tid", st ? st->tid : 0);
		json_str(j, "comm", st ? st->comm : "");
		json_u64(j, "first", st ? rel(&wd, st->first_ns) : 0);
		json_u64(j, "last", st ? rel(&wd, st->last_ns) : 0);
		put_track(&wd, j, "off", t->off, t->noff, sizeof(*t->off), put_off_box);
		put_track(&wd, j, "irqs", t->irq, t->nirq, sizeof(*t->irq), put_irq_box);
		json_object_end(j);
	}
	json_array_end(j);
	json_u64(j, "threads_more", tmore);
	json_array_begin(j, "cpus");
	for (uint32_t c = 0; c < kt->ncpus; c++) {
		const struct ktrack_slice *sl = kt->slices + kt->cpu_first[c];
		size_t n = kt->cpu_first[c + 1] - kt->cpu_first[c],
		       first = ktrack_first_after(sl, n, sizeof(*sl), wd.from);

		if (first == n || sl[first].start >= wd.to)
			continue; /* nothing of it in the window */
		if (c >= SERVEKERNEL_CPUS_MAX) {
			cmore++;
			continue;
		}
		json_object_begin(j, NULL);
		json_u64(j, "cpu", kt->cpus[c]);
		put_track(&wd, j, "slices", sl, n, sizeof(*sl), put_slice_box);
		json_object_end(j);
	}
	json_array_end(j);
	json_u64(j, "cpus_more", cmore);
	put_arrows(&wd, j, shown, nshown);
	json_object_begin(j, "names");
	for (uint32_t i = 0; i < wd.names.n; i++) {
		char key[16];

		snprintf(key, sizeof(key), "%u", i);
		json_str(j, key, names_get(&wd.names, i));
	}
	json_object_end(j);
	json_u64(j, "hidden", wd.hidden);
	json_object_begin(j, "dropped");
	json_u64(j, "off_cpu", kt->dropped_off);
	json_u64(j, "irqs", kt->dropped_irq);
	json_u64(j, "slices", kt->dropped_slices);
	json_object_end(j);
	json_object_end(j);
	names_release(&wd.names);
	return wd.oom ? -HTTP_SERVER_ERROR : HTTP_OK;
}

int servekernel_answer(struct servemodel *m, const char *what, const struct serve_query *q, struct json *j, FILE *out)
{
	struct servekernel *k = &m->kern;

	if (strcmp(what, "layers") && strcmp(what, "kernel") && strcmp(what, "kernel_tracks"))
		return -HTTP_NOT_FOUND;
	if (!k->has_kernel)
		return servekernel_none(m, j);
	if (!strcmp(what, "layers"))
		return put_doc(m, k->layers_doc, k->layers_len, j, out);
	if (!strcmp(what, "kernel"))
		return put_doc(m, k->kernel_doc, k->kernel_len, j, out);
	return get_tracks(m, q, j, out);
}
