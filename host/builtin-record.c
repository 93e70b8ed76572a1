/* layerprof record: runs a program with the runtime preloaded, drains its
 * rings while it runs and writes the trace directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/clocksync.h"
#include "common/exepath.h"
#include "common/drain.h"
#include "common/progpath.h"
#include "common/sessiondir.h"
#include "common/sysevent.h"
#include "common/systab.h"
#include "host/builtin.h"
#include "host/lib/trace/classify.h"
#include "host/lib/trace/dir.h"
#include "host/lib/trace/file.h"
#include "host/lib/trace/recording.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/options.h"
#include "lp_arch.h"
#include "lp_version.h"
#include "runtime/memtrace.h"
#include "systrace/systrace.h"

#define RECORD_DEFAULT_OUTPUT "layerprof.data"
/* A full ring makes the program wait for the drain (LP_RING_FULL_WAIT), so
 * the ring only has to absorb the drain's pauses, not a whole burst: a
 * small one keeps the program's memory and page faults low.  Per thread,
 * in shared memory. */
#define RECORD_DEFAULT_BUFFER (1u << 20)
/* With --memory: every malloc and free is two ring slots or more. */
#define RECORD_MEM_DEFAULT_BUFFER (4u << 20)
/* Kernel buffer per CPU of the syscall tracer (bpf: one ring buffer of
 * this size times the CPUs; tracepoint: a perf ring per CPU).  The kernel
 * cannot make a program wait for room, so the buffer must cover the
 * recorder's pauses: 16M holds about 65k calls with their stacks, some
 * 50 ms of a program that does nothing but system calls. */
#define RECORD_SYSCALL_BUFFER (16u << 20)
#define RECORD_SYSCALL_BUFFER_MIN (64u << 10)
#define RECORD_SYSCALL_BUFFER_MAX (256u << 20)
#define RECORD_CHUNK_SLOTS 4096u
#define RECORD_POLL_MIN_US 500
#define RECORD_POLL_MAX_US 5000
/* A stream's partial chunk is written when it has not filled one for this
 * long: a killed recorder loses at most twice this of a quiet program. */
#define RECORD_FLUSH_NS 100000000ull
#define RECORD_MEM_LIB "liblayerprof-mem.so"

static const char record_usage[] =
    "usage: layerprof record [options] [--] <program> [<args>]\n"
    "\n"
    "Runs <program> with the layerprof runtime and records the calls of its\n"
    "functions built with -finstrument-functions (or linked with -llayerprof).\n"
    "The exit status of the program is passed through, whatever happens to\n"
    "the recording (a full disk stops tracing; the program runs on).\n"
    "\n"
    "  -o, --output DIR      trace directory (default " RECORD_DEFAULT_OUTPUT "; an old one\n"
    "                        is kept as DIR.old)\n"
    "  -b, --buffer-size SZ  ring buffer per thread (default 1M, with --memory 4M;\n"
    "                        128K to 256M)\n"
    "      --discard         when a ring is full, drop events (counted) instead of\n"
    "                        making the program wait for the recorder; by default\n"
    "                        it waits, so that the trace is complete\n"
    "      --clock KIND      event clock: auto, counter (TSC/CNTVCT), monotonic\n"
    "  -q, --quiet           no summary line\n"
    "  -s, --syscalls[=HOW]  also record system calls; HOW: auto (default: the\n"
    "                        first that works of bpf, tracepoint, ptrace), bpf,\n"
    "                        tracepoint, ptrace\n"
    "      --syscall-buffer SZ  kernel buffer per CPU for --syscalls=bpf (one ring\n"
    "                        buffer for all CPUs, at most 256M) and tracepoint\n"
    "                        (default 16M; 64K to 256M); the kernel drops records\n"
    "                        (counted) when the recorder falls this far behind\n"
    "      --syscall-filter LIST  only these syscalls: names and globs, e.g.\n"
    "                        'read,write,open*'; '!name' leaves one out\n"
    "      --keep-running    ptrace: if recording is interrupted, leave the program\n"
    "                        running (every syscall then stops it, not only the\n"
    "                        selected ones); by default it is killed\n"
    "  -m, --memory          also record heap operations (malloc, free, new, delete,\n"
    "                        ... with their call stacks) by preloading\n"
    "                        " RECORD_MEM_LIB "; no rebuild needed\n"
    "      --mem-depth N     frames per heap call stack (default 16, 1 to 64)\n"
    "      --keep-alive      an illegal release (a pointer never allocated, already\n"
    "                        released, or inside a block) is recorded and not passed\n"
    "                        to libc, so the program goes on instead of aborting\n"
    "      --mem-fold DUR    blocks released within DUR (e.g. 1ms), by any thread, are\n"
    "                        only counted, per call stack, not recorded one by one,\n"
    "                        so that an endless run of short-lived blocks does not\n"
    "                        grow the trace (default: off)\n" FILTER_HELP_FUNCS "  -h, --help            this text\n"
    "\n"
    "A recorder killed with SIGKILL leaves a trace that ends at most some 200 ms\n"
    "before it died; `layerprof recover DIR` adds what its rings still hold.\n";

