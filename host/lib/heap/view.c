/* Text and JSON views of a heap state (see heap/view.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/heap/view.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/options.h"
#include "layerprof/format.h"

/* Frames shown per stack in text. */
#define HEAPVIEW_TEXT_FRAMES 8u

void heapview_frame(struct walk *w, uint32_t image, uint64_t addr, struct heapview_frame *out)
{
	struct symbol sym;
	int r;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	walk_name(w, image, addr, out->name, sizeof(out->name));
	r = symbolizer_lookup(w->sym, image, addr ? addr - 1 : 0, &sym);
	if (r == -ENOMEM)
		return;
	out->function = r == 0 ? sym.name : NULL;
	out->file = sym.file;
	out->line = sym.line;
}

void heapview_json_stack(struct json *j, const char *key, struct walk *w, const struct heap *h, uint32_t stack)
{
	const struct heap_stack *s = stack < h->nstacks ? &h->stacks[stack] : NULL;
	struct heapview_frame fr;
	char addr[32];
	uint32_t i;

	json_array_begin(j, key);
	for (i = 0; s && i < s->n; i++) {
		heapview_frame(w, s->image, s->ips[i], &fr);
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)fr.addr);
		json_object_begin(j, NULL);
		json_str(j, "address", addr);
		json_str(j, "name", fr.name);
		json_str(j, "function", fr.function);
		json_str(j, "file", fr.file);
		json_u64(j, "line", fr.line);
		json_object_end(j);
	}
	json_array_end(j);
}

struct sort_ctx {
	const struct heap *h;
	bool at_peak;
};

/* qsort has no context argument: one sort at a time. */
static struct sort_ctx sort_by;

