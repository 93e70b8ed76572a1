/* The synchronisation group: mutexes, rwlocks, spinlocks, semaphores,
 * condition variables, futexes and barriers, uncontended (timed around the
 * call) and with N waiters (the paper's load dependencies: from the call
 * that wakes them to the return of the last woken one, on the shared
 * clock).  A waiter is asleep in the kernel before the wake-up is timed. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "oscal/suite.h"

static const long xs_waiters[] = { 1, 2, 3, 4, 6, 8, 12, 16 };
static const long xs_threads[] = { 2, 3, 4, 6, 8, 12, 16 };

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

static int thread_err(struct suite_ctx *c, int r, const char *what)
{
	errno = r;
	return suite_err(c, what);
}

static long futex(atomic_int *w, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* ------------------------------------------------------------ uncontended */

/* the objects of the uncontended entries, from setup to done */
static struct {
	pthread_mutex_t m;
	pthread_rwlock_t rw;
	pthread_spinlock_t spin;
	sem_t sem;
	pthread_cond_t cv;
	pthread_once_t once;
	atomic_int word;
} obj;

static void nothing(void)
{
}

static int setup_obj(struct suite_ctx *c)
{
	int r;
	memset(&obj, 0, sizeof(obj));
	obj.once = (pthread_once_t)PTHREAD_ONCE_INIT;
	if ((r = pthread_mutex_init(&obj.m, NULL)) || (r = pthread_rwlock_init(&obj.rw, NULL)) ||
	    (r = pthread_spin_init(&obj.spin, PTHREAD_PROCESS_PRIVATE)) || (r = pthread_cond_init(&obj.cv, NULL)))
		return thread_err(c, r, "the initialisation of a lock");
	if (sem_init(&obj.sem, 0, 0) < 0)
		return suite_err(c, "sem_init");
	pthread_once(&obj.once, nothing);
	c->p = &obj;
	return 0;
}

static void done_obj(struct suite_ctx *c)
{
	if (!c->p)
		return;
	pthread_mutex_destroy(&obj.m);
	pthread_rwlock_destroy(&obj.rw);
	pthread_spin_destroy(&obj.spin);
	pthread_cond_destroy(&obj.cv);
	sem_destroy(&obj.sem);
	c->p = NULL;
}

static int one_mutex_lock(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_mutex_lock(&obj.m);
	T1;
	if (r)
		return thread_err(c, r, "pthread_mutex_lock");
	pthread_mutex_unlock(&obj.m);
	return 0;
}

static int one_mutex_unlock(struct suite_ctx *c, uint64_t *ns)
{
	int r = pthread_mutex_lock(&obj.m);
	if (r)
		return thread_err(c, r, "pthread_mutex_lock");
	T0;
	r = pthread_mutex_unlock(&obj.m);
	T1;
	return r ? thread_err(c, r, "pthread_mutex_unlock") : 0;
}

static int one_mutex_trylock(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_mutex_trylock(&obj.m);
	T1;
	if (r)
		return thread_err(c, r, "pthread_mutex_trylock of a free mutex");
	pthread_mutex_unlock(&obj.m);
	return 0;
}

static int one_mutex_trylock_busy(struct suite_ctx *c, uint64_t *ns)
{
	int r = pthread_mutex_lock(&obj.m);
	if (r)
		return thread_err(c, r, "pthread_mutex_lock");
	T0;
	r = pthread_mutex_trylock(&obj.m);
	T1;
	pthread_mutex_unlock(&obj.m);
	if (r == 0) {
		pthread_mutex_unlock(&obj.m);
		c->what = "pthread_mutex_trylock of a held mutex succeeded";
		return -EIO;
	}
	return r == EBUSY ? 0 : thread_err(c, r, "pthread_mutex_trylock");
}

static int one_rdlock(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_rwlock_rdlock(&obj.rw);
	T1;
	if (r)
		return thread_err(c, r, "pthread_rwlock_rdlock");
	pthread_rwlock_unlock(&obj.rw);
	return 0;
}

static int one_wrlock(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_rwlock_wrlock(&obj.rw);
	T1;
	if (r)
		return thread_err(c, r, "pthread_rwlock_wrlock");
	pthread_rwlock_unlock(&obj.rw);
	return 0;
}

