/* The folding stage of heap operations (see memfold.h).  Each stage holds
 * its stream's events in a queue (a power-of-two ring indexed by sequence
 * number): [head, decided) are paired, [decided, tail) not yet.  The
 * process pairs the stages' events in time order (a merge of their queues)
 * through an open-addressing map from pointer to the pending allocation;
 * folded blocks are counted per stack id in the allocating stage's site
 * table. */
#include <stdlib.h>
#include <string.h>

#include "common/memfold.h"

#define QUEUE_MIN 1024u
#define SITES_MIN 256u
#define PENDING_MIN 1024u
#define STAGES_MIN 4u

struct held {
	uint64_t ns;
	uint64_t a, b, c;                /* ENTRY/EXIT/LONGJMP: a = value; ALLOC: ptr, size, old */
	uint64_t count, bytes, lifetime; /* FOLD passing through */
	uint32_t stack;
	uint8_t type, op, flags, folded;
};

/* A held allocation that may still fold: ptr 0 is an empty slot. */
struct pending {
	uint64_t ptr;
	uint64_t seq;
	uint64_t ns;
	struct memfold *stage;
};

struct site {
	uint32_t stack;
	uint32_t used;
	uint64_t count, bytes;
};

struct memfold_proc {
	uint64_t lifetime;
	struct pending *map;
	uint32_t map_cap, map_used; /* slots (a power of two), entries */
	struct memfold **stages;
	uint32_t nstages, stages_cap;
	uint64_t paired_ns; /* events up to here are paired (or cannot be) */
	uint64_t order_ns;  /* latest time paired or let go unpaired */
};

struct memfold {
	struct memfold_proc *proc;
	struct memfold_sink sink;
	struct held *q;
	uint32_t cap;                 /* queue slots, a power of two */
	uint64_t head, decided, tail; /* sequence numbers */
	struct site *sites;
	uint32_t sites_cap, nsites;
	uint64_t now_ns;       /* time of the last event let go (written or folded) */
	uint64_t next_fold_ns; /* when the next FOLD events are due; 0: none folded */
	uint64_t seen_ns;      /* time of the latest event taken in */
	struct memfold_stats stats;
};

/* ---- the process's map of pending allocations ------------------------- */

static uint64_t ptr_hash(uint64_t p)
{
	return (p * 0x9e3779b97f4a7c15ull) >> 17;
}

static struct pending *map_find(struct memfold_proc *p, uint64_t ptr)
{
	uint32_t mask = p->map_cap - 1, i = (uint32_t)ptr_hash(ptr) & mask;

	for (; p->map[i].ptr; i = (i + 1) & mask)
		if (p->map[i].ptr == ptr)
			return &p->map[i];
	return NULL;
}

/* Doubles the map up to twice MEMFOLD_PENDING_MAX slots. */
static bool map_grow(struct memfold_proc *p)
{
	uint32_t cap = p->map_cap * 2;
	struct pending *map;

	if (cap > 2 * MEMFOLD_PENDING_MAX || !(map = calloc(cap, sizeof(*map))))
		return false;
	for (uint32_t k = 0; k < p->map_cap; k++) {
		uint32_t j;

		if (!p->map[k].ptr)
			continue;
		for (j = (uint32_t)ptr_hash(p->map[k].ptr) & (cap - 1); map[j].ptr; j = (j + 1) & (cap - 1))
			;
		map[j] = p->map[k];
	}
	free(p->map);
	p->map = map;
	p->map_cap = cap;
	return true;
}

/* Linear probing without tombstones: the entries after the hole that
 * belong before it move back. */
static void map_del(struct memfold_proc *p, struct pending *e)
{
	uint32_t mask = p->map_cap - 1, i = (uint32_t)(e - p->map), j = i;

	for (;;) {
		uint32_t home;

		j = (j + 1) & mask;
		if (!p->map[j].ptr)
			break;
		home = (uint32_t)ptr_hash(p->map[j].ptr) & mask;
		/* j's entry may fill the hole at i when its home is not in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			p->map[i] = p->map[j];
			i = j;
		}
	}
	p->map[i].ptr = 0;
	p->map_used--;
}

/* The allocation of ptr at ns in stage f is the block's latest: it
 * replaces an older one.  When the map is full it is not foldable. */
static void map_put(struct memfold_proc *p, uint64_t ptr, struct memfold *f, uint64_t seq, uint64_t ns)
{
	struct pending *e = map_find(p, ptr);
	uint32_t mask, i;

	if (!e) {
		if (2 * (p->map_used + 1) > p->map_cap && !map_grow(p))
			return;
		mask = p->map_cap - 1;
		for (i = (uint32_t)ptr_hash(ptr) & mask; p->map[i].ptr; i = (i + 1) & mask)
			;
		e = &p->map[i];
		p->map_used++;
	}
	e->ptr = ptr;
	e->seq = seq;
	e->ns = ns;
	e->stage = f;
}

/* Something at ns happened to ptr outside the pairing: the allocation of
 * it known until then cannot fold any more. */
static void map_forget(struct memfold_proc *p, uint64_t ptr, uint64_t ns)
{
	struct pending *e = ptr ? map_find(p, ptr) : NULL;

	if (e && e->ns <= ns)
		map_del(p, e);
}

/* ---- a stage's queue and sites ------------------------------------------ */

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
		m.lifetime_ns = f->proc->lifetime;
		f->sink.event(f->sink.ctx, f->now_ns, LP_EV_ALLOC, 0, &m);
		f->stats.folds++;
		s->count = s->bytes = 0;
	}
	f->next_fold_ns = 0;
}

