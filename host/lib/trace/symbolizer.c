/* Maps (process image, runtime address) to the ELF object that holds it and
 * asks that object for the name and line; caches every answer.  Names
 * variables of the objects' data on request (symbolizer_data_name). */
#include "host/lib/trace/symbolizer.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/trace/elfsym.h"
#include "host/lib/util/hashindex.h"

/* Bounds on what a trace may make us hold. */
#define SYMBOLIZER_MAX_MAPS (1u << 16) /* per image */
#define SYMBOLIZER_MAX_IMAGES (1u << 20)
#define SYMBOLIZER_MAX_OBJECTS (1u << 20)
#define SYMBOLIZER_MAX_CACHE (1u << 19) /* answers cached; emptied when full */
#define SYMBOLIZER_FIRST 64u            /* images, objects or answers first allocated */

/* One object file as named by the trace, shared by all images mapping it. */
struct object {
	size_t path_len;
	uint8_t build_id[SYMBOLIZER_BUILD_ID_MAX];
	size_t build_id_len;
	struct elfsym *elf; /* NULL until the first lookup opens it */
	char path[];        /* NUL-terminated copy */
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
	uint32_t id;
	uint32_t gen;     /* bumped by every new map: older cached answers are stale */
	struct map *maps; /* sorted by start, then by arrival */
	size_t nmaps;
	size_t maps_cap;
	uint32_t seq;   /* maps arrived */
	bool has_ended; /* some map was unmapped: code addresses need a tag */
};

struct cache_entry {
	struct image *img;
	uint64_t addr;
	uint64_t elf_addr; /* addr - base of the covering map */
	uint32_t gen;
	int rc;
	struct symbol sym;
};

/* Elements allocated one by one (so that they stay where they are), found
 * through an index. */
struct ptrs {
	void **v; /* owned: n elements, room for cap */
	uint32_t n, cap;
	struct hashindex idx;
};

struct symbolizer {
	unsigned flags;
	bool has_ended; /* some image has an unmapped map */
	char *debug_dir;
	struct ptrs images;        /* of struct image, by id */
	struct ptrs objects;       /* of struct object, by path and build id */
	struct cache_entry *cache; /* the answers: ncache, room for cache_cap */
	uint32_t ncache, cache_cap;
	struct hashindex cache_idx; /* the answers by (image, address) */
	uint64_t maps_added;
};

/* Room for one more of n elements of size bytes in arr (cap allocated,
 * updated): arr itself, or the array grown (arr is then invalid); NULL
 * when memory ran out (arr unchanged). */
static void *array_room(void *arr, uint32_t n, uint32_t *cap, size_t size)
{
	uint32_t grown = *cap ? 2 * *cap : SYMBOLIZER_FIRST;

	if (n < *cap)
		return arr;
	arr = realloc(arr, (size_t)grown * size);
	if (arr)
		*cap = grown;
	return arr;
}

static bool bytes_equal(const void *a, const void *b, size_t len)
{
	return len == 0 || memcmp(a, b, len) == 0;
}

/* The element of t equal to key (eq's ctx is t), in *out: returns 0;
 * else a new one of size bytes, zeroed and owned by t, for the caller to
 * give its key at once: returns 1.  Or -ENOSPC when t has max elements,
 * or -ENOMEM. */
static int ptrs_get(struct ptrs *t, uint64_t hash, hashindex_eq eq, const void *key, uint32_t max, size_t size,
                    void **out)
{
	uint32_t slot;
	void **v;

	if (hashindex_reserve(&t->idx))
		return -ENOMEM;
	slot = hashindex_slot(&t->idx, hash, eq, t, key);
	if (t->idx.val[slot]) {
		*out = t->v[t->idx.val[slot] - 1];
		return 0;
	}
	if (t->n >= max)
		return -ENOSPC;
	v = array_room(t->v, t->n, &t->cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->v = v;
	v[t->n] = calloc(1, size);
	if (!v[t->n])
		return -ENOMEM;
	*out = v[t->n];
	hashindex_put(&t->idx, slot, hash, t->n++);
	return 1;
}

static bool image_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct image *img = ((const struct ptrs *)ctx)->v[item];

	return img->id == *(const uint32_t *)key;
}

static struct image *image_find(struct symbolizer *s, uint32_t id)
{
	int64_t i = hashindex_get(&s->images.idx, hashindex_u64(id), image_eq, &s->images, &id);

	return i < 0 ? NULL : s->images.v[i];
}

static void object_free(struct object *obj)
{
	elfsym_free(obj->elf);
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
	/* the cache has room from the start: emptying it makes room later */
	s->cache = array_room(NULL, 0, &s->cache_cap, sizeof(*s->cache));
	if (!s->debug_dir || !s->cache || hashindex_reserve(&s->cache_idx)) {
		symbolizer_free(s);
		return NULL;
	}
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < s->images.n; i++)
		image_free(s->images.v[i]);
	for (i = 0; i < s->objects.n; i++)
		object_free(s->objects.v[i]);
	free(s->images.v);
	free(s->objects.v);
	free(s->cache);
	hashindex_release(&s->images.idx);
	hashindex_release(&s->objects.idx);
	hashindex_release(&s->cache_idx);
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

/* What an object is found by. */
struct object_key {
	const char *path;
	size_t path_len;
	const uint8_t *build_id;
	size_t build_id_len;
};

static bool object_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct object *obj = ((const struct ptrs *)ctx)->v[item];
	const struct object_key *k = key;

	return obj->path_len == k->path_len && obj->build_id_len == k->build_id_len &&
	       bytes_equal(obj->path, k->path, k->path_len) && bytes_equal(obj->build_id, k->build_id, k->build_id_len);
}

