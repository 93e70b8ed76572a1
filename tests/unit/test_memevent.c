/* Unit test of the memory tracer's event bodies (common/memevent.c): every
 * operation and flag through encoder_mem / decoder / memevent_parse, stack
 * definitions through encoder_stack / stackevent_parse (deltas both ways,
 * the depth limit), and malformed bodies refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/decoder.h"
#include "common/encoder.h"
#include "common/memevent.h"
#include "tests/unit/check.h"

static struct encoder enc;
static struct decoder dec;

/* Hands out the encoder's payload and starts decoding it. */
static void reopen(void)
{
	const uint8_t *payload;
	size_t len = encoder_take(&enc, &payload);
	static uint8_t copy[ENCODER_CAP];

	memcpy(copy, payload, len);
	CHECK_EQ_U64(decoder_begin(&dec, copy, len), 0);
	CHECK_EQ_U64(dec.image, 3);
	CHECK_EQ_U64(dec.pid, 100);
	CHECK_EQ_U64(dec.tid, 101);
}

static void test_mem_roundtrip(void)
{
	static const struct memevent in[] = {
		{ .op = LP_MEM_MALLOC, .ptr = 0x55aa00001000ull, .size = 48, .stack = 1 },
		{ .op = LP_MEM_CALLOC, .ptr = 0x55aa00002000ull, .size = 120, .stack = 2 },
		{ .op = LP_MEM_REALLOC,
		  .ptr = 0x7f0000000010ull,
		  .size = 1u << 20,
		  .old = 0x55aa00001000ull,
		  .stack = 3 },
		{ .op = LP_MEM_REALLOC, .ptr = 0, .size = 0, .old = 0x7f0000000010ull, .stack = 3 },
		{ .op = LP_MEM_ALIGNED, .ptr = 0x55aa00004000ull, .size = 100, .stack = 4 },
		{ .op = LP_MEM_FREE, .ptr = 0x55aa00002000ull, .stack = 5 },
		{ .op = LP_MEM_FREE, .flags = LP_MEM_KEPT, .ptr = 0x7ffd12345678ull, .stack = 5 },
		{ .op = LP_MEM_NEW, .flags = LP_MEM_FAILED, .size = UINT64_MAX / 2, .stack = 6 },
		{ .op = LP_MEM_NEW_ARRAY, .ptr = 0xfffffffffffffff0ull, .size = 40, .stack = 0xffffffffu },
		{ .op = LP_MEM_DELETE, .ptr = 0x55aa00005000ull, .stack = 7 },
		{ .op = LP_MEM_DELETE_ARRAY, .ptr = 0x55aa00006000ull, .stack = 8 },
		{ .op = LP_MEM_FOLD, .stack = 9, .count = 123456789, .bytes = 987654321000ull, .lifetime_ns = 1000000 },
	};
	const size_t n = sizeof(in) / sizeof(in[0]);
	struct lp_event ev;
	struct memevent out;

	encoder_init(&enc, 3, 100, 101);
	for (size_t i = 0; i < n; i++)
		encoder_mem(&enc, 1000 + 10 * i, &in[i]);
	reopen();
	for (size_t i = 0; i < n; i++) {
		if (!CHECK_EQ_U64(decoder_next(&dec, &ev), 1))
			return;
		CHECK_EQ_U64(ev.type, LP_EV_ALLOC);
		CHECK_EQ_U64(ev.arg, in[i].op);
		CHECK_EQ_U64(ev.time, 1000 + 10 * i);
		if (!CHECK_EQ_U64(memevent_parse(&ev, &out), 0))
			continue;
		CHECK_EQ_U64(out.op, in[i].op);
		CHECK_EQ_U64(out.flags, in[i].flags);
		CHECK_EQ_U64(out.ptr, in[i].ptr);
		CHECK_EQ_U64(out.size, in[i].size);
		CHECK_EQ_U64(out.old, in[i].op == LP_MEM_REALLOC ? in[i].old : 0);
		CHECK_EQ_U64(out.stack, in[i].stack);
		CHECK_EQ_U64(out.count, in[i].count);
		CHECK_EQ_U64(out.bytes, in[i].bytes);
		CHECK_EQ_U64(out.lifetime_ns, in[i].lifetime_ns);
	}
	CHECK_EQ_U64(decoder_next(&dec, &ev), 0);
}

