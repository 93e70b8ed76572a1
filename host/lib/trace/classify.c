/* Pattern classification of functions (see classify.h). */
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "host/lib/trace/classify.h"
#include "host/lib/trace/cxxname.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/hashindex.h"

#define CLASSIFY_CACHE_MAX (1u << 19) /* functions whose class is kept */
#define CLASSIFY_CACHE_FIRST 512u

/* The class of one function. */
struct entry {
	uint64_t addr;
	uint32_t image;
	uint8_t cls;
};

struct classifier {
	struct symbolizer *sym;
	const struct filter_opts *f;
	struct entry *tab; /* n entries, room for cap */
	uint32_t cap, n;
	struct hashindex index; /* the entries by (image, addr) */
	/* which patterns matched a function so far */
	bool only_hit[OPTIONS_PATTERNS_MAX], exclude_hit[OPTIONS_PATTERNS_MAX];
};

struct classifier *classifier_new(struct symbolizer *sym, const struct filter_opts *f)
{
	struct classifier *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->sym = sym;
	c->f = f;
	return c;
}

void classifier_free(struct classifier *c)
{
	if (!c)
		return;
	free(c->tab);
	hashindex_release(&c->index);
	free(c);
}

bool classifier_matched(const struct classifier *c, bool only, size_t i)
{
	return only ? c->only_hit[i] : c->exclude_hit[i];
}

/* Longest part of a name a pattern is matched against (longer parts are
 * not tried: the whole name still is). */
#define CLASSIFY_PART_MAX 4096u

/* Whether pattern matches name[from, to). */
static bool match_part(const char *pattern, const char *name, size_t from, size_t to)
{
	char part[CLASSIFY_PART_MAX];

	if (to - from >= sizeof(part))
		return false;
	memcpy(part, name + from, to - from);
	part[to - from] = '\0';
	return !fnmatch(pattern, part, 0);
}

int classifier_match(const char *pattern, const char *name)
{
	struct cxxname cn;

	cxxname_split(name, &cn);
	/* a return type is no part of the name: "__gnu_cxx::*" must not take
	 * the std:: functions that return a __gnu_cxx iterator.  The whole
	 * text as reports print it still matches itself. */
	if (!fnmatch(pattern, name + cn.start, 0) || (cn.start && !strcmp(pattern, name)))
		return 1;
	return cn.has_params && match_part(pattern, name, cn.start, cn.params);
}

/* key: an entry whose class is not looked at */
static bool entry_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct entry *e = &((const struct classifier *)ctx)->tab[item], *k = key;

	return e->addr == k->addr && e->image == k->image;
}

/* Room for one more entry: 0, or -ENOSPC at the bound or -ENOMEM. */
static int grow(struct classifier *c)
{
	if (c->n >= CLASSIFY_CACHE_MAX)
		return -ENOSPC;
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? 2 * c->cap : CLASSIFY_CACHE_FIRST;
		struct entry *tab = realloc(c->tab, (size_t)cap * sizeof(*tab));

		if (!tab)
			return -ENOMEM;
		c->tab = tab;
		c->cap = cap;
	}
	return hashindex_reserve(&c->index);
}

unsigned classifier_classify(void *ctx, uint32_t image, uint64_t addr)
{
	struct classifier *c = ctx;
	struct entry k = { addr, image, 0 };
	uint64_t hash = hashindex_u64(addr ^ (uint64_t)image << 47);
	uint32_t slot = 0, cap = c->index.cap;
	struct symbol s;
	unsigned cls = 0;
	size_t i;

	if (cap) {
		slot = hashindex_slot(&c->index, hash, entry_eq, c, &k);
		if (c->index.val[slot])
			return c->tab[c->index.val[slot] - 1].cls;
	}
	if (symbolizer_lookup(c->sym, image, addr, &s) || !s.name)
		return 0; /* unknown yet (its mapping may come later): not cached */
	for (i = 0; i < c->f->n_only; i++) {
		if (classifier_match(c->f->only[i], s.name)) {
			cls |= FILTER_ONLY;
			c->only_hit[i] = true;
		}
	}
	for (i = 0; i < c->f->n_exclude; i++) {
		if (classifier_match(c->f->exclude[i], s.name)) {
			cls |= FILTER_EXCLUDE;
			c->exclude_hit[i] = true;
		}
	}
	/* a cache that cannot grow: the function is matched again next time */
	if (grow(c))
		return cls;
	if (c->index.cap != cap) /* the index grew: its slots moved */
		slot = hashindex_slot(&c->index, hash, entry_eq, c, &k);
	k.cls = (uint8_t)cls;
	c->tab[c->n] = k;
	hashindex_put(&c->index, slot, hash, c->n++);
	return cls;
}
