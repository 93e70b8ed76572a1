/* Unit test of the folding stage (common/memfold.c): which blocks fold and
 * which do not, the FOLD counts, the order of what comes out, and a long
 * random run that checks that every block is accounted for exactly once,
 * across the queue's growth and its limit. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/memfold.h"
#include "tests/unit/check.h"

#define OUT_MAX 400000u

struct out {
	uint64_t ns;
	uint8_t type;
	uint64_t value;
	struct memevent m;
};

static struct out *outs;
static size_t nout;

static void sink(void *ctx, uint64_t ns, uint8_t type, uint64_t value, const struct memevent *m)
{
	struct out *o;

	if (nout == OUT_MAX)
		return;
	o = &outs[nout++];
	o->ns = ns;
	o->type = type;
	o->value = value;
	if (m)
		o->m = *m;
	else
		memset(&o->m, 0, sizeof(o->m));
}

static struct memfold *stage(uint64_t lifetime)
{
	struct memfold_sink s = { .ctx = NULL, .event = sink };
	struct memfold *f = memfold_new(lifetime, &s);

	nout = 0;
	if (!f) {
		printf("FAIL: memfold_new\n");
		exit(1);
	}
	return f;
}

static void mem(struct memfold *f, uint64_t ns, uint8_t op, uint8_t flags, uint64_t ptr, uint64_t size, uint64_t old,
                uint32_t stack)
{
	struct memevent m = { .op = op, .flags = flags, .ptr = ptr, .size = size, .old = old, .stack = stack };

	memfold_mem(f, ns, &m);
}

static void test_cases(void)
{
	struct memfold_stats st;
	struct memfold *f;

	/* freed in time: only a FOLD, at the end */
	f = stage(10);
	mem(f, 100, LP_MEM_MALLOC, 0, 0xa0, 16, 0, 1);
	mem(f, 105, LP_MEM_FREE, 0, 0xa0, 0, 0, 2);
	CHECK_EQ_U64(nout, 0);
	memfold_flush(f, true);
	if (CHECK_EQ_U64(nout, 1)) {
		CHECK_EQ_U64(outs[0].m.op, LP_MEM_FOLD);
		CHECK_EQ_U64(outs[0].m.stack, 1);
		CHECK_EQ_U64(outs[0].m.count, 1);
		CHECK_EQ_U64(outs[0].m.bytes, 16);
		CHECK_EQ_U64(outs[0].m.lifetime_ns, 10);
		CHECK_EQ_U64(outs[0].ns, 105);
	}
	memfold_get_stats(f, &st);
	CHECK_EQ_U64(st.blocks, 1);
	CHECK_EQ_U64(st.bytes, 16);
	CHECK_EQ_U64(st.folds, 1);
	memfold_free(f);

	/* lived too long; another family; kept; failed; realloc'd: all go out */
	f = stage(10);
	mem(f, 0, LP_MEM_MALLOC, 0, 0xb0, 8, 0, 1);
	mem(f, 20, LP_MEM_FREE, 0, 0xb0, 0, 0, 2);
	mem(f, 21, LP_MEM_NEW, 0, 0xc0, 8, 0, 3);
	mem(f, 22, LP_MEM_FREE, 0, 0xc0, 0, 0, 2);
	mem(f, 23, LP_MEM_NEW_ARRAY, 0, 0xd0, 8, 0, 3);
	mem(f, 24, LP_MEM_DELETE, 0, 0xd0, 0, 0, 4);
	mem(f, 25, LP_MEM_CALLOC, 0, 0xe0, 8, 0, 5);
	mem(f, 26, LP_MEM_FREE, LP_MEM_KEPT, 0xe0, 0, 0, 2);
	mem(f, 27, LP_MEM_MALLOC, LP_MEM_FAILED, 0, 8, 0, 1);
	mem(f, 28, LP_MEM_ALIGNED, 0, 0xf0, 8, 0, 6);
	mem(f, 29, LP_MEM_REALLOC, 0, 0xf8, 16, 0xf0, 7);
	mem(f, 30, LP_MEM_FREE, 0, 0xf8, 0, 0, 2);
	memfold_flush(f, true);
	CHECK_EQ_U64(nout, 12);
	for (size_t i = 0; i < nout; i++) {
		CHECK(outs[i].m.op != LP_MEM_FOLD);
		if (i)
			CHECK(outs[i].ns >= outs[i - 1].ns);
	}
	memfold_free(f);

	/* the CALLOC above is still live after its kept release: a later
	 * real free of it folds; new/delete and new[]/delete[] fold too */
	f = stage(100);
	memfold_func(f, 1, LP_EV_ENTRY, 0x1000);
	mem(f, 2, LP_MEM_NEW, 0, 0x10, 24, 0, 1);
	mem(f, 3, LP_MEM_NEW_ARRAY, 0, 0x20, 40, 0, 2);
	mem(f, 4, LP_MEM_DELETE_ARRAY, 0, 0x20, 0, 0, 3);
	mem(f, 5, LP_MEM_DELETE, 0, 0x10, 0, 0, 3);
	memfold_func(f, 6, LP_EV_EXIT, 0x1000);
	memfold_func(f, 7, LP_EV_LONGJMP, 0);
	memfold_flush(f, true);
	if (CHECK_EQ_U64(nout, 5)) {
		CHECK_EQ_U64(outs[0].type, LP_EV_ENTRY);
		CHECK_EQ_U64(outs[0].value, 0x1000);
		CHECK_EQ_U64(outs[1].type, LP_EV_EXIT);
		CHECK_EQ_U64(outs[2].type, LP_EV_LONGJMP);
		CHECK_EQ_U64(outs[3].m.op + outs[4].m.op, 2 * LP_MEM_FOLD);
		CHECK_EQ_U64(outs[3].m.bytes + outs[4].m.bytes, 64);
	}
	memfold_free(f);

	/* events older than the lifetime go out as time passes */
	f = stage(10);
	mem(f, 0, LP_MEM_MALLOC, 0, 0x40, 8, 0, 1);
	memfold_func(f, 5, LP_EV_ENTRY, 0x2000);
	CHECK_EQ_U64(nout, 0);
	memfold_expire(f, 11);
	CHECK_EQ_U64(nout, 1);
	memfold_expire(f, 16);
	CHECK_EQ_U64(nout, 2);
	/* the block went out: its free does not fold */
	mem(f, 17, LP_MEM_FREE, 0, 0x40, 0, 0, 2);
	memfold_flush(f, true);
	CHECK_EQ_U64(nout, 3);
	memfold_free(f);

	/* FOLD events once per period of the stream's time */
	f = stage(1000);
	for (uint64_t i = 0; i < 30; i++) {
		uint64_t ns = i * (MEMFOLD_PERIOD_NS / 10);

		mem(f, ns, LP_MEM_MALLOC, 0, 0x100 + i, 8, 0, 1);
		mem(f, ns + 1, LP_MEM_FREE, 0, 0x100 + i, 0, 0, 2);
	}
	memfold_flush(f, true);
	{
		uint64_t folds = 0, blocks = 0;

		for (size_t i = 0; i < nout; i++) {
			CHECK_EQ_U64(outs[i].m.op, LP_MEM_FOLD);
			folds++;
			blocks += outs[i].m.count;
		}
		CHECK_EQ_U64(blocks, 30);
		CHECK(folds >= 2 && folds <= 4);
	}
	memfold_free(f);
}

