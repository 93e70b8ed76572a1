/* Counter events: encoding and parsing (see ctrevent.h). */
#include <errno.h>
#include <string.h>

#include "common/ctrevent.h"
#include "common/varint.h"

#define CTREVENT_BODY_MAX ((5u + 3u * LP_COUNTERS_MAX) * VARINT_MAX)

void encoder_counter(struct encoder *e, uint64_t ns, const struct ctrevent *c)
{
	uint8_t body[CTREVENT_BODY_MAX];
	uint32_t n = c->n > LP_COUNTERS_MAX ? LP_COUNTERS_MAX : c->n;
	size_t len = 0;

	len += varint_put(body + len, c->kind);
	len += varint_put(body + len, c->flags);
	len += varint_put(body + len, c->fn);
	len += varint_put(body + len, c->cpu);
	len += varint_put(body + len, n);
	for (uint32_t i = 0; i < n; i++)
		len += varint_put(body + len, c->values[i]);
	if (c->flags & LP_CTR_HAS_TIMES) {
		for (uint32_t i = 0; i < n; i++) {
			len += varint_put(body + len, c->enabled[i]);
			len += varint_put(body + len, c->running[i]);
		}
	}
	encoder_layer(e, ns, LP_EV_COUNTER, 0, body, len);
}

int ctrevent_parse(const struct lp_event *ev, struct ctrevent *out)
{
	const uint8_t *p = (const uint8_t *)ev->str, *end = p + ev->str_len;
	uint64_t kind, flags, cpu, n;

	memset(out, 0, sizeof(*out));
	if (ev->type != LP_EV_COUNTER)
		return -EBADMSG;
	if (varint_get(&p, end, &kind) || varint_get(&p, end, &flags) || varint_get(&p, end, &out->fn) ||
	    varint_get(&p, end, &cpu) || varint_get(&p, end, &n))
		return -EBADMSG;
	if (kind < LP_CTR_BEGIN || kind > LP_CTR_SAMPLE || flags > 0xffff || cpu > UINT32_MAX || n > LP_COUNTERS_MAX)
		return -EBADMSG;
	out->kind = (uint8_t)kind;
	out->flags = (uint32_t)flags;
	out->cpu = (uint32_t)cpu;
	out->n = (uint32_t)n;
	for (uint32_t i = 0; i < out->n; i++)
		if (varint_get(&p, end, &out->values[i]))
			return -EBADMSG;
	if (out->flags & LP_CTR_HAS_TIMES)
		for (uint32_t i = 0; i < out->n; i++)
			if (varint_get(&p, end, &out->enabled[i]) || varint_get(&p, end, &out->running[i]))
				return -EBADMSG;
	return 0;
}
