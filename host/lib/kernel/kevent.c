/* Decoding kernel tracepoint records with the offsets kformat.c cached,
 * and printing them with libtraceevent (kevent.h). */
#include "host/lib/kernel/kevent.h"

#include <endian.h>
#include <errno.h>
#include <event-parse.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Zero bytes after the copy of a record that kevent_format gives
 * libtraceevent: it prints a string field up to its '\0' and an address
 * field (%pI6, %pM, ...) by the bytes its conversion takes, whatever the
 * field's size or the record's end; these reads end in the padding. */
#define FORMAT_PAD 4096u

/* Reads an unsigned little-endian field of 1, 2, 4 or 8 bytes; an absent
 * field (size 0) reads 0.  The caller checked the record holds it. */
static inline uint64_t field_u(const uint8_t *raw, struct kformat_field f)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (f.size) {
	case 1:
		return raw[f.offset];
	case 2:
		memcpy(&v16, raw + f.offset, 2);
		return le16toh(v16);
	case 4:
		memcpy(&v32, raw + f.offset, 4);
		return le32toh(v32);
	case 8:
		memcpy(&v64, raw + f.offset, 8);
		return le64toh(v64);
	default:
		return 0;
	}
}

/* The same, sign-extended when the field is signed. */
static inline int64_t field_s(const uint8_t *raw, struct kformat_field f)
{
	uint64_t v = field_u(raw, f);
	unsigned shift;

	if (!(f.flags & KFIELD_SIGNED) || f.size == 0 || f.size >= 8)
		return (int64_t)v;
	shift = 64u - 8u * f.size;
	return (int64_t)(v << shift) >> shift;
}

/* Where a __data_loc/__rel_loc field's data is: *off and *n bytes. */
static inline void dynamic_area(const uint8_t *raw, struct kformat_field f, size_t *off, size_t *n)
{
	uint32_t loc;

	memcpy(&loc, raw + f.offset, 4);
	loc = le32toh(loc);
	*off = loc & 0xffffu;
	*n = loc >> 16;
	if (f.flags & KFIELD_RELATIVE)
		*off += (size_t)f.offset + f.size;
}

/* Copies a string field (char[N], or __data_loc char[]) into dst (size
 * bytes), up to its first '\0', cut to fit; "" when absent. */
