/* Reading a performance counter's value: from user space through the
 * event's mmap page (struct perf_event_mmap_page: the count the kernel
 * saved plus the hardware counter read with rdpmc, under the page's
 * sequence lock), or from the buffer a read(2) of the event's group gives;
 * and scaling a count up to the time it was enabled when the counter was
 * multiplexed.  Header only, with no state: the runtime (counters.c) and
 * its unit test (tests/unit/test_ctrread.c, which crafts pages) compile
 * the same code.  C11 and libc; every function may run in a gate. */
#ifndef LP_RUNTIME_CTRREAD_H
#define LP_RUNTIME_CTRREAD_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef LP_NOINSTR
#define LP_NOINSTR __attribute__((no_instrument_function))
#endif

/* One counter's count and how long it was enabled and running (ns). */
struct lp_ctrval {
	uint64_t value;
	uint64_t enabled, running;
};

/* What reading a page needs from the CPU: rdpmc of hardware counter
 * `index` (the page's index less one) and the time stamp counter.  The
 * runtime passes the instructions, the test its crafted values; ctx is
 * the caller's. */
struct lp_ctrcpu {
	uint64_t (*rdpmc)(void *ctx, uint32_t index);
	uint64_t (*rdtsc)(void *ctx);
	void *ctx;
};

/* The page's words as the kernel writes them, read once each. */
#define LP_CTR_READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))

/* Bits of the page's `capabilities` word (bit fields in the kernel's
 * header, read here as one word). */
#define LP_CTR_CAP_USER_RDPMC (UINT64_C(1) << 2)
#define LP_CTR_CAP_USER_TIME (UINT64_C(1) << 3)
#define LP_CTR_CAP_USER_TIME_SHORT (UINT64_C(1) << 5)

