/* Sync tracer: the other kinds, and calls that fail (their errors kept).
 *   recursive mutex: lock, lock, unlock, unlock;
 *   normal mutex: trylock (0), trylock (EBUSY), unlock;
 *   error-checking mutex: lock, lock (EDEADLK), unlock, unlock (EPERM);
 *   rwlock: rdlock, rdlock, unlock, unlock, wrlock, trywrlock (EBUSY),
 *           tryrdlock (EBUSY), unlock;
 *   spinlock: lock, trylock (EBUSY), unlock;
 *   a helper thread holds a mutex: main's timedlock of it times out after
 *   30 ms (ETIMEDOUT), pthread_tryjoin_np of the helper fails (EBUSY), then
 *   the helper unlocks and is joined; pthread_join of main itself fails
 *   (EDEADLK);
 *   robust mutex: a thread takes it and ends; main's lock gets EOWNERDEAD
 *   (held), makes it consistent, unlocks; the thread is joined;
 *   condition variable: under a mutex, pthread_cond_timedwait (20 ms) and
 *   pthread_cond_clockwait (CLOCK_MONOTONIC, 10 ms) time out (ETIMEDOUT,
 *   the mutex held again), then a broadcast nobody waits for;
 *   errno, set to 77 before the first call, is 77 at the end.
 * mutex-lock 11 (3 failed), mutex-unlock 8 (1 failed), rwlock-rdlock 3 (1
 * failed), rwlock-wrlock 2 (1 failed), rwlock-unlock 3, spin-lock 2 (1
 * failed), spin-unlock 1, join 4 (2 failed), create 2, thread 2, cond-wait
 * 2 (timed out, not failed), cond-broadcast 1.  Prints one line of the
 * results and exits 0. */
#include "prog.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TIMEOUT_MS 30

static pthread_mutex_t held_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t robust;
static atomic_int helper_has, helper_go;

static struct timespec in_ms(clockid_t clk, int ms)
{
	struct timespec at;

	clock_gettime(clk, &at);
	at.tv_nsec += ms * 1000000L;
	if (at.tv_nsec >= 1000000000L) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000L;
	}
	return at;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static const char *err_name(int e)
{
	switch (e) {
	case 0:
		return "0";
	case EBUSY:
		return "EBUSY";
	case EDEADLK:
		return "EDEADLK";
	case EPERM:
		return "EPERM";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EOWNERDEAD:
		return "EOWNERDEAD";
	default:
		return strerror(e);
	}
}

COUNTED void *helper(void *arg)
{
	pthread_mutex_lock(&held_mutex);
	atomic_store(&helper_has, 1);
	while (!atomic_load(&helper_go))
		sleep_ms(1);
	pthread_mutex_unlock(&held_mutex);
	return arg;
}

COUNTED void *robust_owner(void *arg)
{
	pthread_mutex_lock(&robust);
	return arg; /* ends holding it */
}

int main(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t rec, normal = PTHREAD_MUTEX_INITIALIZER, check;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	pthread_spinlock_t spin;
	pthread_t h, o;
	struct timespec at;
	pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	int r_rec = 0, t1, t2, e1, e2, w1, w2, s1, tl, tj, sj, ro, c1, c2, kept;

	errno = 77;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	r_rec |= pthread_mutex_lock(&rec);
	r_rec |= pthread_mutex_lock(&rec);
	r_rec |= pthread_mutex_unlock(&rec);
	r_rec |= pthread_mutex_unlock(&rec);

	t1 = pthread_mutex_trylock(&normal);
	t2 = pthread_mutex_trylock(&normal);
	pthread_mutex_unlock(&normal);

	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&check, &a);
	pthread_mutex_lock(&check);
	e1 = pthread_mutex_lock(&check);
	pthread_mutex_unlock(&check);
	e2 = pthread_mutex_unlock(&check);

	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_wrlock(&rw);
	w1 = pthread_rwlock_trywrlock(&rw);
	w2 = pthread_rwlock_tryrdlock(&rw);
	pthread_rwlock_unlock(&rw);

	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&spin);
	s1 = pthread_spin_trylock(&spin);
	pthread_spin_unlock(&spin);

	pthread_create(&h, NULL, helper, NULL);
	while (!atomic_load(&helper_has))
		sleep_ms(1);
	at = in_ms(CLOCK_REALTIME, TIMEOUT_MS);
	tl = pthread_mutex_timedlock(&held_mutex, &at);
	tj = pthread_tryjoin_np(h, NULL);
	atomic_store(&helper_go, 1);
	pthread_join(h, NULL);
	sj = pthread_join(pthread_self(), NULL);

	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&robust, &a);
	pthread_create(&o, NULL, robust_owner, NULL);
	pthread_join(o, NULL);
	ro = pthread_mutex_lock(&robust);
	if (ro == EOWNERDEAD)
		pthread_mutex_consistent(&robust);
	pthread_mutex_unlock(&robust);

	pthread_mutex_lock(&normal);
	at = in_ms(CLOCK_REALTIME, 20);
	c1 = pthread_cond_timedwait(&cond, &normal, &at);
	at = in_ms(CLOCK_MONOTONIC, 10);
	c2 = pthread_cond_clockwait(&cond, &normal, CLOCK_MONOTONIC, &at);
	pthread_mutex_unlock(&normal);
	pthread_cond_broadcast(&cond);
	kept = errno == 77;

	printf("recursive=%d trylock=%s,%s errorcheck=%s,%s rwlock=%s,%s spin=%s timedlock=%s tryjoin=%s selfjoin=%s "
	       "robust=%s cond=%s,%s errno=%s\n",
	       r_rec, err_name(t1), err_name(t2), err_name(e1), err_name(e2), err_name(w1), err_name(w2), err_name(s1),
	       err_name(tl), err_name(tj), err_name(sj), err_name(ro), err_name(c1), err_name(c2),
	       kept ? "kept" : "changed");
	return 0;
}
