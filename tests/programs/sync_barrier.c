/* Sync tracer: 3 workers meet at one barrier twice; worker k works k x 20
 * ms before each meeting, so in each round the first waits 40 ms at least.
 * barrier-wait 6, of which 2 are the serial thread's.  Prints "rounds=2
 * serial=2" and exits 0. */
#include "prog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define WORKERS 3
#define ROUNDS 2
#define WORK_MS 20

static pthread_barrier_t meet;
static atomic_int serial;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

COUNTED void *worker(void *arg)
{
	int k = (int)(long)arg;

	for (int r = 0; r < ROUNDS; r++) {
		sleep_ms(k * WORK_MS);
		if (pthread_barrier_wait(&meet) == PTHREAD_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&serial, 1);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[WORKERS];

	pthread_barrier_init(&meet, NULL, WORKERS);
	for (long k = 0; k < WORKERS; k++)
		pthread_create(&t[k], NULL, worker, (void *)k);
	for (int k = 0; k < WORKERS; k++)
		pthread_join(t[k], NULL);
	pthread_barrier_destroy(&meet);
	printf("rounds=%d serial=%d\n", ROUNDS, atomic_load(&serial));
	return 0;
}