static void field_str(const uint8_t *raw, struct kformat_field f, char *dst, size_t size)
{
	const uint8_t *src = raw + f.offset;
	const uint8_t *nul;
	size_t n = f.size, off;

	if (f.flags & KFIELD_DYNAMIC) {
		dynamic_area(raw, f, &off, &n);
		src = raw + off;
	}
	if (n > size - 1)
		n = size - 1;
	nul = n ? memchr(src, 0, n) : NULL;
	if (nul)
		n = (size_t)(nul - src);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Whether the record holds every fixed field of its format and every
 * __data_loc area it points to. */
static bool record_fits(const struct kformat_event *f, const uint8_t *raw, size_t len)
{
	uint32_t i;

	if (!f->decodable || len < f->fixed_end)
		return false;
	for (i = 0; i < f->ndynamic; i++) {
		size_t off, n;

		dynamic_area(raw, f->dynamic[i], &off, &n);
		if (off > len || n > len - off)
			return false;
	}
	return true;
}

static void decode_fields(const struct kformat_event *f, const uint8_t *raw, struct kevent *ev)
{
	const struct kformat_field *s = f->slot;

	switch (f->kind) {
	case KEV_SWITCH:
		ev->u.sw.prev_pid = (int32_t)field_s(raw, s[KS_SW_PREV_PID]);
		ev->u.sw.next_pid = (int32_t)field_s(raw, s[KS_SW_NEXT_PID]);
		ev->u.sw.prev_state = field_s(raw, s[KS_SW_PREV_STATE]);
		field_str(raw, s[KS_SW_PREV_COMM], ev->u.sw.prev_comm, sizeof(ev->u.sw.prev_comm));
		field_str(raw, s[KS_SW_NEXT_COMM], ev->u.sw.next_comm, sizeof(ev->u.sw.next_comm));
		break;
	case KEV_WAKEUP:
	case KEV_WAKING:
		ev->u.wake.pid = (int32_t)field_s(raw, s[KS_WAKE_PID]);
		ev->u.wake.target_cpu = (int32_t)field_s(raw, s[KS_WAKE_TARGET_CPU]);
		field_str(raw, s[KS_WAKE_COMM], ev->u.wake.comm, sizeof(ev->u.wake.comm));
		break;
	case KEV_FORK:
		ev->u.fork.parent_pid = (int32_t)field_s(raw, s[KS_FORK_PARENT_PID]);
		ev->u.fork.child_pid = (int32_t)field_s(raw, s[KS_FORK_CHILD_PID]);
		field_str(raw, s[KS_FORK_PARENT_COMM], ev->u.fork.parent_comm, sizeof(ev->u.fork.parent_comm));
		field_str(raw, s[KS_FORK_CHILD_COMM], ev->u.fork.child_comm, sizeof(ev->u.fork.child_comm));
		break;
	case KEV_EXEC:
		ev->u.exec.pid = (int32_t)field_s(raw, s[KS_EXEC_PID]);
		ev->u.exec.old_pid = (int32_t)field_s(raw, s[KS_EXEC_OLD_PID]);
		field_str(raw, s[KS_EXEC_FILENAME], ev->u.exec.filename, sizeof(ev->u.exec.filename));
		break;
	case KEV_EXIT:
		ev->u.exit.pid = (int32_t)field_s(raw, s[KS_EXIT_PID]);
		field_str(raw, s[KS_EXIT_COMM], ev->u.exit.comm, sizeof(ev->u.exit.comm));
		break;
	case KEV_FAULT_USER:
	case KEV_FAULT_KERNEL:
		ev->u.fault.address = field_u(raw, s[KS_FAULT_ADDRESS]);
		ev->u.fault.ip = field_u(raw, s[KS_FAULT_IP]);
		ev->u.fault.error_code = field_u(raw, s[KS_FAULT_ERROR_CODE]);
		break;
	case KEV_IRQ_ENTRY:
	case KEV_IRQ_EXIT:
		ev->u.irq.irq = (int32_t)field_s(raw, s[KS_IRQ_IRQ]);
		ev->u.irq.ret = (int32_t)field_s(raw, s[KS_IRQ_RET]);
		field_str(raw, s[KS_IRQ_NAME], ev->u.irq.name, sizeof(ev->u.irq.name));
		break;
	case KEV_SOFTIRQ_ENTRY:
	case KEV_SOFTIRQ_EXIT:
	case KEV_SOFTIRQ_RAISE:
		ev->u.softirq.vec = (uint32_t)field_u(raw, s[KS_SOFTIRQ_VEC]);
		break;
	case KEV_BLOCK_ISSUE:
	case KEV_BLOCK_INSERT:
	case KEV_BLOCK_COMPLETE:
	case KEV_BIO_QUEUE:
		ev->u.block.dev = (uint32_t)field_u(raw, s[KS_BLOCK_DEV]);
		ev->u.block.sector = field_u(raw, s[KS_BLOCK_SECTOR]);
		ev->u.block.nr_sector = (uint32_t)field_u(raw, s[KS_BLOCK_NR_SECTOR]);
		ev->u.block.bytes = (uint32_t)field_u(raw, s[KS_BLOCK_BYTES]);
		ev->u.block.error = (int32_t)field_s(raw, s[KS_BLOCK_ERROR]);
		field_str(raw, s[KS_BLOCK_RWBS], ev->u.block.rwbs, sizeof(ev->u.block.rwbs));
		break;
	case KEV_HRTIMER_START:
	case KEV_HRTIMER_EXPIRE_ENTRY:
	case KEV_HRTIMER_EXPIRE_EXIT:
	case KEV_HRTIMER_CANCEL:
	case KEV_TIMER_START:
	case KEV_TIMER_EXPIRE_ENTRY:
	case KEV_TIMER_EXPIRE_EXIT:
	case KEV_TIMER_CANCEL:
		ev->u.timer.timer = field_u(raw, s[KS_TIMER_TIMER]);
		ev->u.timer.function = field_u(raw, s[KS_TIMER_FUNCTION]);
		ev->u.timer.expires = field_u(raw, s[KS_TIMER_EXPIRES]);
		break;
	case KEV_OTHER:
	case KEV_KIND_COUNT:
		break;
	}
}

int kevent_decode(const struct kformats *kf, uint32_t id, const uint8_t *raw, size_t len, struct kevent *ev)
{
	const struct kformat_event *f = kformats_find(kf, id);

	ev->fmt = f;
	ev->kind = KEV_OTHER;
	ev->common_pid = 0;
	ev->common_flags = ev->common_preempt_count = 0;
	ev->in_hardirq = ev->in_softirq = ev->in_nmi = false;
	if (!f)
		return -ENOENT;
	if (!record_fits(f, raw, len))
		return -EBADMSG;
	ev->common_pid = (int32_t)field_s(raw, f->common[KC_PID]);
	ev->common_flags = (uint8_t)field_u(raw, f->common[KC_FLAGS]);
	ev->common_preempt_count = (uint8_t)field_u(raw, f->common[KC_PREEMPT_COUNT]);
	ev->in_hardirq = ev->common_flags & KEV_FLAG_HARDIRQ;
	ev->in_softirq = ev->common_flags & KEV_FLAG_SOFTIRQ;
	ev->in_nmi = ev->common_flags & KEV_FLAG_NMI;
	decode_fields(f, raw, ev);
	ev->kind = f->kind;
	return 0;
}

char kevent_switch_state(const struct kevent *ev)
{
	const struct kformat_states *st;
	uint64_t state, known, low;

	if (!ev->fmt || ev->kind != KEV_SWITCH)
		return '?';
	st = &ev->fmt->states;
	state = (uint64_t)ev->u.sw.prev_state;
	known = state & (st->S | st->D | st->T | st->I | st->X | st->Z | st->other);
	if (!known)
		return (state & ~st->preempt) ? '?' : 'R';
	low = known & (~known + 1);
	if (low & st->S)
		return 'S';
	if (low & st->D)
		return 'D';
	if (low & st->I)
		return 'I';
	if (low & st->T)
		return 'T';
	if (low & st->X)
		return 'X';
	if (low & st->Z)
		return 'Z';
	return '?';
}

/* Appends to buf (size > 0) at *pos, cut to fit. */
static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, size - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos = *pos + (size_t)n < size ? *pos + (size_t)n : size - 1;
}

