/* 32-bit arm: no user-readable counter is guaranteed, so events use
 * CLOCK_MONOTONIC directly (see arch/generic). */
#ifndef LP_ARCH_H
#define LP_ARCH_H

#define LP_ARCH_NAME "arm"
#include "lp_generic_clock.h"

#endif
