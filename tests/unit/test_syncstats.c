/* Unit test of the synchronisation statistics (host/lib/analysis/syncstats.c)
 * and `report --sync`'s writer (host/lib/export/syncreport.c): sync events
 * and system calls written with the encoders, fed through walk_feed (and
 * once through a trace directory), with exact expectations: two threads
 * on a mutex (waits, wakers, holds, p99), recursion and try failures,
 * rwlock readers, a producer/consumer pair with a slow producer, a
 * barrier, a semaphore, joins, futex waits of other code, and a trace
 * without sync events.  The report names a lock in a heap block by its
 * block, and locks in this program's own variables by their symbol. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/encoder.h"
#include "common/memevent.h"
#include "common/syncevent.h"
#include "common/sysevent.h"
#include "common/systab.h"
#include "host/lib/analysis/syncstats.h"
#include "host/lib/export/syncreport.h"
#include "host/lib/trace/walk.h"
#include "layerprof/format.h"
#include "tests/unit/check.h"

#define IMAGE 1u
#define PID 100u

static struct encoder *enc;
static struct walk w;
static struct syncstats st;
static struct syncstats_result res;
static struct walk_ops ops;

/* the waits the hook heard */
#define WAITS_MAX 64u
static struct syncstats_wait heard[WAITS_MAX];
static unsigned nheard;

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void on_wait(void *ctx, const struct syncstats_wait *wt)
{
	(void)ctx;
	if (nheard < WAITS_MAX)
		heard[nheard++] = *wt;
}

static void begin(void)
{
	char err[256];

	if (walk_open(&w, NULL, NULL, err, sizeof(err)))
		die(err);
	syncstats_init(&st, &w);
	syncstats_set_wait_hook(&st, on_wait, NULL);
	memset(&ops, 0, sizeof(ops));
	syncstats_walk_ops(&st, &ops);
	nheard = 0;
	CHECK_EQ_U64(walk_begin(&w, &ops), 0);
}

/* A chunk of thread tid's events follows (its first chunk names it). */
static void thread(uint32_t tid, const char *comm, uint64_t ns)
{
	encoder_init(enc, IMAGE, PID, tid);
	if (comm)
		encoder_task(enc, ns, LP_TASK_START, 0, comm, strlen(comm), NULL, 0);
}

/* test_report writes the chunks into a trace file instead */
static int trace_fd = -1;

static void flush(void)
{
	const uint8_t *payload;
	size_t len = encoder_take(enc, &payload);

	if (!len)
		return;
	if (trace_fd >= 0)
		CHECK_EQ_U64(chunk_write_fd(trace_fd, LP_CHUNK_EVENTS, payload, (uint32_t)len), 0);
	else
		CHECK_EQ_U64(walk_feed(&w, LP_CHUNK_EVENTS, payload, len), 0);
}

static void op(uint64_t ns, uint8_t o, uint32_t flags, uint64_t obj, uint64_t wait_ns, uint64_t obj2)
{
	struct syncevent y = {
		.op = o, .flags = flags, .obj = obj, .obj2 = obj2, .wait_ns = wait_ns, .site = 0x401000 + o
	};

	encoder_sync(enc, ns, &y);
}

static void finish(void)
{
	walk_end(&w);
	CHECK_EQ_U64(syncstats_collect(&st, NULL, &res), 0);
}

static void done(void)
{
	syncstats_result_release(&res);
	syncstats_release(&st);
	walk_release(&w);
}

static const struct syncstats_object *object(uint64_t addr, unsigned kind)
{
	for (uint32_t i = 0; i < st.nobjects; i++)
		if (st.objects[i].addr == addr && st.objects[i].kind == kind)
			return &st.objects[i];
	printf("FAIL: no %s 0x%llx\n", syncstats_kind_name(kind), (unsigned long long)addr);
	exit(1);
}

static const struct syncstats_thread *thr(uint32_t tid)
{
	for (uint32_t i = 0; i < st.nthreads; i++)
		if (st.threads[i].tid == tid)
			return &st.threads[i];
	printf("FAIL: no thread %u\n", tid);
	exit(1);
}

static const struct syncstats_use *use(const struct syncstats_object *o, uint32_t tid)
{
	for (uint32_t i = 0; i < o->nuses; i++)
		if (st.threads[st.uses[o->first_use + i].thread].tid == tid)
			return &st.uses[o->first_use + i];
	printf("FAIL: thread %u did not use 0x%llx\n", tid, (unsigned long long)o->addr);
	exit(1);
}

/* ------------------------------------------------------------ a mutex between two threads */

#define M 0x1000u

