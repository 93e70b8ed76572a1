/* Unit test of the counter read and scaling code (runtime/ctrread.h) the
 * runtime uses at every function entry and exit with --counters: crafted
 * perf_event_mmap_page contents as the kernel writes them (a counter not
 * on the PMU, a 48-bit counter holding a negative start value, the page
 * rewritten in the middle of a read, times extended from the TSC with and
 * without cap_user_time_short), the scaling of a multiplexed counter, and
 * the buffer of a group's read(2). */
#include <string.h>

#include "runtime/ctrread.h"
#include "tests/unit/check.h"

/* The CPU as a test sees it: what rdpmc and rdtsc return, how often they
 * were called, and a page to rewrite on the first rdpmc (the kernel
 * updating it meanwhile). */
struct fakecpu {
	uint64_t pmc, tsc;
	uint32_t last_index;
	unsigned rdpmcs, rdtscs;
	struct perf_event_mmap_page *rewrite;
	uint64_t new_offset, new_pmc;
};

static uint64_t fake_rdpmc(void *ctx, uint32_t index)
{
	struct fakecpu *f = ctx;
	uint64_t v = f->pmc;

	f->rdpmcs++;
	f->last_index = index;
	if (f->rewrite && f->rdpmcs == 1) {
		/* the kernel schedules the counter meanwhile: a new offset and
		 * counter value, the lock bumped (twice: it is done) */
		f->rewrite->lock += 2;
		f->rewrite->offset = (int64_t)f->new_offset;
		f->pmc = f->new_pmc;
	}
	return v;
}

static uint64_t fake_rdtsc(void *ctx)
{
	struct fakecpu *f = ctx;

	f->rdtscs++;
	return f->tsc;
}

static struct perf_event_mmap_page page;
static struct fakecpu fc;
static const struct lp_ctrcpu cpu = { fake_rdpmc, fake_rdtsc, &fc };

static void reset(void)
{
	memset(&page, 0, sizeof(page));
	memset(&fc, 0, sizeof(fc));
	page.lock = 4;
}

static void test_not_on_pmu(void)
{
	struct lp_ctrval v;

	/* index 0: a software event, or one scheduled out: the saved count */
	reset();
	page.index = 0;
	page.offset = 123456789;
	page.time_enabled = page.time_running = 5000;
	page.capabilities = LP_CTR_CAP_USER_RDPMC | LP_CTR_CAP_USER_TIME;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 123456789);
	CHECK_EQ_U64(v.enabled, 5000);
	CHECK_EQ_U64(v.running, 5000);
	CHECK_EQ_U64(fc.rdpmcs, 0);
	CHECK_EQ_U64(fc.rdtscs, 0); /* enabled == running: no time to add */

	/* scheduled out while enabled: enabled grows by the TSC's time, running not */
	page.time_running = 3000;
	page.time_offset = 7;
	page.time_mult = 1u << 10;
	page.time_shift = 10; /* one ns per cycle */
	fc.tsc = 500;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 123456789);
	CHECK_EQ_U64(v.enabled, 5000 + 507);
	CHECK_EQ_U64(v.running, 3000);
	CHECK_EQ_U64(fc.rdtscs, 1);
}

static void test_rdpmc_width(void)
{
	struct lp_ctrval v;

	/* a 48-bit counter the kernel started at -16 (so that it overflows
	 * after 16 events), its upper bits whatever the CPU returns */
	reset();
	page.index = 3;
	page.pmc_width = 48;
	page.offset = 1000;
	page.time_enabled = page.time_running = 42;
	page.capabilities = LP_CTR_CAP_USER_RDPMC;
	fc.pmc = 0xabcdfffffffffff0ull;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 1000 - 16);
	CHECK_EQ_U64(fc.last_index, 2); /* rdpmc takes index - 1 */
	CHECK_EQ_U64(fc.rdpmcs, 1);

	/* a positive value keeps its bits */
	fc.pmc = 0x0000123456789abcull;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 1000 + 0x123456789abcull);

	/* the largest positive 48-bit value, and the most negative */
	fc.pmc = 0x00007fffffffffffull;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 1000 + 0x7fffffffffffull);
	page.offset = (int64_t)0x800000000000ull;
	fc.pmc = 0x0000800000000000ull;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 0);

	/* 32-bit counters (older PMUs, ARMv7) */
	page.pmc_width = 32;
	page.offset = 100;
	fc.pmc = 0xfffffffeull;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 98);
	CHECK_EQ_U64(lp_ctr_sign_extend(0x8000000000000000ull, 64), 0x8000000000000000ull);
	CHECK_EQ_U64(lp_ctr_sign_extend(0xffull, 8), UINT64_MAX);
	CHECK_EQ_U64(lp_ctr_sign_extend(0x7full, 8), 0x7f);
}

