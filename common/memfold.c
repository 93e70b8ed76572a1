/* The folding stage of heap operations (see memfold.h).  Events wait in a
 * queue (a power-of-two ring indexed by sequence number) until they are
 * older than the lifetime; the allocations among them that may still be
 * folded are found by pointer in an open-addressing map of sequence
 * numbers; folded blocks are counted per stack id in a site table. */
#include <stdlib.h>
#include <string.h>

#include "common/memfold.h"

#define QUEUE_MIN 1024u
#define SITES_MIN 256u

struct held {
	uint64_t ns;
	uint64_t a, b, c;                /* ENTRY/EXIT/LONGJMP: a = value; ALLOC: ptr, size, old */
	uint64_t count, bytes, lifetime; /* FOLD passing through */
	uint32_t stack;
	uint8_t type, op, flags, folded;
};

/* A foldable allocation in the queue: ptr 0 is an empty slot. */
struct pending {
	uint64_t ptr;
	uint64_t seq;
};

struct site {
	uint32_t stack;
	uint32_t used;
	uint64_t count, bytes;
};

struct memfold {
	uint64_t lifetime;
	struct memfold_sink sink;
	struct held *q;
	uint32_t cap;        /* queue slots, a power of two */
	uint64_t head, tail; /* sequence numbers of the held events: [head, tail) */
	struct pending *map; /* 2 * cap slots */
	struct site *sites;
	uint32_t sites_cap, nsites;
	uint64_t now_ns;       /* time of the last event let go (written or folded) */
	uint64_t next_fold_ns; /* when the next FOLD events are due; 0: none folded */
	uint64_t seen_ns;      /* time of the latest event taken in */
	struct memfold_stats stats;
};

static uint64_t ptr_hash(uint64_t p)
{
	return (p * 0x9e3779b97f4a7c15ull) >> 17;
}

static uint32_t map_cap(const struct memfold *f)
{
	return 2 * f->cap;
}

static struct pending *map_find(struct memfold *f, uint64_t ptr)
{
	uint32_t mask = map_cap(f) - 1, i = (uint32_t)ptr_hash(ptr) & mask;

	for (; f->map[i].ptr; i = (i + 1) & mask)
		if (f->map[i].ptr == ptr)
			return &f->map[i];
	return NULL;
}

static void map_put(struct memfold *f, uint64_t ptr, uint64_t seq)
{
	uint32_t mask = map_cap(f) - 1, i = (uint32_t)ptr_hash(ptr) & mask;

	for (; f->map[i].ptr; i = (i + 1) & mask)
		if (f->map[i].ptr == ptr)
			break;
	f->map[i].ptr = ptr;
	f->map[i].seq = seq;
}

/* Linear probing without tombstones: the entries after the hole that
 * belong before it move back. */
