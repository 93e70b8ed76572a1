/* Pattern classification of functions (see classify.h). */
#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/filter.h"
#include "host/lib/trace/classify.h"
#include "host/lib/trace/cxxname.h"
#include "host/lib/trace/symbolizer.h"

#define CLASSIFY_CACHE_MAX (1u << 20)

struct entry {
	uint64_t addr;
	uint32_t image;
	uint8_t used;
	uint8_t cls;
};

struct classifier {
	struct symbolizer *sym;
	const struct filter_opts *f;
	struct entry *tab;
	uint32_t cap, n;
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
	c->cap = 1024;
	c->tab = calloc(c->cap, sizeof(*c->tab));
	if (!c->tab) {
		free(c);
		return NULL;
	}
	return c;
}

void classifier_free(struct classifier *c)
{
	if (!c)
		return;
	free(c->tab);
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

static uint32_t slot_of(const struct classifier *c, uint32_t image, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)image << 47)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 40) & (c->cap - 1);
}

static void grow(struct classifier *c)
{
	struct entry *old = c->tab;
	uint32_t i, oldcap = c->cap;

	if (c->cap >= CLASSIFY_CACHE_MAX)
		return;
	c->tab = calloc(2 * (size_t)c->cap, sizeof(*c->tab));
	if (!c->tab) {
		c->tab = old;
		return;
	}
	c->cap *= 2;
	c->n = 0;
	for (i = 0; i < oldcap; i++) {
		if (old[i].used) {
			uint32_t h = slot_of(c, old[i].image, old[i].addr);

			while (c->tab[h].used)
				h = (h + 1) & (c->cap - 1);
			c->tab[h] = old[i];
			c->n++;
		}
	}
	free(old);
}

unsigned classifier_classify(void *ctx, uint32_t image, uint64_t addr)
{
	struct classifier *c = ctx;
	struct symbol s;
	unsigned cls = 0;
	uint32_t h;
	size_t i;

	h = slot_of(c, image, addr);
	while (c->tab[h].used) {
		if (c->tab[h].addr == addr && c->tab[h].image == image)
			return c->tab[h].cls;
		h = (h + 1) & (c->cap - 1);
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
	if (c->n * 2 >= c->cap) {
		grow(c);
		h = slot_of(c, image, addr);
		while (c->tab[h].used)
			h = (h + 1) & (c->cap - 1);
	}
	if (c->n * 2 < c->cap) {
		c->tab[h].used = 1;
		c->tab[h].addr = addr;
		c->tab[h].image = image;
		c->tab[h].cls = (uint8_t)cls;
		c->n++;
	}
	return cls;
}
