/* Memory tracer events: encoding and parsing (see memevent.h). */
#include <errno.h>
#include <string.h>

#include "common/memevent.h"
#include "common/varint.h"

#define MEMEVENT_BODY_MAX (8u * VARINT_MAX)
#define STACKEVENT_BODY_MAX ((2u + MEMEVENT_STACK_MAX) * VARINT_MAX)

/* Written straight into the encoder's buffer: the body is at most
 * MEMEVENT_BODY_MAX (< 128) bytes, so its length is one byte, filled in
 * after it. */
_Static_assert(MEMEVENT_BODY_MAX < 128, "ALLOC body length in one byte");

void encoder_mem(struct encoder *e, uint64_t ns, const struct memevent *m)
{
	uint8_t *body;
	size_t n = 0;

	encoder_begin_event(e, ns, LP_EV_ALLOC, m->op & 0xf);
	body = e->buf + e->len + 1;
	n += varint_put(body + n, m->flags);
	n += varint_put(body + n, m->ptr);
	n += varint_put(body + n, m->size);
	n += varint_put(body + n, m->stack);
	if (m->op == LP_MEM_REALLOC)
		n += varint_put(body + n, m->old);
	if (m->op == LP_MEM_FOLD) {
		n += varint_put(body + n, m->count);
		n += varint_put(body + n, m->bytes);
		n += varint_put(body + n, m->lifetime_ns);
	}
	e->buf[e->len] = (uint8_t)n;
	e->len += 1 + n;
}

void encoder_stack(struct encoder *e, uint64_t ns, uint32_t id, const uint64_t *ips, uint32_t n)
{
	uint8_t body[STACKEVENT_BODY_MAX];
	uint64_t prev = 0;
	size_t len = 0;

	if (n > MEMEVENT_STACK_MAX)
		n = MEMEVENT_STACK_MAX;
	len += varint_put(body + len, id);
	len += varint_put(body + len, n);
	for (uint32_t i = 0; i < n; i++) {
		len += varint_put(body + len, zigzag((int64_t)(ips[i] - prev)));
		prev = ips[i];
	}
	encoder_layer(e, ns, LP_EV_STACK, 0, body, len);
}

int memevent_parse(const struct lp_event *ev, struct memevent *out)
{
	const uint8_t *p = (const uint8_t *)ev->str, *end = p + ev->str_len;
	uint64_t flags, stack;

	memset(out, 0, sizeof(*out));
	if (ev->type != LP_EV_ALLOC || ev->arg < LP_MEM_MALLOC || ev->arg > LP_MEM_BASELINE)
		return -EBADMSG;
	out->op = ev->arg;
	if (varint_get(&p, end, &flags) || varint_get(&p, end, &out->ptr) || varint_get(&p, end, &out->size) ||
	    varint_get(&p, end, &stack) || flags > UINT32_MAX || stack > UINT32_MAX)
		return -EBADMSG;
	out->flags = (uint32_t)flags;
	out->stack = (uint32_t)stack;
	if (out->op == LP_MEM_REALLOC && varint_get(&p, end, &out->old))
		return -EBADMSG;
	if (out->op == LP_MEM_FOLD && (varint_get(&p, end, &out->count) || varint_get(&p, end, &out->bytes) ||
	                               varint_get(&p, end, &out->lifetime_ns)))
		return -EBADMSG;
	return 0;
}

int stackevent_parse(const struct lp_event *ev, struct stackevent *out)
{
	const uint8_t *p = (const uint8_t *)ev->str, *end = p + ev->str_len;
	uint64_t id, n, v, prev = 0;

	memset(out, 0, sizeof(*out));
	if (ev->type != LP_EV_STACK || varint_get(&p, end, &id) || varint_get(&p, end, &n) || id > UINT32_MAX ||
	    n > MEMEVENT_STACK_MAX)
		return -EBADMSG;
	out->id = (uint32_t)id;
	out->n = (uint32_t)n;
	for (uint32_t i = 0; i < out->n; i++) {
		if (varint_get(&p, end, &v))
			return -EBADMSG;
		prev += (uint64_t)unzigzag(v);
		out->ips[i] = prev;
	}
	return 0;
}
