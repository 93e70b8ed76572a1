/* libFuzzer target: the input is a whole trace data file, read in memory
 * the way host/lib/trace/reader.c reads it, with every EVENTS payload decoded,
 * run through the filter stage and re-encoded, checking their promises. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "common/decoder.h"
#include "common/encoder.h"
#include "common/filter.h"
#include "common/kernevent.h"
#include "common/memevent.h"
#include "common/sysevent.h"
#include "common/varint.h"
#include "layerprof/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: abort, so that the fuzzer keeps the input. */
#define ENSURE(cond)                                                                            \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz_decode: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                \
		}                                                                               \
	} while (0)

/* Streams kept across chunks, keyed as the host keys them (image, tid);
 * more than this many in one input go unfiltered. */
#define STREAMS_MAX 8

/* What the filter emitted and has not closed yet: every exit must close
 * the innermost open entry. */
struct nest {
	uint64_t *addr, *entry_ns;
	uint32_t depth, cap;
};

struct stream {
	uint32_t image, tid;
	uint64_t last_ns;
	struct filter_stream fs;
	struct nest nest;
};

/* An event handed to the encoder, kept until its payload is decoded back. */
struct sent {
	struct lp_event ev;
	uint32_t frames_off;
};

#define SENT_MAX (ENCODER_CAP / 2)

struct state {
	struct decoder dec, redec;
	struct encoder enc;
	struct sent sent[SENT_MAX];
	uint32_t nsent;
	uint64_t frames[ENCODER_CAP];
	uint32_t nframes;
	uint64_t sent_last_ns;
	struct stream streams[STREAMS_MAX];
	uint32_t nstreams;
	struct filter_spec spec;
};

static struct state *st;

static void nest_entry(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct nest *n = ctx;

	ENSURE(depth == n->depth);
	ENSURE(!(flags & ~(unsigned)FILTER_INHERITED));
	if (n->depth == n->cap) {
		n->cap = n->cap ? 2 * n->cap : 64;
		n->addr = realloc(n->addr, n->cap * sizeof(*n->addr));
		n->entry_ns = realloc(n->entry_ns, n->cap * sizeof(*n->entry_ns));
		ENSURE(n->addr && n->entry_ns);
	}
	n->addr[n->depth] = addr;
	n->entry_ns[n->depth] = ns;
	n->depth++;
}

static void nest_exit(void *ctx, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns, unsigned flags)
{
	struct nest *n = ctx;

	ENSURE(n->depth > 0);
	n->depth--;
	ENSURE(depth == n->depth);
	ENSURE(addr == n->addr[n->depth]);
	ENSURE(entry_ns == n->entry_ns[n->depth]);
	ENSURE(!(flags & ~(unsigned)(FILTER_INHERITED | FILTER_UNFINISHED)));
}

/* Some functions are --only, some --exclude, by their address. */
static unsigned classify(void *ctx, uint32_t image, uint64_t addr)
{
	unsigned c = 0;

	if (addr % 7 == 3)
		c |= FILTER_ONLY;
	if (addr % 11 == 5)
		c |= FILTER_EXCLUDE;
	return c;
}

/* The input's last byte picks the filters, so that each input always runs
 * the same way. */
static void pick_spec(struct filter_spec *spec, uint8_t b)
{
	memset(spec, 0, sizeof(*spec));
	if (b & 1) {
		spec->classify = classify;
		spec->has_only = b & 2;
	}
	if (b & 4)
		spec->max_depth = 1 + (b >> 5);
	if (b & 8)
		spec->min_ns = (uint64_t)1 << (b >> 4);
	if (b & 16)
		spec->stack_max = 2 + (b >> 6); /* calls past it are counted, not tracked */
}

static struct stream *stream_get(uint32_t image, uint32_t tid)
{
	struct filter_sink sink = { NULL, nest_entry, nest_exit, NULL };
	struct stream *s;
	uint32_t i;

	for (i = 0; i < st->nstreams; i++)
		if (st->streams[i].image == image && st->streams[i].tid == tid)
			return &st->streams[i];
	if (st->nstreams == STREAMS_MAX)
		return NULL;
	s = &st->streams[st->nstreams];
	memset(s, 0, sizeof(*s));
	s->image = image;
	s->tid = tid;
	sink.ctx = &s->nest;
	if (filter_stream_init(&s->fs, &st->spec, &sink, image))
		return NULL;
	st->nstreams++;
	return s;
}

static void streams_finish(void)
{
	uint32_t i;

	for (i = 0; i < st->nstreams; i++) {
		struct stream *s = &st->streams[i];

		filter_finish(&s->fs, s->last_ns);
		ENSURE(s->nest.depth == 0);
		ENSURE(s->fs.depth == 0);
		filter_stream_release(&s->fs);
		free(s->nest.addr);
		free(s->nest.entry_ns);
	}
	st->nstreams = 0;
}

static bool inside(const void *p, size_t n, const uint8_t *buf, size_t len)
{
	const uint8_t *q = p;

	return n == 0 || (q >= buf && q <= buf + len && n <= (size_t)(buf + len - q));
}

