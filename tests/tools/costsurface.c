/* A program whose run time is a known function of its two arguments, for
 * `layerprof tune`'s test: `costsurface X Y [SCALE]` sleeps SCALE x (20 +
 * 8 * ((X - 3)^2 + (Y - 2)^2)) ms (SCALE 1 when not given; one
 * clock_nanosleep to an absolute deadline), so its best configuration is
 * (3, 2) and neighbours differ by 8 x SCALE ms or more.  A SCALE above 1
 * keeps those differences far above what a loaded machine adds to the
 * start and end of a run.  Exit status 2 on bad arguments. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int arg(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return end == s || *end || errno || *out < -1000 || *out > 1000 ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct timespec until;
	long x, y, scale = 1, ms;

	if (argc < 3 || argc > 4 || arg(argv[1], &x) || arg(argv[2], &y) ||
	    (argc == 4 && (arg(argv[3], &scale) || scale < 1))) {
		fprintf(stderr, "usage: costsurface X Y [SCALE] (integers, SCALE 1 or more)\n");
		return 2;
	}
	ms = scale * (20 + 8 * ((x - 3) * (x - 3) + (y - 2) * (y - 2)));
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
	return 0;
}
