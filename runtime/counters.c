/* Performance counters per thread (record --counters): opened in each
 * thread when its ring is made (perf_event_open for the calling thread on
 * any CPU), read at every function entry and exit into an LP_RAW_COUNTER
 * record that stands for the function event, and read a last time, with
 * their enabled and running times, when the thread ends.  The recorder
 * says which events in LAYERPROF_COUNTERS (common/launch.h).  Software
 * events go in one group, hardware events in groups of a few (the PMU
 * multiplexes groups that do not fit; the values are scaled up to the
 * time enabled).  The gates read through the events' mmap pages with
 * rdpmc where the recorder found that possible (x86-64, and aarch64
 * where perf_user_access allows it: arch/<arch>/lp_ctrarch.h; hardware
 * events only), else with one read(2) per group. */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime.h"
#include "runtime/ctrread.h"
/* the architecture's user-space counter reads, where it has them */
#if defined(__has_include)
#if __has_include("lp_ctrarch.h")
#include "lp_ctrarch.h"
#endif
#endif

/* Hardware events per group: what most PMUs count at once besides their
 * fixed counters.  A larger group might never be scheduled at all. */
#define LP_CTR_HW_GROUP 4u

enum lp_ctr_how {
	LP_CTR_READ_NONE = 0,  /* not read at the gates */
	LP_CTR_READ_GROUP = 1, /* read(2) of each group */
	LP_CTR_READ_RDPMC = 2, /* rdpmc through the mmap pages */
};

extern char **environ;

/* The session's set, from LAYERPROF_COUNTERS: the same in every thread. */
static struct {
	uint32_t n;
	uint32_t type[LP_COUNTERS_MAX];
	uint64_t config[LP_COUNTERS_MAX];
	uint8_t how; /* enum lp_ctr_how */
	bool user;   /* exclude_kernel, exclude_hv */
} ctr_conf;
static pthread_once_t ctr_conf_once = PTHREAD_ONCE_INIT;

struct lp_ctrgroup {
	int fd;                       /* the leader: read(2) gives the whole group */
	uint32_t n;                   /* members, the leader first */
	uint8_t idx[LP_COUNTERS_MAX]; /* each member's place in the set */
};

/* A thread's counters: one page, mmap'd (never malloc'd: the program's
 * allocator may be the one being traced). */
struct lp_ctrthread {
	int fd[LP_COUNTERS_MAX];
	struct perf_event_mmap_page *page[LP_COUNTERS_MAX]; /* with rdpmc */
	struct lp_ctrgroup group[LP_COUNTERS_MAX];
	uint32_t ngroups;
	uint8_t how; /* enum lp_ctr_how, this thread's */
	uint32_t page_size;
};

static LP_NOINSTR bool conf_event(const char *p, const char *end, uint32_t i)
{
	char *q;
	unsigned long type;
	unsigned long long config;

	errno = 0;
	type = strtoul(p, &q, 10);
	if (errno || q >= end || *q != ':' || type > 0xffffffffu)
		return false;
	config = strtoull(q + 1, &q, 0);
	if (errno || q != end)
		return false;
	ctr_conf.type[i] = (uint32_t)type;
	ctr_conf.config[i] = config;
	return true;
}

/* "read=HOW;scope=SCOPE;events=T:C,T:C,..." (common/launch.h).  Anything
 * malformed: no counters. */
static LP_NOINSTR void conf_parse(void)
{
	const char *env = getenv("LAYERPROF_COUNTERS"), *p;
	int saved = errno;
	uint32_t n = 0;

	if (!env)
		goto out;
	if (!strncmp(env, "read=rdpmc;", 11))
		ctr_conf.how = LP_CTR_READ_RDPMC;
	else if (!strncmp(env, "read=read;", 10))
		ctr_conf.how = LP_CTR_READ_GROUP;
	else if (strncmp(env, "read=none;", 10))
		goto out;
	p = strchr(env, ';') + 1;
	if (!strncmp(p, "scope=user;", 11))
		ctr_conf.user = true;
	else if (strncmp(p, "scope=all;", 10))
		goto out;
	p = strchr(p, ';') + 1;
	if (strncmp(p, "events=", 7))
		goto out;
	p += 7;
	while (*p && n < LP_COUNTERS_MAX) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);

		if (!conf_event(p, end, n))
			goto out;
		n++;
		p = comma ? comma + 1 : end;
	}
	if (!*p)
		ctr_conf.n = n;
out:
	errno = saved;
}

static LP_NOINSTR int ctr_open(uint32_t i, int group_fd)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = ctr_conf.type[i];
	a.config = ctr_conf.config[i];
	a.read_format = LP_CTR_GROUP_FORMAT;
	a.exclude_kernel = ctr_conf.user;
	a.exclude_hv = ctr_conf.user;
#ifdef LP_ARCH_HAVE_PMC_READ
	if (ctr_conf.how == LP_CTR_READ_RDPMC)
		a.config1 = LP_ARCH_PMC_CONFIG1;