static void test_mutex(void)
{
	const struct syncstats_object *o;
	const struct syncstats_thread *t10, *t11;

	begin();
	/* thread 10's chunk reaches the walk before thread 11's: the merge
	 * puts them in time order */
	thread(10, "ten", 900);
	op(1000, LP_SYNC_MUTEX_LOCK, 0, M, 0, 0);
	op(1500, LP_SYNC_MUTEX_UNLOCK, 0, M, 0, 0);
	op(2700, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, M, 500, 0); /* since 2200 */
	op(2900, LP_SYNC_MUTEX_UNLOCK, 0, M, 0, 0);
	flush();
	thread(11, "eleven", 900);
	encoder_entry(enc, 1250, 0x402000);                         /* the wait is in this function */
	op(1600, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, M, 300, 0); /* since 1300 */
	encoder_exit(enc, 1650, 0x402000);
	op(2600, LP_SYNC_MUTEX_UNLOCK, 0, M, 0, 0);
	op(2800, LP_SYNC_MUTEX_LOCK, LP_SYNC_TRY | LP_SYNC_FAILED, M, 0, 0);
	flush();
	finish();

	CHECK_EQ_U64(res.nlocks, 1);
	o = object(M, SYNCSTATS_MUTEX);
	CHECK_EQ_U64(o->acquisitions, 3);
	CHECK_EQ_U64(o->contended, 2);
	CHECK_EQ_U64(o->try_failures, 1);
	CHECK_EQ_U64(o->failures, 0);
	CHECK_EQ_U64(o->waits.n, 2);
	CHECK_EQ_U64(o->waits.total_ns, 800);
	CHECK_EQ_U64(o->waits.max_ns, 500);
	CHECK_EQ_U64(o->wait_p99_ns, 500);
	CHECK(!o->p99_approx);
	CHECK_EQ_U64(o->holds, 3);
	CHECK_EQ_U64(o->hold_ns, 500 + 1000 + 200);
	CHECK_EQ_U64(o->hold_max_ns, 1000);
	CHECK_EQ_U64(o->held_ns, 1700);
	CHECK_EQ_U64(o->releases, 3);
	CHECK_EQ_U64(o->unmatched_releases, 0);
	CHECK_EQ_U64(o->first_ns, 1000);
	CHECK_EQ_U64(o->last_ns, 2900);
	CHECK_EQ_U64(o->site, 0x401000 + LP_SYNC_MUTEX_LOCK);
	CHECK_EQ_U64(o->nuses, 2);
	CHECK_EQ_U64(use(o, 10)->acquisitions, 2);
	CHECK_EQ_U64(use(o, 10)->hold_ns, 700);
	CHECK_EQ_U64(use(o, 11)->waits.total_ns, 300);
	CHECK_EQ_U64(use(o, 11)->ops, 3);
	t10 = thr(10);
	t11 = thr(11);
	CHECK_STR(t10->comm, "ten");
	CHECK_STR(t11->comm, "eleven");
	CHECK_EQ_U64(t10->waits[SYNCSTATS_MUTEX].n, 1);
	CHECK_EQ_U64(t10->waits[SYNCSTATS_MUTEX].total_ns, 500);
	CHECK_EQ_U64(t10->wait_ns, 500);
	CHECK_EQ_U64(t10->acquisitions, 2);
	CHECK_EQ_U64(t10->holds, 2);
	CHECK_EQ_U64(t11->wait_ns, 300);
	CHECK_EQ_U64(t11->hold_ns, 1000);
	/* the threads by total wait */
	CHECK_EQ_U64(res.nthreads, 2);
	CHECK_EQ_U64(st.threads[res.threads[0]].tid, 10);
	/* the wakers: the last release by another thread before each wait ended */
	CHECK_EQ_U64(nheard, 2);
	CHECK_EQ_U64(heard[0].tid, 11);
	CHECK_EQ_U64(heard[0].begin_ns, 1300);
	CHECK_EQ_U64(heard[0].end_ns, 1600);
	CHECK_EQ_U64(heard[0].waker_tid, 10);
	CHECK_EQ_U64(heard[0].waker_ns, 1500);
	CHECK_EQ_U64(heard[0].kind, SYNCSTATS_MUTEX);
	CHECK_EQ_U64(heard[0].func, 0x402000);
	CHECK_EQ_U64(heard[0].depth, 1);
	CHECK_EQ_U64(heard[1].func, 0);
	CHECK_EQ_U64(heard[1].tid, 10);
	CHECK_EQ_U64(heard[1].waker_tid, 11);
	CHECK_EQ_U64(heard[1].waker_ns, 2600);
	CHECK_EQ_U64(st.ntop, 2);
	CHECK_EQ_U64(st.top[0].end_ns - st.top[0].begin_ns, 500);
	CHECK_EQ_U64(st.late, 0);
	CHECK_EQ_U64(st.ops, 7);
	done();
}

/* p99 past 100 waits: from the histogram, a bucket's middle, never above
 * the longest wait. */
