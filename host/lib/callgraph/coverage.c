/* layerprof coverage's model: one pass over a trace counts the entries of
 * each traced function, each caller-callee pair and the executed call
 * paths from a root; then the static call graph of the objects those
 * functions lie in says what could have run and what did not. */
#include "host/lib/callgraph/coverage.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/callgraph/cgout.h"
#include "host/lib/callgraph/coverage_impl.h"
#include "host/lib/trace/cxxname.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/error.h"
#include "host/lib/util/hashindex.h"

/* Bounds on what a trace may make us hold. */
#define COV_KEYS_MAX (1u << 24)  /* distinct traced functions (image, address) */
#define COV_PAIRS_MAX (1u << 26) /* distinct caller-callee pairs of them */
#define COV_TRIE_MAX (1u << 22)  /* executed call paths kept for --paths */
#define COV_MODULES_MAX (1u << 16)
#define COV_NAME_MAX 4096u /* room for one display name */

/* A frame's place in the executed path trie: outside every path from the
 * root, or inside one but below what the path tree can show. */
#define TRIE_OUT CG_NONE
#define TRIE_BLOCKED (CG_NONE - 1)

/* A traced function as the trace names it: (image, entry address). */
struct cov_key {
	uint32_t image;
	uint64_t addr;
	uint64_t calls;     /* entries, not counting frames a fork inherited */
	const char *module; /* the symbolizer's; NULL: no map covered it yet */
	uint64_t elf;       /* ELF address in module */
	uint32_t obj, func; /* in the set; CG_NONE: unread or in no function */
	bool root;          /* the root of --paths */
	uint64_t maps;      /* symbolizer_map_count when last resolved */
};

/* An executed call: the callee's entry with the caller's frame enclosing
 * it in the same thread. */
struct cov_pair {
	uint32_t caller, callee; /* keys */
	uint64_t calls;
};

/* A node of the executed path trie: node 0 stands above the root's
 * occurrences; a node's path is its parent's and one more function. */
struct cov_tnode {
	uint32_t parent, key, depth;
	bool open; /* may have children: within the depth, not recursive */
	uint64_t calls;
};

struct cov_frame {
	uint32_t key, trie;
	bool counted; /* its entry counted (not a fork's copy) */
	bool pending; /* its key had no map yet: its trie place may change */
};

/* A thread's open frames (walk_stream.user), by depth. */
struct cov_stack {
	struct cov_frame *f;
	uint32_t n, cap;
	uint32_t pending; /* frames pending */
	uint64_t maps;    /* symbolizer_map_count when they were last tried */
};

/* An object path the trace named, and what became of it. */
struct cov_module {
	const char *module; /* the symbolizer's */
	uint32_t obj;       /* in the set; CG_NONE: could not be read */
};

/* The state of one coverage_build. */
struct cov_build {
	struct coverage *c;
	const struct coverage_opts *o;
	struct walk w;
	bool walk_open;
	struct cov_key *keys;
	uint32_t nkeys, keys_cap;
	struct hashindex key_idx;
	struct cov_pair *pairs;
	uint32_t npairs, pairs_cap;
	struct hashindex pair_idx;
	struct cov_tnode *trie;
	uint32_t ntrie, trie_cap;
	struct hashindex trie_idx;
	bool trie_full;
	struct cov_module *mods;
	uint32_t nmods, mods_cap;
	uint32_t depth, max_nodes;
	int rc; /* the first failure, stops the walk at the next chunk */
	char *err;
	size_t errlen;
};

/* Room for one more of n elements of size bytes in *arr (at most max).
 * Returns 0, -E2BIG or -ENOMEM (*arr unchanged). */
static int room(void *arr, uint32_t n, uint32_t *cap, size_t size, uint32_t max)
{
	void **p = arr, *grown;
	uint32_t want;

	if (n < *cap)
		return 0;
	if (n >= max)
		return -E2BIG;
	want = *cap ? *cap * 2 : 64;
	if (want > max)
		want = max;
	grown = realloc(*p, (size_t)want * size);
	if (!grown)
		return -ENOMEM;
	*p = grown;
	*cap = want;
	return 0;
}

static void build_fail(struct cov_build *b, int rc, const char *what)
{
	if (b->rc)
		return;
	b->rc = rc;
	if (rc == -ENOMEM)
		error_set(b->err, b->errlen, rc, "cannot read trace '%s': out of memory", b->c->trace);
	else if (rc == -E2BIG)
		error_set(b->err, b->errlen, rc, "trace '%s' has more %s than coverage holds", b->c->trace, what);
}

/* The function of o named name: its raw name, else its demangled name,
 * whole or without return type and parameters.  CG_NONE when none. */