#endif
	/* a leader starts disabled: a member added to a group already
	 * counting would count only from the group's next schedule (the
	 * thread's next context switch) */
	a.disabled = group_fd < 0;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

static LP_NOINSTR void ctr_close(struct lp_ctrthread *c)
{
	uint32_t i;

	for (i = 0; i < LP_COUNTERS_MAX; i++) {
		if (c->page[i])
			munmap(c->page[i], c->page_size);
		if (c->fd[i] >= 0)
			close(c->fd[i]);
		c->page[i] = NULL;
		c->fd[i] = -1;
	}
	c->ngroups = 0;
}

/* Joins event i to the group being built for its kind (software, or the
 * current hardware group while it has room).  Returns false when it
 * cannot be opened. */
static LP_NOINSTR bool ctr_join(struct lp_ctrthread *c, uint32_t i, int *sw, int *hw)
{
	bool soft = ctr_conf.type[i] == PERF_TYPE_SOFTWARE;
	int *g = soft ? sw : hw;
	struct lp_ctrgroup *gr;

	if (!soft && *hw >= 0 && c->group[*hw].n == LP_CTR_HW_GROUP)
		*hw = -1;
	if (*g < 0) {
		*g = (int)c->ngroups++;
		c->group[*g].n = 0;
		c->group[*g].fd = -1;
	}
	gr = &c->group[*g];
	c->fd[i] = ctr_open(i, gr->fd);
	if (c->fd[i] < 0)
		return false;
	if (gr->fd < 0)
		gr->fd = c->fd[i];
	gr->idx[gr->n++] = (uint8_t)i;
	return true;
}

#ifdef LP_ARCH_HAVE_PMC_READ
static LP_NOINSTR uint64_t cpu_rdpmc(void *ctx, uint32_t index)
{
	(void)ctx;
	return lp_arch_pmc_read(index);
}

static LP_NOINSTR uint64_t cpu_rdtsc(void *ctx)
{
	(void)ctx;
	return lp_arch_pmc_time();
}

static const struct lp_ctrcpu ctr_cpu = { cpu_rdpmc, cpu_rdtsc, NULL };

/* Maps every event's page; false when one cannot be mapped or does not
 * let user space read its counter. */
static LP_NOINSTR bool ctr_map(struct lp_ctrthread *c)
{
	uint32_t i;

	for (i = 0; i < ctr_conf.n; i++) {
		void *m = mmap(NULL, c->page_size, PROT_READ, MAP_SHARED, c->fd[i], 0);

		if (m == MAP_FAILED)
			return false;
		c->page[i] = m;
		if (!(LP_CTR_READ_ONCE(c->page[i]->capabilities) & LP_CTR_CAP_USER_RDPMC))
			return false;
	}
	return true;
}
#else
static LP_NOINSTR bool ctr_map(struct lp_ctrthread *c)
{
	(void)c;
	return false;
}
#endif

/* The thread's values now, scaled (*scaled when one was); with times,
 * each counter's enabled and running time too.  False when a read
 * failed. */
static LP_NOINSTR bool ctr_read(struct lp_ctrthread *c, uint64_t *v, uint64_t *enabled, uint64_t *running, bool *scaled)
{
	struct lp_ctrval val[LP_COUNTERS_MAX];
	uint32_t g, k;

#ifdef LP_ARCH_HAVE_PMC_READ
	if (c->how == LP_CTR_READ_RDPMC) {
		for (k = 0; k < ctr_conf.n; k++) {
			if (!lp_ctr_mmap_read(c->page[k], &ctr_cpu, &val[k]))
				goto group; /* scheduled where user space may not read it */
			v[k] = lp_ctr_scale(&val[k], scaled);
			if (enabled) {
				enabled[k] = val[k].enabled;
				running[k] = val[k].running;
			}
		}
		return true;
	}
group:
#endif
	for (g = 0; g < c->ngroups; g++) {
		struct lp_ctrgroup *gr = &c->group[g];
		uint64_t buf[LP_CTR_GROUP_WORDS(LP_COUNTERS_MAX)];
		ssize_t got = read(gr->fd, buf, LP_CTR_GROUP_WORDS(gr->n) * sizeof(uint64_t));

		if (got < 0 || !lp_ctr_group_parse(buf, (size_t)got, gr->n, val))
			return false;
		for (k = 0; k < gr->n; k++) {
			uint32_t i = gr->idx[k];

			v[i] = lp_ctr_scale(&val[k], scaled);
			if (enabled) {
				enabled[i] = val[k].enabled;
				running[i] = val[k].running;
			}
		}
	}
	return true;
}

/* One LP_RAW_COUNTER record: n values, and with times 2n more
 * (enabled, running for each counter), two to a slot.  `arg` is the
 * function (ENTRY, EXIT) or the flags (enum lp_ctr_flags). */
