/* The uprobe backend of the dynamic tracer (see uprobes.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/elfsyms.h"
#include "dyntrace/uprobes.h"
#include "systrace/perfring.h"
#include "systrace/tprobes.h"
#include "systrace/tracefs.h"

#define UPROBES_GROUP_PREFIX "layerprofu_"
/* sample body: identifier, ip, pid/tid, time */
#define UP_SAMPLE_NS 24u
#define UP_SAMPLE_SIZE 32u
#if defined(__x86_64__)
#define UP_REG_SP 7 /* PERF_REG_X86_SP */
#elif defined(__aarch64__)
#define UP_REG_SP 31 /* PERF_REG_ARM64_SP */
#elif defined(__arm__)
#define UP_REG_SP 13 /* PERF_REG_ARM_SP */
#endif
#define UP_THREADS 4096u /* threads followed for longjmp (open addressing) */
#define UP_TID_GONE UINT32_MAX
#define UP_STACK_MAX 4096u
#define UP_PIDS 256u /* processes whose load address is known (open addressing) */
#define UP_FD_SPARE 64u

/* The C runtime's start-up and tear-down code, which an instrumented build
 * does not instrument either (crt1.o, crti.o, crtbegin.o): tracing it
 * would put main under _start, and _start never returns. */
static const char *const crt_names[] = {
	"_start",       "_init",         "_fini", "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
	"frame_dummy", "__libc_csu_init", "__libc_csu_fini", "_dl_relocate_static_pie", "__x86.get_pc_thunk.bx",
};

struct up_fn {
	uint64_t addr;   /* in the file (st_value) */
	uint64_t offset; /* in the file: where the probe goes */
	const char *name;
};

/* What a perf event is: a function's probe, or a scheduler tracepoint
 * that follows the traced tasks. */
enum up_kind { UP_FUNC, UP_FORK, UP_EXEC, UP_EXIT };

struct up_id {
	uint64_t perf_id;
	uint32_t fn;
	bool exit;
	uint8_t kind; /* enum up_kind */
};

/* The scheduler tracepoints that follow the traced tasks. */
static const char *const follow_names[] = { NULL, "sched_process_fork", "sched_process_exec", "sched_process_exit" };

/* A thread's calls under way, each with the stack pointer at its entry: a
 * later entry at or above one of them means that the frame is gone
 * without its return (longjmp, or a thread that unwound past it). */
struct up_frame {
	uint64_t sp;
	uint32_t fn;
};

struct up_thread {
	uint32_t tid; /* 0: empty */
	uint32_t depth;
	struct up_frame *stack; /* UP_STACK_MAX frames once needed */
	/* made by a fork: the forking thread's frames, which a child
	 * process (not a thread: its pid tells at its first record)
	 * inherits; forker: that thread's pid, 0 when none pending */
	uint32_t forker;
	uint64_t fork_ns;
};

struct up_pid {
	uint32_t pid; /* 0: empty */
	uint64_t bias; /* load address - file address */
};

struct uprobes {
	struct uprobes_ops ops;
	char *path; /* absolute, as the probes name it */
	struct elfsyms *es;
	struct up_fn *fn;
	uint32_t nfn, candidates;
	struct uprobes_skipped *skipped;
	size_t nskipped;
	const char *root;              /* tracefs */
	char group[64];                /* our probes' group; "" until defined */
	uint32_t *tp_id;               /* per function: entry, return tracepoint ids */
	uint32_t pages;
	struct perfrings pr;
	bool rings_ready;
	int *fds;
	size_t nfds;
	struct up_id *ids; /* sorted by perf_id */
	size_t nids;
	struct up_pid pids[UP_PIDS];
	struct up_thread *threads; /* UP_THREADS, or NULL without stack pointers */
	/* the traced tasks: the program's threads and its descendants' (open
	 * addressing; UP_TID_GONE marks a removed one) */
	uint32_t *tids;
	uint32_t tids_cap, ntids, nused;
	uint32_t follow_id[4];             /* by enum up_kind: tracepoint ids */
	struct tracefs_field child_pid;    /* sched_process_fork's */
	bool opened;
	uint64_t others;                   /* hits of processes not traced */
	uint64_t entries, exits, lost, unattributed, unwound;
	bool finished;
};

