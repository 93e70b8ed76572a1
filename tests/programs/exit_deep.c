/* exit from deep down: main -> a -> b -> c -> exit(3).  None of the four
 * frames returns; the atexit handler runs inside exit, still under c. */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>

#define EXIT_STATUS 3

static volatile int sink;

COUNTED void cleanup(int i)
{
	sink += i;
}

COUNTED void on_exit_handler(void)
{
	cleanup(1);
	cleanup(2);
}

COUNTED void c(int status)
{
	exit(status);
}

COUNTED void b(int status)
{
	c(status);
	BARRIER(); /* not reached */
}

COUNTED void a(int status)
{
	b(status);
	BARRIER(); /* not reached */
}

int main(void)
{
	volatile int status = EXIT_STATUS;

	if (atexit(on_exit_handler)) {
		fprintf(stderr, "exit_deep: cannot register atexit handler\n");
		return 1;
	}
	a(status);
	return 1; /* not reached */
}
