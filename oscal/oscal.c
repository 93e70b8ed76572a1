/* layerprof-oscal: times OS and C-library calls in series over their
 * parameters (paper 004's stubs) and prints the raw times as the suite
 * protocol (docs/oscal.md), which `layerprof oscal run` reads.
 *
 * The harness: options, the entry selection, the machine and clock records,
 * the timing loop, and the suite's directory with its cleanup (also on
 * SIGINT/SIGTERM/SIGHUP/SIGPIPE: children killed, the directory removed). */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include "oscal/suite.h"

#define PROTOCOL 1
#define QUICK_REPS 20
#define QUICK_WARMUP 3
#define QUICK_XS 4 /* parameter values of a numeric entry in a quick run */
#define XS_MAX 64  /* parameter values of an entry */
#define DEF_REPS 100
#define DEF_WARMUP 10
#define REPS_MAX 100000
#define OVERHEAD_PAIRS 1001
#define PATTERNS_MAX 64
#define SKIP_MAX 4096 /* --skip names (a resumed run: every entry that ended) */

struct opts {
	int list, quick;
	long reps, warmup;
	double seconds_max; /* per entry; 0: none */
	const char *calls, *skip, *dir;
};

/* ------------------------------------------------------------ cleanup */

/* What a signal's handler removes and kills: set before anything is made. */
static char g_dir[PATH_MAX];
static volatile sig_atomic_t g_dir_set;
static pid_t g_main_pid;
static volatile pid_t g_children[2 * SUITE_TASKS_MAX];
char suite_mq[64];

void suite_child_add(pid_t pid)
{
	for (size_t i = 0; i < sizeof(g_children) / sizeof(g_children[0]); i++)
		if (g_children[i] == 0) {
			g_children[i] = pid;
			return;
		}
}

void suite_child_forget(pid_t pid)
{
	for (size_t i = 0; i < sizeof(g_children) / sizeof(g_children[0]); i++)
		if (g_children[i] == pid)
			g_children[i] = 0;
}

/* The kernel's directory record (getdents64), read with the system call:
 * the removal runs in a signal handler, where opendir may not. */