/* Where tracefs is, and whether this kernel defines uprobes there. */
static int tracefs_probe(struct uprobes *u, char *err, size_t errlen)
{
	char path[256];

	u->root = tracefs_root("sched", "sched_switch", err, errlen);
	if (!u->root) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l, ": uprobes are defined through tracefs, which needs root");
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/uprobe_events", u->root);
	if (access(path, W_OK)) {
		int r = -errno;

		snprintf(err, errlen, "cannot define uprobes (%s: %s): the kernel needs CONFIG_UPROBE_EVENTS, and "
		         "layerprof root", path, strerror(-r));
		return r;
	}
	return 0;
}

/* A path the probe definitions can carry: absolute, without blanks or
 * control characters (the definition is a line of words). */
static int probe_path(struct uprobes *u, const char *path, char *err, size_t errlen)
{
	char *abs = realpath(path, NULL);

	if (!abs) {
		int r = -errno;

		snprintf(err, errlen, "'%s': %s", path, strerror(-r));
		return r;
	}
	for (const unsigned char *c = (const unsigned char *)abs; *c; c++)
		if (*c <= ' ' || *c == 0x7f) {
			snprintf(err, errlen, "'%s': a path with blanks or control characters cannot be probed", abs);
			free(abs);
			return -EINVAL;
		}
	if (strlen(abs) + 64 > TPROBES_LINE_MAX) {
		snprintf(err, errlen, "'%s': path too long to probe", abs);
		free(abs);
		return -ENAMETOOLONG;
	}
	u->path = abs;
	return 0;
}

/* File offsets of the functions: through the executable PT_LOAD segment
 * that holds each.  Returns 0, or -ENOEXEC when the program headers cannot
 * be read. */
static int file_offsets(struct uprobes *u, char *err, size_t errlen)
{
	int fd = open(u->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct {
		uint64_t vaddr, offset, size;
	} seg[16];
	unsigned nseg = 0;
	int r = 0;

	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", u->path, strerror(-r));
		return r;
	}
	if (u->es->elf_class == ELFCLASS64) {
		Elf64_Ehdr eh;

		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || eh.e_phentsize != sizeof(Elf64_Phdr))
			r = -ENOEXEC;
		for (unsigned i = 0; !r && i < eh.e_phnum && nseg < 16; i++) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != (ssize_t)sizeof(ph))
				r = -ENOEXEC;
			else if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
				seg[nseg].vaddr = ph.p_vaddr;
				seg[nseg].offset = ph.p_offset;
				seg[nseg++].size = ph.p_filesz;
			}
		}
	} else {
		Elf32_Ehdr eh;

		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || eh.e_phentsize != sizeof(Elf32_Phdr))
			r = -ENOEXEC;
		for (unsigned i = 0; !r && i < eh.e_phnum && nseg < 16; i++) {
			Elf32_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != (ssize_t)sizeof(ph))
				r = -ENOEXEC;
			else if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
				seg[nseg].vaddr = ph.p_vaddr;
				seg[nseg].offset = ph.p_offset;
				seg[nseg++].size = ph.p_filesz;
			}
		}
	}
	close(fd);
	if (r) {
		snprintf(err, errlen, "'%s': cannot read its program headers", u->path);
		return r;
	}
	for (uint32_t i = 0; i < u->nfn; i++) {
		uint64_t a = u->fn[i].addr & ~(uint64_t)1; /* arm Thumb bit */

		u->fn[i].offset = UINT64_MAX;
		for (unsigned s = 0; s < nseg; s++)
			if (a >= seg[s].vaddr && a - seg[s].vaddr < seg[s].size)
				u->fn[i].offset = a - seg[s].vaddr + seg[s].offset;
	}
	return 0;
}

static bool is_crt(const char *name)
{
	for (size_t i = 0; i < sizeof(crt_names) / sizeof(crt_names[0]); i++)
		if (!strcmp(name, crt_names[i]))
			return true;
	return false;
}