static int site_cmp(const void *a, const void *b)
{
	const struct heap_site *x = &sort_by.h->sites[*(const uint32_t *)a];
	const struct heap_site *y = &sort_by.h->sites[*(const uint32_t *)b];
	uint64_t xb = sort_by.at_peak ? x->c.at_peak_bytes : x->c.live_bytes;
	uint64_t yb = sort_by.at_peak ? y->c.at_peak_bytes : y->c.live_bytes;
	uint64_t xo = sort_by.at_peak ? x->c.at_peak_objects : x->c.live_objects;
	uint64_t yo = sort_by.at_peak ? y->c.at_peak_objects : y->c.live_objects;

	if (xb != yb)
		return xb > yb ? -1 : 1;
	if (xo != yo)
		return xo > yo ? -1 : 1;
	if (x->c.allocs != y->c.allocs)
		return x->c.allocs > y->c.allocs ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int fn_cmp(const void *a, const void *b)
{
	const struct heap_fn *x = &sort_by.h->fns[*(const uint32_t *)a];
	const struct heap_fn *y = &sort_by.h->fns[*(const uint32_t *)b];
	uint64_t xb = sort_by.at_peak ? x->c.at_peak_bytes : x->c.live_bytes;
	uint64_t yb = sort_by.at_peak ? y->c.at_peak_bytes : y->c.live_bytes;

	if (xb != yb)
		return xb > yb ? -1 : 1;
	if (x->c.allocs != y->c.allocs)
		return x->c.allocs > y->c.allocs ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool counts_shown(const struct heap_counts *c)
{
	return c->allocs || c->failed || c->live_objects || c->at_peak_objects;
}

uint32_t *heapview_sorted_sites(const struct heap *h, bool at_peak, uint32_t *n)
{
	uint32_t *idx = malloc((h->nsites ? h->nsites : 1) * sizeof(*idx)), i;

	*n = 0;
	if (!idx)
		return NULL;
	for (i = 0; i < h->nsites; i++)
		if (counts_shown(&h->sites[i].c))
			idx[(*n)++] = i;
	sort_by.h = h;
	sort_by.at_peak = at_peak;
	qsort(idx, *n, sizeof(*idx), site_cmp);
	return idx;
}

uint32_t *heapview_sorted_fns(const struct heap *h, bool at_peak, uint32_t *n)
{
	uint32_t *idx = malloc((h->nfns ? h->nfns : 1) * sizeof(*idx)), i;

	*n = 0;
	if (!idx)
		return NULL;
	for (i = 0; i < h->nfns; i++)
		if (counts_shown(&h->fns[i].c))
			idx[(*n)++] = i;
	sort_by.h = h;
	sort_by.at_peak = at_peak;
	qsort(idx, *n, sizeof(*idx), fn_cmp);
	return idx;
}

static const char *rel_time(const struct heapview_opts *o, uint64_t ns, char *buf, size_t size)
{
	uint64_t t = ns > o->origin_ns ? ns - o->origin_ns : 0;

	snprintf(buf, size, "%llu.%06llu s", (unsigned long long)(t / 1000000000u),
	         (unsigned long long)(t % 1000000000u / 1000u));
	return buf;
}

const char *heapview_rate(double bps, char *buf, size_t size)
{
	if (bps >= 1048576)
		snprintf(buf, size, "+%.1f MiB/s", bps / 1048576);
	else if (bps >= 1024)
		snprintf(buf, size, "+%.1f KiB/s", bps / 1024);
	else
		snprintf(buf, size, "+%.0f B/s", bps);
	return buf;
}

static const char *site_where(const struct heap_site *s, char *buf, size_t size)
{
	if (s->file)
		snprintf(buf, size, "%s (%s:%u)", s->key, s->file, s->line);
	else
		snprintf(buf, size, "%s", s->key);
	return buf;
}

static void text_stack(FILE *f, struct walk *w, const struct heap *h, uint32_t stack, const char *indent)
{
	const struct heap_stack *s = stack < h->nstacks ? &h->stacks[stack] : NULL;
	struct heapview_frame fr;
	uint32_t i;

	if (!s || !s->n) {
		fprintf(f, "%s(no stack)\n", indent);
		return;
	}
	for (i = 0; i < s->n && i < HEAPVIEW_TEXT_FRAMES; i++) {
		heapview_frame(w, s->image, s->ips[i], &fr);
		fprintf(f, "%s#%u %s", indent, i, fr.name);
		if (fr.file)
			fprintf(f, " (%s:%u)", fr.file, fr.line);
		fputc('\n', f);
	}
	if (s->n > HEAPVIEW_TEXT_FRAMES)
		fprintf(f, "%s... %u more frames\n", indent, s->n - HEAPVIEW_TEXT_FRAMES);
}

static void text_counts_row(FILE *f, const struct heap *h, const struct heap_counts *c, bool at_peak, const char *name,
                            const char *where)
{
	struct heap_growth g;
	char rate[48];

	heap_growth(h, c, &g);
	fprintf(f, "%10llu %12llu %12llu %10llu %10llu  %-12s  %s%s%s\n",
	        (unsigned long long)(at_peak ? c->at_peak_objects : c->live_objects),
	        (unsigned long long)(at_peak ? c->at_peak_bytes : c->live_bytes), (unsigned long long)c->peak_bytes,
	        (unsigned long long)c->allocs, (unsigned long long)c->frees,
	        g.growing ? heapview_rate(g.rate_bps, rate, sizeof(rate)) : "-", name, where ? "  " : "",
	        where ? where : "");
}

static void text_illegal(FILE *f, struct walk *w, const struct heap *h, const struct heapview_opts *o)
{
	char t[48], where[2048];
	uint32_t i;

	for (i = 0; i < h->nillegal; i++) {
		const struct heap_illegal *il = &h->illegal[i];
		const struct heap_site *s = &h->sites[il->site];

		fprintf(f, "\n%s: %s(0x%llx) in %s at %s, process %u thread %u", heap_illegal_name(il->kind),
		        heap_op_name(il->op), (unsigned long long)il->ptr, s->function,
		        rel_time(o, il->ns, t, sizeof(t)), il->pid, il->tid);
		if (il->count > 1)
			fprintf(f, " (%llu times)", (unsigned long long)il->count);
		if (il->kept)
			fprintf(f, " [kept from libc]");
		if (il->after_loss)
			fprintf(f, " [after lost events: maybe only their consequence]");
		fputc('\n', f);
		if (il->kind == HEAP_MISMATCH)
			fprintf(f, "  %s of a block from %s\n", heap_op_name(il->op), heap_op_name(il->alloc_op));
		else if (il->kind == HEAP_INTERIOR_POINTER)
			fprintf(f, "  0x%llx is %llu bytes into a live block of %llu bytes at 0x%llx\n",
			        (unsigned long long)il->ptr, (unsigned long long)(il->ptr - il->block_ptr),
			        (unsigned long long)il->block_size, (unsigned long long)il->block_ptr);
		fprintf(f, "  released at %s:\n", site_where(s, where, sizeof(where)));
		text_stack(f, w, h, il->stack, "    ");
		if (il->has_free) {
			fprintf(f, "  already released by %s at %s, thread %u, at %s:\n", heap_op_name(il->free_op),
			        rel_time(o, il->free_ns, t, sizeof(t)), il->free_tid,
			        site_where(&h->sites[il->free_site], where, sizeof(where)));
			text_stack(f, w, h, il->free_stack, "    ");
		}
		if (il->has_block) {
			fprintf(f, "  allocated by %s(%llu) = 0x%llx at %s, at %s:\n", heap_op_name(il->alloc_op),
			        (unsigned long long)il->block_size, (unsigned long long)il->block_ptr,
			        rel_time(o, il->alloc_ns, t, sizeof(t)),
			        site_where(&h->sites[il->alloc_site], where, sizeof(where)));
			text_stack(f, w, h, il->alloc_stack, "    ");
		}
	}
}

static void text_overlaps(FILE *f, struct walk *w, const struct heap *h, const struct heapview_opts *o)
{
	char t[48], where[2048];
	uint32_t i;

	for (i = 0; i < h->noverlaps; i++) {
		const struct heap_overlap *ov = &h->overlaps[i];

		fprintf(f, "\noverlap: %s(%llu) = 0x%llx at %s, process %u thread %u, at %s%s:\n", heap_op_name(ov->op),
		        (unsigned long long)ov->size, (unsigned long long)ov->ptr, rel_time(o, ov->ns, t, sizeof(t)),
		        ov->pid, ov->tid, site_where(&h->sites[ov->site], where, sizeof(where)),
		        ov->after_loss ? " [after lost events: maybe only their consequence]" : "");
		text_stack(f, w, h, ov->stack, "    ");
		fprintf(f, "  overlaps the live block 0x%llx (%llu bytes) from %s at %s, at %s:\n",
		        (unsigned long long)ov->old_ptr, (unsigned long long)ov->old_size, heap_op_name(ov->old_op),
		        rel_time(o, ov->old_ns, t, sizeof(t)),
		        site_where(&h->sites[ov->old_site], where, sizeof(where)));
		text_stack(f, w, h, ov->old_stack, "    ");
	}
	if (h->overlap_count > h->noverlaps)
		fprintf(f, "\n# %llu more overlaps not shown\n", (unsigned long long)(h->overlap_count - h->noverlaps));
}

uint64_t heapview_illegal_total(const struct heap *h)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k < HEAP_ILLEGAL_KINDS; k++)
		n += h->illegal_counts[k];
	return n;
}

