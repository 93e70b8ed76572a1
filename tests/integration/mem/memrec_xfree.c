/* Threads that free each other's blocks: two makers allocate argv[1]
 * blocks of 56 bytes each in xmake (default 2000) and hand them to two
 * takers, which free them at once; the main thread allocates 5 blocks of
 * 24 bytes in xhold, which a keeper thread frees once the makers and
 * takers are done and at least argv[2] ms (default 600) have passed.
 *
 * What happens does not hang on the scheduler: every thread first makes
 * one heap operation in warm (which gives it its ring), and nothing starts
 * before the recorder has taken every ring of the process (under
 * LAYERPROF_SESSION, the ring files "r.PID.*" are gone: the recorder
 * removes each once it has it) and every thread is waiting at the start;
 * a maker hands over one block at a time, and makers and takers end
 * together, once every block is freed.  So a block lives from its malloc
 * to its free only as long as the two threads take to meet, not as long as
 * a thread took to start or to be set up. */
#include <dirent.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAKERS 2
#define TAKERS 2
#define HELD 5
#define WAIT_MS 30000 /* at most, for the threads and the recorder */

static void *slot;
static _Atomic unsigned warmed; /* threads past their first heap operation */
static unsigned got, total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t room = PTHREAD_COND_INITIALIZER, ready = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t start, done;
static void *held[HELD];
static long hold_ms = 600;

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

__attribute__((noinline)) static void warm(void)
{
	void *volatile p = malloc(8);

	free(p);
	__asm__ volatile("" ::: "memory");
	atomic_fetch_add(&warmed, 1);
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))
		;
}

/* Whether a ring file of this process is still in the session directory. */
static int rings_left(const char *dir)
{
	char prefix[32];
	struct dirent *e;
	int left = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	snprintf(prefix, sizeof(prefix), "r.%d.", (int)getpid());
	while ((e = readdir(d)))
		left |= !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return left;
}

static void *maker(void *arg)
{
	unsigned n = *(unsigned *)arg;

	warm();
	pthread_barrier_wait(&start);
	for (unsigned i = 0; i < n; i++) {
		void *p = xmake();

		pthread_mutex_lock(&lock);
		while (slot)
			pthread_cond_wait(&room, &lock);
		slot = p;
		pthread_cond_broadcast(&ready);
		pthread_mutex_unlock(&lock);
	}
	pthread_barrier_wait(&done);
	return NULL;
}

static void *taker(void *arg)
{
	(void)arg;
	warm();
	pthread_barrier_wait(&start);
	for (;;) {
		void *p;

		pthread_mutex_lock(&lock);
		while (!slot && got < total)
			pthread_cond_wait(&ready, &lock);
		if (got == total) {
			pthread_cond_broadcast(&ready);
			pthread_mutex_unlock(&lock);
			break;
		}
		p = slot;
		slot = NULL;
		got++;
		pthread_cond_broadcast(&room);
		pthread_mutex_unlock(&lock);
		free(p);
	}
	pthread_barrier_wait(&done);
	return NULL;
}

static void *keeper(void *arg)
{
	struct timespec t0, t1;
	long spent;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	warm();
	pthread_barrier_wait(&start);
	pthread_barrier_wait(&done);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	if (spent < hold_ms)
		sleep_ms(hold_ms - spent);
	for (int i = 0; i < HELD; i++)
		free(held[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	const char *session = getenv("LAYERPROF_SESSION");
	pthread_t m[MAKERS], t[TAKERS], k;

	if (argc > 2)
		hold_ms = atol(argv[2]);
	total = MAKERS * n;
	/* main, the keeper, the makers and the takers meet at start; makers
	 * and takers and the keeper at done */
	if (pthread_barrier_init(&start, NULL, 2 + MAKERS + TAKERS) ||
	    pthread_barrier_init(&done, NULL, 1 + MAKERS + TAKERS))
		return 1;
	for (int i = 0; i < HELD; i++)
		xhold(i);
	pthread_create(&k, NULL, keeper, NULL);
	for (int i = 0; i < MAKERS; i++)
		pthread_create(&m[i], NULL, maker, &n);
	for (int i = 0; i < TAKERS; i++)
		pthread_create(&t[i], NULL, taker, NULL);
	/* the others have their rings once they are past warm; the
	 * recorder has them all once their files are gone */
	for (int waited = 0; waited < WAIT_MS && atomic_load(&warmed) < 1 + MAKERS + TAKERS; waited++)
		sleep_ms(1);
	for (int waited = 0; session && *session && waited < WAIT_MS && rings_left(session); waited++)
		sleep_ms(1);
	pthread_barrier_wait(&start);
	for (int i = 0; i < MAKERS; i++)
		pthread_join(m[i], NULL);
	for (int i = 0; i < TAKERS; i++)
		pthread_join(t[i], NULL);
	pthread_join(k, NULL);
	return 0;
}
