/* Unit test of the heap state builder (host/lib/heap/heap.c) and its block tree:
 * synthetic operation sequences with exact expected state. */
#include <stdlib.h>

#include "host/lib/analysis/trend.h"
#include "host/lib/heap/blocktree.h"
#include "host/lib/heap/heap.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

#define MS 1000000ull

static struct heap h;
static uint32_t image = 1, pid = 100;

static void fresh(void)
{
	heap_release(&h);
	if (heap_init(&h)) {
		printf("heap_init failed\n");
		exit(2);
	}
	image = 1;
	pid = 100;
}

static uint32_t site(const char *key, const char *fn)
{
	return heap_site(&h, key, fn, "prog.c", 10);
}

static uint32_t stack1(uint64_t a)
{
	uint64_t ips[2] = { a, 0x400100 };

	return heap_stack(&h, image, ips, 2);
}

static int apply(uint8_t op, uint64_t ns, uint64_t ptr, uint64_t size, uint64_t old, uint32_t s, uint32_t st,
                 uint32_t flags)
{
	struct heap_op o = { .op = op,
		             .flags = flags,
		             .ns = ns,
		             .ptr = ptr,
		             .size = size,
		             .old = old,
		             .tid = pid,
		             .site = s,
		             .stack = st };

	return heap_apply(&h, image, pid, &o);
}

static void alloc(uint8_t op, uint64_t ns, uint64_t ptr, uint64_t size, uint32_t s)
{
	CHECK_EQ_U64(apply(op, ns, ptr, size, 0, s, 0, 0), 0);
}

static void release(uint8_t op, uint64_t ns, uint64_t ptr, uint32_t s)
{
	CHECK_EQ_U64(apply(op, ns, ptr, 0, 0, s, 0, 0), 0);
}

static const struct heap_illegal *find_illegal(enum heap_illegal_kind kind, uint8_t op, uint8_t alloc_op)
{
	uint32_t i;

	for (i = 0; i < h.nillegal; i++)
		if (h.illegal[i].kind == kind && h.illegal[i].op == op && h.illegal[i].alloc_op == alloc_op)
			return &h.illegal[i];
	return NULL;
}

static void test_leak_and_peak(void)
{
	uint32_t a1, a2, b;
	const struct heap_fn *f;

	fresh();
	a1 = site("leaky+0x10", "leaky");
	a2 = site("leaky+0x30", "leaky");
	b = site("tidy+0x8", "tidy");
	CHECK_EQ_U64(site("leaky+0x10", "leaky"), a1); /* interned */
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 100, a1);
	alloc(LP_MEM_MALLOC, 2 * MS, 0x2000, 100, a1);
	alloc(LP_MEM_CALLOC, 3 * MS, 0x3000, 100, a2);
	release(LP_MEM_FREE, 4 * MS, 0x1000, b);
	alloc(LP_MEM_MALLOC, 5 * MS, 0x4000, 50, b);
	release(LP_MEM_FREE, 6 * MS, 0x4000, b);
	heap_settle(&h);

	CHECK_EQ_U64(h.sites[a1].c.live_objects, 1);
	CHECK_EQ_U64(h.sites[a1].c.live_bytes, 100);
	CHECK_EQ_U64(h.sites[a1].c.peak_bytes, 200);
	CHECK_EQ_U64(h.sites[a1].c.peak_ns, 2 * MS);
	CHECK_EQ_U64(h.sites[a1].c.allocs, 2);
	CHECK_EQ_U64(h.sites[a1].c.frees, 1); /* released at b's site, counted for a1's block */
	CHECK_EQ_U64(h.sites[a1].c.bytes_allocated, 200);
	CHECK_EQ_U64(h.sites[a2].c.live_bytes, 100);
	CHECK_EQ_U64(h.sites[b].c.live_objects, 0);
	CHECK_EQ_U64(h.sites[b].c.peak_bytes, 50);
	CHECK_EQ_U64(h.sites[b].c.allocs, 1);
	/* the global peak: 300 bytes at 3 ms, when a1 held 200 and b nothing */
	CHECK_EQ_U64(h.peak_bytes, 300);
	CHECK_EQ_U64(h.peak_objects, 3);
	CHECK_EQ_U64(h.peak_ns, 3 * MS);
	CHECK_EQ_U64(h.sites[a1].c.at_peak_bytes, 200);
	CHECK_EQ_U64(h.sites[a1].c.at_peak_objects, 2);
	CHECK_EQ_U64(h.sites[a2].c.at_peak_bytes, 100);
	CHECK_EQ_U64(h.sites[b].c.at_peak_bytes, 0);
	/* per function: leaky holds both its sites */
	f = &h.fns[h.sites[a1].fn];
	CHECK_STR(f->name, "leaky");
	CHECK_EQ_U64(h.sites[a2].fn, h.sites[a1].fn);
	CHECK_EQ_U64(f->c.live_objects, 2);
	CHECK_EQ_U64(f->c.live_bytes, 200);
	CHECK_EQ_U64(f->c.peak_bytes, 300);
	CHECK_EQ_U64(f->c.allocs, 3);
	CHECK_EQ_U64(h.live_bytes, 200);
	CHECK_EQ_U64(h.allocs, 4);
	CHECK_EQ_U64(h.frees, 2);
	CHECK_EQ_U64(h.nillegal, 0);
	CHECK_EQ_U64(h.overlap_count, 0);
	CHECK_EQ_U64(h.nprocs, 1);
	CHECK_EQ_U64(h.procs[0].live_objects, 2);
	CHECK_EQ_U64(h.procs[0].peak_bytes, 300);

	/* the process exits: what it holds is unfreed at exit */
	heap_proc_exit(&h, image, 7 * MS, 0);
	CHECK_EQ_U64(h.procs[0].unfreed_objects, 2);
	CHECK_EQ_U64(h.procs[0].unfreed_bytes, 200);
	CHECK_EQ_U64(h.sites[a1].c.unfreed_objects, 1);
	CHECK_EQ_U64(h.sites[a2].c.unfreed_bytes, 100);
	CHECK_EQ_U64(h.sites[b].c.unfreed_objects, 0);
	CHECK_EQ_U64(h.unfreed_bytes, 200);
}