static void test_stack_roundtrip(void)
{
	uint64_t ips[MEMEVENT_STACK_MAX + 5];
	struct stackevent out;
	struct lp_event ev;

	/* addresses that go up and down, at both ends of the range */
	for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++)
		ips[i] = (i & 1) ? 0x7fff00000000ull - i * 0x1000 : 0x555500001234ull + i * 77;
	ips[1] = UINT64_MAX;
	ips[2] = 0;
	encoder_init(&enc, 3, 100, 101);
	encoder_stack(&enc, 50, 1, ips, 1);
	encoder_stack(&enc, 60, 2, ips, 16);
	encoder_stack(&enc, 70, 0xfffffffeu, ips, MEMEVENT_STACK_MAX);
	encoder_stack(&enc, 80, 4, ips, MEMEVENT_STACK_MAX + 5); /* cut to the maximum */
	encoder_stack(&enc, 90, 5, ips, 0);
	reopen();
	{
		static const uint32_t ids[] = { 1, 2, 0xfffffffeu, 4, 5 };
		static const uint32_t ns[] = { 1, 16, MEMEVENT_STACK_MAX, MEMEVENT_STACK_MAX, 0 };

		for (size_t k = 0; k < 5; k++) {
			if (!CHECK_EQ_U64(decoder_next(&dec, &ev), 1))
				return;
			CHECK_EQ_U64(ev.type, LP_EV_STACK);
			CHECK_EQ_U64(ev.time, 50 + 10 * k);
			if (!CHECK_EQ_U64(stackevent_parse(&ev, &out), 0))
				continue;
			CHECK_EQ_U64(out.id, ids[k]);
			CHECK_EQ_U64(out.n, ns[k]);
			for (uint32_t i = 0; i < out.n; i++)
				if (!CHECK_EQ_U64(out.ips[i], ips[i]))
					break;
		}
	}
	CHECK_EQ_U64(decoder_next(&dec, &ev), 0);
}

/* Bodies cut short, wrong types and out-of-range values are refused. */
static void test_malformed(void)
{
	struct memevent m = { .op = LP_MEM_REALLOC, .ptr = 1u << 30, .size = 5, .old = 1u << 31, .stack = 7 };
	uint8_t body[64];
	struct lp_event ev;
	struct memevent out;
	struct stackevent sout;
	uint64_t ips[3] = { 1, 2, 3 };

	encoder_init(&enc, 3, 100, 101);
	encoder_mem(&enc, 1, &m);
	reopen();
	CHECK_EQ_U64(decoder_next(&dec, &ev), 1);
	CHECK_EQ_U64(memevent_parse(&ev, &out), 0);
	memcpy(body, ev.str, ev.str_len);
	for (uint32_t len = 0; len < ev.str_len; len++) {
		struct lp_event cut = ev;

		cut.str = (const char *)body;
		cut.str_len = len;
		if (!CHECK_EQ_U64(memevent_parse(&cut, &out), -EBADMSG))
			break;
	}
	{
		struct lp_event bad = ev;

		bad.arg = 0;
		CHECK_EQ_U64(memevent_parse(&bad, &out), -EBADMSG);
		bad.arg = LP_MEM_BASELINE + 1;
		CHECK_EQ_U64(memevent_parse(&bad, &out), -EBADMSG);
		bad = ev;
		bad.type = LP_EV_STACK;
		CHECK_EQ_U64(memevent_parse(&bad, &out), -EBADMSG);
		CHECK_EQ_U64(stackevent_parse(&ev, &sout), -EBADMSG);
	}
	/* a stack id or flags over 32 bits */
	{
		static const uint8_t big_stack[] = { 0, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x10 };
		static const uint8_t big_flags[] = { 0x80, 0x80, 0x80, 0x80, 0x10, 1, 1, 1 };
		struct lp_event bad = ev;

		bad.arg = LP_MEM_MALLOC;
		bad.str = (const char *)big_stack;
		bad.str_len = sizeof(big_stack);
		CHECK_EQ_U64(memevent_parse(&bad, &out), -EBADMSG);
		bad.str = (const char *)big_flags;
		bad.str_len = sizeof(big_flags);
		CHECK_EQ_U64(memevent_parse(&bad, &out), -EBADMSG);
	}
	/* stacks: cut short, more addresses than allowed */
	encoder_init(&enc, 3, 100, 101);
	encoder_stack(&enc, 1, 9, ips, 3);
	reopen();
	CHECK_EQ_U64(decoder_next(&dec, &ev), 1);
	CHECK_EQ_U64(stackevent_parse(&ev, &sout), 0);
	memcpy(body, ev.str, ev.str_len);
	for (uint32_t len = 0; len < ev.str_len; len++) {
		struct lp_event cut = ev;

		cut.str = (const char *)body;
		cut.str_len = len;
		if (!CHECK_EQ_U64(stackevent_parse(&cut, &sout), -EBADMSG))
			break;
	}
	{
		static const uint8_t too_deep[] = { 9, MEMEVENT_STACK_MAX + 1 };
		struct lp_event bad = ev;

		bad.str = (const char *)too_deep;
		bad.str_len = sizeof(too_deep);
		CHECK_EQ_U64(stackevent_parse(&bad, &sout), -EBADMSG);
	}
}

int main(void)
{
	test_mem_roundtrip();
	test_stack_roundtrip();
	test_malformed();
	return check_summary();
}
