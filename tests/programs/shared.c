/* libshared.so: instrumented code that lives in a shared library loaded at
 * start-up, so its addresses belong to a mapping other than the executable. */
#include "prog.h"
#include "shared.h"

COUNTED int shared_fn(int x)
{
	return 2 * x + 1;
}