/* Appends libtraceevent's text, its leading spaces left out, control
 * characters replaced. */
static void put_text(char *buf, size_t size, size_t *pos, const char *text)
{
	while (*text == ' ')
		text++;
	for (; *text && *pos + 1 < size; text++) {
		unsigned char c = (unsigned char)*text;

		if (c == '\n' || c == '\t' || c == '\r')
			c = ' ';
		else if (c < 0x20 || c == 0x7f)
			c = '?';
		buf[(*pos)++] = (char)c;
	}
	buf[*pos] = '\0';
}

/* Writes the record's common_type as id: libtraceevent finds the event to
 * print by it. */
static void set_type(uint8_t *raw, struct kformat_field f, uint32_t id)
{
	uint16_t v16 = htole16((uint16_t)id);
	uint32_t v32 = htole32(id);
	uint64_t v64 = htole64(id);

	if (f.size == 2)
		memcpy(raw + f.offset, &v16, 2);
	else if (f.size == 4)
		memcpy(raw + f.offset, &v32, 4);
	else if (f.size == 8)
		memcpy(raw + f.offset, &v64, 8);
}

size_t kevent_format(const struct kformats *kf, uint32_t id, const uint8_t *raw, size_t len, char *buf, size_t size)
{
	const struct kformat_event *f = kformats_find(kf, id);
	struct tep_record rec;
	struct trace_seq s;
	uint8_t *copy;
	size_t pos = 0;

	if (!size)
		return 0;
	buf[0] = '\0';
	if (!f) {
		put(buf, size, &pos, "tracepoint %" PRIu32 ": <no format>", id);
		return pos;
	}
	if (len > KFORMAT_RECORD_MAX || !record_fits(f, raw, len) || !(copy = malloc(len + FORMAT_PAD)))
		goto undecodable;
	memcpy(copy, raw, len);
	memset(copy + len, 0, FORMAT_PAD);
	memset(&rec, 0, sizeof(rec));
	rec.data = copy;
	rec.size = (int)len;
	rec.record_size = (int)len;
	trace_seq_init(&s);
	if (f->print_safe) {
		set_type(copy, f->common[KC_TYPE], f->id);
		tep_print_event(f->tep->tep, &s, &rec, "%s", TEP_PRINT_INFO);
	} else {
		tep_record_print_fields(&s, &rec, f->tep);
	}
	free(copy);
	if (s.state != TRACE_SEQ__GOOD) {
		trace_seq_destroy(&s);
		goto undecodable;
	}
	trace_seq_terminate(&s);
	put(buf, size, &pos, "%s: ", f->name);
	put_text(buf, size, &pos, s.buffer);
	trace_seq_destroy(&s);
	return pos;
undecodable:
	put(buf, size, &pos, "%s: <%zu bytes, undecodable>", f->name, len);
	return pos;
}

int kevent_field_u64(const struct kformats *kf, uint32_t id, const uint8_t *raw, size_t len, const char *field,
                     uint64_t *val)
{
	const struct kformat_event *f = kformats_find(kf, id);
	struct tep_format_field *tf;
	struct kformat_field place;

	if (!f)
		return -ENOENT;
	if (!f->decodable)
		return -EBADMSG;
	tf = tep_find_any_field(f->tep, field);
	if (!tf)
		return -ENOENT;
	if ((tf->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) ||
	    !(tf->size == 1 || tf->size == 2 || tf->size == 4 || tf->size == 8))
		return -EINVAL;
	if (!record_fits(f, raw, len))
		return -EBADMSG;
	/* within fixed_end: kformat.c checked every field's place */
	place.offset = (uint16_t)tf->offset;
	place.size = (uint16_t)tf->size;
	place.flags = (tf->flags & TEP_FIELD_IS_SIGNED) ? KFIELD_SIGNED : 0;
	*val = (uint64_t)field_s(raw, place);
	return 0;
}