static uint32_t find_by_name(const struct cg_object *o, const char *name)
{
	uint32_t i = cg_object_lookup(o, name);
	size_t len = strlen(name);

	for (i = i != CG_NONE ? i : 0; i < o->nfuncs && strcmp(o->funcs[i].name, name); i++) {
		char buf[COV_NAME_MAX];
		const char *d = cxxname_demangle(o->funcs[i].name, buf, sizeof(buf));
		struct cxxname n;

		if (d == o->funcs[i].name)
			continue;
		cxxname_split(d, &n);
		if (!strcmp(d, name) || (n.params - n.start == len && !memcmp(d + n.start, name, len)))
			break;
	}
	return i < o->nfuncs ? i : CG_NONE;
}

/* The root of the path tree in program o: o->paths' name, else main, else
 * the function holding the entry point. */
static int find_root(struct cov_build *b, uint32_t obj)
{
	const struct cg_object *o = b->c->set.objs[obj];
	struct coverage *c = b->c;
	uint32_t i;

	if (b->o->root) {
		c->root = find_by_name(o, b->o->root);
		if (c->root == CG_NONE)
			return error_set(b->err, b->errlen, -EINVAL, "no function '%s' in '%s'", b->o->root,
			                 c->objs[obj].path);
	} else if (o->main != CG_NONE) {
		c->root = o->main;
	} else {
		for (i = 0; i < o->nfuncs && !(o->funcs[i].flags & CG_FUNC_ENTRY); i++)
			;
		if (i < o->nfuncs)
			c->root = i;
		else
			error_warn(b->o->warn, "warning: no call paths: '%s' has neither main nor an entry point",
			           c->objs[obj].path);
	}
	c->prog = obj;
	return 0;
}

/* The set's object for the trace's module path: read on first use.
 * CG_NONE when it cannot be read (warned once) or memory ran out. */
static uint32_t module_open(struct cov_build *b, const char *module)
{
	struct coverage *c = b->c;
	char err[LP_ERROR_MAX];
	const char *sysroot = b->o->sysroot;
	struct cov_module *m;
	char *path = NULL;
	uint32_t i, obj = CG_NONE;
	int r;

	for (i = 0; i < b->nmods; i++)
		if (b->mods[i].module == module)
			return b->mods[i].obj;
	r = room(&b->mods, b->nmods, &b->mods_cap, sizeof(*b->mods), COV_MODULES_MAX);
	if (r) {
		build_fail(b, r, "objects");
		return CG_NONE;
	}
	m = &b->mods[b->nmods++];
	m->module = module;
	m->obj = CG_NONE;
	if (!module[0])
		return CG_NONE; /* the trace names no file: its addresses are unmatched */
	if (sysroot && sysroot[0]) {
		path = malloc(strlen(sysroot) + strlen(module) + 1);
		if (!path) {
			build_fail(b, -ENOMEM, NULL);
			return CG_NONE;
		}
		strcpy(path, sysroot);
		strcat(path, module);
	}
	r = cg_set_add(&c->set, path ? path : module, &obj, err, sizeof(err));
	if (r && r != -ENOMEM) {
		error_warn(b->o->warn, "cannot read '%s': %s", path ? path : module, err);
		c->unread++;
	}
	free(path);
	if (r == -ENOMEM)
		build_fail(b, r, NULL);
	if (r)
		return CG_NONE;
	if (obj >= c->nobjs) {
		/* a new object: its counts, and the path the trace gave it */
		struct cov_obj *objs = realloc(c->objs, (size_t)(obj + 1) * sizeof(*objs));

		if (!objs) {
			build_fail(b, -ENOMEM, NULL);
			return CG_NONE;
		}
		c->objs = objs;
		memset(&objs[c->nobjs], 0, (obj + 1 - c->nobjs) * sizeof(*objs));
		c->nobjs = obj + 1;
		objs[obj].path = strdup(module);
		objs[obj].calls = calloc(c->set.objs[obj]->nfuncs + 1, sizeof(uint64_t));
		if (!objs[obj].path || !objs[obj].calls) {
			build_fail(b, -ENOMEM, NULL);
			return CG_NONE;
		}
		if (b->o->paths && c->prog == CG_NONE && !c->set.objs[obj]->shared) {
			r = find_root(b, obj);
			if (r)
				b->rc = r;
		}
	}
	m->obj = obj;
	return obj;
}

/* Finds key k's object and function, when a map covers its address. */
static void key_resolve(struct cov_build *b, uint32_t k)
{
	struct cov_key *key = &b->keys[k];
	const char *module;
	uint64_t elf;
	int r = symbolizer_elf_addr(b->w.sym, key->image, key->addr, &module, &elf);

	key->maps = symbolizer_map_count(b->w.sym);
	if (r == -ENOMEM)
		build_fail(b, r, NULL);
	if (r)
		return;
	key = &b->keys[k];
	key->module = module;
	key->elf = elf;
	key->obj = module_open(b, module);
	if (key->obj == CG_NONE)
		return;
	key->func = cg_object_find(b->c->set.objs[key->obj], elf);
	key->root = b->o->paths && key->obj == b->c->prog && key->func == b->c->root && key->func != CG_NONE;
}

static bool key_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct cov_key *a = &((const struct cov_build *)ctx)->keys[item], *k = key;

	return a->addr == k->addr && a->image == k->image;
}