static inline LP_NOINSTR void lp_ctr_barrier(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* The low `width` bits of a hardware counter, sign-extended: a counter
 * the kernel set to a negative start value (so that it overflows into an
 * interrupt) reads as a large number in its bits. */
static inline LP_NOINSTR int64_t lp_ctr_sign_extend(uint64_t pmc, uint32_t width)
{
	if (!width || width >= 64)
		return (int64_t)pmc;
	pmc <<= 64 - width;
	return (int64_t)pmc >> (64 - width);
}

/* The time the kernel adds to time_enabled and time_running since it
 * last wrote them, from the time stamp counter (cap_user_time): ns. */
static inline LP_NOINSTR uint64_t lp_ctr_tsc_delta(uint64_t cyc, uint64_t time_offset, uint32_t time_mult,
                                                   uint16_t time_shift)
{
	uint64_t quot = cyc >> time_shift, rem = cyc & (((uint64_t)1 << time_shift) - 1);

	return time_offset + quot * time_mult + ((rem * time_mult) >> time_shift);
}

/* Reads the counter of page pc: retries while the kernel rewrites the page
 * (its `lock` changes across the read).  Returns false when the count
 * cannot be read in user space: the counter is on the PMU (index != 0) but
 * the page does not allow rdpmc (cap_user_rdpmc), or the kernel keeps
 * changing the page (after 1000 tries).  A counter that is not on the PMU
 * now (index 0: a software event, or a hardware one scheduled out) is the
 * kernel's saved count, `offset`.  Cost: two loads of the lock, a rdpmc,
 * and a rdtsc only when the counter was multiplexed. */
static inline LP_NOINSTR bool lp_ctr_mmap_read(const struct perf_event_mmap_page *pc, const struct lp_ctrcpu *cpu,
                                               struct lp_ctrval *out)
{
	uint32_t seq, idx, tries = 0;
	uint64_t count, enabled, running, delta, caps;

	do {
		if (++tries > 1000)
			return false;
		seq = LP_CTR_READ_ONCE(pc->lock);
		lp_ctr_barrier();
		enabled = LP_CTR_READ_ONCE(pc->time_enabled);
		running = LP_CTR_READ_ONCE(pc->time_running);
		caps = LP_CTR_READ_ONCE(pc->capabilities);
		delta = 0;
		if ((caps & LP_CTR_CAP_USER_TIME) && enabled != running) {
			uint64_t cyc = cpu->rdtsc(cpu->ctx);

			if (caps & LP_CTR_CAP_USER_TIME_SHORT) {
				uint64_t base = LP_CTR_READ_ONCE(pc->time_cycles);

				cyc = base + ((cyc - base) & LP_CTR_READ_ONCE(pc->time_mask));
			}
			delta = lp_ctr_tsc_delta(cyc, LP_CTR_READ_ONCE(pc->time_offset),
			                         LP_CTR_READ_ONCE(pc->time_mult), LP_CTR_READ_ONCE(pc->time_shift));
		}
		idx = LP_CTR_READ_ONCE(pc->index);
		count = (uint64_t)LP_CTR_READ_ONCE(pc->offset);
		if (idx) {
			if (!(caps & LP_CTR_CAP_USER_RDPMC))
				return false;
			count += (uint64_t)lp_ctr_sign_extend(cpu->rdpmc(cpu->ctx, idx - 1),
			                                      LP_CTR_READ_ONCE(pc->pmc_width));
		}
		lp_ctr_barrier();
	} while (LP_CTR_READ_ONCE(pc->lock) != seq);
	out->value = count;
	out->enabled = enabled + delta;
	out->running = running + (idx ? delta : 0);
	return true;
}

/* a * b / d, exact, saturated at UINT64_MAX (d > 0).  Without a 128-bit
 * type (32-bit targets): the product in two words, then 64 steps of long
 * division; only scaled values pay for it. */
static inline LP_NOINSTR uint64_t lp_ctr_muldiv(uint64_t a, uint64_t b, uint64_t d)
{
#ifdef __SIZEOF_INT128__
	unsigned __int128 r = (unsigned __int128)a * b / d;

	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
#else
	uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
	uint64_t lo = (mid << 32) | (uint32_t)ll, hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
	uint64_t q = 0, r = hi;
	int i;

	if (hi >= d)
		return UINT64_MAX; /* the quotient needs more than 64 bits */
	for (i = 63; i >= 0; i--) {
		uint64_t carry = r >> 63;

		r = r << 1 | ((lo >> i) & 1);
		q <<= 1;
		if (carry || r >= d) {
			r -= d;
			q |= 1;
		}
	}
	return q;
#endif
}

/* The count a multiplexed counter would have had, had it run all the time
 * it was enabled.  Sets *scaled when the value was scaled (running <
 * enabled).  A counter that never ran (running 0) counted nothing: 0. */
static inline LP_NOINSTR uint64_t lp_ctr_scale(const struct lp_ctrval *v, bool *scaled)
{
	if (!v->running)
		return 0;
	if (v->running >= v->enabled)
		return v->value;
	*scaled = true;
	return lp_ctr_muldiv(v->value, v->enabled, v->running);
}

/* The words a read(2) of a group leader opened with read_format
 * PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
 * PERF_FORMAT_TOTAL_TIME_RUNNING gives: nr, time enabled, time running,
 * then nr values (the leader first, then its members in the order they
 * were opened). */
#define LP_CTR_GROUP_FORMAT (PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)
#define LP_CTR_GROUP_WORDS(n) (3u + (n))

/* Fills out[0..n) from a group's read of `bytes` bytes.  Returns false
 * when it is not n values (a short read, another group size). */
static inline LP_NOINSTR bool lp_ctr_group_parse(const uint64_t *buf, size_t bytes, uint32_t n, struct lp_ctrval *out)
{
	uint32_t i;

	if (bytes != LP_CTR_GROUP_WORDS(n) * sizeof(uint64_t) || buf[0] != n)
		return false;
	for (i = 0; i < n; i++) {
		out[i].value = buf[3 + i];
		out[i].enabled = buf[1];
		out[i].running = buf[2];
	}
	return true;
}

#endif
