/* The filter stage (see filter.h).  Called once per function event in
 * every reader and in filtered recordings: keep the common path short. */
#include <errno.h>
#include <stdlib.h>

#include "common/filter.h"

bool filter_spec_is_empty(const struct filter_spec *spec)
{
	return !spec->classify && !spec->max_depth && !spec->min_ns;
}

int filter_stream_init(struct filter_stream *fs, const struct filter_spec *spec, const struct filter_sink *sink,
                       uint32_t image)
{
	fs->spec = spec;
	fs->sink = *sink;
	fs->image = image;
	fs->depth = fs->overflow = fs->visible = fs->emitted = fs->only = 0;
	fs->excluded_at = UINT32_MAX;
	fs->last_ns = 0;
	fs->unmatched = 0;
	fs->sink_tag = 0;
	fs->deep_calls = fs->deep_events = 0;
	fs->cap = spec->stack_max && spec->stack_max < 64 ? spec->stack_max : 64;
	fs->stack = malloc(fs->cap * sizeof(*fs->stack));
	return fs->stack ? 0 : -ENOMEM;
}

void filter_stream_release(struct filter_stream *fs)
{
	free(fs->stack);
	fs->stack = NULL;
}

static void push(struct filter_stream *fs, uint64_t ns, uint64_t addr, unsigned flags, uint32_t tag)
{
	const struct filter_spec *spec = fs->spec;
	struct filter_frame *f;
	unsigned cls = 0;

	if (fs->overflow || fs->depth == fs->cap) {
		uint32_t max = spec->stack_max ? spec->stack_max : FILTER_STACK_MAX;
		uint32_t cap = fs->cap * 2 < max ? fs->cap * 2 : max;
		struct filter_frame *n = NULL;

		if (!fs->overflow && cap > fs->cap)
			n = realloc(fs->stack, cap * sizeof(*n));
		if (!n) {
			/* past the bound (or out of memory): counted, not tracked */
			fs->overflow++;
			fs->deep_calls++;
			fs->deep_events++;
			return;
		}
		fs->stack = n;
		fs->cap = cap;
	}
	f = &fs->stack[fs->depth];
	f->addr = addr;
	f->entry_ns = ns;
	f->visible = f->emitted = f->only = 0;
	f->flags = (uint8_t)flags;
	f->tag = tag;
	/* classified inside an excluded subtree too, where the answer is not
	 * used, so that the readers can say which patterns matched nothing */
	if (spec->classify)
		cls = spec->classify(spec->ctx, fs->image, addr);
	if (fs->excluded_at != UINT32_MAX) {
		/* inside an excluded subtree: nothing shows */
	} else if (cls & FILTER_EXCLUDE) {
		fs->excluded_at = fs->depth;
	} else {
		if (cls & FILTER_ONLY) {
			f->only = 1;
			fs->only++;
		}
		if ((!spec->has_only || fs->only) && (!spec->max_depth || fs->visible < spec->max_depth)) {
			f->visible = 1;
			fs->visible++;
			if (!spec->min_ns) {
				f->emitted = 1;
				fs->sink_tag = tag;
				fs->sink.entry(fs->sink.ctx, ns, addr, fs->emitted++, flags);
			}
		}
	}
	fs->depth++;
}

/* Emits the deferred entries of visible frames up to and including `top`,
 * outermost first (only with a minimum duration). */
static void emit_pending(struct filter_stream *fs, uint32_t top)
{
	uint32_t i = top + 1;

	while (i > 0 && !(fs->stack[i - 1].visible && fs->stack[i - 1].emitted))
		i--;
	for (; i <= top; i++) {
		struct filter_frame *f = &fs->stack[i];

		if (f->visible && !f->emitted) {
			f->emitted = 1;
			fs->sink_tag = f->tag;
			fs->sink.entry(fs->sink.ctx, f->entry_ns, f->addr, fs->emitted++, f->flags);
		}
	}
}

static void pop(struct filter_stream *fs, uint64_t ns, unsigned flags)
{
	uint32_t i = fs->depth - 1;
	struct filter_frame *f = &fs->stack[i];

	if (f->visible) {
		if (!f->emitted && fs->spec->min_ns && ns - f->entry_ns >= fs->spec->min_ns)
			emit_pending(fs, i);
		if (f->emitted) {
			fs->emitted--;
			fs->sink.exit(fs->sink.ctx, ns, f->addr, fs->emitted, f->entry_ns, flags | f->flags);
		}
		fs->visible--;
	}
	if (f->only)
		fs->only--;
	if (fs->excluded_at == i)
		fs->excluded_at = UINT32_MAX;
	fs->depth--;
}

void filter_entry(struct filter_stream *fs, uint64_t ns, uint64_t addr)
{
	fs->last_ns = ns;
	push(fs, ns, addr, 0, 0);
}

void filter_entry_tag(struct filter_stream *fs, uint64_t ns, uint64_t addr, uint32_t tag)
{
	fs->last_ns = ns;
	push(fs, ns, addr, 0, tag);
}

void filter_inherit(struct filter_stream *fs, uint64_t ns, uint64_t addr)
{
	fs->last_ns = ns;
	push(fs, ns, addr, FILTER_INHERITED, 0);
}

/* Says the events of untracked calls to the sink. */
static void deep_flush(struct filter_stream *fs, uint64_t ns)
{
	if (fs->deep_events && fs->sink.lost)
		fs->sink.lost(fs->sink.ctx, ns, fs->deep_events);
	fs->deep_events = 0;
}

void filter_exit(struct filter_stream *fs, uint64_t ns, uint64_t addr)
{
	uint32_t i;

	fs->last_ns = ns;
	if (fs->overflow) {
		fs->overflow--;
		fs->deep_events++;
		if (!fs->overflow)
			deep_flush(fs, ns);
		return;
	}
	if (fs->depth && fs->stack[fs->depth - 1].addr == addr) {
		pop(fs, ns, 0);
		return;
	}
	/* an exit further down: the frames above it lost their exits (a
	 * dropped chunk, or unwinding the runtime could not see) */
	for (i = fs->depth; i > 0; i--) {
		if (fs->stack[i - 1].addr == addr) {
			while (fs->depth > i)
				pop(fs, ns, FILTER_UNFINISHED);
			pop(fs, ns, 0);
			return;
		}
	}
	fs->unmatched++;
}

void filter_longjmp(struct filter_stream *fs, uint64_t ns, uint64_t depth)
{
	fs->last_ns = ns;
	if (depth >= fs->depth) {
		/* still past the tracked frames: only untracked ones end */
		if (fs->overflow > depth - fs->depth)
			fs->overflow = (uint32_t)(depth - fs->depth);
		if (!fs->overflow)
			deep_flush(fs, ns);
		return;
	}
	fs->overflow = 0;
	deep_flush(fs, ns);
	while (fs->depth > depth)
		pop(fs, ns, FILTER_UNFINISHED);
}

void filter_finish(struct filter_stream *fs, uint64_t ns)
{
	if (ns < fs->last_ns)
		ns = fs->last_ns;
	fs->overflow = 0;
	deep_flush(fs, ns);
	while (fs->depth)
		pop(fs, ns, FILTER_UNFINISHED);
}