/* ---- pairing ------------------------------------------------------------ */

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

static bool is_release(uint8_t op)
{
	return op == LP_MEM_FREE || op == LP_MEM_DELETE || op == LP_MEM_DELETE_ARRAY;
}

/* An event that is not paired in time order (it came in behind the
 * pairing, or went out before it): its pointers' pending allocations
 * cannot fold, and every event before it that is not paired yet will not
 * be paired either. */
static void unpaired(struct memfold_proc *p, const struct held *h)
{
	if (h->type == LP_EV_ALLOC) {
		map_forget(p, h->a, h->ns);
		if (h->op == LP_MEM_REALLOC)
			map_forget(p, h->c, h->ns);
	}
	if (h->ns > p->order_ns)
		p->order_ns = h->ns;
}

/* Pairs event seq of stage f, the next in the process's time order. */
static void pair(struct memfold *f, uint64_t seq)
{
	struct memfold_proc *p = f->proc;
	struct held *h = at(f, seq), *a;
	struct pending *e;
	struct memfold *af;
	struct site *s;

	if (h->ns < p->order_ns) {
		unpaired(p, h);
		return;
	}
	p->order_ns = h->ns;
	if (h->type != LP_EV_ALLOC)
		return;
	if (h->op == LP_MEM_REALLOC) {
		/* the old block is released, but the REALLOC names it: it stays */
		map_forget(p, h->c, h->ns);
		map_forget(p, h->a, h->ns);
		return;
	}
	if (release_of(h->op)) {
		if (h->a && !(h->flags & (LP_MEM_FAILED | LP_MEM_KEPT | LP_MEM_BEFORE)))
			map_put(p, h->a, f, seq, h->ns);
		else
			map_forget(p, h->a, h->ns);
		return;
	}
	if (!is_release(h->op) || !h->a || !(e = map_find(p, h->a)))
		return;
	af = e->stage;
	a = at(af, e->seq);
	map_del(p, e); /* released: whatever happens, no longer foldable */
	if ((h->flags & LP_MEM_KEPT) || release_of(a->op) != h->op || h->ns - a->ns > p->lifetime ||
	    !(s = site_get(af, a->stack)))
		return;
	a->folded = 1;
	h->folded = 1;
	s->count++;
	s->bytes += a->b;
	af->stats.blocks++;
	af->stats.bytes += a->b;
	if (!af->next_fold_ns)
		af->next_fold_ns = h->ns + MEMFOLD_PERIOD_NS;
}

/* Pairs the events of all stages up to `upto`, in time order: a merge of
 * the stages' queues, which are each in time order. */
static void proc_pair(struct memfold_proc *p, uint64_t upto)
{
	for (;;) {
		struct memfold *best = NULL;
		uint64_t best_ns = UINT64_MAX, next_ns = upto;

		for (uint32_t i = 0; i < p->nstages; i++) {
			struct memfold *f = p->stages[i];
			uint64_t ns;

			if (f->decided == f->tail || (ns = at(f, f->decided)->ns) > upto)
				continue;
			if (ns < best_ns) {
				if (best && best_ns < next_ns)
					next_ns = best_ns;
				best = f;
				best_ns = ns;
			} else if (ns < next_ns) {
				next_ns = ns;
			}
		}
		if (!best)
			break;
		/* the earliest stream goes on up to the next one's event */
		do
			pair(best, best->decided++);
		while (best->decided != best->tail && at(best, best->decided)->ns <= next_ns);
	}
	if (upto > p->paired_ns)
		p->paired_ns = upto;
}

/* Writes out the oldest held event; one not paired yet goes out unpaired. */
static void pop(struct memfold *f)
{
	struct held *h = at(f, f->head);

	if (f->head == f->decided) {
		unpaired(f->proc, h);
		f->decided++;
	} else if (h->type == LP_EV_ALLOC && !h->folded && h->a && release_of(h->op)) {
		struct pending *e = map_find(f->proc, h->a);

		if (e && e->stage == f && e->seq == f->head)
			map_del(f->proc, e);
	}
	if (h->ns > f->now_ns)
		f->now_ns = h->ns;
	if (!h->folded)
		emit(f, h);
	f->head++;
}