/* A later peak moves the at-peak state; sites untouched since keep theirs. */
static void test_peak_moves(void)
{
	uint32_t a, b;

	fresh();
	a = site("a+0x1", "a");
	b = site("b+0x1", "b");
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 100, a);
	release(LP_MEM_FREE, 2 * MS, 0x1000, a);
	alloc(LP_MEM_MALLOC, 3 * MS, 0x2000, 80, b);
	alloc(LP_MEM_MALLOC, 4 * MS, 0x3000, 10, a);
	alloc(LP_MEM_MALLOC, 5 * MS, 0x4000, 30, b); /* peak: 120 */
	release(LP_MEM_FREE, 6 * MS, 0x4000, b);
	release(LP_MEM_FREE, 7 * MS, 0x2000, b);
	heap_settle(&h);
	CHECK_EQ_U64(h.peak_bytes, 120);
	CHECK_EQ_U64(h.peak_ns, 5 * MS);
	CHECK_EQ_U64(h.sites[a].c.at_peak_bytes, 10);
	CHECK_EQ_U64(h.sites[b].c.at_peak_bytes, 110);
	CHECK_EQ_U64(h.sites[b].c.at_peak_objects, 2);
	CHECK_EQ_U64(h.sites[a].c.peak_bytes, 100);
	CHECK_EQ_U64(h.sites[a].c.peak_ns, 1 * MS);
	/* settling twice changes nothing; applying goes on after it */
	heap_settle(&h);
	CHECK_EQ_U64(h.sites[b].c.at_peak_bytes, 110);
	alloc(LP_MEM_MALLOC, 8 * MS, 0x5000, 500, a);
	heap_settle(&h);
	CHECK_EQ_U64(h.peak_bytes, 510);
	CHECK_EQ_U64(h.sites[a].c.at_peak_bytes, 510);
	CHECK_EQ_U64(h.sites[b].c.at_peak_bytes, 0);
}

static void test_double_free(void)
{
	uint32_t sa, sf1, sf2, st_a, st_f1, st_f2;
	const struct heap_illegal *il;

	fresh();
	sa = site("make+0x10", "make");
	sf1 = site("drop+0x20", "drop");
	sf2 = site("again+0x30", "again");
	st_a = stack1(0x401010);
	st_f1 = stack1(0x401020);
	st_f2 = stack1(0x401030);
	CHECK(st_a && st_f1 && st_f2 && st_a != st_f1);
	CHECK_EQ_U64(apply(LP_MEM_MALLOC, 1 * MS, 0x1000, 32, 0, sa, st_a, 0), 0);
	CHECK_EQ_U64(apply(LP_MEM_FREE, 2 * MS, 0x1000, 0, 0, sf1, st_f1, 0), 0);
	CHECK_EQ_U64(apply(LP_MEM_FREE, 3 * MS, 0x1000, 0, 0, sf2, st_f2, 0), 0);
	CHECK_EQ_U64(h.illegal_counts[HEAP_DOUBLE_FREE], 1);
	CHECK_EQ_U64(h.nillegal, 1);
	il = &h.illegal[0];
	CHECK_EQ_U64(il->kind, HEAP_DOUBLE_FREE);
	CHECK_STR(heap_illegal_name(il->kind), "double_free");
	CHECK_EQ_U64(il->op, LP_MEM_FREE);
	CHECK_EQ_U64(il->ptr, 0x1000);
	CHECK_EQ_U64(il->ns, 3 * MS);
	CHECK_EQ_U64(il->site, sf2);
	CHECK_EQ_U64(il->stack, st_f2);
	CHECK(il->has_block);
	CHECK_EQ_U64(il->alloc_site, sa);
	CHECK_EQ_U64(il->alloc_stack, st_a);
	CHECK_EQ_U64(il->alloc_op, LP_MEM_MALLOC);
	CHECK_EQ_U64(il->block_size, 32);
	CHECK(il->has_free);
	CHECK_EQ_U64(il->free_site, sf1);
	CHECK_EQ_U64(il->free_stack, st_f1);
	CHECK_EQ_U64(il->free_ns, 2 * MS);
	CHECK(!il->kept);
	CHECK_EQ_U64(h.live_objects, 0);
	CHECK_EQ_U64(h.frees, 1);
	/* the same double free again only counts */
	CHECK_EQ_U64(apply(LP_MEM_FREE, 4 * MS, 0x1000, 0, 0, sf2, st_f2, 0), 0);
	CHECK_EQ_U64(h.nillegal, 1);
	CHECK_EQ_U64(h.illegal[0].count, 2);
	CHECK_EQ_U64(h.illegal_counts[HEAP_DOUBLE_FREE], 2);
	/* kept from libc: a record of its own, marked */
	CHECK_EQ_U64(apply(LP_MEM_FREE, 5 * MS, 0x1000, 0, 0, sf2, st_f2, LP_MEM_KEPT), 0);
	CHECK_EQ_U64(h.nillegal, 2);
	CHECK(h.illegal[1].kept);
	CHECK_EQ_U64(h.kept_releases, 1);
	/* free(NULL) is no error */
	release(LP_MEM_FREE, 6 * MS, 0, sf1);
	CHECK_EQ_U64(h.null_releases, 1);
	CHECK_EQ_U64(h.nillegal, 2);
	CHECK(!h.illegal[0].after_loss);
	/* after lost events the same finding is a record of its own, marked */
	heap_lost(&h, image, 7 * MS, 5);
	CHECK_EQ_U64(h.lost, 5);
	CHECK_EQ_U64(apply(LP_MEM_FREE, 8 * MS, 0x1000, 0, 0, sf2, st_f2, 0), 0);
	CHECK_EQ_U64(h.nillegal, 3);
	CHECK(h.illegal[2].after_loss);
	CHECK_EQ_U64(h.illegal_after_loss, 1);
	CHECK_EQ_U64(h.illegal_counts[HEAP_DOUBLE_FREE], 4);
}

