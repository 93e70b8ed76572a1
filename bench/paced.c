/* Benchmark workload for live streaming: calls one tiny function at a fixed
 * rate for a fixed time, so that a stream of a known event rate can be
 * offered to the agent (two events per call).  The pacing code is not
 * instrumented; only main and tiny are.
 * Usage: paced CALLS_PER_SECOND SECONDS */
#include "prog.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#define NOINSTR __attribute__((no_instrument_function))
#define NS_PER_S 1000000000ull
/* Calls made between two looks at the clock: a tenth of a millisecond's
 * worth, so that reading the clock costs little beside the calls and the
 * rate is even on that scale. */
#define SLICES_PER_S 10000ull
#define RATE_MAX 1000000000ull
#define SECONDS_MAX 3600.0

COUNTED unsigned long tiny(unsigned long x)
{
	return x + 1;
}

static NOINSTR uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static NOINSTR void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static NOINSTR int parse_args(int argc, char **argv, uint64_t *rate, uint64_t *duration_ns)
{
	char *end;
	unsigned long long r;
	double s;

	if (argc != 3)
		return -EINVAL;
	errno = 0;
	r = strtoull(argv[1], &end, 10);
	if (errno || *end || end == argv[1] || r < 1 || r > RATE_MAX)
		return -EINVAL;
	s = strtod(argv[2], &end);
	if (*end || end == argv[2] || !(s > 0.0) || s > SECONDS_MAX)
		return -EINVAL;
	*rate = r;
	*duration_ns = (uint64_t)(s * 1e9);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t rate, duration_ns, slice, done = 0, start, now, due;
	unsigned long acc = 0;

	if (parse_args(argc, argv, &rate, &duration_ns)) {
		fprintf(stderr, "usage: paced CALLS_PER_SECOND SECONDS   (1..%llu calls/s, at most %.0f s)\n",
		        (unsigned long long)RATE_MAX, SECONDS_MAX);
		return 2;
	}
	/* sleeps of a tenth of a millisecond: do not let the kernel stretch them */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	slice = rate / SLICES_PER_S ? rate / SLICES_PER_S : 1;
	start = now = now_ns();
	while (now - start < duration_ns) {
		/* the calls due by now; a program that fell behind catches up */
		due = (uint64_t)((double)(now - start) * (double)rate / 1e9);
		if (done >= due) {
			sleep_until(start + (uint64_t)((double)(done + slice) * 1e9 / (double)rate));
		} else {
			uint64_t n = due - done < slice ? due - done : slice;

			for (uint64_t i = 0; i < n; i++)
				acc = tiny(acc);
			done += n;
		}
		now = now_ns();
	}
	printf("paced: %llu calls in %.3f s: %.0f calls/s (asked %llu), acc %lu\n", (unsigned long long)done,
	       (double)(now - start) / 1e9, (double)done * 1e9 / (double)(now - start), (unsigned long long)rate, acc);
	return 0;
}