/* Decodes what the encoder made of the sent events and compares. */
static void resent_check(void)
{
	const uint8_t *payload;
	struct lp_event ev;
	size_t len = encoder_take(&st->enc, &payload);
	uint32_t i;

	if (!st->nsent) {
		ENSURE(len == 0);
		return;
	}
	ENSURE(len > 0 && len <= ENCODER_CAP);
	ENSURE(decoder_begin(&st->redec, payload, len) == 0);
	ENSURE(st->redec.image == st->dec.image && st->redec.pid == st->dec.pid && st->redec.tid == st->dec.tid);
	for (i = 0; i < st->nsent; i++) {
		const struct lp_event *w = &st->sent[i].ev;

		ENSURE(decoder_next(&st->redec, &ev) == 1);
		ENSURE(ev.type == w->type);
		ENSURE(ev.time == w->time);
		switch (w->type) {
		case LP_EV_MAP:
			ENSURE(ev.base == w->base && ev.start == w->start && ev.end == w->end &&
			       ev.offset == w->offset);
			ENSURE(ev.build_id_len == w->build_id_len && ev.str_len == w->str_len);
			ENSURE(!w->build_id_len || !memcmp(ev.build_id, w->build_id, w->build_id_len));
			ENSURE(!w->str_len || !memcmp(ev.str, w->str, w->str_len));
			break;
		case LP_EV_TASK:
			ENSURE(ev.arg == w->arg && ev.value == w->value);
			ENSURE(ev.str_len == w->str_len && ev.nframes == w->nframes);
			ENSURE(!w->str_len || !memcmp(ev.str, w->str, w->str_len));
			ENSURE(!w->nframes ||
			       !memcmp(ev.frames, st->frames + st->sent[i].frames_off, w->nframes * sizeof(uint64_t)));
			break;
		default:
			ENSURE(ev.value == w->value);
		}
	}
	ENSURE(decoder_next(&st->redec, &ev) == 0);
	st->nsent = st->nframes = 0;
}

/* Hands a decoded event to the encoder, remembering what must come back:
 * the same event, its time clamped to the previous one of the payload. */
static void resend(const struct lp_event *ev)
{
	struct sent *s;

	if (ev->type != LP_EV_ENTRY && ev->type != LP_EV_EXIT && ev->type != LP_EV_LOST && ev->type != LP_EV_LONGJMP &&
	    ev->type != LP_EV_MAP && ev->type != LP_EV_TASK)
		return;
	if (encoder_full(&st->enc) || st->nframes + EVENT_FRAMES_MAX > ENCODER_CAP)
		resent_check();
	ENSURE(st->nsent < SENT_MAX);
	s = &st->sent[st->nsent];
	s->ev = *ev;
	if (st->nsent && ev->time < st->sent_last_ns)
		s->ev.time = st->sent_last_ns;
	st->sent_last_ns = s->ev.time;
	switch (ev->type) {
	case LP_EV_ENTRY:
		encoder_entry(&st->enc, ev->time, ev->value);
		break;
	case LP_EV_EXIT:
		encoder_exit(&st->enc, ev->time, ev->value);
		break;
	case LP_EV_LOST:
		encoder_lost(&st->enc, ev->time, ev->value);
		break;
	case LP_EV_LONGJMP:
		encoder_longjmp(&st->enc, ev->time, ev->value);
		break;
	case LP_EV_MAP:
		encoder_map(&st->enc, ev->time, ev->base, ev->start, ev->end, ev->offset, ev->build_id,
		            ev->build_id_len, ev->str, ev->str_len);
		break;
	case LP_EV_TASK:
		s->frames_off = st->nframes;
		if (ev->nframes)
			memcpy(st->frames + st->nframes, ev->frames, ev->nframes * sizeof(uint64_t));
		st->nframes += ev->nframes;
		encoder_task(&st->enc, ev->time, ev->arg, ev->value, ev->str, ev->str_len, ev->frames, ev->nframes);
		break;
	}
	st->nsent++;
}

