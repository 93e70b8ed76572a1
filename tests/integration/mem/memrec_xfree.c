/* Threads that free each other's blocks: two makers allocate argv[1]
 * blocks of 56 bytes each in xmake (default 2000) and hand them to two
 * takers, which free them at once; the main thread allocates 5 blocks of
 * 24 bytes in xhold, which a keeper thread frees 300 ms later. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 64

static void *ring[SLOTS];
static unsigned put, got, total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t room = PTHREAD_COND_INITIALIZER, ready = PTHREAD_COND_INITIALIZER;
static void *held[5];

__attribute__((noinline)) static void *xmake(void)
{
	void *p = malloc(56);

	__asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call: the site is xmake */
	return p;
}

__attribute__((noinline)) static void xhold(int i)
{
	held[i] = malloc(24);
}

static void *maker(void *arg)
{
	unsigned n = *(unsigned *)arg;

	for (unsigned i = 0; i < n; i++) {
		void *p = xmake();

		pthread_mutex_lock(&lock);
		while (put - got == SLOTS)
			pthread_cond_wait(&room, &lock);
		ring[put++ % SLOTS] = p;
		pthread_cond_signal(&ready);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *taker(void *arg)
{
	(void)arg;
	for (;;) {
		void *p;

		pthread_mutex_lock(&lock);
		while (put == got && got < total)
			pthread_cond_wait(&ready, &lock);
		if (got == total) {
			pthread_cond_broadcast(&ready);
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		p = ring[got++ % SLOTS];
		pthread_cond_signal(&room);
		pthread_mutex_unlock(&lock);
		free(p);
	}
}

static void *keeper(void *arg)
{
	struct timespec t = { 0, 300000000 };

	(void)arg;
	nanosleep(&t, NULL);
	for (int i = 0; i < 5; i++)
		free(held[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	pthread_t m[2], t[2], k;

	total = 2 * n;
	for (int i = 0; i < 5; i++)
		xhold(i);
	pthread_create(&k, NULL, keeper, NULL);
	for (int i = 0; i < 2; i++) {
		pthread_create(&t[i], NULL, taker, NULL);
		pthread_create(&m[i], NULL, maker, &n);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(m[i], NULL);
		pthread_join(t[i], NULL);
	}
	pthread_join(k, NULL);
	return 0;
}