static void test_interior_and_never(void)
{
	uint32_t sa, sf;
	const struct heap_illegal *il;

	fresh();
	sa = site("make+0x10", "make");
	sf = site("bad+0x20", "bad");
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 64, sa);
	release(LP_MEM_FREE, 2 * MS, 0x1008, sf);
	CHECK_EQ_U64(h.illegal_counts[HEAP_INTERIOR_POINTER], 1);
	il = find_illegal(HEAP_INTERIOR_POINTER, LP_MEM_FREE, LP_MEM_MALLOC);
	if (CHECK(il)) {
		CHECK_EQ_U64(il->ptr, 0x1008);
		CHECK_EQ_U64(il->block_ptr, 0x1000);
		CHECK_EQ_U64(il->block_size, 64);
		CHECK_EQ_U64(il->alloc_site, sa);
		CHECK_EQ_U64(il->site, sf);
	}
	/* the block stays live */
	CHECK_EQ_U64(h.live_objects, 1);
	CHECK_EQ_U64(h.sites[sa].c.live_bytes, 64);
	/* one past the end is not inside */
	release(LP_MEM_FREE, 3 * MS, 0x1040, sf);
	CHECK_EQ_U64(h.illegal_counts[HEAP_NEVER_ALLOCATED], 1);
	il = find_illegal(HEAP_NEVER_ALLOCATED, LP_MEM_FREE, 0);
	if (CHECK(il)) {
		CHECK(!il->has_block);
		CHECK_EQ_U64(il->ptr, 0x1040);
	}
	/* a stack address, a delete of nothing */
	release(LP_MEM_DELETE, 4 * MS, 0x7ffe0000, sf);
	CHECK_EQ_U64(h.illegal_counts[HEAP_NEVER_ALLOCATED], 2);
	CHECK(find_illegal(HEAP_NEVER_ALLOCATED, LP_MEM_DELETE, 0) != NULL);
	/* a block of 0 bytes holds its address */
	alloc(LP_MEM_MALLOC, 5 * MS, 0x9000, 0, sa);
	release(LP_MEM_FREE, 6 * MS, 0x9000, sf);
	CHECK_EQ_U64(h.illegal_counts[HEAP_NEVER_ALLOCATED], 2);
	CHECK_EQ_U64(h.frees, 1);
	CHECK_EQ_U64(h.nillegal, 3);
}

static void test_overlap(void)
{
	uint32_t sa, sb;
	const struct heap_overlap *o;

	fresh();
	sa = site("a+0x1", "a");
	sb = site("b+0x1", "b");
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 100, sa);
	alloc(LP_MEM_MALLOC, 2 * MS, 0x2000, 16, sa);
	alloc(LP_MEM_MALLOC, 3 * MS, 0x3000, 16, sa);
	/* inside the first block */
	alloc(LP_MEM_MALLOC, 4 * MS, 0x1032, 10, sb);
	CHECK_EQ_U64(h.overlap_count, 1);
	CHECK_EQ_U64(h.noverlaps, 1);
	o = &h.overlaps[0];
	CHECK_EQ_U64(o->ptr, 0x1032);
	CHECK_EQ_U64(o->size, 10);
	CHECK_EQ_U64(o->site, sb);
	CHECK_EQ_U64(o->old_ptr, 0x1000);
	CHECK_EQ_U64(o->old_size, 100);
	CHECK_EQ_U64(o->old_site, sa);
	CHECK_EQ_U64(o->old_ns, 1 * MS);
	/* the old block is gone (not freed), the new one live */
	CHECK_EQ_U64(h.sites[sa].c.live_objects, 2);
	CHECK_EQ_U64(h.sites[sa].c.frees, 0);
	CHECK_EQ_U64(h.sites[sb].c.live_bytes, 10);
	/* one block spanning two live ones replaces both */
	alloc(LP_MEM_MALLOC, 5 * MS, 0x1ff0, 0x1020, sb);
	CHECK_EQ_U64(h.overlap_count, 3);
	CHECK_EQ_U64(h.overlaps[1].old_ptr, 0x3000);
	CHECK_EQ_U64(h.overlaps[2].old_ptr, 0x2000);
	CHECK_EQ_U64(h.sites[sa].c.live_objects, 0);
	CHECK_EQ_U64(h.live_objects, 2);
	/* adjacent is no overlap */
	alloc(LP_MEM_MALLOC, 6 * MS, 0x1032 + 10, 6, sb);
	CHECK_EQ_U64(h.overlap_count, 3);
	CHECK_EQ_U64(h.nillegal, 0);
}

static void test_mismatch(void)
{
	static const struct {
		uint8_t alloc, release;
	} cases[] = {
		{ LP_MEM_NEW, LP_MEM_FREE },
		{ LP_MEM_NEW_ARRAY, LP_MEM_FREE },
		{ LP_MEM_MALLOC, LP_MEM_DELETE },
		{ LP_MEM_NEW_ARRAY, LP_MEM_DELETE },
		{ LP_MEM_CALLOC, LP_MEM_DELETE_ARRAY },
		{ LP_MEM_NEW, LP_MEM_DELETE_ARRAY },
		{ LP_MEM_NEW, LP_MEM_REALLOC },
		{ LP_MEM_ALIGNED, LP_MEM_DELETE },
	};
	static const struct {
		uint8_t alloc, release;
	} fine[] = {
		{ LP_MEM_MALLOC, LP_MEM_FREE },
		{ LP_MEM_CALLOC, LP_MEM_FREE },
		{ LP_MEM_ALIGNED, LP_MEM_FREE },
		{ LP_MEM_NEW, LP_MEM_DELETE },
		{ LP_MEM_NEW_ARRAY, LP_MEM_DELETE_ARRAY },
		{ LP_MEM_MALLOC, LP_MEM_REALLOC },
	};
	uint32_t sa, sf, i;
	uint64_t ns = MS, ptr;

	fresh();
	sa = site("a+0x1", "a");
	sf = site("f+0x1", "f");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct heap_illegal *il;

		ptr = 0x10000 + i * 0x100;
		alloc(cases[i].alloc, ns++, ptr, 24, sa);
		if (cases[i].release == LP_MEM_REALLOC)
			CHECK_EQ_U64(apply(LP_MEM_REALLOC, ns++, 0x90000, 48, ptr, sf, 0, 0), 0);
		else
			release(cases[i].release, ns++, ptr, sf);
		il = find_illegal(HEAP_MISMATCH, cases[i].release, cases[i].alloc);
		if (!CHECK(il)) {
			printf("  no mismatch for %s of %s\n", heap_op_name(cases[i].release),
			       heap_op_name(cases[i].alloc));
			continue;
		}
		CHECK_EQ_U64(il->block_ptr, ptr);
		CHECK_EQ_U64(il->alloc_site, sa);
		CHECK_EQ_U64(il->site, sf);
		CHECK_STR(heap_illegal_name(il->kind), "mismatch");
		/* the release still happened */
		CHECK(!heap_find_block(&h.procs[0], ptr, &ptr, &ptr, &i) || ptr == 0x90000);
	}
	CHECK_EQ_U64(h.illegal_counts[HEAP_MISMATCH], sizeof(cases) / sizeof(cases[0]));
	CHECK_EQ_U64(h.nillegal, sizeof(cases) / sizeof(cases[0]));
	CHECK_EQ_U64(h.sites[sa].c.live_objects, 0);
	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		ptr = 0x20000 + i * 0x100;
		alloc(fine[i].alloc, ns++, ptr, 24, sa);
		if (fine[i].release == LP_MEM_REALLOC)
			CHECK_EQ_U64(apply(LP_MEM_REALLOC, ns++, 0, 0, ptr, sf, 0, 0), 0);
		else
			release(fine[i].release, ns++, ptr, sf);
	}
	CHECK_EQ_U64(h.illegal_counts[HEAP_MISMATCH], sizeof(cases) / sizeof(cases[0]));
	CHECK_EQ_U64(h.sites[sa].c.live_objects, 0);
}