static bool chosen(const struct uprobes_config *cfg, const char *name)
{
	if (!cfg->npatterns)
		return true;
	for (uint32_t i = 0; i < cfg->npatterns; i++)
		if (!fnmatch(cfg->patterns[i], name, 0))
			return true;
	return false;
}

static void skip_fn(struct uprobes *u, const char *name, const char *why)
{
	u->skipped[u->nskipped].name = name;
	u->skipped[u->nskipped++].why = why;
}

/* Symbols that mean C++ exceptions may unwind through the program's
 * frames.  A return probe replaces a frame's return address with the
 * kernel's trampoline, which the unwinder cannot step through: the
 * exception would end the program (std::terminate, or a crash). */
static const char *const unwind_names[] = {
	"__cxa_throw", "_Unwind_RaiseException", "_Unwind_Resume", "__gxx_personality_v0", "__cxa_rethrow",
};

static const char *unwinds(const struct elfsyms *es)
{
	for (size_t k = 0; k < sizeof(unwind_names) / sizeof(unwind_names[0]); k++) {
		for (size_t i = 0; i < es->nplt; i++)
			if (!strcmp(es->plt[i].name, unwind_names[k]))
				return unwind_names[k];
		for (size_t i = 0; i < es->nfn; i++)
			if (!strcmp(es->fn[i].name, unwind_names[k]))
				return unwind_names[k];
	}
	return NULL;
}

static int select_functions(struct uprobes *u, const struct uprobes_config *cfg, char *err, size_t errlen)
{
	const char *cxx = unwinds(u->es);
	uint32_t kept = 0;
	int r;

	if (cxx) {
		snprintf(err, errlen,
		         "'%s' uses C++ exceptions (it links %s): the uprobe backend's return probes would make "
		         "an exception that passes a traced function end the program, so it does not trace it",
		         u->path, cxx);
		return -ENOTSUP;
	}
	u->fn = calloc(u->es->nfn ? u->es->nfn : 1, sizeof(*u->fn));
	u->skipped = calloc(u->es->nfn ? u->es->nfn : 1, sizeof(*u->skipped));
	if (!u->fn || !u->skipped) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < u->es->nfn; i++) {
		const struct elfsyms_fn *f = &u->es->fn[i];

		if (!chosen(cfg, f->name) || is_crt(f->name))
			continue;
		u->candidates++;
		if (f->flags & ELFSYMS_FN_IFUNC) {
			skip_fn(u, f->name, "an IFUNC resolver (it runs in the loader)");
			continue;
		}
		u->fn[u->nfn].addr = f->addr;
		u->fn[u->nfn++].name = f->name;
	}
	if (!u->nfn) {
		snprintf(err, errlen, "'%s': %s", u->path,
		         cfg->npatterns ? "no function of the program matches --dynamic's patterns"
		                        : "no function symbols (neither .symtab nor .dynsym has any)");
		return -ENOENT;
	}
	r = file_offsets(u, err, errlen);
	for (uint32_t i = 0; !r && i < u->nfn; i++) {
		if (u->fn[i].offset != UINT64_MAX)
			u->fn[kept++] = u->fn[i];
		else
			skip_fn(u, u->fn[i].name, "not in an executable segment");
	}
	if (!r)
		u->nfn = kept;
	return r;
}

static uint32_t *tid_find(struct uprobes *u, uint32_t tid, bool make)
{
	uint32_t k, *gone = NULL;

	if (!u->tids_cap)
		return NULL;
	k = (tid * 2654435761u) & (u->tids_cap - 1);
	for (uint32_t n = 0; n < u->tids_cap; n++, k = (k + 1) & (u->tids_cap - 1)) {
		if (u->tids[k] == tid)
			return &u->tids[k];
		if (u->tids[k] == UP_TID_GONE && !gone)
			gone = &u->tids[k];
		if (!u->tids[k]) {
			if (!make)
				return NULL;
			if (!gone) {
				gone = &u->tids[k];
				u->nused++;
			}
			*gone = tid;
			u->ntids++;
			return gone;
		}
	}
	return NULL;
}

