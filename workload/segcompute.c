/* The arithmetic segments: integer and floating-point operations in
 * dependent chains (four at a time, for some instruction-level
 * parallelism), bit operations, predictable and random branches, indirect
 * calls.  No memory beyond registers and the stack. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "work.h"

/* Inner iterations between two looks at the clock: a few microseconds. */
#define BATCH 2048

static uint64_t int_add(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t a = t->rng, b = a >> 3, c = a >> 7, d = a >> 11;

	do {
		for (int i = 0; i < BATCH; i++) {
			a += b;
			b += c;
			c += d;
			d += a;
		}
	} while (work_now() < deadline);
	return a + b + c + d;
}

static uint64_t int_mul(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t a = t->rng | 1, b = (a >> 3) | 1, c = (a >> 7) | 1, d = (a >> 11) | 1;

	do {
		for (int i = 0; i < BATCH; i++) {
			a *= b;
			b *= c;
			c *= d;
			d *= a;
		}
	} while (work_now() < deadline);
	return a + b + c + d;
}

static uint64_t int_div(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t n = t->rng | 0xffffffffffull, d = 3, e = 5;

	do {
		for (int i = 0; i < BATCH / 8; i++) {
			uint64_t q = n / d, r = n / e;

			d = ((d + q) & 0xfffff) | 3;
			e = ((e + r) & 0xffff) | 5;
		}
	} while (work_now() < deadline);
	return d + e;
}

static uint64_t bit_ops(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t x = t->rng | 1, y = 0;

	do {
		for (int i = 0; i < BATCH; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			y += (uint64_t)__builtin_popcountll(x) + ((x << 9) | (x >> 55));
		}
	} while (work_now() < deadline);
	return x + y;
}

static uint64_t fp_add(struct work_thread *t, void *st, uint64_t deadline)
{
	double a = 0.5, b = 0.25, c = 0.125, d = 1.0;

	do {
		for (int i = 0; i < BATCH; i++) {
			a += 1e-9;
			b += 2e-9;
			c += 3e-9;
			d += 4e-9;
		}
		if (a > 1e6)
			a = b = c = d = 0.5;
	} while (work_now() < deadline);
	return (uint64_t)(a + b + c + d);
}

static uint64_t fp_mul(struct work_thread *t, void *st, uint64_t deadline)
{
	double a = 1.5, b = 0.75, c = 1.25, d = 0.5;

	do {
		for (int i = 0; i < BATCH; i++) {
			a *= 1.0000001;
			b *= 0.9999999;
			c *= 1.0000002;
			d *= 0.9999998;
		}
		/* kept far from overflow and from the slow subnormals */
		if (a > 1e10 || b < 1e-10 || c > 1e10 || d < 1e-10)
			a = b = c = d = 1.0;
	} while (work_now() < deadline);
	return (uint64_t)(a + b + c + d);
}

static uint64_t fp_div(struct work_thread *t, void *st, uint64_t deadline)
{
	double a = 1.5, b = 0.75, c = 1.25, d = 0.5;

	do {
		for (int i = 0; i < BATCH / 4; i++) {
			a = 1.0000001 / a;
			b = 0.9999999 / b;
			c = 1.0000002 / c;
			d = 0.9999998 / d;
		}
	} while (work_now() < deadline);
	return (uint64_t)(a + b + c + d);
}

static uint64_t fp_sqrt(struct work_thread *t, void *st, uint64_t deadline)
{
	double a = 1.5, b = 2.5, c = 3.5, d = 4.5;

	do {
		for (int i = 0; i < BATCH / 4; i++) {
			a = sqrt(a + 1.0);
			b = sqrt(b + 2.0);
			c = sqrt(c + 3.0);
			d = sqrt(d + 4.0);
		}
	} while (work_now() < deadline);
	return (uint64_t)(a + b + c + d);
}

/* A branch on each iteration, taken or not by pattern or at random.  The
 * empty asm in one arm keeps the compiler from turning the branch into a
 * conditional move. */
static uint64_t branches(struct work_thread *t, uint64_t deadline, int random)
{
	uint64_t x = t->rng | 1, a = 0, b = 0;

	do {
		for (int i = 0; i < BATCH; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (random ? (x & 1) : ((i & 7) < 5)) {
				a += x;
				__asm__ volatile("");
			} else {
				b ^= x;
			}
		}
	} while (work_now() < deadline);
	t->rng = x;
	return a + b;
}

static uint64_t branch_pred(struct work_thread *t, void *st, uint64_t deadline)
{
	return branches(t, deadline, 0);
}

static uint64_t branch_rand(struct work_thread *t, void *st, uint64_t deadline)
{
	return branches(t, deadline, 1);
}

/* The targets of indirect-call: small, not inlined. */
static __attribute__((noinline)) uint64_t ic0(uint64_t x)
{
	return x * 3 + 1;
}
static __attribute__((noinline)) uint64_t ic1(uint64_t x)
{
	return x ^ (x >> 5);
}
static __attribute__((noinline)) uint64_t ic2(uint64_t x)
{
	return x + 0x9e3779b97f4a7c15ull;
}
static __attribute__((noinline)) uint64_t ic3(uint64_t x)
{
	return (x << 7) | (x >> 57);
}
static __attribute__((noinline)) uint64_t ic4(uint64_t x)
{
	return x * 5 - 7;
}
static __attribute__((noinline)) uint64_t ic5(uint64_t x)
{
	return ~x + 3;
}
static __attribute__((noinline)) uint64_t ic6(uint64_t x)
{
	return x ^ 0x5555555555555555ull;
}
static __attribute__((noinline)) uint64_t ic7(uint64_t x)
{
	return x - (x >> 3);
}

/* volatile: loaded at each call, so that no call is resolved at compile
 * time */
static uint64_t (*volatile const ic_table[8])(uint64_t) = { ic0, ic1, ic2, ic3, ic4, ic5, ic6, ic7 };

static uint64_t indirect_call(struct work_thread *t, void *st, uint64_t deadline)
{
	uint64_t x = t->rng | 1, acc = 0;

	do {
		for (int i = 0; i < BATCH / 4; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			acc += ic_table[x & 7](acc);
		}
	} while (work_now() < deadline);
	t->rng = x;
	return acc;
}

const struct work_seg work_compute_segs[] = {
	{ "int-add", "integer additions in four dependent chains", NULL, NULL, int_add },
	{ "int-mul", "integer multiplications in four dependent chains", NULL, NULL, int_mul },
	{ "int-div", "64-bit integer divisions, two dependent chains", NULL, NULL, int_div },
	{ "bit-ops", "shifts, xors, rotates and population counts", NULL, NULL, bit_ops },
	{ "fp-add", "double-precision additions in four dependent chains", NULL, NULL, fp_add },
	{ "fp-mul", "double-precision multiplications in four dependent chains", NULL, NULL, fp_mul },
	{ "fp-div", "double-precision divisions in four dependent chains", NULL, NULL, fp_div },
	{ "fp-sqrt", "double-precision square roots in four dependent chains", NULL, NULL, fp_sqrt },
	{ "branch-predictable", "a branch per iteration in a repeating pattern (well predicted)", NULL, NULL,
	  branch_pred },
	{ "branch-random", "a branch per iteration on a random bit (half mispredicted)", NULL, NULL, branch_rand },
	{ "indirect-call", "calls through a table of eight functions, chosen at random", NULL, NULL, indirect_call },
};
const unsigned work_compute_nsegs = sizeof(work_compute_segs) / sizeof(work_compute_segs[0]);
