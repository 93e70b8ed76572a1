/* The tracepoint backend of the syscall tracer: raw_syscalls:sys_enter and
 * sys_exit opened through perf_event_open on every online CPU, all events of
 * one CPU writing into one mmap'd ring, which tp_poll reads and merges into
 * time order.  The tracee pays only for the kernel's tracepoint and a short
 * user stack walk; everything else happens in the caller's process. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "systrace/backend.h"

#define TP_DEFAULT_PAGES 256u
#define TP_PAGES_MAX (1u << 16) /* data pages per CPU ring */
#define TP_FILE_MAX 16384u      /* bytes read from a tracefs or sysfs file */
#define TP_FILTER_MAX 3072u     /* longest id filter handed to the kernel */
#define TP_CPUS_MAX 4096        /* CPU numbers above this are ignored */
#define TP_THREADS_MAX 65536u   /* threads of one attached process */
#define TP_ATTACH_SCANS 16      /* passes over /proc/<pid>/task */
#define TP_RECORD_MAX 65536u    /* perf_event_header.size is 16 bits */
#define TP_SAMPLE_HEAD 24u      /* sample body before the callchain: tid, time, nr */
#define TP_NO_TIME 0u

extern char **environ;

static const char *const tp_tracefs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

/* Where a field lies in the tracepoint's raw record (from tracefs). */
struct tp_field {
	uint32_t off, size;
};

struct tp_layout {
	uint32_t enter_id, exit_id;
	struct tp_field type; /* common_type: which tracepoint wrote the record */
	struct tp_field id, args, ret;
};

/* What an older kernel may refuse; dropped one by one on EINVAL. */
enum tp_feature {
	TP_STACK_LIMIT = 1 << 0, /* sample_max_stack (Linux 4.8) */
	TP_LOST_COUNT = 1 << 1,  /* PERF_FORMAT_LOST (Linux 6.0): losses not yet reported by a record */
};

/* One CPU's ring, shared by every event opened on that CPU. */
struct tp_ring {
	int cpu;
	int fd; /* the event that owns the mapping; -1 until opened */
	struct perf_event_mmap_page *page;
	size_t map_len;
	unsigned char *data;
	uint64_t data_size; /* a power of two */
	/* the merge's cursor during one drain */
	uint64_t pos, end;
	uint64_t next_ns;
	uint32_t next_size;
	bool has_next;
	/* attach: the last sample taken from this ring, to drop a twin */
	struct tp_last {
		uint32_t tid, nr;
		uint8_t kind;
		uint64_t val; /* ENTER: args[0] ^ args[1]; EXIT: ret */
	} last;
};

struct tp_state {
	struct tp_layout lay;
	unsigned features;
	bool features_known; /* fixed by the first event the kernel accepted */
	bool attached;       /* twins possible: see tp_attach */
	char *filter;        /* the id filter for the kernel, or NULL */
	enum sys_arch arch;
	size_t page_size;
	uint32_t pages;
	struct tp_ring *rings;
	int nrings;
	int *fds; /* every event, ring owners included */
	size_t nfds, fds_cap;
	uint64_t lost_reported; /* by PERF_RECORD_LOST */
	unsigned char *bounce;  /* TP_RECORD_MAX bytes: a record that wraps the ring end */
	char str[SYSREC_STR_MAX];
};

static int tp_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	long fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

/* Reads a small file whole (at most TP_FILE_MAX - 1 bytes) into buf,
 * NUL-terminated.  Returns 0 or -errno. */
static int tp_read_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	return r;
}

/* Finds `name` among the "field:" lines of a tracefs format file. */
static bool tp_format_field(const char *fmt, const char *name, struct tp_field *f)
{
	size_t nlen = strlen(name);

	for (const char *line = fmt; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *decl = strstr(line, "field:"), *end, *word;
		const char *eol = strchr(line, '\n');
		unsigned off, size;

		if (!decl || (eol && decl > eol))
			continue;
		end = strchr(decl, ';');
		if (!end || (eol && end > eol))
			continue;
		/* the name is the last word of the declaration, before any [n] */
		word = end;
		while (word > decl && word[-1] != ' ' && word[-1] != '\t' && word[-1] != ':')
			word--;
		if ((size_t)(end - word) < nlen || strncmp(word, name, nlen) != 0 ||
		    (word + nlen != end && word[nlen] != '['))
			continue;
		if (sscanf(end, "; offset:%u; size:%u;", &off, &size) != 2 &&
		    sscanf(end, ";\toffset:%u;\tsize:%u;", &off, &size) != 2)
			return false;
		f->off = off;
		f->size = size;
		return true;
	}
	return false;
}

