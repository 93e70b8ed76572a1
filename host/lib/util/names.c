/* Interned strings (see util/names.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/util/names.h"

#define FNV_OFFSET_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

void names_init(struct names *t)
{
	memset(t, 0, sizeof(*t));
}

void names_release(struct names *t)
{
	free(t->bytes);
	free(t->off);
	free(t->hash);
	memset(t, 0, sizeof(*t));
}

static uint32_t hash_str(const char *s, uint32_t cap)
{
	uint64_t h = FNV_OFFSET_BASIS;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV_PRIME;
	return (uint32_t)(h >> 32) & (cap - 1);
}

static int grow_hash(struct names *t)
{
	uint32_t cap = t->hcap ? t->hcap * 2 : 1024, i;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		uint32_t k = hash_str(t->bytes + t->off[i], cap);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(t->hash);
	t->hash = h;
	t->hcap = cap;
	return 0;
}

uint32_t names_intern(struct names *t, const char *s)
{
	size_t len = strlen(s) + 1;
	uint32_t k, id;

	if ((t->n + 1) * 2 > t->hcap && grow_hash(t))
		return NAMES_NONE;
	k = hash_str(s, t->hcap);
	while ((id = t->hash[k])) {
		if (!strcmp(t->bytes + t->off[id - 1], s))
			return id - 1;
		k = (k + 1) & (t->hcap - 1);
	}
	if (t->n >= NAMES_MAX || t->len + len > NAMES_BYTES_MAX)
		return NAMES_NONE;
	if (t->len + len > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 65536;
		char *b;

		while (cap < t->len + len)
			cap *= 2;
		b = realloc(t->bytes, cap);
		if (!b)
			return NAMES_NONE;
		t->bytes = b;
		t->cap = cap;
	}
	if (t->n == t->off_cap) {
		uint32_t cap = t->off_cap ? t->off_cap * 2 : 1024;
		uint32_t *o = realloc(t->off, cap * sizeof(*o));

		if (!o)
			return NAMES_NONE;
		t->off = o;
		t->off_cap = cap;
	}
	memcpy(t->bytes + t->len, s, len);
	t->off[t->n] = (uint32_t)t->len;
	t->len += len;
	t->hash[k] = t->n + 1;
	return t->n++;
}

const char *names_get(const struct names *t, uint32_t id)
{
	return id < t->n ? t->bytes + t->off[id] : "";
}

bool names_match(const struct names *t, uint32_t id, const char *needle_lower)
{
	const char *h = names_get(t, id);
	size_t nl = strlen(needle_lower);

	if (!nl)
		return true;
	for (; *h; h++) {
		size_t i;

		for (i = 0; i < nl && h[i] && tolower((unsigned char)h[i]) == needle_lower[i]; i++)
			;
		if (i == nl)
			return true;
	}
	return false;
}
