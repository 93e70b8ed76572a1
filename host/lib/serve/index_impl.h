/* Private to the index file's writers and readers (serve/index.c, and
 * serve/kindex.c for the kernel layer's section): the payload's primitives.
 * Values are written in the host's byte order; every read is bounded by
 * what is left of the payload. */
#ifndef LP_SERVE_INDEX_IMPL_H
#define LP_SERVE_INDEX_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"

#define INDEX_STR_MAX (1u << 20) /* bytes of one string */

struct servekernel;
struct synctrack;

/* The payload as it is written: its CRC-32C and length so far. */
struct indexout {
	FILE *f;
	uint32_t crc;
	uint64_t len;
};

static inline void put(struct indexout *o, const void *p, size_t n)
{
	fwrite(p, 1, n, o->f);
	o->crc = crc32c(o->crc, p, n);
	o->len += n;
}

static inline void put_u8(struct indexout *o, uint8_t v)
{
	put(o, &v, 1);
}

static inline void put_u32(struct indexout *o, uint32_t v)
{
	put(o, &v, sizeof(v));
}

static inline void put_u64(struct indexout *o, uint64_t v)
{
	put(o, &v, sizeof(v));
}

static inline void put_str(struct indexout *o, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > INDEX_STR_MAX)
		n = INDEX_STR_MAX;
	put_u32(o, (uint32_t)n);
	put(o, s ? s : "", n);
}

/* A cursor over the payload: every read is bounded, and a short or wrong
 * field marks the whole index bad. */
struct indexin {
	const uint8_t *p, *end;
	bool bad;
	char *str; /* the last string read, NUL-terminated (owned) */
	size_t str_cap;
};

static inline bool have(struct indexin *c, uint64_t n)
{
	if (c->bad || (uint64_t)(c->end - c->p) < n)
		c->bad = true;
	return !c->bad;
}

/* Whether n records of at least `each` bytes can still follow. */
static inline bool room_for(struct indexin *c, uint64_t n, uint64_t each)
{
	if (c->bad || n > (uint64_t)(c->end - c->p) / each)
		c->bad = true;
	return !c->bad;
}

static inline uint8_t get_u8(struct indexin *c)
{
	return have(c, 1) ? *c->p++ : 0;
}

static inline uint32_t get_u32(struct indexin *c)
{
	uint32_t v = 0;

	if (have(c, 4)) {
		memcpy(&v, c->p, 4);
		c->p += 4;
	}
	return v;
}

static inline uint64_t get_u64(struct indexin *c)
{
	uint64_t v = 0;

	if (have(c, 8)) {
		memcpy(&v, c->p, 8);
		c->p += 8;
	}
	return v;
}

/* A string: valid until the next get_str; "" after an error. */
static inline const char *get_str(struct indexin *c, size_t max)
{
	uint32_t n = get_u32(c);

	if (n > max || !have(c, n) || memchr(c->p, '\0', n)) {
		c->bad = true;
		return "";
	}
	if (n + 1 > c->str_cap) {
		char *s = realloc(c->str, n + 1);

		if (!s) {
			c->bad = true;
			return "";
		}
		c->str = s;
		c->str_cap = n + 1;
	}
	memcpy(c->str, c->p, n);
	c->str[n] = '\0';
	c->p += n;
	return c->str;
}

/* The kernel layer's section (serve/kindex.c): written after the timeline;
 * read into k (initialised, empty), 0, -EBADMSG or -ENOMEM. */
void serveindex_write_kernel(struct indexout *o, const struct servekernel *k);
int serveindex_read_kernel(struct indexin *c, struct servekernel *k);
/* The sync tracks' section (serve/synctrack.c): after the kernel's; read
 * into st (initialised, empty), 0, -EBADMSG or -ENOMEM. */
void serveindex_write_sync(struct indexout *o, const struct synctrack *st);
int serveindex_read_sync(struct indexin *c, struct synctrack *st);

#endif