/* A long random run: a pool of live pointers, random allocations and
 * releases (some of another family, some late), function events between;
 * every allocation is either written or folded, every written release is
 * of a block written before, and time never goes back. */
static void test_random(uint64_t lifetime, uint64_t steps, bool fold_all)
{
	enum { POOL = 3000 };
	static uint64_t live[POOL];
	static uint8_t live_op[POOL];
	uint64_t next_ptr = 0x1000, ns = 0, allocs = 0, frees = 0, written_allocs = 0, written_frees = 0;
	uint64_t folded = 0, seed = 12345, matched = 0;
	struct memfold_stats st;
	struct memfold *f = stage(lifetime);
	size_t i;

	memset(live, 0, sizeof(live));
	for (uint64_t k = 0; k < steps; k++) {
		uint32_t r, slot;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r = (uint32_t)(seed >> 33);
		slot = r % POOL;
		ns += (r >> 20) & 15;
		if ((r & 7) == 0) {
			memfold_func(f, ns, (r & 8) ? LP_EV_ENTRY : LP_EV_EXIT, r);
		} else if (!live[slot]) {
			static const uint8_t ops[] = { LP_MEM_MALLOC, LP_MEM_CALLOC, LP_MEM_NEW, LP_MEM_NEW_ARRAY };

			live[slot] = next_ptr;
			next_ptr += 16;
			live_op[slot] = ops[(r >> 8) & 3];
			mem(f, ns, live_op[slot], 0, live[slot], 16, 0, 1 + ((r >> 10) & 31));
			allocs++;
		} else {
			uint8_t rel = live_op[slot] == LP_MEM_NEW         ? LP_MEM_DELETE
			              : live_op[slot] == LP_MEM_NEW_ARRAY ? LP_MEM_DELETE_ARRAY
			                                                  : LP_MEM_FREE;

			if (((r >> 12) & 63) == 0)
				rel = LP_MEM_FREE; /* now and then a mismatch */
			matched +=
			    rel == LP_MEM_FREE ? live_op[slot] != LP_MEM_NEW && live_op[slot] != LP_MEM_NEW_ARRAY : 1;
			mem(f, ns, rel, 0, live[slot], 0, 0, 40);
			live[slot] = 0;
			frees++;
		}
		if ((k & 1023) == 0)
			memfold_expire(f, ns);
	}
	memfold_flush(f, true);
	memfold_get_stats(f, &st);
	for (i = 0; i < nout; i++) {
		const struct out *o = &outs[i];

		if (i && !CHECK(o->ns >= outs[i - 1].ns))
			break;
		if (o->type != LP_EV_ALLOC)
			continue;
		if (o->m.op == LP_MEM_FOLD) {
			folded += o->m.count;
		} else if (o->m.op == LP_MEM_FREE || o->m.op == LP_MEM_DELETE || o->m.op == LP_MEM_DELETE_ARRAY) {
			written_frees++;
		} else {
			written_allocs++;
		}
	}
	CHECK(nout < OUT_MAX);
	CHECK_EQ_U64(folded, st.blocks);
	CHECK_EQ_U64(written_allocs + folded, allocs);
	CHECK_EQ_U64(written_frees + folded, frees);
	/* nothing left the queue early: every matching release folded */
	if (fold_all)
		CHECK_EQ_U64(folded, matched);
	printf("random run, lifetime %llu: %llu allocations, %llu folded, %zu events out\n",
	       (unsigned long long)lifetime, (unsigned long long)allocs, (unsigned long long)folded, nout);
	/* every written release releases a block written before it */
	{
		uint64_t *seen = calloc((next_ptr - 0x1000) / 16 + 1, sizeof(*seen)), bad = 0;

		if (!seen) {
			printf("FAIL: calloc\n");
			exit(1);
		}
		for (i = 0; i < nout; i++) {
			const struct out *o = &outs[i];
			uint64_t idx = (o->m.ptr - 0x1000) / 16;

			if (o->type != LP_EV_ALLOC || o->m.op == LP_MEM_FOLD)
				continue;
			if (o->m.op == LP_MEM_FREE || o->m.op == LP_MEM_DELETE || o->m.op == LP_MEM_DELETE_ARRAY)
				bad += !seen[idx];
			else
				seen[idx] = 1;
		}
		CHECK_EQ_U64(bad, 0);
		free(seen);
	}
	memfold_free(f);
}

int main(void)
{
	outs = calloc(OUT_MAX, sizeof(*outs));
	if (!outs)
		return 2;
	test_cases();
	test_random(200, 300000, false);            /* short lifetime: some fold */
	test_random(UINT64_MAX / 4, 20000, true);   /* long, within the queue's limit */
	test_random(UINT64_MAX / 4, 200000, false); /* long: the queue reaches its limit */
	free(outs);
	return check_summary();
}