/* Parses one raw_syscalls format file: its tracepoint id and the fields
 * the reader needs.  `ret` is NULL for sys_enter, `args` NULL for sys_exit. */
static int tp_format_load(const char *root, const char *event, uint32_t *tp_id, struct tp_layout *lay, bool enter,
                          char *err, size_t errlen)
{
	char path[256], *fmt = malloc(TP_FILE_MAX);
	const char *idl;
	struct tp_field type, id, more;
	unsigned long v;
	int r;

	if (!fmt) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/events/raw_syscalls/%s/format", root, event);
	r = tp_read_file(path, fmt, TP_FILE_MAX);
	if (r) {
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-r));
		goto out;
	}
	r = -EINVAL;
	idl = strstr(fmt, "\nID: ");
	if (!idl && !strncmp(fmt, "ID: ", 4))
		idl = fmt - 1;
	if (!idl || (v = strtoul(idl + 5, NULL, 10)) == 0 || v > UINT32_MAX) {
		snprintf(err, errlen, "cannot parse '%s': no ID", path);
		goto out;
	}
	*tp_id = (uint32_t)v;
	if (!tp_format_field(fmt, "common_type", &type) || !tp_format_field(fmt, "id", &id) ||
	    !tp_format_field(fmt, enter ? "args" : "ret", &more)) {
		snprintf(err, errlen, "cannot parse '%s': a field is missing", path);
		goto out;
	}
	/* bounded here, so the reader may trust them against a record's size */
	if (type.size != 2 || (id.size != 4 && id.size != 8) ||
	    (enter ? more.size != 24 && more.size != 48 : more.size != 4 && more.size != 8) || type.off > 64 ||
	    id.off > 64 || more.off > 64) {
		snprintf(err, errlen, "cannot parse '%s': unexpected field sizes", path);
		goto out;
	}
	lay->type = type;
	lay->id = id;
	if (enter)
		lay->args = more;
	else
		lay->ret = more;
	r = 0;
out:
	free(fmt);
	return r;
}

/* Finds tracefs (mounting it when we may and it is not mounted) and reads
 * both tracepoints' formats. */
static int tp_layout_load(struct tp_layout *lay, char *err, size_t errlen)
{
	char path[256];
	const char *root = NULL;
	struct tp_layout exit_lay;
	int r;

	for (int pass = 0; pass < 2 && !root; pass++) {
		for (size_t i = 0; i < sizeof(tp_tracefs) / sizeof(tp_tracefs[0]) && !root; i++) {
			snprintf(path, sizeof(path), "%s/events/raw_syscalls/sys_enter/format", tp_tracefs[i]);
			if (!access(path, R_OK))
				root = tp_tracefs[i];
		}
		/* root may mount tracefs; anyone else gets the error below */
		if (!root && pass == 0 && geteuid() == 0 && mount("nodev", tp_tracefs[0], "tracefs", 0, NULL) != 0)
			break;
	}
	if (!root) {
		snprintf(err, errlen, "tracefs not found (raw_syscalls events under %s or %s)", tp_tracefs[0],
		         tp_tracefs[1]);
		return -ENOENT;
	}
	memset(lay, 0, sizeof(*lay));
	r = tp_format_load(root, "sys_enter", &lay->enter_id, lay, true, err, errlen);
	if (!r)
		r = tp_format_load(root, "sys_exit", &lay->exit_id, &exit_lay, false, err, errlen);
	if (r)
		return r;
	/* both records start alike; the reader looks at common_type and id first */
	if (exit_lay.type.off != lay->type.off || exit_lay.id.off != lay->id.off || exit_lay.id.size != lay->id.size) {
		snprintf(err, errlen, "raw_syscalls sys_enter and sys_exit differ in layout");
		return -EINVAL;
	}
	lay->ret = exit_lay.ret;
	return 0;
}

static int tp_paranoid(void)
{
	char buf[32];

	if (tp_read_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)))
		return INT_MIN;
	return atoi(buf);
}

/* One line for a refused perf_event_open; returns r. */
static int tp_open_error(int r, const char *what, char *err, size_t errlen)
{
	int paranoid = tp_paranoid();

	if ((r == -EACCES || r == -EPERM) && paranoid != INT_MIN)
		snprintf(err, errlen, "perf_event_open%s: %s (perf_event_paranoid=%d)", what, strerror(-r), paranoid);
	else
		snprintf(err, errlen, "perf_event_open%s: %s", what, strerror(-r));
	return r;
}

