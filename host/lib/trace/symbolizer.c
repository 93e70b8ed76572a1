/* Maps (process image, runtime address) to the ELF object that holds it and
 * asks that object for the name and line; caches every answer. */
#include "host/lib/trace/symbolizer.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/trace/elfsym.h"

/* Bounds on what a trace may make us hold. */
#define SYMBOLIZER_MAX_MAPS (1u << 16) /* per image */
#define SYMBOLIZER_MAX_IMAGES (1u << 20)
#define SYMBOLIZER_MAX_OBJECTS (1u << 20)
#define SYMBOLIZER_MAX_CACHE (1u << 20) /* answer cache slots; emptied when half full */
#define SYMBOLIZER_FIRST_BUCKETS 64u
#define SYMBOLIZER_FIRST_CACHE 1024u

#define FNV_OFFSET_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* Element of a chained hash table, placed first in what it chains. */
struct chain_link {
	struct chain_link *next;
};

/* One object file as named by the trace, shared by all images mapping it. */
struct object {
	struct chain_link link; /* first: the table converts back by cast */
	uint64_t hash;
	char *path; /* NUL-terminated copy */
	size_t path_len;
	uint8_t build_id[SYMBOLIZER_BUILD_ID_MAX];
	size_t build_id_len;
	struct elfsym *elf; /* NULL until the first lookup opens it */
};

struct map {
	uint64_t start;
	uint64_t end;
	uint64_t base;
	uint64_t offset;
	uint64_t max_end;  /* highest end of this and every map before it */
	uint64_t ended_ns; /* unmapped from this time on; UINT64_MAX while mapped */
	struct object *obj;
	uint32_t seq; /* order of arrival in the image */
	uint8_t tag;  /* tells it from other objects mapped over its addresses (code addresses) */
};

struct image {
	struct chain_link link; /* first: the table converts back by cast */
	uint32_t id;
	uint32_t gen;     /* bumped by every new map: older cached answers are stale */
	struct map *maps; /* sorted by start, then by arrival */
	size_t nmaps;
	size_t maps_cap;
	uint32_t seq;   /* maps arrived */
	bool has_ended; /* some map was unmapped: code addresses need a tag */
};

struct cache_entry {
	struct image *img; /* NULL: empty slot */
	uint64_t addr;
	uint64_t elf_addr; /* addr - base of the covering map */
	uint32_t gen;
	int rc;
	struct symbol sym;
};

/* A chained hash table; buckets double when the chains get long. */
struct chain_table {
	struct chain_link **buckets;
	size_t mask;
	size_t count;
};

struct symbolizer {
	unsigned flags;
	bool has_ended; /* some image has an unmapped map */
	char *debug_dir;
	struct chain_table images;  /* of struct image */
	struct chain_table objects; /* of struct object */
	struct cache_entry *cache;  /* open addressing, linear probing */
	size_t cache_mask;
	size_t cache_count;
	uint64_t maps_added;
};

/* The splitmix64 finalizer: every input bit reaches every output bit, so
 * masking the result gives well-spread buckets for addresses too. */
static uint64_t hash_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* FNV-1a over bytes, continuing from h; callers mix the result. */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

static uint64_t cache_hash(uint32_t image, uint64_t addr)
{
	return hash_mix(addr ^ hash_mix(image));
}

static int chain_init(struct chain_table *t)
{
	t->buckets = calloc(SYMBOLIZER_FIRST_BUCKETS, sizeof(*t->buckets));
	t->mask = SYMBOLIZER_FIRST_BUCKETS - 1;
	t->count = 0;
	return t->buckets ? 0 : -ENOMEM;
}

/* Doubles the buckets. On failure the chains just stay longer. */
static void chain_grow(struct chain_table *t, uint64_t (*hash_of)(const struct chain_link *))
{
	size_t nb = (t->mask + 1) * 2, i;
	struct chain_link **grown = calloc(nb, sizeof(*grown));

	if (!grown)
		return;
	for (i = 0; i <= t->mask; i++) {
		struct chain_link *l = t->buckets[i], *next;

		for (; l; l = next) {
			size_t b = hash_of(l) & (nb - 1);

			next = l->next;
			l->next = grown[b];
			grown[b] = l;
		}
	}
	free(t->buckets);
	t->buckets = grown;
	t->mask = nb - 1;
}

