/* The heap state of a live session and its view (see live/mem.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/heap/snapshot.h"
#include "host/lib/heap/view.h"
#include "host/lib/live/mem.h"
#include "host/lib/util/options.h"
#include "host/lib/util/outfile.h"

#define MEM_FIXED_COLS 76 /* width of the numbers before the function */
#define MEM_ILLEGAL_ROWS 5u
#define MEM_OVERLAP_ROWS 3u

int livemem_init(struct livemem *m, struct walk *w, uint64_t flush_ns)
{
	uint64_t horizon = LIVEMEM_HORIZON_FLUSHES * flush_ns;

	memset(m, 0, sizeof(*m));
	m->w = w;
	if (heap_init(&m->h) || heapfeed_init(&m->feed, w, &m->h))
		return -ENOMEM;
	m->feed.horizon_ns = horizon > LIVEMEM_HORIZON_MIN_NS ? horizon : LIVEMEM_HORIZON_MIN_NS;
	m->on = true;
	return 0;
}

void livemem_release(struct livemem *m)
{
	if (!m->w)
		return;
	heapfeed_release(&m->feed);
	heap_release(&m->h);
	memset(m, 0, sizeof(*m));
}

/* Remembers how far the target's clock has got, and when we learnt it. */
static void seen(struct livemem *m, uint64_t ns)
{
	if (ns > m->seen_ns) {
		m->seen_ns = ns;
		m->seen_host_ns = 0; /* stamped once per chunk (livemem_fed), not per operation */
	}
}

void livemem_mem(struct livemem *m, struct walk_stream *s, const struct walk_mem *op)
{
	heapfeed_mem(&m->feed, s, op);
	seen(m, op->time);
}

void livemem_task(struct livemem *m, struct walk_stream *s, uint64_t ns, unsigned kind, uint64_t value)
{
	heapfeed_task(&m->feed, s, ns, kind, value);
	seen(m, ns);
}

void livemem_lost(struct livemem *m, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	heapfeed_lost(&m->feed, s, ns, count);
	seen(m, ns);
}

void livemem_fed(struct livemem *m, uint64_t host_now)
{
	if (m->seen_ns && !m->seen_host_ns)
		m->seen_host_ns = host_now;
}

/* The target's present as far as we can tell: the newest time seen, plus
 * what passed here since it was first noticed. */
static uint64_t target_now(struct livemem *m, uint64_t host_now)
{
	if (!m->seen_ns)
		return 0;
	if (!m->seen_host_ns || host_now < m->seen_host_ns)
		m->seen_host_ns = host_now;
	return m->seen_ns + (host_now - m->seen_host_ns);
}

void livemem_partial(struct livemem *m, uint64_t target_ns)
{
	if (m->on)
		heap_set_partial(&m->h, target_ns);
}

void livemem_resumed(struct livemem *m, uint64_t host_now)
{
	if (m->on)
		heap_resumed(&m->h, target_now(m, host_now));
}

void livemem_settle(struct livemem *m, uint64_t host_now)
{
	uint64_t now, cut;

	if (!m->on || m->finished)
		return;
	now = target_now(m, host_now);
	if (now > m->feed.horizon_ns) {
		cut = now - m->feed.horizon_ns;
		heapfeed_watermark(&m->feed, cut);
		heap_advance(&m->h, cut);
	}
	heap_settle(&m->h);
}

void livemem_finish(struct livemem *m)
{
	if (!m->on || m->finished)
		return;
	heapfeed_flush(&m->feed, m->feed.newest_ns);
	heap_settle(&m->h);
	m->finished = true;
}

uint64_t livemem_state_ns(const struct livemem *m)
{
	return m->h.now_ns;
}

/* When the partial stream began: heap_set_partial's time, else the
 * session's start (an attach: the agent's clock when it attached), else
 * the first event. */
static uint64_t partial_since(const struct livemem *m)
{
	char buf[32];

	if (m->h.partial_since_ns)
		return m->h.partial_since_ns;
	if (walk_meta(m->w, "start_monotonic_ns", buf, sizeof(buf)))
		return strtoull(buf, NULL, 10);
	return m->w->first_ns; /* a session taken over: no META came */
}

static uint64_t illegal_total(const struct heap *h)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k < HEAP_ILLEGAL_KINDS; k++)
		n += h->illegal_counts[k];
	return n;
}

static const char *when(uint64_t origin_ns, uint64_t ns, char *buf, size_t size)
{
	char d[32];

	if (!ns)
		snprintf(buf, size, "-");
	else if (ns >= origin_ns)
		snprintf(buf, size, "+%s", options_format_duration(ns - origin_ns, d, sizeof(d)));
	else
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	return buf;
}