static void map_del(struct memfold *f, struct pending *e)
{
	uint32_t mask = map_cap(f) - 1, i = (uint32_t)(e - f->map), j = i;

	for (;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (!f->map[j].ptr)
			break;
		home = (uint32_t)ptr_hash(f->map[j].ptr) & mask;
		/* j's entry may fill the hole at i when its home is not in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			f->map[i] = f->map[j];
			i = j;
		}
	}
	f->map[i].ptr = 0;
}

static struct held *at(struct memfold *f, uint64_t seq)
{
	return &f->q[seq & (f->cap - 1)];
}

static uint32_t site_hash(uint32_t stack)
{
	return stack * 0x9e3779b1u;
}

/* Doubles the site table up to twice MEMFOLD_SITES_MAX slots. */
static bool sites_grow(struct memfold *f)
{
	uint32_t cap = f->sites_cap ? f->sites_cap * 2 : SITES_MIN;
	struct site *s;

	if (cap > 2 * MEMFOLD_SITES_MAX || !(s = calloc(cap, sizeof(*s))))
		return false;
	for (uint32_t k = 0; k < f->sites_cap; k++) {
		uint32_t i;

		if (!f->sites[k].used)
			continue;
		for (i = site_hash(f->sites[k].stack) & (cap - 1); s[i].used; i = (i + 1) & (cap - 1))
			;
		s[i] = f->sites[k];
	}
	free(f->sites);
	f->sites = s;
	f->sites_cap = cap;
	return true;
}

/* The site of a stack id, made when new; NULL when the table is full. */
static struct site *site_get(struct memfold *f, uint32_t stack)
{
	uint32_t mask, i;

	if (f->nsites * 2 >= f->sites_cap && !sites_grow(f) && !f->sites)
		return NULL;
	mask = f->sites_cap - 1;
	for (i = site_hash(stack) & mask; f->sites[i].used; i = (i + 1) & mask)
		if (f->sites[i].stack == stack)
			return &f->sites[i];
	if (f->nsites * 2 >= f->sites_cap)
		return NULL; /* full at its largest */
	f->sites[i].used = 1;
	f->sites[i].stack = stack;
	f->nsites++;
	return &f->sites[i];
}

static void emit(struct memfold *f, const struct held *h)
{
	struct memevent m;

	if (h->type != LP_EV_ALLOC) {
		f->sink.event(f->sink.ctx, h->ns, h->type, h->a, NULL);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.op = h->op;
	m.flags = h->flags;
	m.ptr = h->a;
	m.size = h->b;
	m.old = h->c;
	m.stack = h->stack;
	m.count = h->count;
	m.bytes = h->bytes;
	m.lifetime_ns = h->lifetime;
	f->sink.event(f->sink.ctx, h->ns, LP_EV_ALLOC, 0, &m);
}

/* A FOLD for every site with blocks folded since its last one. */
static void emit_folds(struct memfold *f)
{
	for (uint32_t i = 0; i < f->sites_cap; i++) {
		struct site *s = &f->sites[i];
		struct memevent m;

		if (!s->used || !s->count)
			continue;
		memset(&m, 0, sizeof(m));
		m.op = LP_MEM_FOLD;
		m.stack = s->stack;
		m.count = s->count;
		m.bytes = s->bytes;
		m.lifetime_ns = f->lifetime;
		f->sink.event(f->sink.ctx, f->now_ns, LP_EV_ALLOC, 0, &m);
		f->stats.folds++;
		s->count = s->bytes = 0;
	}
	f->next_fold_ns = 0;
}

/* Writes out the oldest held event. */
static void pop(struct memfold *f)
{
	struct held *h = at(f, f->head);

	if (h->ns > f->now_ns)
		f->now_ns = h->ns;
	if (h->type == LP_EV_ALLOC && !h->folded && h->a) {
		struct pending *p = map_find(f, h->a);

		if (p && p->seq == f->head)
			map_del(f, p);
	}
	if (!h->folded)
		emit(f, h);
	f->head++;
}

/* Doubles the queue (and the map) up to MEMFOLD_QUEUE_MAX; false when it
 * cannot grow. */
static bool grow(struct memfold *f)
{
	uint32_t cap = f->cap * 2, mcap = 2 * cap;
	struct held *q;
	struct pending *map;

	if (cap > MEMFOLD_QUEUE_MAX)
		return false;
	q = malloc((size_t)cap * sizeof(*q));
	map = calloc(mcap, sizeof(*map));
	if (!q || !map) {
		free(q);
		free(map);
		return false;
	}
	for (uint64_t s = f->head; s != f->tail; s++)
		q[s & (cap - 1)] = *at(f, s);
	for (uint32_t i = 0; i < map_cap(f); i++) {
		uint32_t j;

		if (!f->map[i].ptr)
			continue;
		for (j = (uint32_t)ptr_hash(f->map[i].ptr) & (mcap - 1); map[j].ptr; j = (j + 1) & (mcap - 1))
			;
		map[j] = f->map[i];
	}
	free(f->q);
	free(f->map);
	f->q = q;
	f->map = map;
	f->cap = cap;
	return true;
}

static struct held *push(struct memfold *f, uint64_t ns, uint8_t type)
{
	struct held *h;

	if (f->tail - f->head == f->cap && !grow(f))
		pop(f);
	h = at(f, f->tail++);
	memset(h, 0, sizeof(*h));
	h->ns = ns;
	h->type = type;
	return h;
}

struct memfold *memfold_new(uint64_t lifetime_ns, const struct memfold_sink *sink)
{
	struct memfold *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->lifetime = lifetime_ns;
	f->sink = *sink;
	f->cap = QUEUE_MIN;
	f->q = malloc((size_t)f->cap * sizeof(*f->q));
	f->map = calloc(map_cap(f), sizeof(*f->map));
	if (!f->q || !f->map) {
		memfold_free(f);
		return NULL;
	}
	return f;
}

void memfold_free(struct memfold *f)
{
	if (!f)
		return;
	free(f->q);
	free(f->map);
	free(f->sites);
	free(f);
}

void memfold_expire(struct memfold *f, uint64_t now)
{
	while (f->head != f->tail && at(f, f->head)->ns + f->lifetime < now)
		pop(f);
	if (f->next_fold_ns && f->now_ns >= f->next_fold_ns)
		emit_folds(f);
}

void memfold_func(struct memfold *f, uint64_t ns, uint8_t type, uint64_t value)
{
	if (ns > f->seen_ns)
		f->seen_ns = ns;
	push(f, ns, type)->a = value;
	memfold_expire(f, ns);
}

/* The release that matches each allocation. */
static uint8_t release_of(uint8_t op)
{
	switch (op) {
	case LP_MEM_MALLOC:
	case LP_MEM_CALLOC:
	case LP_MEM_ALIGNED:
		return LP_MEM_FREE;
	case LP_MEM_NEW:
		return LP_MEM_DELETE;
	case LP_MEM_NEW_ARRAY:
		return LP_MEM_DELETE_ARRAY;
	default:
		return 0;
	}
}

/* A release of a held allocation: true when the block is folded. */
static bool fold(struct memfold *f, uint64_t ns, const struct memevent *m)
{
	struct pending *p = m->ptr && !(m->flags & LP_MEM_KEPT) ? map_find(f, m->ptr) : NULL;
	struct held *a;
	struct site *s;

	if (!p)
		return false;
	a = at(f, p->seq);
	map_del(f, p); /* released: whatever happens, no longer foldable */
	if (release_of(a->op) != m->op || ns - a->ns > f->lifetime || !(s = site_get(f, a->stack)))
		return false;
	a->folded = 1;
	s->count++;
	s->bytes += a->b;
	f->stats.blocks++;
	f->stats.bytes += a->b;
	if (!f->next_fold_ns)
		f->next_fold_ns = ns + MEMFOLD_PERIOD_NS;
	return true;
}

void memfold_mem(struct memfold *f, uint64_t ns, const struct memevent *m)
{
	struct held *h;

	if (ns > f->seen_ns)
		f->seen_ns = ns;
	if (m->op == LP_MEM_REALLOC && m->old) {
		/* the old block is released, but the REALLOC names it: it stays */
		struct pending *p = map_find(f, m->old);

		if (p)
			map_del(f, p);
	}
	if ((m->op == LP_MEM_FREE || m->op == LP_MEM_DELETE || m->op == LP_MEM_DELETE_ARRAY) && fold(f, ns, m)) {
		memfold_expire(f, ns);
		return;
	}
	h = push(f, ns, LP_EV_ALLOC);
	h->op = m->op;
	h->flags = (uint8_t)m->flags;
	h->a = m->ptr;
	h->b = m->size;
	h->c = m->old;
	h->stack = m->stack;
	h->count = m->count;
	h->bytes = m->bytes;
	h->lifetime = m->lifetime_ns;
	if (release_of(m->op) && m->ptr && !(m->flags & (LP_MEM_FAILED | LP_MEM_KEPT)))
		map_put(f, m->ptr, f->tail - 1);
	memfold_expire(f, ns);
}

void memfold_flush(struct memfold *f, bool counts)
{
	while (f->head != f->tail)
		pop(f);
	/* nothing is held: the counts may take the latest time seen (that of
	 * the last release folded, maybe) */
	if (f->seen_ns > f->now_ns)
		f->now_ns = f->seen_ns;
	if (counts)
		emit_folds(f);
}

void memfold_get_stats(const struct memfold *f, struct memfold_stats *out)
{
	*out = f->stats;
}

uint64_t memfold_oldest_ns(const struct memfold *f)
{
	return f->head != f->tail ? f->q[f->head & (f->cap - 1)].ns : UINT64_MAX;
}