void heapview_text(FILE *f, struct walk *w, const struct heap *h, const struct heapfeed *feed,
                   const struct heapview_opts *o)
{
	uint32_t *idx, n, i;
	char t[48], where[2048];
	uint64_t exited = 0;

	fprintf(f,
	        "# layerprof report --memory: %llu allocations, %llu releases, %llu live blocks (%llu bytes), "
	        "peak %llu bytes at %s, %llu events lost\n",
	        (unsigned long long)h->allocs, (unsigned long long)h->frees, (unsigned long long)h->live_objects,
	        (unsigned long long)h->live_bytes, (unsigned long long)h->peak_bytes,
	        rel_time(o, h->peak_ns, t, sizeof(t)), (unsigned long long)w->lost);
	if (!w->mem_ops)
		fprintf(f, "# no heap operations in this trace (record with --memory)\n");
	if (o->at_peak)
		fprintf(f, "# the state at the peak (%s): live objects and bytes then\n",
		        rel_time(o, h->peak_ns, t, sizeof(t)));
	else if (o->state_ns)
		fprintf(f, "# the state at %s\n", rel_time(o, o->state_ns, t, sizeof(t)));
	fprintf(f, "#\n# by call site\n");
	fprintf(f, "%10s %12s %12s %10s %10s  %-12s  %s\n", "Live objs", "Live bytes", "Peak bytes", "Allocs", "Frees",
	        "Growth", "Function  Call site");
	fprintf(f, "%10s %12s %12s %10s %10s  %-12s  %s\n",
	        "=========", "==========", "==========", "======", "=====", "======", "========  =========");
	idx = heapview_sorted_sites(h, o->at_peak, &n);
	for (i = 0; idx && i < n; i++) {
		const struct heap_site *s = &h->sites[idx[i]];

		text_counts_row(f, h, &s->c, o->at_peak, s->function, site_where(s, where, sizeof(where)));
	}
	free(idx);
	fprintf(f, "\n# by function\n");
	idx = heapview_sorted_fns(h, o->at_peak, &n);
	for (i = 0; idx && i < n; i++)
		text_counts_row(f, h, &h->fns[idx[i]].c, o->at_peak, h->fns[idx[i]].name, NULL);
	free(idx);
	for (i = 0; i < h->nsites; i++) {
		struct heap_growth g;
		char rate[48];

		heap_growth(h, &h->sites[i].c, &g);
		if (g.growing)
			fprintf(f,
			        "# growing: %s in %s: %s over the later %u samples of %.3f s, Mann-Kendall p = %.2g\n",
			        h->sites[i].key, h->sites[i].function, heapview_rate(g.rate_bps, rate, sizeof(rate)),
			        g.samples, (double)h->step_ns / 1e9, g.p_value);
	}

	fprintf(f,
	        "\n# illegal releases: %llu (never allocated %llu, double free %llu, interior pointer %llu, "
	        "mismatch %llu)\n",
	        (unsigned long long)heapview_illegal_total(h),
	        (unsigned long long)h->illegal_counts[HEAP_NEVER_ALLOCATED],
	        (unsigned long long)h->illegal_counts[HEAP_DOUBLE_FREE],
	        (unsigned long long)h->illegal_counts[HEAP_INTERIOR_POINTER],
	        (unsigned long long)h->illegal_counts[HEAP_MISMATCH]);
	if (h->listings)
		fprintf(f, "# live before tracing began, listed by the program then: %llu blocks, %llu bytes%s\n",
		        (unsigned long long)h->listed_objects, (unsigned long long)h->listed_bytes,
		        h->listings_incomplete ? " (incomplete: its live-block table was full)" : "");
	if (h->partial || h->released_unknown)
		fprintf(f,
		        "# released, allocated before tracing began: %llu (%llu by realloc): the stream began after "
		        "the program, so these are not illegal\n",
		        (unsigned long long)h->released_unknown, (unsigned long long)h->reallocs_unknown);
	if (h->released_unseen)
		fprintf(f, "# released while tracing was off (a later allocation took their place): %llu\n",
		        (unsigned long long)h->released_unseen);
	text_illegal(f, w, h, o);
	if (h->illegal_dropped)
		fprintf(f, "\n# %llu more distinct illegal releases not shown\n",
		        (unsigned long long)h->illegal_dropped);
	fprintf(f, "\n# allocations overlapping live blocks: %llu\n", (unsigned long long)h->overlap_count);
	text_overlaps(f, w, h, o);

	fprintf(f, "\n# processes\n");
	for (i = 0; i < h->nprocs; i++) {
		const struct heap_proc *p = &h->procs[i];

		if (!p->ops && !p->inherited_objects)
			continue;
		fprintf(f, "process %u (image %u)", p->pid, p->image);
		if (p->has_parent)
			fprintf(f, ", forked from image %u with %llu blocks (%llu bytes)", p->parent_image,
			        (unsigned long long)p->inherited_objects, (unsigned long long)p->inherited_bytes);
		fprintf(f, ": %llu operations, peak %llu bytes", (unsigned long long)p->ops,
		        (unsigned long long)p->peak_bytes);
		if (p->exited) {
			exited++;
			if (p->exit_status == LP_EXIT_STATUS_UNKNOWN)
				fprintf(f, ", ended (exit status unknown)");
			else
				fprintf(f, ", exited (status %u)", p->exit_status);
			fprintf(f, " with %llu blocks (%llu bytes) unfreed\n", (unsigned long long)p->unfreed_objects,
			        (unsigned long long)p->unfreed_bytes);
		} else if (p->execed) {
			fprintf(f, ", replaced by exec\n");
		} else {
			fprintf(f, ", %llu blocks (%llu bytes) live at the end of the trace\n",
			        (unsigned long long)p->live_objects, (unsigned long long)p->live_bytes);
		}
	}
	if (exited) {
		fprintf(f, "\n# unfreed at exit: %llu blocks, %llu bytes\n", (unsigned long long)h->unfreed_objects,
		        (unsigned long long)h->unfreed_bytes);
		idx = heapview_sorted_sites(h, false, &n);
		for (i = 0; idx && i < n; i++) {
			const struct heap_site *s = &h->sites[idx[i]];

			if (s->c.unfreed_objects)
				fprintf(f, "%10llu %12llu  %s  %s\n", (unsigned long long)s->c.unfreed_objects,
				        (unsigned long long)s->c.unfreed_bytes, s->function,
				        site_where(s, where, sizeof(where)));
		}
		free(idx);
	}
	if (h->folded)
		fprintf(f,
		        "\n# folded: %llu short-lived blocks (%llu bytes), %llu fold records: counted in allocs "
		        "and frees, not one by one\n",
		        (unsigned long long)h->folded, (unsigned long long)h->folded_bytes,
		        (unsigned long long)h->folds);
	if (h->null_releases)
		fprintf(f, "# %llu releases of a null pointer (no-ops)\n", (unsigned long long)h->null_releases);
	if (w->lost)
		fprintf(f,
		        "\n# %llu events lost: missed releases read as live blocks, missed allocations as illegal "
		        "releases (%llu illegal releases and %llu overlaps came after a loss)\n",
		        (unsigned long long)w->lost, (unsigned long long)h->illegal_after_loss,
		        (unsigned long long)h->overlaps_after_loss);
	if (w->mem_malformed || w->mem_unknown_stacks || w->mem_stacks_dropped)
		fprintf(f,
		        "# %llu malformed heap events ignored, %llu operations with an undefined stack, %llu stacks "
		        "dropped\n",
		        (unsigned long long)w->mem_malformed, (unsigned long long)w->mem_unknown_stacks,
		        (unsigned long long)w->mem_stacks_dropped);
	if (feed && feed->late)
		fprintf(f, "# %llu heap events came later than the merge by time could wait for\n",
		        (unsigned long long)feed->late);
	if (h->oom)
		fprintf(f, "# out of memory: the heap state is incomplete\n");
}

