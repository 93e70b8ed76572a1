/* Unit test of the trace format: varints, CRC-32C, chunk and file headers,
 * the encoder/decoder round trip and the decoder's handling of bad input. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "common/crc32c.h"
#include "common/decoder.h"
#include "common/encoder.h"
#include "common/kernevent.h"
#include "common/varint.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

/* splitmix64: a fixed seed gives the same events on every run */
static uint64_t rng_state = 0x6c61796572u;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

/* A value of random bit length, for varints of every size.  The two draws
 * are separate statements: their order must not depend on the compiler. */
static uint64_t rnd_wide(void)
{
	uint64_t v = rnd();

	return v >> rnd_below(64);
}

/* A byte whose high and low nibbles are both usually small: plausible
 * event type and reference bytes. */
static uint8_t rnd_event_byte(void)
{
	uint8_t lo = (uint8_t)rnd_below(16);

	return (uint8_t)(lo | rnd_below(16) << 4);
}

/* Bytes in a buffer of exactly their length, so that AddressSanitizer sees
 * any read past the end.  malloc(0) may return NULL: ask for one byte. */
static uint8_t *exact_copy(const uint8_t *p, size_t len)
{
	uint8_t *q = malloc(len ? len : 1);

	if (!q) {
		perror("malloc");
		exit(2);
	}
	if (len)
		memcpy(q, p, len);
	return q;
}

/* --- varints and fixed-width fields ------------------------------------ */