static void test_p99(void)
{
	const struct syncstats_object *a, *b;
	uint64_t ns = 1000;

	begin();
	thread(12, NULL, 0);
	/* 0x2000: 150 waits of 1000 ns, 50 of 4000: rank 198 is in 4000's
	 * bucket [3968, 4096), whose middle is above the max: 4000 */
	for (unsigned i = 0; i < 200; i++) {
		op(ns += 5000, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, 0x2000, i < 150 ? 1000 : 4000, 0);
		op(ns += 10, LP_SYNC_MUTEX_UNLOCK, 0, 0x2000, 0, 0);
	}
	/* 0x3000: 199 waits of 1000 ns, one of 9000: rank 198 is in 1000's
	 * bucket [992, 1024): 1008 */
	for (unsigned i = 0; i < 200; i++) {
		op(ns += 10000, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, 0x3000, i == 7 ? 9000 : 1000, 0);
		op(ns += 10, LP_SYNC_MUTEX_UNLOCK, 0, 0x3000, 0, 0);
	}
	flush();
	finish();
	a = object(0x2000, SYNCSTATS_MUTEX);
	b = object(0x3000, SYNCSTATS_MUTEX);
	CHECK_EQ_U64(a->waits.n, 200);
	CHECK_EQ_U64(a->waits.total_ns, 150 * 1000 + 50 * 4000);
	CHECK_EQ_U64(a->wait_p99_ns, 4000);
	CHECK_EQ_U64(b->waits.max_ns, 9000);
	CHECK_EQ_U64(b->wait_p99_ns, 1008);
	CHECK_EQ_U64(b->holds, 200);
	CHECK_EQ_U64(b->hold_ns, 2000);
	/* sorted by total wait: 0x2000 (350 us) before 0x3000 (208 us) */
	CHECK_EQ_U64(res.nlocks, 2);
	CHECK_EQ_U64(st.objects[res.locks[0]].addr, 0x2000);
	done();
}

/* A recursive mutex: only the outermost hold counts; a release by a
 * thread that did not hold it; a hold still open at the end; a timed
 * lock that timed out after waiting. */
static void test_recursive(void)
{
	const struct syncstats_object *o;

	begin();
	thread(20, NULL, 0);
	op(100, LP_SYNC_MUTEX_LOCK, 0, 0x4000, 0, 0);
	op(200, LP_SYNC_MUTEX_LOCK, 0, 0x4000, 0, 0);
	op(300, LP_SYNC_MUTEX_UNLOCK, 0, 0x4000, 0, 0);
	op(400, LP_SYNC_MUTEX_UNLOCK, 0, 0x4000, 0, 0);
	op(500, LP_SYNC_MUTEX_LOCK, 0, 0x4000, 0, 0);
	flush();
	thread(21, NULL, 0);
	op(450, LP_SYNC_MUTEX_UNLOCK, 0, 0x4000, 0, 0);
	op(900, LP_SYNC_MUTEX_LOCK, LP_SYNC_TIMED | LP_SYNC_FAILED | LP_SYNC_TIMEDOUT, 0x4000, 350, 0);
	flush();
	finish();
	o = object(0x4000, SYNCSTATS_MUTEX);
	CHECK_EQ_U64(o->acquisitions, 3);
	CHECK_EQ_U64(o->holds, 1);
	CHECK_EQ_U64(o->hold_ns, 300);
	CHECK_EQ_U64(o->hold_max_ns, 300);
	CHECK_EQ_U64(o->releases, 3);
	CHECK_EQ_U64(o->unmatched_releases, 1);
	CHECK_EQ_U64(o->held_at_end, 1);
	CHECK_EQ_U64(o->failures, 1);
	CHECK_EQ_U64(o->contended, 0);
	CHECK_EQ_U64(o->waits.n, 1);
	CHECK_EQ_U64(o->waits.total_ns, 350);
	CHECK_EQ_U64(thr(20)->holds, 1);
	CHECK_EQ_U64(thr(21)->waits[SYNCSTATS_MUTEX].total_ns, 350);
	/* a wait that timed out has no waker */
	CHECK_EQ_U64(nheard, 1);
	CHECK_EQ_U64(heard[0].waker_tid, 0);
	done();
}

/* rwlock: readers at once are held once in held_ns; a writer waits for them. */
static void test_rwlock(void)
{
	const struct syncstats_object *o;

	begin();
	thread(30, NULL, 0);
	op(1000, LP_SYNC_RD_LOCK, 0, 0x5000, 0, 0);
	op(1500, LP_SYNC_RW_UNLOCK, 0, 0x5000, 0, 0);
	flush();
	thread(31, NULL, 0);
	op(1200, LP_SYNC_RD_LOCK, 0, 0x5000, 0, 0);
	op(2000, LP_SYNC_RW_UNLOCK, 0, 0x5000, 0, 0);
	flush();
	thread(32, NULL, 0);
	op(2100, LP_SYNC_WR_LOCK, LP_SYNC_CONTENDED, 0x5000, 900, 0);
	op(2300, LP_SYNC_RW_UNLOCK, 0, 0x5000, 0, 0);
	flush();
	finish();
	o = object(0x5000, SYNCSTATS_RWLOCK);
	CHECK_EQ_U64(o->acquisitions, 3);
	CHECK_EQ_U64(o->rd_acquisitions, 2);
	CHECK_EQ_U64(o->contended, 1);
	CHECK_EQ_U64(o->holds, 3);
	CHECK_EQ_U64(o->hold_ns, 500 + 800 + 200);
	CHECK_EQ_U64(o->held_ns, 1000 + 200);
	CHECK_EQ_U64(o->first_ns, 1000);
	CHECK_EQ_U64(nheard, 1);
	CHECK_EQ_U64(heard[0].tid, 32);
	CHECK_EQ_U64(heard[0].waker_tid, 31);
	CHECK_EQ_U64(heard[0].waker_ns, 2000);
	done();
}

/* ------------------------------------------------------------ producer and consumer */

#define ITEMS 0x6000u
#define SLOTS 0x6100u