static int one_rwunlock(struct suite_ctx *c, uint64_t *ns)
{
	int r = pthread_rwlock_wrlock(&obj.rw);
	if (r)
		return thread_err(c, r, "pthread_rwlock_wrlock");
	T0;
	r = pthread_rwlock_unlock(&obj.rw);
	T1;
	return r ? thread_err(c, r, "pthread_rwlock_unlock") : 0;
}

static int one_spin_lock(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_spin_lock(&obj.spin);
	T1;
	if (r)
		return thread_err(c, r, "pthread_spin_lock");
	pthread_spin_unlock(&obj.spin);
	return 0;
}

static int one_spin_unlock(struct suite_ctx *c, uint64_t *ns)
{
	int r = pthread_spin_lock(&obj.spin);
	if (r)
		return thread_err(c, r, "pthread_spin_lock");
	T0;
	r = pthread_spin_unlock(&obj.spin);
	T1;
	return r ? thread_err(c, r, "pthread_spin_unlock") : 0;
}

static int one_sem_post(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = sem_post(&obj.sem);
	T1;
	if (r < 0)
		return suite_err(c, "sem_post");
	sem_wait(&obj.sem);
	return 0;
}

static int one_sem_wait(struct suite_ctx *c, uint64_t *ns)
{
	if (sem_post(&obj.sem) < 0)
		return suite_err(c, "sem_post before sem_wait");
	T0;
	int r = sem_wait(&obj.sem);
	T1;
	return r < 0 ? suite_err(c, "sem_wait") : 0;
}

static int one_sem_trywait_busy(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = sem_trywait(&obj.sem);
	T1;
	if (r == 0) {
		c->what = "sem_trywait of a semaphore at 0 succeeded";
		return -EIO;
	}
	return errno == EAGAIN ? 0 : suite_err(c, "sem_trywait");
}

static int one_sem_getvalue(struct suite_ctx *c, uint64_t *ns)
{
	int v;
	T0;
	int r = sem_getvalue(&obj.sem, &v);
	T1;
	return r < 0 ? suite_err(c, "sem_getvalue") : 0;
}

static int one_cond_signal(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_cond_signal(&obj.cv);
	T1;
	return r ? thread_err(c, r, "pthread_cond_signal") : 0;
}

static int one_cond_broadcast(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_cond_broadcast(&obj.cv);
	T1;
	return r ? thread_err(c, r, "pthread_cond_broadcast") : 0;
}

static int one_once(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	int r = pthread_once(&obj.once, nothing);
	T1;
	return r ? thread_err(c, r, "pthread_once") : 0;
}

