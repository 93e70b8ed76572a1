/* The kernel layer's section of serve's index file (see
 * serve/index_impl.h): whether the trace has kernel events, the documents
 * of /api/layers and /api/kernel, and the kernel tracks. */
#include <errno.h>

#include "host/lib/serve/index.h"
#include "host/lib/serve/index_impl.h"
#include "host/lib/serve/kernel.h"

static void put_bytes(struct indexout *o, const char *p, size_t n)
{
	put_u64(o, n);
	put(o, p ? p : "", n);
}

/* The kernel layer: whether the trace has one, its documents, and the
 * tracks (texts, each thread's waits and handlers, the CPUs' slices, the
 * off-CPU points). */
void serveindex_write_kernel(struct indexout *o, const struct servekernel *k)
{
	const struct ktrack *kt = &k->tracks;
	uint32_t i, n, threads = kt->nthreads;

	while (threads && !kt->threads[threads - 1])
		threads--;
	put_u8(o, k->has_kernel);
	put_u64(o, k->kernel_events);
	put_bytes(o, k->layers_doc, k->layers_doc ? k->layers_len : 0);
	put_bytes(o, k->kernel_doc, k->kernel_doc ? k->kernel_len : 0);
	put_u32(o, kt->texts.n);
	for (i = 0; i < kt->texts.n; i++)
		put_str(o, names_get(&kt->texts, i));
	put_u32(o, threads);
	for (i = 0; i < threads; i++) {
		const struct ktrack_thread *t = kt->threads[i];

		put_u8(o, t != NULL);
		if (!t)
			continue;
		put_u32(o, t->noff);
		for (n = 0; n < t->noff; n++) {
			const struct ktrack_off *f = &t->off[n];

			put_u64(o, f->start);
			put_u64(o, f->end);
			put_u64(o, f->wake_ns);
			put_u32(o, f->waker_tid);
			put_u32(o, f->who);
			put_u32(o, f->sys);
			put_u32(o, (uint32_t)f->cpu << 16 | f->wake_cpu);
			put_u8(o, f->state);
			put_u8(o, f->waker);
		}
		put_u32(o, t->nirq);
		for (n = 0; n < t->nirq; n++) {
			put_u64(o, t->irq[n].start);
			put_u64(o, t->irq[n].end);
			put_u32(o, t->irq[n].what);
			put_u32(o, t->irq[n].cpu);
			put_u8(o, t->irq[n].soft);
		}
	}
	put_u64(o, kt->nslices);
	for (size_t s = 0; s < kt->nslices; s++) {
		put_u64(o, kt->slices[s].start);
		put_u64(o, kt->slices[s].end);
		put_u32(o, kt->slices[s].thread);
		put_u32(o, kt->slices[s].cpu);
		put_u32(o, kt->slices[s].other);
	}
	put_u32(o, kt->npoints);
	for (i = 0; i < kt->npoints; i++) {
		put_u32(o, kt->points[i].stream);
		put_u32(o, kt->points[i].node);
		put_u64(o, kt->points[i].leaf);
		put_u64(o, kt->points[i].ns);
		put_u64(o, kt->points[i].count);
	}
	put_u64(o, kt->dropped_off);
	put_u64(o, kt->dropped_irq);
	put_u64(o, kt->dropped_slices);
	put_u64(o, kt->dropped_points);
}

/* A document: u64 length and its bytes (owned copy in *doc, NULL for none). */
static int get_doc(struct indexin *c, char **doc, size_t *len)
{
	uint64_t n = get_u64(c);

	if (n > SERVEINDEX_MAX || !have(c, n))
		return -EBADMSG;
	*len = 0;
	if (!n)
		return 0;
	*doc = malloc(n + 1);
	if (!*doc)
		return -ENOMEM;
	memcpy(*doc, c->p, n);
	(*doc)[n] = '\0';
	*len = n;
	c->p += n;
	return 0;
}

/* A texts id read: one of n, or NAMES_NONE. */
static uint32_t get_text(struct indexin *c, uint32_t n)
{
	uint32_t v = get_u32(c);

	if (v != NAMES_NONE && v >= n)
		c->bad = true;
	return v;
}