static void events_chunk(const uint8_t *payload, size_t len)
{
	struct stream *s;
	struct lp_event ev;
	size_t steps = 0;
	uint32_t i;
	int r;

	if (decoder_begin(&st->dec, payload, len))
		return;
	s = stream_get(st->dec.image, st->dec.tid);
	encoder_init(&st->enc, st->dec.image, st->dec.pid, st->dec.tid);
	st->nsent = st->nframes = 0;
	while ((r = decoder_next(&st->dec, &ev)) == 1) {
		ENSURE(++steps <= len / 2); /* every event takes two bytes or more */
		switch (ev.type) {
		case LP_EV_ENTRY:
			if (s)
				filter_entry(&s->fs, ev.time, ev.value);
			break;
		case LP_EV_EXIT:
			if (s)
				filter_exit(&s->fs, ev.time, ev.value);
			break;
		case LP_EV_LONGJMP:
			if (s)
				filter_longjmp(&s->fs, ev.time, ev.value);
			break;
		case LP_EV_LOST:
			break;
		case LP_EV_MAP:
			ENSURE(ev.build_id_len <= 64 && inside(ev.build_id, ev.build_id_len, payload, len));
			ENSURE(ev.str_len <= LP_STRING_MAX && inside(ev.str, ev.str_len, payload, len));
			ENSURE(ev.start <= ev.end);
			break;
		case LP_EV_TASK:
			ENSURE(ev.str_len <= 1024 && inside(ev.str, ev.str_len, payload, len));
			ENSURE(ev.nframes <= EVENT_FRAMES_MAX);
			if (s && ev.arg == LP_TASK_FORK)
				for (i = 0; i < ev.nframes; i++)
					filter_inherit(&s->fs, ev.time, ev.frames[i]);
			break;
		case LP_EV_SYSCALL_ENTER:
		case LP_EV_SYSCALL_EXIT: {
			struct sysevent se;

			ENSURE(inside(ev.str, ev.str_len, payload, len));
			/* a body that parses stays inside the event */
			if (!sysevent_parse(&ev, &se)) {
				ENSURE(se.nargs <= 6 && se.nips <= SYSEVENT_IPS_MAX && se.str_len <= SYSEVENT_STR_MAX);
				ENSURE(!se.str_len || inside((const uint8_t *)se.str, se.str_len, payload, len));
			}
			break;
		}
		case LP_EV_KERNEL: {
			static uint8_t kbuf[KERNEVENT_RAW_MAX];
			struct kernevent ke;

			ENSURE(inside(ev.str, ev.str_len, payload, len));
			/* a record that parses lies in the event, or whole in the
			 * rebuild buffer, and is never longer than the bound */
			if (!kernevent_parse(&ev, &ke, kbuf)) {
				ENSURE(ke.raw_len <= KERNEVENT_RAW_MAX);
				ENSURE(ke.raw == kbuf ? ke.raw_len >= KERNEVENT_COMMON_SIZE
				                      : inside(ke.raw, ke.raw_len, payload, len));
			}
			break;
		}
		case LP_EV_ALLOC: {
			struct memevent me;

			ENSURE(inside(ev.str, ev.str_len, payload, len));
			if (!memevent_parse(&ev, &me))
				ENSURE(me.op >= LP_MEM_MALLOC && me.op <= LP_MEM_BASELINE);
			break;
		}
		case LP_EV_STACK: {
			struct stackevent se;

			ENSURE(inside(ev.str, ev.str_len, payload, len));
			if (!stackevent_parse(&ev, &se))
				ENSURE(se.n <= MEMEVENT_STACK_MAX);
			break;
		}
		default:
			ENSURE(ev.type > 0 && ev.type < 16);
			ENSURE(inside(ev.str, ev.str_len, payload, len));
		}
		if (s)
			s->last_ns = ev.time;
		resend(&ev);
	}
	ENSURE(r == 0 || r < 0);
	resent_check();
}

/* CLOCK: varint count, then (raw, ns) pairs. */
static void clock_chunk(const uint8_t *payload, size_t len)
{
	const uint8_t *p = payload, *end = payload + len;
	uint64_t n, i, raw, ns;

	if (varint_get(&p, end, &n))
		return;
	for (i = 0; i < n; i++)
		if (varint_get(&p, end, &raw) || varint_get(&p, end, &ns))
			return;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chunk_info ci;
	unsigned major, minor;
	size_t off = LP_FILE_HEADER_SIZE;

	if (!st) {
		st = calloc(1, sizeof(*st));
		ENSURE(st);
	}
	if (size < LP_FILE_HEADER_SIZE || trace_header_get(data, &major, &minor))
		return 0;
	pick_spec(&st->spec, data[size - 1]);
	while (size - off >= LP_CHUNK_HEADER_SIZE) {
		uint8_t *payload;

		if (chunk_header_get(data + off, &ci))
			break;
		ENSURE(ci.len <= LP_CHUNK_MAX_PAYLOAD);
		if (ci.len > size - off - LP_CHUNK_HEADER_SIZE)
			break; /* truncated: the reader stops here */
		/* a copy of exactly the payload's size, so that AddressSanitizer
		 * catches a read past it (the input buffer goes on) */
		payload = malloc(ci.len ? ci.len : 1);
		ENSURE(payload);
		memcpy(payload, data + off + LP_CHUNK_HEADER_SIZE, ci.len);
		/* the reader would stop at a bad checksum; decoding anyway lets
		 * the fuzzer reach the decoder without forging CRCs */
		(void)chunk_verify(&ci, payload);
		if (ci.type == LP_CHUNK_EVENTS)
			events_chunk(payload, ci.len);
		else if (ci.type == LP_CHUNK_CLOCK)
			clock_chunk(payload, ci.len);
		free(payload);
		off += LP_CHUNK_HEADER_SIZE + ci.len;
	}
	streams_finish();
	return 0;
}