static int one_futex_wake(struct suite_ctx *c, uint64_t *ns)
{
	T0;
	long r = futex(&obj.word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
	T1;
	return r < 0 ? suite_err(c, "futex FUTEX_WAKE") : 0;
}

static int one_futex_wait_mismatch(struct suite_ctx *c, uint64_t *ns)
{
	atomic_store(&obj.word, 1);
	T0;
	long r = futex(&obj.word, FUTEX_WAIT_PRIVATE, 0, NULL);
	T1;
	if (r == 0) {
		c->what = "futex FUTEX_WAIT on a changed value returned 0";
		return -EIO;
	}
	return errno == EAGAIN ? 0 : suite_err(c, "futex FUTEX_WAIT");
}

/* ------------------------------------------------------------ waiters */

enum wait_kind { W_SEM, W_BROADCAST, W_SIGNAL, W_FUTEX, W_MUTEX };

/* N waiters: each passes the gate (one post per waiter per round), says
 * it is ready, blocks in its kind's call and notes its return's time. */
struct waiters {
	enum wait_kind kind;
	int n;
	pthread_t th[SUITE_TASKS_MAX];
	pid_t tid[SUITE_TASKS_MAX];
	uint64_t ret[SUITE_TASKS_MAX];
	int started;
	sem_t gate, sem;
	pthread_mutex_t m;
	pthread_cond_t cv;
	atomic_int word, ready, returned, stop, tids;
	unsigned gen; /* under m */
	long round;
};

struct waiter_arg {
	struct waiters *w;
	int i;
};

static struct waiter_arg waiter_args[SUITE_TASKS_MAX];

static void *waiter(void *arg)
{
	struct waiter_arg *a = arg;
	struct waiters *w = a->w;
	w->tid[a->i] = suite_gettid();
	atomic_fetch_add(&w->tids, 1);
	for (;;) {
		while (sem_wait(&w->gate) < 0)
			;
		if (atomic_load(&w->stop))
			break;
		switch (w->kind) {
		case W_SEM:
			atomic_fetch_add(&w->ready, 1);
			while (sem_wait(&w->sem) < 0)
				;
			w->ret[a->i] = suite_now();
			break;
		case W_BROADCAST:
		case W_SIGNAL: {
			pthread_mutex_lock(&w->m);
			unsigned mine = w->gen;
			atomic_fetch_add(&w->ready, 1);
			while (w->gen == mine)
				pthread_cond_wait(&w->cv, &w->m);
			w->ret[a->i] = suite_now();
			pthread_mutex_unlock(&w->m);
			break;
		}
		case W_FUTEX:
			atomic_fetch_add(&w->ready, 1);
			while (atomic_load(&w->word) == 0)
				futex(&w->word, FUTEX_WAIT_PRIVATE, 0, NULL);
			w->ret[a->i] = suite_now();
			break;
		case W_MUTEX:
			atomic_fetch_add(&w->ready, 1);
			pthread_mutex_lock(&w->m);
			w->ret[a->i] = suite_now();
			pthread_mutex_unlock(&w->m);
			break;
		}
		atomic_fetch_add(&w->returned, 1);
	}
	return NULL;
}

static void wait_count(atomic_int *v, long want)
{
	while (atomic_load(v) < want)
		sched_yield();
}

static void done_waiters(struct suite_ctx *c)
{
	struct waiters *w = c->priv;
	if (!w)
		return;
	atomic_store(&w->stop, 1);
	for (int i = 0; i < w->started; i++)
		sem_post(&w->gate);
	for (int i = 0; i < w->started; i++)
		pthread_join(w->th[i], NULL);
	sem_destroy(&w->gate);
	sem_destroy(&w->sem);
	pthread_mutex_destroy(&w->m);
	pthread_cond_destroy(&w->cv);
	free(w);
	c->priv = NULL;
}

static int setup_waiters(struct suite_ctx *c, enum wait_kind kind)
{
	struct waiters *w = calloc(1, sizeof(*w));
	int r;
	if (!w)
		return suite_err(c, "calloc of the waiters");
	w->kind = kind;
	w->n = c->x > 0 ? (int)c->x : 1;
	if (w->n > SUITE_TASKS_MAX)
		w->n = SUITE_TASKS_MAX;
	sem_init(&w->gate, 0, 0);
	sem_init(&w->sem, 0, 0);
	pthread_mutex_init(&w->m, NULL);
	pthread_cond_init(&w->cv, NULL);
	c->priv = w;
	for (int i = 0; i < w->n; i++) {
		waiter_args[i].w = w;
		waiter_args[i].i = i;
		if ((r = pthread_create(&w->th[i], NULL, waiter, &waiter_args[i])))
			return thread_err(c, r, "pthread_create of a waiter");
		w->started++;
	}
	wait_count(&w->tids, w->n);
	return 0;
}

static int setup_sem_waiters(struct suite_ctx *c)
{
	return setup_waiters(c, W_SEM);
}

static int setup_broadcast_waiters(struct suite_ctx *c)
{
	return setup_waiters(c, W_BROADCAST);
}

static int setup_signal_waiter(struct suite_ctx *c)
{
	return setup_waiters(c, W_SIGNAL);
}

static int setup_futex_waiters(struct suite_ctx *c)
{
	return setup_waiters(c, W_FUTEX);
}

static int setup_mutex_waiter(struct suite_ctx *c)
{
	return setup_waiters(c, W_MUTEX);
}

/* One round: every waiter asleep in its call, then the wake-up timed to
 * the return of the last of them. */
static int one_wake(struct suite_ctx *c, uint64_t *ns)
{
	struct waiters *w = c->priv;
	long want = (w->round + 1) * w->n;
	uint64_t t0, last;
	int r = 0;

	atomic_store(&w->word, 0);
	if (w->kind == W_MUTEX && (r = pthread_mutex_lock(&w->m)))
		return thread_err(c, r, "pthread_mutex_lock");
	for (int i = 0; i < w->n; i++)
		sem_post(&w->gate);
	wait_count(&w->ready, want);
	for (int i = 0; i < w->n; i++)
		suite_wait_sleeping(w->tid[i], 1);
	switch (w->kind) {
	case W_SEM:
		t0 = suite_now();
		for (int i = 0; i < w->n && !r; i++)
			r = sem_post(&w->sem) < 0 ? errno : 0;
		break;
	case W_BROADCAST:
	case W_SIGNAL:
		pthread_mutex_lock(&w->m);
		w->gen++;
		t0 = suite_now();
		r = w->kind == W_SIGNAL ? pthread_cond_signal(&w->cv) : pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->m);
		break;
	case W_FUTEX:
		atomic_store(&w->word, 1);
		t0 = suite_now();
		r = futex(&w->word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL) < 0 ? errno : 0;
		break;
	case W_MUTEX:
	default:
		t0 = suite_now();
		r = pthread_mutex_unlock(&w->m);
		break;
	}
	if (r)
		return thread_err(c, r, "the wake-up call");
	wait_count(&w->returned, want);
	w->round++;
	last = t0;
	for (int i = 0; i < w->n; i++)
		if (w->ret[i] > last)
			last = w->ret[i];
	*ns = last - t0;
	return 0;
}