int serveindex_read_kernel(struct indexin *c, struct servekernel *k)
{
	struct ktrack *kt = &k->tracks;
	uint32_t i, n, count;
	uint64_t n64;
	int r;

	k->has_kernel = get_u8(c) != 0;
	k->kernel_events = get_u64(c);
	r = get_doc(c, &k->layers_doc, &k->layers_len);
	if (!r)
		r = get_doc(c, &k->kernel_doc, &k->kernel_len);
	if (r)
		return r;
	k->docs_valid = true;
	n = get_u32(c);
	if (!room_for(c, n, 4))
		return -EBADMSG;
	for (i = 0; i < n && !c->bad; i++)
		if (names_intern(&kt->texts, get_str(c, INDEX_STR_MAX)) != i)
			return c->bad ? -EBADMSG : -ENOMEM;
	n = get_u32(c);
	if (n > WALK_STREAMS_MAX || !room_for(c, n, 1))
		return -EBADMSG;
	for (i = 0; i < n && !c->bad; i++) {
		struct ktrack_thread *t;

		if (!get_u8(c))
			continue;
		t = ktrack_thread_make(kt, i);
		if (!t)
			return -ENOMEM;
		count = get_u32(c);
		if (count > KTRACK_ITEMS_MAX - kt->noffs || !room_for(c, count, 3 * 8 + 4 * 4 + 2))
			return -EBADMSG;
		while (count-- && !c->bad) {
			struct ktrack_off *f = ktrack_add_off(kt, t);
			uint32_t cpus;

			if (!f)
				return -ENOMEM;
			f->start = get_u64(c);
			f->end = get_u64(c);
			f->wake_ns = get_u64(c);
			f->waker_tid = get_u32(c);
			f->who = get_text(c, kt->texts.n);
			f->sys = get_text(c, kt->texts.n);
			cpus = get_u32(c);
			f->cpu = (uint16_t)(cpus >> 16);
			f->wake_cpu = (uint16_t)cpus;
			f->state = get_u8(c);
			f->waker = get_u8(c);
			if (f->end < f->start || (t->noff > 1 && f->end < f[-1].end) || f->waker > KTRACK_WAKER_TIMER)
				c->bad = true;
		}
		count = get_u32(c);
		if (count > KTRACK_ITEMS_MAX - kt->nirqs || !room_for(c, count, 2 * 8 + 2 * 4 + 1))
			return -EBADMSG;
		while (count-- && !c->bad) {
			struct ktrack_irq *q = ktrack_add_irq(kt, t);

			if (!q)
				return -ENOMEM;
			q->start = get_u64(c);
			q->end = get_u64(c);
			q->what = get_text(c, kt->texts.n);
			q->cpu = (uint16_t)get_u32(c);
			q->soft = get_u8(c);
			if (q->end < q->start || (t->nirq > 1 && q->end < q[-1].end))
				c->bad = true;
		}
	}
	n64 = get_u64(c);
	if (n64 > KTRACK_ITEMS_MAX || !room_for(c, n64, 2 * 8 + 3 * 4))
		return -EBADMSG;
	while (n64-- && !c->bad) {
		struct ktrack_slice *sl = ktrack_add_slice(kt);
		uint32_t cpu;

		if (!sl)
			return -ENOMEM;
		sl->start = get_u64(c);
		sl->end = get_u64(c);
		sl->thread = get_u32(c);
		cpu = get_u32(c);
		sl->cpu = (uint16_t)cpu;
		sl->other = get_text(c, kt->texts.n);
		if (sl->end < sl->start || sl->thread >= WALK_STREAMS_MAX || cpu >= KTRACK_CPUS_MAX)
			c->bad = true;
	}
	n = get_u32(c);
	if (n > KTRACK_POINTS_MAX || !room_for(c, n, 2 * 4 + 3 * 8))
		return -EBADMSG;
	for (i = 0; i < n && !c->bad; i++) {
		uint32_t stream = get_u32(c), node = get_u32(c);
		uint64_t leaf = get_u64(c), ns = get_u64(c), cnt = get_u64(c);

		if (stream >= WALK_STREAMS_MAX || (leaf && !CALLTREE_IS_SYSCALL(leaf)))
			c->bad = true;
		else if (ktrack_add_point(kt, stream, node, leaf, ns, cnt))
			return -ENOMEM;
	}
	kt->dropped_off = get_u64(c);
	kt->dropped_irq = get_u64(c);
	kt->dropped_slices = get_u64(c);
	kt->dropped_points = get_u64(c);
	if (!c->bad && ktrack_settle(kt))
		return -ENOMEM;
	return c->bad ? -EBADMSG : 0;
}
