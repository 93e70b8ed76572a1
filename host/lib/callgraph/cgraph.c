/* One object's call graph: its functions (symbols and PLT stubs from
 * common/elfsyms.c, starts found by the scan), the edges made of the
 * scan's branches, and how the roots reach each function. */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/elfsyms.h"
#include "dyntrace/dselect.h"
#include "host/lib/callgraph/cgraph_impl.h"

/* The function that starts exactly at addr, CG_NONE when none. */
static uint32_t func_at(const struct cg_object *o, uint64_t addr)
{
	uint32_t lo = CG_BOUND(o->funcs, o->nfuncs, struct cg_func, addr, addr);

	return lo < o->nfuncs && o->funcs[lo].addr == addr ? lo : CG_NONE;
}

static int add_cand(struct cg_build *b, uint64_t addr, uint64_t size, const char *name, const char *import,
                    uint8_t kind, uint16_t flags)
{
	int rc = 0;
	struct cg_cand *c = cg_grow(&b->cands, &b->ncands, &b->cands_cap, sizeof(*c), CG_FUNCS_MAX, &rc);

	if (!c) {
		if (rc == -E2BIG)
			snprintf(b->err, b->errlen, "more than %u functions", CG_FUNCS_MAX);
		return rc;
	}
	c->addr = addr;
	c->size = size;
	c->name = name;
	c->import = import;
	c->kind = kind;
	c->flags = flags;
	return 0;
}

static bool exported_at(const struct cg_build *b, uint64_t x)
{
	uint32_t lo = CG_BOUND(b->exported, b->nexported, struct cg_export, addr, x);

	return lo < b->nexported && b->exported[lo].addr == x;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cg_cand *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (int)x->kind - (int)y->kind; /* a symbol before an unnamed start */
}

/* The functions and PLT stubs the file names. */
static int take_symbols(struct cg_build *b, const struct elfsyms *es)
{
	char buf[4096];
	size_t i;
	int rc;

	for (i = 0; i < es->nfn; i++) {
		const struct elfsyms_fn *f = &es->fn[i];
		uint16_t flags = 0;
		uint64_t addr = f->addr;

		if (b->o->machine == CG_MACHINE_ARM) {
			flags |= (f->flags & ELFSYMS_FN_THUMB) ? CG_FUNC_THUMB : 0;
			addr &= ~1ull;
		}
		flags |= (f->flags & ELFSYMS_FN_IFUNC) ? CG_FUNC_IFUNC : 0;
		flags |= dsel_is_crt(f->name) ? CG_FUNC_CRT : 0;
		flags |= dsel_is_part(f->name) ? CG_FUNC_PART : 0;
		flags |= exported_at(b, addr) ? CG_FUNC_EXPORTED : 0;
		if ((rc = add_cand(b, addr, f->size, f->name, NULL, CG_FUNC_SYMBOL, flags)))
			return rc;
		b->cands[b->ncands - 1].bind = f->bind;
	}
	for (i = 0; i < es->nplt; i++) {
		const struct elfsyms_plt *p = &es->plt[i];
		uint64_t size = b->o->machine == CG_MACHINE_ARM ? 12 : 16;
		const char *name;

		if (!p->stub)
			continue;
		if (p->flags & ELFSYMS_PLT_THUMB_ENTRY)
			size += 4;
		if ((p->flags & ELFSYMS_PLT_GOT) && b->o->machine == CG_MACHINE_X86_64)
			size = 8;
		snprintf(buf, sizeof(buf), "%s@plt", p->name);
		if (!(name = cg_strdup(b, buf)))
			return -ENOMEM;
		if ((rc = add_cand(b, p->stub, size, name, p->name, CG_FUNC_IMPORT, 0)))
			return rc;
	}
	return 0;
}

static uint32_t cand_holding(const struct cg_build *b, uint64_t addr, bool exact);