/* Adds an element whose hash is `hash` (hash_of gives it again when the
 * table grows, which it does once it holds one element per bucket). */
static void chain_insert(struct chain_table *t, struct chain_link *link, uint64_t hash,
                         uint64_t (*hash_of)(const struct chain_link *))
{
	if (t->count > t->mask)
		chain_grow(t, hash_of);
	link->next = t->buckets[hash & t->mask];
	t->buckets[hash & t->mask] = link;
	t->count++;
}

static uint64_t image_hash_of(const struct chain_link *link)
{
	return hash_mix(((const struct image *)link)->id);
}

static uint64_t object_hash_of(const struct chain_link *link)
{
	return ((const struct object *)link)->hash;
}

static bool bytes_equal(const void *a, const void *b, size_t len)
{
	return len == 0 || memcmp(a, b, len) == 0;
}

static struct image *image_find(struct symbolizer *s, uint32_t id)
{
	struct chain_link *l = s->images.buckets[hash_mix(id) & s->images.mask];

	for (; l; l = l->next) {
		if (((struct image *)l)->id == id)
			return (struct image *)l;
	}
	return NULL;
}

static void object_free(struct object *obj)
{
	elfsym_free(obj->elf);
	free(obj->path);
	free(obj);
}

static void image_free(struct image *img)
{
	free(img->maps);
	free(img);
}

struct symbolizer *symbolizer_new(unsigned flags)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->flags = flags;
	s->debug_dir = strdup(SYMBOLIZER_DEBUG_DIR);
	s->cache = calloc(SYMBOLIZER_FIRST_CACHE, sizeof(*s->cache));
	s->cache_mask = SYMBOLIZER_FIRST_CACHE - 1;
	if (!s->debug_dir || !s->cache || chain_init(&s->images) || chain_init(&s->objects)) {
		symbolizer_free(s);
		return NULL;
	}
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; s->images.buckets && i <= s->images.mask; i++) {
		struct chain_link *l = s->images.buckets[i], *next;

		for (; l; l = next) {
			next = l->next;
			image_free((struct image *)l);
		}
	}
	for (i = 0; s->objects.buckets && i <= s->objects.mask; i++) {
		struct chain_link *l = s->objects.buckets[i], *next;

		for (; l; l = next) {
			next = l->next;
			object_free((struct object *)l);
		}
	}
	free(s->images.buckets);
	free(s->objects.buckets);
	free(s->cache);
	free(s->debug_dir);
	free(s);
}

int symbolizer_set_debug_dir(struct symbolizer *s, const char *dir)
{
	char *copy = NULL;

	if (dir) {
		copy = strdup(dir);
		if (!copy)
			return -ENOMEM;
	}
	free(s->debug_dir);
	s->debug_dir = copy;
	return 0;
}

/* Finds or creates the object for (path, build id). */
static int object_get(struct symbolizer *s, const char *path, size_t path_len, const uint8_t *build_id,
                      size_t build_id_len, struct object **out)
{
	uint64_t hash = hash_bytes(FNV_OFFSET_BASIS, path, path_len);
	struct chain_link *l;
	struct object *obj;

	hash = hash_mix(hash_bytes(hash ^ build_id_len, build_id, build_id_len));
	for (l = s->objects.buckets[hash & s->objects.mask]; l; l = l->next) {
		obj = (struct object *)l;
		if (obj->hash == hash && obj->path_len == path_len && obj->build_id_len == build_id_len &&
		    bytes_equal(obj->path, path, path_len) && bytes_equal(obj->build_id, build_id, build_id_len)) {
			*out = obj;
			return 0;
		}
	}
	if (s->objects.count >= SYMBOLIZER_MAX_OBJECTS)
		return -ENOSPC;
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return -ENOMEM;
	obj->path = malloc(path_len + 1);
	if (!obj->path) {
		free(obj);
		return -ENOMEM;
	}
	if (path_len)
		memcpy(obj->path, path, path_len);
	obj->path[path_len] = '\0';
	obj->path_len = path_len;
	if (build_id_len)
		memcpy(obj->build_id, build_id, build_id_len);
	obj->build_id_len = build_id_len;
	obj->hash = hash;
	chain_insert(&s->objects, &obj->link, hash, object_hash_of);
	*out = obj;
	return 0;
}