static void test_realloc_chain(void)
{
	uint32_t s, t;
	uint64_t p, sz;

	fresh();
	s = site("grow+0x1", "grow");
	t = site("other+0x1", "other");
	/* realloc(NULL, 10) allocates */
	CHECK_EQ_U64(apply(LP_MEM_REALLOC, 1 * MS, 0xa000, 10, 0, s, 0, 0), 0);
	CHECK_EQ_U64(h.sites[s].c.live_bytes, 10);
	/* moves */
	CHECK_EQ_U64(apply(LP_MEM_REALLOC, 2 * MS, 0xb000, 20, 0xa000, s, 0, 0), 0);
	/* in place */
	CHECK_EQ_U64(apply(LP_MEM_REALLOC, 3 * MS, 0xb000, 30, 0xb000, s, 0, 0), 0);
	CHECK_EQ_U64(h.sites[s].c.live_objects, 1);
	CHECK_EQ_U64(h.sites[s].c.live_bytes, 30);
	CHECK(heap_find_block(&h.procs[0], 0xb000 + 29, &p, &sz, &t) && p == 0xb000 && sz == 30);
	/* failed: the old block stays */
	CHECK_EQ_U64(apply(LP_MEM_REALLOC, 4 * MS, 0, 1ull << 40, 0xb000, s, 0, LP_MEM_FAILED), 0);
	CHECK_EQ_U64(h.sites[s].c.live_bytes, 30);
	CHECK_EQ_U64(h.sites[s].c.failed, 1);
	/* realloc(p, 0) releases */
	CHECK_EQ_U64(apply(LP_MEM_REALLOC, 5 * MS, 0, 0, 0xb000, s, 0, 0), 0);
	CHECK_EQ_U64(h.sites[s].c.live_objects, 0);
	CHECK_EQ_U64(h.sites[s].c.live_bytes, 0);
	CHECK_EQ_U64(h.sites[s].c.allocs, 3);
	CHECK_EQ_U64(h.sites[s].c.frees, 3);
	CHECK_EQ_U64(h.sites[s].c.bytes_allocated, 60);
	CHECK_EQ_U64(h.sites[s].c.bytes_freed, 60);
	CHECK_EQ_U64(h.sites[s].c.peak_bytes, 30);
	CHECK_EQ_U64(h.nillegal, 0);
	/* realloc of a freed block: a double free by realloc, and the new
	 * block is still live */
	CHECK_EQ_U64(apply(LP_MEM_REALLOC, 6 * MS, 0xc000, 8, 0xb000, s, 0, 0), 0);
	CHECK_EQ_U64(h.illegal_counts[HEAP_DOUBLE_FREE], 1);
	CHECK(find_illegal(HEAP_DOUBLE_FREE, LP_MEM_REALLOC, LP_MEM_REALLOC) != NULL);
	CHECK_EQ_U64(h.sites[s].c.live_bytes, 8);
}

static void test_fork_exec(void)
{
	uint32_t s, parent_image, child_image;
	struct heap_proc *pp, *cp;

	fresh();
	s = site("a+0x1", "a");
	parent_image = image;
	CHECK_EQ_U64(heap_proc_start(&h, parent_image, 100, 0, 0, HEAP_START_EXEC), 0);
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 10, s);
	alloc(LP_MEM_MALLOC, 2 * MS, 0x2000, 20, s);
	/* fork: the child copies both */
	child_image = 2;
	CHECK_EQ_U64(heap_proc_start(&h, child_image, 101, 3 * MS, 100, 0), 0);
	pp = heap_proc_find(&h, parent_image);
	cp = heap_proc_find(&h, child_image);
	if (!CHECK(pp && cp))
		return;
	CHECK(cp->has_parent);
	CHECK_EQ_U64(cp->parent_image, parent_image);
	CHECK_EQ_U64(cp->inherited_objects, 2);
	CHECK_EQ_U64(cp->inherited_bytes, 30);
	CHECK_EQ_U64(h.sites[s].c.live_objects, 4);
	CHECK_EQ_U64(h.sites[s].c.allocs, 2); /* copies are no allocations */
	/* each frees a different one, in its own address space */
	image = child_image;
	pid = 101;
	release(LP_MEM_FREE, 4 * MS, 0x1000, s);
	image = parent_image;
	pid = 100;
	release(LP_MEM_FREE, 5 * MS, 0x2000, s);
	pp = heap_proc_find(&h, parent_image);
	cp = heap_proc_find(&h, child_image);
	CHECK_EQ_U64(pp->live_objects, 1);
	CHECK_EQ_U64(cp->live_objects, 1);
	CHECK(blocktree_find(pp->root, 0x1000) != NULL);
	CHECK(blocktree_find(cp->root, 0x2000) != NULL);
	CHECK(blocktree_find(cp->root, 0x1000) == NULL);
	CHECK_EQ_U64(h.nillegal, 0);
	/* another image of the pid that is no exec (a thread the runtime
	 * gave an image of its own) changes nothing */
	CHECK_EQ_U64(heap_proc_start(&h, 9, 101, 6 * MS, 0, 0), 0);
	CHECK(!heap_proc_find(&h, child_image)->execed);
	CHECK_EQ_U64(h.sites[s].c.live_objects, 2);
	/* the child execs: its address space, and its blocks, are gone */
	CHECK_EQ_U64(heap_proc_start(&h, 3, 101, 6 * MS, 0, HEAP_START_EXEC), 0);
	cp = heap_proc_find(&h, child_image);
	CHECK(cp->execed);
	CHECK_EQ_U64(cp->live_objects, 0);
	CHECK_EQ_U64(h.dropped_at_exec, 1);
	CHECK_EQ_U64(h.sites[s].c.live_objects, 1);
	CHECK_EQ_U64(h.sites[s].c.live_bytes, 10);
	/* a second thread's start is no new image */
	CHECK_EQ_U64(heap_proc_start(&h, parent_image, 100, 7 * MS, 0, HEAP_START_EXEC), 0);
	CHECK_EQ_U64(h.nprocs, 4);
	CHECK_EQ_U64(heap_proc_find(&h, parent_image)->live_objects, 1);
	/* the parent exits */
	heap_proc_exit(&h, parent_image, 8 * MS, 0);
	CHECK_EQ_U64(h.sites[s].c.unfreed_objects, 1);
	CHECK_EQ_U64(h.sites[s].c.unfreed_bytes, 10);
	/* the pid given to a new process: the one that exited keeps its
	 * exit and its unfreed blocks (the recorder writes an exit only into
	 * a pid's last image, so an image that exited did not exec) */
	CHECK_EQ_U64(heap_proc_start(&h, 5, 100, 9 * MS, 0, HEAP_START_EXEC), 0);
	CHECK(!heap_proc_find(&h, parent_image)->execed);
	CHECK(heap_proc_find(&h, parent_image)->exited);
	CHECK_EQ_U64(h.sites[s].c.unfreed_objects, 1);
	CHECK_EQ_U64(h.sites[s].c.live_objects, 1);
	CHECK_EQ_U64(h.unfreed_objects, 1);
	CHECK_EQ_U64(h.dropped_at_exec, 1);
	CHECK_EQ_U64(heap_proc_find(&h, 5)->live_objects, 0);
}

