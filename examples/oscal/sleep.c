/* Time-heavy: 1 500 sleeps of 200 us (usleep), each between two
 * clock_gettime readings; prints the count of sleeps. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define SLEEPS 1500

int main(void)
{
	struct timespec a, b;
	int longer = 0;

	for (int i = 0; i < SLEEPS; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		usleep(200);
		clock_gettime(CLOCK_MONOTONIC, &b);
		longer += (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) >= 200000;
	}
	printf("%d sleeps, %s at least 200 us\n", SLEEPS, longer == SLEEPS ? "all" : "not all");
	return 0;
}