static void json_counts(struct json *j, const struct heap *h, const struct heap_counts *c)
{
	struct heap_growth g;

	heap_growth(h, c, &g);
	json_u64(j, "live_objects", c->live_objects);
	json_u64(j, "live_bytes", c->live_bytes);
	json_u64(j, "peak_bytes", c->peak_bytes);
	json_u64(j, "peak_objects", c->peak_objects);
	json_u64(j, "peak_ns", c->peak_ns);
	json_u64(j, "at_peak_objects", c->at_peak_objects);
	json_u64(j, "at_peak_bytes", c->at_peak_bytes);
	json_u64(j, "allocs", c->allocs);
	json_u64(j, "frees", c->frees);
	json_u64(j, "failed", c->failed);
	json_u64(j, "bytes_allocated", c->bytes_allocated);
	json_u64(j, "bytes_freed", c->bytes_freed);
	json_u64(j, "folded", c->folded);
	json_u64(j, "folded_bytes", c->folded_bytes);
	json_u64(j, "listed", c->listed);
	json_u64(j, "listed_bytes", c->listed_bytes);
	json_u64(j, "unfreed_objects", c->unfreed_objects);
	json_u64(j, "unfreed_bytes", c->unfreed_bytes);
	json_bool(j, "growing", g.growing);
	json_f64(j, "growth_bytes_per_s", g.samples >= HEAP_GROWTH_MIN_SAMPLES ? g.rate_bps : 0);
	json_f64(j, "growth_confidence", g.confidence);
	json_f64(j, "growth_p", g.p_value);
	json_u64(j, "growth_samples", g.samples);
}

