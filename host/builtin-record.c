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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/clocksync.h"
#include "common/exepath.h"
#include "common/kernevent.h"
#include "common/drain.h"
#include "common/elfsyms.h"
#include "common/launch.h"
#include "common/memopts.h"
#include "common/meta.h"
#include "common/progpath.h"
#include "common/sessiondir.h"
#include "common/systab.h"
#include "host/builtin.h"
#include "host/recctr.h"
#include "host/recdyn.h"
#include "host/recpower.h"
#include "host/lib/trace/classify.h"
#include "host/lib/trace/dir.h"
#include "host/lib/trace/file.h"
#include "host/lib/trace/recording.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/options.h"
#include "lp_arch.h"
#include "ktrace/kdrain.h"
#include "ktrace/ktrace.h"
#include "systrace/sysdrain.h"
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
#define RECORD_KERNEL_BUFFER (2u << 20) /* per CPU */
#define RECORD_SYSCALL_BUFFER_MIN (64u << 10)
#define RECORD_SYSCALL_BUFFER_MAX (256u << 20)
#define RECORD_CHUNK_SLOTS 4096u
#define RECORD_POLL_MIN_US 500
#define RECORD_POLL_MAX_US 5000
/* A stream's partial chunk is written when it has not filled one for this
 * long: a killed recorder loses at most twice this of a quiet program. */
#define RECORD_FLUSH_NS 100000000ull
#define RECORD_MEM_LIB "liblayerprof-mem.so"
#define RECORD_SYNC_LIB "liblayerprof-sync.so"
/* a program linked with the sync tracer's --wrap interposers defines it */
#define RECORD_SYNC_WRAP_SYMBOL "__wrap_pthread_mutex_lock"
#define RECORD_OPT_LIBCALLS 0x2000
#define RECORD_OPT_PROBE 0x2001
#define RECORD_OPT_SYNC 0x2010
#define RECORD_OPT_COUNTERS 0x2002
#define RECORD_OPT_POWER 0x2003
#define RECORD_OPT_POWER_INTERVAL 0x2004

static const char record_usage[] =
    "usage: layerprof record [options] [--] <program> [<args>]\n"
    "\n"
    "Runs <program> with the layerprof runtime and records the calls of its\n"
    "functions built with -finstrument-functions (or linked with -llayerprof),\n"
    "or with --dynamic those of a program built without.\n"
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
    "      --dynamic[=LIST]  trace the functions of a program built without\n"
    "                        -finstrument-functions: every function of its symbol\n"
    "                        table (.symtab, else .dynsym), or those LIST's globs\n"
    "                        name (comma-separated)\n"
    "      --backend NAME    for --dynamic: patch (the runtime rewrites the\n"
    "                        functions' entries in the program; x86-64 and\n"
    "                        aarch64), uprobe (an entry and a return probe per\n"
    "                        function, through perf_event_open; as root), ptrace\n"
    "                        (breakpoints at each entry and return, for kernels\n"
    "                        without uprobes; each call stops the program 3 or 4\n"
    "                        times: slow; not with --syscalls=ptrace), or auto\n"
    "                        (default: patch where it is built, else uprobe)\n"
    "      --libcalls        also every call the program makes into a shared\n"
    "                        library through its PLT, as NAME@plt under its\n"
    "                        caller (patch backend: x86-64, aarch64; alone, only those)\n"
    "      --probe LIST      also each time the program runs an instruction of\n"
    "                        LIST (FUNCTION+OFFSET, comma-separated): a probe\n"
    "                        event, its registers untouched (patch backend)\n"
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
    "  -k, --kernel[=LIST]   also record kernel events (tracepoints through\n"
    "                        perf_event_open) of the program's threads: its\n"
    "                        switches, wake-ups, page faults, irqs, block requests\n"
    "                        and timers by default; LIST: group:event with globs,\n"
    "                        e.g. 'sched:*,block:*,exceptions:page_fault_user'\n"
    "      --kernel-filter F  in-kernel filter (ftrace syntax) for every selected\n"
    "                        event, or 'group:event=EXPR' for one; repeatable\n"
    "      --kernel-functions LIST  with --kernel: trace these kernel functions\n"
    "                        too (entry, and return with its value), through\n"
    "                        kprobes where the kernel allows them\n"
    "      --kernel-system   with --kernel: other processes' kernel events too\n"
    "                        (every task's but the idle task's), kept apart from\n"
    "                        the program's in streams of their own threads; every\n"
    "                        task's records are kept: mind --kernel-buffer\n"
    "      --kernel-buffer SZ  kernel buffer per CPU for --kernel (default 2M;\n"
    "                        64K to 256M); the kernel drops records (counted) when\n"
    "                        the recorder falls this far behind\n"
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
    "                        grow the trace (default: off)\n"
    "      --sync            also record synchronisation operations (mutex, rwlock,\n"
    "                        spinlock, condition variable, barrier, semaphore,\n"
    "                        thread creation and join: what waited, how long) by\n"
    "                        preloading " RECORD_SYNC_LIB "; a program linked with\n"
    "                        the --wrap interposers (`layerprof config\n"
    "                        --wrap-flags`, syncwrap.rsp) records its own calls\n"
    "                        through them\n"
    "      --counters[=LIST] also count performance events per thread and per\n"
    "                        function, and the program's totals per CPU: perf's\n"
    "                        names, comma-separated, at most 12 (default: cycles,\n"
    "                        instructions, cache-misses, branch-misses, task-clock,\n"
    "                        page-faults, context-switches); events this CPU or\n"
    "                        kernel cannot count are named and left out\n"
    "      --power[=SPEC]    also sample a power source from just before the program\n"
    "                        starts to its end (the trace's POWER chunks): auto\n"
    "                        (default: RAPL, else a hwmon sensor, else a battery),\n"
    "                        a name `layerprof energy sources` lists, cmd:COMMAND\n"
    "                        (run once per sample, prints watts) or csv:FILE (a\n"
    "                        meter's log of seconds,watts lines, read at the end)\n"
    "      --power-interval MS  milliseconds between samples (default 100)\n" FILTER_HELP_FUNCS
    "  -h, --help            this text\n"
    "\n"
    "A recorder killed with SIGKILL leaves a trace that ends at most some 200 ms\n"
    "before it died; `layerprof recover DIR` adds what its rings still hold.\n";

extern char **environ;

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

/* The recorder's state, from the options to the summary: record_parse
 * fills the options, record_setup the trace and the session, record_spawn
 * starts the program, record_loop drains it until it ends. */
