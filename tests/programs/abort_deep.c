/* abort from deep down: main -> a -> b -> c -> abort().  The process dies of
 * SIGABRT; everything up to the abort must be in the trace, and the atexit
 * handler must not run. */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static volatile int sink;

COUNTED void never_called(void)
{
	sink++;
}

COUNTED void last_words(void)
{
	sink++;
}

COUNTED void c(void)
{
	last_words();
	abort();
}

COUNTED void b(void)
{
	c();
	BARRIER(); /* not reached */
}

COUNTED void a(void)
{
	b();
	BARRIER(); /* not reached */
}

int main(void)
{
	/* no core file from a test that dies on purpose */
	struct rlimit no_core = { 0, 0 };

	setrlimit(RLIMIT_CORE, &no_core);
	if (atexit(never_called)) {
		fprintf(stderr, "abort_deep: cannot register atexit handler\n");
		return 1;
	}
	a();
	return 1; /* not reached */
}