static void tp_attr(struct perf_event_attr *a, const struct tp_layout *lay, unsigned features, bool enter, bool on_exec)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = enter ? lay->enter_id : lay->exit_id;
	a->sample_period = 1;
	/* one layout for both events, so the reader needs no event id: the
	 * exit's callchain is empty (both halves excluded), costing 8 bytes */
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW;
	a->exclude_callchain_kernel = 1;
	a->exclude_callchain_user = !enter;
	if (enter && (features & TP_STACK_LIMIT))
		a->sample_max_stack = SYSREC_IPS_MAX;
	if (features & TP_LOST_COUNT)
		a->read_format = PERF_FORMAT_LOST;
	a->inherit = 1; /* threads and children created from now on */
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* spawn: nothing until the child's exec, nothing of the fork's parent side */
	a->disabled = on_exec;
	a->enable_on_exec = on_exec;
}

/* Opens one event, settling on the first open which optional features
 * the kernel accepts. */
static int tp_open_event(struct tp_state *tp, bool enter, pid_t pid, int cpu, bool on_exec)
{
	struct perf_event_attr attr;
	int fd;

	for (;;) {
		tp_attr(&attr, &tp->lay, tp->features, enter, on_exec);
		fd = tp_perf_open(&attr, pid, cpu);
		if (fd >= 0) {
			tp->features_known = true;
			return fd;
		}
		if (tp->features_known || (fd != -EINVAL && fd != -E2BIG && fd != -EOVERFLOW) || !tp->features)
			return fd;
		if (tp->features & TP_LOST_COUNT)
			tp->features &= ~(unsigned)TP_LOST_COUNT;
		else
			tp->features &= ~(unsigned)TP_STACK_LIMIT;
	}
}

int tp_probe(char *err, size_t errlen)
{
	struct tp_state tp;
	int fd, r;

	memset(&tp, 0, sizeof(tp));
	tp.features = TP_STACK_LIMIT | TP_LOST_COUNT;
	r = tp_layout_load(&tp.lay, err, errlen);
	if (r)
		return r;
	fd = tp_open_event(&tp, true, 0, -1, true);
	if (fd < 0)
		return tp_open_error(fd, "", err, errlen);
	close(fd);
	return 0;
}

/* The online CPUs ("0-3,6"), or 0..n-1 from sysconf when sysfs is
 * missing.  CPUs brought online later are not traced. */
static int tp_cpus(struct tp_state *tp, char *err, size_t errlen)
{
	char buf[1024];
	int cpus[TP_CPUS_MAX], n = 0;

	if (!tp_read_file("/sys/devices/system/cpu/online", buf, sizeof(buf))) {
		for (char *s = buf; *s && *s != '\n';) {
			char *end;
			long a = strtol(s, &end, 10), b = a;

			if (end == s)
				break;
			if (*end == '-') {
				s = end + 1;
				b = strtol(s, &end, 10);
			}
			for (long c = a; c <= b && c >= 0 && c < TP_CPUS_MAX && n < TP_CPUS_MAX; c++)
				cpus[n++] = (int)c;
			s = *end == ',' ? end + 1 : end;
		}
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		for (long i = 0; i < c && i < TP_CPUS_MAX; i++)
			cpus[n++] = (int)i;
	}
	if (!n) {
		snprintf(err, errlen, "no online CPU found");
		return -ENODEV;
	}
	tp->rings = calloc((size_t)n, sizeof(*tp->rings));
	if (!tp->rings) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		tp->rings[i].cpu = cpus[i];
		tp->rings[i].fd = -1;
	}
	tp->nrings = n;
	return 0;
}

/* The kernel-side id filter for the selected syscalls, as ranges:
 * "(id >= 0 && id <= 3) || id == 9".  NULL when every syscall is selected,
 * none is, or the expression would be too long; the reader checks every
 * record against the set in any case. */
