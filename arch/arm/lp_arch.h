/* 32-bit arm: no user-readable counter is guaranteed, so events use
 * CLOCK_MONOTONIC directly (see arch/generic). */
#ifndef LP_ARCH_H
#define LP_ARCH_H

#define LP_ARCH_NAME "arm"
#include "lp_generic_clock.h"

/* Thumb functions' addresses arrive with bit 0 set (the instruction set
 * bit): the trace holds the function's entry address itself. */
#define LP_ARCH_FUNC(fn) ((uintptr_t)(fn) & ~(uintptr_t)1)

#endif
