/* The time group: each clock's read, the time of day, sleeps by their
 * requested length (the wake-up included: from the call to its return),
 * timers and the C library's calendar functions. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "oscal/suite.h"

/* a quick run takes 0, 1000, 10000 and 100000 */
static const long xs_sleep[] = { 0, 1000, 5000, 10000, 50000, 100000 };
static const long xs_timer[] = { 1000, 2000, 5000, 10000, 20000, 50000, 100000 };

#define T0 uint64_t t0_ = suite_now()
#define T1 (*ns = suite_now() - t0_)

static int read_clock(struct suite_ctx *c, uint64_t *ns, clockid_t id, const char *what)
{
	struct timespec ts;
	int r;
	T0;
	r = clock_gettime(id, &ts);
	T1;
	if (r < 0) {
		c->why = "this clock is not available here";
		return suite_err(c, what);
	}
	return 0;
}

#define CLOCK_ONE(fn, id)                                               \
	static int fn(struct suite_ctx *c, uint64_t *ns)                \
	{                                                               \
		return read_clock(c, ns, id, "clock_gettime(" #id ")"); \
	}

CLOCK_ONE(one_monotonic, CLOCK_MONOTONIC)
CLOCK_ONE(one_realtime, CLOCK_REALTIME)
CLOCK_ONE(one_monotonic_raw, CLOCK_MONOTONIC_RAW)
CLOCK_ONE(one_monotonic_coarse, CLOCK_MONOTONIC_COARSE)
CLOCK_ONE(one_realtime_coarse, CLOCK_REALTIME_COARSE)
CLOCK_ONE(one_boottime, CLOCK_BOOTTIME)
CLOCK_ONE(one_process, CLOCK_PROCESS_CPUTIME_ID)
CLOCK_ONE(one_thread, CLOCK_THREAD_CPUTIME_ID)

static int one_clock_getres(struct suite_ctx *c, uint64_t *ns)
{
	struct timespec ts;
	int r;
	T0;
	r = clock_getres(CLOCK_MONOTONIC, &ts);
	T1;
	return r < 0 ? suite_err(c, "clock_getres") : 0;
}

static int one_gettimeofday(struct suite_ctx *c, uint64_t *ns)
{
	struct timeval tv;
	int r;
	T0;
	r = gettimeofday(&tv, NULL);
	T1;
	return r < 0 ? suite_err(c, "gettimeofday") : 0;
}

static time_t (*volatile p_time)(time_t *) = time;

static int one_time(struct suite_ctx *c, uint64_t *ns)
{
	time_t r;
	T0;
	r = p_time(NULL);
	T1;
	return r == (time_t)-1 ? suite_err(c, "time") : 0;
}

static struct timespec ns_to_ts(long v)
{
	struct timespec ts = { v / 1000000000L, v % 1000000000L };
	return ts;
}

static int one_nanosleep(struct suite_ctx *c, uint64_t *ns)
{
	struct timespec ts = ns_to_ts(c->x);
	int r;
	T0;
	r = nanosleep(&ts, NULL);
	T1;
	return r < 0 ? suite_err(c, "nanosleep") : 0;
}

static int one_clock_nanosleep(struct suite_ctx *c, uint64_t *ns)
{
	struct timespec ts = ns_to_ts(c->x);
	int r;
	T0;
	r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	T1;
	if (r) {
		errno = r;
		return suite_err(c, "clock_nanosleep(CLOCK_MONOTONIC)");
	}
	return 0;
}

static int one_usleep(struct suite_ctx *c, uint64_t *ns)
{
	int r;
	T0;
	r = usleep((useconds_t)(c->x / 1000));
	T1;
	return r < 0 ? suite_err(c, "usleep") : 0;
}

/* ------------------------------------------------------------ timers */

static int setup_timerfd(struct suite_ctx *c)
{
	c->fd[0] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	return c->fd[0] < 0 ? suite_err(c, "timerfd_create") : 0;
}

static void done_fds(struct suite_ctx *c)
{
	suite_close_fds(c);
}

/* From arming the timer x ns ahead to read's return in this thread. */
static int one_timerfd_wake(struct suite_ctx *c, uint64_t *ns)
{
	struct itimerspec its = { { 0, 0 }, ns_to_ts(c->x) };
	uint64_t ticks;
	ssize_t n;
	T0;
	if (timerfd_settime(c->fd[0], 0, &its, NULL) < 0)
		return suite_err(c, "timerfd_settime");
	n = read(c->fd[0], &ticks, sizeof(ticks));
	T1;
	return n == (ssize_t)sizeof(ticks) ? 0 : suite_err(c, "read of the timerfd");
}

static int one_timerfd_settime(struct suite_ctx *c, uint64_t *ns)
{
	struct itimerspec its = { { 0, 0 }, { 1, 0 } }, off = { { 0, 0 }, { 0, 0 } };
	int r;
	T0;
	r = timerfd_settime(c->fd[0], 0, &its, NULL);
	T1;
	if (r < 0)
		return suite_err(c, "timerfd_settime");
	return timerfd_settime(c->fd[0], 0, &off, NULL) < 0 ? suite_err(c, "timerfd_settime (disarm)") : 0;
}

static int one_timer_create(struct suite_ctx *c, uint64_t *ns)
{
	struct sigevent ev = { 0 };
	timer_t t;
	int r;
	ev.sigev_notify = SIGEV_NONE;
	T0;
	r = timer_create(CLOCK_MONOTONIC, &ev, &t);
	T1;
	if (r < 0)
		return suite_err(c, "timer_create");
	timer_delete(t);
	return 0;
}

static int one_timer_settime(struct suite_ctx *c, uint64_t *ns)
{
	struct sigevent ev = { 0 };
	struct itimerspec its = { { 0, 0 }, { 1, 0 } };
	timer_t t;
	int r;
	ev.sigev_notify = SIGEV_NONE;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) < 0)
		return suite_err(c, "timer_create");
	T0;
	r = timer_settime(t, 0, &its, NULL);
	T1;
	timer_delete(t);
	return r < 0 ? suite_err(c, "timer_settime") : 0;
}

