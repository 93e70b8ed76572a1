/* layerprof estimate --calibrate-recorder: the recorder's cost per traced
 * call outside the call's measured interval, from a recording of the call
 * suite (estimate-recorder.h, docs/estimate.md). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/builtin.h"
#include "host/estimate-recorder.h"
#include "host/lib/oscal/estimate.h"
#include "host/lib/oscal/oscal.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"
#include "host/oscal.h"

/* The suite's entries timed, that the suite calls nowhere else but once
 * (getpid) at its start, so that its timed calls are the last reps of
 * that name in the trace: REC_SYS cheap system calls, each made through
 * the C library's PLT (the costs per system call), then, with --libcalls,
 * gettimeofday, through the PLT into the vDSO with no system call (the
 * cost per C library call). */
static const char *const rec_calls[] = { "getpid", "getppid", "getuid", "gettimeofday" };
#define REC_NCALLS (sizeof(rec_calls) / sizeof(rec_calls[0]))
#define REC_SYS 3u
#define REC_REPS_MAX 100000u
#define REC_FILE_MAX (1u << 20)

/* Durations of one call name, in trace order (or the suite's order). */
struct series {
	double *v;
	uint32_t n, cap;
};

static int series_add(struct series *s, double v)
{
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 256;
		double *nv;

		if (cap > 4 * REC_REPS_MAX)
			return -E2BIG;
		nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

struct rec_state {
	struct series samples[REC_NCALLS]; /* the suite's raw samples */
	struct series sys[REC_NCALLS];     /* the traced system calls' d */
	struct series lib[REC_NCALLS];     /* the traced NAME@plt calls' d */
	double clock_ns;                   /* the traced suite's own clock read pair */
	int error;
};

static int call_index(const char *name)
{
	for (unsigned i = 0; i < REC_NCALLS; i++)
		if (!strcmp(name, rec_calls[i]))
			return (int)i;
	return -1;
}

static void on_call(void *ctx, const struct estimate_call *c)
{
	struct rec_state *st = ctx;
	int i = call_index(c->call);

	if (i < 0 || c->fate == ESTIMATE_UNFINISHED || st->error)
		return;
	st->error = series_add(c->libcall ? &st->lib[i] : &st->sys[i], c->measured_ns);
}

/* Reads the suite's output: the clock line and the samples of rec_calls. */
static int read_suite(const char *path, struct rec_state *st, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[65536];
	bool clock = false;

	if (!f) {
		snprintf(err, errlen, "cannot read the suite's output '%.200s': %s", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p, *tok, *save = NULL;

		if (!strncmp(line, "clock ", 6) && (p = strstr(line, " overhead_ns="))) {
			st->clock_ns = strtod(p + 13, NULL);
			clock = true;
		} else if (!strncmp(line, "sample ", 7)) {
			int i;

			strtok_r(line, " \n", &save);
			tok = strtok_r(NULL, " \n", &save);
			i = tok ? call_index(tok) : -1;
			if (i < 0)
				continue;
			strtok_r(NULL, " \n", &save); /* x */
			while ((tok = strtok_r(NULL, " \n", &save)))
				if (series_add(&st->samples[i], strtod(tok, NULL))) {
					fclose(f);
					snprintf(err, errlen, "too many samples in '%.200s'", path);
					return -E2BIG;
				}
		}
	}
	fclose(f);
	if (!clock) {
		snprintf(err, errlen, "the suite's output '%.200s' has no clock line", path);
		return -EINVAL;
	}
	return 0;
}

/* Runs argv with stdout into out and stderr into errpath; returns its
 * wait status or -errno. */
static int run_to(char *const *argv, const char *out, const char *errpath)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (!pid) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return status;
}

static void put_series(struct json *j, const char *key, const double *v, uint32_t n)
{
	json_array_begin(j, key);
	for (uint32_t i = 0; i < n; i++)
		json_f64_exact(j, NULL, v[i]);
	json_array_end(j);
}

/* The recorder's costs outside the calls, one per timed call: o[k] for
 * k < reps, and the mean of those within the calibration's outlier rule
 * (oscal_outlier_limit) added to *sum, their count to *n. */
static void costs(const double *o, unsigned reps, double *limit, double *sum, uint64_t *n)
{
	*limit = oscal_outlier_limit(o, reps);
	for (unsigned k = 0; k < reps; k++) {
		if (o[k] > *limit)
			continue;
		*sum += o[k];
		(*n)++;
	}
}

/* The calibration from the recording in st: see docs/estimate.md. */
static int write_cal(FILE *f, struct rec_state *st, bool libcalls, unsigned reps, const char *host, const char *arch,
                     char *err, size_t errlen)
{
	double sum_sys = 0, sum_lib = 0, lim_sys[REC_NCALLS], lim_lib[REC_NCALLS];
	uint64_t n_sys = 0, n_lib = 0;
	unsigned ncalls = libcalls ? REC_NCALLS : REC_SYS;
	double *osys = NULL, *olib = NULL;
	struct json j;
	int r = -ENOMEM;

	for (unsigned i = 0; i < ncalls; i++) {
		const struct series *d = i < REC_SYS ? &st->sys[i] : &st->lib[i];

		if (st->samples[i].n != reps || d->n < reps || (libcalls && st->lib[i].n < reps)) {
			snprintf(err, errlen, "%s: %u samples, %u traced calls: expected %u of each", rec_calls[i],
			         st->samples[i].n, d->n, reps);
			return -EINVAL;
		}
	}
	osys = malloc(REC_NCALLS * reps * sizeof(*osys));
	olib = malloc(REC_NCALLS * reps * sizeof(*olib));
	if (!osys || !olib) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < ncalls; i++) {
		const double *s = st->samples[i].v;
		const double *ds = i < REC_SYS ? st->sys[i].v + (st->sys[i].n - reps) : NULL;
		const double *dl = libcalls ? st->lib[i].v + (st->lib[i].n - reps) : NULL;
		double *os = osys + i * reps, *ol = olib + i * reps;

		lim_sys[i] = lim_lib[i] = 0;
		if (i >= REC_SYS) {
			/* outside gettimeofday@plt, in the suite's window */
			for (unsigned k = 0; k < reps; k++)
				ol[k] = s[k] - st->clock_ns - dl[k];
			costs(ol, reps, &lim_lib[i], &sum_lib, &n_lib);
			continue;
		}
		/* syscalls: outside the system call, in the suite's window;
		 * libcalls: outside the system call, inside NAME@plt */
		for (unsigned k = 0; k < reps; k++)
			os[k] = libcalls ? dl[k] - ds[k] : s[k] - st->clock_ns - ds[k];
		costs(os, reps, &lim_sys[i], &sum_sys, &n_sys);
	}
	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_str(&j, "format", "layerprof-recorder");
	json_u64(&j, "version", 1);
	json_str(&j, "mode", libcalls ? "libcalls" : "syscalls");
	json_str(&j, "host", host);
	json_str(&j, "arch", arch);
	json_str(&j, "record", libcalls ? "--dynamic --libcalls --syscalls" : "--syscalls");
	json_f64_exact(&j, "overhead_sys_ns", n_sys ? sum_sys / (double)n_sys : 0);
	json_f64_exact(&j, "overhead_lib_ns", n_lib ? sum_lib / (double)n_lib : 0);
	json_u64(&j, "reps", reps);
	json_f64_exact(&j, "clock_ns", st->clock_ns);
	json_array_begin(&j, "entries");
	for (unsigned i = 0; i < ncalls; i++) {
		json_object_begin(&j, NULL);
		json_str(&j, "call", rec_calls[i]);
		put_series(&j, "samples_ns", st->samples[i].v, reps);
		if (i < REC_SYS)
			put_series(&j, "sys_ns", st->sys[i].v + (st->sys[i].n - reps), reps);
		if (libcalls)
			put_series(&j, "lib_ns", st->lib[i].v + (st->lib[i].n - reps), reps);
		if (i < REC_SYS)
			json_f64_exact(&j, "sys_limit_ns", lim_sys[i]);
		else
			json_f64_exact(&j, "lib_limit_ns", lim_lib[i]);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
	r = 0;
out:
	free(osys);
	free(olib);
	return r;
}

int recorder_calibrate(bool libcalls, unsigned reps, const char *keep, const char *outpath)
{
	char dir[PATH_MAX], trace[PATH_MAX + 16], out[PATH_MAX + 16], errp[PATH_MAX + 16];
	char lp[PATH_MAX + 16], suite[PATH_MAX], nreps[16], host[128], arch[32], err[512];
	char *argv[24];
	struct rec_state st = { 0 };
	struct oscal_cal cal;
	struct estimate e;
	struct estimate_opts eo = { 0 };
	struct filter_opts fopts = { 0 };
	struct walk w;
	bool opened = false, estimated = false;
	FILE *f = stdout;
	int code = LP_EXIT_FAILURE, r, n = 0;

	oscal_cal_init(&cal);
	if (keep) {
		if (mkdir(keep, 0755) && errno != EEXIST) {
			fprintf(stderr, "layerprof estimate: cannot make '%s': %s\n", keep, strerror(errno));
			goto out;
		}
		snprintf(dir, sizeof(dir), "%s", keep);
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/lp-recorder-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir)) {
			fprintf(stderr, "layerprof estimate: cannot make a temporary directory: %s\n", strerror(errno));
			goto out;
		}
	}
	r = oscal_suite_path(suite);
	if (r) {
		fprintf(stderr, "layerprof estimate: cannot find layerprof-oscal: %s\n", strerror(-r));
		goto out;
	}
	snprintf(lp, sizeof(lp), "%s/layerprof", layerprof_exe_dir());
	snprintf(trace, sizeof(trace), "%s/trace", dir);
	snprintf(out, sizeof(out), "%s/suite.txt", dir);
	snprintf(errp, sizeof(errp), "%s/record.err", dir);
	snprintf(nreps, sizeof(nreps), "%u", reps);
	argv[n++] = lp;
	argv[n++] = "record";
	argv[n++] = "-q";
	if (libcalls) {
		argv[n++] = "--dynamic";
		argv[n++] = "--libcalls";
	}
	argv[n++] = "--syscalls";
	argv[n++] = "-o";
	argv[n++] = trace;
	argv[n++] = "--";
	argv[n++] = suite;
	argv[n++] = "--calls";
	argv[n++] = libcalls ? "getpid,getppid,getuid,gettimeofday" : "getpid,getppid,getuid";
	argv[n++] = "--reps";
	argv[n++] = nreps;
	argv[n++] = "--dir";
	argv[n++] = dir;
	argv[n] = NULL;
	r = run_to(argv, out, errp);
	if (r < 0 || !WIFEXITED(r) || WEXITSTATUS(r)) {
		fprintf(stderr, "layerprof estimate: the recording of the suite failed (see %s)\n", errp);
		goto out;
	}
	if (read_suite(out, &st, err, sizeof(err))) {
		fprintf(stderr, "layerprof estimate: %s\n", err);
		goto out;
	}
	code = builtin_trace_open("estimate", &w, trace, &fopts);
	if (code)
		goto out;
	opened = true;
	code = LP_EXIT_FAILURE;
	eo.on_call = on_call;
	eo.ctx = &st;
	estimate_init(&e, &cal, &eo);
	estimated = true;
	r = estimate_run(&e, &w, err, sizeof(err));
	if (r || st.error) {
		fprintf(stderr, "layerprof estimate: %s: %s\n", trace, r ? err : strerror(-st.error));
		goto out;
	}
	if (!walk_meta(&w, "host", host, sizeof(host)))
		host[0] = '\0';
	if (!walk_meta(&w, "arch", arch, sizeof(arch)))
		arch[0] = '\0';
	if (outpath) {
		int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

		f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!f) {
			fprintf(stderr, "layerprof estimate: cannot write '%s': %s\n", outpath, strerror(errno));
			if (fd >= 0)
				close(fd);
			f = stdout;
			goto out;
		}
	}
	if (write_cal(f, &st, libcalls, reps, host, arch, err, sizeof(err))) {
		fprintf(stderr, "layerprof estimate: the recording of the suite: %s\n", err);
		goto out;
	}
	if (fflush(f) || ferror(f)) {
		fprintf(stderr, "layerprof estimate: cannot write %s\n", outpath ? outpath : "the output");
		goto out;
	}
	code = LP_EXIT_OK;