static volatile sig_atomic_t stop_requests;
static volatile sig_atomic_t forward_signal;

/* The heap interposers' library lies next to the runtime. */
static int find_mem_lib(const char *runtime, char *out, size_t size)
{
	const char *slash = strrchr(runtime, '/');
	int n;

	if (!slash)
		return -ENOENT;
	n = snprintf(out, size, "%.*s/%s", (int)(slash - runtime), runtime, RECORD_MEM_LIB);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return access(out, R_OK) ? -errno : 0;
}

/* A file size limit (RLIMIT_FSIZE) makes a write fail with EFBIG instead
 * of killing the recorder; a handler, not SIG_IGN, so that the program
 * does not inherit the signal ignored. */
static void on_xfsz(int sig)
{
}

static void on_signal(int sig)
{
	if (sig == SIGINT)
		stop_requests++;
	else
		forward_signal = sig;
}

struct recorder {
	struct tracefile tf;
	int dirfd;   /* the trace directory */
	int note_fd; /* its TRACEDIR_RECORDING, or -1 */
	struct recording note;
	const char *out;
	struct symbolizer *sym;
	struct classifier *cls;
	struct filter_spec spec;
	struct filter_opts fopts;
	struct drain *d;
	struct systrace *st;
};

static int note_release_reserve(void *ctx)
{
	struct recorder *rec = ctx;

	return rec->note_fd >= 0 ? recording_release_reserve(rec->note_fd, &rec->note) : 0;
}

/* A chunk for the trace.  Once a write fails (full disk, quota, size
 * limit) tracing is turned off in the program, which runs on; the drain
 * still empties the rings, and what it hands over is counted as not
 * written (trace/file.h).  Never fails: the drain must go on. */
static int on_chunk(void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	struct recorder *rec = ctx;
	int r;

	if (type == LP_CHUNK_END) {
		r = tracefile_end(&rec->tf, (const char *)payload, len);
		if (r)
			fprintf(stderr,
			        "layerprof record: cannot end trace '%s': %s: it ends at its last whole chunk\n",
			        rec->out, strerror(-r));
		return 0;
	}
	r = tracefile_write(&rec->tf, type, payload, len, events);
	if (r < 0) {
		drain_set_enabled(rec->d, false);
		fprintf(stderr, "layerprof record: cannot write trace '%s': %s: tracing stopped, the program runs on\n",
		        rec->out, strerror(-r));
	}
	return 0;
}

static void on_map(void *ctx, uint32_t image, const struct lp_event *ev)
{
	struct recorder *rec = ctx;

	if (rec->sym)
		symbolizer_add_map(rec->sym, image, ev->base, ev->start, ev->end, ev->offset, ev->build_id,
		                   ev->build_id_len, ev->str, ev->str_len);
}

static void on_unmap(void *ctx, uint32_t image, uint64_t ns, uint64_t start, uint64_t end)
{
	struct recorder *rec = ctx;

	if (rec->sym)
		symbolizer_end_map(rec->sym, image, start, end, ns);
}

/* Record-time patterns: a function is named by what is mapped at its
 * address now (after a dlclose, another object may be). */
static unsigned record_classify(void *ctx, uint32_t image, uint64_t addr)
{
	struct recorder *rec = ctx;

	return classifier_classify(rec->cls, image, symbolizer_code_addr(rec->sym, image, addr, UINT64_MAX - 1));
}

/* Syscall records from the tracer go into the drain, which merges them
 * into the threads' streams.  Runs inside drain_poll (ops.collect). */
static void on_sysrec(void *ctx, const struct sysrec *r)
{
	struct recorder *rec = ctx;
	struct sysevent ev;

	sysrec_to_event(r, &ev);
	drain_syscall(rec->d, r->pid, r->tid, r->ns, &ev);
}

static void on_syslost(void *ctx, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct recorder *rec = ctx;

	drain_syscalls_lost(rec->d, pid, tid, count);
}