/* ------------------------------------------------------------ the calendar */

static struct tm *(*volatile p_localtime_r)(const time_t *, struct tm *) = localtime_r;
static struct tm *(*volatile p_gmtime_r)(const time_t *, struct tm *) = gmtime_r;
static time_t (*volatile p_mktime)(struct tm *) = mktime;
static size_t (*volatile p_strftime)(char *, size_t, const char *, const struct tm *) = strftime;

static int one_localtime_r(struct suite_ctx *c, uint64_t *ns)
{
	time_t t = 1700000000;
	struct tm tm, *r;
	T0;
	r = p_localtime_r(&t, &tm);
	T1;
	return r ? 0 : suite_err(c, "localtime_r");
}

static int one_gmtime_r(struct suite_ctx *c, uint64_t *ns)
{
	time_t t = 1700000000;
	struct tm tm, *r;
	T0;
	r = p_gmtime_r(&t, &tm);
	T1;
	return r ? 0 : suite_err(c, "gmtime_r");
}

static int one_mktime(struct suite_ctx *c, uint64_t *ns)
{
	struct tm tm = { 0 };
	time_t r;
	tm.tm_year = 123;
	tm.tm_mon = 10;
	tm.tm_mday = 14;
	tm.tm_hour = 12;
	tm.tm_isdst = -1;
	T0;
	r = p_mktime(&tm);
	T1;
	return r == (time_t)-1 ? suite_err(c, "mktime") : 0;
}

static int one_strftime(struct suite_ctx *c, uint64_t *ns)
{
	time_t t = 1700000000;
	struct tm tm;
	size_t n;
	gmtime_r(&t, &tm);
	T0;
	n = p_strftime((char *)c->buf2, 128, "%Y-%m-%dT%H:%M:%S", &tm);
	T1;
	c->what = "strftime";
	return n ? 0 : -EIO;
}

#define TM(name, call, cond, param, unit, xs, setup, one, done, desc)             \
	{                                                                         \
		name, call, cond, "time", param, unit, xs, setup, one, done, desc \
	}

