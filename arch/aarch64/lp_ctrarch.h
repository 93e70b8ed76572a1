/* aarch64: user-space reads of performance counters (runtime/counters.c),
 * where the kernel allows them (sysctl kernel.perf_user_access=1, the
 * event opened with config1's "rdpmc" bit): the event counter the mmap
 * page's index names, selected through PMSELR_EL0, or the cycle counter;
 * and the virtual count the page's time fields convert. */
#ifndef LP_CTRARCH_H
#define LP_CTRARCH_H

#include <stdint.h>

#define LP_ARCH_HAVE_PMC_READ 1
/* perf_event_attr.config1: bit 1 asks for user-space access (arm_pmuv3's
 * "rdpmc" format field) */
#define LP_ARCH_PMC_CONFIG1 2u
/* the index (less one) of the cycle counter, PMCCNTR_EL0 */
#define LP_ARCH_PMC_CYCLE_INDEX 31u

static inline __attribute__((no_instrument_function)) uint64_t lp_arch_pmc_read(uint32_t index)
{
	uint64_t v;

	if (index == LP_ARCH_PMC_CYCLE_INDEX) {
		__asm__ __volatile__("mrs %0, pmccntr_el0" : "=r"(v));
		return v;
	}
	__asm__ __volatile__("msr pmselr_el0, %1\n\tisb\n\tmrs %0, pmxevcntr_el0" : "=r"(v) : "r"((uint64_t)index));
	return v;
}

static inline __attribute__((no_instrument_function)) uint64_t lp_arch_pmc_time(void)
{
	uint64_t v;

	__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
}

#endif