static char *tp_filter_expr(const struct sys_set *set)
{
	char *buf;
	size_t len = 0;
	bool all = true, any = false;

	for (uint32_t nr = 0; nr < SYS_NR_MAX; nr++) {
		all = all && sys_set_has(set, nr);
		any = any || sys_set_has(set, nr);
	}
	if (all || !any)
		return NULL;
	buf = malloc(TP_FILTER_MAX);
	if (!buf)
		return NULL;
	for (uint32_t a = 0; a < SYS_NR_MAX; a++) {
		uint32_t b = a;
		int n;

		if (!sys_set_has(set, a))
			continue;
		while (b + 1 < SYS_NR_MAX && sys_set_has(set, b + 1))
			b++;
		if (a == b)
			n = snprintf(buf + len, TP_FILTER_MAX - len, "%sid == %u", len ? " || " : "", a);
		else
			n = snprintf(buf + len, TP_FILTER_MAX - len, "%s(id >= %u && id <= %u)", len ? " || " : "", a,
			             b);
		if (n < 0 || (size_t)n >= TP_FILTER_MAX - len) {
			free(buf);
			return NULL;
		}
		len += (size_t)n;
		a = b;
	}
	return buf;
}

static int tp_keep_fd(struct tp_state *tp, int fd)
{
	if (tp->nfds == tp->fds_cap) {
		size_t cap = tp->fds_cap ? 2 * tp->fds_cap : 64;
		int *fds = realloc(tp->fds, cap * sizeof(*fds));

		if (!fds)
			return -ENOMEM;
		tp->fds = fds;
		tp->fds_cap = cap;
	}
	tp->fds[tp->nfds++] = fd;
	return 0;
}

static int tp_ring_map(struct tp_state *tp, struct tp_ring *ring, int fd, char *err, size_t errlen)
{
	size_t len = (size_t)(tp->pages + 1) * tp->page_size;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		int r = -errno;

		snprintf(err, errlen, "cannot map the CPU %d ring (%u pages): %s", ring->cpu, tp->pages, strerror(-r));
		return r;
	}
	ring->page = p;
	ring->map_len = len;
	if (ring->page->data_size) {
		ring->data = (unsigned char *)p + ring->page->data_offset;
		ring->data_size = ring->page->data_size;
	} else {
		ring->data = (unsigned char *)p + tp->page_size;
		ring->data_size = (uint64_t)tp->pages * tp->page_size;
	}
	ring->fd = fd;
	return 0;
}

/* Opens sys_enter and sys_exit for task `tid` on every CPU, each writing
 * into that CPU's ring.  Returns 0, -ESRCH when the task is gone, or -errno
 * with the reason in err. */
static int tp_open_task(struct tp_state *tp, pid_t tid, bool on_exec, char *err, size_t errlen)
{
	char what[64];

	for (int i = 0; i < tp->nrings; i++) {
		struct tp_ring *ring = &tp->rings[i];

		for (int enter = 1; enter >= 0; enter--) {
			int fd = tp_open_event(tp, enter, tid, ring->cpu, on_exec), r;

			if (fd == -ESRCH)
				return fd;
			if (fd < 0) {
				snprintf(what, sizeof(what), " (task %d, CPU %d)", (int)tid, ring->cpu);
				return tp_open_error(fd, what, err, errlen);
			}
			r = tp_keep_fd(tp, fd);
			if (r) {
				close(fd);
				snprintf(err, errlen, "out of memory");
				return r;
			}
			if (ring->fd < 0) {
				r = tp_ring_map(tp, ring, fd, err, errlen);
			} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) != 0) {
				r = -errno;
				snprintf(err, errlen, "cannot share the CPU %d ring: %s", ring->cpu, strerror(-r));
			}
			if (r)
				return r;
			/* a kernel that refuses the filter costs the tracee more, not
			 * correctness: the reader drops unselected syscalls itself */
			if (tp->filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, tp->filter) != 0) {
				free(tp->filter);
				tp->filter = NULL;
			}
		}
	}
	return 0;
}

static void tp_state_free(struct tp_state *tp)
{
	if (!tp)
		return;
	for (int i = 0; i < tp->nrings; i++)
		if (tp->rings[i].page)
			munmap(tp->rings[i].page, tp->rings[i].map_len);
	for (size_t i = 0; i < tp->nfds; i++)
		close(tp->fds[i]);
	free(tp->fds);
	free(tp->rings);
	free(tp->filter);
	free(tp->bounce);
	free(tp);
}

static struct tp_state *tp_state_new(const struct systrace *st, int *res, char *err, size_t errlen)
{
	struct tp_state *tp = calloc(1, sizeof(*tp));
	uint32_t pages = st->cfg.buffer_pages ? st->cfg.buffer_pages : TP_DEFAULT_PAGES;
	long page_size = sysconf(_SC_PAGESIZE);
	int r;

