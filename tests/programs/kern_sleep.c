/* Voluntary context switches with an exact count, for the kernel-event layer:
 * sleeper makes N (default 5) nanosleep system calls of 2 ms each, through
 * syscall(SYS_nanosleep), so that the system call is nanosleep on x86-64,
 * aarch64 and arm alike (glibc's nanosleep() makes clock_nanosleep).  Each
 * call switches the thread out once in state S (sched:sched_switch,
 * prev_state S), and the expiring hrtimer wakes it from the timer interrupt
 * (sched:sched_wakeup in the context of whatever runs on that CPU, usually
 * the idle task, never this program), so sleeper is off the CPU for at least
 * N x 2 ms.
 * Usage: kern_sleep [N]   (N = 0 gives the rest of the program's switches) */
#include "prog.h"

#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLEEPS 5
#define SLEEP_NS 2000000L /* 2 ms */

/* returns the number of calls that failed (an interrupted sleep counts) */
COUNTED int sleeper(int n)
{
	struct timespec t = { 0, SLEEP_NS };
	int bad = 0;

	for (int i = 0; i < n; i++)
		if (syscall(SYS_nanosleep, &t, NULL))
			bad++;
	return bad;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : SLEEPS;

	if (n < 0)
		return 2;
	return sleeper(n) ? 1 : 0;
}