/* The key of (image, addr), made and resolved on first sight; CG_NONE
 * when the bounds or memory ran out (b->rc). */
static uint32_t key_get(struct cov_build *b, uint32_t image, uint64_t addr)
{
	struct cov_key k = { .image = image, .addr = addr, .obj = CG_NONE, .func = CG_NONE };
	uint64_t hash = hashindex_u64(addr ^ (uint64_t)image << 47);
	uint32_t slot;
	int r;

	if (hashindex_reserve(&b->key_idx)) {
		build_fail(b, -ENOMEM, NULL);
		return CG_NONE;
	}
	slot = hashindex_slot(&b->key_idx, hash, key_eq, b, &k);
	if (b->key_idx.val[slot]) {
		uint32_t i = b->key_idx.val[slot] - 1;

		/* no map covered it: one may have come since */
		if (!b->keys[i].module && b->keys[i].maps != symbolizer_map_count(b->w.sym))
			key_resolve(b, i);
		return i;
	}
	r = room(&b->keys, b->nkeys, &b->keys_cap, sizeof(*b->keys), COV_KEYS_MAX);
	if (r) {
		build_fail(b, r, "functions");
		return CG_NONE;
	}
	b->keys[b->nkeys] = k;
	hashindex_put(&b->key_idx, slot, hash, b->nkeys);
	key_resolve(b, b->nkeys);
	return b->nkeys++;
}

static bool pair_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct cov_pair *a = &((const struct cov_build *)ctx)->pairs[item], *k = key;

	return a->caller == k->caller && a->callee == k->callee;
}

static void pair_count(struct cov_build *b, uint32_t caller, uint32_t callee)
{
	struct cov_pair k = { caller, callee, 0 };
	uint64_t hash = hashindex_u64((uint64_t)caller << 32 | callee);
	uint32_t slot;
	int r;

	if (hashindex_reserve(&b->pair_idx)) {
		build_fail(b, -ENOMEM, NULL);
		return;
	}
	slot = hashindex_slot(&b->pair_idx, hash, pair_eq, b, &k);
	if (b->pair_idx.val[slot]) {
		b->pairs[b->pair_idx.val[slot] - 1].calls++;
		return;
	}
	r = room(&b->pairs, b->npairs, &b->pairs_cap, sizeof(*b->pairs), COV_PAIRS_MAX);
	if (r) {
		build_fail(b, r, "distinct calls");
		return;
	}
	k.calls = 1;
	b->pairs[b->npairs] = k;
	hashindex_put(&b->pair_idx, slot, hash, b->npairs++);
}

static bool tnode_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct cov_tnode *a = &((const struct cov_build *)ctx)->trie[item], *k = key;

	return a->parent == k->parent && a->key == k->key;
}

/* The trie node of a frame of key k whose parent frame has trie place
 * parent, counted when count. */
static uint32_t trie_step(struct cov_build *b, uint32_t parent, uint32_t k, bool count)
{
	struct cov_tnode t = { .key = k };
	uint64_t hash;
	uint32_t slot, i;

	if (parent == TRIE_BLOCKED || (parent == TRIE_OUT && !b->keys[k].root))
		return parent;
	if (parent == TRIE_OUT)
		parent = 0;
	else if (!b->trie[parent].open)
		return TRIE_BLOCKED;
	t.parent = parent;
	hash = hashindex_u64((uint64_t)parent << 32 | k);
	if (hashindex_reserve(&b->trie_idx)) {
		build_fail(b, -ENOMEM, NULL);
		return TRIE_BLOCKED;
	}
	slot = hashindex_slot(&b->trie_idx, hash, tnode_eq, b, &t);
	if (b->trie_idx.val[slot]) {
		i = b->trie_idx.val[slot] - 1;
	} else {
		int r = room(&b->trie, b->ntrie, &b->trie_cap, sizeof(*b->trie), COV_TRIE_MAX);

		if (r == -ENOMEM)
			build_fail(b, r, NULL);
		if (r) {
			b->trie_full = true;
			return TRIE_BLOCKED;
		}
		t.depth = parent ? b->trie[parent].depth + 1 : 0;
		t.open = t.depth < b->depth;
		for (i = parent; i && t.open; i = b->trie[i].parent)
			t.open = b->trie[i].key != k; /* recursion: shown once, not followed */
		i = b->ntrie++;
		b->trie[i] = t;
		hashindex_put(&b->trie_idx, slot, hash, i);
	}
	if (count)
		b->trie[i].calls++;
	return i;
}

/* Leaves the frames below depth on st. */
static void stack_cut(struct cov_stack *st, uint32_t depth)
{
	for (; st->n > depth; st->n--)
		st->pending -= st->f[st->n - 1].pending;
}

/* Frames whose function had no map when entered (a forked child's copies
 * of its parent's frames come before the child's maps): once maps have
 * come, they and the frames above them take their places in the executed
 * path trie again, so that a root among them starts its path.  A frame
 * already in a path keeps its place. */