/* qsort, for arrays that may be empty (and NULL). */
static void sort_n(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

/* Ranks a symbol's name among aliases: global before weak before local,
 * then the shorter. */
static bool better_name(const struct cg_cand *x, const struct cg_cand *y)
{
	static const int rank[] = { [STB_GLOBAL] = 0, [STB_WEAK] = 1, [STB_LOCAL] = 2 };
	int rx = x->bind <= STB_WEAK ? rank[x->bind] : 0, ry = y->bind <= STB_WEAK ? rank[y->bind] : 0;

	if (rx != ry)
		return rx < ry;
	return strlen(x->name) < strlen(y->name);
}

/* Function symbols of size 0 at addresses no sized symbol names. */
static int take_zero_sized(struct cg_build *b)
{
	uint32_t n = b->ncands, i;
	int rc;

	sort_n(b->cands, b->ncands, sizeof(*b->cands), cmp_cand);
	sort_n(b->zsyms, b->nzsyms, sizeof(*b->zsyms), cmp_cand);
	for (i = 0; i < b->nzsyms; i++) {
		struct cg_cand z = b->zsyms[i];
		const struct cg_region *r = cg_region_at(b, z.addr);

		uint32_t all = b->ncands, held;

		b->ncands = n; /* the sorted part */
		held = cand_holding(b, z.addr, false);
		b->ncands = all;
		if (!r || !r->exec || held != CG_NONE)
			continue;
		if (n != b->ncands && b->cands[b->ncands - 1].addr == z.addr) {
			if (better_name(&z, &b->cands[b->ncands - 1]))
				b->cands[b->ncands - 1].name = z.name;
			continue;
		}
		z.kind = CG_FUNC_SYMBOL;
		z.flags |= dsel_is_crt(z.name) ? CG_FUNC_CRT : 0;
		z.flags |= dsel_is_part(z.name) ? CG_FUNC_PART : 0;
		z.flags |= exported_at(b, z.addr) ? CG_FUNC_EXPORTED : 0;
		if ((rc = add_cand(b, z.addr, 0, z.name, NULL, CG_FUNC_SYMBOL, z.flags)))
			return rc;
	}
	sort_n(b->cands, b->ncands, sizeof(*b->cands), cmp_cand);
	return 0;
}

/* Starts no symbol names that the file still tells: DT_INIT and DT_FINI
 * (_init, _fini), the init/fini arrays' entries, and the functions of the
 * unwind tables (every function a stripped object has call frame
 * information for).  Added before the code is decoded, so that decoding
 * starts again at each. */
static int take_known_starts(struct cg_build *b)
{
	uint32_t n = b->ncands, i;
	int rc;

	for (i = 0; i < b->nroots + b->nunwind; i++) {
		uint64_t a = i < b->nroots ? b->roots[i] : b->unwind[i - b->nroots];
		const struct cg_region *r = cg_region_at(b, a);
		const char *name = a == b->init_addr ? "_init" : a == b->fini_addr ? "_fini" : NULL;
		uint32_t all = b->ncands, held;

		if (!r || !r->exec || r->plt)
			continue;
		b->ncands = n; /* the sorted part */
		held = cand_holding(b, a, false);
		b->ncands = all;
		if (held != CG_NONE)
			continue;
		if ((rc = add_cand(b, a, 0, name, NULL, CG_FUNC_UNNAMED, name ? CG_FUNC_CRT : 0)))
			return rc;
	}
	sort_n(b->cands, b->ncands, sizeof(*b->cands), cmp_cand);
	return 0;
}

/* The index of the candidate holding addr: started there, or inside one
 * with a size; CG_NONE when none (cands sorted). */
static uint32_t cand_holding(const struct cg_build *b, uint64_t addr, bool exact)
{
	uint32_t lo = addr == UINT64_MAX ? b->ncands : CG_BOUND(b->cands, b->ncands, struct cg_cand, addr, addr + 1);

	for (uint32_t i = lo, k = 0; i > 0 && k < 16; i--, k++) {
		const struct cg_cand *c = &b->cands[i - 1];

		if (c->addr == addr || (!exact && addr - c->addr < c->size))
			return i - 1;
	}
	return CG_NONE;
}

/* Starts no symbol names: the entry point, main found from it, and the
 * targets of calls (a stripped object's static functions). */
static int find_unnamed(struct cg_build *b)
{
	uint32_t n0 = b->ncands, i;
	char buf[64];
	int rc;

	for (i = 0; i < b->nrecs; i++) {
		const struct cg_rec *r = &b->recs[i];
		const struct cg_region *reg;

		if (r->kind != CG_REC_CALL)
			continue;
		reg = cg_region_at(b, r->target);
		if (!reg || !reg->exec || reg->plt || cand_holding(b, r->target, false) != CG_NONE)
			continue;
		if ((rc = add_cand(b, r->target, 0, NULL, NULL, CG_FUNC_UNNAMED, 0)))
			return rc;
	}
	if (b->o->entry && cand_holding(b, b->o->entry, false) == CG_NONE &&
	    (rc = add_cand(b, b->o->entry, 0, b->o->shared ? NULL : "_start", NULL, CG_FUNC_UNNAMED, 0)))
		return rc;
	if (b->main_addr && cand_holding(b, b->main_addr, true) == CG_NONE &&
	    (rc = add_cand(b, b->main_addr, 0, "main", NULL, CG_FUNC_UNNAMED, 0)))
		return rc;
	/* the same start called from many places: one candidate */
	sort_n(b->cands, b->ncands, sizeof(*b->cands), cmp_cand);
	{
		uint32_t w = 0;

		for (i = 0; i < b->ncands; i++) {
			if (w && b->cands[w - 1].addr == b->cands[i].addr && b->cands[i].kind == CG_FUNC_UNNAMED) {
				if (b->cands[i].name && !b->cands[w - 1].name)
					b->cands[w - 1].name = b->cands[i].name;
				continue;
			}
			b->cands[w++] = b->cands[i];
		}
		b->ncands = w;
	}
	b->o->unnamed = 0;
	for (i = 0; i < b->ncands; i++) {
		struct cg_cand *c = &b->cands[i];

		if (c->kind != CG_FUNC_UNNAMED)
			continue;
		b->o->unnamed++;
		if (!c->name && c->addr == b->o->entry && !b->o->shared)
			c->name = "_start";
		else if (!c->name && b->main_addr && c->addr == b->main_addr)
			c->name = "main";
		if (c->name && !strcmp(c->name, "_start"))
			c->flags |= CG_FUNC_CRT;
		if (!c->name) {
			snprintf(buf, sizeof(buf), "sub_%llx", (unsigned long long)c->addr);
			if (!(c->name = cg_strdup(b, buf)))
				return -ENOMEM;
		}
	}
	(void)n0;
	return 0;
}

/* Imports by the name of the symbol they stand for: a call through a GOT
 * slot bound to a symbol reaches that symbol's import. */
struct import_ix {
	const char *name;
	uint32_t index;
};

static int cmp_ix(const void *a, const void *b)
{
	const struct import_ix *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* The index (sorted by name, then by index) of the n elements of stride
 * bytes at base whose kind is CG_FUNC_IMPORT; *out is NULL when none.
 * cands and funcs share the fields used here through these offsets. */
static int imports_index(const void *base, uint32_t n, size_t stride, size_t kind_off, size_t import_off,
                         struct import_ix **out, uint32_t *nout)
{
	struct import_ix *ix = NULL;
	uint32_t k = 0;

	*out = NULL;
	*nout = 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *e = (const char *)base + (size_t)i * stride;
		const char *name;

		memcpy(&name, e + import_off, sizeof(name));
		if (*(const uint8_t *)(e + kind_off) != CG_FUNC_IMPORT || !name)
			continue;
		if (!ix && !(ix = malloc((size_t)n * sizeof(*ix))))
			return -ENOMEM;
		ix[k].name = name;
		ix[k++].index = i;
	}
	if (k > 1)
		qsort(ix, k, sizeof(*ix), cmp_ix);
	*out = ix;
	*nout = k;
	return 0;
}

/* The first import (by index) for symbol name, CG_NONE when none. */
static uint32_t import_named(const struct import_ix *ix, uint32_t n, const char *name)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (strcmp(ix[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !strcmp(ix[lo].name, name) ? ix[lo].index : CG_NONE;
}

static int cmp_slot_name(const void *a, const void *b)
{
	const struct cg_slot *x = *(const struct cg_slot *const *)a, *y = *(const struct cg_slot *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->addr > y->addr) - (x->addr < y->addr);
}

/* A GOT slot a call goes through with no PLT stub of its own (-fno-plt,
 * the C runtime's call of __libc_start_main): an import "NAME@got" at the
 * slot (of several slots bound to one symbol, the lowest). */
static int find_got_imports(struct cg_build *b)
{
	const struct cg_slot **slots = NULL;
	struct import_ix *ix = NULL;
	uint32_t i, nslots = 0, nix, n = b->ncands;
	char buf[4096];
	int rc;

	rc = imports_index(b->cands, b->ncands, sizeof(*b->cands), offsetof(struct cg_cand, kind),
	                   offsetof(struct cg_cand, import), &ix, &nix);
	for (i = 0; i < b->nrecs && !rc; i++) {
		const struct cg_rec *r = &b->recs[i];
		const struct cg_slot *s;

		if (r->kind != CG_REC_SLOTCALL && r->kind != CG_REC_SLOTJUMP)
			continue;
		s = cg_slot_at(b, r->target);
		if (!s || !s->name)
			continue;
		if (!slots && !(slots = malloc((size_t)b->nrecs * sizeof(*slots))))
			rc = -ENOMEM;
		else
			slots[nslots++] = s;
	}
	if (nslots > 1)
		qsort(slots, nslots, sizeof(*slots), cmp_slot_name);
	for (i = 0; i < nslots && !rc; i++) {
		const char *name;

		if ((i && !strcmp(slots[i - 1]->name, slots[i]->name)) ||
		    import_named(ix, nix, slots[i]->name) != CG_NONE)
			continue;
		snprintf(buf, sizeof(buf), "%s@got", slots[i]->name);
		if (!(name = cg_strdup(b, buf)))
			rc = -ENOMEM;
		else
			rc = add_cand(b, slots[i]->addr, b->o->is64 ? 8 : 4, name, slots[i]->name, CG_FUNC_IMPORT, 0);
	}
	free(slots);
	free(ix);
	if (!rc && b->ncands != n)
		sort_n(b->cands, b->ncands, sizeof(*b->cands), cmp_cand);
	return rc;
}

/* Turns the candidates into the object's functions: sizes for those that
 * have none, the flags roots and references give. */
static int make_funcs(struct cg_build *b)
{
	struct cg_object *o = b->o;
	uint32_t i;

	o->funcs = calloc(b->ncands ? b->ncands : 1, sizeof(*o->funcs));
	if (!o->funcs)
		return -ENOMEM;
	for (i = 0; i < b->ncands; i++) {
		const struct cg_cand *c = &b->cands[i];
		struct cg_func *f = &o->funcs[i];

		f->name = c->name;
		f->import = c->import;
		f->addr = c->addr;
		f->size = c->size;
		f->kind = c->kind;
		f->flags = c->flags;
		f->link_obj = f->link_func = CG_NONE;
		if (!f->size) {
			const struct cg_region *r = cg_region_at(b, f->addr);
			uint64_t end = r ? r->addr + r->size : f->addr + 1;

			for (uint32_t j = i + 1; j < b->ncands; j++)
				if (b->cands[j].addr > f->addr) {
					if (b->cands[j].addr < end)
						end = b->cands[j].addr;
					break;
				}
			f->size = end - f->addr;
		}
	}
	o->nfuncs = b->ncands;
	o->main = CG_NONE;
	for (i = 0; i < o->nfuncs; i++) {
		struct cg_func *f = &o->funcs[i];

		if (f->kind == CG_FUNC_IMPORT)
			continue;
		if (!o->shared && o->main == CG_NONE &&
		    ((b->main_addr && f->addr == b->main_addr) || !strcmp(f->name, "main"))) {
			f->flags |= CG_FUNC_MAIN;
			o->main = i;
		}
	}
	if (o->entry) {
		uint32_t e = func_at(o, o->entry);

		if (e == CG_NONE)
			e = cg_object_find(o, o->entry);
		if (e != CG_NONE)
			o->funcs[e].flags |= CG_FUNC_ENTRY;
	}
	for (i = 0; i < b->nroots; i++) {
		uint32_t k = func_at(o, b->roots[i]);

		if (k != CG_NONE)
			o->funcs[k].flags |= CG_FUNC_INIT;
	}
	for (i = 0; i < b->nrefs; i++) {
		uint32_t k = func_at(o, b->refs[i]);

		if (k != CG_NONE && o->funcs[k].kind != CG_FUNC_IMPORT)
			o->funcs[k].flags |= CG_FUNC_ADDRESS_TAKEN;
	}
	/* words of data (pointer tables, vtables, init arrays) */
	for (i = 0; i < b->nregions; i++) {
		const struct cg_region *r = &b->regions[i];
		unsigned w = o->is64 ? 8 : 4;

		if (!r->pointers)
			continue;
		for (uint64_t off = (w - (r->addr % w)) % w; off + w <= r->size; off += w) {
			uint64_t v = 0;
			uint32_t k;

			memcpy(&v, r->data + off, w);
			if (o->machine == CG_MACHINE_ARM)
				v &= ~1ull;
			if (v < o->funcs[0].addr && o->nfuncs)
				continue;
			k = o->nfuncs ? func_at(o, v) : CG_NONE;
			if (k != CG_NONE && o->funcs[k].kind != CG_FUNC_IMPORT)
				o->funcs[k].flags |= CG_FUNC_ADDRESS_TAKEN;
		}
	}
	return 0;
}

/* NAME of NAME.cold[.N]: the function a part belongs to (CG_NONE). */
static uint32_t part_parent(const struct cg_object *o, uint32_t k)
{
	const char *name = o->funcs[k].name, *c = strstr(name, ".cold");
	size_t len;

	if (!c)
		return CG_NONE;
	len = (size_t)(c - name);
	for (uint32_t i = 0; i < o->nfuncs; i++)
		if (i != k && !strncmp(o->funcs[i].name, name, len) && !o->funcs[i].name[len])
			return i;
	return CG_NONE;
}

static int cmp_export_name(const void *a, const void *b)
{
	const struct cg_export *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* The exported functions by name, for other objects' imports. */
static int make_exports(struct cg_build *b)
{
	struct cg_priv *p = b->priv;
	uint32_t i, n = 0;

	p->exports = malloc((b->nexported ? b->nexported : 1) * sizeof(*p->exports));
	if (!p->exports)
		return -ENOMEM;
	for (i = 0; i < b->nexported; i++) {
		uint32_t k = func_at(b->o, b->exported[i].addr);

		if (k == CG_NONE || b->o->funcs[k].kind == CG_FUNC_IMPORT)
			continue;
		p->exports[n] = b->exported[i];
		p->exports[n++].func = k;
	}
	sort_n(p->exports, n, sizeof(*p->exports), cmp_export_name);
	p->nexports = n;
	return 0;
}

static int cmp_edge(const void *a, const void *b)
{
	const struct cg_edge *x = a, *y = b;

	if (x->caller != y->caller)
		return x->caller < y->caller ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

/* The import a call through GOT slot `slot` reaches, CG_NONE when none
 * (ix: the object's imports by name). */
static uint32_t slot_import(const struct cg_build *b, const struct import_ix *ix, uint32_t nix, uint64_t slot)
{
	const struct cg_object *o = b->o;
	const struct cg_slot *s = cg_slot_at(b, slot);
	uint32_t k;

	if (!s || !s->name)
		return CG_NONE;
	k = func_at(o, slot);
	if (k != CG_NONE && o->funcs[k].kind == CG_FUNC_IMPORT)
		return k;
	return import_named(ix, nix, s->name);
}

static int make_edges(struct cg_build *b)
{
	struct cg_object *o = b->o;
	struct import_ix *ix = NULL;
	uint32_t *parent = NULL, i, n = 0, nix = 0;
	int rc = 0;

	parent = malloc((o->nfuncs ? o->nfuncs : 1) * sizeof(*parent));
	o->edges = malloc((b->nrecs ? b->nrecs : 1) * sizeof(*o->edges));
	if (!parent || !o->edges) {
		rc = -ENOMEM;
		goto out;
	}
	rc = imports_index(o->funcs, o->nfuncs, sizeof(*o->funcs), offsetof(struct cg_func, kind),
	                   offsetof(struct cg_func, import), &ix, &nix);
	if (rc)
		goto out;
	for (i = 0; i < o->nfuncs; i++)
		parent[i] = (o->funcs[i].flags & CG_FUNC_PART) ? part_parent(o, i) : CG_NONE;
	for (i = 0; i < b->nrecs; i++) {
		const struct cg_rec *r = &b->recs[i];
		uint32_t caller = cg_object_find(o, r->site), callee = CG_NONE;
		uint8_t kind;

		if (caller == CG_NONE || o->funcs[caller].kind == CG_FUNC_IMPORT)
			continue;
		if (parent[caller] != CG_NONE)
			caller = parent[caller];
		switch (r->kind) {
		case CG_REC_CALL:
			callee = func_at(o, o->machine == CG_MACHINE_ARM ? r->target & ~1ull : r->target);
			if (callee == CG_NONE)
				callee = cg_object_find(o, r->target);
			if (callee == CG_NONE)
				continue;
			if (parent[callee] != CG_NONE)
				callee = parent[callee];
			kind = CG_EDGE_CALL;
			break;
		case CG_REC_JUMP:
			callee = func_at(o, o->machine == CG_MACHINE_ARM ? r->target & ~1ull : r->target);
			/* a jump within the function, to its own start (a loop),
			 * or into one of its parts is no call */
			if (callee == CG_NONE || callee == caller || parent[callee] != CG_NONE ||
			    r->site - o->funcs[callee].addr < o->funcs[callee].size)
				continue;
			kind = CG_EDGE_TAIL;
			break;
		case CG_REC_ICALL:
		case CG_REC_IJUMP:
			kind = CG_EDGE_INDIRECT;
			break;
		case CG_REC_SLOTCALL:
			callee = slot_import(b, ix, nix, r->target);
			kind = callee == CG_NONE ? CG_EDGE_INDIRECT : CG_EDGE_CALL;
			break;
		default: /* CG_REC_SLOTJUMP */
			callee = slot_import(b, ix, nix, r->target);
			if (callee == CG_NONE)
				continue;
			kind = CG_EDGE_TAIL;
			break;
		}
		o->edges[n].site = r->site;
		o->edges[n].caller = caller;
		o->edges[n].callee = callee;
		o->edges[n].kind = kind;
		n++;
	}
	sort_n(o->edges, n, sizeof(*o->edges), cmp_edge);
	o->nedges = n;
	for (i = 0; i < n; i++) {
		struct cg_func *f = &o->funcs[o->edges[i].caller];

		if (!f->nedges)
			f->edges = i;
		f->nedges++;
	}
	/* reach: from the roots by calls, then from functions whose address
	 * is taken, each function once */
	{
		uint32_t *queue = parent, head = 0, tail = 0, pass;

		for (i = 0; i < o->nfuncs; i++)
			o->funcs[i].reach = CG_REACH_NONE;
		for (pass = 0; pass < 2; pass++) {
			uint8_t mark = pass ? CG_REACH_ADDRESS : CG_REACH_DIRECT;

			for (i = 0; i < o->nfuncs; i++) {
				struct cg_func *f = &o->funcs[i];
				bool root = pass ? (f->flags & CG_FUNC_ADDRESS_TAKEN) != 0
				                 : (f->flags & (CG_FUNC_ENTRY | CG_FUNC_MAIN | CG_FUNC_INIT)) ||
				                       (o->shared && (f->flags & CG_FUNC_EXPORTED));

				if (root && f->reach == CG_REACH_NONE) {
					f->reach = pass ? CG_REACH_ADDRESS : CG_REACH_ROOT;
					queue[tail++] = i;
				}
			}
			while (head < tail) {
				const struct cg_func *f = &o->funcs[queue[head++]];

				for (uint32_t e = f->edges; e < f->edges + f->nedges; e++) {
					uint32_t c = o->edges[e].callee;

					if (c != CG_NONE && o->funcs[c].reach == CG_REACH_NONE) {
						o->funcs[c].reach = mark;
						queue[tail++] = c;
					}
				}
			}
		}
		/* a part runs when the function it belongs to does */
		for (i = 0; i < o->nfuncs; i++) {
			uint32_t p = (o->funcs[i].flags & CG_FUNC_PART) ? part_parent(o, i) : CG_NONE;

			if (p != CG_NONE)
				o->funcs[i].reach = o->funcs[p].reach;
		}
	}
out:
	free(parent);
	free(ix);
	return rc;
}

int cg_object_build(struct cg_object *o, const char *elfsyms_path, char *err, size_t errlen)
{
	struct cg_build b = { .o = o, .priv = o->impl, .err = err, .errlen = errlen };
	struct elfsyms *es = NULL;
	uint32_t nrefs, ncands;
	char why[512];
	int rc;

	b.image = b.priv->image;
	b.len = b.priv->len;
	rc = cg_elf_read(&b);
	if (rc)
		goto out;
	rc = elfsyms_open(elfsyms_path, &es, why, sizeof(why));
	if (rc) {
		/* its message names the file: keep only the reason */
		const char *colon = strstr(why, ": ");

		snprintf(err, errlen, "%s", colon ? colon + 2 : why);
		rc = rc == -ENOMEM ? rc : -EBADMSG;
		goto out;
	}
	o->stripped = es->from_dynsym;
	b.priv->runpath = b.runpath;
	if ((rc = take_symbols(&b, es)) || (rc = take_zero_sized(&b)) || (rc = take_known_starts(&b)))
		goto out;
	nrefs = b.nrefs;
	ncands = b.ncands;
	if ((rc = cg_scan(&b)) || (rc = find_unnamed(&b)))
		goto out;
	if (o->stripped && b.ncands != ncands) {
		/* decode again, starting afresh at the starts the calls found
		 * (instruction boundaries and ARM modes come right there) */
		b.nrecs = 0;
		b.nrefs = nrefs;
		b.main_addr = 0;
		o->undecodable = 0;
		if ((rc = cg_scan(&b)) || (rc = find_unnamed(&b)))
			goto out;
	}
	if ((rc = find_got_imports(&b)) || (rc = make_funcs(&b)) || (rc = make_exports(&b)) || (rc = make_edges(&b)))
		goto out;
out:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	b.priv->syms = es; /* the names point into it */
	free(b.regions);
	free(b.maps);
	free(b.slots);
	free(b.refs);
	free(b.roots);
	free(b.unwind);
	free(b.exported);
	free(b.cands);
	free(b.zsyms);
	free(b.recs);
	return rc;
}