static void test_no_rdpmc(void)
{
	struct lp_ctrval v;

	/* on the PMU, but user space may not read it: read(2) must be used */
	reset();
	page.index = 1;
	page.pmc_width = 48;
	page.capabilities = LP_CTR_CAP_USER_TIME;
	CHECK(!lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(fc.rdpmcs, 0);
}

static void test_seqlock(void)
{
	struct lp_ctrval v;

	/* the page changes between the first load of the lock and the last:
	 * the read is made again, with the new values only */
	reset();
	page.index = 2;
	page.pmc_width = 48;
	page.offset = 5000;
	page.time_enabled = page.time_running = 10;
	page.capabilities = LP_CTR_CAP_USER_RDPMC;
	fc.pmc = 300;
	fc.rewrite = &page;
	fc.new_offset = 9000;
	fc.new_pmc = 7;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(fc.rdpmcs, 2);
	CHECK_EQ_U64(v.value, 9007); /* not 5300, nor 5007, nor 9300 */
	CHECK_EQ_U64(page.lock, 6);
}

static void test_time(void)
{
	struct lp_ctrval v;
	uint64_t cyc = 0x123456789ull, want;

	/* on the PMU, multiplexed: both times grow by the TSC's time; the
	 * product cyc * mult fits in 64 bits here, so want is exact */
	reset();
	page.index = 1;
	page.pmc_width = 48;
	page.offset = 10;
	page.capabilities = LP_CTR_CAP_USER_RDPMC | LP_CTR_CAP_USER_TIME;
	page.time_enabled = 2000000;
	page.time_running = 1000000;
	page.time_offset = (uint64_t)-5000000000ll; /* the kernel's offset is often negative */
	page.time_mult = 1500;
	page.time_shift = 10;
	fc.pmc = 5;
	fc.tsc = cyc;
	want = page.time_offset + cyc * 1500 / 1024;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.value, 15);
	CHECK_EQ_U64(v.enabled, 2000000 + want);
	CHECK_EQ_U64(v.running, 1000000 + want);
	CHECK_EQ_U64(lp_ctr_tsc_delta(cyc, page.time_offset, page.time_mult, 10), want);
#ifdef __SIZEOF_INT128__
	/* a 3 GHz TSC (1/3 ns per cycle: mult 2796202667, shift 33), where
	 * cyc * mult does not fit in 64 bits */
	CHECK_EQ_U64(lp_ctr_tsc_delta(cyc, 7, 2796202667u, 33),
	             7 + (uint64_t)(((unsigned __int128)cyc * 2796202667u) >> 33));
#endif

	/* cap_user_time_short: only the low bits of the TSC past time_cycles count */
	page.capabilities |= LP_CTR_CAP_USER_TIME_SHORT;
	page.time_cycles = 0x100000000ull;
	page.time_mask = 0xffffffffull;
	fc.tsc = 0x7700000000ull + 0x23456789ull;
	want = page.time_offset + (0x100000000ull + 0x23456789ull) * 1500 / 1024;
	CHECK(lp_ctr_mmap_read(&page, &cpu, &v));
	CHECK_EQ_U64(v.enabled, 2000000 + want);
	CHECK_EQ_U64(v.running, 1000000 + want);
}

static void test_scale(void)
{
	struct lp_ctrval v;
	bool scaled = false;

	/* ran all the time: as counted */
	v = (struct lp_ctrval){ .value = 1000, .enabled = 500, .running = 500 };
	CHECK_EQ_U64(lp_ctr_scale(&v, &scaled), 1000);
	CHECK(!scaled);
	/* ran a third of the time */
	v = (struct lp_ctrval){ .value = 1000, .enabled = 3000, .running = 1000 };
	CHECK_EQ_U64(lp_ctr_scale(&v, &scaled), 3000);
	CHECK(scaled);
	scaled = false;
	v = (struct lp_ctrval){ .value = 7, .enabled = 10, .running = 3 };
	CHECK_EQ_U64(lp_ctr_scale(&v, &scaled), 23); /* 70 / 3, down */
	CHECK(scaled);
	/* never ran: nothing counted, nothing scaled */
	scaled = false;
	v = (struct lp_ctrval){ .value = 0, .enabled = 3000, .running = 0 };
	CHECK_EQ_U64(lp_ctr_scale(&v, &scaled), 0);
	CHECK(!scaled);
	/* large counts and times: no overflow in the product */
	v = (struct lp_ctrval){ .value = 1ull << 60, .enabled = 4000000000000ull, .running = 2000000000000ull };
	CHECK_EQ_U64(lp_ctr_scale(&v, &scaled), 1ull << 61);
	v = (struct lp_ctrval){ .value = UINT64_MAX / 2, .enabled = 10, .running = 1 };
	CHECK_EQ_U64(lp_ctr_scale(&v, &scaled), UINT64_MAX); /* saturates */
	CHECK_EQ_U64(lp_ctr_muldiv(999999999999ull, 1000000007ull, 1000000000ull), 1000000006998ull);
}

static void test_group(void)
{
	uint64_t buf[LP_CTR_GROUP_WORDS(3)] = { 3, 900, 600, 11, 22, 33 };
	struct lp_ctrval v[3];

	CHECK(lp_ctr_group_parse(buf, sizeof(buf), 3, v));
	CHECK_EQ_U64(v[0].value, 11);
	CHECK_EQ_U64(v[2].value, 33);
	CHECK_EQ_U64(v[1].enabled, 900);
	CHECK_EQ_U64(v[1].running, 600);
	CHECK(!lp_ctr_group_parse(buf, sizeof(buf) - 8, 3, v)); /* short */
	CHECK(!lp_ctr_group_parse(buf, sizeof(buf), 2, v));     /* another size */
	buf[0] = 4;
	CHECK(!lp_ctr_group_parse(buf, sizeof(buf), 3, v));
}

int main(void)
{
	test_not_on_pmu();
	test_rdpmc_width();
	test_no_rdpmc();
	test_seqlock();
	test_time();
	test_scale();
	test_group();
	return check_summary();
}