out:
	if (f != stdout)
		fclose(f);
	if (estimated)
		estimate_release(&e);
	if (opened)
		walk_release(&w);
	oscal_cal_release(&cal);
	for (unsigned i = 0; i < REC_NCALLS; i++) {
		free(st.samples[i].v);
		free(st.sys[i].v);
		free(st.lib[i].v);
	}
	if (!keep && dir[0]) {
		char *rm[] = { "/bin/rm", "-rf", dir, NULL };

		run_to(rm, "/dev/null", "/dev/null");
	}
	return code;
}

/* The value of "key": in text (a string into buf, or a number into *num). */
static bool find_key(const char *text, const char *key, char *buf, size_t size, double *num)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(text, pat);
	if (!p)
		return false;
	p += strlen(pat);
	if (buf) {
		const char *q;

		if (*p != '"' || !(q = strchr(p + 1, '"')) || (size_t)(q - p - 1) >= size)
			return false;
		memcpy(buf, p + 1, (size_t)(q - p - 1));
		buf[q - p - 1] = '\0';
		return true;
	}
	{
		char *end;

		*num = strtod(p, &end);
		return end != p;
	}
}

int recorder_cal_read(const char *path, struct recorder_cal *rc, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text = NULL, fmt[32];
	size_t n;
	int r = -EINVAL;

	memset(rc, 0, sizeof(*rc));
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "cannot read recorder calibration '%s': %s", path, strerror(errno));
		return r;
	}
	text = malloc(REC_FILE_MAX + 1);
	if (!text) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = fread(text, 1, REC_FILE_MAX + 1, f);
	fclose(f);
	if (n > REC_FILE_MAX) {
		snprintf(err, errlen, "'%s' is not a recorder calibration: too large", path);
		goto out;
	}
	text[n] = '\0';
	if (!find_key(text, "format", fmt, sizeof(fmt), NULL) || strcmp(fmt, "layerprof-recorder") ||
	    !find_key(text, "mode", rc->mode, sizeof(rc->mode), NULL) ||
	    (strcmp(rc->mode, "syscalls") && strcmp(rc->mode, "libcalls")) ||
	    !find_key(text, "host", rc->host, sizeof(rc->host), NULL) ||
	    !find_key(text, "arch", rc->arch, sizeof(rc->arch), NULL) ||
	    !find_key(text, "overhead_sys_ns", NULL, 0, &rc->overhead_sys_ns) ||
	    !find_key(text, "overhead_lib_ns", NULL, 0, &rc->overhead_lib_ns)) {
		snprintf(err, errlen,
		         "'%s' is not a recorder calibration (layerprof estimate --calibrate-recorder -o FILE)", path);
		goto out;
	}
	r = 0;
out:
	free(text);
	return r;
}