static void json_site_ref(struct json *j, const struct heap *h, uint32_t site)
{
	const struct heap_site *s = &h->sites[site];

	json_str(j, "function", s->function);
	json_str(j, "call_site", s->key);
	json_str(j, "file", s->file);
	json_u64(j, "line", s->line);
}

static void json_illegal(struct json *j, struct walk *w, const struct heap *h)
{
	char addr[32];
	uint32_t i;

	json_array_begin(j, "illegal");
	for (i = 0; i < h->nillegal; i++) {
		const struct heap_illegal *il = &h->illegal[i];

		json_object_begin(j, NULL);
		json_str(j, "kind", heap_illegal_name(il->kind));
		json_str(j, "operation", heap_op_name(il->op));
		json_site_ref(j, h, il->site);
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)il->ptr);
		json_str(j, "ptr", addr);
		json_u64(j, "time_ns", il->ns);
		json_u64(j, "pid", il->pid);
		json_u64(j, "tid", il->tid);
		json_u64(j, "count", il->count);
		json_bool(j, "kept", il->kept);
		json_bool(j, "after_loss", il->after_loss);
		heapview_json_stack(j, "stack", w, h, il->stack);
		if (il->has_block) {
			json_object_begin(j, "block");
			snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)il->block_ptr);
			json_str(j, "ptr", addr);
			json_u64(j, "size", il->block_size);
			json_str(j, "operation", heap_op_name(il->alloc_op));
			json_site_ref(j, h, il->alloc_site);
			json_u64(j, "time_ns", il->alloc_ns);
			heapview_json_stack(j, "stack", w, h, il->alloc_stack);
			json_object_end(j);
		}
		if (il->has_free) {
			json_object_begin(j, "first_release");
			json_str(j, "operation", heap_op_name(il->free_op));
			json_site_ref(j, h, il->free_site);
			json_u64(j, "time_ns", il->free_ns);
			json_u64(j, "tid", il->free_tid);
			heapview_json_stack(j, "stack", w, h, il->free_stack);
			json_object_end(j);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_overlaps(struct json *j, struct walk *w, const struct heap *h)
{
	char addr[32];
	uint32_t i;

	json_array_begin(j, "overlaps");
	for (i = 0; i < h->noverlaps; i++) {
		const struct heap_overlap *ov = &h->overlaps[i];

		json_object_begin(j, NULL);
		json_str(j, "operation", heap_op_name(ov->op));
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)ov->ptr);
		json_str(j, "ptr", addr);
		json_u64(j, "size", ov->size);
		json_site_ref(j, h, ov->site);
		json_u64(j, "time_ns", ov->ns);
		json_u64(j, "pid", ov->pid);
		json_u64(j, "tid", ov->tid);
		json_bool(j, "after_loss", ov->after_loss);
		heapview_json_stack(j, "stack", w, h, ov->stack);
		json_object_begin(j, "live_block");
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)ov->old_ptr);
		json_str(j, "ptr", addr);
		json_u64(j, "size", ov->old_size);
		json_str(j, "operation", heap_op_name(ov->old_op));
		json_site_ref(j, h, ov->old_site);
		json_u64(j, "time_ns", ov->old_ns);
		heapview_json_stack(j, "stack", w, h, ov->old_stack);
		json_object_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_processes(struct json *j, const struct heap *h)
{
	uint32_t i;

	json_array_begin(j, "processes");
	for (i = 0; i < h->nprocs; i++) {
		const struct heap_proc *p = &h->procs[i];

		if (!p->ops && !p->inherited_objects)
			continue;
		json_object_begin(j, NULL);
		json_u64(j, "pid", p->pid);
		json_u64(j, "image", p->image);
		if (p->has_parent)
			json_u64(j, "parent_image", p->parent_image);
		json_u64(j, "operations", p->ops);
		json_u64(j, "live_objects", p->live_objects);
		json_u64(j, "live_bytes", p->live_bytes);
		json_u64(j, "peak_bytes", p->peak_bytes);
		json_u64(j, "peak_ns", p->peak_ns);
		json_u64(j, "inherited_objects", p->inherited_objects);
		json_u64(j, "inherited_bytes", p->inherited_bytes);
		json_bool(j, "exited", p->exited);
		if (p->exited && p->exit_status == LP_EXIT_STATUS_UNKNOWN)
			json_null(j, "exit_status"); /* ended, how is not known */
		else if (p->exited)
			json_u64(j, "exit_status", p->exit_status);
		json_bool(j, "execed", p->execed);
		json_u64(j, "unfreed_objects", p->unfreed_objects);
		json_u64(j, "unfreed_bytes", p->unfreed_bytes);
		json_object_end(j);
	}
	json_array_end(j);
}