static int image_get(struct symbolizer *s, uint32_t id, struct image **out)
{
	struct image *img = image_find(s, id);

	if (!img) {
		if (s->images.count >= SYMBOLIZER_MAX_IMAGES)
			return -ENOSPC;
		img = calloc(1, sizeof(*img));
		if (!img)
			return -ENOMEM;
		img->id = id;
		chain_insert(&s->images, &img->link, hash_mix(id), image_hash_of);
	}
	*out = img;
	return 0;
}

/* Number of maps of img starting at or below addr. */
static size_t maps_upper(const struct image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The tag of a map about to be added: that of an earlier map of the same
 * object at the same load bias over its addresses (the object loaded
 * there again), else the lowest that no unmapped object over its
 * addresses has; SYMBOLIZER_TAG_MAX when all are taken.  Objects mapped
 * over each other at the same time share a tag, as before unmapping
 * existed (the highest start wins). */
static uint8_t map_tag(const struct image *img, const struct map *m)
{
	bool used[SYMBOLIZER_TAG_MAX + 1] = { false };
	int same = -1;
	size_t i;
	unsigned t;

	for (i = maps_upper(img, m->end - 1); i > 0 && img->maps[i - 1].max_end > m->start; i--) {
		const struct map *o = &img->maps[i - 1];

		if (o->end <= m->start)
			continue;
		if (o->obj == m->obj && o->base == m->base)
			same = same < 0 ? o->tag : same;
		else if (o->ended_ns != UINT64_MAX)
			used[o->tag] = true;
	}
	if (same >= 0 && !used[same])
		return (uint8_t)same;
	for (t = 0; t < SYMBOLIZER_TAG_MAX && used[t]; t++)
		;
	return (uint8_t)t;
}

/* Adds m, told at time ns, unless it is a map the image has (told again):
 * one still mapped, or one unmapped after ns (the trace read again). */
static int image_add_map(struct image *img, struct map *m, uint64_t ns)
{
	size_t at = maps_upper(img, m->start), i;

	for (i = at; i > 0 && img->maps[i - 1].start == m->start; i--) {
		const struct map *old = &img->maps[i - 1];

		if (old->end == m->end && old->base == m->base && old->offset == m->offset && old->obj == m->obj &&
		    (old->ended_ns == UINT64_MAX || ns < old->ended_ns))
			return 0;
	}
	m->tag = map_tag(img, m);
	m->seq = img->seq++;
	if (img->nmaps == img->maps_cap) {
		size_t cap = img->maps_cap ? img->maps_cap * 2 : 16;
		struct map *p;

		if (img->maps_cap >= SYMBOLIZER_MAX_MAPS)
			return -ENOSPC;
		if (cap > SYMBOLIZER_MAX_MAPS)
			cap = SYMBOLIZER_MAX_MAPS;
		p = realloc(img->maps, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		img->maps = p;
		img->maps_cap = cap;
	}
	memmove(&img->maps[at + 1], &img->maps[at], (img->nmaps - at) * sizeof(*img->maps));
	img->maps[at] = *m;
	img->nmaps++;
	for (i = at; i < img->nmaps; i++) {
		uint64_t before = i ? img->maps[i - 1].max_end : 0;

		img->maps[i].max_end = img->maps[i].end > before ? img->maps[i].end : before;
	}
	img->gen++;
	return 0;
}

int symbolizer_add_map(struct symbolizer *s, uint32_t image, uint64_t base, uint64_t start, uint64_t end,
                       uint64_t offset, const uint8_t *build_id, size_t build_id_len, const char *path, size_t path_len)
{
	return symbolizer_add_map_at(s, image, UINT64_MAX, base, start, end, offset, build_id, build_id_len, path,
	                             path_len);
}

int symbolizer_add_map_at(struct symbolizer *s, uint32_t image, uint64_t ns, uint64_t base, uint64_t start,
                          uint64_t end, uint64_t offset, const uint8_t *build_id, size_t build_id_len, const char *path,
                          size_t path_len)
{
	struct object *obj;
	struct image *img;
	struct map m;
	size_t nmaps;
	int rc;

	assert(s);
	if (end <= start || path_len > SYMBOLIZER_PATH_MAX || build_id_len > SYMBOLIZER_BUILD_ID_MAX ||
	    (path_len && !path) || (build_id_len && !build_id) || (path_len && memchr(path, '\0', path_len)))
		return -EINVAL;
	rc = object_get(s, path, path_len, build_id, build_id_len, &obj);
	if (rc)
		return rc;
	rc = image_get(s, image, &img);
	if (rc)
		return rc;
	memset(&m, 0, sizeof(m));
	m.start = start;
	m.end = end;
	m.base = base;
	m.offset = offset;
	m.max_end = end;
	m.ended_ns = UINT64_MAX;
	m.obj = obj;
	nmaps = img->nmaps;
	rc = image_add_map(img, &m, ns);
	if (!rc && img->nmaps > nmaps)
		s->maps_added++;
	return rc;
}

uint64_t symbolizer_map_count(const struct symbolizer *s)
{
	return s->maps_added;
}

int symbolizer_end_map(struct symbolizer *s, uint32_t image, uint64_t start, uint64_t end, uint64_t ns)
{
	struct image *img;
	size_t i;
	int n = 0;

	assert(s);
	img = image_find(s, image);
	if (!img || end <= start)
		return 0;
	if (ns == UINT64_MAX)
		ns--; /* UINT64_MAX means mapped */
	for (i = maps_upper(img, start); i > 0 && img->maps[i - 1].start == start; i--) {
		struct map *m = &img->maps[i - 1];

		if (m->end == end && m->ended_ns == UINT64_MAX) {
			m->ended_ns = ns;
			n++;
		}
	}
	if (n) {
		img->has_ended = true;
		img->gen++;
		s->has_ended = true;
	}
	return n;
}

/* The map covering addr: of the maps starting at or below it, the highest
 * that reaches it (of equal starts, the last to arrive), with the given
 * tag when tag >= 0 (none: any).  max_end stops the walk as soon as none
 * below can reach addr. */
static const struct map *image_find_map(const struct image *img, uint64_t addr, int tag)
{
	size_t i = maps_upper(img, addr);

	for (; i > 0 && img->maps[i - 1].max_end > addr; i--) {
		const struct map *m = &img->maps[i - 1];

		if (addr < m->end && (tag < 0 || m->tag == tag))
			return m;
	}
	return NULL;
}

uint64_t symbolizer_code_addr(struct symbolizer *s, uint32_t image, uint64_t addr, uint64_t ns)
{
	const struct map *best = NULL;
	bool used[SYMBOLIZER_TAG_MAX + 1] = { false }, covered = false;
	struct image *img;
	unsigned t;
	size_t i;

	if (!s->has_ended || addr >> SYMBOLIZER_TAG_SHIFT)
		return addr;
	img = image_find(s, image);
	if (!img || !img->has_ended)
		return addr;
	for (i = maps_upper(img, addr); i > 0 && img->maps[i - 1].max_end > addr; i--) {
		const struct map *m = &img->maps[i - 1];

		if (addr >= m->end)
			continue;
		covered = true;
		if (m->ended_ns <= ns) {
			used[m->tag] = true;
			continue;
		}
		/* mapped at ns: of those, the first to be unmapped after it */
		if (!best || m->ended_ns < best->ended_ns)
			best = m;
	}
	if (best)
		return addr | (uint64_t)best->tag << SYMBOLIZER_TAG_SHIFT;
	if (!covered)
		return addr;
	/* every object that covered addr was unmapped before ns: the code
	 * there is one whose map has not arrived yet (another thread's
	 * stream tells it later), taken to be a new one */
	for (t = 0; t < SYMBOLIZER_TAG_MAX && used[t]; t++)
		;
	return addr | (uint64_t)t << SYMBOLIZER_TAG_SHIFT;
}

static int object_open(struct symbolizer *s, struct object *obj)
{
	unsigned flags = 0;

	if (obj->elf)
		return 0;
	if (s->flags & SYMBOLIZER_LINES)
		flags |= ELFSYM_LINES;
	obj->elf = elfsym_open(obj->path, obj->build_id, obj->build_id_len, s->debug_dir, flags);
	return obj->elf ? 0 : -ENOMEM;
}

/* Computes the answer for addr of img into e (everything but the key). */
static int lookup_compute(struct symbolizer *s, struct image *img, uint64_t code, struct cache_entry *e)
{
	uint64_t addr = SYMBOLIZER_ADDR(code);
	const struct map *m = image_find_map(img, addr, (int)SYMBOLIZER_TAG(code));
	struct elfsym_hit hit;
	int rc;

	/* a tag no map over addr has (its map never came): whatever lies there */
	if (!m)
		m = image_find_map(img, addr, -1);
	memset(&e->sym, 0, sizeof(e->sym));
	e->elf_addr = addr;
	e->rc = -ENOENT;
	if (!m)
		return 0;
	rc = object_open(s, m->obj);
	if (rc)
		return rc;
	e->sym.module = m->obj->path;
	e->elf_addr = addr - m->base;
	if (elfsym_find(m->obj->elf, e->elf_addr, &hit)) {
		e->sym.name = hit.name;
		if (s->flags & SYMBOLIZER_DEMANGLE) {
			e->sym.name = elfsym_demangle(m->obj->elf, &hit);
			if (!e->sym.name)
				return -ENOMEM;
		}
		e->sym.offset = e->elf_addr - hit.start;
		e->rc = 0;
	}
	if (s->flags & SYMBOLIZER_LINES)
		elfsym_line(m->obj->elf, e->elf_addr, &e->sym.file, &e->sym.line);
	return 0;
}

/* Keeps the cache at most half full: doubles it, or empties it once it
 * has SYMBOLIZER_MAX_CACHE slots (answers can be recomputed, memory is
 * bounded). */
static void cache_make_room(struct symbolizer *s)
{
	size_t cap = s->cache_mask + 1, i;
	struct cache_entry *grown;

	if (s->cache_count * 2 < cap)
		return;
	if (cap * 2 > SYMBOLIZER_MAX_CACHE || !(grown = calloc(cap * 2, sizeof(*grown)))) {
		memset(s->cache, 0, cap * sizeof(*s->cache));
		s->cache_count = 0;
		return;
	}
	for (i = 0; i < cap; i++) {
		const struct cache_entry *old = &s->cache[i];
		size_t j;

		if (!old->img)
			continue;
		j = cache_hash(old->img->id, old->addr) & (cap * 2 - 1);
		while (grown[j].img)
			j = (j + 1) & (cap * 2 - 1);
		grown[j] = *old;
	}
	free(s->cache);
	s->cache = grown;
	s->cache_mask = cap * 2 - 1;
}

/* Finds or fills the cache entry of (image, addr). NULL with *rc set when
 * the image is unknown (not cached: an unknown id costs no memory) or
 * memory ran out. */
static const struct cache_entry *lookup_entry(struct symbolizer *s, uint32_t image, uint64_t addr, int *rc)
{
	struct cache_entry *e;
	struct image *img;
	size_t j;

	for (j = cache_hash(image, addr) & s->cache_mask; s->cache[j].img; j = (j + 1) & s->cache_mask) {
		e = &s->cache[j];
		if (e->addr != addr || e->img->id != image)
			continue;
		if (e->gen != e->img->gen) {
			/* A map arrived since: answer again in place. */
			*rc = lookup_compute(s, e->img, addr, e);
			if (*rc)
				return NULL;
			e->gen = e->img->gen;
		}
		return e;
	}
	img = image_find(s, image);
	if (!img) {
		*rc = -ENOENT;
		return NULL;
	}
	cache_make_room(s);
	for (j = cache_hash(image, addr) & s->cache_mask; s->cache[j].img; j = (j + 1) & s->cache_mask)
		;
	e = &s->cache[j];
	*rc = lookup_compute(s, img, addr, e);
	if (*rc)
		return NULL;
	e->img = img;
	e->addr = addr;
	e->gen = img->gen;
	s->cache_count++;
	return e;
}

int symbolizer_lookup(struct symbolizer *s, uint32_t image, uint64_t addr, struct symbol *out)
{
	const struct cache_entry *e;
	int rc;

	assert(s && out);
	e = lookup_entry(s, image, addr, &rc);
	if (!e) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	*out = e->sym;
	return e->rc;
}

/* The runtime addresses a map holds, for symbolizer_foreach_function. */
struct foreach_map {
	const struct map *m;
	int (*cb)(void *ctx, const char *name, uint64_t addr, uint64_t size);
	void *ctx;
};

static int foreach_in_map(void *ctx, const char *name, uint64_t start, uint64_t size)
{
	const struct foreach_map *fm = ctx;
	uint64_t addr = start + fm->m->base;

	if (addr < fm->m->start || addr >= fm->m->end)
		return 0;
	return fm->cb(fm->ctx, name, addr, size);
}

int symbolizer_foreach_function(struct symbolizer *s, uint32_t image,
                                int (*cb)(void *ctx, const char *name, uint64_t addr, uint64_t size), void *ctx)
{
	struct image *img;
	size_t i;
	int rc;

	assert(s && cb);
	img = image_find(s, image);
	if (!img || !img->nmaps)
		return -ENOENT;
	for (i = 0; i < img->nmaps; i++) {
		struct foreach_map fm = { &img->maps[i], cb, ctx };

		if (img->maps[i].ended_ns != UINT64_MAX)
			continue; /* its addresses are another object's now, or nothing's */
		rc = object_open(s, img->maps[i].obj);
		if (rc)
			return rc;
		rc = elfsym_foreach(img->maps[i].obj->elf, s->flags & SYMBOLIZER_DEMANGLE, foreach_in_map, &fm);
		if (rc)
			return rc;
	}
	return 0;
}

static const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

const char *symbolizer_format(struct symbolizer *s, uint32_t image, uint64_t addr, char *buf, size_t size)
{
	const struct cache_entry *e;
	int rc;

	assert(s && (buf || !size));
	if (!size)
		return buf;
	e = lookup_entry(s, image, addr, &rc);
	if (e && e->sym.name && e->sym.offset)
		snprintf(buf, size, "%s+0x%" PRIx64, e->sym.name, e->sym.offset);
	else if (e && e->sym.name)
		snprintf(buf, size, "%s", e->sym.name);
	else if (e && e->sym.module && e->sym.module[0])
		snprintf(buf, size, "%s+0x%" PRIx64, path_basename(e->sym.module), e->elf_addr);
	else
		snprintf(buf, size, "0x%" PRIx64, SYMBOLIZER_ADDR(addr));
	return buf;
}

bool symbolizer_system_module(const char *module)
{
	static const char *const prefixes[] = { "libc.so",      "libc-",      "ld-linux",   "ld-",   "ld64.so",
		                                "libstdc++",    "libgcc_s",   "libpthread", "libdl", "librt",
		                                "liblayerprof", "linux-vdso", "[vdso]" };
	const char *base = module ? strrchr(module, '/') : NULL;
	size_t i;

	base = base ? base + 1 : module;
	if (!base || !*base)
		return false;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}