/* A bounded queue with two semaphores; the producer (40) takes 1000 ns per
 * item, the consumer (41) 100 ns: the consumer waits on ITEMS most of the
 * time, the producer waits once on SLOTS for 50 ns. */
static void write_queue(void)
{
	thread(40, "producer", 9000);
	for (unsigned k = 0; k < 4; k++) {
		op(10005 + 1000 * k + (k == 3 ? 95 : 0), LP_SYNC_SEM_WAIT, 0, SLOTS, k == 3 ? 50 : 0, 0);
		op(11000 + 1000 * k, LP_SYNC_SEM_POST, 0, ITEMS, 0, 0);
	}
	flush();
	thread(41, "consumer", 9000);
	for (unsigned k = 0; k < 4; k++) {
		uint64_t end = 11010 + 1000 * k, began = k ? 11120 + 1000 * (k - 1) : 10000;

		op(end, LP_SYNC_SEM_WAIT, 0, ITEMS, end - began, 0);
		op(end + 100, LP_SYNC_SEM_POST, 0, SLOTS, 0, 0);
	}
	flush();
}

static void test_queue(void)
{
	const struct syncstats_object *items, *slots;
	const struct syncstats_pair *p;
	char line[256];

	begin();
	write_queue();
	finish();
	items = object(ITEMS, SYNCSTATS_SEM);
	slots = object(SLOTS, SYNCSTATS_SEM);
	CHECK_EQ_U64(items->calls, 4);
	CHECK_EQ_U64(items->waits.n, 4);
	CHECK_EQ_U64(items->waits.total_ns, 1010 + 3 * 890);
	CHECK_EQ_U64(items->waits.max_ns, 1010);
	CHECK_EQ_U64(items->posts, 4);
	CHECK_EQ_U64(slots->calls, 4);
	CHECK_EQ_U64(slots->waits.n, 1);
	CHECK_EQ_U64(slots->waits.total_ns, 50);
	CHECK_EQ_U64(use(items, 41)->calls, 4);
	CHECK_EQ_U64(use(items, 40)->signals, 4);
	CHECK_EQ_U64(thr(41)->waits[SYNCSTATS_SEM].total_ns, 3680);
	/* of its life from its start (9000) to its last post (14110) */
	CHECK(thr(41)->wait_share == 3680.0 / 5110.0);
	CHECK_EQ_U64(thr(40)->posts, 4);
	/* the consumer's first wait ended by the producer's first post */
	CHECK_EQ_U64(heard[0].tid, 41);
	CHECK_EQ_U64(heard[0].waker_tid, 40);
	CHECK_EQ_U64(heard[0].waker_ns, 11000);
	CHECK_EQ_U64(res.npairs, 1);
	p = &res.pairs[0];
	CHECK_EQ_U64(p->nside[0], 1);
	CHECK_EQ_U64(st.threads[p->side[0][0]].tid, 40);
	CHECK_EQ_U64(st.threads[p->side[1][0]].tid, 41);
	CHECK_EQ_U64(p->nobjects, 2);
	CHECK_EQ_U64(p->wait_ns[0], 50);
	CHECK_EQ_U64(p->wait_ns[1], 3680);
	CHECK_EQ_U64(p->first_ns, 10000);
	CHECK_EQ_U64(p->last_ns, 14110);
	CHECK_EQ_U64(p->span_ns, 4110);
	CHECK(p->share[0] == 50.0 / 4110.0);
	CHECK(p->share[1] == 3680.0 / 4110.0);
	CHECK_EQ_U64(p->slow, 0);
	CHECK_STR(syncreport_pair_text(&st, p, line, sizeof(line)),
	          "producer side (tid 40) is slow: consumers wait 90% of the time, producers 1%");
	done();
}

/* The same with condition variables and their mutex: the consumer (43)
 * waits on NOT_EMPTY, which the producer (42) signals; the mutex is let go
 * of during the waits (its holds end when the wait begins). */
