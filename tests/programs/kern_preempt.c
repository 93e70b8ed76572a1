/* Involuntary context switches, for the kernel-event layer: two threads,
 * both pinned to the CPU main starts on, each run `spin` over the same fixed
 * amount of work (ITERS multiply-adds, about 150 ms on a current x86-64
 * core), starting together at a barrier, so the scheduler must share the one
 * CPU between them.  Expected: each thread is switched out at least once
 * inside spin while runnable (sched:sched_switch with prev_state R: the tick
 * preempts a thread in user mode with a plain schedule() on its way back to
 * user space, which the tracepoint reports as R, not R+).  A lower bound
 * only: how often depends on the scheduler's time slices (about 40 times
 * each with EEVDF's 3 ms base slice).  spin makes no system call, so it never
 * switches out voluntarily.
 * Usage: kern_preempt [ITERS] */
#include "prog.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#define ITERS 150000000UL
#define THREADS 2

static unsigned long iters = ITERS;
static pthread_barrier_t start;

/* a chain of dependent multiply-adds: fixed work the compiler cannot fold */
COUNTED unsigned long spin(unsigned long n)
{
	unsigned long x = 1;

	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		BARRIER();
	}
	return x;
}

COUNTED void *spinner(void *arg)
{
	pthread_barrier_wait(&start);
	*(unsigned long *)arg = spin(iters);
	return NULL;
}

/* Runs every thread on the CPU main is on now (no migration needed) */
__attribute__((no_instrument_function)) static int pin_here(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

int main(int argc, char **argv)
{
	unsigned long result[THREADS];
	pthread_t t[THREADS];

	if (argc > 1)
		iters = strtoul(argv[1], NULL, 10);
	if (pin_here() || pthread_barrier_init(&start, NULL, THREADS))
		return 2;
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, spinner, &result[i]))
			return 2;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return result[0] == result[1] ? 0 : 1;
}