static size_t varint_len_of(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void check_varint_value(uint64_t v)
{
	uint8_t buf[VARINT_MAX + 4];
	const uint8_t *p;
	uint64_t got = ~v;
	size_t n, cut;

	memset(buf, 0xee, sizeof(buf));
	n = varint_put(buf, v);
	CHECK_EQ_U64(n, varint_len_of(v));
	CHECK(n <= VARINT_MAX);
	CHECK_EQ_U64(buf[n], 0xee); /* nothing written past the varint */
	p = buf;
	if (CHECK_EQ_U64(varint_get(&p, buf + n, &got), 0)) {
		CHECK_EQ_U64(got, v);
		CHECK_EQ_U64(p - buf, n);
	}
	/* every proper prefix is a truncated varint, and leaves *p alone */
	for (cut = 0; cut < n; cut++) {
		p = buf;
		CHECK_EQ_U64(varint_get(&p, buf + cut, &got), -1);
		CHECK(p == buf);
	}
}

static void test_varint(void)
{
	static const uint8_t over_long[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const uint8_t max_ok[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t too_big[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	static const uint8_t tenth_cont[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00 };
	const uint8_t *p;
	uint8_t b[4];
	uint64_t v;
	unsigned k;
	int i;

	check_varint_value(0);
	check_varint_value(1);
	check_varint_value(127);
	check_varint_value(128);
	check_varint_value(255);
	check_varint_value(300);
	check_varint_value(UINT32_MAX);
	check_varint_value(UINT64_C(1) << 63);
	check_varint_value((UINT64_C(1) << 63) - 1);
	check_varint_value(UINT64_MAX);
	check_varint_value(UINT64_MAX - 1);
	/* the lengths change at every multiple of 7 bits */
	for (k = 7; k < 64; k += 7) {
		check_varint_value((UINT64_C(1) << k) - 1);
		check_varint_value(UINT64_C(1) << k);
	}
	for (i = 0; i < 10000; i++)
		check_varint_value(rnd_wide());

	CHECK_EQ_U64(varint_put(b, 127), 1);
	CHECK_EQ_U64(b[0], 0x7f);
	CHECK_EQ_U64(varint_put(b, 128), 2);
	CHECK_EQ_U64(b[0], 0x80);
	CHECK_EQ_U64(b[1], 0x01);

	p = max_ok;
	CHECK_EQ_U64(varint_get(&p, max_ok + sizeof(max_ok), &v), 0);
	CHECK_EQ_U64(v, UINT64_MAX);
	p = too_big;
	CHECK_EQ_U64(varint_get(&p, too_big + sizeof(too_big), &v), -1);
	p = over_long;
	CHECK_EQ_U64(varint_get(&p, over_long + sizeof(over_long), &v), -1);
	p = tenth_cont;
	CHECK_EQ_U64(varint_get(&p, tenth_cont + sizeof(tenth_cont), &v), -1);
	p = max_ok;
	CHECK_EQ_U64(varint_get(&p, max_ok, &v), -1); /* empty input */

	le32_put(b, 0x12345678u);
	CHECK_EQ_U64(b[0], 0x78);
	CHECK_EQ_U64(b[3], 0x12);
	CHECK_EQ_U64(le32_get(b), 0x12345678u);
	le16_put(b, 0xbeefu);
	CHECK_EQ_U64(b[0], 0xef);
	CHECK_EQ_U64(le16_get(b), 0xbeefu);
}

/* --- CRC-32C ------------------------------------------------------------- */

/* The definition, one bit at a time: the reference for the table version. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffffu;
	int j;

	while (len--) {
		c ^= *p++;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

static void test_crc32c(void)
{
	uint8_t buf[300];
	size_t i, off, len, split;

	CHECK_EQ_U64(crc32c(0, "123456789", 9), 0xe3069283u);
	CHECK_EQ_U64(crc32c(0, "", 0), 0);
	/* continuing a CRC over pieces gives the CRC of the whole */
	CHECK_EQ_U64(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	/* every alignment and tail length of the 8-byte loop */
	for (off = 0; off < 16; off++)
		for (len = 0; off + len <= sizeof(buf); len += 1 + len / 8)
			CHECK_EQ_U64(crc32c(0, buf + off, len), crc32c_bitwise(buf + off, len));
	for (split = 0; split <= 100; split++)
		CHECK_EQ_U64(crc32c(crc32c(0, buf, split), buf + split, 100 - split), crc32c_bitwise(buf, 100));
}

/* --- chunk and file headers ---------------------------------------------- */

static void test_chunk_header(void)
{
	static const char payload[] = "key=value\n";
	uint8_t hdr[LP_CHUNK_HEADER_SIZE], bad[LP_CHUNK_HEADER_SIZE];
	uint8_t copy[sizeof(payload)];
	struct chunk_info ci;

	chunk_header_put(hdr, LP_CHUNK_META, payload, sizeof(payload) - 1);
	CHECK_EQ_U64(le32_get(hdr), LP_CHUNK_MAGIC);
	CHECK(!memcmp(hdr, "LPCK", 4));
	memset(&ci, 0xaa, sizeof(ci));
	CHECK_EQ_U64(chunk_header_get(hdr, &ci), 0);
	CHECK_EQ_U64(ci.type, LP_CHUNK_META);
	CHECK_EQ_U64(ci.flags, 0);
	CHECK_EQ_U64(ci.len, sizeof(payload) - 1);
	CHECK_EQ_U64(ci.crc, crc32c(0, payload, sizeof(payload) - 1));
	CHECK_EQ_U64(chunk_verify(&ci, payload), 0);

	/* a changed payload byte */
	memcpy(copy, payload, sizeof(payload));
	copy[3] ^= 0x20;
	CHECK_EQ_U64(chunk_verify(&ci, copy), -EBADMSG);
	/* a changed checksum */
	memcpy(bad, hdr, sizeof(hdr));
	bad[12] ^= 1;
	CHECK_EQ_U64(chunk_header_get(bad, &ci), 0);
	CHECK_EQ_U64(chunk_verify(&ci, payload), -EBADMSG);

	memcpy(bad, hdr, sizeof(hdr));
	bad[0] = 'X';
	CHECK_EQ_U64(chunk_header_get(bad, &ci), -EBADMSG);
	memcpy(bad, hdr, sizeof(hdr));
	le32_put(bad, 0x4c50434bu); /* the magic in the wrong byte order */
	CHECK_EQ_U64(chunk_header_get(bad, &ci), -EBADMSG);

	/* the payload length is bounded before anyone allocates it */
	memcpy(bad, hdr, sizeof(hdr));
	le32_put(bad + 8, LP_CHUNK_MAX_PAYLOAD);
	CHECK_EQ_U64(chunk_header_get(bad, &ci), 0);
	CHECK_EQ_U64(ci.len, LP_CHUNK_MAX_PAYLOAD);
	le32_put(bad + 8, LP_CHUNK_MAX_PAYLOAD + 1);
	CHECK_EQ_U64(chunk_header_get(bad, &ci), -EBADMSG);
	le32_put(bad + 8, UINT32_MAX);
	CHECK_EQ_U64(chunk_header_get(bad, &ci), -EBADMSG);

	/* an empty payload is a valid chunk */
	chunk_header_put(hdr, LP_CHUNK_END, NULL, 0);
	CHECK_EQ_U64(chunk_header_get(hdr, &ci), 0);
	CHECK_EQ_U64(ci.type, LP_CHUNK_END);
	CHECK_EQ_U64(ci.len, 0);
	CHECK_EQ_U64(chunk_verify(&ci, ""), 0);
}

static void test_trace_header(void)
{
	uint8_t hdr[LP_FILE_HEADER_SIZE], bad[LP_FILE_HEADER_SIZE];
	unsigned major = 99, minor = 99;

	trace_header_put(hdr);
	CHECK(!memcmp(hdr, "LPTRACE", 8));
	CHECK_EQ_U64(trace_header_get(hdr, &major, &minor), 0);
	CHECK_EQ_U64(major, LP_TRACE_MAJOR);
	CHECK_EQ_U64(minor, LP_TRACE_MINOR);
	CHECK_EQ_U64(le32_get(hdr + 12), 0); /* reserved */

	memcpy(bad, hdr, sizeof(hdr));
	bad[1] = 'p';
	CHECK_EQ_U64(trace_header_get(bad, &major, &minor), -EBADMSG);
	memcpy(bad, hdr, sizeof(hdr));
	bad[7] = ' '; /* the NUL is part of the magic */
	CHECK_EQ_U64(trace_header_get(bad, &major, &minor), -EBADMSG);

	memcpy(bad, hdr, sizeof(hdr));
	le16_put(bad + 8, 2);
	le16_put(bad + 10, 3);
	CHECK_EQ_U64(trace_header_get(bad, &major, &minor), -EPROTONOSUPPORT);
	CHECK_EQ_U64(major, 2);
	CHECK_EQ_U64(minor, 3);
	le16_put(bad + 8, 0);
	CHECK_EQ_U64(trace_header_get(bad, &major, &minor), -EPROTONOSUPPORT);

	/* a newer minor version is still readable */
	memcpy(bad, hdr, sizeof(hdr));
	le16_put(bad + 10, 9);
	CHECK_EQ_U64(trace_header_get(bad, &major, &minor), 0);
	CHECK_EQ_U64(minor, 9);
}

/* --- encoder -> decoder round trip --------------------------------------- */

/* What one encoded event must decode to.  Byte strings and frames live in
 * the arenas below, which hold one payload's worth. */
struct want {
	uint8_t type, arg;
	uint64_t time, value;
	uint64_t base, start, end, offset;
	uint32_t bid_off, bid_len, str_off, str_len, frames_off, nframes;
};

/* Every event takes at least two payload bytes, every string byte and
 * frame at least one: ENCODER_CAP bounds all three per payload. */
#define WANT_MAX ENCODER_CAP

#define POOL_HOT 40u
#define POOL_SIZE 6000u

struct round_trip {
	struct encoder *enc;
	struct decoder *dec;
	struct want *wants;
	size_t nwants;
	uint8_t *bytes;
	size_t nbytes;
	uint64_t *frames;
	size_t nframes;
	uint64_t clock;     /* the generator's own time, never decreasing */
	uint64_t last_time; /* the last encoded time after clamping */
	/* the encoder's reference table as the test expects it */
	uint64_t pool[POOL_SIZE];
	uint32_t pool_gen[POOL_SIZE];
	uint32_t pool_idx[POOL_SIZE];
	uint32_t gen, nrefs;
	/* what the test has seen, to show every form was exercised */
	uint64_t events, payloads, by_refs, by_len;
	uint64_t ref_forms[3]; /* inline, index, new */
	uint64_t kinds[16];
	uint64_t clamped, cut_strings, cut_frames;
};

static void rt_pool_init(struct round_trip *rt)
{
	uint32_t k;

	for (k = 0; k < POOL_SIZE; k++) {
		if (k < 30)
			rt->pool[k] = 0x401000u + k * 0x30u;
		else if (k < POOL_HOT - 1)
			rt->pool[k] = 0x7f3a12340000ull + k * 0x10u;
		else if (k == POOL_HOT - 1)
			rt->pool[k] = UINT64_MAX - 5; /* a ten-byte varint */
		else
			rt->pool[k] = 0x555500000000ull + k * 0x40u;
		rt->pool_gen[k] = 0;
	}
	rt->gen = 1;
	rt->nrefs = 0;
}

static uint64_t rt_time(struct round_trip *rt)
{
	uint64_t r = rnd_below(100), t;

	if (r < 10)
		;
	else if (r < 80)
		rt->clock += rnd_below(100);
	else if (r < 98)
		rt->clock += rnd_below(1000000);
	else
		rt->clock += rnd_below(UINT64_C(1) << 40);
	t = rt->clock;
	/* now and then an event out of order, but never the first of a
	 * payload: the first one sets the payload's base time */
	if (rt->nwants && rnd_below(100) == 0) {
		t = rt->clock - 1 - rnd_below(1000);
		if (t < rt->last_time)
			rt->clamped++;
	}
	return t;
}

static struct want *rt_add(struct round_trip *rt, uint8_t type, uint8_t arg, uint64_t t)
{
	struct want *w = &rt->wants[rt->nwants++];

	memset(w, 0, sizeof(*w));
	w->type = type;
	w->arg = arg;
	/* delta-encoded times: equal when non-decreasing, else the previous */
	if (rt->nwants == 1 || t > rt->last_time)
		rt->last_time = t;
	w->time = rt->last_time;
	rt->kinds[type]++;
	return w;
}

static uint32_t rt_bytes(struct round_trip *rt, size_t len, bool text)
{
	uint32_t off = (uint32_t)rt->nbytes;
	size_t i;

	for (i = 0; i < len; i++)
		rt->bytes[rt->nbytes++] = text ? (uint8_t)(' ' + rnd_below(95)) : (uint8_t)rnd();
	return off;
}

/* Mostly the first few hot functions, so that the inline form dominates as
 * it does in real traces; the rest of the hot pool takes the index form. */
static uint32_t rt_pick(void)
{
	return rnd_below(4) ? (uint32_t)rnd_below(8) : (uint32_t)rnd_below(POOL_HOT);
}

static void rt_func(struct round_trip *rt, bool entry, uint32_t k)
{
	uint64_t t = rt_time(rt), addr = rt->pool[k];
	uint8_t arg;

	if (rt->pool_gen[k] != rt->gen) {
		rt->pool_gen[k] = rt->gen;
		rt->pool_idx[k] = rt->nrefs++;
		arg = LP_REF_NEW;
	} else if (rt->pool_idx[k] <= LP_REF_INLINE_MAX) {
		arg = (uint8_t)rt->pool_idx[k];
	} else {
		arg = LP_REF_INDEX;
	}
	if (entry)
		encoder_entry(rt->enc, t, addr);
	else
		encoder_exit(rt->enc, t, addr);
	rt_add(rt, entry ? LP_EV_ENTRY : LP_EV_EXIT, arg, t)->value = addr;
}

static void rt_map(struct round_trip *rt)
{
	uint64_t t = rt_time(rt), base = rnd(), offset = rnd(), start = rnd() >> 1;
	uint64_t end = start + rnd_below(UINT64_C(1) << 32);
	size_t bid_len = rnd_below(72), path_len = rnd_below(50) ? rnd_below(200) : 4000 + rnd_below(1000);
	uint32_t bid_off = rt_bytes(rt, bid_len, false), path_off = rt_bytes(rt, path_len, true);
	struct want *w;

	encoder_map(rt->enc, t, base, start, end, offset, rt->bytes + bid_off, bid_len,
	            (const char *)rt->bytes + path_off, path_len);
	/* the arena holds the full strings; the encoder keeps their heads */
	w = rt_add(rt, LP_EV_MAP, 0, t);
	w->base = base;
	w->start = start;
	w->end = end;
	w->offset = offset;
	w->bid_off = bid_off;
	w->bid_len = (uint32_t)(bid_len > 64 ? 64 : bid_len);
	w->str_off = path_off;
	w->str_len = (uint32_t)(path_len > LP_STRING_MAX ? LP_STRING_MAX : path_len);
	rt->cut_strings += bid_len > 64 || path_len > LP_STRING_MAX;
}

static void rt_task(struct round_trip *rt)
{
	uint64_t t = rt_time(rt), arg = rnd_wide();
	unsigned kind = (unsigned)rnd_below(5);
	size_t name_len = rnd_below(50) ? rnd_below(64) : 1000 + rnd_below(100);
	size_t nframes = rnd_below(50) ? rnd_below(8) : 250 + rnd_below(50), i;
	uint32_t name_off = rt_bytes(rt, name_len, true);
	uint64_t *frames = rt->frames + rt->nframes;
	struct want *w;

	for (i = 0; i < nframes; i++)
		frames[i] = rt->pool[rt_pick()];
	encoder_task(rt->enc, t, kind, arg, (const char *)rt->bytes + name_off, name_len, frames, nframes);
	w = rt_add(rt, LP_EV_TASK, (uint8_t)kind, t);
	w->value = arg;
	w->str_off = name_off;
	w->str_len = (uint32_t)(name_len > 1024 ? 1024 : name_len);
	w->frames_off = (uint32_t)rt->nframes;
	w->nframes = (uint32_t)(nframes > EVENT_FRAMES_MAX ? EVENT_FRAMES_MAX : nframes);
	rt->nframes += w->nframes;
	rt->cut_strings += name_len > 1024;
	rt->cut_frames += nframes > EVENT_FRAMES_MAX;
}

static int rt_match(const struct round_trip *rt, const struct want *w, const struct lp_event *ev)
{
	int ok = 1;

	ok &= CHECK_EQ_U64(ev->type, w->type);
	ok &= CHECK_EQ_U64(ev->arg, w->arg);
	ok &= CHECK_EQ_U64(ev->time, w->time);
	if (!ok)
		return 0;
	switch (w->type) {
	case LP_EV_ENTRY:
	case LP_EV_EXIT:
	case LP_EV_LOST:
	case LP_EV_LONGJMP:
		ok &= CHECK_EQ_U64(ev->value, w->value);
		break;
	case LP_EV_MAP:
		ok &= CHECK_EQ_U64(ev->base, w->base);
		ok &= CHECK_EQ_U64(ev->start, w->start);
		ok &= CHECK_EQ_U64(ev->end, w->end);
		ok &= CHECK_EQ_U64(ev->offset, w->offset);
		ok &= CHECK_EQ_U64(ev->build_id_len, w->bid_len);
		ok &= CHECK_EQ_U64(ev->str_len, w->str_len);
		if (ok) {
			ok &= CHECK(!memcmp(ev->build_id, rt->bytes + w->bid_off, w->bid_len));
			ok &= CHECK(!memcmp(ev->str, rt->bytes + w->str_off, w->str_len));
		}
		break;
	case LP_EV_TASK:
		ok &= CHECK_EQ_U64(ev->value, w->value);
		ok &= CHECK_EQ_U64(ev->str_len, w->str_len);
		ok &= CHECK_EQ_U64(ev->nframes, w->nframes);
		if (ok) {
			ok &= CHECK(!memcmp(ev->str, rt->bytes + w->str_off, w->str_len));
			ok &= CHECK(!w->nframes ||
			            !memcmp(ev->frames, rt->frames + w->frames_off, w->nframes * sizeof(uint64_t)));
		}
		break;
	default:
		ok = CHECK(!"unexpected event type");
	}
	return ok;
}

/* Decodes what the encoder handed out and compares every event. */
static void rt_check_payload(struct round_trip *rt, const uint8_t *payload, size_t len)
{
	uint8_t *copy = exact_copy(payload, len);
	struct lp_event ev;
	size_t i;
	int r = 0;

	if (!CHECK_EQ_U64(decoder_begin(rt->dec, copy, len), 0))
		goto out;
	CHECK_EQ_U64(rt->dec->image, rt->enc->image);
	CHECK_EQ_U64(rt->dec->pid, rt->enc->pid);
	CHECK_EQ_U64(rt->dec->tid, rt->enc->tid);
	for (i = 0; i < rt->nwants; i++) {
		r = decoder_next(rt->dec, &ev);
		if (!CHECK_EQ_U64(r, 1) || !rt_match(rt, &rt->wants[i], &ev)) {
			printf("  at event %zu of payload %llu\n", i, (unsigned long long)rt->payloads);
			goto out;
		}
		if (ev.type == LP_EV_ENTRY || ev.type == LP_EV_EXIT)
			rt->ref_forms[ev.arg <= LP_REF_INLINE_MAX ? 0 : ev.arg - LP_REF_INLINE_MAX]++;
	}
	CHECK_EQ_U64(decoder_next(rt->dec, &ev), 0);
out:
	free(copy);
}

static void rt_flush(struct round_trip *rt)
{
	const uint8_t *payload;
	size_t len;

	if (rt->enc->nrefs >= ENCODER_REFS_MAX)
		rt->by_refs++;
	else if (rt->enc->len >= LP_CHUNK_TARGET_PAYLOAD)
		rt->by_len++;
	CHECK_EQ_U64(rt->enc->events, rt->nwants);
	len = encoder_take(rt->enc, &payload);
	if (rt->nwants) {
		CHECK(len > 0);
		CHECK(len <= ENCODER_CAP);
		CHECK(len <= LP_CHUNK_MAX_PAYLOAD);
		rt_check_payload(rt, payload, len);
		rt->payloads++;
	} else {
		CHECK_EQ_U64(len, 0);
	}
	rt->events += rt->nwants;
	rt->nwants = rt->nbytes = rt->nframes = 0;
	rt->gen++;
	rt->nrefs = 0;
}

/* One random event of any kind the encoder writes. */
static void rt_event(struct round_trip *rt)
{
	uint64_t r = rnd_below(100), t;

	if (r < 45) {
		rt_func(rt, true, rt_pick());
	} else if (r < 90) {
		rt_func(rt, false, rt_pick());
	} else if (r < 93) {
		uint64_t n = rnd_below(4) ? rnd_below(1000) : rnd_wide();

		t = rt_time(rt);
		encoder_lost(rt->enc, t, n);
		rt_add(rt, LP_EV_LOST, 0, t)->value = n;
	} else if (r < 96) {
		uint64_t depth = rnd_below(4) ? rnd_below(100) : rnd();

		t = rt_time(rt);
		encoder_longjmp(rt->enc, t, depth);
		rt_add(rt, LP_EV_LONGJMP, 0, t)->value = depth;
	} else if (r < 98) {
		rt_map(rt);
	} else {
		rt_task(rt);
	}
}

static struct round_trip *rt_new(uint32_t image, uint32_t pid, uint32_t tid)
{
	struct round_trip *rt = calloc(1, sizeof(*rt));

	if (!rt || !(rt->enc = malloc(sizeof(*rt->enc))) || !(rt->dec = malloc(sizeof(*rt->dec))) ||
	    !(rt->wants = malloc(WANT_MAX * sizeof(*rt->wants))) || !(rt->bytes = malloc(2 * ENCODER_CAP)) ||
	    !(rt->frames = malloc(ENCODER_CAP * sizeof(uint64_t)))) {
		perror("malloc");
		exit(2);
	}
	rt_pool_init(rt);
	encoder_init(rt->enc, image, pid, tid);
	rt->clock = (UINT64_C(1) << 50) + rnd_below(UINT64_C(1) << 40);
	return rt;
}

static void rt_free(struct round_trip *rt)
{
	if (!rt)
		return;
	free(rt->frames);
	free(rt->bytes);
	free(rt->wants);
	free(rt->dec);
	free(rt->enc);
	free(rt);
}

static void test_round_trip(void)
{
	struct round_trip *rt = rt_new(7, UINT32_MAX, 123456);
	uint64_t i;
	uint32_t k;

	for (i = 0; i < 100000; i++) {
		if (encoder_full(rt->enc))
			rt_flush(rt);
		/* now and then a burst of distinct functions in a fresh
		 * payload, so that the reference table fills before the
		 * payload does */
		if (i % 30000 == 29999) {
			rt_flush(rt);
			for (k = POOL_HOT; k < POOL_SIZE && !encoder_full(rt->enc); k++)
				rt_func(rt, true, k);
		} else {
			rt_event(rt);
		}
	}
	rt_flush(rt);
	/* an empty encoder hands out nothing */
	rt_flush(rt);

	printf("round trip: %llu events in %llu payloads (%llu ended by the table, %llu by length); "
	       "refs inline %llu, index %llu, new %llu\n",
	       (unsigned long long)rt->events, (unsigned long long)rt->payloads, (unsigned long long)rt->by_refs,
	       (unsigned long long)rt->by_len, (unsigned long long)rt->ref_forms[0],
	       (unsigned long long)rt->ref_forms[1], (unsigned long long)rt->ref_forms[2]);
	CHECK(rt->events >= 100000);
	CHECK(rt->payloads >= 4);
	CHECK(rt->by_refs >= 1);
	CHECK(rt->by_len >= 1);
	CHECK(rt->ref_forms[0] > 0);
	CHECK(rt->ref_forms[1] > 0);
	CHECK(rt->ref_forms[2] > 0);
	CHECK(rt->kinds[LP_EV_LOST] > 0);
	CHECK(rt->kinds[LP_EV_LONGJMP] > 0);
	CHECK(rt->kinds[LP_EV_MAP] > 0);
	CHECK(rt->kinds[LP_EV_TASK] > 0);
	CHECK(rt->clamped > 0);
	CHECK(rt->cut_strings > 0);
	CHECK(rt->cut_frames > 0);
	rt_free(rt);
}

/* A time before the previous one is stored as the previous one. */
static void test_time_clamp(void)
{
	static const uint64_t in[] = { 1000, 500, 700, 2000, 1999, 2001 };
	static const uint64_t out[] = { 1000, 1000, 1000, 2000, 2000, 2001 };
	struct encoder *e = malloc(sizeof(*e));
	struct decoder *d = malloc(sizeof(*d));
	const uint8_t *payload;
	struct lp_event ev;
	size_t i, len;

	if (!e || !d) {
		perror("malloc");
		exit(2);
	}
	encoder_init(e, 1, 2, 3);
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		(i % 2 ? encoder_exit : encoder_entry)(e, in[i], 0x1000);
	len = encoder_take(e, &payload);
	CHECK_EQ_U64(decoder_begin(d, payload, len), 0);
	for (i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		if (!CHECK_EQ_U64(decoder_next(d, &ev), 1))
			break;
		CHECK_EQ_U64(ev.time, out[i]);
		CHECK_EQ_U64(ev.value, 0x1000);
	}
	CHECK_EQ_U64(decoder_next(d, &ev), 0);
	free(d);
	free(e);
}

/* An UNMAP (EXTENDED subtype 2) reads back as written, between two calls. */
static void test_unmap(void)
{
	struct encoder *e = malloc(sizeof(*e));
	struct decoder *d = malloc(sizeof(*d));
	const uint8_t *payload, *p, *end;
	struct lp_event ev;
	uint64_t start = 0, stop = 0;
	size_t len;

	if (!e || !d) {
		perror("malloc");
		exit(2);
	}
	encoder_init(e, 1, 2, 3);
	encoder_entry(e, 100, 0x7f0000001000);
	encoder_unmap(e, 150, 0x7f0000001000, 0x7f0000003000);
	encoder_exit(e, 200, 0x7f0000001000);
	len = encoder_take(e, &payload);
	CHECK_EQ_U64(decoder_begin(d, payload, len), 0);
	CHECK_EQ_U64(decoder_next(d, &ev), 1);
	CHECK_EQ_U64(ev.type, LP_EV_ENTRY);
	CHECK_EQ_U64(decoder_next(d, &ev), 1);
	CHECK_EQ_U64(ev.type, LP_EV_EXTENDED);
	CHECK_EQ_U64(ev.value, LP_XEV_UNMAP);
	CHECK_EQ_U64(ev.time, 150);
	p = (const uint8_t *)ev.str;
	end = p + ev.str_len;
	CHECK_EQ_U64(varint_get(&p, end, &start), 0);
	CHECK_EQ_U64(varint_get(&p, end, &stop), 0);
	CHECK(p == end);
	CHECK_EQ_U64(start, 0x7f0000001000);
	CHECK_EQ_U64(stop, 0x7f0000003000);
	CHECK_EQ_U64(decoder_next(d, &ev), 1);
	CHECK_EQ_U64(ev.type, LP_EV_EXIT);
	CHECK_EQ_U64(ev.value, 0x7f0000001000);
	CHECK_EQ_U64(decoder_next(d, &ev), 0);
	free(d);
	free(e);
}

/* Kernel records up to KERNEVENT_RAW_MAX bytes read back whole, packed or
 * not; a longer one is stored cut to that size. */
static void test_kernel_record_sizes(void)
{
	static const uint32_t lens[] = { 8, 1025, KERNEVENT_RAW_MAX, KERNEVENT_RAW_MAX + 100 };
	struct encoder *e = malloc(sizeof(*e));
	struct decoder *d = malloc(sizeof(*d));
	uint8_t *raw = malloc(KERNEVENT_RAW_MAX + 100), *buf = malloc(KERNEVENT_RAW_MAX);

	if (!e || !d || !raw || !buf) {
		perror("malloc");
		exit(2);
	}
	for (uint32_t i = 0; i < KERNEVENT_RAW_MAX + 100; i++)
		raw[i] = (uint8_t)(i * 7 + 3);
	for (int packed = 0; packed < 2; packed++) {
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			uint32_t want = lens[i] < KERNEVENT_RAW_MAX ? lens[i] : KERNEVENT_RAW_MAX;
			const uint8_t *payload;
			struct kernevent k;
			struct lp_event ev;
			size_t len;

			raw[0] = 17; /* common_type: the id, as the kernel writes it */
			raw[1] = 0;
			encoder_init(e, 1, 2, 3);
			encoder_kernel(e, 1000 + i, 17, 1, raw, lens[i], packed);
			len = encoder_take(e, &payload);
			CHECK_EQ_U64(decoder_begin(d, payload, len), 0);
			if (!CHECK_EQ_U64(decoder_next(d, &ev), 1))
				continue;
			CHECK_EQ_U64(ev.type, LP_EV_KERNEL);
			if (!CHECK_EQ_U64(kernevent_parse(&ev, &k, buf), 0))
				continue;
			CHECK_EQ_U64(k.id, 17);
			CHECK_EQ_U64(k.cpu, 1);
			CHECK_EQ_U64(k.raw_len, want);
			CHECK(memcmp(k.raw, raw, want) == 0);
			CHECK_EQ_U64(decoder_next(d, &ev), 0);
		}
	}
	free(buf);
	free(raw);
	free(d);
	free(e);
}

/* --- the decoder on hand-made and damaged payloads ------------------------ */

#define CRAFT_MAX (1u << 19)

struct craft {
	uint8_t *b;
	size_t n;
};

static void craft_varint(struct craft *c, uint64_t v)
{
	c->n += varint_put(c->b + c->n, v);
}

static void craft_byte(struct craft *c, unsigned type, unsigned arg)
{
	c->b[c->n++] = (uint8_t)(type | arg << 4);
}

static void craft_bytes(struct craft *c, const char *s, size_t n)
{
	memcpy(c->b + c->n, s, n);
	c->n += n;
}

/* Starts a payload with the stream header of image 1, pid 2, tid 3. */
static void craft_start(struct craft *c)
{
	c->n = 0;
	craft_varint(c, 1);
	craft_varint(c, 2);
	craft_varint(c, 3);
	craft_varint(c, 1000);
}

/* Decodes c to the end: the count of events and the last result. */
static int craft_decode(struct decoder *d, const struct craft *c, size_t *nevents, struct lp_event *last)
{
	uint8_t *copy = exact_copy(c->b, c->n);
	struct lp_event ev;
	int r;

	*nevents = 0;
	r = decoder_begin(d, copy, c->n);
	if (!r) {
		while ((r = decoder_next(d, &ev)) == 1) {
			++*nevents;
			if (last)
				*last = ev;
		}
	}
	free(copy);
	return r;
}

static void test_decoder_crafted(void)
{
	struct craft c = { malloc(CRAFT_MAX), 0 };
	struct decoder *d = malloc(sizeof(*d));
	struct lp_event ev;
	uint8_t *copy;
	size_t n;
	unsigned i;

	if (!c.b || !d) {
		perror("malloc");
		exit(2);
	}
	/* a stream header alone is an empty, valid payload */
	craft_start(&c);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), 0);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(d->image, 1);
	CHECK_EQ_U64(d->pid, 2);
	CHECK_EQ_U64(d->tid, 3);
	/* the ids are 32 bits wide */
	c.n = 0;
	craft_varint(&c, UINT64_C(1) << 32);
	craft_varint(&c, 2);
	craft_varint(&c, 3);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	c.n = 0;
	craft_varint(&c, 1);
	craft_varint(&c, UINT64_C(1) << 32);
	craft_varint(&c, 3);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);

	/* an inline reference past the table */
	craft_start(&c);
	craft_byte(&c, LP_EV_ENTRY, 0);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	CHECK_EQ_U64(n, 0);
	craft_start(&c);
	craft_byte(&c, LP_EV_ENTRY, LP_REF_NEW);
	craft_varint(&c, 5);
	craft_varint(&c, 0xabc);
	craft_byte(&c, LP_EV_EXIT, 0);
	craft_varint(&c, 5);
	CHECK_EQ_U64(craft_decode(d, &c, &n, &ev), 0);
	CHECK_EQ_U64(n, 2);
	CHECK_EQ_U64(ev.type, LP_EV_EXIT);
	CHECK_EQ_U64(ev.value, 0xabc);
	CHECK_EQ_U64(ev.time, 1010);
	craft_byte(&c, LP_EV_EXIT, 1);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	CHECK_EQ_U64(n, 2);
	/* an explicit index past the table */
	craft_start(&c);
	craft_byte(&c, LP_EV_ENTRY, LP_REF_NEW);
	craft_varint(&c, 0);
	craft_varint(&c, 0xabc);
	craft_byte(&c, LP_EV_ENTRY, LP_REF_INDEX);
	craft_varint(&c, 0);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, &ev), 0);
	CHECK_EQ_U64(ev.value, 0xabc);
	craft_byte(&c, LP_EV_ENTRY, LP_REF_INDEX);
	craft_varint(&c, 0);
	craft_varint(&c, 1);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	/* the table holds LP_REF_TABLE_MAX addresses, not one more */
	craft_start(&c);
	for (i = 0; i < LP_REF_TABLE_MAX; i++) {
		craft_byte(&c, LP_EV_ENTRY, LP_REF_NEW);
		craft_varint(&c, 0);
		craft_varint(&c, i);
	}
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), 0);
	CHECK_EQ_U64(n, LP_REF_TABLE_MAX);
	craft_byte(&c, LP_EV_ENTRY, LP_REF_NEW);
	craft_varint(&c, 0);
	craft_varint(&c, i);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	CHECK_EQ_U64(n, LP_REF_TABLE_MAX);

	/* types 6..13 carry a length so that old readers skip them */
	for (i = LP_EV_SYSCALL_ENTER; i <= LP_EV_MARKER; i++) {
		craft_start(&c);
		craft_byte(&c, i, 3);
		craft_varint(&c, 1);
		craft_varint(&c, 3);
		craft_bytes(&c, "abc", 3);
		craft_byte(&c, LP_EV_LOST, 0);
		craft_varint(&c, 1);
		craft_varint(&c, 42);
		copy = exact_copy(c.b, c.n);
		CHECK_EQ_U64(decoder_begin(d, copy, c.n), 0);
		CHECK_EQ_U64(decoder_next(d, &ev), 1);
		CHECK_EQ_U64(ev.type, i);
		CHECK_EQ_U64(ev.arg, 3);
		CHECK_EQ_U64(ev.str_len, 3);
		CHECK(ev.str == (const char *)copy + c.n - 6);
		CHECK_EQ_U64(decoder_next(d, &ev), 1);
		CHECK_EQ_U64(ev.type, LP_EV_LOST);
		CHECK_EQ_U64(ev.value, 42);
		CHECK_EQ_U64(ev.time, 1002);
		CHECK_EQ_U64(decoder_next(d, &ev), 0);
		free(copy);
	}
	craft_start(&c);
	craft_byte(&c, LP_EV_EXTENDED, 0);
	craft_varint(&c, 0);
	craft_varint(&c, 77);
	craft_varint(&c, 2);
	craft_bytes(&c, "xy", 2);
	CHECK_EQ_U64(craft_decode(d, &c, &n, &ev), 0);
	CHECK_EQ_U64(n, 1);
	CHECK_EQ_U64(ev.value, 77);
	CHECK_EQ_U64(ev.str_len, 2);
	/* type 0 is not an event */
	craft_start(&c);
	craft_byte(&c, 0, 0);
	craft_varint(&c, 0);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	/* a body longer than what is left */
	craft_start(&c);
	craft_byte(&c, LP_EV_MARKER, 0);
	craft_varint(&c, 0);
	craft_varint(&c, 4);
	craft_bytes(&c, "abc", 3);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);

	/* MAP: start after end, a build id or path over their maximum */
	craft_start(&c);
	craft_byte(&c, LP_EV_MAP, 0);
	craft_varint(&c, 0);
	craft_varint(&c, 0);
	craft_varint(&c, 0x2000);
	craft_varint(&c, 0x1000);
	craft_varint(&c, 0);
	craft_varint(&c, 0);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	craft_start(&c);
	craft_byte(&c, LP_EV_MAP, 0);
	for (i = 0; i < 5; i++)
		craft_varint(&c, 0);
	craft_varint(&c, 65);
	for (i = 0; i < 65; i++)
		craft_bytes(&c, "b", 1);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	craft_start(&c);
	craft_byte(&c, LP_EV_MAP, 0);
	for (i = 0; i < 6; i++)
		craft_varint(&c, 0);
	craft_varint(&c, LP_STRING_MAX + 1);
	for (i = 0; i <= LP_STRING_MAX; i++)
		craft_bytes(&c, "p", 1);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);

	/* TASK: too many frames, a name over its maximum */
	craft_start(&c);
	craft_byte(&c, LP_EV_TASK, LP_TASK_FORK);
	craft_varint(&c, 0);
	craft_varint(&c, 99);
	craft_varint(&c, 0);
	craft_varint(&c, EVENT_FRAMES_MAX + 1);
	for (i = 0; i <= EVENT_FRAMES_MAX; i++)
		craft_varint(&c, i);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	craft_start(&c);
	craft_byte(&c, LP_EV_TASK, LP_TASK_EXEC);
	craft_varint(&c, 0);
	craft_varint(&c, 0);
	craft_varint(&c, 1025);
	for (i = 0; i < 1025; i++)
		craft_bytes(&c, "n", 1);
	craft_varint(&c, 0);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	/* frames promised but missing */
	craft_start(&c);
	craft_byte(&c, LP_EV_TASK, LP_TASK_FORK);
	craft_varint(&c, 0);
	craft_varint(&c, 99);
	craft_varint(&c, 0);
	craft_varint(&c, 3);
	craft_varint(&c, 1);
	craft_varint(&c, 2);
	CHECK_EQ_U64(craft_decode(d, &c, &n, NULL), -EBADMSG);
	free(d);
	free(c.b);
}