struct recorder {
	/* the options */
	const char *out;
	uint64_t buffer; /* 0: the default */
	uint64_t sys_buffer;
	bool sys_buffer_set;
	const char *clock_opt;
	bool quiet;
	bool syscalls;
	const char *syscall_filter;
	struct systrace_config stcfg;
	struct memopts mem;
	struct filter_opts fopts;
	struct drain_config cfg;
	int prog_argc; /* the program and its arguments (argv[optind...]) */
	char **prog_argv;
	/* the trace and the session */
	char preload[3 * PATH_MAX + 3]; /* the runtime (and the heap and sync interposers) */
	char prog[PATH_MAX];            /* the program's file */
	char session[SESSIONDIR_PATH_MAX + SESSIONDIR_NAME_MAX];
	struct tracefile tf;
	int dirfd;   /* the trace directory */
	int note_fd; /* its TRACEDIR_RECORDING, or -1 */
	struct recording note;
	struct symbolizer *sym;
	struct classifier *cls;
	struct filter_spec spec;
	struct drain *d;
	struct systrace *st;
	struct sysdrain feed; /* the tracer's records into d */
	bool kernel;
	bool dyn_backend_set;
	struct ktrace_config kcfg;
	uint64_t kbuffer;
	struct ktrace *kt;
	struct recdyn dyn;
	bool sync;            /* --sync */
	const char *sync_how; /* with sync: META "sync" (preload, wrap) */
	struct recctr ctr;    /* --counters */
	/* --power */
	struct recpower power;
	/* the program */
	pid_t child;
	int status; /* its wait status, once child_done */
	bool child_done;
};

/* What a step returns when the recording goes on (else: the exit code). */
#define RECORD_GO_ON (-1)

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
		char end[RECPOWER_END_MAX];
		const char *text = recpower_end(&rec->power, (const char *)payload, &len, end, sizeof(end));

		r = tracefile_end(&rec->tf, text, len);
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

/* The tracer's records are collected on each drain poll (ops.collect),
 * after the ring heads are loaded. */