struct dirent64_raw {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* Removes what dfd holds, directories to depth levels down.  Only system
 * calls: async-signal-safe. */
static void remove_under(int dfd, int depth)
{
	char b[4096] __attribute__((aligned(8)));
	for (int pass = 0; pass < 4; pass++) {
		int removed = 0;
		long n;
		lseek(dfd, 0, SEEK_SET);
		while ((n = syscall(SYS_getdents64, dfd, b, sizeof(b))) > 0) {
			for (long off = 0; off < n;) {
				struct dirent64_raw *d = (struct dirent64_raw *)(void *)(b + off);
				off += d->reclen;
				if (!strcmp(d->name, ".") || !strcmp(d->name, ".."))
					continue;
				if (unlinkat(dfd, d->name, 0) == 0) {
					removed = 1;
					continue;
				}
				if (depth > 0) {
					int sub = openat(dfd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
					if (sub >= 0) {
						remove_under(sub, depth - 1);
						close(sub);
					}
				}
				if (unlinkat(dfd, d->name, AT_REMOVEDIR) == 0)
					removed = 1;
			}
		}
		if (!removed)
			break;
	}
}

static void remove_dir(void)
{
	int dfd;
	if (!g_dir_set)
		return;
	dfd = open(g_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0) {
		remove_under(dfd, 3);
		close(dfd);
	}
	rmdir(g_dir);
	g_dir_set = 0;
}

static void on_signal(int sig)
{
	if (getpid() != g_main_pid) /* a child of an entry: the parent cleans up */
		_exit(128 + sig);
	for (size_t i = 0; i < sizeof(g_children) / sizeof(g_children[0]); i++)
		if (g_children[i] > 0)
			kill(g_children[i], SIGKILL);
	if (suite_mq[0])
		syscall(SYS_mq_unlink, suite_mq + 1);
	remove_dir();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------ the entries */

static const struct {
	const struct suite_def *defs;
	const size_t *n;
} groups[] = {
	{ suite_file, &suite_file_n }, { suite_mem, &suite_mem_n }, { suite_proc, &suite_proc_n },
	{ suite_sync, &suite_sync_n }, { suite_ipc, &suite_ipc_n }, { suite_sig, &suite_sig_n },
	{ suite_time, &suite_time_n },
};

/* Splits a comma-separated list into its words (s is changed). */
static size_t split(char *s, char **out, size_t max)
{
	size_t n = 0;
	for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
		if (*tok)
			out[n++] = tok;
	return n;
}

static int selected(const struct suite_def *d, char **pat, size_t npat, char **skip, size_t nskip)
{
	int match = npat == 0;
	for (size_t i = 0; i < npat && !match; i++)
		match = !fnmatch(pat[i], d->name, 0) || !fnmatch(pat[i], d->call, 0);
	for (size_t i = 0; i < nskip && match; i++)
		match = strcmp(skip[i], d->name) != 0;
	return match;
}

/* The parameter values to run: all, or at most QUICK_XS spread over them. */
static unsigned pick_xs(const struct suite_def *d, int quick, long *out)
{
	static const long none = 0;
	unsigned n = 0;
	if (!d->xs) {
		out[0] = none;
		return 1;
	}
	if (!quick || d->nxs <= QUICK_XS) {
		for (unsigned i = 0; i < d->nxs && i < XS_MAX; i++)
			out[n++] = d->xs[i];
		return n;
	}
	for (unsigned k = 0; k < QUICK_XS; k++) {
		unsigned i = k * (d->nxs - 1) / (QUICK_XS - 1);
		if (n == 0 || out[n - 1] != d->xs[i])
			out[n++] = d->xs[i];
	}
	return n;
}

static const char *dash(const char *s)
{
	return s && *s ? s : "-";
}

/* ------------------------------------------------------------ the records */

static const char *errno_name(int e)
{
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{ EPERM, "EPERM" },
		{ ENOENT, "ENOENT" },
		{ ESRCH, "ESRCH" },
		{ EINTR, "EINTR" },
		{ EIO, "EIO" },
		{ ENXIO, "ENXIO" },
		{ E2BIG, "E2BIG" },
		{ EBADF, "EBADF" },
		{ ECHILD, "ECHILD" },
		{ EAGAIN, "EAGAIN" },
		{ ENOMEM, "ENOMEM" },
		{ EACCES, "EACCES" },
		{ EFAULT, "EFAULT" },
		{ EBUSY, "EBUSY" },
		{ EEXIST, "EEXIST" },
		{ ENODEV, "ENODEV" },
		{ ENOTDIR, "ENOTDIR" },
		{ EISDIR, "EISDIR" },
		{ EINVAL, "EINVAL" },
		{ ENFILE, "ENFILE" },
		{ EMFILE, "EMFILE" },
		{ ENOSPC, "ENOSPC" },
		{ ESPIPE, "ESPIPE" },
		{ EROFS, "EROFS" },
		{ EPIPE, "EPIPE" },
		{ ERANGE, "ERANGE" },
		{ EDEADLK, "EDEADLK" },
		{ ENAMETOOLONG, "ENAMETOOLONG" },
		{ ENOSYS, "ENOSYS" },
		{ ENOTEMPTY, "ENOTEMPTY" },
		{ ELOOP, "ELOOP" },
		{ ETIMEDOUT, "ETIMEDOUT" },
		{ EOPNOTSUPP, "EOPNOTSUPP" },
		{ EAFNOSUPPORT, "EAFNOSUPPORT" },
		{ EADDRINUSE, "EADDRINUSE" },
		{ ECONNREFUSED, "ECONNREFUSED" },
		{ ECONNRESET, "ECONNRESET" },
		{ EMSGSIZE, "EMSGSIZE" },
		{ EOVERFLOW, "EOVERFLOW" },
		{ ENOTSOCK, "ENOTSOCK" },
		{ EPROTONOSUPPORT, "EPROTONOSUPPORT" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	return "EUNKNOWN";
}

/* Not permitted or not available here: a skip, not a failure. */
static int is_unavailable(int e)
{
	return e == EPERM || e == EACCES || e == ENOSYS || e == EOPNOTSUPP || e == EAFNOSUPPORT;
}

/* A field of a record that is not its last: no spaces. */
static void print_word(const char *key, const char *v)
{
	printf(" %s=", key);
	if (!v || !*v) {
		putchar('-');
		return;
	}
	for (; *v; v++)
		putchar((unsigned char)*v > ' ' && *v != 0x7f ? *v : '_');
}

/* The last field: text, without newlines or control characters. */
static void print_text(const char *key, const char *v)
{
	printf(" %s=", key);
	if (!v || !*v) {
		putchar('-');
		return;
	}
	for (; *v; v++)
		putchar((unsigned char)*v >= ' ' && *v != 0x7f ? *v : ' ');
}

static void cpu_model(char *out, size_t len)
{
	static const char *const keys[] = { "model name", "Hardware", "cpu model", "Processor", "cpu" };
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");
	snprintf(out, len, "-");
	if (!f)
		return;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]) && !strcmp(out, "-"); k++) {
		rewind(f);
		while (fgets(line, sizeof(line), f)) {
			size_t kl = strlen(keys[k]);
			char *colon = strchr(line, ':');
			if (strncmp(line, keys[k], kl) || !colon ||
			    (line[kl] != ' ' && line[kl] != '\t' && line[kl] != ':'))
				continue;
			colon++;
			while (*colon == ' ' || *colon == '\t')
				colon++;
			colon[strcspn(colon, "\n")] = 0;
			if (*colon) {
				snprintf(out, len, "%s", colon);
				break;
			}
		}
	}
	fclose(f);
}

static void print_machine(void)
{
	struct utsname u;
	char cpu[160], libc[64];
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
#ifdef __GLIBC__
	snprintf(libc, sizeof(libc), "glibc-%s", gnu_get_libc_version());
#else
	snprintf(libc, sizeof(libc), "unknown");
#endif
	cpu_model(cpu, sizeof(cpu));
	printf("machine");
	print_word("arch", u.machine);
	printf(" cpus=%ld", sysconf(_SC_NPROCESSORS_ONLN));
	print_word("kernel", u.release);
	print_word("libc", libc);
	print_word("host", u.nodename);
	print_text("cpu", cpu);
	putchar('\n');
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The clock's resolution and its overhead: the median of back-to-back
 * read pairs, which the host subtracts from every raw sample. */
static void print_clock(void)
{
	static uint64_t d[OVERHEAD_PAIRS];
	struct timespec res = { 0, 0 };
	clock_getres(CLOCK_MONOTONIC, &res);
	for (int i = 0; i < OVERHEAD_PAIRS; i++) {
		uint64_t t0 = suite_now();
		uint64_t t1 = suite_now();
		d[i] = t1 - t0;
	}
	qsort(d, OVERHEAD_PAIRS, sizeof(d[0]), cmp_u64);
	printf("clock name=monotonic resolution_ns=%lld overhead_ns=%.1f\n",
	       (long long)res.tv_sec * 1000000000LL + res.tv_nsec, (double)d[OVERHEAD_PAIRS / 2]);
}

static void print_entry_line(const char *rec, const struct suite_def *d, long reps, long warmup)
{
	printf("%s %s", rec, d->name);
	print_word("call", d->call);
	print_word("cond", d->cond);
	print_word("group", d->group);
	print_word("param", d->param);
	print_word("unit", d->unit);
	if (reps >= 0)
		printf(" reps=%ld warmup=%ld", reps, warmup);
	print_text("desc", d->desc);
	putchar('\n');
}

static void print_list_line(const struct suite_def *d)
{
	printf("%s %s %s %s %s %s %s\n", d->name, d->call, dash(d->cond), d->group, dash(d->param), dash(d->unit),
	       d->desc);
}

/* ------------------------------------------------------------ running */

enum outcome { RAN_MEASURED, RAN_SKIPPED, RAN_FAILED };

static void print_reason(const char *rec, const struct suite_def *d, int err, const struct suite_ctx *c)
{
	printf("%s %s reason=", rec, d->name);
	if (is_unavailable(err) || c->unavailable)
		printf("%s: %s", c->what ? c->what : d->call, strerror(err));
	else
		printf("%s: %s (%s)", errno_name(err), strerror(err), c->what ? c->what : d->call);
	if (c->why)
		printf(" (%s)", c->why);
	putchar('\n');
}

static enum outcome run_entry(const struct suite_def *d, const struct opts *o, const char *dir, unsigned char *buf,
                              unsigned char *buf2, uint64_t *samples)
{
	long xs[XS_MAX];
	unsigned nx = pick_xs(d, o->quick, xs);
	uint64_t start = suite_now();

	print_entry_line("entry", d, o->reps, o->warmup);
	fflush(stdout); /* the host sees which entry runs (and where a run stopped) */
	for (unsigned k = 0; k < nx; k++) {
		struct suite_ctx c;
		int err = 0;
		long i;

		memset(&c, 0, sizeof(c));
		for (int f = 0; f < SUITE_FDS_MAX; f++)
			c.fd[f] = -1;
		c.def = d;
		c.x = xs[k];
		c.dir = dir;
		c.buf = buf;
		c.buf2 = buf2;
		errno = 0;
		if (d->setup)
			err = d->setup(&c);
		for (i = 0; !err && i < o->warmup + o->reps; i++) {
			uint64_t ns = 0;
			errno = 0;
			err = d->one(&c, &ns);
			if (!err && i >= o->warmup)
				samples[i - o->warmup] = ns;
			if (!err && i + 1 < o->warmup + o->reps && o->seconds_max > 0 &&
			    (double)(suite_now() - start) > o->seconds_max * 1e9) {
				i = -1;
				break;
			}
		}
		if (d->done)
			d->done(&c);
		if (err) {
			int e = -err;
			int skip_it = is_unavailable(e) || c.unavailable;
			print_reason(skip_it ? "skip" : "fail", d, e, &c);
			fflush(stdout);
			return skip_it ? RAN_SKIPPED : RAN_FAILED;
		}
		if (i < 0) {
			printf("skip %s reason=stopped after %u of %u parameter values: over --seconds-max %g\n",
			       d->name, k, nx, o->seconds_max);
			fflush(stdout);
			return RAN_SKIPPED;
		}
		printf("sample %s %ld", d->name, xs[k]);
		for (long r = 0; r < o->reps; r++)
			printf(" %llu", (unsigned long long)samples[r]);
		putchar('\n');
	}
	printf("end %s\n", d->name);
	fflush(stdout);
	return RAN_MEASURED;
}

/* ------------------------------------------------------------ options */

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "layerprof-oscal: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static const char usage_text[] =
    "usage: layerprof-oscal [--calls PATTERNS] [--quick] [--reps N] [--warmup N] [--skip NAMES]\n"
    "                       [--dir DIR] [--list] [--seconds-max S]\n";

static long parse_count(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long n;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < lo || n > hi) {
		fprintf(stderr, "layerprof-oscal: %s must be a whole number from %ld to %ld, not '%s'\n", opt, lo, hi,
		        v);
		exit(2);
	}
	return n;
}

static void parse_options(int argc, char **argv, struct opts *o)
{
	int reps_set = 0, warmup_set = 0;
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = NULL;
		int has_value = !strcmp(a, "--calls") || !strcmp(a, "--skip") || !strcmp(a, "--dir") ||
		                !strcmp(a, "--reps") || !strcmp(a, "--warmup") || !strcmp(a, "--seconds-max");
		if (has_value) {
			if (i + 1 >= argc)
				usage_error("option '%s' needs a value", a);
			v = argv[++i];
		}
		if (!strcmp(a, "--list"))
			o->list = 1;
		else if (!strcmp(a, "--quick"))
			o->quick = 1;
		else if (!strcmp(a, "--calls"))
			o->calls = v;
		else if (!strcmp(a, "--skip"))
			o->skip = v;
		else if (!strcmp(a, "--dir"))
			o->dir = v;
		else if (!strcmp(a, "--reps")) {
			o->reps = parse_count("--reps", v, 1, REPS_MAX);
			reps_set = 1;
		} else if (!strcmp(a, "--warmup")) {
			o->warmup = parse_count("--warmup", v, 0, REPS_MAX);
			warmup_set = 1;
		} else if (!strcmp(a, "--seconds-max")) {
			char *end;
			errno = 0;
			o->seconds_max = strtod(v, &end);
			if (errno || end == v || *end || !(o->seconds_max > 0 && o->seconds_max < 1e6))
				usage_error("--seconds-max must be a positive number of seconds, not '%s'", v);
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			exit(0);
		} else
			usage_error("unknown option '%s' (see --help)", a);
	}
	if (o->dir && !*o->dir)
		usage_error("--dir needs a directory%s", "");
	if (!reps_set)
		o->reps = o->quick ? QUICK_REPS : DEF_REPS;
	if (!warmup_set)
		o->warmup = o->quick ? QUICK_WARMUP : DEF_WARMUP;
}