/* Adds a traced task (the table grows at half full).  0 or -ENOMEM. */
static int tid_add(struct uprobes *u, uint32_t tid)
{
	if ((u->nused + 1) * 2 > u->tids_cap) {
		uint32_t *old = u->tids, cap = u->tids_cap;
		uint32_t ncap = u->ntids * 4 > 64 ? u->ntids * 4 : 64;

		while (ncap & (ncap - 1))
			ncap &= ncap - 1;
		ncap *= 2;
		u->tids = calloc(ncap, sizeof(*u->tids));
		if (!u->tids) {
			u->tids = old;
			return -ENOMEM;
		}
		u->tids_cap = ncap;
		u->ntids = u->nused = 0;
		for (uint32_t i = 0; i < cap; i++)
			if (old[i] && old[i] != UP_TID_GONE)
				tid_find(u, old[i], true);
		free(old);
	}
	return tid_find(u, tid, true) ? 0 : -ENOMEM;
}

static void tid_remove(struct uprobes *u, uint32_t tid)
{
	uint32_t *t = tid_find(u, tid, false);

	if (t) {
		*t = UP_TID_GONE;
		u->ntids--;
	}
}

/* The scheduler tracepoints' ids, and where fork names its child. */
static int follow_formats(struct uprobes *u, char *err, size_t errlen)
{
	for (int k = UP_FORK; k <= UP_EXIT; k++) {
		char *fmt = NULL;
		int r = tracefs_format(u->root, "sched", follow_names[k], &fmt, &u->follow_id[k], err, errlen);

		if (!r && k == UP_FORK && (!tracefs_field(fmt, "child_pid", &u->child_pid) || u->child_pid.size != 4)) {
			snprintf(err, errlen, "cannot parse the sched:sched_process_fork format");
			r = -EINVAL;
		}
		free(fmt);
		if (r)
			return r;
	}
	return 0;
}

/* Each function's entry and return probes in our group of
 * uprobe_events, and their tracepoint ids.  What is defined before a
 * failure is removed by uprobes_free. */
static int define_probes(struct uprobes *u, char *err, size_t errlen)
{
	u->tp_id = calloc((size_t)u->nfn * 2, sizeof(*u->tp_id));
	if (!u->tp_id) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	tprobes_sweep(u->root, "uprobe_events", UPROBES_GROUP_PREFIX);
	tprobes_group(UPROBES_GROUP_PREFIX, u->group, sizeof(u->group));
	for (uint32_t i = 0; i < u->nfn; i++) {
		for (int exit = 0; exit < 2; exit++) {
			char cmd[TPROBES_LINE_MAX], name[32], *fmt = NULL;
			uint32_t id = 0;
			int r;

			snprintf(name, sizeof(name), "%c%u", exit ? 'r' : 'f', i);
			snprintf(cmd, sizeof(cmd), "%c:%s/%s %s:0x%llx\n", exit ? 'r' : 'p', u->group, name, u->path,
			         (unsigned long long)u->fn[i].offset);
			r = tprobes_write(u->root, "uprobe_events", cmd);
			if (r) {
				snprintf(err, errlen, "cannot define the %s probe of %s in %s: %s",
				         exit ? "return" : "entry", u->fn[i].name, u->path, strerror(-r));
				return r;
			}
			r = tracefs_format(u->root, u->group, name, &fmt, &id, err, errlen);
			free(fmt);
			if (r)
				return r;
			u->tp_id[2 * i + (uint32_t)exit] = id;
		}
	}
	return 0;
}

