/* Synchronisation events: encoding and parsing (see syncevent.h). */
#include <errno.h>
#include <string.h>

#include "common/syncevent.h"
#include "common/varint.h"

#define SYNCEVENT_BODY_MAX (6u * VARINT_MAX)

void encoder_sync(struct encoder *e, uint64_t ns, const struct syncevent *y)
{
	uint8_t body[SYNCEVENT_BODY_MAX];
	size_t n = 0;

	n += varint_put(body + n, y->op);
	n += varint_put(body + n, y->flags);
	n += varint_put(body + n, y->obj);
	n += varint_put(body + n, y->wait_ns);
	n += varint_put(body + n, y->site);
	n += varint_put(body + n, y->obj2);
	encoder_layer(e, ns, LP_EV_SYNC, 0, body, n);
}

int syncevent_parse(const struct lp_event *ev, struct syncevent *out)
{
	const uint8_t *p = (const uint8_t *)ev->str, *end = p + ev->str_len;
	uint64_t op, flags;

	memset(out, 0, sizeof(*out));
	if (ev->type != LP_EV_SYNC)
		return -EBADMSG;
	if (varint_get(&p, end, &op) || varint_get(&p, end, &flags) || varint_get(&p, end, &out->obj) ||
	    varint_get(&p, end, &out->wait_ns) || varint_get(&p, end, &out->site) || varint_get(&p, end, &out->obj2))
		return -EBADMSG;
	if (op < LP_SYNC_THREAD || op >= LP_SYNC_OPS || flags > 0xffff)
		return -EBADMSG;
	out->op = (uint8_t)op;
	out->flags = (uint32_t)flags;
	return 0;
}

const char *syncevent_op_name(unsigned op)
{
	static const char *const names[LP_SYNC_OPS] = {
		[LP_SYNC_THREAD] = "thread",
		[LP_SYNC_CREATE] = "create",
		[LP_SYNC_MUTEX_LOCK] = "mutex-lock",
		[LP_SYNC_MUTEX_UNLOCK] = "mutex-unlock",
		[LP_SYNC_RD_LOCK] = "rwlock-rdlock",
		[LP_SYNC_WR_LOCK] = "rwlock-wrlock",
		[LP_SYNC_RW_UNLOCK] = "rwlock-unlock",
		[LP_SYNC_SPIN_LOCK] = "spin-lock",
		[LP_SYNC_SPIN_UNLOCK] = "spin-unlock",
		[LP_SYNC_COND_WAIT] = "cond-wait",
		[LP_SYNC_COND_SIGNAL] = "cond-signal",
		[LP_SYNC_COND_BROADCAST] = "cond-broadcast",
		[LP_SYNC_BARRIER_WAIT] = "barrier-wait",
		[LP_SYNC_JOIN] = "join",
		[LP_SYNC_SEM_WAIT] = "sem-wait",
		[LP_SYNC_SEM_POST] = "sem-post",
	};

	return op < LP_SYNC_OPS && names[op] ? names[op] : "?";
}
