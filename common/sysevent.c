/* System call events: encoding and parsing (see sysevent.h). */
#include <errno.h>
#include <string.h>

#include "common/sysevent.h"
#include "common/varint.h"

/* Body bytes at most: flags, nr, nargs, 6 args, nips, ips, length, path. */
#define SYSEVENT_BODY_MAX ((10u + SYSEVENT_IPS_MAX) * VARINT_MAX + SYSEVENT_STR_MAX)

void encoder_syscall_enter(struct encoder *e, uint64_t ns, unsigned arch, uint32_t nr, uint32_t flags,
                           const uint64_t *args, uint32_t nargs, const uint64_t *ips, uint32_t nips, const char *str,
                           uint32_t str_len)
{
	uint8_t body[SYSEVENT_BODY_MAX];
	uint64_t prev = 0;
	size_t n = 0;
	uint32_t i;

	if (nargs > 6)
		nargs = 6;
	if (nips > SYSEVENT_IPS_MAX)
		nips = SYSEVENT_IPS_MAX;
	if (str_len > SYSEVENT_STR_MAX)
		str_len = SYSEVENT_STR_MAX;
	n += varint_put(body + n, flags);
	n += varint_put(body + n, nr);
	n += varint_put(body + n, nargs);
	for (i = 0; i < nargs; i++)
		n += varint_put(body + n, args[i]);
	/* return addresses of one stack sit close together: deltas */
	n += varint_put(body + n, nips);
	for (i = 0; i < nips; i++) {
		n += varint_put(body + n, zigzag((int64_t)(ips[i] - prev)));
		prev = ips[i];
	}
	n += varint_put(body + n, str ? str_len : 0);
	if (str && str_len) {
		memcpy(body + n, str, str_len);
		n += str_len;
	}
	encoder_layer(e, ns, LP_EV_SYSCALL_ENTER, arch, body, n);
}

void encoder_syscall_exit(struct encoder *e, uint64_t ns, unsigned arch, uint32_t nr, int64_t ret)
{
	uint8_t body[2 * VARINT_MAX];
	size_t n = varint_put(body, nr);

	n += varint_put(body + n, zigzag(ret));
	encoder_layer(e, ns, LP_EV_SYSCALL_EXIT, arch, body, n);
}

int sysevent_parse(const struct lp_event *ev, struct sysevent *out)
{
	const uint8_t *p = (const uint8_t *)ev->str, *end = p + ev->str_len;
	uint64_t v, nr, n, prev = 0;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->arch = ev->arg;
	if (ev->type == LP_EV_SYSCALL_EXIT) {
		if (varint_get(&p, end, &nr) || varint_get(&p, end, &v) || nr > UINT32_MAX)
			return -EBADMSG;
		out->nr = (uint32_t)nr;
		out->ret = unzigzag(v);
		return 0;
	}
	if (ev->type != LP_EV_SYSCALL_ENTER)
		return -EBADMSG;
	out->enter = true;
	if (varint_get(&p, end, &v) || varint_get(&p, end, &nr) || varint_get(&p, end, &n) || nr > UINT32_MAX ||
	    v > UINT32_MAX || n > 6)
		return -EBADMSG;
	out->flags = (uint32_t)v;
	out->nr = (uint32_t)nr;
	out->nargs = (uint32_t)n;
	for (i = 0; i < out->nargs; i++)
		if (varint_get(&p, end, &out->args[i]))
			return -EBADMSG;
	if (varint_get(&p, end, &n) || n > SYSEVENT_IPS_MAX)
		return -EBADMSG;
	out->nips = (uint32_t)n;
	for (i = 0; i < out->nips; i++) {
		if (varint_get(&p, end, &v))
			return -EBADMSG;
		prev += (uint64_t)unzigzag(v);
		out->ips[i] = prev;
	}
	if (varint_get(&p, end, &n) || n > SYSEVENT_STR_MAX || n > (uint64_t)(end - p))
		return -EBADMSG;
	out->str = n ? (const char *)p : NULL;
	out->str_len = (uint32_t)n;
	return 0;
}
