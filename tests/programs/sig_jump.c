/* A timer signal whose handler siglongjmps out of whatever the main loop is
 * doing, again and again, until a flag file appears; then plain calls.
 * Under `record` with a stopped recorder, the loop's thread waits for room
 * in its ring and the handler jumps out of that wait.
 * Without the flag file it gives up after 10 minutes (exit 3), so that a
 * test that failed before making it leaves no program spinning.
 * Usage: sig_jump FLAGFILE CALLS */
#include "prog.h"

#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile sig_atomic_t armed;
static volatile unsigned long jumps;

COUNTED unsigned long work(unsigned long x)
{
	BARRIER();
	return x * 7 + 1;
}

COUNTED unsigned long after(unsigned long x)
{
	BARRIER();
	return x ^ 0x55;
}

static void on_alarm(int sig)
{
	(void)sig;
	if (armed) {
		armed = 0;
		jumps++;
		siglongjmp(env, 1);
	}
}

int main(int argc, char **argv)
{
	struct itimerval every = { { 0, 2000 }, { 0, 2000 } }, off = { { 0, 0 }, { 0, 0 } };
	volatile unsigned long acc = 0;
	struct sigaction sa;
	unsigned long calls, i;
	time_t start;

	if (argc < 3) {
		fprintf(stderr, "usage: sig_jump FLAGFILE CALLS\n");
		return 2;
	}
	calls = strtoul(argv[2], NULL, 10);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
	start = time(NULL);
	sigsetjmp(env, 1);
	while (access(argv[1], F_OK)) {
		if (time(NULL) - start > 600)
			return 3;
		armed = 1;
		for (;;)
			acc = work(acc);
	}
	armed = 0;
	setitimer(ITIMER_REAL, &off, NULL);
	for (i = 0; i < calls; i++)
		acc = after(acc);
	printf("sig_jump: %lu jumps, acc %lu\n", (unsigned long)jumps, (unsigned long)acc);
	return 0;
}