/* Writes out the events whose fate is known: paired and older than the
 * lifetime at the pairing point (no release can fold them any more). */
static void stage_expire(struct memfold *f)
{
	uint64_t paired = f->proc->paired_ns, life = f->proc->lifetime;

	while (f->head != f->decided && at(f, f->head)->ns + life < paired)
		pop(f);
	/* a stage with nothing held may date its counts up to where no
	 * event of it can come before */
	if (f->head == f->tail && paired > life && paired - life > f->now_ns)
		f->now_ns = paired - life;
	if (f->next_fold_ns && f->now_ns >= f->next_fold_ns)
		emit_folds(f);
}

/* Doubles the queue up to MEMFOLD_QUEUE_MAX; false when it cannot grow.
 * The map holds sequence numbers, which stay. */
static bool grow(struct memfold *f)
{
	uint32_t cap = f->cap * 2;
	struct held *q;

	if (cap > MEMFOLD_QUEUE_MAX || !(q = malloc((size_t)cap * sizeof(*q))))
		return false;
	for (uint64_t s = f->head; s != f->tail; s++)
		q[s & (cap - 1)] = *at(f, s);
	free(f->q);
	f->q = q;
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
	if (ns > f->seen_ns)
		f->seen_ns = ns;
	return h;
}

/* After an event came in: a stream alone in its process is paired as it
 * comes; others wait for memfold_proc_expire. */
static void arrived(struct memfold *f, uint64_t ns)
{
	if (f->proc->nstages == 1) {
		proc_pair(f->proc, ns);
		stage_expire(f);
	}
}

/* ---- the API ------------------------------------------------------------ */

struct memfold_proc *memfold_proc_new(uint64_t lifetime_ns)
{
	struct memfold_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->lifetime = lifetime_ns;
	p->map_cap = PENDING_MIN;
	p->map = calloc(p->map_cap, sizeof(*p->map));
	if (!p->map) {
		free(p);
		return NULL;
	}
	return p;
}

void memfold_proc_free(struct memfold_proc *p)
{
	if (!p)
		return;
	free(p->map);
	free(p->stages);
	free(p);
}

uint32_t memfold_proc_stages(const struct memfold_proc *p)
{
	return p->nstages;
}

void memfold_proc_expire(struct memfold_proc *p, uint64_t now)
{
	proc_pair(p, now);
	for (uint32_t i = 0; i < p->nstages; i++)
		stage_expire(p->stages[i]);
}

struct memfold *memfold_new(struct memfold_proc *p, const struct memfold_sink *sink)
{
	struct memfold *f;

	if (p->nstages == p->stages_cap) {
		uint32_t cap = p->stages_cap ? 2 * p->stages_cap : STAGES_MIN;
		struct memfold **n = realloc(p->stages, cap * sizeof(*n));

		if (!n)
			return NULL;
		p->stages = n;
		p->stages_cap = cap;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->proc = p;
	f->sink = *sink;
	f->cap = QUEUE_MIN;
	f->q = malloc((size_t)f->cap * sizeof(*f->q));
	if (!f->q) {
		free(f);
		return NULL;
	}
	p->stages[p->nstages++] = f;
	return f;
}

void memfold_free(struct memfold *f)
{
	struct memfold_proc *p;

	if (!f)
		return;
	p = f->proc;
	/* its pending allocations go with it */
	for (uint32_t i = 0; i < p->map_cap; i++)
		if (p->map[i].ptr && p->map[i].stage == f) {
			map_del(p, &p->map[i]);
			i--; /* an entry may have moved into the hole */
		}
	for (uint32_t i = 0; i < p->nstages; i++)
		if (p->stages[i] == f) {
			p->stages[i] = p->stages[--p->nstages];
			break;
		}
	free(f->q);
	free(f->sites);
	free(f);
}

void memfold_func(struct memfold *f, uint64_t ns, uint8_t type, uint64_t value)
{
	push(f, ns, type)->a = value;
	arrived(f, ns);
}

void memfold_mem(struct memfold *f, uint64_t ns, const struct memevent *m)
{
	struct held *h = push(f, ns, LP_EV_ALLOC);

	h->op = m->op;
	h->flags = (uint8_t)m->flags;
	h->a = m->ptr;
	h->b = m->size;
	h->c = m->old;
	h->stack = m->stack;
	h->count = m->count;
	h->bytes = m->bytes;
	h->lifetime = m->lifetime_ns;
	arrived(f, ns);
}

void memfold_flush(struct memfold *f, bool counts)
{
	/* what can be paired now is, so that a stream alone folds its last
	 * blocks */
	if (f->proc->nstages == 1)
		proc_pair(f->proc, f->seen_ns);
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