struct uprobes *uprobes_open(const struct uprobes_config *cfg, const struct uprobes_ops *ops, char *err,
                             size_t errlen)
{
	struct uprobes *u = calloc(1, sizeof(*u));
	int r;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	u->ops = *ops;
	u->pages = cfg->buffer_pages ? cfg->buffer_pages : UPROBES_DEFAULT_PAGES;
	r = probe_path(u, cfg->path, err, errlen);
	if (!r)
		r = tracefs_probe(u, err, errlen);
	if (!r)
		r = elfsyms_open(u->path, &u->es, err, errlen);
	if (!r)
		r = select_functions(u, cfg, err, errlen);
	if (!r)
		r = follow_formats(u, err, errlen);
	if (!r)
		r = define_probes(u, err, errlen);
	if (!r)
		r = perfrings_init(&u->pr, u->pages, UP_SAMPLE_NS, false, err, errlen);
#ifdef UP_REG_SP
	if (!r && !(u->threads = calloc(UP_THREADS, sizeof(*u->threads)))) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
	}
#endif
	if (!r) {
		u->rings_ready = true;
		return u;
	}
	uprobes_free(u);
	errno = -r;
	return NULL;
}

/* Every event on every CPU for every task: a probe hits only where the
 * program's file is mapped, and the reader keeps the traced tasks' hits
 * (no inheritance, which the kernel does not keep exact when a process's
 * first thread ends before its others). */
static void up_attr(struct perf_event_attr *a, uint32_t tp_id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = tp_id;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
#ifdef UP_REG_SP
	a->sample_type |= PERF_SAMPLE_REGS_USER;
	a->sample_regs_user = UINT64_C(1) << UP_REG_SP;
#endif
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = ((const struct up_id *)a)->perf_id, y = ((const struct up_id *)b)->perf_id;

	return (x > y) - (x < y);
}

/* Room for every probe's descriptor: the soft limit raised to the hard
 * one if needed. */
static int fd_room(size_t need, char *err, size_t errlen)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need + UP_FD_SPARE) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need + UP_FD_SPARE ? need + UP_FD_SPARE
		                                                                                 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need + UP_FD_SPARE) {
		snprintf(err, errlen,
		         "%zu probes need as many descriptors, more than the limit of %llu (ulimit -n): choose fewer "
		         "functions with --dynamic=PATTERNS",
		         need, (unsigned long long)rl.rlim_cur);
		return -EMFILE;
	}
	return 0;
}

/* One event on ring's CPU for every task: tracepoint tp_id, which is
 * function fn's probe (kind UP_FUNC) or a follow tracepoint. */
static int open_event(struct uprobes *u, struct perfring *ring, uint32_t tp_id, uint8_t kind, uint32_t fn, bool exit,
                      char *err, size_t errlen)
{
	struct perf_event_attr attr;
	char what[300];
	uint64_t id;
	int fd, r = 0;

	up_attr(&attr, tp_id);
	fd = perf_open(&attr, -1, ring->cpu);
	if (fd < 0) {
		if (kind == UP_FUNC)
			snprintf(what, sizeof(what), " (%s probe on %s in %s, CPU %d)", exit ? "return" : "entry",
			         u->fn[fn].name, u->path, ring->cpu);
		else
			snprintf(what, sizeof(what), " (sched:%s, CPU %d)", follow_names[kind], ring->cpu);
		perf_open_error(fd, what, err, errlen);
		if (fd == -EACCES || fd == -EPERM) {
			size_t l = strlen(err);

			snprintf(err + l, errlen - l, ": uprobes need root or CAP_PERFMON");
		}
		return fd;
	}
	u->fds[u->nfds++] = fd;
	if (ring->fd < 0)
		r = perfring_map(&u->pr, ring, fd, err, errlen);
	else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) != 0) {
		r = -errno;
		snprintf(err, errlen, "cannot share the CPU %d ring: %s", ring->cpu, strerror(-r));
	}
	if (!r && ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
		r = -errno;
		snprintf(err, errlen, "cannot read a probe's id: %s", strerror(-r));
	}
	if (r)
		return r;
	u->ids[u->nids].perf_id = id;
	u->ids[u->nids].fn = fn;
	u->ids[u->nids].exit = exit;
	u->ids[u->nids++].kind = kind;
	return 0;
}

