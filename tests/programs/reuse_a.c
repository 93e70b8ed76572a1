/* libreuse_a.so: see reuse.h. */
#define REUSE(x) reuse_a_##x
#include "reuse.h"