static void on_collect(void *ctx)
{
	struct recorder *rec = ctx;

	if (rec->st)
		systrace_poll(rec->st);
}

/* The environment of the program: the caller's, with the session and the
 * runtime preloaded.  Returns a malloc'd array whose last two entries are
 * malloc'd too (free with env_free); the others are borrowed from environ. */
static void env_free(char **env)
{
	size_t n = 0;

	if (!env)
		return;
	while (env[n])
		n++;
	if (n >= 2) {
		free(env[n - 2]);
		free(env[n - 1]);
	}
	free(env);
}

static char **program_env(const char *session, const char *lib)
{
	extern char **environ;
	size_t n = 0, i, j = 0;
	const char *old = NULL;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++) {
		if (!strncmp(environ[i], "LD_PRELOAD=", 11)) {
			old = environ[i] + 11;
			continue;
		}
		if (!strncmp(environ[i], LP_ENV_SESSION "=", strlen(LP_ENV_SESSION) + 1))
			continue;
		env[j++] = environ[i];
	}
	if (asprintf(&env[j], "%s=%s", LP_ENV_SESSION, session) < 0) {
		free(env);
		return NULL;
	}
	j++;
	if (asprintf(&env[j], "LD_PRELOAD=%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "") < 0) {
		free(env[j - 1]);
		free(env);
		return NULL;
	}
	return env;
}

/* Where the runtime library is: $LAYERPROF_LIB, next to an installed
 * layerprof (../lib), or in the build tree (../runtime). */
static int find_runtime(char *out, size_t size)
{
	const char *env = getenv("LAYERPROF_LIB");

	if (env && *env) {
		if (access(env, R_OK))
			return -errno;
		snprintf(out, size, "%s", env);
		return 0;
	}
	return exepath_runtime(layerprof_exe_dir(), out);
}

struct mem_opts {
	bool on;
	bool keep_alive;
	unsigned depth;
	uint64_t fold_ns;
};

static int write_meta(struct recorder *rec, int argc, char **argv, uint32_t clock, uint64_t buffer, uint32_t ring_full,
                      bool syscalls, const struct mem_opts *mem)
{
	char meta[8192];
	struct utsname u;
	size_t n = 0;
	int i;

	uname(&u);
	n +=
	    (size_t)snprintf(meta + n, sizeof(meta) - n,
	                     "layerprof=" LP_VERSION "\nhost=%s\nkernel=%s\narch=%s\nclock=%s\nbuffer_size=%llu\n"
	                     "ring_full=%s\nstart_monotonic_ns=%llu\nstart_realtime=%lld\nfiltered=%d\n",
	                     u.nodename, u.release, LP_ARCH_NAME, clock == LP_CLOCK_MONOTONIC ? "monotonic" : "counter",
	                     (unsigned long long)buffer, ring_full == LP_RING_FULL_WAIT ? "wait" : "discard",
	                     (unsigned long long)clocksync_monotonic_ns(), (long long)time(NULL),
	                     options_filter_any(&rec->fopts) ? 1 : 0);
	if (syscalls)
		n +=
		    (size_t)snprintf(meta + n, sizeof(meta) - n, "syscall_arch=%s\n", sys_arch_name(sys_arch_native()));
	if (mem->on)
		n += (size_t)snprintf(meta + n, sizeof(meta) - n,
		                      "memory=1\nmem_depth=%u\nmem_keep_alive=%d\nmem_fold_ns=%llu\n", mem->depth,
		                      mem->keep_alive ? 1 : 0, (unsigned long long)mem->fold_ns);
	/* the command last: it runs to the end of its line */
	n += (size_t)snprintf(meta + n, sizeof(meta) - n, "command=");
	for (i = 0; i < argc && n < sizeof(meta) - 2; i++) {
		const char *a = argv[i];

		if (i)
			meta[n++] = ' ';
		while (*a && n < sizeof(meta) - 2) {
			char c = *a++;
			meta[n++] = (c == '\n') ? ' ' : c;
		}
	}
	meta[n++] = '\n';
	return tracefile_write(&rec->tf, LP_CHUNK_META, meta, n, 0);
}

/* The clock the runtime should use: the architecture's counter when the
 * kernel's own clocksource trusts it (x86: "tsc"), else CLOCK_MONOTONIC. */
