/* record's performance counters: probing, the runtime's settings, the
 * program's totals (see recctr.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/launch.h"
#include "host/recctr.h"
#include "runtime/ctrread.h"
#if defined(__has_include)
#if __has_include("lp_ctrarch.h")
#include "lp_ctrarch.h"
#endif
#endif

/* As runtime/counters.c groups them. */
#define RECCTR_HW_GROUP 4u

int recctr_option(struct recctr *rc, const char *list, char *err, size_t errlen)
{
	int r;

	rc->on = true;
	rc->list = list;
	r = ctrnames_parse(list ? list : CTRNAMES_DEFAULT, rc->asked, &rc->nasked, err, errlen);
	return r;
}

static int read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -99;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -99;
		fclose(f);
	}
	return v;
}

static int event_open(const struct ctrname *c, pid_t pid, int cpu, int group, bool user, uint64_t read_format,
                      bool inherit, bool on_exec, uint64_t config1)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = c->type;
	a.config = c->config;
	a.read_format = read_format;
	a.exclude_kernel = user;
	a.exclude_hv = user;
	a.inherit = inherit;
	a.disabled = on_exec;
	a.enable_on_exec = on_exec;
	a.config1 = config1;
	fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Why the kernel refused an event, in a few words. */
static void reason(int e, int paranoid, char *buf, size_t size)
{
	switch (e) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		snprintf(buf, size, "not supported by this CPU or kernel");
		break;
	case EACCES:
	case EPERM:
		snprintf(buf, size,
		         "not permitted (perf_event_paranoid is %d): run as root or with CAP_PERFMON, or lower it "
		         "with sysctl kernel.perf_event_paranoid=1",
		         paranoid);
		break;
	case EINVAL:
		snprintf(buf, size, "not known to this CPU or kernel (invalid event code)");
		break;
	case EMFILE:
	case ENFILE:
		snprintf(buf, size, "too many open files");
		break;
	case ENOSYS:
		snprintf(buf, size, "this kernel has no perf_event_open");
		break;
	case EBUSY:
		snprintf(buf, size, "the PMU is held by another user");
		break;
	default:
		snprintf(buf, size, "%s", strerror(e));
		break;
	}
}

static void append(char *buf, size_t size, const char *fmt, const char *a, const char *b)
{
	size_t len = strlen(buf);

	snprintf(buf + len, size - len, fmt, a, b);
}

#ifndef LP_ARCH_PMC_CONFIG1
#define LP_ARCH_PMC_CONFIG1 0u
#endif

/* The runtime's groups on the calling thread, each leader read once: how
 * the runtime will read them ("rdpmc", "read", "none").  User-space reads
 * (rdpmc) only when every event is a hardware one: a software event's
 * count is the kernel's, on no PMU counter. */