static void test_cond(void)
{
	const struct syncstats_object *ne, *mx;

	begin();
	thread(42, NULL, 0);
	/* waits for the mutex 43 holds until its condition wait lets go of it */
	op(1040, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, 0x7000, 30, 0);
	op(2010, LP_SYNC_COND_SIGNAL, 0, 0x7100, 0, 0);
	op(2020, LP_SYNC_MUTEX_UNLOCK, 0, 0x7000, 0, 0);
	flush();
	thread(43, NULL, 0);
	op(1000, LP_SYNC_MUTEX_LOCK, 0, 0x7000, 0, 0);
	op(2030, LP_SYNC_COND_WAIT, 0, 0x7100, 1000, 0x7000); /* from 1030 */
	op(2100, LP_SYNC_MUTEX_UNLOCK, 0, 0x7000, 0, 0);
	op(3000, LP_SYNC_MUTEX_LOCK, 0, 0x7000, 0, 0);
	op(4000, LP_SYNC_COND_WAIT, LP_SYNC_TIMED | LP_SYNC_TIMEDOUT, 0x7100, 900, 0x7000); /* from 3100 */
	op(4050, LP_SYNC_MUTEX_UNLOCK, 0, 0x7000, 0, 0);
	flush();
	finish();
	ne = object(0x7100, SYNCSTATS_COND);
	mx = object(0x7000, SYNCSTATS_MUTEX);
	CHECK_EQ_U64(ne->calls, 2);
	CHECK_EQ_U64(ne->waits.n, 2);
	CHECK_EQ_U64(ne->waits.total_ns, 1900);
	CHECK_EQ_U64(ne->timeouts, 1);
	CHECK_EQ_U64(ne->signals, 1);
	/* holds of 0x7000 by 43: 1000-1030, 2030-2100, 3000-3100, 4000-4050;
	 * by 42: 1040-2020 */
	CHECK_EQ_U64(mx->holds, 5);
	CHECK_EQ_U64(mx->hold_ns, 30 + 70 + 100 + 50 + 980);
	CHECK_EQ_U64(mx->held_ns, 1230);
	CHECK_EQ_U64(mx->acquisitions, 3);
	CHECK_EQ_U64(mx->contended, 1);
	CHECK_EQ_U64(use(mx, 43)->holds, 4);
	CHECK_EQ_U64(thr(43)->waits[SYNCSTATS_COND].total_ns, 1900);
	CHECK_EQ_U64(thr(43)->ops, 6);
	CHECK_EQ_U64(st.ops, 9);
	CHECK_EQ_U64(nheard, 3);
	/* 42's lock: ended by 43's condition wait letting go of the mutex */
	CHECK_EQ_U64(heard[0].tid, 42);
	CHECK_EQ_U64(heard[0].waker_tid, 43);
	CHECK_EQ_U64(heard[0].waker_ns, 1030);
	CHECK_EQ_U64(heard[1].waker_tid, 42);
	CHECK_EQ_U64(heard[1].waker_ns, 2010);
	CHECK_EQ_U64(heard[1].obj2, 0x7000);
	CHECK_EQ_U64(heard[2].waker_tid, 0); /* timed out */
	/* one direction only: the signaller is the producer */
	CHECK_EQ_U64(res.npairs, 1);
	CHECK_EQ_U64(st.threads[res.pairs[0].side[0][0]].tid, 42);
	CHECK_EQ_U64(res.pairs[0].wait_ns[1], 1900);
	CHECK_EQ_U64(res.pairs[0].span_ns, 4000 - 1030);
	done();
}

/* ------------------------------------------------------------ barrier, semaphore, joins */

static void test_barrier(void)
{
	static const uint64_t arrive[2][3] = { { 1000, 1500, 3000 }, { 4000, 4200, 6000 } };
	static const uint64_t leave[2] = { 3010, 6010 };
	const struct syncstats_object *b;

	begin();
	for (unsigned t = 0; t < 3; t++) {
		thread(50 + t, NULL, 0);
		for (unsigned r = 0; r < 2; r++)
			op(leave[r], LP_SYNC_BARRIER_WAIT, t == 2 ? LP_SYNC_SERIAL : 0, 0x8000, leave[r] - arrive[r][t],
			   0);
		flush();
	}
	finish();
	CHECK_EQ_U64(res.nbarriers, 1);
	b = object(0x8000, SYNCSTATS_BARRIER);
	CHECK_EQ_U64(b->calls, 6);
	CHECK_EQ_U64(b->waits.n, 6);
	CHECK_EQ_U64(b->waits.total_ns, 2010 + 1510 + 10 + 2010 + 1810 + 10);
	CHECK_EQ_U64(b->waits.max_ns, 2010);
	CHECK_EQ_U64(use(b, 50)->waits.total_ns, 4020);
	CHECK_EQ_U64(use(b, 51)->waits.total_ns, 3320);
	CHECK_EQ_U64(use(b, 52)->waits.total_ns, 20);
	CHECK_EQ_U64(use(b, 52)->calls, 2);
	CHECK_EQ_U64(thr(50)->waits[SYNCSTATS_BARRIER].n, 2);
	CHECK_EQ_U64(res.npairs, 0);
	done();
}

