/* Decoder of the compact event encoding (docs/format.md).  Hot in every
 * host report: one call per event. */
#include <errno.h>
#include <string.h>

#include "common/decoder.h"
#include "common/varint.h"

int decoder_begin(struct decoder *d, const uint8_t *payload, size_t len)
{
	uint64_t image, pid, tid, base;

	d->p = payload;
	d->end = payload + len;
	d->nrefs = 0;
	if (varint_get(&d->p, d->end, &image) || varint_get(&d->p, d->end, &pid) || varint_get(&d->p, d->end, &tid) ||
	    varint_get(&d->p, d->end, &base))
		return -EBADMSG;
	if (image > UINT32_MAX || pid > UINT32_MAX || tid > UINT32_MAX)
		return -EBADMSG;
	d->image = (uint32_t)image;
	d->pid = (uint32_t)pid;
	d->tid = (uint32_t)tid;
	d->time = base;
	return 0;
}

static int get_bytes(struct decoder *d, const uint8_t **p, uint32_t *len, uint64_t max)
{
	uint64_t n;

	if (varint_get(&d->p, d->end, &n) || n > max || n > (uint64_t)(d->end - d->p))
		return -EBADMSG;
	*p = d->p;
	*len = (uint32_t)n;
	d->p += n;
	return 0;
}

static int get_func(struct decoder *d, unsigned arg, uint64_t *addr)
{
	uint64_t v;

	if (arg <= LP_REF_INLINE_MAX) {
		if (arg >= d->nrefs)
			return -EBADMSG;
		*addr = d->refs[arg];
		return 0;
	}
	if (varint_get(&d->p, d->end, &v))
		return -EBADMSG;
	if (arg == LP_REF_INDEX) {
		if (v >= d->nrefs)
			return -EBADMSG;
		*addr = d->refs[v];
		return 0;
	}
	if (d->nrefs >= LP_REF_TABLE_MAX)
		return -EBADMSG;
	d->refs[d->nrefs++] = v;
	*addr = v;
	return 0;
}

int decoder_next(struct decoder *d, struct lp_event *ev)
{
	uint64_t delta, v, n, i;
	const uint8_t *s;
	unsigned type, arg;

	if (d->p >= d->end)
		return 0;
	type = *d->p & 0xf;
	arg = *d->p >> 4;
	d->p++;
	if (varint_get(&d->p, d->end, &delta))
		return -EBADMSG;
	d->time += delta;
	ev->type = (uint8_t)type;
	ev->arg = (uint8_t)arg;
	ev->time = d->time;
	switch (type) {
	case LP_EV_ENTRY:
	case LP_EV_EXIT:
		return get_func(d, arg, &ev->value) ? -EBADMSG : 1;
	case LP_EV_LOST:
	case LP_EV_LONGJMP:
		return varint_get(&d->p, d->end, &ev->value) ? -EBADMSG : 1;
	case LP_EV_MAP:
		if (varint_get(&d->p, d->end, &ev->base) || varint_get(&d->p, d->end, &ev->start) ||
		    varint_get(&d->p, d->end, &ev->end) || varint_get(&d->p, d->end, &ev->offset) ||
		    get_bytes(d, &ev->build_id, &ev->build_id_len, 64) || get_bytes(d, &s, &ev->str_len, LP_STRING_MAX))
			return -EBADMSG;
		ev->str = (const char *)s;
		return ev->start <= ev->end ? 1 : -EBADMSG;
	case LP_EV_TASK:
		if (varint_get(&d->p, d->end, &ev->value) || get_bytes(d, &s, &ev->str_len, 1024) ||
		    varint_get(&d->p, d->end, &n) || n > EVENT_FRAMES_MAX)
			return -EBADMSG;
		ev->str = (const char *)s;
		for (i = 0; i < n; i++)
			if (varint_get(&d->p, d->end, &d->frames[i]))
				return -EBADMSG;
		ev->frames = d->frames;
		ev->nframes = (uint32_t)n;
		return 1;
	case LP_EV_EXTENDED:
		if (varint_get(&d->p, d->end, &v) || get_bytes(d, &s, &ev->str_len, LP_CHUNK_MAX_PAYLOAD))
			return -EBADMSG;
		ev->value = v;
		ev->str = (const char *)s;
		return 1;
	default:
		/* the other sources' events: varint length, then a body that
		 * readers which do not know the type skip */
		if (get_bytes(d, &s, &ev->str_len, LP_CHUNK_MAX_PAYLOAD))
			return -EBADMSG;
		ev->str = (const char *)s;
		return type ? 1 : -EBADMSG;
	}
}