static void stack_retry(struct cov_build *b, struct cov_stack *st)
{
	uint32_t d;

	st->maps = symbolizer_map_count(b->w.sym);
	for (d = 0; d < st->n && !st->f[d].pending; d++)
		;
	for (; d < st->n; d++) {
		struct cov_frame *f = &st->f[d];

		if (f->pending) {
			if (!b->keys[f->key].module && b->keys[f->key].maps != st->maps)
				key_resolve(b, f->key);
			f->pending = !b->keys[f->key].module;
			st->pending -= !f->pending;
		}
		if (f->key != CG_NONE && (f->trie == TRIE_OUT || f->trie == TRIE_BLOCKED))
			f->trie = trie_step(b, d ? st->f[d - 1].trie : TRIE_OUT, f->key, f->counted);
	}
}

/* The walk's entry callback: called for every traced call, in each
 * thread's order; keeps the thread's frames in its walk_stream.user. */
static void cov_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	struct cov_build *b = ctx;
	struct cov_stack *st = s->user;
	struct cov_frame parent = { .key = CG_NONE, .trie = TRIE_OUT };
	bool count = !(flags & FILTER_INHERITED); /* a fork's copy of its parent's frames */
	uint32_t k;

	(void)ns;
	if (b->rc)
		return;
	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st) {
			build_fail(b, -ENOMEM, NULL);
			return;
		}
		s->user = st;
	}
	if (depth >= st->cap) {
		uint32_t cap = st->cap ? st->cap : 64;
		struct cov_frame *f;

		while (cap <= depth)
			cap *= 2;
		f = realloc(st->f, (size_t)cap * sizeof(*f));
		if (!f) {
			build_fail(b, -ENOMEM, NULL);
			return;
		}
		st->f = f;
		st->cap = cap;
	}
	k = key_get(b, s->image, addr);
	if (k == CG_NONE)
		return;
	stack_cut(st, depth);
	for (; st->n < depth; st->n++)
		st->f[st->n] = (struct cov_frame){ .key = CG_NONE, .trie = TRIE_OUT }; /* never entered here */
	if (st->pending && b->o->paths && st->maps != symbolizer_map_count(b->w.sym))
		stack_retry(b, st);
	if (depth)
		parent = st->f[depth - 1];
	if (count) {
		b->keys[k].calls++;
		if (parent.key != CG_NONE)
			pair_count(b, parent.key, k);
	}
	st->f[depth].key = k;
	st->f[depth].counted = count;
	st->f[depth].pending = b->o->paths && !b->keys[k].module;
	st->f[depth].trie = b->o->paths ? trie_step(b, parent.trie, k, count) : TRIE_OUT;
	st->pending += st->f[depth].pending;
	st->n = depth + 1;
	if (st->f[depth].pending)
		st->maps = symbolizer_map_count(b->w.sym);
}

/* The walk's exit callback: the frame at depth is gone. */
static void cov_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                     unsigned flags)
{
	(void)ctx;
	(void)ns;
	(void)addr;
	(void)entry_ns;
	(void)flags;
	if (s->user)
		stack_cut(s->user, depth);
}

/* Stops the pass after a failure (only a chunk's end may). */
static int cov_chunk_end(void *ctx, const struct walk_chunk *chunk)
{
	(void)chunk;
	return ((struct cov_build *)ctx)->rc;
}