static void test_fold(void)
{
	struct heap_op o = { .op = LP_MEM_FOLD, .ns = 5 * MS, .count = 1000, .bytes = 64000 };
	uint32_t s;

	fresh();
	s = site("short+0x1", "short");
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 16, s);
	o.site = s;
	CHECK_EQ_U64(heap_apply(&h, image, pid, &o), 0);
	CHECK_EQ_U64(heap_apply(&h, image, pid, &o), 0);
	CHECK_EQ_U64(h.sites[s].c.allocs, 2001);
	CHECK_EQ_U64(h.sites[s].c.frees, 2000);
	CHECK_EQ_U64(h.sites[s].c.bytes_allocated, 128016);
	CHECK_EQ_U64(h.sites[s].c.folded, 2000);
	CHECK_EQ_U64(h.sites[s].c.folded_bytes, 128000);
	CHECK_EQ_U64(h.sites[s].c.live_objects, 1);
	CHECK_EQ_U64(h.sites[s].c.live_bytes, 16);
	CHECK_EQ_U64(h.sites[s].c.peak_bytes, 16);
	CHECK_EQ_U64(h.fns[h.sites[s].fn].c.folded, 2000);
	CHECK_EQ_U64(h.folded, 2000);
	CHECK_EQ_U64(h.folded_bytes, 128000);
	CHECK_EQ_U64(h.folds, 2);
	CHECK_EQ_U64(h.peak_bytes, 16);
}

/* Operations of a process applied after its exit (another thread's, later
 * in time order than the exit the recorder wrote): its unfreed blocks stay
 * its live ones, in the totals, the site and the process alike. */
static void test_exit_then_late_ops(void)
{
	struct heap_proc *p;
	uint32_t s, t;

	fresh();
	s = site("work+0x1", "work");
	t = site("keep+0x1", "keep");
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 10, s);
	alloc(LP_MEM_MALLOC, 2 * MS, 0x2000, 20, s);
	alloc(LP_MEM_MALLOC, 3 * MS, 0x3000, 30, t);
	heap_proc_exit(&h, image, 4 * MS, 0);
	CHECK_EQ_U64(h.unfreed_objects, 3);
	CHECK_EQ_U64(h.sites[s].c.unfreed_objects, 2);
	/* a worker's frees and one more block, after the exit */
	release(LP_MEM_FREE, 5 * MS, 0x1000, s);
	release(LP_MEM_FREE, 6 * MS, 0x2000, s);
	alloc(LP_MEM_MALLOC, 7 * MS, 0x4000, 40, t);
	p = heap_proc_find(&h, image);
	if (!CHECK(p != NULL))
		return;
	CHECK_EQ_U64(h.live_objects, 2);
	CHECK_EQ_U64(h.unfreed_objects, 2);
	CHECK_EQ_U64(h.unfreed_bytes, 70);
	CHECK_EQ_U64(p->live_objects, 2);
	CHECK_EQ_U64(p->unfreed_objects, 2);
	CHECK_EQ_U64(p->unfreed_bytes, 70);
	CHECK_EQ_U64(h.sites[s].c.unfreed_objects, 0);
	CHECK_EQ_U64(h.sites[s].c.unfreed_bytes, 0);
	CHECK_EQ_U64(h.sites[t].c.unfreed_objects, 2);
	CHECK_EQ_U64(h.fns[h.sites[s].fn].c.unfreed_objects, 0);
	CHECK_EQ_U64(h.fns[h.sites[t].fn].c.unfreed_bytes, 70);
	CHECK_EQ_U64(h.sites[s].c.frees, 2);
	CHECK_EQ_U64(h.nillegal, 0);
	/* the process ended after its last operation */
	CHECK_EQ_U64(p->end_ns, 7 * MS);
	CHECK(p->exited);
}

/* A shell's loop of $(...): a parent holding 200 blocks forks a child
 * every 5 ms for 2 s; each child copies them, makes 3 blocks of its own
 * and exits 2 ms later without freeing any.  The parent holds the same
 * all along: no site grows, though every child exits with its copies (and
 * its own 3) unfreed; they leave the samples when it exits, the parent's
 * stay when it exits last.  A process that leaks until it exits at the
 * end of the trace is still growing. */
