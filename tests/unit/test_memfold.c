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
	uintptr_t stage; /* the sink's ctx */
	uint64_t ns;
	uint8_t type;
	uint64_t value;
	struct memevent m;
};

static struct out *outs;
static size_t nout;
static struct memfold_proc *procs[64];
static size_t nprocs;

static void sink(void *ctx, uint64_t ns, uint8_t type, uint64_t value, const struct memevent *m)
{
	struct out *o;

	if (nout == OUT_MAX)
		return;
	o = &outs[nout++];
	o->stage = (uintptr_t)ctx;
	o->ns = ns;
	o->type = type;
	o->value = value;
	if (m)
		o->m = *m;
	else
		memset(&o->m, 0, sizeof(o->m));
}

/* A stage alone in its process. */
static struct memfold *stage(uint64_t lifetime)
{
	struct memfold_sink s = { .ctx = NULL, .event = sink };
	struct memfold_proc *p = memfold_proc_new(lifetime);
	struct memfold *f = p ? memfold_new(p, &s) : NULL;

	nout = 0;
	if (!f) {
		printf("FAIL: memfold_new\n");
		exit(1);
	}
	procs[nprocs++] = p;
	return f;
}

static void procs_free(void)
{
	for (size_t i = 0; i < nprocs; i++)
		memfold_proc_free(procs[i]);
	nprocs = 0;
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
	memfold_proc_expire(procs[nprocs - 1], 11);
	CHECK_EQ_U64(nout, 1);
	memfold_proc_expire(procs[nprocs - 1], 16);
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
			memfold_proc_expire(procs[nprocs - 1], ns);
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

/* Stages 1..n of one process (sink ctx = the stage's number). */
static struct memfold_proc *proc_of(uint64_t lifetime, struct memfold **st, unsigned n)
{
	struct memfold_proc *p = memfold_proc_new(lifetime);

	nout = 0;
	if (!p) {
		printf("FAIL: memfold_proc_new\n");
		exit(1);
	}
	for (unsigned i = 0; i < n; i++) {
		struct memfold_sink s = { .ctx = (void *)(uintptr_t)(i + 1), .event = sink };

		st[i] = memfold_new(p, &s);
		if (!st[i]) {
			printf("FAIL: memfold_new\n");
			exit(1);
		}
	}
	return p;
}

static void proc_done(struct memfold_proc *p, struct memfold **st, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		memfold_flush(st[i], true);
	for (unsigned i = 0; i < n; i++)
		memfold_free(st[i]);
	CHECK_EQ_U64(memfold_proc_stages(p), 0);
	memfold_proc_free(p);
}

/* Blocks one thread allocates and another releases fold, whatever order
 * the two streams come in; the FOLD goes to the allocating stream. */
static void test_cross(void)
{
	struct memfold *st[3];
	struct memfold_proc *p;
	struct memfold_stats s1, s2;

	/* the release comes in before its allocation */
	p = proc_of(100, st, 2);
	mem(st[1], 20, LP_MEM_FREE, 0, 0x10, 0, 0, 7);
	mem(st[0], 10, LP_MEM_MALLOC, 0, 0x10, 48, 0, 3);
	CHECK_EQ_U64(nout, 0);
	memfold_proc_expire(p, 30);
	CHECK_EQ_U64(nout, 0);
	memfold_get_stats(st[0], &s1);
	memfold_get_stats(st[1], &s2);
	proc_done(p, st, 2);
	CHECK_EQ_U64(s1.blocks, 1);
	CHECK_EQ_U64(s1.bytes, 48);
	CHECK_EQ_U64(s2.blocks, 0);
	if (CHECK_EQ_U64(nout, 1)) {
		CHECK_EQ_U64(outs[0].stage, 1);
		CHECK_EQ_U64(outs[0].m.op, LP_MEM_FOLD);
		CHECK_EQ_U64(outs[0].m.stack, 3);
		CHECK_EQ_U64(outs[0].m.count, 1);
	}

	/* one address twice: each release with its own allocation, the
	 * second too late to fold; a mismatch does not fold */
	p = proc_of(100, st, 3);
	mem(st[1], 20, LP_MEM_FREE, 0, 0x10, 0, 0, 7);
	mem(st[1], 300, LP_MEM_FREE, 0, 0x10, 0, 0, 7);
	mem(st[2], 400, LP_MEM_DELETE, 0, 0x20, 0, 0, 8);
	mem(st[0], 10, LP_MEM_MALLOC, 0, 0x10, 48, 0, 3);
	mem(st[0], 30, LP_MEM_MALLOC, 0, 0x10, 64, 0, 4);
	mem(st[0], 350, LP_MEM_MALLOC, 0, 0x20, 8, 0, 5);
	memfold_proc_expire(p, 1000);
	proc_done(p, st, 3);
	{
		unsigned fold = 0, malloc64 = 0, free300 = 0, mis = 0;

		for (size_t i = 0; i < nout; i++) {
			const struct out *o = &outs[i];

			fold += o->stage == 1 && o->m.op == LP_MEM_FOLD && o->m.stack == 3 && o->m.count == 1;
			malloc64 += o->stage == 1 && o->m.op == LP_MEM_MALLOC && o->m.size == 64 && o->ns == 30;
			free300 += o->stage == 2 && o->m.op == LP_MEM_FREE && o->ns == 300;
			mis += (o->stage == 1 && o->m.op == LP_MEM_MALLOC && o->m.size == 8) +
			       (o->stage == 3 && o->m.op == LP_MEM_DELETE);
		}
		CHECK_EQ_U64(nout, 5);
		CHECK_EQ_U64(fold + malloc64 + free300 + mis, 5);
	}

	/* events behind the pairing point do not fold, nor does what they
	 * touch */
	p = proc_of(100, st, 2);
	mem(st[0], 200, LP_MEM_MALLOC, 0, 0x40, 8, 0, 1);
	memfold_proc_expire(p, 300);
	mem(st[1], 150, LP_MEM_MALLOC, 0, 0x50, 8, 0, 2); /* late */
	mem(st[0], 310, LP_MEM_FREE, 0, 0x50, 0, 0, 3);
	mem(st[1], 160, LP_MEM_FREE, 0, 0x40, 0, 0, 4); /* late: 0x40's malloc goes out */
	mem(st[0], 320, LP_MEM_FREE, 0, 0x40, 0, 0, 3);
	memfold_proc_expire(p, 1000);
	memfold_get_stats(st[0], &s1);
	proc_done(p, st, 2);
	CHECK_EQ_U64(s1.blocks, 0);
	CHECK_EQ_U64(nout, 5);
}

/* Threads of one process allocate and release each other's blocks; their
 * streams come in bursts, in any order, and are paired up to the point
 * every one has reached.  Every block is written or folded once, every
 * written release (in time order over all streams) releases a block
 * written before it, and with a long lifetime every matching pair folds. */
static void test_cross_random(uint64_t lifetime, uint64_t steps, bool fold_all)
{
	enum { POOL = 2000, THREADS = 4, BURST = 4096 };
	static uint64_t live[POOL];
	static struct {
		uint64_t ns;
		struct memevent m;
	} pend[THREADS][BURST];
	uint32_t npend[THREADS] = { 0 };
	struct memfold *st[THREADS];
	struct memfold_proc *p = proc_of(lifetime, st, THREADS);
	uint64_t seed = 99, ns = 0, next_ptr = 0x1000, allocs = 0, frees = 0, folded = 0, blocks = 0;
	uint64_t written_allocs = 0, written_frees = 0;
	size_t i;

	memset(live, 0, sizeof(live));
	for (uint64_t k = 0; k < steps; k++) {
		uint32_t r, slot, t;
		struct memevent m = { 0 };

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r = (uint32_t)(seed >> 33);
		slot = r % POOL;
		t = (r >> 12) % THREADS;
		ns += 1 + ((r >> 20) & 7);
		if (!live[slot]) {
			live[slot] = next_ptr;
			next_ptr += 16;
			m.op = LP_MEM_MALLOC;
			m.ptr = live[slot];
			m.size = 16;
			m.stack = 1 + t;
			allocs++;
		} else {
			m.op = LP_MEM_FREE;
			m.ptr = live[slot];
			m.stack = 10 + t;
			live[slot] = 0;
			frees++;
		}
		pend[t][npend[t]].ns = ns;
		pend[t][npend[t]].m = m;
		npend[t]++;
		/* now and then a thread's events reach the drain, all at once */
		if (npend[t] == BURST || ((r >> 24) & 31) == 0) {
			for (i = 0; i < npend[t]; i++)
				memfold_mem(st[t], pend[t][i].ns, &pend[t][i].m);
			npend[t] = 0;
		}
		/* the drain pairs up to where every thread has come */
		if ((k & 255) == 0) {
			uint64_t w = ns;

			for (t = 0; t < THREADS; t++)
				if (npend[t] && pend[t][0].ns - 1 < w)
					w = pend[t][0].ns - 1;
			memfold_proc_expire(p, w);
		}
	}
	for (uint32_t t = 0; t < THREADS; t++)
		for (i = 0; i < npend[t]; i++)
			memfold_mem(st[t], pend[t][i].ns, &pend[t][i].m);
	memfold_proc_expire(p, ns);
	for (uint32_t t = 0; t < THREADS; t++) {
		struct memfold_stats sst;

		memfold_get_stats(st[t], &sst);
		blocks += sst.blocks;
	}
	proc_done(p, st, THREADS);
	CHECK(nout < OUT_MAX);
	for (i = 0; i < nout; i++) {
		const struct out *o = &outs[i];

		if (o->m.op == LP_MEM_FOLD)
			folded += o->m.count;
		else if (o->m.op == LP_MEM_FREE)
			written_frees++;
		else if (o->m.op == LP_MEM_MALLOC)
			written_allocs++;
	}
	CHECK_EQ_U64(folded, blocks);
	CHECK_EQ_U64(written_allocs + folded, allocs);
	CHECK_EQ_U64(written_frees + folded, frees);
	if (fold_all)
		CHECK_EQ_U64(folded, frees);
	printf("cross-thread random run, lifetime %llu: %llu allocations, %llu folded\n", (unsigned long long)lifetime,
	       (unsigned long long)allocs, (unsigned long long)folded);
	/* in time order over all streams, every written release has its block
	 * written and live: a counting sort by time (times are distinct) */
	{
		uint64_t *by_ns = calloc(ns + 1, sizeof(*by_ns));
		uint8_t *state = calloc((next_ptr - 0x1000) / 16 + 1, 1);
		uint64_t bad = 0;

		if (!by_ns || !state) {
			printf("FAIL: calloc\n");
			exit(1);
		}
		for (i = 0; i < nout; i++)
			if (outs[i].m.op == LP_MEM_MALLOC || outs[i].m.op == LP_MEM_FREE)
				by_ns[outs[i].ns] = i + 1;
		for (uint64_t n = 0; n <= ns; n++) {
			const struct out *o;
			uint64_t idx;

			if (!by_ns[n])
				continue;
			o = &outs[by_ns[n] - 1];
			idx = (o->m.ptr - 0x1000) / 16;
			if (o->m.op == LP_MEM_MALLOC) {
				state[idx] = 1;
			} else {
				bad += state[idx] != 1;
				state[idx] = 2;
			}
		}
		CHECK_EQ_U64(bad, 0);
		free(by_ns);
		free(state);
	}
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
	test_cross();
	test_cross_random(UINT64_MAX / 4, 200000, true); /* everything pairs */
	test_cross_random(60, 300000, false);            /* some fold */
	procs_free();
	free(outs);
	return check_summary();
}
