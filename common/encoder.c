/* Event encoder: the compact form of docs/format.md.  Runs in the drain
 * (recorder or agent) once per event, so it stays branch-light. */
#include <string.h>

#include "layerprof/format.h"
#include "common/encoder.h"
#include "common/libcsig.h"
#include "common/varint.h"

void encoder_init(struct encoder *e, uint32_t image, uint32_t pid, uint32_t tid)
{
	e->image = image;
	e->pid = pid;
	e->tid = tid;
	e->len = 0;
	e->last_ns = 0;
	e->events = 0;
	e->nrefs = 0;
	e->gen = 1;
	e->target = LP_CHUNK_TARGET_PAYLOAD;
	memset(e->gens, 0, sizeof(e->gens));
}

void encoder_set_target(struct encoder *e, uint32_t bytes)
{
	if (bytes < 1024)
		bytes = 1024;
	e->target = bytes < LP_CHUNK_TARGET_PAYLOAD ? bytes : LP_CHUNK_TARGET_PAYLOAD;
}

void encoder_lost(struct encoder *e, uint64_t ns, uint64_t count)
{
	encoder_begin_event(e, ns, LP_EV_LOST, 0);
	e->len += varint_put(e->buf + e->len, count);
}

/* An extended event whose body is two varints. */
static void encoder_xev2(struct encoder *e, uint64_t ns, uint64_t xev, uint64_t a, uint64_t b)
{
	uint8_t body[2 * VARINT_MAX];
	size_t n = varint_put(body, a);

	n += varint_put(body + n, b);
	encoder_begin_event(e, ns, LP_EV_EXTENDED, 0);
	e->len += varint_put(e->buf + e->len, xev);
	e->len += varint_put(e->buf + e->len, n);
	memcpy(e->buf + e->len, body, n);
	e->len += n;
}

void encoder_call(struct encoder *e, uint64_t exit_ns, uint64_t addr, uint64_t duration_ns)
{
	encoder_xev2(e, exit_ns, LP_XEV_CALL, addr, duration_ns);
}

void encoder_args(struct encoder *e, uint64_t ns, uint64_t fn, const struct libcsig_args *a)
{
	uint8_t body[(2 + 2 * LP_ARGS_MAX) * VARINT_MAX + LP_ARGS_MAX * (2 * VARINT_MAX + LP_ARGS_MEM_MAX)];
	size_t n = varint_put(body, fn);
	uint32_t nw = a->n < LP_ARGS_MAX ? a->n : LP_ARGS_MAX, nm = a->nmem < LP_ARGS_MAX ? a->nmem : LP_ARGS_MAX;

	n += varint_put(body + n, nw);
	for (uint32_t i = 0; i < nw; i++)
		n += varint_put(body + n, a->words[i]);
	n += varint_put(body + n, nm);
	for (uint32_t i = 0; i < nm; i++) {
		const struct libcsig_mem *m = &a->mem[i];
		uint32_t len = m->len < LP_ARGS_MEM_MAX ? m->len : LP_ARGS_MEM_MAX;

		n += varint_put(body + n, m->index | (m->cut || len < m->len ? LP_ARGS_MEM_CUT : 0u));
		n += varint_put(body + n, len);
		memcpy(body + n, m->bytes, len);
		n += len;
	}
	encoder_begin_event(e, ns, LP_EV_EXTENDED, 0);
	e->len += varint_put(e->buf + e->len, LP_XEV_ARGS);
	e->len += varint_put(e->buf + e->len, n);
	memcpy(e->buf + e->len, body, n);
	e->len += n;
}

void encoder_retval(struct encoder *e, uint64_t ns, uint64_t fn, uint64_t value)
{
	encoder_xev2(e, ns, LP_XEV_RETVAL, fn, value);
}

void encoder_probe(struct encoder *e, uint64_t ns, uint64_t addr)
{
	uint8_t body[VARINT_MAX];
	size_t n = varint_put(body, addr);

	encoder_begin_event(e, ns, LP_EV_EXTENDED, 0);
	e->len += varint_put(e->buf + e->len, LP_XEV_PROBE);
	e->len += varint_put(e->buf + e->len, n);
	memcpy(e->buf + e->len, body, n);
	e->len += n;
}

void encoder_unmap(struct encoder *e, uint64_t ns, uint64_t start, uint64_t end)
{
	encoder_xev2(e, ns, LP_XEV_UNMAP, start, end);
}

void encoder_longjmp(struct encoder *e, uint64_t ns, uint64_t depth)
{
	encoder_begin_event(e, ns, LP_EV_LONGJMP, 0);
	e->len += varint_put(e->buf + e->len, depth);
}

void encoder_layer(struct encoder *e, uint64_t ns, uint8_t type, unsigned arg, const uint8_t *body, size_t n)
{
	encoder_begin_event(e, ns, type, (uint8_t)(arg & 0xf));
	e->len += varint_put(e->buf + e->len, n);
	memcpy(e->buf + e->len, body, n);
	e->len += n;
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
	encoder_begin_event(e, ns, LP_EV_MAP, 0);
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
	encoder_begin_event(e, ns, LP_EV_TASK, (uint8_t)(kind & 0xf));
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
