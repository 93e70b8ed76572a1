/* Code that runs before main: a .preinit_array function, which the loader
 * calls before the C library has set up `environ` (getenv finds nothing
 * there), and a constructor.  Both are instrumented and call counted
 * functions: preinit_hook calls early_work 3 times, ctor_hook calls
 * ctor_work 2 times, then main calls main_work 4 times.  Exit 0. */
#include "prog.h"

#include <stdio.h>

#define EARLY_CALLS 3
#define CTOR_CALLS 2
#define MAIN_CALLS 4

static volatile int sink;

COUNTED void early_work(int i)
{
	sink += i;
}

COUNTED void ctor_work(int i)
{
	sink += i;
}

COUNTED void main_work(int i)
{
	sink += i;
}

COUNTED void preinit_hook(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	(void)envp;
	for (int i = 0; i < EARLY_CALLS; i++)
		early_work(i);
}

__attribute__((section(".preinit_array"), used)) static void (*preinit_entry)(int, char **, char **) = preinit_hook;

__attribute__((constructor)) COUNTED void ctor_hook(void)
{
	for (int i = 0; i < CTOR_CALLS; i++)
		ctor_work(i);
}

int main(void)
{
	for (int i = 0; i < MAIN_CALLS; i++)
		main_work(i);
	printf("early: %d\n", sink);
	return 0;
}