static bool on_collect(void *ctx)
{
	struct recorder *rec = ctx;

	if (rec->st)
		systrace_poll(rec->st);
	if (rec->kt)
		ktrace_poll(rec->kt);
	if (rec->dyn.on)
		recdyn_poll(&rec->dyn, rec->d, rec->session);
	return rec->st && systrace_backlog(rec->st);
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

static int write_meta(struct recorder *rec, uint64_t buffer)
{
	char text[META_MAX];
	struct meta m;
	size_t n;

	meta_init(&m);
	m.clock = rec->cfg.clock;
	m.buffer_size = buffer;
	m.ring_wait = rec->cfg.ring_full == LP_RING_FULL_WAIT;
	m.has_realtime = true;
	m.start_realtime = (long long)time(NULL);
	m.filtered = options_filter_any(&rec->fopts);
	m.syscalls = rec->syscalls;
	if (rec->kt) {
		struct ktrace_stats kst;

		ktrace_get_stats(rec->kt, &kst);
		m.kernel_events = kst.events;
		m.kernel_system = rec->kcfg.system;
	}
	if (rec->mem.on) {
		m.mem = META_MEM_OPTIONS;
		m.mem_depth = memopts_depth(&rec->mem);
		m.mem_keep_alive = rec->mem.keep_alive;
		m.mem_fold_ns = rec->mem.fold_ns;
	}
	m.sync = rec->sync ? rec->sync_how : NULL;
	if (rec->ctr.on) {
		m.counters = rec->ctr.names;
		m.counters_unavailable = rec->ctr.unavailable;
		m.counters_read = rec->ctr.how;
		m.counters_scope = rec->ctr.user ? "user" : "all";
	}
	m.power_sources = recpower_meta_sources(&rec->power);
	m.power_interval_ms = rec->power.interval_ms;
	m.argc = rec->prog_argc;
	m.argv = rec->prog_argv;
	n = meta_format(&m, text, sizeof(text));
	return tracefile_write(&rec->tf, LP_CHUNK_META, text, n, 0);
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

static void print_exit(const char *prog, int status)
{
	if (WIFSIGNALED(status))
		fprintf(stderr, "layerprof record: '%s' was killed by signal %d (%s)%s\n", prog, WTERMSIG(status),
		        strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
}

/* Reads one option of the command line.  Returns RECORD_GO_ON, or the exit
 * code when the command ends here (--help, a bad value). */
static int record_option(struct recorder *rec, int c, const char *arg)
{
	char err[600];
	int r;

	switch (c) {
	case 'o':
		rec->out = arg;
		break;
	case 'b':
		if (options_parse_size(arg, &rec->buffer) || rec->buffer < (128u << 10) || rec->buffer > (256u << 20)) {
			fprintf(stderr, "layerprof record: invalid --buffer-size '%s': expected 128K to 256M\n", arg);
			return LP_EXIT_USAGE;
		}
		break;
	case 'C':
		if (strcmp(arg, "auto") && strcmp(arg, "counter") && strcmp(arg, "monotonic")) {
			fprintf(stderr, "layerprof record: invalid --clock '%s': auto, counter or monotonic\n", arg);
			return LP_EXIT_USAGE;
		}
		rec->clock_opt = arg;
		break;
	case 'q':
		rec->quiet = true;
		break;
	case 's':
		rec->syscalls = true;
		if (systrace_backend_parse(arg, &rec->stcfg.backend)) {
			fprintf(stderr, "layerprof record: invalid --syscalls '%s': auto, bpf, tracepoint or ptrace\n",
			        arg);
			return LP_EXIT_USAGE;
		}
		break;
	case 'S':
		rec->syscall_filter = arg;
		break;
	case 'K':
		rec->stcfg.keep_running = true;
		break;
	case 'k':
		rec->kernel = true;
		rec->kcfg.events = arg;
		break;
	case 'G':
		if (rec->kcfg.nfilters == KTRACE_FILTERS_MAX) {
			fprintf(stderr, "layerprof record: more than %u --kernel-filter options\n", KTRACE_FILTERS_MAX);
			return LP_EXIT_USAGE;
		}
		rec->kcfg.filters[rec->kcfg.nfilters++] = arg;
		break;
	case 'U':
		rec->kcfg.functions = arg;
		break;
	case 'Y':
		rec->kcfg.system = true;
		break;
	case 'J':
		if (options_parse_size(arg, &rec->kbuffer) || rec->kbuffer < (64u << 10) ||
		    rec->kbuffer > (256u << 20)) {
			fprintf(stderr, "layerprof record: invalid --kernel-buffer '%s': expected 64K to 256M\n", arg);
			return LP_EXIT_USAGE;
		}
		break;
	case 'm':
		rec->mem.on = true;
		break;
	case RECORD_OPT_SYNC:
		rec->sync = true;
		break;
	case 'D':
		if (memopts_set_depth(&rec->mem, arg, MEMOPTS_OPTIONS, err, sizeof(err))) {
			fprintf(stderr, "layerprof record: %s\n", err);
			return LP_EXIT_USAGE;
		}
		break;
	case 'A':
		rec->mem.keep_alive = true;
		break;
	case 'M':
		if (options_parse_duration(arg, &rec->mem.fold_ns) || !rec->mem.fold_ns) {
			fprintf(
			    stderr,
			    "layerprof record: invalid --mem-fold '%s': expected a duration such as 500us or 10ms\n",
			    arg);
			return LP_EXIT_USAGE;
		}
		break;
	case 'X':
		rec->cfg.ring_full = LP_RING_FULL_DISCARD;
		break;
	case 'B':
		if (options_parse_size(arg, &rec->sys_buffer) || rec->sys_buffer < RECORD_SYSCALL_BUFFER_MIN ||
		    rec->sys_buffer > RECORD_SYSCALL_BUFFER_MAX) {
			fprintf(stderr, "layerprof record: invalid --syscall-buffer '%s': expected 64K to 256M\n", arg);
			return LP_EXIT_USAGE;
		}
		rec->sys_buffer_set = true;
		break;
	case 'y':
	case 'W':
		if (recdyn_option(&rec->dyn, c == 'W', arg, err, sizeof(err))) {
			fprintf(stderr, "layerprof record: %s\n", err);
			return LP_EXIT_USAGE;
		}
		rec->dyn_backend_set |= c == 'W';
		break;
	case RECORD_OPT_LIBCALLS:
		recdyn_libcalls(&rec->dyn);
		break;
	case RECORD_OPT_PROBE:
		if (recdyn_probes(&rec->dyn, arg, err, sizeof(err))) {
			fprintf(stderr, "layerprof record: %s\n", err);
			return LP_EXIT_USAGE;
		}
		break;
	case RECORD_OPT_COUNTERS:
		if (recctr_option(&rec->ctr, arg, err, sizeof(err))) {
			fprintf(stderr, "layerprof record: invalid --counters: %s\n", err);
			return LP_EXIT_USAGE;
		}
		break;
	case RECORD_OPT_POWER:
		recpower_option(&rec->power, arg);
		break;
	case RECORD_OPT_POWER_INTERVAL:
		if (recpower_interval_option(&rec->power, arg, err, sizeof(err))) {
			fprintf(stderr, "layerprof record: %s\n", err);
			return LP_EXIT_USAGE;
		}
		break;
	case 'h':
		fputs(record_usage, stdout);
		return LP_EXIT_OK;
	default:
		r = layerprof_filter_parse(&rec->fopts, c, arg, "record");
		if (r == 1)
			break;
		if (r == 0)
			fputs(record_usage, stderr);
		return LP_EXIT_USAGE;
	}
	return RECORD_GO_ON;
}

/* The command line: the options, how they fit together, and the program.
 * Returns RECORD_GO_ON, or the exit code. */
static int record_parse(struct recorder *rec, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "clock", required_argument, NULL, 'C' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "syscalls", optional_argument, NULL, 's' },
		{ "syscall-filter", required_argument, NULL, 'S' },
		{ "keep-running", no_argument, NULL, 'K' },
		{ "kernel", optional_argument, NULL, 'k' },
		{ "kernel-filter", required_argument, NULL, 'G' },
		{ "kernel-buffer", required_argument, NULL, 'J' },
		{ "kernel-functions", required_argument, NULL, 'U' },
		{ "kernel-system", no_argument, NULL, 'Y' },
		{ "memory", no_argument, NULL, 'm' },
		{ "mem-depth", required_argument, NULL, 'D' },
		{ "keep-alive", no_argument, NULL, 'A' },
		{ "mem-fold", required_argument, NULL, 'M' },
		{ "discard", no_argument, NULL, 'X' },
		{ "syscall-buffer", required_argument, NULL, 'B' },
		{ "dynamic", optional_argument, NULL, 'y' },
		{ "backend", required_argument, NULL, 'W' },
		{ "libcalls", no_argument, NULL, RECORD_OPT_LIBCALLS },
		{ "probe", required_argument, NULL, RECORD_OPT_PROBE },
		{ "sync", no_argument, NULL, RECORD_OPT_SYNC },
		{ "counters", optional_argument, NULL, RECORD_OPT_COUNTERS },
		{ "power", optional_argument, NULL, RECORD_OPT_POWER },
		{ "power-interval", required_argument, NULL, RECORD_OPT_POWER_INTERVAL },
		{ "help", no_argument, NULL, 'h' },
		FILTER_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	char err[600];
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:b:qhskmF:N:", longopts, NULL)) != -1) {
		r = record_option(rec, c, optarg);
		if (r != RECORD_GO_ON)
			return r;
	}
	if (optind >= argc) {
		fprintf(stderr, "layerprof record: no program to run\n");
		fputs(record_usage, stderr);
		return LP_EXIT_USAGE;
	}
	rec->prog_argc = argc - optind;
	rec->prog_argv = argv + optind;
	if ((rec->syscall_filter || rec->stcfg.keep_running || rec->sys_buffer_set) && !rec->syscalls) {
		fprintf(stderr,
		        "layerprof record: --syscall-filter, --syscall-buffer and --keep-running need --syscalls\n");
		return LP_EXIT_USAGE;
	}
	if ((rec->kcfg.nfilters || rec->kbuffer || rec->kcfg.functions || rec->kcfg.system) && !rec->kernel) {
		fprintf(stderr, "layerprof record: --kernel-filter, --kernel-functions, --kernel-system and "
		                "--kernel-buffer need --kernel\n");
		return LP_EXIT_USAGE;
	}
	if (rec->dyn_backend_set && !rec->dyn.on) {
		fprintf(stderr, "layerprof record: --backend needs --dynamic\n");
		return LP_EXIT_USAGE;
	}
	if (recpower_options_done(&rec->power, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: %s\n", err);
		return LP_EXIT_USAGE;
	}
	if (recdyn_options_done(&rec->dyn, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: %s\n", err);
		return LP_EXIT_USAGE;
	}
	if (rec->dyn.on && (rec->dyn.backend == RECDYN_UPROBE || rec->dyn.backend == RECDYN_PTRACE) &&
	    (rec->fopts.n_only || rec->fopts.n_exclude || rec->fopts.depth || rec->fopts.min_ns)) {
		fprintf(
		    stderr,
		    "layerprof record: -F, -N, --depth and --min-time do not apply to the %s backend's functions at "
		    "record time: choose them with --dynamic=LIST, or filter in report\n",
		    rec->dyn.backend == RECDYN_UPROBE ? "uprobe" : "ptrace");
		return LP_EXIT_USAGE;
	}
	/* one tracer per process: the breakpoints' tracer thread and the
	 * syscall tracer's cannot both trace the program */
	if (rec->dyn.on && rec->dyn.backend == RECDYN_PTRACE && rec->syscalls &&
	    rec->stcfg.backend == SYSTRACE_PTRACE) {
		fprintf(stderr,
		        "layerprof record: --backend=ptrace and --syscalls=ptrace cannot both trace the program "
		        "(a process has one tracer): choose --syscalls=bpf or tracepoint\n");
		return LP_EXIT_USAGE;
	}
	if (rec->kernel && rec->kcfg.events && !*rec->kcfg.events) {
		fprintf(stderr, "layerprof record: --kernel= needs a list of tracepoints\n");
		return LP_EXIT_USAGE;
	}
	rec->cfg.kernel_waits_for_syscalls = rec->kernel && rec->syscalls;
	rec->kcfg.buffer_pages = 1;
	while ((uint64_t)rec->kcfg.buffer_pages * 4096 < (rec->kbuffer ? rec->kbuffer : RECORD_KERNEL_BUFFER))
		rec->kcfg.buffer_pages *= 2;
	/* a ptrace tracee waits for the recorder as the rings' producers do */
	rec->stcfg.full_wait_ms = rec->cfg.ring_full == LP_RING_FULL_WAIT ? LP_STALL_MS_DEFAULT : 0;
	/* in pages, a power of two at least as large as asked */
	rec->stcfg.buffer_pages = 1;
	while ((uint64_t)rec->stcfg.buffer_pages * 4096 < rec->sys_buffer)
		rec->stcfg.buffer_pages *= 2;
	if (memopts_check(&rec->mem, MEMOPTS_OPTIONS, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: %s\n", err);
		return LP_EXIT_USAGE;
	}
	if (rec->fopts.n_tids) {
		fprintf(stderr, "layerprof record: --tid applies to report, tree and replay (thread ids are not known "
		                "before the program runs)\n");
		return LP_EXIT_USAGE;
	}
	if (rec->syscalls &&
	    sys_set_parse(&rec->stcfg.filter, sys_arch_native(), rec->syscall_filter, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: invalid --syscall-filter: %s\n", err);
		return LP_EXIT_USAGE;
	}
	return RECORD_GO_ON;
}

/* Whether the program's file holds the sync tracer's --wrap interposers
 * (its own calls then go through them; the preloaded library takes those
 * of the shared libraries).  A file that cannot be read says no. */
static bool record_sync_wrapped(const char *prog)
{
	struct elfsyms *es;
	char err[300];
	bool found = false;

	if (elfsyms_open(prog, &es, err, sizeof(err)))
		return false;
	for (size_t i = 0; i < es->nfn && !found; i++)
		found = es->fn[i].name && !strcmp(es->fn[i].name, RECORD_SYNC_WRAP_SYMBOL);
	elfsyms_free(es);
	return found;
}

/* --sync: the sync interposers, next to the runtime lib, are preloaded
 * after the runtime (and the heap interposers).  Prints why it fails. */
static int record_sync_setup(struct recorder *rec, const char *lib)
{
	const char *slash = strrchr(lib, '/');
	char synclib[PATH_MAX];
	size_t len = strlen(rec->preload);
	int n;

	n = slash ? snprintf(synclib, sizeof(synclib), "%.*s/%s", (int)(slash - lib), lib, RECORD_SYNC_LIB) : -1;
	if (n < 0 || (size_t)n >= sizeof(synclib) || access(synclib, R_OK)) {
		fprintf(stderr, "layerprof record: cannot find %s next to '%s'\n", RECORD_SYNC_LIB, lib);
		return -ENOENT;
	}
	snprintf(rec->preload + len, sizeof(rec->preload) - len, ":%s", synclib);
	rec->sync_how = "preload";
	return 0;
}

/* What the recording needs before anything changes on disk: the libraries
 * to preload, the program's file, the rings' geometry, the record-time
 * filters.  Returns RECORD_GO_ON, or the exit code. */
static int record_setup(struct recorder *rec)
{
	char lib[PATH_MAX], memlib[PATH_MAX];
	uint64_t buffer;
	int r;

	if (find_runtime(lib, sizeof(lib))) {
		fprintf(stderr, "layerprof record: cannot find liblayerprof.so (set LAYERPROF_LIB to its path)\n");
		return LP_EXIT_FAILURE;
	}
	snprintf(rec->preload, sizeof(rec->preload), "%s", lib);
	if (rec->mem.on) {
		r = find_mem_lib(lib, memlib, sizeof(memlib));
		if (r) {
			fprintf(stderr, "layerprof record: cannot find %s next to '%s': %s\n", RECORD_MEM_LIB, lib,
			        strerror(-r));
			return LP_EXIT_FAILURE;
		}
		snprintf(rec->preload, sizeof(rec->preload), "%s:%s", lib, memlib);
	}
	/* --counters alone preloads them too, for the thread starts: each new
	 * thread then makes its ring, and opens its counters, as it starts */
	if ((rec->sync || rec->ctr.on) && record_sync_setup(rec, lib))
		return LP_EXIT_FAILURE;
	/* found here, as execvp would, so that a missing program leaves the
	 * previous trace alone and the program's first call is its own exec */
	r = progpath_find(rec->prog_argv[0], rec->prog, sizeof(rec->prog));
	if (r) {
		fprintf(stderr, "layerprof record: cannot run '%s': %s\n", rec->prog_argv[0], strerror(-r));
		return r == -ENOENT ? 127 : 126;
	}
	if (rec->sync && record_sync_wrapped(rec->prog))
		rec->sync_how = "wrap";
	buffer = rec->buffer ? rec->buffer : rec->mem.on ? RECORD_MEM_DEFAULT_BUFFER : RECORD_DEFAULT_BUFFER;
	rec->buffer = buffer;
	rec->cfg.chunk_slots = RECORD_CHUNK_SLOTS;
	rec->cfg.ring_chunks = 2;
	while ((uint64_t)rec->cfg.ring_chunks * 2 * rec->cfg.chunk_slots * sizeof(struct lp_slot) <= buffer &&
	       rec->cfg.ring_chunks < 4096)
		rec->cfg.ring_chunks *= 2;
	rec->cfg.clock = choose_clock(rec->clock_opt);
	rec->cfg.mem_fold_ns = rec->mem.fold_ns;
	rec->cfg.keep_rings = true;
	if (rec->fopts.n_only || rec->fopts.n_exclude || rec->fopts.depth || rec->fopts.min_ns) {
		rec->sym = symbolizer_new(SYMBOLIZER_DEMANGLE);
		if (rec->sym && (rec->fopts.n_only || rec->fopts.n_exclude)) {
			rec->cls = classifier_new(rec->sym, &rec->fopts);
			rec->spec.classify = record_classify;
			rec->spec.ctx = rec;
		}
		rec->spec.has_only = rec->fopts.n_only > 0;
		rec->spec.max_depth = rec->fopts.depth;
		rec->spec.min_ns = rec->fopts.min_ns;
		if (!rec->sym || ((rec->fopts.n_only || rec->fopts.n_exclude) && !rec->cls)) {
			fprintf(stderr, "layerprof record: out of memory\n");
			return LP_EXIT_FAILURE;
		}
	}
	return RECORD_GO_ON;
}

/* The session names its trace, so that no later record removes it while
 * the trace waits for `recover`.  Warns when it cannot. */
static void record_name_trace(struct recorder *rec)
{
	char self[64], trace_path[PATH_MAX];
	ssize_t n;
	int r;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", rec->dirfd);
	n = readlink(self, trace_path, sizeof(trace_path) - 1);
	r = n < 0 ? -errno : 0;
	if (n >= 0) {
		trace_path[n] = '\0';
		r = sessiondir_note_trace(rec->session, trace_path);
	}
	if (r)
		fprintf(stderr,
		        "layerprof record: warning: the session cannot name its trace (%s): a later record "
		        "may remove it before a killed recording is recovered\n",
		        strerror(-r));
}

/* --counters: which events the kernel and CPU count, before anything
 * changes on disk.  None: the recording is refused (a usage error, as
 * for an unknown name); some: a warning names the others.  Returns
 * RECORD_GO_ON, or the exit code. */
static int record_counters_probe(struct recorder *rec)
{
	char err[2600];

	if (!rec->ctr.on)
		return RECORD_GO_ON;
	rec->ctr.no_gates = rec->dyn.on && !recdyn_patching(&rec->dyn);
	if (recctr_probe(&rec->ctr, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: --counters: %s\n", err);
		return LP_EXIT_USAGE;
	}
	if (rec->ctr.unavailable[0] && rec->ctr.hw_only_missing)
		fprintf(stderr,
		        "layerprof record: warning: --counters: hardware events not supported by this CPU or kernel, "
		        "left out: %s\n",
		        rec->ctr.unavailable);
	else if (rec->ctr.unavailable[0])
		fprintf(stderr, "layerprof record: warning: --counters: left out: %s\n", rec->ctr.unavailable);
	if (rec->ctr.no_gates)
		fprintf(stderr,
		        "layerprof record: warning: --counters with the %s backend: no values per function (its probes "
		        "run outside the program's threads): the threads' and the program's totals only\n",
		        recdyn_backend_name(&rec->dyn));
	else if (!strcmp(rec->ctr.how, "none"))
		fprintf(stderr, "layerprof record: warning: --counters: the counters cannot be read in the program: "
		                "program totals only\n");
	return RECORD_GO_ON;
}

/* The program waits before its exec: the dynamic tracer's probes and the
 * counters' totals are opened on it (launch_cmd.held). */
static int record_held(void *ctx, pid_t pid)
{
	struct recorder *rec = ctx;
	int r = 0;

	if (rec->dyn.on && !recdyn_patching(&rec->dyn))
		r = recdyn_held(&rec->dyn, pid);
	if (!r && rec->ctr.on)
		r = recctr_held(&rec->ctr, pid);
	return r;
}

static int record_held_sys(void *ctx, pid_t pid, char *err, size_t errlen)
{
	struct recorder *rec = ctx;
	int r = rec->dyn.on && !recdyn_patching(&rec->dyn) ? recdyn_held_sys(&rec->dyn, pid, err, errlen) : 0;

	if (!r && rec->ctr.on)
		r = recctr_held(&rec->ctr, pid);
	return r;
}

/* The program was reaped: its counter totals go into the stream that
 * ends it (before drain_process_exited). */
static void record_counter_totals(struct recorder *rec)
{
	struct ctrevent *ev;
	uint32_t n;

	if (!rec->ctr.on || !rec->ctr.fd)
		return;
	ev = calloc((size_t)rec->ctr.ncpus + 1, sizeof(*ev));
	if (!ev) {
		fprintf(stderr, "layerprof record: warning: --counters: out of memory: no program totals\n");
		return;
	}
	n = recctr_read_totals(&rec->ctr, ev);
	if (n && drain_counter_totals(rec->d, rec->child, ev, n))
		fprintf(stderr, "layerprof record: warning: --counters: no room for the program totals\n");
	free(ev);
	recctr_release(&rec->ctr);
}

/* Everything is checked: the trace directory (an old one is kept), its
 * META, the session and its drain, the note for `recover`.  Returns
 * RECORD_GO_ON, or the exit code. */
static int record_open(struct recorder *rec)
{
	struct drain_ops ops = { .ctx = rec, .chunk = on_chunk, .map = on_map, .unmap = on_unmap };
	struct sessiondir sessions;
	char err[600];
	int r;

	if (rec->syscalls || rec->kernel || rec->dyn.on)
		ops.collect = on_collect;
	if (rec->sym)
		ops.filter = &rec->spec;
	if (rec->kernel) {
		/* before anything changes on disk: a kernel that refuses leaves
		 * the previous trace alone */
		struct ktrace_ops kops = kdrain_ops(&rec->feed);
		char warn[600];

		rec->kt = ktrace_open(&rec->kcfg, &kops, warn, sizeof(warn), err, sizeof(err));
		if (!rec->kt) {
			fprintf(stderr, "layerprof record: cannot record kernel events: %s\n", err);
			return LP_EXIT_FAILURE;
		}
		if (warn[0] && !rec->quiet)
			fprintf(stderr, "layerprof record: warning: kernel events %s\n", warn);
	}
	if (rec->dyn.on && recdyn_open(&rec->dyn, rec->prog, &rec->feed, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: %s%s\n", strncmp(err, "--probe", 7) ? "--dynamic: " : "", err);
		return LP_EXIT_FAILURE;
	}
	if (rec->dyn.on && recdyn_reaps(&rec->dyn) && !rec->quiet)
		fprintf(stderr,
		        "layerprof record: note: the ptrace backend stops the program at each traced call's "
		        "entry and return and steps over each trap (3 or 4 stops of tens of µs per call, and the "
		        "other threads stopped for each step): expect it to run much slower\n");
	if (rec->dyn.on && !recdyn_patching(&rec->dyn) &&
	    (rec->fopts.n_only || rec->fopts.n_exclude || rec->fopts.depth || rec->fopts.min_ns)) {
		fprintf(stderr, "layerprof record: -F, -N, --depth and --min-time do not apply to the uprobe backend's "
		                "functions at record time (this program is traced through uprobes)\n");
		return LP_EXIT_USAGE;
	}
	r = record_counters_probe(rec);
	if (r != RECORD_GO_ON)
		return r;
	/* before the trace is made: no source, no trace */
	if (recpower_open(&rec->power, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: --power: %s\n", err);
		return LP_EXIT_FAILURE;
	}
	signal(SIGXFSZ, on_xfsz);
	rec->dirfd = tracedir_create(rec->out, err, sizeof(err));
	if (rec->dirfd < 0) {
		fprintf(stderr, "layerprof record: %s\n", err);
		return LP_EXIT_FAILURE;
	}
	r = tracefile_create(&rec->tf, rec->dirfd);
	if (!r)
		r = write_meta(rec, rec->buffer);
	for (size_t i = 0; !r && rec->kt && i < ktrace_format_chunks(rec->kt); i++) {
		size_t flen;
		const uint8_t *formats = ktrace_format_chunk(rec->kt, i, &flen);

		r = tracefile_write(&rec->tf, LP_CHUNK_KFORMAT, formats, flen, 0);
	}
	if (r) {
		fprintf(stderr, "layerprof record: cannot write trace '%s': %s\n", rec->out, strerror(-r));
		return LP_EXIT_FAILURE;
	}
	/* the session: a name nobody can guess in our private directory, where
	 * the sessions of killed recorders that nobody maps any more go */
	r = sessiondir_open_private(&sessions);
	if (r) {
		fprintf(stderr, "layerprof record: cannot make a private directory for the session: %s\n",
		        strerror(-r));
		return LP_EXIT_FAILURE;
	}
	if (sessions.fallback)
		fprintf(stderr, "layerprof record: warning: %s\n",
		        sessiondir_fallback_why(&sessions, err, sizeof(err)));
	sessiondir_sweep(&sessions);
	r = sessiondir_name(&sessions, "rec", rec->session, sizeof(rec->session));
	sessiondir_release(&sessions);
	if (r) {
		fprintf(stderr, "layerprof record: cannot name the session: %s\n", strerror(-r));
		return LP_EXIT_FAILURE;
	}
	rec->d = drain_new(rec->session, &rec->cfg, &ops);
	if (!rec->d) {
		fprintf(stderr, "layerprof record: cannot create session '%s': %s\n", rec->session, strerror(errno));
		return LP_EXIT_FAILURE;
	}
	rec->feed.drain = rec->d;
	rec->feed.on = true;
	if (rec->dyn.on && !recdyn_patching(&rec->dyn))
		drain_set_eager(rec->d);
	if (rec->dyn.on && recdyn_session(&rec->dyn, rec->d, rec->session, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: --dynamic: %s\n", err);
		return LP_EXIT_FAILURE;
	}
	/* the note that lets `recover` finish the trace if we are killed,
	 * with the room kept for the trace's end on a full disk */
	r = recording_self(&rec->note, rec->session);
	if (!r) {
		r = recording_write(rec->dirfd, &rec->note);
		rec->note_fd = r;
	}
	if (r >= 0)
		record_name_trace(rec);
	else
		fprintf(stderr,
		        "layerprof record: warning: cannot write '%s/%s' (%s): a killed recording could not be "
		        "recovered\n",
		        rec->out, TRACEDIR_RECORDING, strerror(-r));
	rec->tf.release_reserve = note_release_reserve;
	rec->tf.reserve_ctx = rec;
	return RECORD_GO_ON;
}

/* The program runs already (the syscall tracer started it): its counter
 * totals count from now, without what it did since its exec. */
static void record_counters_late(struct recorder *rec)
{
	char err[600];

	if (!rec->ctr.on || rec->ctr.fd)
		return;
	if (recctr_open_totals(&rec->ctr, rec->child, false, err, sizeof(err)))
		fprintf(stderr, "layerprof record: warning: counters: %s: no program totals\n", err);
	else if (!rec->quiet)
		fprintf(stderr,
		        "layerprof record: note: --counters with --syscalls=%s: the program totals miss what "
		        "the program did between its exec and their opening (its start); --syscalls=bpf or "
		        "tracepoint count it all\n",
		        systrace_backend_name(systrace_backend(rec->st)));
}

/* Starts the program (common/launch.h), under the syscall tracer with
 * --syscalls.  Returns RECORD_GO_ON, or the exit code. */
static int record_spawn(struct recorder *rec)
{
	struct launch_env le = { .session = rec->session, .preload = rec->preload };
	struct launch_cmd cmd = { .path = rec->prog, .argv = rec->prog_argv };
	enum launch_step step;
	char **env, why[300], err[600];
	pid_t pid;

	/* the heap options reach the program's runtime through its environment
	 * (without --memory they are left as they are, for programs linked
	 * with the --wrap interposers) */
	le.memory = rec->mem.on;
	le.mem_depth = memopts_depth(&rec->mem);
	le.mem_keep_alive = rec->mem.keep_alive;
	le.sync = rec->sync ? "1" : rec->ctr.on ? "threads" : NULL;
	if (rec->ctr.on)
		le.counters = rec->ctr.env;
	env = launch_env_new(environ, &le);
	if (!env) {
		fprintf(stderr, "layerprof record: out of memory\n");
		return LP_EXIT_FAILURE;
	}
	/* orphaned descendants come to us, so that every exit is seen */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	/* the first sample just before the program starts */
	if (recpower_start(&rec->power, err, sizeof(err))) {
		fprintf(stderr, "layerprof record: --power: %s\n", err);
		free(env);
		return LP_EXIT_FAILURE;
	}
	if (rec->syscalls) {
		struct systrace_ops sops = sysdrain_ops(&rec->feed);

		/* the counters' totals from the exec on where the backend holds
		 * the program before it (not ptrace, which auto may choose) */
		if ((rec->dyn.on && !recdyn_patching(&rec->dyn)) ||
		    (rec->ctr.on &&
		     (rec->stcfg.backend == SYSTRACE_BPF || rec->stcfg.backend == SYSTRACE_TRACEPOINT))) {
			rec->stcfg.held = record_held_sys;
			rec->stcfg.held_ctx = rec;
		}
		rec->st = systrace_spawn(rec->prog_argv, env, &rec->stcfg, &sops, &rec->child, why, sizeof(why), err,
		                         sizeof(err));
		free(env);
		if (!rec->st) {
			fprintf(stderr, "layerprof record: cannot trace syscalls: %s\n", err);
			return LP_EXIT_FAILURE;
		}
		if (!rec->quiet)
			fprintf(stderr, "layerprof record: syscalls: %s\n", why);
		if (rec->kt)
			ktrace_follow(rec->kt, rec->child, true);
		recpower_set_pid(&rec->power, rec->child);
		record_counters_late(rec);
		return RECORD_GO_ON;
	}
	sigemptyset(&cmd.reset);
	sigaddset(&cmd.reset, SIGINT);
	sigaddset(&cmd.reset, SIGTERM);
	sigaddset(&cmd.reset, SIGHUP);
	sigaddset(&cmd.reset, SIGXFSZ);
	cmd.envp = env;
	if ((rec->dyn.on && !recdyn_patching(&rec->dyn)) || rec->ctr.on) {
		cmd.held = record_held;
		cmd.held_ctx = rec;
	}
	pid = launch_spawn(&cmd, &step);
	free(env);
	if (pid < 0 && step == LAUNCH_HELD) {
		fprintf(stderr, "layerprof record: --dynamic: %s\n", rec->dyn.err);
		return LP_EXIT_FAILURE;
	}
	if (pid < 0 && step == LAUNCH_EXEC) {
		fprintf(stderr, "layerprof record: cannot run '%s': %s\n", rec->prog_argv[0], strerror(-pid));
		return pid == -ENOENT ? 127 : 126;
	}
	if (pid < 0) {
		fprintf(stderr, "layerprof record: cannot %s: %s\n", step == LAUNCH_PIPE ? "create pipe" : "fork",
		        strerror(-pid));
		return LP_EXIT_FAILURE;
	}
	rec->child = pid;
	recpower_set_pid(&rec->power, pid);
	if (rec->kt)
		ktrace_follow(rec->kt, pid, true);
	return RECORD_GO_ON;
}

/* Whether the syscall tracer's ptrace backend traces the program: the
 * program cannot go on without it. */
static bool record_sys_ptraced(const struct recorder *rec)
{
	return rec->st && systrace_backend(rec->st) == SYSTRACE_PTRACE;
}

/* Whether a ptrace tracer (the syscall tracer's, or the dynamic tracer's
 * breakpoints) reaps the tracees itself: a wait of ours would take their
 * stops. */
static bool record_ptraced(const struct recorder *rec)
{
	return record_sys_ptraced(rec) || recdyn_reaps(&rec->dyn);
}

/* The program's exit status from the tracer that reaped it. */
static bool record_tracer_exited(struct recorder *rec, int *status)
{
	if (record_sys_ptraced(rec))
		return systrace_exited(rec->st, status);
	return recdyn_exited(&rec->dyn, status);
}

/* Drains the rings until the program and its descendants have ended, or
 * a second SIGINT; forwards the other signals to the program. */
static void record_loop(struct recorder *rec)
{
	unsigned poll_us = RECORD_POLL_MIN_US;
	uint64_t last_flush = clocksync_monotonic_ns();

	for (;;) {
		long consumed = drain_poll(rec->d);
		pid_t p = 0;
		int s;

		if (consumed < 0)
			break;
		if (clocksync_monotonic_ns() - last_flush >= RECORD_FLUSH_NS) {
			drain_flush_idle(rec->d);
			last_flush = clocksync_monotonic_ns();
		}
		if (recpower_flush(&rec->power, &rec->tf, false) < 0)
			fprintf(stderr, "layerprof record: cannot write trace '%s': %s: no more power samples\n",
			        rec->out, strerror(-rec->tf.error));
		if (forward_signal && !rec->child_done) {
			kill(rec->child, forward_signal);
			forward_signal = 0;
		}
		if (record_ptraced(rec)) {
			/* the tracer reaps its tracees itself */
			if (!rec->child_done && record_tracer_exited(rec, &s)) {
				record_counter_totals(rec);
				drain_process_exited(rec->d, rec->child, s);
				rec->status = s;
				rec->child_done = true;
			}
			if (rec->child_done)
				break;
		}
		while (!record_ptraced(rec) && (p = waitpid(-1, &s, WNOHANG)) > 0) {
			if (p == rec->child)
				record_counter_totals(rec);
			drain_process_exited(rec->d, p, s);
			if (p == rec->child) {
				rec->status = s;
				rec->child_done = true;
			}
		}
		if (p < 0 && errno == ECHILD)
			break;
		if (stop_requests > 1) {
			if (record_sys_ptraced(rec) && !rec->stcfg.keep_running)
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
		if (consumed > 0 || drain_pressure(rec->d))
			poll_us = RECORD_POLL_MIN_US;
		if (consumed >= (long)rec->cfg.chunk_slots || drain_pressure(rec->d))
			continue;
		if (!consumed && poll_us < RECORD_POLL_MAX_US)
			poll_us *= 2;
		drain_sleep(rec->d, poll_us);
	}
}

/* The events lost, each cause with its own warning. */
static void record_warn_lost(const struct recorder *rec, const struct drain_stats *st, uint64_t sys_lost)
{
	uint64_t ring_lost;

	if (st->unrecorded_threads)
		fprintf(stderr,
		        "layerprof record: warning: %llu threads could not be recorded (%s): %llu of their events "
		        "lost\n",
		        (unsigned long long)st->unrecorded_threads,
		        st->unrecorded_error ? strerror((int)st->unrecorded_error) : "no ring",
		        (unsigned long long)st->unrecorded_events);
	/* the drain counts the syscall records lost, and the events of threads
	 * without a ring, among its lost events */
	ring_lost = st->lost > sys_lost + st->unrecorded_events ? st->lost - sys_lost - st->unrecorded_events : 0;
	if (st->nospace)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (no space left for the rings' pages in the "
		        "session's file system: %s)\n",
		        (unsigned long long)st->nospace, rec->session);
	ring_lost = ring_lost > st->nospace ? ring_lost - st->nospace : 0;
	if (ring_lost && rec->cfg.ring_full == LP_RING_FULL_DISCARD)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (rings full with --discard: try without it, "
		        "or a larger --buffer-size)\n",
		        (unsigned long long)ring_lost);
	else if (ring_lost && st->wait_gave_up)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (the program stopped waiting for the "
		        "recorder %llu times: it was stopped, or made no poll for %u ms)\n",
		        (unsigned long long)ring_lost, (unsigned long long)st->wait_gave_up, LP_STALL_MS_DEFAULT);
	else if (ring_lost)
		fprintf(stderr,
		        "layerprof record: warning: %llu events lost (not for want of room: calls in signal "
		        "handlers that interrupted a traced call, or heap records the runtime could not make)\n",
		        (unsigned long long)ring_lost);
	if (rec->tf.error)
		fprintf(stderr,
		        "layerprof record: warning: %llu events not written to '%s' (%s): the trace ends where "
		        "writing stopped, and says so\n",
		        (unsigned long long)rec->tf.unwritten, rec->out, strerror(-rec->tf.error));
}

/* Ends the trace and tells what it holds and what was lost.  Returns the
 * exit code: the program's, passed through. */
static int record_summary(struct recorder *rec)
{
	struct drain_stats st;
	uint64_t sys_lost = 0;
	bool tty = !rec->quiet && isatty(STDERR_FILENO);
	int r;

	/* the program has ended: the last power sample */
	recpower_finish(&rec->power, &rec->tf, rec->quiet, tty);
	/* the kernel's last records go in before the streams end */
	ktrace_finish(rec->kt);
	if (rec->dyn.on)
		recdyn_finish(&rec->dyn);
	r = drain_finish(rec->d);
	drain_get_stats(rec->d, &st);
	if (rec->kt) {
		struct ktrace_stats kst;

		ktrace_get_stats(rec->kt, &kst);
		if (kst.lost) {
			char per[400];
			size_t n = 0;

			per[0] = '\0';
			for (uint32_t c = 0; c < kst.ncpus; c++)
				if (kst.lost_cpu[c] && n < sizeof(per)) {
					int w = snprintf(per + n, sizeof(per) - n, "%sCPU %d: %llu", n ? ", " : "",
					                 kst.cpus[c], (unsigned long long)kst.lost_cpu[c]);

					n += w > 0 ? (size_t)w : 0;
				}
			fprintf(stderr,
			        "layerprof record: warning: %llu kernel records lost (%s; kernel buffers full: the "
			        "recorder fell behind; try a larger --kernel-buffer)\n",
			        (unsigned long long)kst.lost, per);
		}
		sys_lost += kst.lost;
		if (kst.cut)
			fprintf(stderr,
			        "layerprof record: warning: %llu kernel records longer than %u bytes were stored cut: "
			        "they read as undecodable\n",
			        (unsigned long long)kst.cut, KERNEVENT_RAW_MAX);
		if (tty)
			fprintf(stderr,
			        "layerprof record: kernel: %llu records of %u tracepoints read, %llu copies into the "
			        "program's threads' streams (one per thread a record concerns)\n",
			        (unsigned long long)kst.records, kst.events, (unsigned long long)kst.kept);
	}
	sys_lost += recdyn_summary(&rec->dyn, rec->quiet, tty);
	if (rec->st) {
		struct systrace_stats sst;

		systrace_get_stats(rec->st, &sst);
		if (sst.lost)
			fprintf(stderr,
			        "layerprof record: warning: %llu syscall records lost (kernel buffers full: the "
			        "recorder fell behind; try a larger --syscall-buffer)\n",
			        (unsigned long long)sst.lost);
		sys_lost += sst.lost;
		systrace_free(rec->st);
		rec->st = NULL;
	}
	if (r)
		return LP_EXIT_FAILURE;
	record_warn_lost(rec, &st, sys_lost);
	if (tty)
		fprintf(stderr, "layerprof record: %llu events from %llu threads into '%s' (%llu bytes)\n",
		        (unsigned long long)(st.events - rec->tf.unwritten), (unsigned long long)st.streams, rec->out,
		        (unsigned long long)rec->tf.written);
	if (tty && st.waits)
		fprintf(stderr,
		        "layerprof record: full rings made the program's threads wait %llu times, %.1f ms in all "
		        "(--discard drops instead)\n",
		        (unsigned long long)st.waits, (double)st.wait_ns / 1e6);
	if (tty && rec->mem.fold_ns)
		fprintf(stderr, "layerprof record: %llu short-lived heap blocks (%llu bytes) folded into counts\n",
		        (unsigned long long)st.folded_blocks, (unsigned long long)st.folded_bytes);
	/* as report does for the same filters: a pattern no function the
	 * program called matched kept nothing out, or nothing in */
	for (size_t i = 0; rec->cls && i < rec->fopts.n_only; i++)
		if (!classifier_matched(rec->cls, true, i))
			fprintf(stderr, "layerprof record: warning: %s '%s' matches no function the program called\n",
			        rec->fopts.only_opt[i] ? rec->fopts.only_opt[i] : "-F", rec->fopts.only[i]);
	for (size_t i = 0; rec->cls && i < rec->fopts.n_exclude; i++)
		if (!classifier_matched(rec->cls, false, i))
			fprintf(stderr, "layerprof record: warning: -N '%s' matches no function the program called\n",
			        rec->fopts.exclude[i]);
	print_exit(rec->prog_argv[0], rec->status);
	if (!rec->child_done)
		return 130;
	if (WIFEXITED(rec->status))
		return WEXITSTATUS(rec->status);
	if (WIFSIGNALED(rec->status))
		return 128 + WTERMSIG(rec->status);
	return LP_EXIT_FAILURE;
}

/* Frees what the recording holds and closes the trace; an orderly end
 * leaves nothing for recover.  Returns exit_code, or a failure when the
 * trace's last write fails. */
static int record_release(struct recorder *rec, int exit_code)
{
	int r;

	systrace_free(rec->st);
	ktrace_free(rec->kt);
	recdyn_free(&rec->dyn);
	recctr_release(&rec->ctr);
	recpower_release(&rec->power);
	drain_free(rec->d);
	classifier_free(rec->cls);
	symbolizer_free(rec->sym);
	if (rec->note_fd >= 0) {
		close(rec->note_fd);
		unlinkat(rec->dirfd, TRACEDIR_RECORDING, 0);
	}
	r = tracefile_close(&rec->tf);
	if (r && exit_code == 0) {
		fprintf(stderr, "layerprof record: cannot write trace '%s': %s\n", rec->out, strerror(-r));
		exit_code = LP_EXIT_FAILURE;
	}
	if (rec->dirfd >= 0)
		close(rec->dirfd);
	return exit_code;
}

int cmd_record(int argc, char **argv)
{
	struct recorder rec = {
		.out = RECORD_DEFAULT_OUTPUT,
		.sys_buffer = RECORD_SYSCALL_BUFFER,
		.clock_opt = "auto",
		.stcfg = { .backend = SYSTRACE_AUTO },
		.cfg = { .ring_full = LP_RING_FULL_WAIT },
		.tf = { .fd = -1 },
		.dirfd = -1,
		.note_fd = -1,
	};
	int r;

	r = record_parse(&rec, argc, argv);
	if (r != RECORD_GO_ON) {
		recdyn_free(&rec.dyn);
		return r;
	}
	r = record_setup(&rec);
	if (r == RECORD_GO_ON)
		r = record_open(&rec);
	if (r == RECORD_GO_ON)
		r = record_spawn(&rec);
	if (r == RECORD_GO_ON) {
		record_loop(&rec);
		r = record_summary(&rec);
	}
	return record_release(&rec, r);
}