static void text_sites(struct livemem *m, size_t max, int width, const char *eol)
{
	const struct heap *h = &m->h;
	uint32_t *idx, n, i;
	int room = width > MEM_FIXED_COLS ? width - MEM_FIXED_COLS : 20;

	printf("%10s %12s %12s %10s %10s %12s %8s  %s%s", "Live objs", "Live bytes", "Peak bytes", "Allocs", "Frees",
	       "Growth", "p", "Function  Call site", eol);
	idx = heapview_sorted_sites(h, false, &n);
	for (i = 0; idx && i < n && i < max; i++) {
		const struct heap_site *s = &h->sites[idx[i]];
		struct heap_growth g;
		char r[48], p[16], name[1024];

		heap_growth(h, &s->c, &g);
		if (g.samples)
			snprintf(p, sizeof(p), "%.2g", g.p_value);
		else
			snprintf(p, sizeof(p), "-");
		snprintf(name, sizeof(name), "%s  %s", s->function, s->key);
		printf("%10" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %12s %8s  %.*s%s",
		       s->c.live_objects, s->c.live_bytes, s->c.peak_bytes, s->c.allocs, s->c.frees,
		       g.growing ? heapview_rate(g.rate_bps, r, sizeof(r)) : "-", p, width ? room : INT_MAX, name, eol);
	}
	if (idx && n > max)
		printf("(%" PRIu32 " more call sites)%s", n - (uint32_t)max, eol);
	free(idx);
}

static void text_growing(struct livemem *m, const char *eol)
{
	const struct heap *h = &m->h;
	uint32_t i;

	for (i = 0; i < h->nsites; i++) {
		struct heap_growth g;
		char r[48];

		heap_growth(h, &h->sites[i].c, &g);
		if (g.growing)
			printf("growing: %s in %s: %s over the later %" PRIu32 " samples, Mann-Kendall p = %.2g%s",
			       h->sites[i].key, h->sites[i].function, heapview_rate(g.rate_bps, r, sizeof(r)),
			       g.samples, g.p_value, eol);
	}
}

static void text_illegal(struct livemem *m, size_t max, uint64_t origin_ns, const char *eol)
{
	const struct heap *h = &m->h;
	char t[48];
	uint32_t i;

	for (i = 0; i < h->nillegal && i < max; i++) {
		const struct heap_illegal *il = &h->illegal[i];

		printf("%s: %s(0x%" PRIx64 ") in %s at %s, thread %" PRIu32 "%s%s", heap_illegal_name(il->kind),
		       heap_op_name(il->op), il->ptr, h->sites[il->site].function,
		       when(origin_ns, il->ns, t, sizeof(t)), il->tid, il->kept ? " [kept from libc]" : "",
		       il->after_loss ? " [after lost events]" : "");
		if (il->count > 1)
			printf(" (%" PRIu64 " times)", il->count);
		printf("%s", eol);
	}
	if (h->nillegal > max)
		printf("(%" PRIu32 " more illegal releases: report --memory on a saved trace has them all)%s",
		       h->nillegal - (uint32_t)max, eol);
	for (i = 0; i < h->noverlaps && i < MEM_OVERLAP_ROWS; i++) {
		const struct heap_overlap *ov = &h->overlaps[i];

		printf("overlap: %s(%" PRIu64 ") = 0x%" PRIx64 " in %s at %s overlaps the live block 0x%" PRIx64
		       " (%" PRIu64 " bytes) from %s%s",
		       heap_op_name(ov->op), ov->size, ov->ptr, h->sites[ov->site].function,
		       when(origin_ns, ov->ns, t, sizeof(t)), ov->old_ptr, ov->old_size,
		       h->sites[ov->old_site].function, eol);
	}
}