static int open_events(struct uprobes *u, char *err, size_t errlen)
{
	size_t total = ((size_t)u->nfn * 2 + 3) * (size_t)u->pr.nrings;
	int r = fd_room(total, err, errlen);

	if (r)
		return r;
	u->fds = malloc(total * sizeof(*u->fds));
	u->ids = malloc(total * sizeof(*u->ids));
	if (!u->fds || !u->ids) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int c = 0; !r && c < u->pr.nrings; c++) {
		struct perfring *ring = &u->pr.rings[c];

		/* the followers first: a fork is read before its child's hits */
		for (uint8_t k = UP_FORK; !r && k <= UP_EXIT; k++)
			r = open_event(u, ring, u->follow_id[k], k, 0, false, err, errlen);
		for (uint32_t i = 0; !r && i < u->nfn; i++)
			for (int exit = 0; !r && exit < 2; exit++)
				r = open_event(u, ring, u->tp_id[2 * i + (uint32_t)exit], UP_FUNC, i, exit, err, errlen);
	}
	if (!r)
		qsort(u->ids, u->nids, sizeof(*u->ids), cmp_id);
	return r;
}

int uprobes_attach(struct uprobes *u, pid_t pid, bool at_exec, char *err, size_t errlen)
{
	int r;

	(void)at_exec; /* either way its hits are kept from now on */
	if (tid_add(u, (uint32_t)pid)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (u->opened)
		return 0;
	r = open_events(u, err, errlen);
	u->opened = !r;
	return r;
}

static const struct up_id *id_find(const struct uprobes *u, uint64_t perf_id)
{
	size_t lo = 0, hi = u->nids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->ids[mid].perf_id < perf_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < u->nids && u->ids[lo].perf_id == perf_id ? &u->ids[lo] : NULL;
}

/* The process's slot (made when make; NULL when the table is full). */
static struct up_pid *pid_slot(struct uprobes *u, uint32_t pid, bool make)
{
	uint32_t k = (pid * 2654435761u) % UP_PIDS;

	for (uint32_t n = 0; n < UP_PIDS; n++, k = (k + 1) % UP_PIDS) {
		if (u->pids[k].pid == pid)
			return &u->pids[k];
		if (!u->pids[k].pid) {
			if (!make)
				return NULL;
			u->pids[k].pid = pid;
			return &u->pids[k];
		}
	}
	/* full: the oldest processes are long gone; start over */
	if (!make)
		return NULL;
	memset(u->pids, 0, sizeof(u->pids));
	u->pids[pid % UP_PIDS].pid = pid;
	return &u->pids[pid % UP_PIDS];
}

static struct up_thread *thread_slot(struct uprobes *u, uint32_t tid)
{
	uint32_t k = (tid * 2654435761u) % UP_THREADS;

	if (!u->threads)
		return NULL;
	for (uint32_t n = 0; n < UP_THREADS; n++, k = (k + 1) % UP_THREADS) {
		if (u->threads[k].tid == tid)
			return &u->threads[k];
		if (!u->threads[k].tid) {
			u->threads[k].tid = tid;
			return &u->threads[k];
		}
	}
	return NULL; /* full: longjmps of more threads are not seen */
}

/* An entry at stack pointer sp: frames entered at or below it are gone
 * (a callee's entry is always below its caller's), and the thread's
 * stream is told to how many frames it returned. */
static void entry_unwind(struct uprobes *u, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t sp, uint32_t fn)
{
	struct up_thread *t = thread_slot(u, tid);
	uint32_t depth;

	if (!t)
		return;
	/* frames entered below sp are gone; one entered at sp is gone too
	 * once the stack went up (a longjmp, then a call at that level), but
	 * not when it is the top (a tail call: the callee reuses its frame) */
	depth = t->depth;
	while (depth && t->stack[depth - 1].sp < sp)
		depth--;
	if (depth < t->depth)
		while (depth && t->stack[depth - 1].sp == sp)
			depth--;
	if (depth < t->depth) {
		u->unwound += t->depth - depth;
		t->depth = depth;
		if (u->ops.longjmp)
			u->ops.longjmp(u->ops.ctx, pid, tid, ns, depth);
	}
	if (!t->stack && !(t->stack = malloc(UP_STACK_MAX * sizeof(*t->stack))))
		return;
	if (t->depth < UP_STACK_MAX) {
		t->stack[t->depth].sp = sp;
		t->stack[t->depth++].fn = fn;
	}
}

/* A return of fn: it and the frames above it are done. */
static void exit_unwind(struct uprobes *u, uint32_t tid, uint32_t fn)
{
	struct up_thread *t = thread_slot(u, tid);

	if (!t)
		return;
	for (uint32_t d = t->depth; d > 0; d--)
		if (t->stack[d - 1].fn == fn) {
			t->depth = d - 1;
			return;
		}
}

/* A fork by thread tid of process pid: the child keeps a copy of the
 * thread's frames until its first record says whether it is a process
 * (which inherits them) or a thread (which starts with none). */
static void fork_frames(struct uprobes *u, uint32_t pid, uint32_t tid, uint32_t child, uint64_t ns)
{
	struct up_thread *t = thread_slot(u, tid), *c;

	if (!t || !t->depth)
		return;
	c = thread_slot(u, child);
	if (!c || (!c->stack && !(c->stack = malloc(UP_STACK_MAX * sizeof(*c->stack)))))
		return;
	memcpy(c->stack, t->stack, t->depth * sizeof(*t->stack));
	c->depth = t->depth;
	c->forker = pid;
	c->fork_ns = ns;
}

/* The first record of a forked task: a child process's stream begins
 * with the frames it inherited, entered at the fork (addresses as in the
 * parent: fork keeps the layout). */
static void inherit_frames(struct uprobes *u, struct up_thread *c, uint32_t pid, uint32_t tid)
{
	struct up_pid *parent = pid_slot(u, c->forker, false), *p;
	uint64_t bias = parent ? parent->bias : 0;

	if (pid == c->forker || !parent) {
		c->depth = 0; /* a thread, or a parent never seen entering */
	} else {
		uint64_t frames[UPROBES_INHERIT_MAX];
		uint32_t n = c->depth < UPROBES_INHERIT_MAX ? c->depth : UPROBES_INHERIT_MAX;

		p = pid_slot(u, pid, true);
		p->bias = bias;
		for (uint32_t d = 0; d < n; d++)
			frames[d] = bias + (u->fn[c->stack[d].fn].addr & ~(uint64_t)1);
		if (u->ops.fork)
			u->ops.fork(u->ops.ctx, pid, tid, c->fork_ns, c->forker, frames, n);
	}
	c->forker = 0;
}

/* A follow tracepoint's record of traced task tid (current, at ns). */
static void follow(struct uprobes *u, uint8_t kind, uint32_t pid, uint32_t tid, uint64_t ns, const unsigned char *raw,
                   uint32_t rawlen)
{
	struct up_thread *t;
	uint32_t child;

	switch (kind) {
	case UP_FORK:
		if (u->child_pid.off + 4 <= rawlen) {
			memcpy(&child, raw + u->child_pid.off, 4);
			if (child && tid_add(u, child))
				u->lost++; /* its hits cannot be told from others' */
			else if (child)
				fork_frames(u, pid, tid, child, ns);
		}
		break;
	case UP_EXEC:
		t = thread_slot(u, tid);
		if (t)
			t->depth = 0; /* the old image's frames are gone */
		if (u->ops.exec)
			u->ops.exec(u->ops.ctx, pid, tid, ns);
		break;
	case UP_EXIT:
		tid_remove(u, tid);
		t = thread_slot(u, tid);
		if (t)
			t->depth = 0;
		break;
	}
}

static long up_sample(struct uprobes *u, const unsigned char *body, size_t len)
{
	uint64_t perf_id, ip, ns, addr, abi = 0, sp = 0;
	uint32_t pt[2], rawlen = 0;
	size_t off = UP_SAMPLE_SIZE;
	const struct up_id *id;
	const struct up_fn *f;
	struct up_pid *p;

	if (len < UP_SAMPLE_SIZE)
		return 0;
	memcpy(&perf_id, body, 8);
	memcpy(&ip, body + 8, 8);
	memcpy(pt, body + 16, 8);
	memcpy(&ns, body + UP_SAMPLE_NS, 8);
	/* the raw record (its size, then itself), then the user registers:
	 * their ABI and, unless none, the stack pointer */
	if (off + 4 <= len)
		memcpy(&rawlen, body + off, 4);
	if (rawlen > len - off - 4)
		return 0;
	off += 4 + rawlen;
#ifdef UP_REG_SP
	if (off + 8 <= len) {
		memcpy(&abi, body + off, 8);
		if (abi != PERF_SAMPLE_REGS_ABI_NONE && off + 16 <= len)
			memcpy(&sp, body + off + 8, 8);
		else
			abi = PERF_SAMPLE_REGS_ABI_NONE;
	}
#endif
	id = id_find(u, perf_id);
	if (!id || !tid_find(u, pt[1], false)) {
		u->others += id && id->kind == UP_FUNC;
		return 0;
	}
	if (u->threads) {
		struct up_thread *t = thread_slot(u, pt[1]);

		if (t && t->forker)
			inherit_frames(u, t, pt[0], pt[1]);
	}
	if (id->kind != UP_FUNC) {
		follow(u, id->kind, pt[0], pt[1], ns, body + UP_SAMPLE_SIZE + 4, rawlen);
		return 0;
	}
	f = &u->fn[id->fn];
	if (!id->exit) {
		/* the probe's address in this process: its load bias */
		u->entries++;
		p = pid_slot(u, pt[0], true);
		p->bias = ip - (f->addr & ~(uint64_t)1);
		addr = ip;
		if (abi != PERF_SAMPLE_REGS_ABI_NONE)
			entry_unwind(u, pt[0], pt[1], ns, sp, id->fn);
	} else {
		u->exits++;
		p = pid_slot(u, pt[0], false);
		if (!p) {
			u->unattributed++;
			return 0;
		}
		addr = p->bias + (f->addr & ~(uint64_t)1);
		exit_unwind(u, pt[1], id->fn);
	}
	u->ops.func(u->ops.ctx, pt[0], pt[1], ns, addr, id->exit);
	return 1;
}

static long up_take(void *ctx, struct perfring *ring, const struct perf_event_header *h, const unsigned char *body)
{
	struct uprobes *u = ctx;

	if (h->type == PERF_RECORD_SAMPLE)
		return up_sample(u, body, h->size - sizeof(*h));
	if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		uint64_t count;

		memcpy(&count, body + 8, 8);
		u->lost += count;
		if (u->ops.lost)
			u->ops.lost(u->ops.ctx, (uint32_t)ring->cpu, count);
	}
	return 0;
}

