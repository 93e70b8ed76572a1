/* Phases for start/stop tests: the program calls phase1() 100 times, then
 * phase2() 200 times, ... phase5() 500 times, and before each phase waits
 * for SIGUSR1 (or 10 s).  After each phase it appends "phase N done" to the
 * file named by argv[1] (or prints it), so a test can switch tracing between
 * phases and know exactly which calls fell inside the intervals it traced. */
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "prog.h"

static volatile unsigned sink;

COUNTED void phase1(void)
{
	sink++;
	BARRIER();
}

COUNTED void phase2(void)
{
	sink++;
	BARRIER();
}

COUNTED void phase3(void)
{
	sink++;
	BARRIER();
}

COUNTED void phase4(void)
{
	sink++;
	BARRIER();
}

COUNTED void phase5(void)
{
	sink++;
	BARRIER();
}

static void wait_go(const sigset_t *set)
{
	struct timespec limit = { 10, 0 };

	sigtimedwait(set, NULL, &limit);
}

static void say(const char *path, const char *fmt, int n)
{
	FILE *f = path ? fopen(path, "a") : stdout;

	if (!f)
		return;
	fprintf(f, fmt, n);
	if (path)
		fclose(f);
	else
		fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : NULL;
	void (*const phase[5])(void) = { phase1, phase2, phase3, phase4, phase5 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	say(path, "ready %d\n", 0);
	for (int p = 0; p < 5; p++) {
		wait_go(&set);
		for (int i = 0; i < 100 * (p + 1); i++)
			phase[p]();
		say(path, "phase %d done\n", p + 1);
	}
	return 0;
}