	if (!tp || !(tp->bounce = malloc(TP_RECORD_MAX))) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	if (pages & (pages - 1) || pages > TP_PAGES_MAX) {
		snprintf(err, errlen, "buffer size %u pages: not a power of two up to %u", pages, TP_PAGES_MAX);
		r = -EINVAL;
		goto fail;
	}
	tp->pages = pages;
	tp->page_size = page_size > 0 ? (size_t)page_size : 4096;
	tp->arch = sys_arch_native();
	tp->features = TP_STACK_LIMIT | TP_LOST_COUNT;
	r = tp_layout_load(&tp->lay, err, errlen);
	if (!r)
		r = tp_cpus(tp, err, errlen);
	if (r)
		goto fail;
	tp->filter = tp_filter_expr(&st->cfg.filter);
	return tp;
fail:
	tp_state_free(tp);
	*res = r;
	return NULL;
}

int tp_spawn(struct systrace *st, char *const argv[], char *const envp[], pid_t *pid, char *err, size_t errlen)
{
	struct tp_state *tp;
	int sv[2], r = 0, child_errno = 0;
	pid_t child;
	ssize_t n;

	tp = tp_state_new(st, &r, err, errlen);
	if (!tp)
		return r;
	/* the child waits for one byte, then execs; a failed exec sends its
	 * errno back, a successful one closes the child's end (close-on-exec).
	 * A socket, not a pipe: MSG_NOSIGNAL spares us SIGPIPE. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		r = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(-r));
		tp_state_free(tp);
		return r;
	}
	child = fork();
	if (child < 0) {
		r = -errno;
		snprintf(err, errlen, "fork: %s", strerror(-r));
		close(sv[0]);
		close(sv[1]);
		tp_state_free(tp);
		return r;
	}
	if (child == 0) {
		char go;

		close(sv[0]);
		do
			n = read(sv[1], &go, 1);
		while (n < 0 && errno == EINTR);
		if (n == 1) {
			execvpe(argv[0], argv, envp ? envp : environ);
			child_errno = errno;
			if (send(sv[1], &child_errno, sizeof(child_errno), MSG_NOSIGNAL) < 0)
				_exit(126);
		}
		_exit(127);
	}
	close(sv[1]);
	r = tp_open_task(tp, child, true, err, errlen);
	if (r == -ESRCH)
		snprintf(err, errlen, "the child died before exec");
	if (!r && send(sv[0], "x", 1, MSG_NOSIGNAL) != 1) {
		r = -errno;
		snprintf(err, errlen, "cannot start the child: %s", strerror(-r));
	}
	if (!r) {
		do
			n = recv(sv[0], &child_errno, sizeof(child_errno), MSG_WAITALL);
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof(child_errno)) {
			r = child_errno > 0 ? -child_errno : -ENOEXEC;
			snprintf(err, errlen, "cannot run '%s': %s", argv[0], strerror(-r));
		}
	}
	close(sv[0]);
	if (r) {
		kill(child, SIGKILL);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		tp_state_free(tp);
		return r;
	}
	*pid = child;
	st->impl = tp;
	return 0;
}

static int tp_cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* One pass over /proc/<pid>/task: opens the events of every thread not in
 * tids yet.  Returns the number of threads added, or -errno. */
static long tp_attach_scan(struct tp_state *tp, pid_t pid, pid_t *tids, size_t *ntids, char *err, size_t errlen)
{
	char path[64];
	struct dirent *de;
	long added = 0;
	DIR *dir;
	size_t known = *ntids;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir) {
		int r = -errno;

		snprintf(err, errlen, "cannot list '%s': %s", path, strerror(-r));
		return r;
	}
	while ((de = readdir(dir))) {
		long v = strtol(de->d_name, NULL, 10);
		pid_t tid = (pid_t)v;
		int r;

		if (v <= 0 || bsearch(&tid, tids, known, sizeof(*tids), tp_cmp_tid))
			continue;
		if (*ntids == TP_THREADS_MAX) {
			snprintf(err, errlen, "process %d has more than %u threads", (int)pid, TP_THREADS_MAX);
			added = -E2BIG;
			break;
		}
		r = tp_open_task(tp, tid, false, err, errlen);
		if (r == -ESRCH) /* the thread ended meanwhile */
			continue;
		if (r) {
			added = r;
			break;
		}
		tids[(*ntids)++] = tid;
		added++;
	}
	closedir(dir);
	qsort(tids, *ntids, sizeof(*tids), tp_cmp_tid);
	return added;
}