long uprobes_poll(struct uprobes *u)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return perfrings_drain(&u->pr, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, up_take, u);
}

void uprobes_get_stats(const struct uprobes *u, struct uprobes_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->functions = u->nfn;
	st->candidates = u->candidates;
	st->entries = u->entries;
	st->exits = u->exits;
	st->lost = u->lost;
	st->unattributed = u->unattributed;
	st->unwound = u->unwound;
	st->others = u->others;
	st->events = (uint32_t)u->nfds;
	st->skipped = u->skipped;
	st->nskipped = u->nskipped;
}

void uprobes_finish(struct uprobes *u)
{
	if (!u || u->finished)
		return;
	u->finished = true;
	for (size_t i = 0; i < u->nfds; i++)
		ioctl(u->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	perfrings_drain(&u->pr, UINT64_MAX, up_take, u);
}

void uprobes_free(struct uprobes *u)
{
	if (!u)
		return;
	if (u->rings_ready)
		perfrings_release(&u->pr);
	for (size_t i = 0; i < u->nfds; i++)
		close(u->fds[i]);
	/* once no event uses them */
	if (u->group[0])
		tprobes_remove(u->root, "uprobe_events", u->group);
	free(u->tp_id);
	for (uint32_t i = 0; u->threads && i < UP_THREADS; i++)
		free(u->threads[i].stack);
	free(u->threads);
	free(u->tids);
	free(u->fds);
	free(u->ids);
	free(u->fn);
	free(u->skipped);
	elfsyms_free(u->es);
	free(u->path);
	free(u);
}