static void test_forks_not_growing(void)
{
	struct heap_growth g;
	uint32_t boot, own, leak, parent_image = 1, next_image = 2;
	uint64_t t;
	int i, k = 0;

	fresh();
	boot = site("boot+0x1", "boot");
	own = site("child+0x1", "child");
	CHECK_EQ_U64(heap_proc_start(&h, parent_image, 100, 0, 0, 0), 0);
	for (i = 0; i < 200; i++)
		alloc(LP_MEM_MALLOC, (uint64_t)i * MS / 10, 0x10000000 + (uint64_t)i * 0x100, 100, boot);
	for (t = 50 * MS; t < 2050 * MS; t += 5 * MS, k++) {
		uint32_t child = next_image++;

		CHECK_EQ_U64(heap_proc_start(&h, child, 1000 + (uint32_t)k, t, 100, 0), 0);
		image = child;
		pid = 1000 + (uint32_t)k;
		for (i = 0; i < 3; i++)
			alloc(LP_MEM_MALLOC, t + MS + (uint64_t)i, 0x20000000 + (uint64_t)i * 0x100, 64, own);
		heap_proc_exit(&h, child, t + 2 * MS, 0);
		image = parent_image;
		pid = 100;
		/* the parent's own churn around each fork */
		alloc(LP_MEM_MALLOC, t + 3 * MS, 0x30000000, 32, own);
		release(LP_MEM_FREE, t + 4 * MS, 0x30000000, own);
	}
	/* every child has exited: the samples hold the parent's 200 blocks;
	 * its own exit, the program's last, leaves them there */
	heap_advance(&h, 2090 * MS);
	heap_settle(&h);
	CHECK_EQ_U64(h.sites[boot].c.series[h.series_n - 1], 200 * 100);
	CHECK_EQ_U64(h.sites[own].c.series[h.series_n - 1], 0);
	heap_proc_exit(&h, parent_image, 2100 * MS, 0);
	heap_advance(&h, 2100 * MS);
	heap_settle(&h);
	CHECK_EQ_U64(h.sites[boot].c.series[h.series_n - 1], 200 * 100);
	CHECK(heap_proc_find(&h, parent_image)->held);
	CHECK(!heap_proc_find(&h, 2)->held);
	CHECK_EQ_U64(h.running, 0);
	CHECK_EQ_U64(h.unfreed_objects, 200 + (uint64_t)k * 203);
	CHECK_EQ_U64(h.sites[boot].c.live_objects, 200 + (uint64_t)k * 200);
	heap_growth(&h, &h.sites[boot].c, &g);
	CHECK(g.samples >= HEAP_GROWTH_MIN_SAMPLES);
	if (!CHECK(!g.growing))
		printf("  boot: p %g rate %f\n", g.p_value, g.rate_bps);
	heap_growth(&h, &h.sites[own].c, &g);
	CHECK(g.samples >= HEAP_GROWTH_MIN_SAMPLES);
	if (!CHECK(!g.growing))
		printf("  child: p %g rate %f\n", g.p_value, g.rate_bps);
	heap_growth(&h, &h.fns[h.sites[boot].fn].c, &g);
	CHECK(!g.growing);
	/* one process that leaks 100 bytes every 10 ms for 2 s, then exits:
	 * its blocks count in the samples up to the end */
	fresh();
	leak = site("leak+0x1", "leak");
	for (t = 0; t < 2000 * MS; t += 10 * MS)
		alloc(LP_MEM_MALLOC, t, 0x1000 + t / MS * 0x100, 100, leak);
	heap_proc_exit(&h, image, 2000 * MS, 0);
	heap_settle(&h);
	CHECK_EQ_U64(h.sites[leak].c.unfreed_objects, 200);
	CHECK_EQ_U64(h.sites[leak].c.series[h.series_n - 1], 20000);
	heap_growth(&h, &h.sites[leak].c, &g);
	CHECK(g.growing);
	CHECK(g.rate_bps > 9000 && g.rate_bps < 11000);
}

static uint64_t lcg(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return *state >> 33;
}

static void test_growth(void)
{
	struct heap_growth g;
	uint32_t leak, noise, boot;
	uint64_t rng = 42, ptr = 0x100000, t;
	uint64_t live[16] = { 0 };
	int i;

	fresh();
	leak = site("leak+0x1", "leak");
	noise = site("noise+0x1", "noise");
	boot = site("boot+0x1", "boot");
	/* boot: 50 blocks in the first 100 ms, then level */
	for (i = 0; i < 50; i++)
		alloc(LP_MEM_MALLOC, (uint64_t)i * 2 * MS, 0x10000000 + (uint64_t)i * 0x100, 200, boot);
	/* 10 s: leak loses 100 bytes every 10 ms; noise keeps 0..16 blocks
	 * of random sizes, changing every 10 ms */
	for (t = 1 * MS; t < 10000 * MS; t += 10 * MS) {
		uint64_t k = lcg(&rng) % 16;

		alloc(LP_MEM_MALLOC, t, ptr, 100, leak);
		ptr += 0x100;
		if (live[k]) {
			release(LP_MEM_FREE, t + 1, live[k], noise);
			live[k] = 0;
		} else {
			live[k] = 0x20000000 + k * 0x10000;
			alloc(LP_MEM_MALLOC, t + 1, live[k], 64 + lcg(&rng) % 4000, noise);
		}
	}
	heap_settle(&h);
	CHECK_EQ_U64(h.series_n <= HEAP_SERIES_LEN, 1);
	CHECK(h.series_n >= 2 * HEAP_GROWTH_MIN_SAMPLES);
	heap_growth(&h, &h.sites[leak].c, &g);
	CHECK(g.growing);
	CHECK(g.p_value < 1e-6);
	CHECK(g.samples >= HEAP_GROWTH_MIN_SAMPLES);
	/* 100 bytes per 10 ms */
	if (!CHECK(g.rate_bps > 9900 && g.rate_bps < 10100))
		printf("  rate %f samples %u step %llu\n", g.rate_bps, g.samples, (unsigned long long)h.step_ns);
	heap_growth(&h, &h.sites[noise].c, &g);
	CHECK(!g.growing);
	CHECK(g.p_value > HEAP_GROWTH_P);
	heap_growth(&h, &h.sites[boot].c, &g);
	CHECK(!g.growing);
	CHECK_EQ_U64(h.sites[boot].c.live_bytes, 10000);
	/* too short to tell: a leak of 20 ms */
	fresh();
	leak = site("leak+0x1", "leak");
	for (t = 0; t < 20 * MS; t += MS / 10)
		alloc(LP_MEM_MALLOC, t, 0x1000 + t, 100, leak);
	heap_settle(&h);
	heap_growth(&h, &h.sites[leak].c, &g);
	CHECK(!g.growing);
	CHECK(g.samples < HEAP_GROWTH_MIN_SAMPLES);
	/* and a leak of 200 ms, though that has samples enough */
	fresh();
	leak = site("leak+0x1", "leak");
	for (t = 0; t < 200 * MS; t += MS / 10)
		alloc(LP_MEM_MALLOC, t, 0x1000 + t, 100, leak);
	heap_settle(&h);
	heap_growth(&h, &h.sites[leak].c, &g);
	CHECK(g.samples >= HEAP_GROWTH_MIN_SAMPLES);
	CHECK(!g.growing);
	CHECK(g.p_value == 1);
	/* the same leak for 1.2 s is growing */
	for (; t < 1200 * MS; t += MS / 10)
		alloc(LP_MEM_MALLOC, t, 0x1000 + t, 100, leak);
	heap_settle(&h);
	heap_growth(&h, &h.sites[leak].c, &g);
	CHECK(g.growing);
	/* a leak of 20 ms, then a quiet tail: the later half is level */
	fresh();
	leak = site("leak+0x1", "leak");
	for (t = 0; t < 20 * MS; t += MS / 10)
		alloc(LP_MEM_MALLOC, t, 0x1000 + t, 100, leak);
	heap_advance(&h, 2000 * MS);
	heap_settle(&h);
	heap_growth(&h, &h.sites[leak].c, &g);
	CHECK(g.samples >= HEAP_GROWTH_MIN_SAMPLES);
	CHECK(!g.growing);
}

