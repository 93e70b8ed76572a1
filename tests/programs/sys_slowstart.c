/* A program whose start, before any library's constructor, takes 300 ms
 * of system calls (3 x nanosleep of 100 ms, from a .preinit_array function,
 * which runs before the preloaded runtime opens the main thread's ring),
 * then main calls work() once, which makes 5 getppid calls.  Exit status 0.
 * Traced with --syscalls, the whole run is one thread of one process image:
 * the exec, the loader's calls and the three nanosleeps at the top, then
 * main > work > getppid x5. */
#include "prog.h"

#include <time.h>
#include <unistd.h>

__attribute__((no_instrument_function)) static void slow_start(void)
{
	struct timespec t = { 0, 100000000L };

	for (int i = 0; i < 3; i++)
		nanosleep(&t, NULL);
}

__attribute__((section(".preinit_array"), used)) static void (*const slow_start_entry)(void) = slow_start;

COUNTED int work(void)
{
	int sum = 0;

	for (int i = 0; i < 5; i++)
		sum += getppid() > 0;
	return sum;
}

int main(void)
{
	return work() == 5 ? 0 : 1;
}