/* Every thread gets its own events (with inherit, so threads and children
 * it creates later are followed); threads created while we scan are caught
 * by scanning again until a pass finds none new.  A thread created during
 * the scan by one whose events were open already has inherited them, and
 * gets its own as well: each of its calls is then written twice, back to
 * back in the same ring, and the reader drops the twin (tp_twin).  Costs 2
 * descriptors per thread and CPU. */
int tp_attach(struct systrace *st, pid_t pid, char *err, size_t errlen)
{
	struct tp_state *tp;
	pid_t *tids = NULL;
	size_t ntids = 0;
	long added = 0;
	int r = 0, scan;

	tp = tp_state_new(st, &r, err, errlen);
	if (!tp)
		return r;
	tp->attached = true;
	tids = malloc(TP_THREADS_MAX * sizeof(*tids));
	if (!tids) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	for (scan = 0; scan < TP_ATTACH_SCANS; scan++) {
		added = tp_attach_scan(tp, pid, tids, &ntids, err, errlen);
		if (added <= 0)
			break;
	}
	if (added < 0)
		r = (int)added;
	else if (!ntids) {
		snprintf(err, errlen, "process %d has no threads left", (int)pid);
		r = -ESRCH;
	}
out:
	free(tids);
	if (r)
		tp_state_free(tp);
	else
		st->impl = tp;
	return r;
}

static void tp_ring_copy(const struct tp_ring *ring, uint64_t pos, void *dst, size_t len)
{
	size_t off = (size_t)(pos & (ring->data_size - 1));
	size_t first = ring->data_size - off < len ? (size_t)(ring->data_size - off) : len;

	memcpy(dst, ring->data + off, first);
	memcpy((unsigned char *)dst + first, ring->data, len - first);
}

/* Looks at the record at the ring's cursor: its size and time.  Records
 * later than `limit` stay in the ring for the next drain. */
static void tp_ring_peek(struct tp_ring *ring, uint64_t limit)
{
	struct perf_event_header h;
	uint64_t ns = TP_NO_TIME;

	ring->has_next = false;
	if (ring->end - ring->pos < sizeof(h))
		return;
	tp_ring_copy(ring, ring->pos, &h, sizeof(h));
	if (h.size < sizeof(h) || h.size % 8 || h.size > ring->end - ring->pos) {
		/* cannot happen with a sane kernel; resynchronise at the head */
		ring->pos = ring->end;
		return;
	}
	/* sample: tid, then time; the others end with sample_id (tid, time) */
	if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 16)
		tp_ring_copy(ring, ring->pos + sizeof(h) + 8, &ns, sizeof(ns));
	else if ((h.type == PERF_RECORD_LOST || h.type == PERF_RECORD_THROTTLE || h.type == PERF_RECORD_UNTHROTTLE) &&
	         h.size >= sizeof(h) + 16)
		tp_ring_copy(ring, ring->pos + h.size - 8, &ns, sizeof(ns));
	if (ns > limit)
		return;
	ring->next_ns = ns;
	ring->next_size = h.size;
	ring->has_next = true;
}

