/* Fixture for test_symbolizer: the layout of the data the fixtures define,
 * shared with the test so that it knows where a member lies. */
#ifndef LP_FIXTURE_DATA_H
#define LP_FIXTURE_DATA_H

#include <pthread.h>
#include <stdint.h>

/* A lock inside a struct, 0x40 bytes in on every ABI. */
struct fixture_stats {
	uint64_t count;
	uint64_t pad[7];
	pthread_mutex_t lock;
	uint64_t after;
};

#define FIXTURE_STATS_LOCK 0x40u
#define FIXTURE_TABLE_LEN 16u

_Static_assert(__builtin_offsetof(struct fixture_stats, lock) == FIXTURE_STATS_LOCK, "lock at 0x40");

#endif
