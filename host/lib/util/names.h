/* Interned strings for the web UI's server: function and syscall names
 * get small ids, so that trees, flame graphs and timelines carry ids and
 * each name is stored and compared once.  Not thread-safe. */
#ifndef LP_SERVE_NAMES_H
#define LP_SERVE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NAMES_MAX (1u << 24)       /* distinct names kept */
#define NAMES_BYTES_MAX (1u << 30) /* bytes of names kept */
#define NAMES_NONE UINT32_MAX      /* "no name": out of memory, or not named yet */

struct names {
	char *bytes; /* every name, NUL-terminated, back to back */
	size_t len, cap;
	uint32_t *off; /* id -> offset into bytes */
	uint32_t n, off_cap;
	uint32_t *hash; /* open addressing: id + 1, 0 empty */
	uint32_t hcap;
};

void names_init(struct names *t);
/* Frees everything; accepts a zeroed table. */
void names_release(struct names *t);
/* The id of s, adding it when new.  Returns NAMES_NONE when memory or
 * the bounds above ran out. */
uint32_t names_intern(struct names *t, const char *s);
/* The name of id (owned by the table: valid until names_release or the
 * next names_intern, which may move the bytes); "" for a bad id. */
const char *names_get(const struct names *t, uint32_t id);
/* Whether name id contains needle, ignoring ASCII case (needle lowercase). */
bool names_match(const struct names *t, uint32_t id, const char *needle_lower);

#endif