static uint32_t choose_clock(const char *want)
{
	char cs[64] = "";
	FILE *f;

	if (want && !strcmp(want, "monotonic"))
		return LP_CLOCK_MONOTONIC;
	if (LP_ARCH_COUNTER == LP_CLOCK_MONOTONIC)
		return LP_CLOCK_MONOTONIC;
	if (want && !strcmp(want, "counter"))
		return LP_ARCH_COUNTER;
	if (LP_ARCH_COUNTER == LP_CLOCK_TSC) {
		f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
		if (!f)
			return LP_CLOCK_MONOTONIC;
		if (!fgets(cs, sizeof(cs), f))
			cs[0] = '\0';
		fclose(f);
		return strncmp(cs, "tsc", 3) ? LP_CLOCK_MONOTONIC : LP_CLOCK_TSC;
	}
	return LP_ARCH_COUNTER;
}

static void child_exec(const char *path, char **argv, const char *session, const char *lib, int errfd)
{
	extern char **environ;
	const char *old = getenv("LD_PRELOAD");
	char *preload;
	int e;

	setenv(LP_ENV_SESSION, session, 1);
	if (old && *old) {
		preload = malloc(strlen(lib) + strlen(old) + 2);
		if (preload) {
			sprintf(preload, "%s:%s", lib, old);
			setenv("LD_PRELOAD", preload, 1);
		}
	} else {
		setenv("LD_PRELOAD", lib, 1);
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGXFSZ, SIG_DFL);
	e = -progpath_exec(path, argv, environ);
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* nothing else to tell the parent with */
	}
	_exit(127);
}