const struct suite_def suite_time[] = {
	TM("clock_gettime-monotonic", "clock_gettime", "monotonic", "", "", SUITE_NOX, NULL, one_monotonic, NULL,
	   "clock_gettime(3) CLOCK_MONOTONIC (the suite's clock)"),
	TM("clock_gettime-realtime", "clock_gettime", "realtime", "", "", SUITE_NOX, NULL, one_realtime, NULL,
	   "clock_gettime(3) CLOCK_REALTIME"),
	TM("clock_gettime-monotonic_raw", "clock_gettime", "monotonic_raw", "", "", SUITE_NOX, NULL, one_monotonic_raw,
	   NULL, "clock_gettime(3) CLOCK_MONOTONIC_RAW"),
	TM("clock_gettime-monotonic_coarse", "clock_gettime", "monotonic_coarse", "", "", SUITE_NOX, NULL,
	   one_monotonic_coarse, NULL, "clock_gettime(3) CLOCK_MONOTONIC_COARSE"),
	TM("clock_gettime-realtime_coarse", "clock_gettime", "realtime_coarse", "", "", SUITE_NOX, NULL,
	   one_realtime_coarse, NULL, "clock_gettime(3) CLOCK_REALTIME_COARSE"),
	TM("clock_gettime-boottime", "clock_gettime", "boottime", "", "", SUITE_NOX, NULL, one_boottime, NULL,
	   "clock_gettime(3) CLOCK_BOOTTIME"),
	TM("clock_gettime-process", "clock_gettime", "process", "", "", SUITE_NOX, NULL, one_process, NULL,
	   "clock_gettime(3) CLOCK_PROCESS_CPUTIME_ID"),
	TM("clock_gettime-thread", "clock_gettime", "thread", "", "", SUITE_NOX, NULL, one_thread, NULL,
	   "clock_gettime(3) CLOCK_THREAD_CPUTIME_ID"),
	TM("clock_getres", "clock_getres", "", "", "", SUITE_NOX, NULL, one_clock_getres, NULL,
	   "clock_getres(3) CLOCK_MONOTONIC"),
	TM("gettimeofday", "gettimeofday", "", "", "", SUITE_NOX, NULL, one_gettimeofday, NULL, "gettimeofday(3)"),
	TM("time", "time", "", "", "", SUITE_NOX, NULL, one_time, NULL, "time(3)"),
	TM("nanosleep", "nanosleep", "", "ns", "ns", SUITE_XS(xs_sleep), NULL, one_nanosleep, NULL,
	   "nanosleep(2) of x ns requested, to its return (the wake-up and the timer slack included)"),
	TM("clock_nanosleep", "clock_nanosleep", "monotonic", "ns", "ns", SUITE_XS(xs_sleep), NULL, one_clock_nanosleep,
	   NULL, "clock_nanosleep(2) CLOCK_MONOTONIC relative, x ns requested, to its return"),
	TM("usleep", "usleep", "", "ns", "ns", SUITE_XS(xs_timer), NULL, one_usleep, NULL,
	   "usleep(3) of x ns requested (x / 1000 us), to its return"),
	TM("timerfd_settime", "timerfd_settime", "", "", "", SUITE_NOX, setup_timerfd, one_timerfd_settime, done_fds,
	   "timerfd_settime(2) arming a timer 1 s ahead (disarm not timed)"),
	TM("timerfd", "timerfd_settime", "wake", "ns", "ns", SUITE_XS(xs_timer), setup_timerfd, one_timerfd_wake,
	   done_fds, "a timerfd armed x ns ahead, from timerfd_settime to read's return (the wake-up latency)"),
	TM("timer_create", "timer_create", "", "", "", SUITE_NOX, NULL, one_timer_create, NULL,
	   "timer_create(2) of a CLOCK_MONOTONIC timer with no notification (timer_delete not timed)"),
	TM("timer_settime", "timer_settime", "", "", "", SUITE_NOX, NULL, one_timer_settime, NULL,
	   "timer_settime(2) arming a POSIX timer 1 s ahead"),
	TM("localtime_r", "localtime_r", "", "", "", SUITE_NOX, NULL, one_localtime_r, NULL,
	   "localtime_r(3) of a fixed time"),
	TM("gmtime_r", "gmtime_r", "", "", "", SUITE_NOX, NULL, one_gmtime_r, NULL, "gmtime_r(3) of a fixed time"),
	TM("mktime", "mktime", "", "", "", SUITE_NOX, NULL, one_mktime, NULL, "mktime(3) of a fixed local date"),
	TM("strftime", "strftime", "", "", "", SUITE_NOX, NULL, one_strftime, NULL,
	   "strftime(3) of an ISO 8601 date and time"),
};
const size_t suite_time_n = sizeof(suite_time) / sizeof(suite_time[0]);
