/* The meter: a source read on a thread of its own, one reading per
 * interval on a grid of absolute times, from power_meter_start to
 * power_meter_stop, and the energy over that span. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/lib/energy/powerimpl.h"

struct power_meter {
	struct power_source *ps;
	uint64_t interval_ns;
	pthread_t thread;
	bool running; /* the thread was started and not joined */
	/* under lock: the samples, the counts, stop */
	pthread_mutex_t lock;
	pthread_cond_t wake; /* on CLOCK_MONOTONIC: stop wakes the thread */
	bool stop;
	struct power_sample *samples;
	uint32_t n, cap;
	uint64_t failed, dropped;
	char first_err[256]; /* the first failed reading's message */
	/* the thread's own (read by stop once joined) */
	uint64_t t0_ns;
	uint64_t last_ok_ns; /* an energy counter's previous reading */
	bool have_ok;
	double joules; /* an energy counter's: each reading's mean power x its interval */
};

static uint64_t meter_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One reading, kept (called with lock not held: a command takes time). */
static void meter_take(struct power_meter *m)
{
	struct power_sample s;
	char err[sizeof(m->first_err)];
	int r = power_read(m->ps, &s, err, sizeof(err));

	pthread_mutex_lock(&m->lock);
	if (r < 0) {
		if (!m->failed++)
			snprintf(m->first_err, sizeof(m->first_err), "%s", err);
	} else if (r == 0) {
		/* an energy counter's reading is the mean power since the
		 * previous one: a rectangle of energy */
		if (m->ps->energy && m->have_ok)
			m->joules += s.watts * (double)(s.ns - m->last_ok_ns) * 1e-9;
		if (power_samples_push(&m->samples, &m->n, &m->cap, &m->dropped, &s) && !m->failed++)
			snprintf(m->first_err, sizeof(m->first_err), "out of memory");
	}
	if (r >= 0) {
		m->have_ok = true;
		m->last_ok_ns = s.ns;
	}
	pthread_mutex_unlock(&m->lock);
}

static void meter_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void *meter_main(void *arg)
{
	struct power_meter *m = arg;
	uint64_t next = m->t0_ns + m->interval_ns;

	for (;;) {
		struct timespec ts;
		uint64_t now;

		meter_timespec(next, &ts);
		pthread_mutex_lock(&m->lock);
		while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &ts) != ETIMEDOUT)
			;
		if (m->stop) {
			pthread_mutex_unlock(&m->lock);
			break;
		}
		pthread_mutex_unlock(&m->lock);
		meter_take(m);
		/* a reading that took longer than the interval: the next
		 * point of the grid still to come */
		now = meter_now_ns();
		next += m->interval_ns;
		if (next <= now)
			next += (now - next) / m->interval_ns * m->interval_ns + m->interval_ns;
	}
	return NULL;
}

struct power_meter *power_meter_start(struct power_source *ps, unsigned interval_ms, char *err, size_t errlen)
{
	struct power_meter *m = calloc(1, sizeof(*m));
	pthread_condattr_t ca;
	int r;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->ps = ps;
	m->interval_ns = (uint64_t)(interval_ms ? interval_ms : POWER_INTERVAL_MS_DEFAULT) * 1000000ull;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &ca);
	pthread_condattr_destroy(&ca);
	m->t0_ns = meter_now_ns();
	if (!power_can_read(ps))
		return m; /* a log: read at stop */
	meter_take(m);
	if (m->have_ok)
		m->t0_ns = m->last_ok_ns;
	r = pthread_create(&m->thread, NULL, meter_main, m);
	if (r) {
		snprintf(err, errlen, "cannot start the meter's thread: %s", strerror(r));
		power_meter_free(m);
		return NULL;
	}
	m->running = true;
	return m;
}

uint32_t power_meter_copy(struct power_meter *m, uint32_t from, struct power_sample *out, uint32_t max)
{
	uint32_t k = 0;

	pthread_mutex_lock(&m->lock);
	if (from < m->n) {
		k = m->n - from < max ? m->n - from : max;
		memcpy(out, m->samples + from, (size_t)k * sizeof(*out));
	}
	pthread_mutex_unlock(&m->lock);
	return k;
}

/* Ends the thread, if it runs. */
static void meter_join(struct power_meter *m)
{
	if (!m->running)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	m->running = false;
}

int power_meter_stop(struct power_meter *m, struct power_result *out, char *err, size_t errlen)
{
	uint64_t t1;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (m->running) {
		meter_join(m);
		meter_take(m); /* the span ends with it */
		t1 = m->have_ok ? m->last_ok_ns : meter_now_ns();
	} else {
		t1 = meter_now_ns();
	}
	if (!power_can_read(m->ps)) {
		uint64_t bad = 0;

		r = powerext_read_csv(m->ps, m->t0_ns, t1, &m->samples, &m->n, &m->cap, &m->dropped, &bad, err, errlen);
		m->failed += bad;
		if (r)
			return r;
	}
	out->t0_ns = m->t0_ns;
	out->t1_ns = t1 > m->t0_ns ? t1 : m->t0_ns;
	out->nsamples = m->n;
	out->failed = m->failed;
	out->dropped = m->dropped;
	out->samples = m->samples;
	if (!m->n) {
		if (!power_can_read(m->ps))
			snprintf(err, errlen, "meter log '%s' has no line between the start and the end of the run",
			         m->ps->csv);
		else if (m->failed)
			snprintf(err, errlen, "no reading of %s: %s", m->ps->name, m->first_err);
		else
			snprintf(err, errlen, "no reading of %s in a span of %.3f s", m->ps->name,
			         (double)(out->t1_ns - out->t0_ns) * 1e-9);
		return -ENODATA;
	}
	out->joules = m->ps->energy ? m->joules : power_integrate(m->samples, m->n, out->t0_ns, out->t1_ns);
	out->mean_watts = out->t1_ns > out->t0_ns ? out->joules / ((double)(out->t1_ns - out->t0_ns) * 1e-9) : 0;
	return 0;
}

const char *power_meter_first_error(const struct power_meter *m)
{
	return m->first_err;
}

void power_meter_free(struct power_meter *m)
{
	if (!m)
		return;
	meter_join(m);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m->samples);
	free(m);
}