static void test_sem_join(void)
{
	const struct syncstats_object *s;

	begin();
	thread(61, "child", 100);
	op(100, LP_SYNC_THREAD, 0, 0xaaa0, 0, 0);
	op(1000, LP_SYNC_SEM_WAIT, 0, 0x9000, 800, 0);
	op(1100, LP_SYNC_SEM_WAIT, LP_SYNC_TRY | LP_SYNC_FAILED, 0x9000, 0, 0);
	op(1200, LP_SYNC_SEM_WAIT, LP_SYNC_TIMED | LP_SYNC_FAILED | LP_SYNC_TIMEDOUT, 0x9000, 100, 0);
	op(1300, LP_SYNC_SEM_POST, 0, 0x9000, 0, 0); /* 3 waits of 4: still on the waiting side */
	op(1400, LP_SYNC_SEM_WAIT, 0, 0x9100, 10, 0);
	op(1500, LP_SYNC_SEM_POST, 0, 0x9100, 0, 0); /* as much one as the other: 0x9100 is no queue */
	encoder_task(enc, 4990, LP_TASK_END, 0, NULL, 0, NULL, 0);
	flush();
	thread(60, "main", 50);
	op(60, LP_SYNC_THREAD, 0, 0xbbb0, 0, 0);
	op(110, LP_SYNC_CREATE, 0, 0xaaa0, 0, 0);
	op(900, LP_SYNC_SEM_POST, 0, 0x9000, 0, 0);
	op(5000, LP_SYNC_JOIN, 0, 0xaaa0, 4000, 0);
	op(5100, LP_SYNC_JOIN, LP_SYNC_FAILED, 0xccc0, 0, 0);
	flush();
	finish();
	s = object(0x9000, SYNCSTATS_SEM);
	CHECK_EQ_U64(s->calls, 3);
	CHECK_EQ_U64(s->try_failures, 1);
	CHECK_EQ_U64(s->timeouts, 1);
	CHECK_EQ_U64(s->posts, 2);
	CHECK_EQ_U64(s->waits.n, 2);
	CHECK_EQ_U64(s->waits.total_ns, 900);
	CHECK_EQ_U64(thr(61)->pthread, 0xaaa0);
	CHECK_EQ_U64(thr(60)->creates, 1);
	CHECK_EQ_U64(st.njoins, 2);
	CHECK_EQ_U64(st.threads[st.joins[0].thread].tid, 60);
	CHECK_EQ_U64(st.joins[0].joined ? st.threads[st.joins[0].joined - 1].tid : 0, 61);
	CHECK_EQ_U64(st.joins[0].wait_ns, 4000);
	CHECK_EQ_U64(st.joins[1].joined, 0);
	CHECK(st.joins[1].failed);
	CHECK_EQ_U64(thr(60)->waits[SYNCSTATS_JOIN].total_ns, 4000);
	/* the sem wait ended by 60's post; the join by 61's end */
	CHECK_EQ_U64(nheard, 4);
	CHECK_EQ_U64(heard[0].tid, 61);
	CHECK_EQ_U64(heard[0].waker_tid, 60);
	CHECK_EQ_U64(heard[1].waker_tid, 0);
	CHECK_EQ_U64(heard[3].kind, SYNCSTATS_JOIN);
	CHECK_EQ_U64(heard[3].waker_tid, 61);
	CHECK_EQ_U64(heard[3].waker_ns, 4990);
	CHECK_EQ_U64(heard[3].object, UINT32_MAX);
	/* 60 posts 0x9000, 61 waits on it: a pair, whose consumers' wait is
	 * 61's (900 ns) */
	CHECK_EQ_U64(res.npairs, 1);
	CHECK_EQ_U64(res.pairs[0].nobjects, 1);
	CHECK_EQ_U64(st.threads[res.pairs[0].side[0][0]].tid, 60);
	CHECK_EQ_U64(res.pairs[0].wait_ns[1], 900);
	{
		struct syncstats_pair even = res.pairs[0];
		char line[256];

		/* the texts of the other two verdicts */
		even.slow = -1;
		even.wait_ns[0] = even.wait_ns[1] = 0;
		even.share[0] = even.share[1] = 0;
		CHECK_STR(syncreport_pair_text(&st, &even, line, sizeof(line)), "neither side waits for the other");
		even.slow = 1;
		even.wait_ns[0] = 300;
		even.share[0] = 0.5;
		CHECK_STR(syncreport_pair_text(&st, &even, line, sizeof(line)),
		          "consumer side (tid 61) is slow: producers wait 50% of the time, consumers 0%");
	}
	/* the wait began (200) before the post first seen (900): its site */
	CHECK_EQ_U64(s->site, 0x401000 + LP_SYNC_SEM_WAIT);
	done();
}

/* ------------------------------------------------------------ futex waits of other code */

static void futex(uint64_t enter, uint64_t exit, uint64_t uaddr, unsigned cmd, int64_t ret)
{
	uint64_t args[6] = { uaddr, cmd, 1, 0, 0, 0 };
	int nr = sys_lookup(SYS_ARCH_X86_64, "futex");

	encoder_syscall_enter(enc, enter, SYS_ARCH_X86_64, (uint32_t)nr, 0, args, 6, NULL, 0, NULL, 0);
	encoder_syscall_exit(enc, exit, SYS_ARCH_X86_64, (uint32_t)nr, ret);
}

static void test_futex(void)
{
	const struct syncstats_object *f;

	begin();
	thread(70, NULL, 0);
	futex(1000, 3000, 0xf000, 128 /* FUTEX_WAIT_PRIVATE */, 0);
	futex(4100, 5900, 0x1100, 0 /* FUTEX_WAIT */, 0); /* inside the lock's wait: not counted */
	op(6000, LP_SYNC_MUTEX_LOCK, LP_SYNC_CONTENDED, 0x1100, 2000, 0);
	op(6100, LP_SYNC_MUTEX_UNLOCK, 0, 0x1100, 0, 0);
	futex(7000, 8000, 0xf000, 9 /* FUTEX_WAIT_BITSET */, -ETIMEDOUT); /* placed at the stream's end */
	flush();
	thread(71, NULL, 0);
	futex(2900, 2950, 0xf000, 129 /* FUTEX_WAKE_PRIVATE */, 1);
	futex(6050, 6060, 0x1100, 1 /* FUTEX_WAKE */, 0); /* only wakes: not listed */
	flush();
	finish();
	CHECK_EQ_U64(st.futex_waits, 2);
	CHECK_EQ_U64(st.futex_waits_inside, 1);
	CHECK_EQ_U64(res.nfutexes, 1);
	f = &st.objects[res.futexes[0]];
	CHECK_EQ_U64(f->addr, 0xf000);
	CHECK_EQ_U64(f->calls, 2);
	CHECK_EQ_U64(f->waits.n, 2);
	CHECK_EQ_U64(f->waits.total_ns, 3000);
	CHECK_EQ_U64(f->waits.max_ns, 2000);
	CHECK_EQ_U64(f->timeouts, 1);
	CHECK_EQ_U64(f->signals, 1);
	CHECK_EQ_U64(use(f, 71)->signals, 1);
	CHECK_EQ_U64(thr(70)->waits[SYNCSTATS_FUTEX].total_ns, 3000);
	CHECK_EQ_U64(thr(70)->waits[SYNCSTATS_MUTEX].total_ns, 2000);
	CHECK_EQ_U64(thr(70)->wait_ns, 5000);
	done();
}