void livemem_text(struct livemem *m, size_t max, int width, const char *eol, uint64_t origin_ns)
{
	const struct heap *h = &m->h;
	const struct walk *w = m->w;
	char t[48];

	printf("heap: %" PRIu64 " allocations, %" PRIu64 " releases, %" PRIu64 " live blocks (%" PRIu64
	       " bytes), peak %" PRIu64 " bytes at %s%s",
	       h->allocs, h->frees, h->live_objects, h->live_bytes, h->peak_bytes,
	       when(origin_ns, h->peak_ns, t, sizeof(t)), eol);
	printf("illegal releases: %" PRIu64 " (never allocated %" PRIu64 ", double free %" PRIu64
	       ", interior pointer %" PRIu64 ", mismatch %" PRIu64 "); overlapping allocations: %" PRIu64 "%s",
	       illegal_total(h), h->illegal_counts[HEAP_NEVER_ALLOCATED], h->illegal_counts[HEAP_DOUBLE_FREE],
	       h->illegal_counts[HEAP_INTERIOR_POINTER], h->illegal_counts[HEAP_MISMATCH], h->overlap_count, eol);
	if (h->listings)
		printf("live before tracing began, listed by the program: %" PRIu64 " blocks, %" PRIu64 " bytes%s%s",
		       h->listed_objects, h->listed_bytes,
		       h->listings_incomplete ? " (incomplete: its live-block table was full)" : "", eol);
	if (h->partial)
		printf("the stream began after the program (at %s): only blocks allocated since are known; released, "
		       "allocated before: %" PRIu64 " (%" PRIu64 " by realloc)%s",
		       when(origin_ns, partial_since(m), t, sizeof(t)), h->released_unknown, h->reallocs_unknown, eol);
	if (!strcmp(m->agent_mem, "none") && !w->mem_ops)
		printf("no heap operations: the program was not started with liblayerprof-mem.so preloaded%s", eol);
	if (w->lost || h->illegal_after_loss || h->overlaps_after_loss)
		printf("%" PRIu64 " events lost: missed releases read as live blocks (%" PRIu64
		       " illegal releases and %" PRIu64 " overlaps came after a loss)%s",
		       w->lost, h->illegal_after_loss, h->overlaps_after_loss, eol);
	if (h->folded)
		printf("folded: %" PRIu64 " short-lived blocks (%" PRIu64 " bytes), counted, not kept one by one%s",
		       h->folded, h->folded_bytes, eol);
	if (m->feed.late || h->oom || w->mem_malformed || w->mem_unknown_stacks)
		printf("%" PRIu64 " heap events came too late for the merge, %" PRIu64 " malformed, %" PRIu64
		       " with an undefined stack%s%s",
		       m->feed.late, w->mem_malformed, w->mem_unknown_stacks,
		       h->oom ? "; out of memory: the state is incomplete" : "", eol);
	printf("%s", eol);
	text_sites(m, max, width, eol);
	text_growing(m, eol);
	text_illegal(m, max == SIZE_MAX ? SIZE_MAX : MEM_ILLEGAL_ROWS, origin_ns, eol);
}

void livemem_json(struct livemem *m, struct json *j)
{
	struct heapview_opts o = { 0 };

	json_object_begin(j, "memory");
	heapview_json(j, m->w, &m->h, &m->feed, &o);
	json_bool(j, "partial", m->h.partial);
	json_u64(j, "covers_from_ns", m->h.partial ? partial_since(m) : 0);
	json_str(j, "agent_memory", m->agent_mem[0] ? m->agent_mem : NULL);
	json_u64(j, "heap_operations", m->w->mem_ops);
	json_u64(j, "lost_events", m->w->lost);
	json_u64(j, "horizon_ns", m->feed.horizon_ns);
	json_object_end(j);
}

static void snap_meta(const struct livemem *m, const struct livemem_snapinfo *si, struct snapshot_meta *meta)
{
	memset(meta, 0, sizeof(*meta));
	meta->source = "live";
	meta->trace = si->target;
	meta->command = si->command;
	meta->time_ns = livemem_state_ns(m);
	meta->origin_ns = si->origin_ns;
	meta->partial = m->h.partial;
	meta->since_ns = m->h.partial ? partial_since(m) : 0;
}

int livemem_snapshot_write(struct livemem *m, FILE *f, const struct livemem_snapinfo *si)
{
	struct snapshot_meta meta;
	int r;

	snap_meta(m, si, &meta);
	r = snapshot_write(f, m->w, &m->h, &meta);
	if (!r && (fflush(f) || ferror(f)))
		r = -EIO;
	return r;
}

int livemem_snapshot(struct livemem *m, const char *path, const struct livemem_snapinfo *si, char *err, size_t errlen)
{
	struct snapshot_meta meta;
	FILE *f;
	int r;

	snap_meta(m, si, &meta);
	f = strcmp(path, "-") ? outfile_open(path) : stdout;
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "cannot create '%s': %s", path, outfile_strerror(-r));
		return r;
	}
	r = snapshot_write(f, m->w, &m->h, &meta);
	if (f != stdout && fclose(f) && !r)
		r = -EIO;
	if (r)
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(-r));
	return r;
}

uint64_t livemem_covers_from(const struct livemem *m)
{
	return partial_since(m);
}
