/* Encoder of one stream's events into EVENTS chunk payloads: delta times,
 * varints and a per-chunk table of function addresses. */
#ifndef LP_ENCODER_H
#define LP_ENCODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layerprof/format.h"
#include "common/varint.h"

#define ENCODER_HASH 8192u
#define ENCODER_REFS_MAX 4096u
/* Largest single event the encoder writes (a MAP or TASK with frames). */
#define ENCODER_EVENT_MAX 8192u
#define ENCODER_CAP (LP_CHUNK_TARGET_PAYLOAD + ENCODER_EVENT_MAX + 64)

struct encoder {
	uint32_t image, pid, tid;
	uint32_t target;  /* payload bytes at which encoder_full says flush */
	uint64_t last_ns; /* time of the last event (also once handed out); 0 before the first */
	uint64_t events;  /* in the current payload */
	size_t len;
	uint32_t nrefs;
	uint32_t gen; /* table entries with another generation are empty */
	uint64_t keys[ENCODER_HASH];
	uint32_t vals[ENCODER_HASH];
	uint32_t gens[ENCODER_HASH];
	uint8_t buf[ENCODER_CAP];
};

/* The caller owns the struct (about 180 KiB: allocate it).  Payloads are
 * flushed at LP_CHUNK_TARGET_PAYLOAD bytes; encoder_set_target lowers that
 * (e.g. to fit a UDP datagram), never below 1 KiB. */
void encoder_init(struct encoder *e, uint32_t image, uint32_t pid, uint32_t tid);
void encoder_set_target(struct encoder *e, uint32_t bytes);

void encoder_lost(struct encoder *e, uint64_t ns, uint64_t count);
void encoder_longjmp(struct encoder *e, uint64_t ns, uint64_t depth);
/* A whole call, recorded at its exit (source filters by duration). */
void encoder_call(struct encoder *e, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns);
/* A patched function's arguments (after its entry) and return value
 * (before its exit): LP_XEV_ARGS and LP_XEV_RETVAL.  a's memory pieces
 * over LP_ARGS_MEM_MAX bytes are cut. */
struct libcsig_args;
void encoder_args(struct encoder *e, uint64_t ns, uint64_t fn, const struct libcsig_args *a);
void encoder_retval(struct encoder *e, uint64_t ns, uint64_t fn, uint64_t value);
/* A probed instruction ran (LP_XEV_PROBE). */
void encoder_probe(struct encoder *e, uint64_t ns, uint64_t addr);
/* An executable segment given by an earlier encoder_map is unmapped. */
void encoder_unmap(struct encoder *e, uint64_t ns, uint64_t start, uint64_t end);
/* Strings over LP_STRING_MAX and frames over 256 are cut. */
void encoder_map(struct encoder *e, uint64_t ns, uint64_t base, uint64_t start, uint64_t end, uint64_t offset,
                 const uint8_t *build_id, size_t build_id_len, const char *path, size_t path_len);
void encoder_task(struct encoder *e, uint64_t ns, unsigned kind, uint64_t arg, const char *name, size_t name_len,
                  const uint64_t *frames, size_t nframes);
/* An event of types 6..13: "varint length, bytes" with the n bytes of
 * body. */
void encoder_layer(struct encoder *e, uint64_t ns, uint8_t type, unsigned arg, const uint8_t *body, size_t n);

/* The per-event part is inline: the drain calls it for every function
 * event.  Each call appends one event; check encoder_full afterwards. */
static inline void encoder_begin_event(struct encoder *e, uint64_t ns, uint8_t type, uint8_t arg)
{
	uint64_t delta;

	if (!e->len) {
		e->len += varint_put(e->buf + e->len, e->image);
		e->len += varint_put(e->buf + e->len, e->pid);
		e->len += varint_put(e->buf + e->len, e->tid);
		e->len += varint_put(e->buf + e->len, ns);
		e->last_ns = ns;
	}
	/* per-thread time never runs backwards in the trace */
	delta = ns > e->last_ns ? ns - e->last_ns : 0;
	e->last_ns += delta;
	e->buf[e->len++] = (uint8_t)(type | arg << 4);
	e->len += varint_put(e->buf + e->len, delta);
	e->events++;
}

static inline void encoder_put_func(struct encoder *e, uint64_t ns, uint8_t type, uint64_t addr)
{
	uint32_t h = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 51) & (ENCODER_HASH - 1);

	while (e->gens[h] == e->gen) {
		if (e->keys[h] == addr) {
			uint32_t idx = e->vals[h];

			if (idx <= LP_REF_INLINE_MAX) {
				encoder_begin_event(e, ns, type, (uint8_t)idx);
			} else {
				encoder_begin_event(e, ns, type, LP_REF_INDEX);
				e->len += varint_put(e->buf + e->len, idx);
			}
			return;
		}
		h = (h + 1) & (ENCODER_HASH - 1);
	}
	/* begin_event may write the stream header, which does not touch the
	 * table: the table belongs to this payload either way */
	encoder_begin_event(e, ns, type, LP_REF_NEW);
	e->len += varint_put(e->buf + e->len, addr);
	e->gens[h] = e->gen;
	e->keys[h] = addr;
	e->vals[h] = e->nrefs++;
}

static inline void encoder_entry(struct encoder *e, uint64_t ns, uint64_t addr)
{
	encoder_put_func(e, ns, LP_EV_ENTRY, addr);
}

static inline void encoder_exit(struct encoder *e, uint64_t ns, uint64_t addr)
{
	encoder_put_func(e, ns, LP_EV_EXIT, addr);
}

/* True when the payload should be flushed before more events are added. */
static inline bool encoder_full(const struct encoder *e)
{
	return e->len >= e->target || e->nrefs >= ENCODER_REFS_MAX;
}

/* Hands out the payload built so far (pointer into e, valid until the next
 * event) and starts a new one.  Returns its length; 0 when empty. */
size_t encoder_take(struct encoder *e, const uint8_t **payload);

#endif