/* A payload with every kind of event, and the events it must decode to. */
static struct round_trip *sample_payload(const uint8_t **payload, size_t *len)
{
	struct round_trip *rt = rt_new(9, 1234, 1235);
	int i;

	rt_map(rt);
	rt_task(rt);
	for (i = 0; i < 300; i++)
		rt_event(rt);
	rt_map(rt);
	rt_task(rt);
	*len = encoder_take(rt->enc, payload);
	return rt;
}

/* Every cut of a valid payload decodes the events wholly before the cut
 * and then ends: cleanly when the cut falls between events, with -EBADMSG
 * when it falls inside one. */
static void test_decoder_truncation(void)
{
	const uint8_t *payload;
	size_t len, hdr_end, *ends, nends = 0, cut, k;
	struct round_trip *rt = sample_payload(&payload, &len);
	struct lp_event ev;
	int r;

	ends = malloc((rt->nwants + 1) * sizeof(*ends));
	if (!ends) {
		perror("malloc");
		exit(2);
	}
	if (!CHECK_EQ_U64(decoder_begin(rt->dec, payload, len), 0))
		goto out;
	hdr_end = (size_t)(rt->dec->p - payload);
	while (decoder_next(rt->dec, &ev) == 1 && nends < rt->nwants)
		ends[nends++] = (size_t)(rt->dec->p - payload);
	if (!CHECK_EQ_U64(nends, rt->nwants) || !CHECK_EQ_U64(ends[nends - 1], len))
		goto out;

	for (cut = 0; cut <= len; cut++) {
		uint8_t *copy = exact_copy(payload, cut);

		r = decoder_begin(rt->dec, copy, cut);
		if (cut < hdr_end) {
			CHECK_EQ_U64(r, -EBADMSG);
			free(copy);
			continue;
		}
		CHECK_EQ_U64(r, 0);
		k = 0;
		while ((r = decoder_next(rt->dec, &ev)) == 1 && k < nends) {
			if (!rt_match(rt, &rt->wants[k], &ev))
				printf("  event %zu, payload cut at %zu of %zu\n", k, cut, len);
			k++;
		}
		/* k events end at or before the cut */
		CHECK(k == nends || ends[k] > cut);
		CHECK(k == 0 || ends[k - 1] <= cut);
		if (cut == hdr_end || (k && ends[k - 1] == cut))
			CHECK_EQ_U64(r, 0);
		else
			CHECK_EQ_U64(r, -EBADMSG);
		free(copy);
	}
out:
	free(ends);
	rt_free(rt);
}

