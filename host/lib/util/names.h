/* Interned strings: function and syscall names (and the frames of the
 * exports) get small ids, so that trees, flame graphs and timelines carry
 * ids and each name is stored and compared once.  The one string table of
 * the host side: serve's model, the folded and HTML exports.  Not
 * thread-safe. */
#ifndef LP_SERVE_NAMES_H
#define LP_SERVE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/util/hashindex.h"

#define NAMES_MAX (1u << 24)       /* distinct names kept */
#define NAMES_BYTES_MAX (1u << 30) /* bytes of names kept */
#define NAMES_NONE UINT32_MAX      /* "no name": out of memory, or not named yet */

struct names {
	char *bytes; /* every name, NUL-terminated, back to back */
	size_t len, cap;
	uint32_t *off; /* id -> offset into bytes */
	uint32_t n, off_cap;
	uint32_t max; /* distinct names kept, at most NAMES_MAX */
	struct hashindex index;
};

/* An empty table of at most NAMES_MAX names. */
void names_init(struct names *t);
/* An empty table of at most max names (below NAMES_NONE).  A zeroed
 * table holds at most NAMES_MAX. */
void names_init_max(struct names *t, uint32_t max);
/* Frees everything; accepts a zeroed table. */
void names_release(struct names *t);
/* The id of s, adding it when new.  Returns NAMES_NONE when memory or
 * the bounds above ran out. */
uint32_t names_intern(struct names *t, const char *s);
/* The name of id (owned by the table: valid until names_release or the
 * next names_intern, which may move the bytes); "" for a bad id. */
const char *names_get(const struct names *t, uint32_t id);
/* The length of name id (strlen of names_get). */
size_t names_len(const struct names *t, uint32_t id);
/* Whether name id contains needle, ignoring ASCII case (needle lowercase). */
bool names_match(const struct names *t, uint32_t id, const char *needle_lower);

#endif