static void test_trend(void)
{
	uint64_t x[20];
	struct trend t;
	int i;

	for (i = 0; i < 20; i++)
		x[i] = (uint64_t)i * 10;
	trend_analyse(x, NULL, 20, &t);
	CHECK_EQ_U64(t.s, 190);
	CHECK(t.p_rising < 1e-6);
	CHECK(t.slope > 9.999 && t.slope < 10.001);
	for (i = 0; i < 20; i++)
		x[i] = 7;
	trend_analyse(x, NULL, 20, &t);
	CHECK_EQ_U64(t.s, 0);
	CHECK(t.p_rising == 1);
	for (i = 0; i < 20; i++)
		x[i] = 200 - (uint64_t)i;
	trend_analyse(x, NULL, 20, &t);
	CHECK(t.p_rising > 0.99);
}

/* The tree against a brute-force list of blocks. */
static void test_blocktree(void)
{
	struct blockpool bp = { 0 };
	struct heap_block *root = NULL, *b, *copy = NULL;
	static uint64_t have[2048];
	uint64_t rng = 7, n = 0;
	int i, k;

	for (i = 0; i < 20000; i++) {
		uint64_t slot = lcg(&rng) % 2048, addr = slot * 64;

		if (have[slot]) {
			b = blocktree_remove(&root, addr);
			if (!CHECK(b && b->ptr == addr))
				break;
			blockpool_put(&bp, b);
			have[slot] = 0;
			n--;
		} else {
			b = blockpool_get(&bp);
			if (!CHECK(b))
				break;
			b->ptr = addr;
			b->size = 1 + lcg(&rng) % 63;
			blocktree_insert(&root, b);
			have[slot] = b->size;
			n++;
		}
		if (i % 997 == 0) {
			for (k = 0; k < 2048 * 64; k += 13) {
				uint64_t s = (uint64_t)k / 64;
				struct heap_block *c = blocktree_containing(root, (uint64_t)k);
				bool inside = have[s] && (uint64_t)k - s * 64 < have[s];

				if (!CHECK(inside ? c && c->ptr == s * 64 : c == NULL))
					break;
			}
		}
	}
	CHECK_EQ_U64(bp.used, n);
	b = blocktree_floor(root, UINT64_MAX);
	CHECK(n == 0 || (b && have[b->ptr / 64]));
	b = blocktree_ceil(root, 0);
	CHECK(n == 0 || (b && have[b->ptr / 64]));
	CHECK_EQ_U64(blocktree_clone(&bp, root, &copy), 0);
	CHECK_EQ_U64(bp.used, 2 * n);
	for (k = 0; k < 2048; k++)
		CHECK((blocktree_find(copy, (uint64_t)k * 64) != NULL) == (have[k] != 0));
	blocktree_free(&bp, &copy);
	blocktree_free(&bp, &root);
	CHECK_EQ_U64(bp.used, 0);
	blockpool_release(&bp);
}

struct sum_ctx {
	uint64_t objects, bytes, last_end;
	bool overlap;
};

static int sum_cb(void *ctx, uint64_t ptr, uint64_t size, uint64_t ns, uint32_t site, uint32_t stack, uint8_t op)
{
	struct sum_ctx *c = ctx;

	if (c->objects && ptr < c->last_end)
		c->overlap = true;
	c->objects++;
	c->bytes += size;
	c->last_end = ptr + (size ? size : 1);
	return 0;
}

/* Random operations on a few processes with pointers drawn from a small
 * range (so that every kind of finding happens): the totals always agree
 * with the blocks the trees hold, which never overlap. */
static void test_random(void)
{
	uint64_t rng = 99, ns = 0, site_objects, site_bytes, proc_objects, proc_bytes;
	uint32_t sites[4], i, k, round;
	bool ok = true;

	fresh();
	for (i = 0; i < 4; i++) {
		char key[16];

		snprintf(key, sizeof(key), "s%u+0x1", i);
		sites[i] = heap_site(&h, key, i < 2 ? "f" : "g", NULL, 0);
	}
	CHECK_EQ_U64(heap_proc_start(&h, 1, 100, 0, 0, 0), 0);
	for (round = 0; round < 20000 && ok; round++) {
		uint64_t r = lcg(&rng), ptr = 0x1000 + (lcg(&rng) % 64) * 16, size = lcg(&rng) % 40;
		uint8_t ops[] = { LP_MEM_MALLOC, LP_MEM_NEW,          LP_MEM_NEW_ARRAY, LP_MEM_FREE,
			          LP_MEM_DELETE, LP_MEM_DELETE_ARRAY, LP_MEM_REALLOC,   LP_MEM_CALLOC };
		uint8_t op = ops[r % 8];

		ns += 1 + lcg(&rng) % 1000;
		image = 1 + (uint32_t)(lcg(&rng) % h.nprocs);
		pid = heap_proc_find(&h, image)->pid;
		if (r % 997 == 0 && h.nprocs < 6) {
			/* fork */
			CHECK_EQ_U64(heap_proc_start(&h, h.nprocs + 1, 100 + h.nprocs, ns, pid, 0), 0);
			continue;
		}
		CHECK_EQ_U64(apply(op, ns, r % 50 == 0 ? 0 : ptr, size,
		                   op == LP_MEM_REALLOC && r % 3 ? 0x1000 + (lcg(&rng) % 64) * 16 : 0,
		                   sites[lcg(&rng) % 4], 0, r % 89 == 0 ? LP_MEM_KEPT : 0),
		             0);
		if (round % 500)
			continue;
		site_objects = site_bytes = proc_objects = proc_bytes = 0;
		for (k = 0; k < h.nsites; k++) {
			site_objects += h.sites[k].c.live_objects;
			site_bytes += h.sites[k].c.live_bytes;
		}
		for (k = 0; k < h.nprocs; k++) {
			struct sum_ctx c = { 0 };

			heap_foreach_block(&h.procs[k], sum_cb, &c);
			ok &= CHECK(!c.overlap);
			ok &= CHECK_EQ_U64(c.objects, h.procs[k].live_objects);
			ok &= CHECK_EQ_U64(c.bytes, h.procs[k].live_bytes);
			proc_objects += c.objects;
			proc_bytes += c.bytes;
		}
		ok &= CHECK_EQ_U64(site_objects, h.live_objects);
		ok &= CHECK_EQ_U64(site_bytes, h.live_bytes);
		ok &= CHECK_EQ_U64(proc_objects, h.live_objects);
		ok &= CHECK_EQ_U64(proc_bytes, h.live_bytes);
		ok &= CHECK_EQ_U64(h.fns[h.sites[sites[0]].fn].c.live_bytes,
		                   h.sites[sites[0]].c.live_bytes + h.sites[sites[1]].c.live_bytes);
		ok &= CHECK(h.peak_bytes >= h.live_bytes);
	}
	CHECK(h.nprocs > 1);
	for (k = 0; k < HEAP_ILLEGAL_KINDS; k++)
		CHECK(h.illegal_counts[k] > 0);
	CHECK(h.overlap_count > 0);
	CHECK(h.kept_releases > 0);
}

