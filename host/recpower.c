/* record's power samples: the --power options, the meter over the
 * program's run, and its samples in the trace (LP_CHUNK_POWER). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/lib/energy/powertrace.h"
#include "host/lib/trace/file.h"
#include "host/recpower.h"
#include "layerprof/format.h"

static uint64_t recpower_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void recpower_option(struct recpower *rp, const char *arg)
{
	rp->on = true;
	rp->spec = arg && *arg ? arg : NULL;
}

int recpower_interval_option(struct recpower *rp, const char *arg, char *err, size_t errlen)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (end == arg || *end || errno || arg[0] == '-' || v < RECPOWER_INTERVAL_MIN || v > RECPOWER_INTERVAL_MAX) {
		snprintf(err, errlen, "invalid --power-interval '%s': expected milliseconds, %u to %u", arg,
		         RECPOWER_INTERVAL_MIN, RECPOWER_INTERVAL_MAX);
		return -EINVAL;
	}
	rp->interval_ms = (unsigned)v;
	rp->interval_set = true;
	return 0;
}

int recpower_options_done(const struct recpower *rp, char *err, size_t errlen)
{
	if (rp->interval_set && !rp->on) {
		snprintf(err, errlen, "--power-interval needs --power");
		return -EINVAL;
	}
	return 0;
}

int recpower_open(struct recpower *rp, char *err, size_t errlen)
{
	if (!rp->on)
		return 0;
	if (!rp->interval_ms)
		rp->interval_ms = POWER_INTERVAL_MS_DEFAULT;
	rp->ps = power_open(rp->spec ? rp->spec : "auto", err, errlen);
	if (!rp->ps)
		return -ENOENT;
	/* one line, its names split at commas: a name keeps none */
	snprintf(rp->sources, sizeof(rp->sources), "%s", power_name(rp->ps));
	for (char *p = rp->sources; *p; p++)
		if (*p == ',')
			*p = ';';
		else if (*p == '\n' || *p == '\r')
			*p = ' ';
	return 0;
}

const char *recpower_meta_sources(const struct recpower *rp)
{
	return rp->ps ? rp->sources : "";
}

int recpower_start(struct recpower *rp, char *err, size_t errlen)
{
	if (!rp->ps)
		return 0;
	rp->m = power_meter_start(rp->ps, rp->interval_ms, err, errlen);
	rp->last_flush_ns = recpower_now_ns();
	return rp->m ? 0 : -ENOMEM;
}

void recpower_set_pid(struct recpower *rp, pid_t pid)
{
	int p = (int)pid;

	if (rp->ps)
		power_source_set_pids(rp->ps, &p, 1);
}

/* Writes the samples from the written-th on, in chunks of at most
 * LP_POWER_CHUNK_SAMPLES: while sampling, from a copy the meter makes;
 * once stopped, from its result. */
static int recpower_write(struct recpower *rp, struct tracefile *tf)
{
	struct power_sample *s = malloc(LP_POWER_CHUNK_SAMPLES * sizeof(*s));
	uint8_t *buf = malloc(POWERTRACE_CHUNK_BYTES(LP_POWER_CHUNK_SAMPLES));
	int r = 0;

	if (!s || !buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		uint32_t n;
		size_t len;

		if (rp->stopped)
			n = rp->result.nsamples - rp->written < LP_POWER_CHUNK_SAMPLES
			        ? rp->result.nsamples - rp->written
			        : LP_POWER_CHUNK_SAMPLES;
		else
			n = power_meter_copy(rp->m, rp->written, s, LP_POWER_CHUNK_SAMPLES);
		if (!n)
			break;
		len = powertrace_encode(0, rp->stopped ? rp->result.samples + rp->written : s, n, buf);
		r = tracefile_write(tf, LP_CHUNK_POWER, buf, len, 0);
		if (r)
			break;
		rp->written += n;
		if (n < LP_POWER_CHUNK_SAMPLES)
			break;
	}
out:
	free(s);
	free(buf);
	return r < 0 ? r : 0;
}

int recpower_flush(struct recpower *rp, struct tracefile *tf, bool all)
{
	struct power_sample one;
	uint64_t now;

	if (!rp->m || rp->stopped)
		return 0;
	now = recpower_now_ns();
	/* a chunk's worth waiting, or time to write what there is */
	if (!all && now - rp->last_flush_ns < RECPOWER_FLUSH_NS &&
	    !power_meter_copy(rp->m, rp->written + LP_POWER_CHUNK_SAMPLES - 1, &one, 1))
		return 0;
	rp->last_flush_ns = now;
	return recpower_write(rp, tf);
}

int recpower_stop(struct recpower *rp, struct tracefile *tf, char *err, size_t errlen)
{
	int r;

	if (!rp->m || rp->stopped)
		return 0;
	r = power_meter_stop(rp->m, &rp->result, err, errlen);
	rp->stopped = true;
	if (r) {
		rp->stop_error = r;
		return r;
	}
	r = recpower_write(rp, tf);
	if (r)
		snprintf(err, errlen, "cannot write the power samples: %s", strerror(-r));
	return r;
}

void recpower_finish(struct recpower *rp, struct tracefile *tf, bool quiet, bool tty)
{
	char err[600];
	const struct power_result *res = &rp->result;

	if (!rp->m || rp->stopped)
		return;
	if (recpower_stop(rp, tf, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: warning: --power: %s\n", err);
		return;
	}
	if (res->failed)
		fprintf(stderr, "layerprof record: warning: --power: %llu readings of %s failed (the first: %s)\n",
		        (unsigned long long)res->failed, power_name(rp->ps), power_meter_first_error(rp->m));
	if (res->dropped)
		fprintf(stderr, "layerprof record: warning: --power: %llu samples over %u left out\n",
		        (unsigned long long)res->dropped, POWER_SAMPLES_MAX);
	if (tty && !quiet)
		fprintf(stderr, "layerprof record: power: %u samples of %s, %.3f J over %.3f s (%.3f W)\n", rp->written,
		        power_name(rp->ps), res->joules, (double)(res->t1_ns - res->t0_ns) * 1e-9, res->mean_watts);
}

const char *recpower_end(const struct recpower *rp, const char *end, size_t *len, char *buf, size_t size)
{
	int n;

	if (!rp->m)
		return end;
	n = snprintf(buf, size, "%.*spower.samples=%u\npower.failed=%llu\n", (int)*len, end, rp->written,
	             (unsigned long long)rp->result.failed);
	if (n < 0 || (size_t)n >= size)
		return end;
	*len = (size_t)n;
	return buf;
}

void recpower_release(struct recpower *rp)
{
	power_meter_free(rp->m);
	power_close(rp->ps);
	rp->m = NULL;
	rp->ps = NULL;
}