/* Finds or creates the object for (path, build id). */
static int object_get(struct symbolizer *s, const char *path, size_t path_len, const uint8_t *build_id,
                      size_t build_id_len, struct object **out)
{
	struct object_key k = { path, path_len, build_id, build_id_len };
	uint64_t hash = hashindex_bytes(build_id, build_id_len, hashindex_bytes(path, path_len, build_id_len));
	struct object *obj;
	void *e;
	int r = ptrs_get(&s->objects, hash, object_eq, &k, SYMBOLIZER_MAX_OBJECTS, sizeof(*obj) + path_len + 1, &e);

	if (r < 0)
		return r;
	obj = e;
	if (r) {
		if (path_len)
			memcpy(obj->path, path, path_len);
		obj->path[path_len] = '\0';
		obj->path_len = path_len;
		if (build_id_len)
			memcpy(obj->build_id, build_id, build_id_len);
		obj->build_id_len = build_id_len;
	}
	*out = obj;
	return 0;
}

static int image_get(struct symbolizer *s, uint32_t id, struct image **out)
{
	void *e;
	int r = ptrs_get(&s->images, hashindex_u64(id), image_eq, &id, SYMBOLIZER_MAX_IMAGES, sizeof(**out), &e);

	if (r < 0)
		return r;
	*out = e;
	if (r)
		(*out)->id = id;
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

/* Room for one more answer: the cache grown, or emptied once it holds
 * SYMBOLIZER_MAX_CACHE answers or cannot grow (answers can be computed
 * again, memory is bounded).  Pointers to answers become invalid. */
static void cache_make_room(struct symbolizer *s)
{
	struct cache_entry *cache = NULL;

	if (s->ncache < SYMBOLIZER_MAX_CACHE)
		cache = array_room(s->cache, s->ncache, &s->cache_cap, sizeof(*cache));
	if (cache)
		s->cache = cache;
	if (!cache || hashindex_reserve(&s->cache_idx)) {
		hashindex_clear(&s->cache_idx);
		s->ncache = 0;
	}
}

/* What an answer is found by. */
struct cache_key {
	uint64_t addr;
	uint32_t image;
};

static bool cache_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct cache_entry *e = &((const struct symbolizer *)ctx)->cache[item];
	const struct cache_key *k = key;

	return e->addr == k->addr && e->img->id == k->image;
}

/* Finds or fills the cache entry of (image, addr), valid until the next
 * lookup. NULL with *rc set when the image is unknown (not cached: an
 * unknown id costs no memory) or memory ran out. */
static const struct cache_entry *lookup_entry(struct symbolizer *s, uint32_t image, uint64_t addr, int *rc)
{
	struct cache_key k = { addr, image };
	uint64_t hash = hashindex_u64(addr ^ (uint64_t)image << 47);
	struct cache_entry *e;
	struct image *img;
	uint32_t slot = hashindex_slot(&s->cache_idx, hash, cache_eq, s, &k);

	if (s->cache_idx.val[slot]) {
		e = &s->cache[s->cache_idx.val[slot] - 1];
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
	e = &s->cache[s->ncache];
	*rc = lookup_compute(s, img, addr, e);
	if (*rc)
		return NULL;
	e->img = img;
	e->addr = addr;
	e->gen = img->gen;
	slot = hashindex_slot(&s->cache_idx, hash, cache_eq, s, &k); /* the cache may have grown or emptied */
	hashindex_put(&s->cache_idx, slot, hash, s->ncache++);
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

int symbolizer_elf_addr(struct symbolizer *s, uint32_t image, uint64_t addr, const char **module, uint64_t *elf_addr)
{
	const struct cache_entry *e;
	int rc;

	assert(s && module && elf_addr);
	*module = NULL;
	*elf_addr = SYMBOLIZER_ADDR(addr);
	e = lookup_entry(s, image, addr, &rc);
	if (!e)
		return rc;
	if (!e->sym.module)
		return -ENOENT;
	*module = e->sym.module;
	*elf_addr = e->elf_addr;
	return 0;
}

bool symbolizer_data_name(struct symbolizer *s, uint32_t image, uint64_t addr, uint64_t ns, char *buf, size_t size)
{
	const struct map *best = NULL;
	struct elfsym_hit hit, best_hit = { 0 };
	const char *name;
	struct image *img;
	uint64_t off;
	size_t i;

	assert(s && (buf || !size));
	img = image_find(s, image);
	if (!img || !size)
		return false;
	for (i = 0; i < img->nmaps; i++) {
		const struct map *m = &img->maps[i];

		if (m->ended_ns != UINT64_MAX && m->ended_ns <= ns)
			continue; /* unmapped by then: its addresses may be another's */
		if (best && m->seq < best->seq)
			continue;
		/* an object's other segments give the same answer */
		if (best && m->obj == best->obj && m->base == best->base)
			continue;
		if (object_open(s, m->obj))
			return false;
		if (elfsym_find_data(m->obj->elf, addr - m->base, &hit)) {
			best = m;
			best_hit = hit;
		}
	}
	if (!best)
		return false;
	name = best_hit.name;
	if (s->flags & SYMBOLIZER_DEMANGLE) {
		name = elfsym_demangle(best->obj->elf, &best_hit);
		if (!name)
			return false;
	}
	off = addr - best->base - best_hit.start;
	if (off)
		snprintf(buf, size, "%s+0x%" PRIx64, name, off);
	else
		snprintf(buf, size, "%s", name);
	return true;
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