void heapview_json(struct json *j, struct walk *w, const struct heap *h, const struct heapfeed *feed,
                   const struct heapview_opts *o)
{
	uint32_t *idx, n, i;

	json_bool(j, "at_peak", o->at_peak);
	json_u64(j, "state_ns", o->at_peak ? h->peak_ns : o->state_ns ? o->state_ns : h->now_ns);
	json_object_begin(j, "totals");
	json_u64(j, "operations", h->ops);
	json_u64(j, "live_objects", h->live_objects);
	json_u64(j, "live_bytes", h->live_bytes);
	json_u64(j, "peak_bytes", h->peak_bytes);
	json_u64(j, "peak_objects", h->peak_objects);
	json_u64(j, "peak_ns", h->peak_ns);
	json_u64(j, "allocs", h->allocs);
	json_u64(j, "frees", h->frees);
	json_u64(j, "failed", h->failed);
	json_u64(j, "bytes_allocated", h->bytes_allocated);
	json_u64(j, "bytes_freed", h->bytes_freed);
	json_u64(j, "folded", h->folded);
	json_u64(j, "folded_bytes", h->folded_bytes);
	json_u64(j, "fold_records", h->folds);
	json_u64(j, "unfreed_objects", h->unfreed_objects);
	json_u64(j, "unfreed_bytes", h->unfreed_bytes);
	json_u64(j, "illegal", heapview_illegal_total(h));
	for (i = 0; i < HEAP_ILLEGAL_KINDS; i++)
		json_u64(j, heap_illegal_name((enum heap_illegal_kind)i), h->illegal_counts[i]);
	json_u64(j, "illegal_not_shown", h->illegal_dropped);
	json_u64(j, "overlaps", h->overlap_count);
	json_u64(j, "illegal_after_loss", h->illegal_after_loss);
	json_u64(j, "overlaps_after_loss", h->overlaps_after_loss);
	json_u64(j, "null_releases", h->null_releases);
	json_bool(j, "partial", h->partial);
	json_u64(j, "released_unknown", h->released_unknown);
	json_u64(j, "reallocs_unknown", h->reallocs_unknown);
	json_u64(j, "listings", h->listings);
	json_u64(j, "listings_incomplete", h->listings_incomplete);
	json_u64(j, "listed_objects", h->listed_objects);
	json_u64(j, "listed_bytes", h->listed_bytes);
	json_u64(j, "listed_dropped", h->listed_dropped);
	json_u64(j, "released_unseen", h->released_unseen);
	json_u64(j, "kept_releases", h->kept_releases);
	json_u64(j, "dropped_at_exec", h->dropped_at_exec);
	json_u64(j, "malformed_events", w->mem_malformed);
	json_u64(j, "unknown_stacks", w->mem_unknown_stacks);
	json_u64(j, "dropped_stacks", w->mem_stacks_dropped);
	json_u64(j, "forgotten_stacks", w->mem_stacks_forgotten);
	json_u64(j, "late_events", feed ? feed->late : 0);
	json_bool(j, "out_of_memory", h->oom);
	json_u64(j, "sample_interval_ns", h->step_ns);
	json_object_end(j);

	json_array_begin(j, "sites");
	idx = heapview_sorted_sites(h, o->at_peak, &n);
	for (i = 0; idx && i < n; i++) {
		const struct heap_site *s = &h->sites[idx[i]];

		json_object_begin(j, NULL);
		json_site_ref(j, h, idx[i]);
		json_counts(j, h, &s->c);
		heapview_json_stack(j, "stack", w, h, s->stack);
		json_object_end(j);
	}
	free(idx);
	json_array_end(j);

	json_array_begin(j, "functions");
	idx = heapview_sorted_fns(h, o->at_peak, &n);
	for (i = 0; idx && i < n; i++) {
		json_object_begin(j, NULL);
		json_str(j, "function", h->fns[idx[i]].name);
		json_counts(j, h, &h->fns[idx[i]].c);
		json_object_end(j);
	}
	free(idx);
	json_array_end(j);

	json_illegal(j, w, h);
	json_overlaps(j, w, h);
	json_processes(j, h);
}