/* ------------------------------------------------------------ barrier */

struct barrier_state {
	pthread_barrier_t b;
	pthread_t th[SUITE_TASKS_MAX];
	int started;
	long rounds;            /* the main thread's crossings */
	atomic_long last_round; /* the crossing after which the helpers end (0: none yet) */
};

static void *barrier_helper(void *arg)
{
	struct barrier_state *s = arg;
	for (long k = 1;; k++) {
		pthread_barrier_wait(&s->b);
		if (k == atomic_load(&s->last_round))
			break;
	}
	return NULL;
}

static int setup_barrier(struct suite_ctx *c)
{
	struct barrier_state *s = calloc(1, sizeof(*s));
	int n = (int)c->x, r;
	if (!s)
		return suite_err(c, "calloc of the barrier");
	if ((r = pthread_barrier_init(&s->b, NULL, (unsigned)n))) {
		free(s);
		return thread_err(c, r, "pthread_barrier_init");
	}
	c->priv = s;
	for (int i = 0; i < n - 1; i++) {
		if ((r = pthread_create(&s->th[i], NULL, barrier_helper, s))) {
			/* the barrier cannot be crossed without all: stop here */
			c->what = "pthread_create of a barrier thread";
			errno = r;
			return -r;
		}
		s->started++;
	}
	return 0;
}

static void done_barrier(struct suite_ctx *c)
{
	struct barrier_state *s = c->priv;
	if (!s)
		return;
	if (s->started == c->x - 1) {
		atomic_store(&s->last_round, s->rounds + 1);
		pthread_barrier_wait(&s->b);
		for (int i = 0; i < s->started; i++)
			pthread_join(s->th[i], NULL);
		pthread_barrier_destroy(&s->b);
		free(s);
	}
	/* else helpers wait for ever at a barrier that cannot fill: leave them
	 * (and the state they use) to the process's end */
	c->priv = NULL;
}

static int one_barrier(struct suite_ctx *c, uint64_t *ns)
{
	struct barrier_state *s = c->priv;
	T0;
	int r = pthread_barrier_wait(&s->b);
	T1;
	s->rounds++;
	return r && r != PTHREAD_BARRIER_SERIAL_THREAD ? thread_err(c, r, "pthread_barrier_wait") : 0;
}

#define S(name, call, cond, param, unit, xs, setup, one, done, desc)              \
	{                                                                         \
		name, call, cond, "sync", param, unit, xs, setup, one, done, desc \
	}
#define U(name, call, cond, one, desc) S(name, call, cond, "", "", SUITE_NOX, setup_obj, one, done_obj, desc)

