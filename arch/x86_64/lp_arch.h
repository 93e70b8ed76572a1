/* x86-64: the cheap per-event clock is the TSC, read with rdtsc. */
#ifndef LP_ARCH_H
#define LP_ARCH_H

#include <stdint.h>

#define LP_ARCH_NAME "x86_64"
#define LP_ARCH_COUNTER LP_CLOCK_TSC
/* Code built with frame pointers keeps {previous frame, return address}
 * at the frame pointer: the memory tracer walks these records. */
#define LP_ARCH_FRAME_WALK 1

/* Called twice per traced call: must stay a single instruction. */
static inline uint64_t lp_arch_counter(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* The counter read only once every earlier instruction has completed
 * (lfence): rdtsc alone may run ahead of the loads before it by hundreds
 * of cycles.  For records whose order against other threads' records
 * matters: a heap operation's time then comes after what made it possible
 * in another thread (the pointer it releases was loaded, the allocator
 * handed out the block another thread released).  Costs a pipeline drain. */
static inline uint64_t lp_arch_counter_ordered(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

#endif