/* ------------------------------------------------------------ any sequence */

/* Operations at random (every kind, any flags, releases without
 * acquisitions, chunks of several threads overlapping in time): the sums
 * agree and nothing goes past its bounds. */
static void test_random(void)
{
	uint64_t rng = 88172645463325252ull, ns[8] = { 0 }, sum;

	begin();
	for (unsigned chunk = 0; chunk < 64; chunk++) {
		uint32_t tid = 90 + chunk % 8;

		thread(tid, NULL, 0);
		for (unsigned i = 0; i < 300; i++) {
			uint64_t r, obj;
			uint8_t o;

			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			r = rng;
			o = (uint8_t)(LP_SYNC_THREAD + r % (LP_SYNC_OPS - LP_SYNC_THREAD));
			obj = 0x10000 + (r >> 8) % 40 * 64;
			ns[tid - 90] += 1 + (r >> 20) % 500;
			op(ns[tid - 90], o, (uint32_t)(r >> 32) & 0x3f, obj, (r >> 40) % 3 ? 0 : (r >> 44) % 400,
			   o == LP_SYNC_COND_WAIT ? obj + 64 : 0);
			if (r % 7 == 0)
				futex(ns[tid - 90] + 1, ns[tid - 90] + 2 + r % 50, obj, (r >> 5) % 12, 0);
			ns[tid - 90] += 60;
		}
		flush();
	}
	finish();
	/* locks taken and never released pile up past SYNCSTATS_HELD_MAX: counted */
	CHECK_EQ_U64(st.over.objects + st.over.threads + st.over.uses, 0);
	CHECK(st.over.held > 0);
	for (uint32_t i = 0; i < st.nobjects; i++) {
		const struct syncstats_object *o = &st.objects[i];
		uint64_t acq = 0, waits = 0;

		for (uint32_t k = 0; k < o->nuses; k++) {
			acq += st.uses[o->first_use + k].acquisitions;
			waits += st.uses[o->first_use + k].waits.total_ns;
		}
		CHECK_EQ_U64(acq, o->acquisitions);
		CHECK_EQ_U64(waits, o->waits.total_ns);
		CHECK(o->wait_p99_ns <= o->waits.max_ns);
		CHECK(o->hold_max_ns <= o->hold_ns);
	}
	for (uint32_t i = 0; i < st.nthreads; i++) {
		sum = 0;
		for (unsigned k = 0; k < SYNCSTATS_KINDS; k++)
			sum += st.threads[i].waits[k].total_ns;
		CHECK_EQ_U64(sum, st.threads[i].wait_ns);
	}
	CHECK_EQ_U64(res.nthreads, 8);
	done();
}

/* ------------------------------------------------------------ through a trace directory */

static char root[] = "/tmp/test_syncstats.XXXXXX";

/* Locks in this program's data, which the report names by symbol: a
 * global one and one inside a static struct. */
pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t pad[8];
	pthread_mutex_t lock;
} report_stats;

/* The MAP events of this program's executable segments, as the runtime
 * writes them (the program: the first object dl_iterate_phdr names). */
static int map_self(struct dl_phdr_info *info, size_t size, void *data)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	(void)size;
	(void)data;
	if (n <= 0)
		die("readlink");
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			encoder_map(enc, 550, info->dlpi_addr, start, start + ph->p_memsz, ph->p_offset, NULL, 0, path,
			            (size_t)n);
	}
	return 1;
}