uint32_t heapview_series(const struct heap *h, const struct heap_counts *c, uint32_t points, uint64_t *t_ns,
                         uint64_t *bytes)
{
	uint32_t n = h->series_n, k, i;

	if (!h->ops || !points)
		return 0;
	if (n > HEAP_SERIES_LEN)
		n = HEAP_SERIES_LEN;
	if (points > n)
		points = n;
	for (k = 0; k < points; k++) {
		/* the sample at the end of the k-th of `points` merged intervals */
		uint32_t at = (uint32_t)(((uint64_t)k + 1) * n / points) - 1;
		uint64_t t = ((uint64_t)at + 1) * h->step_ns, v = 0;

		if (h->now_ns >= h->first_ns && t > h->now_ns - h->first_ns)
			t = h->now_ns - h->first_ns;
		if (c) {
			v = at < c->series_last ? c->series[at] : c->live_bytes - c->unfreed_bytes + c->held_bytes;
		} else {
			for (i = 0; i < h->nsites; i++) {
				const struct heap_counts *sc = &h->sites[i].c;

				v += at < sc->series_last ? sc->series[at]
				                          : sc->live_bytes - sc->unfreed_bytes + sc->held_bytes;
			}
		}
		t_ns[k] = h->first_ns + t;
		bytes[k] = v;
	}
	return points;
}
