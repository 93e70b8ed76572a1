/* LEB128 varints and little-endian fixed-width fields of the trace format. */
#ifndef LP_VARINT_H
#define LP_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX 10

/* Writes v at p (room for VARINT_MAX bytes); returns the bytes written. */
static inline size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Reads a varint from [*p, end); advances *p.  Returns 0, or -1 when the
 * input ends early or the value does not fit in 64 bits. */
static inline int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t r = 0;
	unsigned shift = 0;

	if (q < end && *q < 0x80) {
		*v = *q;
		*p = q + 1;
		return 0;
	}
	while (q < end) {
		uint8_t b = *q++;

		if (shift == 63 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			*p = q;
			return 0;
		}
		shift += 7;
		if (shift > 63)
			return -1;
	}
	return -1;
}

/* Signed values as varints: v as (v << 1) ^ (v >> 63). */
static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void le16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint16_t le16_get(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

#endif