static void trace_write(const char *name, bool with_sync)
{
	static const char meta[] = "layerprof=test\nclock=monotonic\ncommand=synthetic\nsync=preload\n";
	static const char end[] = "events=0\nlost=0\nstreams=0\n";
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	const uint8_t *payload;
	char path[512];
	size_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (mkdir(path, 0700))
		die("mkdir");
	snprintf(path, sizeof(path), "%s/%s/%s", root, name, LP_TRACE_DATA);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		die("open");
	trace_header_put(hdr);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    chunk_write_fd(fd, LP_CHUNK_META, meta, sizeof(meta) - 1))
		die("write");
	if (with_sync) {
		uint64_t ips[1] = { 0x401234 };
		struct memevent m = { .op = LP_MEM_MALLOC, .ptr = 0x9000, .size = 64, .stack = 1 };
		struct memevent fr = { .op = LP_MEM_FREE, .ptr = 0x9000 };

		/* the lock lives at +0x10 in a block the main thread allocated;
		 * another thread frees it after the lock's uses, in a chunk that
		 * begins before them (the report must name the lock by the heap as
		 * it was at its first use, not as it is at the end) */
		trace_fd = fd;
		thread(80, "main", 500);
		dl_iterate_phdr(map_self, NULL);
		encoder_stack(enc, 600, 1, ips, 1);
		encoder_mem(enc, 600, &m);
		flush();
		thread(81, "freer", 550);
		encoder_mem(enc, 30000, &fr);
		flush();
		write_queue();
		trace_fd = -1;
		thread(80, NULL, 0);
		op(20000, LP_SYNC_MUTEX_LOCK, 0, 0x9010, 0, 0);
		op(20100, LP_SYNC_MUTEX_UNLOCK, 0, 0x9010, 0, 0);
		op(20200, LP_SYNC_MUTEX_LOCK, 0, (uintptr_t)&report_lock, 0, 0);
		op(20300, LP_SYNC_MUTEX_UNLOCK, 0, (uintptr_t)&report_lock, 0, 0);
		op(20400, LP_SYNC_MUTEX_LOCK, 0, (uintptr_t)&report_stats.lock, 0, 0);
		op(20500, LP_SYNC_MUTEX_UNLOCK, 0, (uintptr_t)&report_stats.lock, 0, 0);
	} else {
		thread(80, "main", 500);
		encoder_task(enc, 900, LP_TASK_END, 0, NULL, 0, NULL, 0);
	}
	len = encoder_take(enc, &payload);
	if (chunk_write_fd(fd, LP_CHUNK_EVENTS, payload, (uint32_t)len) ||
	    chunk_write_fd(fd, LP_CHUNK_END, end, sizeof(end) - 1))
		die("chunk_write_fd");
	close(fd);
}

static char *report(const char *name, enum export_report_format fmt, int *ret)
{
	struct syncreport_opts o = { .fmt = fmt };
	char dir[512], err[256], *buf = NULL;
	size_t size = 0;
	struct walk tw;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	if (walk_open(&tw, dir, NULL, err, sizeof(err)))
		die(err);
	f = open_memstream(&buf, &size);
	if (!f)
		die("open_memstream");
	*ret = syncreport_write(&tw, &o, f);
	fclose(f);
	walk_release(&tw);
	return buf;
}

static void test_report(void)
{
	char *text, *json, *xml;
	int r;

	if (!mkdtemp(root))
		die("mkdtemp");
	trace_write("queue", true);
	trace_write("nosync", false);
	text = report("queue", EXPORT_REPORT_TEXT, &r);
	CHECK_EQ_U64(r, 0);
	CHECK(strstr(text, "producer side (tid 40) is slow: consumers wait 90% of the time, producers 1%") != NULL);
	CHECK(strstr(text, "heap block from ") != NULL);
	CHECK(strstr(text, " report_lock ") != NULL || strstr(text, " report_lock\n") != NULL);
	CHECK(strstr(text, "report_stats+0x40") != NULL);
	CHECK(strstr(text, "# locks") != NULL);
	json = report("queue", EXPORT_REPORT_JSON, &r);
	CHECK_EQ_U64(r, 0);
	CHECK(strstr(json, "\"slow\":\"producer\"") != NULL || strstr(json, "\"slow\": \"producer\"") != NULL);
	CHECK(strstr(json, "+0x10") != NULL);
	CHECK(strstr(json, "\"report_lock\"") != NULL);
	CHECK(strstr(json, "\"report_stats+0x40\"") != NULL);
	xml = report("queue", EXPORT_REPORT_XML, &r);
	CHECK_EQ_U64(r, 0);
	CHECK(strstr(xml, "<sync ") != NULL);
	CHECK(strstr(xml, "slow=\"producer\"") != NULL);
	CHECK(strstr(xml, "name=\"report_lock\"") != NULL);
	CHECK(strstr(xml, "name=\"report_stats+0x40\"") != NULL);
	if (check_failed)
		printf("--- text\n%s--- json\n%s--- xml\n%s", text, json, xml);
	free(text);
	free(json);
	free(xml);
	text = report("nosync", EXPORT_REPORT_TEXT, &r);
	CHECK_EQ_U64(r, (uint64_t)-ENODATA);
	CHECK(!text || !text[0]);
	free(text);
	free(report("nosync", EXPORT_REPORT_HTML, &r));
	CHECK_EQ_U64(r, (uint64_t)-EINVAL);
}

/* LP_TEST_KEEP=1 keeps the traces (for running layerprof on them). */
static void cleanup(void)
{
	char cmd[600];

	if (getenv("LP_TEST_KEEP")) {
		printf("traces kept in %s\n", root);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		printf("cannot remove %s\n", root);
}

int main(void)
{
	enc = malloc(sizeof(*enc));
	if (!enc)
		die("malloc");
	test_mutex();
	test_p99();
	test_recursive();
	test_rwlock();
	test_queue();
	test_cond();
	test_barrier();
	test_sem_join();
	test_futex();
	test_random();
	test_report();
	cleanup();
	free(enc);
	return check_summary();
}