static LP_NOINSTR void ctr_put(struct lp_thread *t, uint32_t kind, uint64_t arg, const uint64_t *v,
                               const uint64_t *enabled, const uint64_t *running, uint64_t now)
{
	uint32_t n = ctr_conf.n, words = n + (enabled ? 2 * n : 0), body = (words + 1) / 2, i;
	uint64_t w[3 * LP_COUNTERS_MAX + 1];
	struct lp_slot *s;

	memcpy(w, v, n * sizeof(*v));
	for (i = 0; enabled && i < n; i++) {
		w[n + 2 * i] = enabled[i];
		w[n + 2 * i + 1] = running[i];
	}
	w[words] = 0;
	s = lp_ring_reserve(t, 1 + body, now);
	s->time = now;
	s->word = LP_RAW_CTR_PAYLOAD(kind, n, arg) | (uint64_t)LP_RAW_COUNTER << LP_SLOT_TYPE_SHIFT;
	for (i = 0; i < body; i++) {
		s[1 + i].time = w[2 * i];
		s[1 + i].word = w[2 * i + 1];
	}
	lp_ring_commit(t, s, 1 + body);
}

LP_NOINSTR void lp_ctr_thread_start(struct lp_thread *t)
{
	struct lp_ctrthread *c = t->ctrs;
	uint64_t v[LP_COUNTERS_MAX];
	int saved = errno, sw = -1, hw = -1;
	bool scaled = false;
	uint32_t i;

	t->ctr = 0;
	if (c) {
		/* a forked child's copy of its parent's: not its counters */
		ctr_close(c);
	}
	/* a ring made before the C library has set up the environment (a
	 * gate in a .preinit_array function) gets no counters; the next
	 * threads' do */
	if (!environ)
		goto out;
	pthread_once(&ctr_conf_once, conf_parse);
	if (!ctr_conf.n)
		goto out;
	if (!c) {
		long ps = sysconf(_SC_PAGESIZE);
		void *m = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			goto out;
		c = t->ctrs = m;
		c->page_size = ps > 0 ? (uint32_t)ps : 4096u;
		for (i = 0; i < LP_COUNTERS_MAX; i++)
			c->fd[i] = -1;
	}
	for (i = 0; i < ctr_conf.n; i++)
		if (!ctr_join(c, i, &sw, &hw))
			goto fail;
	for (i = 0; i < c->ngroups; i++)
		if (ioctl(c->group[i].fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP))
			goto fail;
	c->how = ctr_conf.how;
	if (c->how == LP_CTR_READ_RDPMC && !ctr_map(c))
		c->how = LP_CTR_READ_GROUP;
	if (!ctr_read(c, v, NULL, NULL, &scaled))
		goto fail;
	ctr_put(t, LP_CTR_BEGIN, 0, v, NULL, NULL, lp_clock_now());
	t->ctr = c->how != LP_CTR_READ_NONE;
	goto out;
fail:
	/* what the recorder could open, the thread could not (too many open
	 * files...): this thread has no counter records */
	ctr_close(c);
out:
	errno = saved;
}

LP_NOINSTR void lp_ctr_gate(struct lp_thread *t, uint32_t kind, uintptr_t fn)
{
	uint64_t v[LP_COUNTERS_MAX], now = 0;
	int saved = errno;
	bool scaled = false, ok;

	/* the function's own counts as nearly as can be: the clock before the
	 * counters at an entry, after them at an exit */
	if (kind == LP_CTR_ENTRY)
		now = lp_clock_now();
	ok = ctr_read(t->ctrs, v, NULL, NULL, &scaled);
	if (kind != LP_CTR_ENTRY)
		now = lp_clock_now();
	if (likely(ok)) {
		ctr_put(t, kind, fn, v, NULL, NULL, now);
	} else {
		/* the function event at least */
		struct lp_slot *s = lp_ring_reserve(t, 1, now);

		s->time = now;
		s->word = (uint64_t)fn |
		          ((uint64_t)(kind == LP_CTR_ENTRY ? LP_RAW_ENTRY : LP_RAW_EXIT) << LP_SLOT_TYPE_SHIFT);
		lp_ring_commit(t, s, 1);
	}
	errno = saved;
}

LP_NOINSTR void lp_ctr_thread_end(struct lp_thread *t)
{
	struct lp_ctrthread *c = t->ctrs;
	uint64_t v[LP_COUNTERS_MAX], en[LP_COUNTERS_MAX], run[LP_COUNTERS_MAX];
	int saved = errno;
	bool scaled = false;

	if (!c)
		return;
	t->ctr = 0;
	if (c->ngroups && t->state == LP_THREAD_READY && ctr_read(c, v, en, run, &scaled))
		ctr_put(t, LP_CTR_END, LP_CTR_HAS_TIMES | (scaled ? LP_CTR_SCALED : 0), v, en, run, lp_clock_now());
	ctr_close(c);
	t->ctrs = NULL;
	munmap(c, sizeof(*c));
	errno = saved;
}
