/* Kernel events: encoding and parsing (see kernevent.h). */
#include <errno.h>
#include <string.h>

#include "common/kernevent.h"
#include "common/varint.h"

#define KERNEVENT_BODY_MAX (KERNEVENT_RAW_MAX + 3 * VARINT_MAX + 2)
_Static_assert(KERNEVENT_BODY_MAX + 2 * VARINT_MAX + 1 <= ENCODER_EVENT_MAX, "a kernel event fits one event");

void encoder_kernel(struct encoder *e, uint64_t ns, uint32_t id, uint32_t cpu, const uint8_t *raw, uint32_t len,
                    bool packed)
{
	uint8_t body[KERNEVENT_BODY_MAX];
	size_t n = 0;

	if (len > KERNEVENT_RAW_MAX)
		len = KERNEVENT_RAW_MAX;
	packed = packed && len >= KERNEVENT_COMMON_SIZE;
	n += varint_put(body + n, id);
	n += varint_put(body + n, cpu);
	if (packed) {
		int32_t pid;

		memcpy(&pid, raw + 4, 4);
		n += varint_put(body + n, zigzag(pid));
		body[n++] = raw[2];
		body[n++] = raw[3];
		raw += KERNEVENT_COMMON_SIZE;
		len -= KERNEVENT_COMMON_SIZE;
	}
	memcpy(body + n, raw, len);
	n += len;
	encoder_layer(e, ns, LP_EV_KERNEL, packed ? KERNEVENT_PACKED : KERNEVENT_WHOLE, body, n);
}

int kernevent_parse(const struct lp_event *ev, struct kernevent *out, uint8_t *buf)
{
	const uint8_t *p = (const uint8_t *)ev->str, *end = p + ev->str_len;
	uint64_t id, cpu, v;
	uint16_t type;
	int32_t pid;
	size_t rest;

	memset(out, 0, sizeof(*out));
	if (ev->type != LP_EV_KERNEL || varint_get(&p, end, &id) || varint_get(&p, end, &cpu) || id > UINT32_MAX ||
	    cpu > UINT32_MAX)
		return -EBADMSG;
	out->id = (uint32_t)id;
	out->cpu = (uint32_t)cpu;
	if (ev->arg == KERNEVENT_WHOLE) {
		if ((size_t)(end - p) > KERNEVENT_RAW_MAX)
			return -EBADMSG;
		out->raw = p;
		out->raw_len = (uint32_t)(end - p);
		return 0;
	}
	if (ev->arg != KERNEVENT_PACKED || varint_get(&p, end, &v) || end - p < 2)
		return -EBADMSG;
	rest = (size_t)(end - p) - 2;
	if (rest > KERNEVENT_RAW_MAX - KERNEVENT_COMMON_SIZE)
		return -EBADMSG;
	type = (uint16_t)id;
	pid = (int32_t)unzigzag(v);
	memcpy(buf, &type, 2);
	buf[2] = p[0];
	buf[3] = p[1];
	memcpy(buf + 4, &pid, 4);
	memcpy(buf + KERNEVENT_COMMON_SIZE, p + 2, rest);
	out->raw = buf;
	out->raw_len = (uint32_t)(KERNEVENT_COMMON_SIZE + rest);
	return 0;
}
