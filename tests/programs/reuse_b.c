/* libreuse_b.so: see reuse.h. */
#define REUSE(x) reuse_b_##x
#include "reuse.h"
