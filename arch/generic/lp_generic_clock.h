/* Architectures without a usable user-space counter: CLOCK_MONOTONIC only. */
#ifndef LP_GENERIC_CLOCK_H
#define LP_GENERIC_CLOCK_H

#include <stdint.h>
#include <time.h>

#define LP_ARCH_COUNTER LP_CLOCK_MONOTONIC

static inline uint64_t lp_arch_counter(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* clock_gettime reads its clock in order. */
static inline uint64_t lp_arch_counter_ordered(void)
{
	return lp_arch_counter();
}

#endif
