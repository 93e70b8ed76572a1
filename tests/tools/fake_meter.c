/* A made-up power meter for the test of `energy train`'s method
 * (tests/integration/test_energy.py), given to layerprof as
 * --power "cmd:fake_meter STATEFILE": run once per reading, it prints
 *
 *   watts = 1.5 + 2.0 x (CPU seconds per second) + 4e-5 x (minor faults per second)
 *
 * of the processes in LAYERPROF_POWER_PIDS (the measured programs, all
 * their threads) since its previous reading, whose time and the
 * processes' totals it keeps in STATEFILE.  CPU time: the sum of the
 * threads' run time in ns (/proc/PID/task/TID/schedstat, the clock
 * task-clock counts too), or the process's utime + stime (in clock ticks,
 * dead threads included) when that is more, as it is once threads have
 * ended; minor faults: /proc/PID/stat's minflt.  An ended process is still
 * read (layerprof takes the meter's last reading before it reaps the
 * programs), but only its utime + stime remain: its CPU time then is the
 * previous reading's plus the growth of utime + stime since, whose
 * truncation to ticks errs either way.  The first reading of a process
 * counts it from its start.
 *
 * A C program rather than a script: an interpreter's start takes longer
 * than a reading may on a loaded machine. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BASE_W 1.5
#define CPU_W 2.0    /* per CPU second per second */
#define FAULT_W 4e-5 /* per minor fault per second */
#define PIDS_MAX 64

struct proc {
	long pid;
	uint64_t cpu_ns, minflt;
	uint64_t ticks_ns; /* utime + stime, as the kernel gives it (whole ticks) */
	int ended;         /* a zombie: its threads' run times are gone */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The sum of the process's threads' run times (ns), from schedstat. */
static uint64_t threads_ns(long pid)
{
	char path[64];
	struct dirent *e;
	uint64_t sum = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char file[320];
		unsigned long long ns;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/proc/%ld/task/%s/schedstat", pid, e->d_name);
		f = fopen(file, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* The process's totals now; 0 when it is gone (reaped). */
static int proc_read(long pid, struct proc *p)
{
	char path[64], buf[4096], *s;
	unsigned long long minflt, utime, stime;
	char state;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's name, which may hold anything */
	s = strrchr(buf, ')');
	if (!s || sscanf(s + 1, " %c %*s %*s %*s %*s %*s %*s %llu %*s %*s %*s %llu %llu", &state, &minflt, &utime,
	                 &stime) != 4)
		return 0;
	p->pid = pid;
	p->minflt = minflt;
	p->ticks_ns = (utime + stime) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	p->cpu_ns = p->ticks_ns;
	p->ended = state == 'Z';
	if (!p->ended) {
		uint64_t t = threads_ns(pid);

		if (t > p->cpu_ns)
			p->cpu_ns = t;
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct proc prev[PIDS_MAX], cur[PIDS_MAX];
	const char *pids = getenv("LAYERPROF_POWER_PIDS");
	unsigned long long t_prev = 0;
	int nprev = 0, ncur = 0;
	double cpu_s = 0, faults = 0, dt;
	char tmp[4096];
	uint64_t t;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: fake_meter STATEFILE\n");
		return 2;
	}
	f = fopen(argv[1], "r");
	if (f) {
		if (fscanf(f, "%llu", &t_prev) != 1)
			t_prev = 0;
		while (nprev < PIDS_MAX && fscanf(f, "%ld %" SCNu64 " %" SCNu64 " %" SCNu64, &prev[nprev].pid,
		                                  &prev[nprev].cpu_ns, &prev[nprev].minflt, &prev[nprev].ticks_ns) == 4)
			nprev++;
		fclose(f);
	}
	for (const char *p = pids ? pids : ""; *p && ncur < PIDS_MAX;) {
		char *end;
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (proc_read(pid, &cur[ncur]))
			ncur++;
		p = *end == ',' ? end + 1 : end;
	}
	t = now_ns();
	dt = t_prev && t > t_prev ? (double)(t - t_prev) * 1e-9 : 0;
	for (int i = 0; i < ncur; i++) {
		const struct proc *p0 = NULL;

		for (int k = 0; k < nprev; k++)
			if (prev[k].pid == cur[i].pid)
				p0 = &prev[k];
		if (cur[i].ended && p0)
			cur[i].cpu_ns = p0->cpu_ns + (cur[i].ticks_ns - p0->ticks_ns);
		cpu_s += (double)(int64_t)(cur[i].cpu_ns - (p0 ? p0->cpu_ns : 0)) * 1e-9;
		faults += (double)(int64_t)(cur[i].minflt - (p0 ? p0->minflt : 0));
	}
	snprintf(tmp, sizeof(tmp), "%s.new", argv[1]);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "fake_meter: cannot write '%s'\n", tmp);
		return 1;
	}
	fprintf(f, "%" PRIu64 "\n", t);
	for (int i = 0; i < ncur; i++)
		fprintf(f, "%ld %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", cur[i].pid, cur[i].cpu_ns, cur[i].minflt,
		        cur[i].ticks_ns);
	if (fclose(f) || rename(tmp, argv[1])) {
		fprintf(stderr, "fake_meter: cannot write '%s'\n", argv[1]);
		return 1;
	}
	printf("%.6f\n", BASE_W + (dt > 0 ? CPU_W * cpu_s / dt + FAULT_W * faults / dt : 0));
	return 0;
}
