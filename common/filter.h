/* The filter stage: turns one thread's entry/exit/longjmp stream into a
 * properly nested one (repairing unmatched exits and abandoned frames) and
 * applies the user's filters: only-inside (-F), exclude (-N), depth and
 * minimum duration.  Used by the drain at record time and by the host
 * readers at report time, so both mean the same thing. */
#ifndef LP_FILTER_H
#define LP_FILTER_H

#include <stdbool.h>
#include <stdint.h>

/* Frames a stream tracks by default (24 bytes each, allocated as the
 * stack deepens: 96 MiB at the bound).  Calls deeper than the bound are not
 * handed on: they are counted (filter_stream.deep_calls) and reported to
 * the sink as lost events when the stack comes back within it. */
#define FILTER_STACK_MAX (1u << 22)

enum filter_class {
	FILTER_ONLY = 1u << 0,    /* matches an --only pattern */
	FILTER_EXCLUDE = 1u << 1, /* matches an --exclude pattern */
};

enum filter_event_flags {
	FILTER_INHERITED = 1u << 0,  /* frame entered before a fork, in the parent */
	FILTER_UNFINISHED = 1u << 1, /* exit invented: longjmp, missing exit or end of stream */
};

struct filter_spec {
	/* Returns enum filter_class bits for a function; NULL when there are
	 * no patterns.  Called once per entry: cache inside if slow. */
	unsigned (*classify)(void *ctx, uint32_t image, uint64_t addr);
	void *ctx;
	bool has_only;
	uint32_t max_depth; /* 0: no limit */
	uint64_t min_ns;    /* 0: no limit */
	uint32_t stack_max; /* frames tracked; 0: FILTER_STACK_MAX */
};

struct filter_sink {
	void *ctx;
	/* depth: 0 for a root call.  flags: enum filter_event_flags */
	void (*entry)(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags);
	void (*exit)(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns, unsigned flags);
	/* events (entries and exits of calls deeper than the tracked stack)
	 * that were not handed on, said once the stack is back within its
	 * bound, at a longjmp out of the untracked frames and at the end;
	 * may be NULL */
	void (*lost)(void *ctx, uint64_t ns, uint64_t events);
};

struct filter_frame {
	uint64_t addr;
	uint64_t entry_ns;
	uint8_t visible;
	uint8_t emitted;
	uint8_t only;
	uint8_t flags;
	uint32_t tag; /* the caller's, from filter_entry_tag; else 0 */
};

struct filter_stream {
	const struct filter_spec *spec;
	struct filter_sink sink;
	uint32_t image;
	uint32_t depth;       /* frames on the stack */
	uint32_t overflow;    /* frames past the tracked stack, open now */
	uint32_t visible;     /* visible frames on the stack */
	uint32_t emitted;     /* emitted frames on the stack */
	uint32_t only;        /* --only frames on the stack */
	uint32_t excluded_at; /* stack index of the excluding frame, or UINT32_MAX */
	uint32_t cap;
	uint64_t last_ns;
	uint64_t unmatched;   /* exits that matched no frame */
	uint64_t deep_calls;  /* calls past the tracked stack, in all */
	uint64_t deep_events; /* their events not yet said to sink.lost */
	/* the tag of the entry being handed to sink.entry: valid during
	 * that call (an entry held back for min_ns is handed on later, from
	 * another call's filter_exit) */
	uint32_t sink_tag;
	struct filter_frame *stack;
};

/* Returns 0 or -ENOMEM.  spec must outlive the stream. */
int filter_stream_init(struct filter_stream *fs, const struct filter_spec *spec, const struct filter_sink *sink,
                       uint32_t image);
void filter_stream_release(struct filter_stream *fs);

void filter_entry(struct filter_stream *fs, uint64_t ns, uint64_t addr);
/* filter_entry with a tag the stage keeps with the frame and shows in
 * fs->sink_tag when it hands the entry on (the drain's counter values of
 * an entry held back for min_ns).  The frame's stack index is
 * fs->depth before the call. */
void filter_entry_tag(struct filter_stream *fs, uint64_t ns, uint64_t addr, uint32_t tag);
void filter_exit(struct filter_stream *fs, uint64_t ns, uint64_t addr);
/* A frame the thread was already inside when its stream began (fork). */
void filter_inherit(struct filter_stream *fs, uint64_t ns, uint64_t addr);
/* longjmp back to `depth` frames: the frames above end now. */
void filter_longjmp(struct filter_stream *fs, uint64_t ns, uint64_t depth);
/* End of the stream: every open frame ends at ns. */
void filter_finish(struct filter_stream *fs, uint64_t ns);

/* True when the spec changes nothing but repairs the nesting. */
bool filter_spec_is_empty(const struct filter_spec *spec);

#endif
