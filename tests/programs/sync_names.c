/* Sync tracer: locks in the program's own data, which report --sync names
 * by their symbol.  Two workers each take g_lock (a global mutex) and
 * stats.lock (a mutex 0x40 bytes into a static struct: offsetof is
 * printed) 20 times, then wait once at a static barrier, meet.
 * mutex-lock 80, mutex-unlock 80, barrier-wait 2, create 2, thread 2,
 * join 2.  Prints "global=40 stats=40 offset=64" and exits 0. */
#include "prog.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#define WORKERS 2
#define ADDS 20

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
long long g_total;

static struct {
	long long count;
	long long pad[7];
	pthread_mutex_t lock;
} stats = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_barrier_t meet;

COUNTED void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ADDS; i++) {
		pthread_mutex_lock(&g_lock);
		g_total++;
		pthread_mutex_unlock(&g_lock);
		pthread_mutex_lock(&stats.lock);
		stats.count++;
		pthread_mutex_unlock(&stats.lock);
	}
	pthread_barrier_wait(&meet);
	return NULL;
}

int main(void)
{
	pthread_t t[WORKERS];

	pthread_barrier_init(&meet, NULL, WORKERS);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&meet);
	printf("global=%lld stats=%lld offset=%zu\n", g_total, stats.count, offsetof(__typeof__(stats), lock));
	return 0;
}