/* Little helpers for the raw record, whose fields are only 4-byte aligned. */
static uint64_t tp_get_u(const unsigned char *p, uint32_t size)
{
	uint32_t v32;
	uint64_t v64;

	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

static int64_t tp_get_s(const unsigned char *p, uint32_t size)
{
	int32_t v32;
	int64_t v64;

	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

/* Copies the path argument from the tracee, now: the call began earlier,
 * so the memory may have changed (str_late).  A process that is gone
 * leaves the record without its path.  The read is split at the page end
 * so that a path near an unmapped page still comes through. */
static void tp_read_path(struct tp_state *tp, struct sysrec *rec)
{
	const struct sys_info *info = sys_info((enum sys_arch)rec->arch, rec->nr);
	struct iovec local, remote[2];
	uint64_t addr = 0;
	size_t first;
	ssize_t n;

	if (!info)
		return;
	for (int i = 0; i < 6 && i < info->nargs; i++)
		if (info->arg[i] == SYS_ARG_PATH) {
			addr = rec->args[i];
			break;
		}
	if (!addr || addr > UINTPTR_MAX)
		return;
	first = tp->page_size - (size_t)(addr % tp->page_size);
	if (first > SYSREC_STR_MAX)
		first = SYSREC_STR_MAX;
	local.iov_base = tp->str;
	local.iov_len = SYSREC_STR_MAX;
	remote[0].iov_base = (void *)(uintptr_t)addr;
	remote[0].iov_len = first;
	remote[1].iov_base = (void *)(uintptr_t)(addr + first);
	remote[1].iov_len = SYSREC_STR_MAX - first;
	n = process_vm_readv((pid_t)rec->pid, &local, 1, remote, first < SYSREC_STR_MAX ? 2 : 1, 0);
	if (n <= 0)
		return;
	rec->str = tp->str;
	rec->str_len = (uint32_t)strnlen(tp->str, (size_t)n);
	rec->str_late = true;
}

/* A sample of either tracepoint: body is the record after its header. */
static bool tp_sample(struct systrace *st, struct tp_state *tp, const unsigned char *body, size_t len,
                      struct sysrec *rec)
{
	const struct tp_layout *lay = &tp->lay;
	const unsigned char *raw;
	uint64_t nchain, type;
	uint32_t raw_size;
	size_t at;
	int64_t id;
	bool enter;

	if (len < TP_SAMPLE_HEAD)
		return false;
	memset(rec, 0, sizeof(*rec));
	memcpy(&rec->pid, body, 4);
	memcpy(&rec->tid, body + 4, 4);
	memcpy(&rec->ns, body + 8, 8);
	memcpy(&nchain, body + 16, 8);
	if (nchain > (len - TP_SAMPLE_HEAD) / 8)
		return false;
	at = TP_SAMPLE_HEAD + (size_t)nchain * 8;
	if (len - at < 4)
		return false;
	memcpy(&raw_size, body + at, 4);
	raw = body + at + 4;
	if (raw_size > len - at - 4 || raw_size < lay->id.off + lay->id.size ||
	    raw_size < lay->type.off + lay->type.size)
		return false;
	type = tp_get_u(raw + lay->type.off, 4) & 0xffff;
	if (type != lay->enter_id && type != lay->exit_id)
		return false;
	enter = type == lay->enter_id;
	id = tp_get_s(raw + lay->id.off, lay->id.size);
	/* -1: no syscall (e.g. a tracer skipped it); the reader filters too */
	if (id < 0 || !sys_set_has(&st->cfg.filter, (uint32_t)id))
		return false;
	rec->kind = enter ? SYSREC_ENTER : SYSREC_EXIT;
	rec->arch = (uint8_t)tp->arch;
	rec->nr = (uint32_t)id;
	if (enter) {
		uint32_t asize = lay->args.size / 6;

		if (raw_size < lay->args.off + lay->args.size)
			return false;
		for (int i = 0; i < 6; i++)
			rec->args[i] = tp_get_u(raw + lay->args.off + (size_t)i * asize, asize);
		/* PERF_CONTEXT_USER and friends mark where the user part begins */
		for (uint64_t i = 0; i < nchain && rec->nips < SYSREC_IPS_MAX; i++) {
			uint64_t ip;

			memcpy(&ip, body + TP_SAMPLE_HEAD + i * 8, 8);
			if (ip < PERF_CONTEXT_MAX)
				rec->ips[rec->nips++] = ip;
		}
	} else {
		if (raw_size < lay->ret.off + lay->ret.size)
			return false;
		rec->ret = tp_get_s(raw + lay->ret.off, lay->ret.size);
	}
	return true;
}

/* Is rec the twin of the sample just before it in the same ring: the
 * same hit written by two events of one thread (see tp_attach).  One
 * thread's calls alternate between entry and exit, so an entry directly
 * after the same entry cannot be a new call, except for calls that have no
 * exit record (signal returns) entered again with the same arguments
 * before anything else in this ring: rare enough to accept. */
static bool tp_twin(struct tp_state *tp, struct tp_ring *ring, const struct sysrec *rec)
{
	struct tp_last now = { rec->tid, rec->nr, rec->kind,
		               rec->kind == SYSREC_ENTER ? rec->args[0] ^ rec->args[1] : (uint64_t)rec->ret };
	bool twin;

	if (!tp->attached)
		return false;
	twin = ring->last.tid == now.tid && ring->last.nr == now.nr && ring->last.kind == now.kind &&
	       ring->last.val == now.val;
	ring->last = now;
	return twin;
}

/* Hands out the record at the ring's cursor and moves past it. */
static long tp_ring_take(struct systrace *st, struct tp_state *tp, struct tp_ring *ring)
{
	size_t off = (size_t)(ring->pos & (ring->data_size - 1));
	const unsigned char *p = ring->data + off;
	struct perf_event_header h;
	struct sysrec rec;
	long n = 0;

	if (off + ring->next_size > ring->data_size) {
		tp_ring_copy(ring, ring->pos, tp->bounce, ring->next_size);
		p = tp->bounce;
	}
	memcpy(&h, p, sizeof(h));
	if (h.type == PERF_RECORD_SAMPLE) {
		if (tp_sample(st, tp, p + sizeof(h), h.size - sizeof(h), &rec) && !tp_twin(tp, ring, &rec)) {
			if (rec.kind == SYSREC_ENTER)
				tp_read_path(tp, &rec);
			st->ops.sys(st->ops.ctx, &rec);
			st->stats.records++;
			n = 1;
		}
	} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
		uint64_t count;
		uint32_t pid = 0, tid = 0;

		memcpy(&count, p + sizeof(h) + 8, 8);
		if (h.size >= sizeof(h) + 32) {
			memcpy(&pid, p + h.size - 16, 4);
			memcpy(&tid, p + h.size - 12, 4);
		}
		tp->lost_reported += count;
		st->stats.lost += count;
		if (st->ops.lost)
			st->ops.lost(st->ops.ctx, pid, tid, count);
	}
	ring->pos += ring->next_size;
	return n;
}

/* Hands out every record up to `limit` (ns) from all rings, merged by
 * time: each ring is in time order already, so a merge that takes the
 * earliest head (the lower CPU on ties) gives the sorted, stable order
 * without copying the records.  Threads migrate between CPUs, which is why
 * per thread order needs the merge.  O(records × CPUs). */
static long tp_drain(struct systrace *st, struct tp_state *tp, uint64_t limit)
{
	long n = 0;

	for (int i = 0; i < tp->nrings; i++) {
		struct tp_ring *ring = &tp->rings[i];

		if (!ring->page)
			continue;
		ring->end = __atomic_load_n(&ring->page->data_head, __ATOMIC_ACQUIRE);
		ring->pos = ring->page->data_tail;
		tp_ring_peek(ring, limit);
	}
	for (;;) {
		struct tp_ring *best = NULL;

		for (int i = 0; i < tp->nrings; i++) {
			struct tp_ring *ring = &tp->rings[i];

			if (ring->has_next && (!best || ring->next_ns < best->next_ns))
				best = ring;
		}
		if (!best)
			break;
		n += tp_ring_take(st, tp, best);
		tp_ring_peek(best, limit);
	}
	for (int i = 0; i < tp->nrings; i++)
		if (tp->rings[i].page)
			__atomic_store_n(&tp->rings[i].page->data_tail, tp->rings[i].pos, __ATOMIC_RELEASE);
	return n;
}

/* Records are handed out only up to the time the poll began.  A record
 * written earlier is complete by then, and a thread's earlier records
 * complete before its later ones begin; so a record of a thread that
 * moved to a CPU whose ring we read later cannot overtake one still being
 * written on the CPU it left. */
long tp_poll(struct systrace *st)
{
	struct tp_state *tp = st->impl;
	struct timespec now;

	if (!tp)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return tp_drain(st, tp, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
}

/* Losses the kernel counted but reported in no record: a full ring emits
 * its PERF_RECORD_LOST only with the next record that fits, which never
 * comes once the traced program has ended.  PERF_FORMAT_LOST reads each
 * event's count (losses of inherited events are counted on ours). */
static void tp_report_unseen_losses(struct systrace *st, struct tp_state *tp)
{
	uint64_t total = 0, v[2];

	if (!(tp->features & TP_LOST_COUNT))
		return;
	for (size_t i = 0; i < tp->nfds; i++)
		if (read(tp->fds[i], v, sizeof(v)) == (ssize_t)sizeof(v))
			total += v[1];
	if (total <= tp->lost_reported)
		return;
	st->stats.lost += total - tp->lost_reported;
	if (st->ops.lost)
		st->ops.lost(st->ops.ctx, 0, 0, total - tp->lost_reported);
	tp->lost_reported = total;
}

void tp_release(struct systrace *st)
{
	struct tp_state *tp = st->impl;

	if (!tp)
		return;
	tp_drain(st, tp, UINT64_MAX);
	tp_report_unseen_losses(st, tp);
	tp_state_free(tp);
	st->impl = NULL;
}
