/* aarch64: the cheap per-event clock is the generic timer's virtual count. */
#ifndef LP_ARCH_H
#define LP_ARCH_H

#include <stdint.h>

#define LP_ARCH_NAME "aarch64"
#define LP_ARCH_COUNTER LP_CLOCK_CNTVCT
/* Code built with frame pointers keeps {previous frame, return address}
 * at the frame pointer: the memory tracer walks these records. */
#define LP_ARCH_FRAME_WALK 1

static inline uint64_t lp_arch_counter(void)
{
	uint64_t v;
	__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
}

/* The isb above already keeps the read after every earlier instruction. */
static inline uint64_t lp_arch_counter_ordered(void)
{
	return lp_arch_counter();
}

#endif