/* A heap listing (LP_MEM_BEFORE ... BASELINE) in a stream that began
 * late: listed blocks join the state without counting as allocations, one
 * live already stays, one overlapping a live block replaces it; a complete
 * listing clears partial, so releasing a block never live is illegal
 * again, unless the runtime's table held it (KNOWN); an incomplete one
 * leaves the state partial. */
static void test_listing(void)
{
	uint32_t sa, sb;

	fresh();
	sa = site("a+0x1", "a");
	sb = site("b+0x1", "b");
	heap_set_partial(&h, 1 * MS);
	alloc(LP_MEM_MALLOC, 2 * MS, 0x1000, 16, sa);
	CHECK_EQ_U64(apply(LP_MEM_MALLOC, 3 * MS, 0x1000, 16, 0, sa, 0, LP_MEM_BEFORE), 0);
	CHECK_EQ_U64(apply(LP_MEM_NEW, 3 * MS, 0x2000, 32, 0, sb, 0, LP_MEM_BEFORE), 0);
	CHECK_EQ_U64(apply(LP_MEM_MALLOC, 3 * MS, 0x3000, 8, 0, sb, 0, LP_MEM_BEFORE), 0);
	CHECK_EQ_U64(h.partial, 1);
	CHECK_EQ_U64(apply(LP_MEM_BASELINE, 3 * MS, 3, 56, 0, 0, 0, 0), 0);
	CHECK_EQ_U64(h.partial, 0);
	CHECK_EQ_U64(h.listings, 1);
	CHECK_EQ_U64(h.listed_objects, 2);
	CHECK_EQ_U64(h.listed_bytes, 40);
	CHECK_EQ_U64(h.live_objects, 3);
	CHECK_EQ_U64(h.allocs, 1);
	CHECK_EQ_U64(h.sites[sb].c.listed, 2);
	CHECK_EQ_U64(h.sites[sb].c.allocs, 0);
	/* a block listed as made by new, released by delete: no mismatch */
	release(LP_MEM_DELETE, 4 * MS, 0x2000, sb);
	CHECK_EQ_U64(h.nillegal, 0);
	CHECK_EQ_U64(h.sites[sb].c.frees, 1);
	/* never live, whole state: illegal; the table held it: apart */
	release(LP_MEM_FREE, 5 * MS, 0x9000, sa);
	CHECK_EQ_U64(h.illegal_counts[HEAP_NEVER_ALLOCATED], 1);
	CHECK_EQ_U64(apply(LP_MEM_FREE, 6 * MS, 0xa000, 0, 0, sa, 0, LP_MEM_KNOWN), 0);
	CHECK_EQ_U64(h.illegal_counts[HEAP_NEVER_ALLOCATED], 1);
	CHECK_EQ_U64(h.released_unknown, 1);
	/* a listed block over a live one: the live one went unseen */
	CHECK_EQ_U64(apply(LP_MEM_MALLOC, 7 * MS, 0x1008, 64, 0, sb, 0, LP_MEM_BEFORE), 0);
	CHECK_EQ_U64(h.listed_dropped, 1);
	CHECK_EQ_U64(h.overlap_count, 0);
	CHECK_EQ_U64(apply(LP_MEM_BASELINE, 7 * MS, 1, 64, 0, 0, 0, LP_MEM_INCOMPLETE), 0);
	CHECK_EQ_U64(h.partial, 1);
	CHECK_EQ_U64(h.listings_incomplete, 1);
}

/* After a pause in tracing (heap_resumed): a block released before it and
 * again after is not a double free; a block from before it that a later
 * allocation overlaps was released in it, not an overlap. */
static void test_resumed(void)
{
	uint32_t sa;

	fresh();
	sa = site("a+0x1", "a");
	alloc(LP_MEM_MALLOC, 1 * MS, 0x1000, 16, sa);
	alloc(LP_MEM_MALLOC, 1 * MS, 0x2000, 16, sa);
	release(LP_MEM_FREE, 2 * MS, 0x1000, sa);
	heap_set_partial(&h, 5 * MS);
	heap_resumed(&h, 5 * MS);
	release(LP_MEM_FREE, 6 * MS, 0x1000, sa);
	CHECK_EQ_U64(h.illegal_counts[HEAP_DOUBLE_FREE], 0);
	CHECK_EQ_U64(h.released_unknown, 1);
	alloc(LP_MEM_MALLOC, 7 * MS, 0x2000, 16, sa);
	CHECK_EQ_U64(h.overlap_count, 0);
	CHECK_EQ_U64(h.released_unseen, 1);
	CHECK_EQ_U64(h.live_objects, 1);
	/* both after the pause: a double free as ever */
	release(LP_MEM_FREE, 8 * MS, 0x2000, sa);
	release(LP_MEM_FREE, 9 * MS, 0x2000, sa);
	CHECK_EQ_U64(h.illegal_counts[HEAP_DOUBLE_FREE], 1);
}

int main(void)
{
	test_leak_and_peak();
	test_peak_moves();
	test_double_free();
	test_interior_and_never();
	test_overlap();
	test_mismatch();
	test_realloc_chain();
	test_fork_exec();
	test_fold();
	test_listing();
	test_resumed();
	test_growth();
	test_exit_then_late_ops();
	test_forks_not_growing();
	test_trend();
	test_blocktree();
	test_random();
	heap_release(&h);
	return check_summary();
}
