/* Interned strings (see util/names.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/util/names.h"

void names_init(struct names *t)
{
	names_init_max(t, NAMES_MAX);
}

void names_init_max(struct names *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
}

void names_release(struct names *t)
{
	free(t->bytes);
	free(t->off);
	hashindex_release(&t->index);
	memset(t, 0, sizeof(*t));
}

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct names *t = ctx;

	return !strcmp(t->bytes + t->off[id], key);
}

uint32_t names_intern(struct names *t, const char *s)
{
	size_t len = strlen(s) + 1;
	uint64_t hash = hashindex_bytes(s, len - 1, 0);
	uint32_t slot;

	if (hashindex_reserve(&t->index))
		return NAMES_NONE;
	slot = hashindex_slot(&t->index, hash, name_eq, t, s);
	if (t->index.val[slot])
		return t->index.val[slot] - 1;
	if (t->n >= (t->max ? t->max : NAMES_MAX) || t->len + len > NAMES_BYTES_MAX)
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
	hashindex_put(&t->index, slot, hash, t->n);
	return t->n++;
}

const char *names_get(const struct names *t, uint32_t id)
{
	return id < t->n ? t->bytes + t->off[id] : "";
}

size_t names_len(const struct names *t, uint32_t id)
{
	if (id >= t->n)
		return 0;
	return (id + 1 < t->n ? t->off[id + 1] : t->len) - t->off[id] - 1;
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
