/* Fallback for architectures layerprof has no specific code for. */
#ifndef LP_ARCH_H
#define LP_ARCH_H

#define LP_ARCH_NAME "generic"
#include "lp_generic_clock.h"

#endif