const struct suite_def suite_sync[] = {
	U("mutex-lock", "pthread_mutex_lock", "", one_mutex_lock, "pthread_mutex_lock(3) of a free mutex"),
	U("mutex-unlock", "pthread_mutex_unlock", "", one_mutex_unlock,
	  "pthread_mutex_unlock(3) of a mutex nobody waits for"),
	S("mutex-handoff", "pthread_mutex_unlock", "handoff", "", "", SUITE_NOX, setup_mutex_waiter, one_wake,
	  done_waiters, "pthread_mutex_unlock(3) to the return of pthread_mutex_lock(3) in the thread waiting for it"),
	U("mutex-trylock", "pthread_mutex_trylock", "", one_mutex_trylock, "pthread_mutex_trylock(3) of a free mutex"),
	U("mutex-trylock-busy", "pthread_mutex_trylock", "busy", one_mutex_trylock_busy,
	  "pthread_mutex_trylock(3) of a held mutex (EBUSY is its result)"),
	U("rwlock-rdlock", "pthread_rwlock_rdlock", "", one_rdlock, "pthread_rwlock_rdlock(3) of a free rwlock"),
	U("rwlock-wrlock", "pthread_rwlock_wrlock", "", one_wrlock, "pthread_rwlock_wrlock(3) of a free rwlock"),
	U("rwlock-unlock", "pthread_rwlock_unlock", "", one_rwunlock,
	  "pthread_rwlock_unlock(3) of a write lock nobody waits for"),
	U("spin-lock", "pthread_spin_lock", "", one_spin_lock, "pthread_spin_lock(3) of a free spinlock"),
	U("spin-unlock", "pthread_spin_unlock", "", one_spin_unlock, "pthread_spin_unlock(3)"),
	U("sem-post", "sem_post", "", one_sem_post, "sem_post(3) with no waiter"),
	S("sem-post-waiters", "sem_post", "waiters", "waiters", "tasks", SUITE_XS(xs_waiters), setup_sem_waiters,
	  one_wake, done_waiters,
	  "the semaphore flush: x threads wait in sem_wait(3), from the first of x sem_post(3) to the last one's "
	  "return"),
	U("sem-wait", "sem_wait", "", one_sem_wait, "sem_wait(3) of a semaphore above 0"),
	U("sem-trywait-busy", "sem_trywait", "busy", one_sem_trywait_busy,
	  "sem_trywait(3) of a semaphore at 0 (EAGAIN is its result)"),
	U("sem-getvalue", "sem_getvalue", "", one_sem_getvalue, "sem_getvalue(3)"),
	U("cond-signal", "pthread_cond_signal", "", one_cond_signal, "pthread_cond_signal(3) with no waiter"),
	S("cond-signal-wake", "pthread_cond_signal", "wake", "", "", SUITE_NOX, setup_signal_waiter, one_wake,
	  done_waiters, "pthread_cond_signal(3) to the return of pthread_cond_wait(3) in the waiting thread"),
	U("cond-broadcast", "pthread_cond_broadcast", "", one_cond_broadcast,
	  "pthread_cond_broadcast(3) with no waiter"),
	S("cond-broadcast-waiters", "pthread_cond_broadcast", "waiters", "waiters", "tasks", SUITE_XS(xs_waiters),
	  setup_broadcast_waiters, one_wake, done_waiters,
	  "pthread_cond_broadcast(3) to x threads in pthread_cond_wait(3), to the last one's return"),
	U("futex-wake", "futex", "wake", one_futex_wake, "futex(2) FUTEX_WAKE with no waiter"),
	U("futex-wait-mismatch", "futex", "wait-mismatch", one_futex_wait_mismatch,
	  "futex(2) FUTEX_WAIT on a word that differs (EAGAIN is its result)"),
	S("futex-wake-waiters", "futex", "wake-waiters", "waiters", "tasks", SUITE_XS(xs_waiters), setup_futex_waiters,
	  one_wake, done_waiters, "futex(2) FUTEX_WAKE of x threads in FUTEX_WAIT, to the last one's return"),
	S("barrier", "pthread_barrier_wait", "", "threads", "tasks", SUITE_XS(xs_threads), setup_barrier, one_barrier,
	  done_barrier, "pthread_barrier_wait(3) in one of x threads crossing a barrier again and again"),
	U("pthread_once", "pthread_once", "done", one_once, "pthread_once(3) of a routine run already"),
};
const size_t suite_sync_n = sizeof(suite_sync) / sizeof(suite_sync[0]);
