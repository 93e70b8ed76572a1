/* Sync tracer: semaphores.  A poster posts 4 times, 10 ms apart; main
 * waits 4 times (sem_wait).  Then, alone: sem_trywait on the empty
 * semaphore fails with EAGAIN, sem_timedwait with a time already past
 * fails with ETIMEDOUT, sem_post and sem_trywait succeed.  sem-post 5,
 * sem-wait 7 (2 of them failed, 2 try).  Prints "got=4 trywait=EAGAIN
 * timedwait=ETIMEDOUT last=0" and exits 0. */
#include "prog.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

#define POSTS 4
#define PACE_MS 10

static sem_t sem;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

COUNTED void *poster(void *arg)
{
	for (int i = 0; i < POSTS; i++) {
		sleep_ms(PACE_MS);
		sem_post(&sem);
	}
	return arg;
}

int main(void)
{
	struct timespec past = { 0, 0 };
	pthread_t p;
	int got = 0, r1, e1, r2, e2, r3;

	sem_init(&sem, 0, 0);
	pthread_create(&p, NULL, poster, NULL);
	for (int i = 0; i < POSTS; i++)
		if (!sem_wait(&sem))
			got++;
	pthread_join(p, NULL);
	errno = 0;
	r1 = sem_trywait(&sem);
	e1 = errno;
	errno = 0;
	r2 = sem_timedwait(&sem, &past);
	e2 = errno;
	sem_post(&sem);
	r3 = sem_trywait(&sem);
	sem_destroy(&sem);
	printf("got=%d trywait=%s timedwait=%s last=%d\n", got, r1 == -1 && e1 == EAGAIN ? "EAGAIN" : "?",
	       r2 == -1 && e2 == ETIMEDOUT ? "ETIMEDOUT" : "?", r3);
	return 0;
}