static bool inside(const void *p, size_t n, const uint8_t *buf, size_t len)
{
	const uint8_t *q = p;

	return n == 0 || (q >= buf && q <= buf + len && n <= (size_t)(buf + len - q));
}

/* Decodes damaged input to its end: every result is an event, the end or
 * -EBADMSG, and whatever an event points at lies inside the input. */
static void decode_damaged(struct decoder *d, const uint8_t *buf, size_t len, uint64_t *events, uint64_t *errors)
{
	struct lp_event ev;
	size_t steps = 0;
	int r;

	if (decoder_begin(d, buf, len)) {
		++*errors;
		return;
	}
	while ((r = decoder_next(d, &ev)) == 1) {
		++*events;
		switch (ev.type) {
		case LP_EV_ENTRY:
		case LP_EV_EXIT:
		case LP_EV_LOST:
		case LP_EV_LONGJMP:
			break;
		case LP_EV_MAP:
			CHECK(ev.build_id_len <= 64 && inside(ev.build_id, ev.build_id_len, buf, len));
			CHECK(ev.str_len <= LP_STRING_MAX && inside(ev.str, ev.str_len, buf, len));
			CHECK(ev.start <= ev.end);
			break;
		case LP_EV_TASK:
			CHECK(ev.str_len <= 1024 && inside(ev.str, ev.str_len, buf, len));
			CHECK(ev.nframes <= EVENT_FRAMES_MAX);
			break;
		default:
			CHECK(ev.type != 0 && ev.type < 16);
			CHECK(inside(ev.str, ev.str_len, buf, len));
		}
		/* every event takes at least two bytes */
		if (!CHECK(++steps <= len / 2))
			return;
	}
	if (r)
		++*errors;
	CHECK(r == 0 || r == -EBADMSG);
}

