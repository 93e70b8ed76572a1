/* x86-64: user-space reads of performance counters (runtime/counters.c):
 * rdpmc of a counter the kernel lets user space read (the mmap page's
 * cap_user_rdpmc and index), and the TSC the page's time fields convert. */
#ifndef LP_CTRARCH_H
#define LP_CTRARCH_H

#include <stdint.h>

#define LP_ARCH_HAVE_PMC_READ 1
/* perf_event_attr.config1 bits an event needs for user-space reads: none */
#define LP_ARCH_PMC_CONFIG1 0u

/* Hardware counter `index` (the page's index less one). */
static inline __attribute__((no_instrument_function)) uint64_t lp_arch_pmc_read(uint32_t index)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index));
	return (uint64_t)hi << 32 | lo;
}

/* The cycle count cap_user_time's fields convert to ns. */
static inline __attribute__((no_instrument_function)) uint64_t lp_arch_pmc_time(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

#endif