/* The calls of the resolved pair (o1, f1) -> (o2, f2); 0 when it never ran. */
uint64_t coverage_pair_calls(const struct coverage *c, uint32_t o1, uint32_t f1, uint32_t o2, uint32_t f2)
{
	struct cov_rpair k = { o1, f1, o2, f2, 0 };
	size_t lo = 0, hi = c->npairs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = cov_rpair_cmp(&c->pairs[mid], &k);

		if (!d)
			return c->pairs[mid].calls;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int cov_rpair_cmp(const void *pa, const void *pb)
{
	const struct cov_rpair *a = pa, *b = pb;

	if (a->o1 != b->o1)
		return a->o1 < b->o1 ? -1 : 1;
	if (a->f1 != b->f1)
		return a->f1 < b->f1 ? -1 : 1;
	if (a->o2 != b->o2)
		return a->o2 < b->o2 ? -1 : 1;
	if (a->f2 != b->f2)
		return a->f2 < b->f2 ? -1 : 1;
	return 0;
}

/* Whether the static graph has a call or tail call from function f1 of o1
 * to f2 of o2: directly, or through an import of o1 linked to f2; a PLT
 * entry's jump to the function its import is linked to counts too. */
bool coverage_static_call(const struct coverage *c, uint32_t o1, uint32_t f1, uint32_t o2, uint32_t f2)
{
	const struct cg_object *o = c->set.objs[o1];
	const struct cg_func *fn = &o->funcs[f1];
	uint32_t i;

	if (fn->kind == CG_FUNC_IMPORT && fn->link_obj == o2 && fn->link_func == f2)
		return true;
	for (i = fn->edges; i < fn->edges + fn->nedges; i++) {
		const struct cg_edge *e = &o->edges[i];
		const struct cg_func *callee;

		if (e->kind == CG_EDGE_INDIRECT)
			continue;
		if (o1 == o2 && e->callee == f2)
			return true;
		callee = &o->funcs[e->callee];
		if (callee->kind == CG_FUNC_IMPORT && callee->link_obj == o2 && callee->link_func == f2)
			return true;
	}
	return false;
}

uint64_t coverage_edge_calls(const struct coverage *c, uint32_t obj, const struct cg_edge *e)
{
	const struct cg_func *callee = &c->set.objs[obj]->funcs[e->callee];
	uint64_t n = coverage_pair_calls(c, obj, e->caller, obj, e->callee);

	if (callee->kind == CG_FUNC_IMPORT && callee->link_obj != CG_NONE)
		n += coverage_pair_calls(c, obj, e->caller, callee->link_obj, callee->link_func);
	return n;
}

/* Whether import f is a PLT entry, which record --libcalls traces (a call
 * through a GOT slot, NAME@got, it cannot). */
static bool is_plt(const struct cg_func *f)
{
	size_t len = strlen(f->name);

	return f->kind == CG_FUNC_IMPORT && len > 4 && !strcmp(f->name + len - 4, "@plt");
}

bool coverage_counted(const struct coverage *c, const struct cg_func *f)
{
	if (f->kind == CG_FUNC_IMPORT)
		return c->plt && is_plt(f);
	return !(f->flags & (CG_FUNC_CRT | CG_FUNC_PART));
}

bool coverage_edge_counted(const struct coverage *c, uint32_t obj, const struct cg_edge *e)
{
	const struct cg_object *o = c->set.objs[obj];
	const struct cg_func *callee;

	if (e->kind == CG_EDGE_INDIRECT || !coverage_counted(c, &o->funcs[e->caller]))
		return false;
	callee = &o->funcs[e->callee];
	if (coverage_counted(c, callee))
		return true;
	/* a call through the PLT to a function of a listed object (a traced
	 * library, or a library's call of its own exported function) */
	return callee->kind == CG_FUNC_IMPORT && callee->link_obj != CG_NONE &&
	       coverage_counted(c, &c->set.objs[callee->link_obj]->funcs[callee->link_func]);
}

/* A traced address no function holds, to count each once. */
struct cov_miss {
	const char *module;
	uint32_t image; /* with no module */
	uint64_t addr;
};

static int miss_cmp(const void *pa, const void *pb)
{
	const struct cov_miss *a = pa, *b = pb;

	if (a->module != b->module)
		return (uintptr_t)a->module < (uintptr_t)b->module ? -1 : 1;
	if (a->image != b->image)
		return a->image < b->image ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Resolves what the first sight could not, adds the keys' calls to their
 * functions and counts the unmatched addresses. */
static int count_functions(struct cov_build *b)
{
	struct coverage *c = b->c;
	struct cov_miss *miss = malloc(((size_t)b->nkeys + 1) * sizeof(*miss));
	uint32_t i, n = 0;

	if (!miss)
		return -ENOMEM;
	for (i = 0; i < b->nkeys && !b->rc; i++) {
		struct cov_key *k = &b->keys[i];

		if (!k->module)
			key_resolve(b, i); /* its map came later in the trace */
		k = &b->keys[i];
		if (!k->calls)
			continue;
		if (k->obj == CG_NONE || k->func == CG_NONE) {
			miss[n].module = k->module;
			miss[n].image = k->module ? 0 : k->image;
			miss[n++].addr = k->module ? k->elf : k->addr;
			continue;
		}
		c->objs[k->obj].calls[k->func] += k->calls;
		if (is_plt(&c->set.objs[k->obj]->funcs[k->func]))
			c->plt = true;
	}
	qsort(miss, n, sizeof(*miss), miss_cmp);
	for (i = 0; i < n; i++)
		c->unmatched += !i || miss_cmp(&miss[i - 1], &miss[i]);
	free(miss);
	return b->rc;
}

/* Keeps the objects that hold a traced function (and the program, for
 * its paths), in the order first traced, and links their imports. */
static void keep_listed(struct cov_build *b)
{
	struct coverage *c = b->c;
	uint32_t i, f, n = 0, *to = calloc(c->nobjs + 1, sizeof(*to));

	if (!to) {
		build_fail(b, -ENOMEM, NULL);
		return;
	}
	for (i = 0; i < c->nobjs; i++) {
		bool keep = i == c->prog;

		for (f = 0; f < c->set.objs[i]->nfuncs && !keep; f++)
			keep = c->objs[i].calls[f] > 0;
		to[i] = keep ? n : CG_NONE;
		if (!keep) {
			/* the set's array is public: the object leaves it */
			cg_object_free(c->set.objs[i]);
			cov_obj_release(&c->objs[i]);
			continue;
		}
		c->set.objs[n] = c->set.objs[i];
		c->objs[n++] = c->objs[i];
	}
	c->set.n = c->nobjs = n;
	for (i = 0; i < b->nkeys; i++)
		if (b->keys[i].obj != CG_NONE)
			b->keys[i].obj = to[b->keys[i].obj];
	if (c->prog != CG_NONE)
		c->prog = to[c->prog];
	free(to);
	cg_set_link(&c->set);
}

/* The executed pairs by function, summed over images and sorted. */
static int resolve_pairs(struct cov_build *b)
{
	struct coverage *c = b->c;
	uint32_t i, n = 0;

	c->pairs = malloc(((size_t)b->npairs + 1) * sizeof(*c->pairs));
	if (!c->pairs)
		return -ENOMEM;
	for (i = 0; i < b->npairs; i++) {
		const struct cov_key *a = &b->keys[b->pairs[i].caller], *z = &b->keys[b->pairs[i].callee];

		if (a->obj == CG_NONE || a->func == CG_NONE || z->obj == CG_NONE || z->func == CG_NONE)
			continue;
		c->pairs[n++] = (struct cov_rpair){ a->obj, a->func, z->obj, z->func, b->pairs[i].calls };
	}
	qsort(c->pairs, n, sizeof(*c->pairs), cov_rpair_cmp);
	c->npairs = 0;
	for (i = 0; i < n; i++) {
		if (c->npairs && !cov_rpair_cmp(&c->pairs[c->npairs - 1], &c->pairs[i]))
			c->pairs[c->npairs - 1].calls += c->pairs[i].calls;
		else
			c->pairs[c->npairs++] = c->pairs[i];
	}
	return 0;
}

/* The executed path trie with functions for keys (images merged): the
 * node each raw trie node becomes, in to[]. */
struct cov_mtrie {
	struct cov_rpair *n; /* o1: parent node, o2/f2: the function, calls */
	uint32_t count, cap;
	uint32_t *first, *next; /* children lists, after the build */
	struct hashindex idx;
};

static bool mnode_eq(const void *ctx, uint32_t item, const void *key)
{
	const struct cov_rpair *a = &((const struct cov_mtrie *)ctx)->n[item], *k = key;

	return a->o1 == k->o1 && a->o2 == k->o2 && a->f2 == k->f2;
}

static uint64_t mnode_hash(uint32_t parent, uint32_t obj, uint32_t func)
{
	return hashindex_u64(((uint64_t)parent << 32 | obj) * 0x9e3779b97f4a7c15ull ^ func);
}

/* The child (obj, func) of node parent; made when make; CG_NONE when none
 * (or memory ran out: *oom). */
static uint32_t mnode_child(struct cov_mtrie *m, uint32_t parent, uint32_t obj, uint32_t func, bool make, bool *oom)
{
	struct cov_rpair k = { parent, 0, obj, func, 0 };
	uint64_t hash = mnode_hash(parent, obj, func);
	uint32_t slot;

	if (!make) {
		int64_t i = hashindex_get(&m->idx, hash, mnode_eq, m, &k);

		return i < 0 ? CG_NONE : (uint32_t)i;
	}
	if (hashindex_reserve(&m->idx) || room(&m->n, m->count, &m->cap, sizeof(*m->n), COV_TRIE_MAX + 1)) {
		*oom = true;
		return CG_NONE;
	}
	slot = hashindex_slot(&m->idx, hash, mnode_eq, m, &k);
	if (m->idx.val[slot])
		return m->idx.val[slot] - 1;
	m->n[m->count] = k;
	hashindex_put(&m->idx, slot, hash, m->count);
	return m->count++;
}

static int mtrie_build(struct cov_build *b, struct cov_mtrie *m)
{
	uint32_t *to = malloc(((size_t)b->ntrie + 1) * sizeof(*to)), i;
	bool oom = false;

	if (!to)
		return -ENOMEM;
	mnode_child(m, CG_NONE, CG_NONE, CG_NONE, true, &oom); /* node 0: above the roots */
	to[0] = 0;
	for (i = 1; i < b->ntrie && !oom; i++) {
		const struct cov_tnode *t = &b->trie[i];
		const struct cov_key *k = &b->keys[t->key];

		to[i] = CG_NONE;
		if (to[t->parent] == CG_NONE || k->obj == CG_NONE || k->func == CG_NONE)
			continue;
		to[i] = mnode_child(m, to[t->parent], k->obj, k->func, true, &oom);
		if (to[i] != CG_NONE)
			m->n[to[i]].calls += t->calls;
	}
	free(to);
	if (oom)
		return -ENOMEM;
	m->first = malloc(((size_t)m->count + 1) * sizeof(*m->first));
	m->next = malloc(((size_t)m->count + 1) * sizeof(*m->next));
	if (!m->first || !m->next)
		return -ENOMEM;
	for (i = 0; i < m->count; i++)
		m->first[i] = CG_NONE;
	for (i = m->count; i-- > 1;) {
		m->next[i] = m->first[m->n[i].o1];
		m->first[m->n[i].o1] = i;
	}
	return 0;
}

/* Marks the path tree's nodes that ran and how often, walking the
 * executed path trie alongside: a node matches its parent's executed
 * child of the same function (for an import, also the function it is
 * linked to); the *indirect* node of a function gets its executed
 * children that no static call of it explains; an unnamed function the
 * trace never entered is passed through, unmarked. */
static int mark_paths(struct cov_build *b)
{
	struct coverage *c = b->c;
	struct cg_paths *p = &c->paths;
	struct cov_mtrie m = { 0 };
	uint32_t *at = NULL, i, j;
	bool *through = NULL;
	int r = mtrie_build(b, &m);

	if (!r && (!(at = malloc(((size_t)p->n + 1) * sizeof(*at))) || !(through = calloc(p->n + 1, sizeof(bool)))))
		r = -ENOMEM;
	for (i = 0; !r && i < p->n; i++) {
		struct cg_path_node *nd = &p->nodes[i];
		uint32_t up = nd->parent == CG_NONE ? 0 : at[nd->parent];
		uint64_t calls = 0;

		at[i] = CG_NONE;
		if (up == CG_NONE)
			continue;
		if (nd->parent != CG_NONE && !(nd->flags & CG_PATH_INDIRECT) &&
		    c->set.objs[nd->obj]->funcs[nd->func].kind == CG_FUNC_UNNAMED &&
		    !c->objs[nd->obj].calls[nd->func]) {
			/* a function with no symbol that the trace never
			 * entered: record --dynamic cannot trace it; its
			 * callees are matched with its caller's calls */
			at[i] = up;
			through[i] = true;
			continue;
		}
		if (nd->flags & CG_PATH_INDIRECT) {
			if (through[nd->parent])
				continue; /* its calls are not told from its caller's */
			const struct cg_path_node *caller = &p->nodes[nd->parent];

			for (j = m.first[up]; j != CG_NONE; j = m.next[j])
				if (!coverage_static_call(c, caller->obj, caller->func, m.n[j].o2, m.n[j].f2))
					calls += m.n[j].calls;
		} else {
			const struct cg_func *f = &c->set.objs[nd->obj]->funcs[nd->func];
			bool oom = false;

			at[i] = mnode_child(&m, up, nd->obj, nd->func, false, &oom);
			if (at[i] != CG_NONE)
				calls = m.n[at[i]].calls;
			if (f->kind == CG_FUNC_IMPORT && f->link_obj != CG_NONE) {
				j = mnode_child(&m, up, f->link_obj, f->link_func, false, &oom);
				if (j != CG_NONE) {
					calls += m.n[j].calls;
					at[i] = at[i] == CG_NONE ? j : at[i];
				}
			}
		}
		nd->calls = calls;
		if (calls)
			nd->flags |= CG_PATH_RUN;
	}
	free(at);
	free(through);
	free(m.n);
	free(m.first);
	free(m.next);
	hashindex_release(&m.idx);
	return r;
}

/* Names as shown, never-run functions and calls outside the graph, per
 * object, and the totals. */
static int summarise(struct coverage *c)
{
	uint32_t i, f, e;

	for (i = 0; i < c->nobjs; i++) {
		const struct cg_object *o = c->set.objs[i];
		struct cov_obj *co = &c->objs[i];

		co->names = calloc(o->nfuncs + 1, sizeof(*co->names));
		co->never = malloc(((size_t)o->nfuncs + 1) * sizeof(*co->never));
		if (!co->names || !co->never)
			return -ENOMEM;
		for (f = 0; f < o->nfuncs; f++) {
			char buf[COV_NAME_MAX];
			const char *name =
			    cgout_func_name(o, f, c->flags & COVERAGE_DEMANGLE ? CGOUT_DEMANGLE : 0, buf, sizeof(buf));

			co->names[f] = strdup(name);
			if (!co->names[f])
				return -ENOMEM;
			if (!coverage_counted(c, &o->funcs[f]))
				continue;
			co->funcs.total++;
			if (co->calls[f])
				co->funcs.run++;
			else
				co->never[co->nnever++] = f;
		}
		for (e = 0; e < o->nedges; e++) {
			const struct cg_edge *ed = &o->edges[e];

			if (!coverage_edge_counted(c, i, ed))
				continue;
			co->edges.total++;
			co->edges.run += coverage_edge_calls(c, i, ed) > 0;
		}
		c->total.funcs.total += co->funcs.total;
		c->total.funcs.run += co->funcs.run;
		c->total.edges.total += co->edges.total;
		c->total.edges.run += co->edges.run;
	}
	/* the pairs outside the graph, each in its caller's object */
	c->dyn = malloc(((size_t)c->npairs + 1) * sizeof(*c->dyn));
	if (!c->dyn)
		return -ENOMEM;
	for (i = 0; i < c->npairs; i++) {
		const struct cov_rpair *q = &c->pairs[i];

		if (!coverage_static_call(c, q->o1, q->f1, q->o2, q->f2))
			c->dyn[c->ndyn++] = i;
	}
	cov_sort_lists(c);
	return 0;
}

int coverage_build(const char *trace_dir, const struct coverage_opts *o, struct coverage **out, char *err,
                   size_t errlen)
{
	struct cov_build b = { .o = o, .err = err, .errlen = errlen };
	struct walk_ops ops = { 0 };
	struct coverage *c;
	uint32_t i;
	int r;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->trace = strdup(trace_dir))) {
		free(c);
		return error_set(err, errlen, -ENOMEM, "cannot read trace '%s': out of memory", trace_dir);
	}
	b.c = c;
	c->flags = o->flags;
	c->want_paths = o->paths;
	c->prog = c->root = CG_NONE;
	c->depth = b.depth = o->depth ? o->depth : COVERAGE_DEPTH;
	c->max_nodes = b.max_nodes = o->max_nodes ? o->max_nodes : COVERAGE_MAX_NODES;
	r = cg_set_init(&c->set, NULL);
	if (r) {
		coverage_free(c);
		return error_set(err, errlen, r, "cannot read trace '%s': out of memory", trace_dir);
	}
	r = walk_open(&b.w, trace_dir, NULL, err, errlen);
	if (r)
		goto out;
	b.walk_open = true;
	/* trie node 0 stands above the root's occurrences */
	r = room(&b.trie, 0, &b.trie_cap, sizeof(*b.trie), COV_TRIE_MAX);
	if (r)
		goto oom;
	b.trie[b.ntrie++] = (struct cov_tnode){ .parent = CG_NONE, .key = CG_NONE, .open = true };
	ops.ctx = &b;
	ops.entry = cov_entry;
	ops.exit = cov_exit;
	ops.chunk_end = cov_chunk_end;
	r = walk_run(&b.w, &ops);
	for (i = 0; i < b.w.nstreams; i++) {
		struct cov_stack *st = b.w.streams[i]->user;

		if (st)
			free(st->f);
		free(st);
		b.w.streams[i]->user = NULL;
	}
	if (b.rc) {
		r = b.rc;
		goto out;
	}
	if (r == -ENOMEM)
		goto oom;
	{
		char damage[LP_ERROR_MAX];

		if (walk_condition(&b.w, o->warn, damage, sizeof(damage)) && !(c->damage = strdup(damage)))
			goto oom;
	}
	if (b.w.lost)
		error_warn(o->warn, "warning: %llu events were lost: functions that ran may count as never run",
		           (unsigned long long)b.w.lost);
	r = count_functions(&b);
	if (r)
		goto out;
	keep_listed(&b);
	if (b.rc || resolve_pairs(&b))
		goto oom;
	if (o->paths && c->prog == CG_NONE)
		error_warn(o->warn, "warning: no call paths: the trace names no program that could be read");
	if (o->paths && c->prog != CG_NONE && c->root != CG_NONE) {
		if (cg_paths_build(&c->set, c->prog, c->root, c->depth, c->max_nodes, 0, &c->paths))
			goto oom;
		c->has_paths = true;
		if (b.trie_full)
			error_warn(o->warn, "warning: more than %u executed call paths: the rest are not marked",
			           COV_TRIE_MAX);
		if (mark_paths(&b))
			goto oom;
	}
	if (summarise(c))
		goto oom;
	r = 0;
	goto out;
oom:
	r = error_set(err, errlen, -ENOMEM, "cannot read trace '%s': out of memory", trace_dir);
out:
	if (b.walk_open)
		walk_release(&b.w);
	free(b.keys);
	free(b.pairs);
	free(b.trie);
	free(b.mods);
	hashindex_release(&b.key_idx);
	hashindex_release(&b.pair_idx);
	hashindex_release(&b.trie_idx);
	if (r) {
		coverage_free(c);
		return r;
	}
	*out = c;
	return 0;
}

uint32_t coverage_unread(const struct coverage *c)
{
	return c->unread;
}

int coverage_condition(const struct coverage *c, char *err, size_t errlen)
{
	return c->damage ? error_set(err, errlen, -EBADMSG, "%s", c->damage) : 0;
}

void cov_obj_release(struct cov_obj *co)
{
	free(co->path);
	free(co->calls);
	free(co->never);
	co->path = NULL;
	co->calls = NULL;
	co->never = NULL;
}

void coverage_free(struct coverage *c)
{
	uint32_t i, f;

	if (!c)
		return;
	for (i = 0; i < c->nobjs; i++) {
		if (c->objs[i].names)
			for (f = 0; f < c->set.objs[i]->nfuncs; f++)
				free((char *)c->objs[i].names[f]);
		free(c->objs[i].names);
		cov_obj_release(&c->objs[i]);
	}
	free(c->objs);
	free(c->pairs);
	free(c->dyn);
	if (c->has_paths)
		cg_paths_release(&c->paths);
	cg_set_release(&c->set);
	free(c->trace);
	free(c->damage);
	free(c);
}