static const char *probe_read(const struct recctr *rc)
{
	int fd[LP_COUNTERS_MAX], leader[LP_COUNTERS_MAX], sw = -1, hw = -1, hw_n = 0, nleaders = 0;
	uint64_t buf[LP_CTR_GROUP_WORDS(LP_COUNTERS_MAX)], config1 = 0;
	const char *how = "read";
	bool all_hw = true;
	uint32_t i;

	for (i = 0; i < rc->n; i++) {
		fd[i] = -1;
		all_hw &= !ctrname_is_software(&rc->set[i]);
	}
#ifdef LP_ARCH_HAVE_PMC_READ
	if (all_hw)
		config1 = LP_ARCH_PMC_CONFIG1;
#endif
	for (i = 0; i < rc->n; i++) {
		bool soft = ctrname_is_software(&rc->set[i]);
		int *g = soft ? &sw : &hw;

		if (!soft && hw >= 0 && hw_n == (int)RECCTR_HW_GROUP)
			hw = -1;
		if (!soft && hw < 0)
			hw_n = 0;
		fd[i] = event_open(&rc->set[i], 0, -1, *g, rc->user, LP_CTR_GROUP_FORMAT, false, false, config1);
		if (fd[i] < 0 && config1) {
			/* the kernel refuses user access: read(2) then */
			config1 = 0;
			all_hw = false;
			fd[i] = event_open(&rc->set[i], 0, -1, *g, rc->user, LP_CTR_GROUP_FORMAT, false, false, 0);
		}
		if (fd[i] < 0) {
			how = "none";
			goto out;
		}
		if (*g < 0)
			*g = leader[nleaders++] = fd[i];
		hw_n += !soft;
	}
	for (int k = 0; k < nleaders; k++)
		if (read(leader[k], buf, sizeof(buf)) <= 0)
			how = "none";
#ifdef LP_ARCH_HAVE_PMC_READ
	if (all_hw && config1 == LP_ARCH_PMC_CONFIG1 && strcmp(how, "none")) {
		long ps = sysconf(_SC_PAGESIZE);
		bool rdpmc = true;

		for (i = 0; i < rc->n && rdpmc; i++) {
			void *m = mmap(NULL, (size_t)ps, PROT_READ, MAP_SHARED, fd[i], 0);

			if (m == MAP_FAILED) {
				rdpmc = false;
				break;
			}
			rdpmc =
			    LP_CTR_READ_ONCE(((struct perf_event_mmap_page *)m)->capabilities) & LP_CTR_CAP_USER_RDPMC;
			munmap(m, (size_t)ps);
		}
		if (rdpmc)
			how = "rdpmc";
	}
#endif
out:
	for (i = 0; i < rc->n; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return how;
}

int recctr_probe(struct recctr *rc, char *err, size_t errlen)
{
	int fd[LP_COUNTERS_MAX];
	char why[300];
	uint32_t i;
	bool denied = false;
	int r;

	rc->paranoid = read_paranoid();
	rc->user = false;
	for (;;) {
		for (i = 0; i < rc->nasked; i++) {
			fd[i] = event_open(&rc->asked[i], 0, -1, -1, rc->user, LP_CTR_GROUP_FORMAT, false, false, 0);
			denied |= fd[i] == -EACCES || fd[i] == -EPERM;
		}
		/* kernel counting refused (perf_event_paranoid 2 and up, not
		 * root): user space may still be counted */
		if (!denied || rc->user)
			break;
		for (i = 0; i < rc->nasked; i++)
			if (fd[i] >= 0)
				close(fd[i]);
		rc->user = true;
		denied = false;
	}
	rc->n = 0;
	rc->names[0] = rc->unavailable[0] = '\0';
	rc->hw_only_missing = true;
	for (i = 0; i < rc->nasked; i++) {
		if (fd[i] >= 0) {
			close(fd[i]);
			rc->set[rc->n++] = rc->asked[i];
			append(rc->names, sizeof(rc->names), "%s%s", rc->n > 1 ? "," : "", rc->asked[i].name);
			continue;
		}
		reason(-fd[i], rc->paranoid, why, sizeof(why));
		if (ctrname_is_software(&rc->asked[i]) || (fd[i] != -ENOENT && fd[i] != -EOPNOTSUPP))
			rc->hw_only_missing = false;
		if (rc->unavailable[0])
			append(rc->unavailable, sizeof(rc->unavailable), "%s%s", "; ", "");
		append(rc->unavailable, sizeof(rc->unavailable), "%s: %s", rc->asked[i].name, why);
	}
	if (!rc->n) {
		snprintf(err, errlen, "no counter can be opened (%s)", rc->unavailable);
		return -ENOENT;
	}
	rc->how = rc->no_gates ? "none" : probe_read(rc);
	r = launch_counters_env(rc->set, rc->n, rc->how, rc->user, rc->env, sizeof(rc->env));
	if (r < 0) {
		snprintf(err, errlen, "counter settings too long");
		return r;
	}
	return 0;
}

static int online_cpus(int *cpus, int max)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int n = 0, a, b;
	char sep;

	if (!f) {
		long c = sysconf(_SC_NPROCESSORS_CONF);

		for (a = 0; a < c && n < max; a++)
			cpus[n++] = a;
		return n;
	}
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		sep = (char)fgetc(f);
		if (sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			sep = (char)fgetc(f);
		}
		for (; a <= b && n < max; a++)
			cpus[n++] = a;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n;
}