static void print_exit(const char *prog, int status)
{
	if (WIFSIGNALED(status))
		fprintf(stderr, "layerprof record: '%s' was killed by signal %d (%s)%s\n", prog, WTERMSIG(status),
		        strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "clock", required_argument, NULL, 'C' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "syscalls", optional_argument, NULL, 's' },
		{ "syscall-filter", required_argument, NULL, 'S' },
		{ "keep-running", no_argument, NULL, 'K' },
		{ "memory", no_argument, NULL, 'm' },
		{ "mem-depth", required_argument, NULL, 'D' },
		{ "keep-alive", no_argument, NULL, 'A' },
		{ "mem-fold", required_argument, NULL, 'M' },
		{ "discard", no_argument, NULL, 'X' },
		{ "syscall-buffer", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct recorder rec = { .tf = { .fd = -1 }, .dirfd = -1, .note_fd = -1, .out = RECORD_DEFAULT_OUTPUT };
	struct drain_config cfg = { 0 };
	struct drain_ops ops = { 0 };
	struct drain_stats st;
	uint64_t sys_lost = 0, ring_lost;
	struct drain *d = NULL;
	uint64_t buffer = 0; /* 0: the default */
	uint64_t sys_buffer = RECORD_SYSCALL_BUFFER;
	bool sys_buffer_set = false;
	const char *clock_opt = "auto";
	char lib[PATH_MAX], memlib[PATH_MAX], preload[2 * PATH_MAX + 2], prog[PATH_MAX];
	char session[SESSIONDIR_PATH_MAX + SESSIONDIR_NAME_MAX];
	struct sessiondir sessions;
	struct mem_opts mem = { .depth = LP_MEM_DEPTH_DEFAULT };
	bool mem_depth_set = false;
	int c, r, errpipe[2], status = 0, exit_code = LP_EXIT_FAILURE, quiet = 0, child_errno = 0;
	unsigned poll_us = RECORD_POLL_MIN_US;
	uint64_t last_flush;
	bool child_done = false, syscalls = false;
	struct systrace_config stcfg = { .backend = SYSTRACE_AUTO };
	const char *syscall_filter = NULL;
	char why[300], err[600];
	pid_t child;

	cfg.ring_full = LP_RING_FULL_WAIT;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:b:qhsmF:N:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			rec.out = optarg;
			break;
		case 'b':
			if (options_parse_size(optarg, &buffer) || buffer < (128u << 10) || buffer > (256u << 20)) {
				fprintf(stderr, "layerprof record: invalid --buffer-size '%s': expected 128K to 256M\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case 'C':
			if (strcmp(optarg, "auto") && strcmp(optarg, "counter") && strcmp(optarg, "monotonic")) {
				fprintf(stderr, "layerprof record: invalid --clock '%s': auto, counter or monotonic\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			clock_opt = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 's':
			syscalls = true;
			if (systrace_backend_parse(optarg, &stcfg.backend)) {
				fprintf(stderr,
				        "layerprof record: invalid --syscalls '%s': auto, bpf, tracepoint or ptrace\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case 'S':
			syscall_filter = optarg;
			break;
		case 'K':
			stcfg.keep_running = true;
			break;
		case 'm':
			mem.on = true;
			break;
		case 'D': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !*optarg || v < 1 || v > LP_MEM_DEPTH_MAX) {
				fprintf(stderr, "layerprof record: invalid --mem-depth '%s': expected 1 to %u\n",
				        optarg, LP_MEM_DEPTH_MAX);
				return LP_EXIT_USAGE;
			}
			mem.depth = (unsigned)v;
			mem_depth_set = true;
			break;
		}
		case 'A':
			mem.keep_alive = true;
			break;
		case 'M':
			if (options_parse_duration(optarg, &mem.fold_ns) || !mem.fold_ns) {
				fprintf(stderr,
				        "layerprof record: invalid --mem-fold '%s': expected a duration such as "
				        "500us or 10ms\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			break;
		case 'X':
			cfg.ring_full = LP_RING_FULL_DISCARD;
			break;
		case 'B':
			if (options_parse_size(optarg, &sys_buffer) || sys_buffer < RECORD_SYSCALL_BUFFER_MIN ||
			    sys_buffer > RECORD_SYSCALL_BUFFER_MAX) {
				fprintf(stderr,
				        "layerprof record: invalid --syscall-buffer '%s': expected 64K to 256M\n",
				        optarg);
				return LP_EXIT_USAGE;
			}
			sys_buffer_set = true;
			break;
		case 'h':
			fputs(record_usage, stdout);
			return LP_EXIT_OK;
		default:
			r = options_filter_parse(&rec.fopts, c, optarg, "record");
			if (r == 1)
				break;
			if (r == 0)
				fputs(record_usage, stderr);
			return LP_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "layerprof record: no program to run\n");
		fputs(record_usage, stderr);
		return LP_EXIT_USAGE;
	}
	if ((syscall_filter || stcfg.keep_running || sys_buffer_set) && !syscalls) {
		fprintf(stderr,
		        "layerprof record: --syscall-filter, --syscall-buffer and --keep-running need --syscalls\n");
		return LP_EXIT_USAGE;
	}
	/* a ptrace tracee waits for the recorder as the rings' producers do */
	stcfg.full_wait_ms = cfg.ring_full == LP_RING_FULL_WAIT ? LP_STALL_MS_DEFAULT : 0;
	/* in pages, a power of two at least as large as asked */
	stcfg.buffer_pages = 1;
	while ((uint64_t)stcfg.buffer_pages * 4096 < sys_buffer)
		stcfg.buffer_pages *= 2;
	if ((mem.keep_alive || mem_depth_set || mem.fold_ns) && !mem.on) {
		fprintf(stderr, "layerprof record: --keep-alive, --mem-depth and --mem-fold need --memory\n");
		return LP_EXIT_USAGE;
	}
	if (rec.fopts.n_tids) {
		fprintf(stderr, "layerprof record: --tid applies to report, tree and replay (thread ids are not known "
		                "before the program runs)\n");
		return LP_EXIT_USAGE;
	}
	if (syscalls && sys_set_parse(&stcfg.filter, sys_arch_native(), syscall_filter, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: invalid --syscall-filter: %s\n", err);
		return LP_EXIT_USAGE;
	}
	if (find_runtime(lib, sizeof(lib))) {
		fprintf(stderr, "layerprof record: cannot find liblayerprof.so (set LAYERPROF_LIB to its path)\n");
		return LP_EXIT_FAILURE;
	}
	snprintf(preload, sizeof(preload), "%s", lib);
	if (mem.on) {
		r = find_mem_lib(lib, memlib, sizeof(memlib));
		if (r) {
			fprintf(stderr, "layerprof record: cannot find %s next to '%s': %s\n", RECORD_MEM_LIB, lib,
			        strerror(-r));
			return LP_EXIT_FAILURE;
		}
		snprintf(preload, sizeof(preload), "%s:%s", lib, memlib);
	}
	/* found here, as execvp would, so that a missing program leaves the
	 * previous trace alone and the program's first call is its own exec */
	r = progpath_find(argv[optind], prog, sizeof(prog));
	if (r) {
		fprintf(stderr, "layerprof record: cannot run '%s': %s\n", argv[optind], strerror(-r));
		return r == -ENOENT ? 127 : 126;
	}
	/* the heap options reach the program's runtime through its environment
	 * (without --memory they are left as they are, for programs linked
	 * with the --wrap interposers) */
	if (mem.on) {
		char depth[16];

		snprintf(depth, sizeof(depth), "%u", mem.depth);
		setenv(LP_MEM_ENV_DEPTH, depth, 1);
		if (mem.keep_alive)
			setenv(LP_MEM_ENV_KEEPALIVE, "1", 1);
		else
			unsetenv(LP_MEM_ENV_KEEPALIVE);
	}
	if (!buffer)
		buffer = mem.on ? RECORD_MEM_DEFAULT_BUFFER : RECORD_DEFAULT_BUFFER;
	cfg.chunk_slots = RECORD_CHUNK_SLOTS;
	cfg.ring_chunks = 2;
	while ((uint64_t)cfg.ring_chunks * 2 * cfg.chunk_slots * sizeof(struct lp_slot) <= buffer &&
	       cfg.ring_chunks < 4096)
		cfg.ring_chunks *= 2;
	cfg.clock = choose_clock(clock_opt);
	cfg.mem_fold_ns = mem.fold_ns;
	cfg.keep_rings = true;

	ops.ctx = &rec;
	ops.chunk = on_chunk;
	ops.map = on_map;
	ops.unmap = on_unmap;
	if (syscalls)
		ops.collect = on_collect;
	if (rec.fopts.n_only || rec.fopts.n_exclude || rec.fopts.depth || rec.fopts.min_ns) {
		rec.sym = symbolizer_new(SYMBOLIZER_DEMANGLE);
		if (rec.sym && (rec.fopts.n_only || rec.fopts.n_exclude)) {
			rec.cls = classifier_new(rec.sym, &rec.fopts);
			rec.spec.classify = record_classify;
			rec.spec.ctx = &rec;
		}
		rec.spec.has_only = rec.fopts.n_only > 0;
		rec.spec.max_depth = rec.fopts.depth;
		rec.spec.min_ns = rec.fopts.min_ns;
		ops.filter = &rec.spec;
		if (!rec.sym || ((rec.fopts.n_only || rec.fopts.n_exclude) && !rec.cls)) {
			fprintf(stderr, "layerprof record: out of memory\n");
			goto out;
		}
	}

	/* everything is checked: the output may change now */
	signal(SIGXFSZ, on_xfsz);
	rec.dirfd = tracedir_create(rec.out, err, sizeof(err));
	if (rec.dirfd < 0) {
		fprintf(stderr, "layerprof record: %s\n", err);
		goto out;
	}
	r = tracefile_create(&rec.tf, rec.dirfd);
	if (!r)
		r = write_meta(&rec, argc - optind, argv + optind, cfg.clock, buffer, cfg.ring_full, syscalls, &mem);
	if (r) {
		fprintf(stderr, "layerprof record: cannot write trace '%s': %s\n", rec.out, strerror(-r));
		goto out;
	}

	/* the session: a name nobody can guess in our private directory, where
	 * the sessions of killed recorders that nobody maps any more go */
	r = sessiondir_open_private(&sessions);
	if (r) {
		fprintf(stderr, "layerprof record: cannot make a private directory for the session: %s\n",
		        strerror(-r));
		goto out;
	}
	if (sessions.fallback)
		fprintf(stderr, "layerprof record: warning: %s\n",
		        sessiondir_fallback_why(&sessions, err, sizeof(err)));
	sessiondir_sweep(&sessions);
	r = sessiondir_name(&sessions, "rec", session, sizeof(session));
	sessiondir_release(&sessions);
	if (r) {
		fprintf(stderr, "layerprof record: cannot name the session: %s\n", strerror(-r));
		goto out;
	}
	d = drain_new(session, &cfg, &ops);
	if (!d) {
		fprintf(stderr, "layerprof record: cannot create session '%s': %s\n", session, strerror(errno));
		goto out;
	}
	rec.d = d;
	/* the note that lets `recover` finish the trace if we are killed,
	 * with the room kept for the trace's end on a full disk */
	r = recording_self(&rec.note, session);
	if (!r) {
		r = recording_write(rec.dirfd, &rec.note);
		rec.note_fd = r;
	}
	if (r >= 0) {
		/* the session names its trace, so that no later record removes
		 * it while the trace waits for `recover` */
		char self[64], trace_path[PATH_MAX];
		ssize_t n;

		snprintf(self, sizeof(self), "/proc/self/fd/%d", rec.dirfd);
		n = readlink(self, trace_path, sizeof(trace_path) - 1);
		r = n < 0 ? -errno : 0;
		if (n >= 0) {
			trace_path[n] = '\0';
			r = sessiondir_note_trace(session, trace_path);
		}
		if (r)
			fprintf(stderr,
			        "layerprof record: warning: the session cannot name its trace (%s): a later record "
			        "may remove it before a killed recording is recovered\n",
			        strerror(-r));
	} else {
		fprintf(stderr,
		        "layerprof record: warning: cannot write '%s/%s' (%s): a killed recording could not be "
		        "recovered\n",
		        rec.out, TRACEDIR_RECORDING, strerror(-r));
	}
	rec.tf.release_reserve = note_release_reserve;
	rec.tf.reserve_ctx = &rec;

	/* orphaned descendants come to us, so that every exit is seen */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (syscalls) {
		struct systrace_ops sops = { .ctx = &rec, .sys = on_sysrec, .lost = on_syslost };
		char **env;

		env = program_env(session, preload);
		if (!env) {
			fprintf(stderr, "layerprof record: out of memory\n");
			goto out;
		}
		rec.st = systrace_spawn(argv + optind, env, &stcfg, &sops, &child, why, sizeof(why), err, sizeof(err));
		env_free(env);
		if (!rec.st) {
			fprintf(stderr, "layerprof record: cannot trace syscalls: %s\n", err);
			goto out;
		}
		if (!quiet)
			fprintf(stderr, "layerprof record: syscalls: %s\n", why);
		goto run;
	}
	if (pipe2(errpipe, O_CLOEXEC)) {
		fprintf(stderr, "layerprof record: cannot create pipe: %s\n", strerror(errno));
		goto out;
	}
	child = fork();
	if (child < 0) {
		fprintf(stderr, "layerprof record: cannot fork: %s\n", strerror(errno));
		goto out;
	}
	if (child == 0) {
		close(errpipe[0]);
		child_exec(prog, argv + optind, session, preload, errpipe[1]);
	}
	close(errpipe[1]);
	if (read(errpipe[0], &child_errno, sizeof(child_errno)) == (ssize_t)sizeof(child_errno)) {
		fprintf(stderr, "layerprof record: cannot run '%s': %s\n", argv[optind], strerror(child_errno));
		exit_code = child_errno == ENOENT ? 127 : 126;
		waitpid(child, NULL, 0);
		close(errpipe[0]);
		goto out;
	}
	close(errpipe[0]);

run:
	last_flush = clocksync_monotonic_ns();
	for (;;) {
		long consumed = drain_poll(d);
		pid_t p = 0;
		int s;

		if (consumed < 0)
			break;
		if (clocksync_monotonic_ns() - last_flush >= RECORD_FLUSH_NS) {
			drain_flush_idle(d);
			last_flush = clocksync_monotonic_ns();
		}
		if (forward_signal && !child_done) {
			kill(child, forward_signal);
			forward_signal = 0;
		}
		if (rec.st && systrace_backend(rec.st) == SYSTRACE_PTRACE) {
			/* the tracer reaps its tracees itself */
			if (!child_done && systrace_exited(rec.st, &s)) {
				drain_process_exited(d, child, s);
				status = s;
				child_done = true;
			}
			if (child_done)
				break;
		}
		while (!(rec.st && systrace_backend(rec.st) == SYSTRACE_PTRACE) && (p = waitpid(-1, &s, WNOHANG)) > 0) {
			drain_process_exited(d, p, s);
			if (p == child) {
				status = s;
				child_done = true;
			}
		}
		if (p < 0 && errno == ECHILD)
			break;
		if (stop_requests > 1) {
			if (rec.st && systrace_backend(rec.st) == SYSTRACE_PTRACE && !stcfg.keep_running)
				fprintf(stderr,
				        "layerprof record: interrupted: writing what was recorded; the program is "
				        "killed (see --keep-running)\n");
			else
				fprintf(stderr,
				        "layerprof record: interrupted: writing what was recorded; the program keeps "
				        "running\n");
			break;
		}
		/* A busy program gets the drain's full attention (a ring that
		 * is dropping has a still head, so pressure counts as busy); an
		 * idle one costs a wake-up every RECORD_POLL_MAX_US at most. */
		if (consumed > 0 || drain_pressure(d))
			poll_us = RECORD_POLL_MIN_US;
		if (consumed >= (long)cfg.chunk_slots || drain_pressure(d))
			continue;
		if (!consumed && poll_us < RECORD_POLL_MAX_US)
			poll_us *= 2;
		drain_sleep(d, poll_us);
	}
	r = drain_finish(d);
	drain_get_stats(d, &st);
	if (rec.st) {
		struct systrace_stats sst;

		systrace_get_stats(rec.st, &sst);
		if (sst.lost)
			fprintf(stderr,
			        "layerprof record: warning: %llu syscall records lost (kernel buffers full: the "
			        "recorder fell behind; try a larger --syscall-buffer)\n",
			        (unsigned long long)sst.lost);
		sys_lost = sst.lost;
		systrace_free(rec.st);
		rec.st = NULL;
	}
	if (r) {
		exit_code = LP_EXIT_FAILURE;
		goto out;
	}
	if (st.unrecorded_threads)
		fprintf(stderr,
		        "layerprof record: warning: %llu threads could not be recorded (%s): %llu of their events "
		        "lost\n",
		        (unsigned long long)st.unrecorded_threads,
		        st.unrecorded_error ? strerror((int)st.unrecorded_error) : "no ring",
		        (unsigned long long)st.unrecorded_events);
	/* the drain counts the syscall records lost, and the events of threads
	 * without a ring, among its lost events */
	ring_lost = st.lost > sys_lost + st.unrecorded_events ? st.lost - sys_lost - st.unrecorded_events : 0;
	if (st.nospace)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (no space left for the rings' pages in the "
		        "session's file system: %s)\n",
		        (unsigned long long)st.nospace, session);
	ring_lost = ring_lost > st.nospace ? ring_lost - st.nospace : 0;
	if (ring_lost && cfg.ring_full == LP_RING_FULL_DISCARD)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (rings full with --discard: try without it, "
		        "or a larger --buffer-size)\n",
		        (unsigned long long)ring_lost);
	else if (ring_lost && st.wait_gave_up)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (the program stopped waiting for the "
		        "recorder %llu times: it was stopped, or made no poll for %u ms)\n",
		        (unsigned long long)ring_lost, (unsigned long long)st.wait_gave_up, LP_STALL_MS_DEFAULT);
	else if (ring_lost)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (not for want of room: calls in signal "
		        "handlers that interrupted a traced call, or heap records the runtime could not make)\n",
		        (unsigned long long)ring_lost);
	if (rec.tf.error)
		fprintf(stderr,
		        "layerprof record: warning: %llu events not written to '%s' (%s): the trace ends where "
		        "writing stopped, and says so\n",
		        (unsigned long long)rec.tf.unwritten, rec.out, strerror(-rec.tf.error));
	if (!quiet && isatty(STDERR_FILENO))
		fprintf(stderr, "layerprof record: %llu events from %llu threads into '%s' (%llu bytes)\n",
		        (unsigned long long)(st.events - rec.tf.unwritten), (unsigned long long)st.streams, rec.out,
		        (unsigned long long)rec.tf.written);
	if (!quiet && isatty(STDERR_FILENO) && st.waits)
		fprintf(stderr,
		        "layerprof record: full rings made the program's threads wait %llu times, %.1f ms in all "
		        "(--discard drops instead)\n",
		        (unsigned long long)st.waits, (double)st.wait_ns / 1e6);
	if (!quiet && isatty(STDERR_FILENO) && mem.fold_ns)
		fprintf(stderr, "layerprof record: %llu short-lived heap blocks (%llu bytes) folded into counts\n",
		        (unsigned long long)st.folded_blocks, (unsigned long long)st.folded_bytes);
	/* as report does for the same filters: a pattern no function the
	 * program called matched kept nothing out, or nothing in */
	for (size_t i = 0; rec.cls && i < rec.fopts.n_only; i++)
		if (!classifier_matched(rec.cls, true, i))
			fprintf(stderr, "layerprof record: warning: %s '%s' matches no function the program called\n",
			        rec.fopts.only_opt[i] ? rec.fopts.only_opt[i] : "-F", rec.fopts.only[i]);
	for (size_t i = 0; rec.cls && i < rec.fopts.n_exclude; i++)
		if (!classifier_matched(rec.cls, false, i))
			fprintf(stderr, "layerprof record: warning: -N '%s' matches no function the program called\n",
			        rec.fopts.exclude[i]);
	print_exit(argv[optind], status);
	if (!child_done)
		exit_code = 130;
	else if (WIFEXITED(status))
		exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		exit_code = 128 + WTERMSIG(status);
out:
	systrace_free(rec.st);
	drain_free(d);
	classifier_free(rec.cls);
	symbolizer_free(rec.sym);
	/* an orderly end: nothing is left for recover */
	if (rec.note_fd >= 0) {
		close(rec.note_fd);
		unlinkat(rec.dirfd, TRACEDIR_RECORDING, 0);
	}
	r = tracefile_close(&rec.tf);
	if (r && exit_code == 0) {
		fprintf(stderr, "layerprof record: cannot write trace '%s': %s\n", rec.out, strerror(-r));
		exit_code = LP_EXIT_FAILURE;
	}
	if (rec.dirfd >= 0)
		close(rec.dirfd);
	return exit_code;
}
