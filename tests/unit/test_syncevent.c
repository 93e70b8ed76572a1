/* Unit test of the sync and counter event bodies (common/syncevent.c,
 * common/ctrevent.c): every operation and kind through the encoder, the
 * decoder and the parser, with values at their limits, and bodies cut
 * short, unknown operations and kinds and too many values refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/ctrevent.h"
#include "common/decoder.h"
#include "common/encoder.h"
#include "common/syncevent.h"
#include "tests/unit/check.h"

static struct encoder enc;
static struct decoder dec;

static void reopen(void)
{
	const uint8_t *payload;
	size_t len = encoder_take(&enc, &payload);
	static uint8_t copy[ENCODER_CAP];

	memcpy(copy, payload, len);
	CHECK_EQ_U64(decoder_begin(&dec, copy, len), 0);
}

static void test_sync_roundtrip(void)
{
	struct lp_event ev;
	struct syncevent out;

	encoder_init(&enc, 1, 10, 11);
	for (unsigned op = LP_SYNC_THREAD; op < LP_SYNC_OPS; op++) {
		struct syncevent y = { .op = (uint8_t)op,
			               .flags = op == LP_SYNC_COND_WAIT ? 0xffffu : op,
			               .obj = 0x7ffe00001000ull + op,
			               .obj2 = op == LP_SYNC_COND_WAIT ? UINT64_MAX : 0,
			               .wait_ns = op * 1000003ull,
			               .site = 0x555500000000ull + op };

		encoder_sync(&enc, 1000 + op, &y);
	}
	reopen();
	for (unsigned op = LP_SYNC_THREAD; op < LP_SYNC_OPS; op++) {
		if (!CHECK_EQ_U64(decoder_next(&dec, &ev), 1))
			return;
		CHECK_EQ_U64(ev.type, LP_EV_SYNC);
		CHECK_EQ_U64(ev.time, 1000 + op);
		CHECK_EQ_U64(syncevent_parse(&ev, &out), 0);
		CHECK_EQ_U64(out.op, op);
		CHECK_EQ_U64(out.flags, op == LP_SYNC_COND_WAIT ? 0xffffu : op);
		CHECK_EQ_U64(out.obj, 0x7ffe00001000ull + op);
		CHECK_EQ_U64(out.obj2, op == LP_SYNC_COND_WAIT ? UINT64_MAX : 0);
		CHECK_EQ_U64(out.wait_ns, op * 1000003ull);
		CHECK_EQ_U64(out.site, 0x555500000000ull + op);
		CHECK(strcmp(syncevent_op_name(op), "?") != 0);
	}
	CHECK_EQ_U64(decoder_next(&dec, &ev), 0);
	CHECK_STR(syncevent_op_name(0), "?");
	CHECK_STR(syncevent_op_name(LP_SYNC_OPS), "?");
	CHECK_STR(syncevent_op_name(LP_SYNC_MUTEX_LOCK), "mutex-lock");
}

static void test_sync_malformed(void)
{
	struct syncevent y = {
		.op = LP_SYNC_COND_WAIT, .flags = 3, .obj = 1ull << 40, .obj2 = 5, .wait_ns = 7, .site = 9
	};
	uint8_t body[64];
	struct lp_event ev;
	struct syncevent out;

	encoder_init(&enc, 1, 10, 11);
	encoder_sync(&enc, 5, &y);
	reopen();
	CHECK_EQ_U64(decoder_next(&dec, &ev), 1);
	memcpy(body, ev.str, ev.str_len);
	for (uint32_t len = 0; len < ev.str_len; len++) {
		struct lp_event cut = ev;

		cut.str = (const char *)body;
		cut.str_len = len;
		if (!CHECK_EQ_U64(syncevent_parse(&cut, &out), -EBADMSG))
			break;
	}
	{
		static const uint8_t no_op[] = { 0, 0, 1, 0, 0, 0 };
		static const uint8_t past_ops[] = { LP_SYNC_OPS, 0, 1, 0, 0, 0 };
		static const uint8_t big_flags[] = { 3, 0x80, 0x80, 0x04, 1, 0, 0, 0 };
		struct lp_event bad = ev;

		bad.str = (const char *)no_op;
		bad.str_len = sizeof(no_op);
		CHECK_EQ_U64(syncevent_parse(&bad, &out), -EBADMSG);
		bad.str = (const char *)past_ops;
		bad.str_len = sizeof(past_ops);
		CHECK_EQ_U64(syncevent_parse(&bad, &out), -EBADMSG);
		bad.str = (const char *)big_flags;
		bad.str_len = sizeof(big_flags);
		CHECK_EQ_U64(syncevent_parse(&bad, &out), -EBADMSG);
		bad = ev;
		bad.type = LP_EV_COUNTER;
		CHECK_EQ_U64(syncevent_parse(&bad, &out), -EBADMSG);
	}
}

static void test_counter_roundtrip(void)
{
	struct ctrevent c = { .kind = LP_CTR_END, .flags = LP_CTR_HAS_TIMES | LP_CTR_SCALED, .n = LP_COUNTERS_MAX };
	struct ctrevent e = { .kind = LP_CTR_ENTRY, .fn = 0x401136, .n = 2, .values = { 12345, UINT64_MAX } };
	struct ctrevent p = { .kind = LP_CTR_CPU, .cpu = 1, .n = 1, .values = { 77 } };
	struct lp_event ev;
	struct ctrevent out;

	for (uint32_t i = 0; i < LP_COUNTERS_MAX; i++) {
		c.values[i] = (uint64_t)i << (i * 5);
		c.enabled[i] = 1000000 + i;
		c.running[i] = 500000 + i;
	}
	encoder_init(&enc, 1, 10, 11);
	encoder_counter(&enc, 10, &e);
	encoder_counter(&enc, 20, &c);
	encoder_counter(&enc, 30, &p);
	reopen();
	CHECK_EQ_U64(decoder_next(&dec, &ev), 1);
	CHECK_EQ_U64(ev.type, LP_EV_COUNTER);
	CHECK_EQ_U64(ctrevent_parse(&ev, &out), 0);
	CHECK_EQ_U64(out.kind, LP_CTR_ENTRY);
	CHECK_EQ_U64(out.fn, 0x401136);
	CHECK_EQ_U64(out.n, 2);
	CHECK_EQ_U64(out.values[0], 12345);
	CHECK_EQ_U64(out.values[1], UINT64_MAX);
	CHECK_EQ_U64(out.flags, 0);
	CHECK_EQ_U64(decoder_next(&dec, &ev), 1);
	CHECK_EQ_U64(ctrevent_parse(&ev, &out), 0);
	CHECK_EQ_U64(out.kind, LP_CTR_END);
	CHECK_EQ_U64(out.n, LP_COUNTERS_MAX);
	CHECK_EQ_U64(out.flags, LP_CTR_HAS_TIMES | LP_CTR_SCALED);
	for (uint32_t i = 0; i < LP_COUNTERS_MAX; i++) {
		CHECK_EQ_U64(out.values[i], (uint64_t)i << (i * 5));
		CHECK_EQ_U64(out.enabled[i], 1000000 + i);
		CHECK_EQ_U64(out.running[i], 500000 + i);
	}
	CHECK_EQ_U64(decoder_next(&dec, &ev), 1);
	CHECK_EQ_U64(ctrevent_parse(&ev, &out), 0);
	CHECK_EQ_U64(out.kind, LP_CTR_CPU);
	CHECK_EQ_U64(out.cpu, 1);
	CHECK_EQ_U64(out.values[0], 77);
	CHECK_EQ_U64(decoder_next(&dec, &ev), 0);

	/* cut short anywhere: refused */
	encoder_init(&enc, 1, 10, 11);
	encoder_counter(&enc, 20, &c);
	reopen();
	CHECK_EQ_U64(decoder_next(&dec, &ev), 1);
	for (uint32_t len = 0; len < ev.str_len; len++) {
		struct lp_event cut = ev;

		cut.str_len = len;
		if (!CHECK_EQ_U64(ctrevent_parse(&cut, &out), -EBADMSG))
			break;
	}
	{
		static const uint8_t no_kind[] = { 0, 0, 0, 0, 0 };
		static const uint8_t past_kind[] = { LP_CTR_SAMPLE + 1, 0, 0, 0, 0 };
		static const uint8_t too_many[] = { LP_CTR_BEGIN, 0, 0, 0, LP_COUNTERS_MAX + 1 };
		struct lp_event bad = ev;

		bad.str = (const char *)no_kind;
		bad.str_len = sizeof(no_kind);
		CHECK_EQ_U64(ctrevent_parse(&bad, &out), -EBADMSG);
		bad.str = (const char *)past_kind;
		bad.str_len = sizeof(past_kind);
		CHECK_EQ_U64(ctrevent_parse(&bad, &out), -EBADMSG);
		bad.str = (const char *)too_many;
		bad.str_len = sizeof(too_many);
		CHECK_EQ_U64(ctrevent_parse(&bad, &out), -EBADMSG);
	}
}

int main(void)
{
	test_sync_roundtrip();
	test_sync_malformed();
	test_counter_roundtrip();
	return check_summary();
}