static void test_decoder_damage(void)
{
	const uint8_t *payload;
	size_t len, n, i;
	struct round_trip *rt = sample_payload(&payload, &len);
	uint64_t events = 0, errors = 0;
	int iter, flips;

	for (iter = 0; iter < 20000; iter++) {
		uint8_t *copy = exact_copy(payload, len);

		for (flips = 1 + (int)rnd_below(4); flips > 0; flips--) {
			i = rnd_below(len);
			if (rnd_below(2))
				copy[i] ^= (uint8_t)(1u << rnd_below(8));
			else
				copy[i] = (uint8_t)rnd();
		}
		/* sometimes cut it too */
		n = rnd_below(4) ? len : rnd_below(len + 1);
		if (n < len) {
			uint8_t *cut = exact_copy(copy, n);

			free(copy);
			copy = cut;
		}
		decode_damaged(rt->dec, copy, n, &events, &errors);
		free(copy);
	}
	/* short random garbage */
	for (iter = 0; iter < 20000; iter++) {
		uint8_t buf[64], *copy;

		n = rnd_below(sizeof(buf) + 1);
		for (i = 0; i < n; i++)
			buf[i] = rnd_below(3) ? rnd_event_byte() : (uint8_t)rnd();
		copy = exact_copy(buf, n);
		decode_damaged(rt->dec, copy, n, &events, &errors);
		free(copy);
	}
	/* both outcomes happened: the checks above were not vacuous */
	CHECK(events > 0);
	CHECK(errors > 0);
	rt_free(rt);
}

int main(void)
{
	test_varint();
	test_crc32c();
	test_chunk_header();
	test_trace_header();
	test_round_trip();
	test_time_clamp();
	test_unmap();
	test_kernel_record_sizes();
	test_decoder_crafted();
	test_decoder_truncation();
	test_decoder_damage();
	return check_summary();
}