int recctr_open_totals(struct recctr *rc, pid_t pid, bool held, char *err, size_t errlen)
{
	int c;
	uint32_t i;

	if (!rc->on || !rc->n || rc->fd)
		return 0;
	rc->ncpus = online_cpus(rc->cpus, RECCTR_CPUS_MAX);
	rc->fd = malloc((size_t)(rc->ncpus ? rc->ncpus : 1) * sizeof(*rc->fd));
	if (!rc->fd) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (c = 0; c < rc->ncpus; c++)
		for (i = 0; i < LP_COUNTERS_MAX; i++)
			rc->fd[c][i] = -1;
	for (c = 0; c < rc->ncpus; c++)
		for (i = 0; i < rc->n; i++) {
			int fd =
			    event_open(&rc->set[i], pid, rc->cpus[c], -1, rc->user,
			               PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING, true, held, 0);

			if (fd < 0) {
				char why[300];

				reason(-fd, rc->paranoid, why, sizeof(why));
				snprintf(err, errlen, "cannot count '%s' of process %d on CPU %d: %s", rc->set[i].name,
				         (int)pid, rc->cpus[c], why);
				recctr_release(rc);
				return fd;
			}
			rc->fd[c][i] = fd;
		}
	rc->from_exec = held;
	return 0;
}

int recctr_held(void *ctx, pid_t pid)
{
	struct recctr *rc = ctx;
	char err[600];

	/* no totals is no reason to stop the program: said after the run */
	if (recctr_open_totals(rc, pid, true, err, sizeof(err)))
		fprintf(stderr, "layerprof record: warning: counters: %s: no program totals\n", err);
	return 0;
}

/* The totals are counts as counted, never scaled: an event of the program
 * on one CPU is enabled while the program runs on any CPU and runs only
 * while it is on that one, so running < enabled says where it ran, not
 * that the counter was multiplexed.  PROCESS: the sum of the CPUs' counts,
 * the longest time enabled, the sum of the times running. */
uint32_t recctr_read_totals(struct recctr *rc, struct ctrevent *ev)
{
	struct ctrevent *proc;
	int c;
	uint32_t i;

	if (!rc->fd)
		return 0;
	proc = &ev[rc->ncpus];
	memset(proc, 0, sizeof(*proc));
	proc->kind = LP_CTR_PROCESS;
	proc->flags = LP_CTR_HAS_TIMES;
	proc->n = rc->n;
	for (c = 0; c < rc->ncpus; c++) {
		struct ctrevent *e = &ev[c];

		memset(e, 0, sizeof(*e));
		e->kind = LP_CTR_CPU;
		e->flags = LP_CTR_HAS_TIMES;
		e->cpu = (uint32_t)rc->cpus[c];
		e->n = rc->n;
		for (i = 0; i < rc->n; i++) {
			uint64_t buf[3] = { 0, 0, 0 };

			if (read(rc->fd[c][i], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				memset(buf, 0, sizeof(buf));
			e->values[i] = buf[0];
			e->enabled[i] = buf[1];
			e->running[i] = buf[2];
			proc->values[i] += buf[0];
			if (buf[1] > proc->enabled[i])
				proc->enabled[i] = buf[1];
			proc->running[i] += buf[2];
		}
	}
	return (uint32_t)rc->ncpus + 1;
}

void recctr_release(struct recctr *rc)
{
	int c;
	uint32_t i;

	if (!rc->fd)
		return;
	for (c = 0; c < rc->ncpus; c++)
		for (i = 0; i < LP_COUNTERS_MAX; i++)
			if (rc->fd[c][i] >= 0)
				close(rc->fd[c][i]);
	free(rc->fd);
	rc->fd = NULL;
}