/* The suite's own directory: a fresh mkdtemp in --dir, $TMPDIR or /tmp. */
static int make_dir(const struct opts *o)
{
	const char *base = o->dir;
	if (!base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if (snprintf(g_dir, sizeof(g_dir), "%s/layerprof-oscal.XXXXXX", base) >= (int)sizeof(g_dir)) {
		fprintf(stderr, "layerprof-oscal: the directory name '%s' is too long\n", base);
		return -1;
	}
	if (!mkdtemp(g_dir)) {
		fprintf(stderr, "layerprof-oscal: cannot make a directory in '%s': %s\n", base, strerror(errno));
		return -1;
	}
	g_dir_set = 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	char *pat[PATTERNS_MAX], *skip[SKIP_MAX];
	char *calls_copy = NULL, *skip_copy = NULL;
	size_t npat = 0, nskip = 0, nsel = 0;
	unsigned char *buf = NULL, *buf2 = NULL;
	uint64_t *samples = NULL;
	unsigned measured = 0, skipped = 0, failed = 0;

	parse_options(argc, argv, &o);
	if (o.calls && !(calls_copy = strdup(o.calls)))
		return 1;
	if (o.skip && !(skip_copy = strdup(o.skip)))
		return 1;
	if (calls_copy)
		npat = split(calls_copy, pat, PATTERNS_MAX);
	if (skip_copy)
		nskip = split(skip_copy, skip, SKIP_MAX);
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (size_t i = 0; i < *groups[g].n; i++)
			nsel += selected(&groups[g].defs[i], pat, npat, NULL, 0);
	if (o.calls && nsel == 0)
		usage_error("no entry matches '%s'", o.calls);

	if (o.list) {
		for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
			for (size_t i = 0; i < *groups[g].n; i++)
				if (selected(&groups[g].defs[i], pat, npat, skip, nskip))
					print_list_line(&groups[g].defs[i]);
		return fflush(stdout) ? 1 : 0;
	}

	g_main_pid = getpid();
	catch_signals();
	buf = malloc(SUITE_BUF_MAX + SUITE_BUF_SLACK);
	buf2 = malloc(SUITE_BUF_MAX + SUITE_BUF_SLACK);
	samples = calloc((size_t)o.reps, sizeof(*samples));
	if (!buf || !buf2 || !samples) {
		fprintf(stderr, "layerprof-oscal: out of memory\n");
		return 1;
	}
	suite_fill(buf, buf2);
	if (make_dir(&o) < 0)
		return 1;

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	printf("layerprof-oscal %d\n", PROTOCOL);
	print_machine();
	print_clock();
	printf("settings quick=%d reps=%ld warmup=%ld", o.quick, o.reps, o.warmup);
	print_text("calls", o.calls);
	putchar('\n');
	fflush(stdout);

	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (size_t i = 0; i < *groups[g].n; i++) {
			const struct suite_def *d = &groups[g].defs[i];
			if (!selected(d, pat, npat, skip, nskip))
				continue;
			switch (run_entry(d, &o, g_dir, buf, buf2, samples)) {
			case RAN_MEASURED:
				measured++;
				break;
			case RAN_SKIPPED:
				skipped++;
				break;
			case RAN_FAILED:
				failed++;
				break;
			}
		}
	printf("done measured=%u skipped=%u failed=%u\n", measured, skipped, failed);
	fflush(stdout);
	remove_dir();
	free(buf);
	free(buf2);
	free(samples);
	free(calls_copy);
	free(skip_copy);
	return 0;
}
