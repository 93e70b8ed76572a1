/* Event encoder: the compact form of docs/format.md.  Runs in the drain
 * (recorder or agent) once per event, so it stays branch-light. */
#include <string.h>

#include "layerprof/format.h"
#include "common/encoder.h"
#include "common/varint.h"

void encoder_init(struct encoder *e, uint32_t image, uint32_t pid, uint32_t tid)
{
	e->image = image;
	e->pid = pid;
	e->tid = tid;
	e->len = 0;
	e->events = 0;
	e->nrefs = 0;
	e->gen = 1;
	memset(e->gens, 0, sizeof(e->gens));
}

static inline void begin_event(struct encoder *e, uint64_t ns, uint8_t type, uint8_t arg)
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

static inline void put_func(struct encoder *e, uint64_t ns, uint8_t type, uint64_t addr)
{
	uint32_t h = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 51) & (ENCODER_HASH - 1);

	while (e->gens[h] == e->gen) {
		if (e->keys[h] == addr) {
			uint32_t idx = e->vals[h];

			if (idx <= LP_REF_INLINE_MAX) {
				begin_event(e, ns, type, (uint8_t)idx);
			} else {
				begin_event(e, ns, type, LP_REF_INDEX);
				e->len += varint_put(e->buf + e->len, idx);
			}
			return;
		}
		h = (h + 1) & (ENCODER_HASH - 1);
	}
	/* begin_event may write the stream header, which does not touch the
	 * table: the table belongs to this payload either way */
	begin_event(e, ns, type, LP_REF_NEW);
	e->len += varint_put(e->buf + e->len, addr);
	e->gens[h] = e->gen;
	e->keys[h] = addr;
	e->vals[h] = e->nrefs++;
}

void encoder_entry(struct encoder *e, uint64_t ns, uint64_t addr)
{
	put_func(e, ns, LP_EV_ENTRY, addr);
}

void encoder_exit(struct encoder *e, uint64_t ns, uint64_t addr)
{
	put_func(e, ns, LP_EV_EXIT, addr);
}

void encoder_lost(struct encoder *e, uint64_t ns, uint64_t count)
{
	begin_event(e, ns, LP_EV_LOST, 0);
	e->len += varint_put(e->buf + e->len, count);
}

void encoder_longjmp(struct encoder *e, uint64_t ns, uint64_t depth)
{
	begin_event(e, ns, LP_EV_LONGJMP, 0);
	e->len += varint_put(e->buf + e->len, depth);
}

static void put_bytes(struct encoder *e, const void *p, size_t n, size_t max)
{
	if (n > max)
		n = max;
	e->len += varint_put(e->buf + e->len, n);
	if (n)
		memcpy(e->buf + e->len, p, n);
	e->len += n;
}

void encoder_map(struct encoder *e, uint64_t ns, uint64_t base, uint64_t start, uint64_t end, uint64_t offset,
                 const uint8_t *build_id, size_t build_id_len, const char *path, size_t path_len)
{
	begin_event(e, ns, LP_EV_MAP, 0);
	e->len += varint_put(e->buf + e->len, base);
	e->len += varint_put(e->buf + e->len, start);
	e->len += varint_put(e->buf + e->len, end);
	e->len += varint_put(e->buf + e->len, offset);
	put_bytes(e, build_id, build_id_len, 64);
	put_bytes(e, path, path_len, LP_STRING_MAX);
}

void encoder_task(struct encoder *e, uint64_t ns, unsigned kind, uint64_t arg, const char *name, size_t name_len,
                  const uint64_t *frames, size_t nframes)
{
	size_t i;

	if (nframes > 256)
		nframes = 256;
	begin_event(e, ns, LP_EV_TASK, (uint8_t)(kind & 0xf));
	e->len += varint_put(e->buf + e->len, arg);
	put_bytes(e, name, name_len, 1024);
	e->len += varint_put(e->buf + e->len, nframes);
	for (i = 0; i < nframes; i++)
		e->len += varint_put(e->buf + e->len, frames[i]);
}

size_t encoder_take(struct encoder *e, const uint8_t **payload)
{
	size_t n = e->len;

	*payload = e->buf;
	e->len = 0;
	e->events = 0;
	e->nrefs = 0;
	if (++e->gen == 0) {
		memset(e->gens, 0, sizeof(e->gens));
		e->gen = 1;
	}
	return n;
}
