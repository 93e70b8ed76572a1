/* Sessions of the agent: programs it started or attached to, each with its
 * drain, and the code mappings it has seen. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/chunk.h"
#include "common/clocksync.h"
#include "common/encoder.h"
#include "common/kernevent.h"
#include "common/launch.h"
#include "common/meta.h"
#include "common/progpath.h"
#include "lp_arch.h"
#include "dyntrace/udrain.h"
#include "ktrace/kdrain.h"
#include "systrace/sysdrain.h"

extern char **environ;

static int on_chunk(void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint64_t events)
{
	struct session *s = ctx;
	struct conn *c = s->agent->conn;

	if (!c || !conn_ready(c)) {
		/* no host to take it: tracing is off then, so only the rest of
		 * what was in the rings goes; counted all the same */
		s->chunks_dropped++;
	} else if (conn_queue_chunk(c, s->id, type, payload, len, events)) {
		/* the host's queue is full: the host hears of the events as
		 * lost (tell_lost), like those the rings dropped */
		s->chunks_dropped++;
		s->queue_lost += events;
	}
	return 0;
}

/* An unmapped segment is not sent again to a host that comes back. */
static void on_unmap(void *ctx, uint32_t image, uint64_t ns, uint64_t start, uint64_t end)
{
	struct session *s = ctx;
	size_t i;

	(void)ns;
	for (i = 0; i < s->nmaps; i++) {
		struct agent_map *m = &s->maps[i];

		if (m->image == image && m->start == start && m->end == end) {
			free(m->path);
			memmove(m, m + 1, (s->nmaps - i - 1) * sizeof(*m));
			s->nmaps--;
			return;
		}
	}
}

static void on_map(void *ctx, uint32_t image, const struct lp_event *ev)
{
	struct session *s = ctx;
	struct agent_map *m, *n;
	size_t i;

	for (i = 0; i < s->nmaps; i++) {
		m = &s->maps[i];
		if (m->image == image && m->start == ev->start && m->end == ev->end && m->base == ev->base)
			return;
	}
	if (s->nmaps >= AGENT_MAPS_MAX)
		return;
	n = realloc(s->maps, (s->nmaps + 1) * sizeof(*n));
	if (!n)
		return;
	s->maps = n;
	m = &s->maps[s->nmaps];
	memset(m, 0, sizeof(*m));
	m->path = malloc(ev->str_len + 1);
	if (!m->path)
		return;
	memcpy(m->path, ev->str, ev->str_len);
	m->path[ev->str_len] = '\0';
	m->image = image;
	m->pid = (uint32_t)s->pid;
	m->base = ev->base;
	m->start = ev->start;
	m->end = ev->end;
	m->offset = ev->offset;
	m->build_id_len = (uint16_t)(ev->build_id_len <= 64 ? ev->build_id_len : 64);
	memcpy(m->build_id, ev->build_id, m->build_id_len);
	s->nmaps++;
}

static bool on_collect(void *ctx)
{
	struct session *s = ctx;

	if (s->st)
		systrace_poll(s->st);
	if (s->kt)
		ktrace_poll(s->kt);
	if (s->up)
		uprobes_poll(s->up);
	/* a process whose executable has no plan (exec'd) asks for one: it
	 * is planned with the session's patterns */
	if (s->dp && drain_plan_wants(s->drain) != s->plans_answered) {
		s->plans_answered = drain_plan_wants(s->drain);
		s->nplans = dpatch_serve(s->dp, s->dyn_strings ? &s->dyn_cfg : NULL, s->dir, s->nplans);
		drain_set_plans(s->drain, s->nplans);
		drain_plan_answered(s->drain, s->plans_answered);
	}
	return s->st && systrace_backlog(s->st);
}

/* Opens the kernel tracer for s before its program starts.  Returns 0 or
 * -1 with the reason in err. */
int session_kernel_open(struct session *s, const struct session_syscalls *sys, char *err, size_t errlen)
{
	struct ktrace_ops kops = kdrain_ops(&s->feed);
	char kerr[600];

	if (!sys || !sys->kernel)
		return 0;
	s->kt = ktrace_open(&sys->kcfg, &kops, s->kernel_warn, sizeof(s->kernel_warn), kerr, sizeof(kerr));
	if (!s->kt) {
		snprintf(err, errlen, "cannot record kernel events: %s", kerr);
		return -1;
	}
	s->ksystem = sys->kcfg.system;
	return 0;
}

/* The dynamic tracer's probes on the held child (launch_cmd.held and
 * systrace_config.held). */
static int dynamic_held(void *ctx, pid_t pid)
{
	struct session *s = ctx;

	return uprobes_attach(s->up, pid, s->up_err, sizeof(s->up_err));
}

static int dynamic_held_sys(void *ctx, pid_t pid, char *err, size_t errlen)
{
	struct session *s = ctx;
	int r = dynamic_held(ctx, pid);

	if (r)
		snprintf(err, errlen, "%s", s->up_err);
	return r;
}

/* A copy of cfg's patterns that lasts as long as s (cfg's point into the
 * request), for the programs the traced one execs.  Without memory the
 * copy is not made: those programs then run without a plan. */
static void dynamic_keep(struct session *s, const struct uprobes_config *cfg)
{
	size_t len = 0, at = 0;

	for (uint32_t i = 0; i < cfg->npatterns; i++)
		len += strlen(cfg->patterns[i]) + 1;
	for (uint32_t i = 0; i < cfg->nlibs; i++)
		len += strlen(cfg->libs[i].file) + strlen(cfg->libs[i].glob) + 2;
	s->dyn_strings = malloc(len + 1);
	if (!s->dyn_strings)
		return;
	s->dyn_cfg = *cfg;
	s->dyn_cfg.path = NULL;
	for (uint32_t i = 0; i < cfg->npatterns; i++) {
		s->dyn_cfg.patterns[i] = strcpy(s->dyn_strings + at, cfg->patterns[i]);
		at += strlen(cfg->patterns[i]) + 1;
	}
	for (uint32_t i = 0; i < cfg->nlibs; i++) {
		s->dyn_cfg.libs[i].file = strcpy(s->dyn_strings + at, cfg->libs[i].file);
		at += strlen(cfg->libs[i].file) + 1;
		s->dyn_cfg.libs[i].glob = strcpy(s->dyn_strings + at, cfg->libs[i].glob);
		at += strlen(cfg->libs[i].glob) + 1;
	}
}

/* The patch backend's state of s, gone. */
static void dynamic_free(struct session *s)
{
	dpatch_free(s->dp);
	s->dp = NULL;
	free(s->dyn_strings);
	s->dyn_strings = NULL;
}

/* Opens the dynamic tracer for s on the program's file (found as execvp
 * would).  Returns 0 or -1 with the reason in err. */
static int dynamic_open(struct session *s, const struct session_syscalls *sys, const char *prog, char *err,
                        size_t errlen)
{
	struct uprobes_config cfg;
	struct uprobes_ops ops = udrain_ops(&s->feed);
	char path[PATH_MAX], uerr[600];
	int r;

	if (!sys || !sys->dynamic)
		return 0;
	r = progpath_find(prog, path, sizeof(path));
	if (r) {
		snprintf(err, errlen, "cannot run '%s': %s", prog, strerror(-r));
		return -1;
	}
	cfg = sys->ucfg;
	cfg.path = path;
	/* in-process patching where it is built; uprobes for a program the
	 * runtime cannot patch (static), and elsewhere */
	if (dpatch_supported()) {
		s->dp = dpatch_open(&cfg, uerr, sizeof(uerr));
		if (s->dp) {
			dynamic_keep(s, &cfg);
			return 0;
		}
		if (errno != ENOTSUP || cfg.libcalls) {
			snprintf(err, errlen, "dynamic: %s", uerr);
			return -1;
		}
	}
	s->up = uprobes_open(&cfg, &ops, s->up_err, sizeof(s->up_err));
	if (!s->up) {
		snprintf(err, errlen, "dynamic: %s", dpatch_supported() ? uerr : s->up_err);
		return -1;
	}
	return 0;
}

/* The patch plan into the new session, before the program starts. */
static int dynamic_plan(struct session *s, char *err, size_t errlen)
{
	char perr[600];
	int n;

	if (!s->dp)
		return 0;
	n = dpatch_write(s->dp, s->dir, perr, sizeof(perr));
	if (n >= 0) {
		s->nplans = (unsigned)n;
		drain_set_plans(s->drain, (uint32_t)n);
		return 0;
	}
	snprintf(err, errlen, "dynamic: %s", perr);
	return -1;
}

/* What the patch plan left out, in the agent's log. */
static void dynamic_plan_log(struct session *s)
{
	struct uprobes_stats st;
	bool applied;

	dpatch_get_stats(s->dp, &st, &applied);
	if (!applied)
		agent_log("session %u: no process applied the patch plan: no function traced", s->id);
	else
		agent_log("session %u: %u of %u functions patched", s->id, st.functions, st.candidates);
	for (size_t i = 0; applied && i < st.nskipped && i < 10; i++)
		agent_log("session %u: %s not traced (%s)", s->id, st.skipped[i].name, st.skipped[i].why);
}

/* The tracepoint formats, after META, for the host's decoding. */
void session_send_kformats(struct session *s)
{
	struct conn *c = s->agent->conn;

	if (!s->kt || !c || !conn_ready(c))
		return;
	for (size_t i = 0; i < ktrace_format_chunks(s->kt); i++) {
		size_t len;
		const uint8_t *p = ktrace_format_chunk(s->kt, i, &len);

		conn_queue_chunk(c, s->id, LP_CHUNK_KFORMAT, p, len, 0);
	}
}

/* The drain's callbacks for s (started or attached), with the syscall
 * tracer polled from the drain when sys asks for it. */
struct drain_ops session_drain_ops(struct session *s, const struct session_syscalls *sys)
{
	struct drain_ops ops = { .ctx = s, .chunk = on_chunk, .map = on_map, .unmap = on_unmap };

	if (sys && (sys->on || sys->kernel || sys->dynamic))
		ops.collect = on_collect;
	return ops;
}

/* The environment of a started program (common/launch.h): the agent's,
 * with the session, the runtime (and the heap interposers) preloaded
 * before the program's own LD_PRELOAD, and with memory tracing its
 * options.  NULL when out of memory; the caller frees it. */
static char **program_env(const struct session *s, const struct memopts *mem)
{
	const struct agent *a = s->agent;
	char preload[2 * PATH_MAX + 2];
	struct launch_env le = { .session = s->dir, .preload = preload };

	if (mem && mem->on) {
		snprintf(preload, sizeof(preload), "%s:%s", a->lib, a->memlib);
		le.memory = true;
		le.mem_depth = memopts_depth(mem);
		le.mem_keep_alive = mem->keep_alive;
	} else {
		snprintf(preload, sizeof(preload), "%s", a->lib);
	}
	return launch_env_new(environ, &le);
}

/* Starts argv under the syscall tracer.  The program gets what a plain
 * start gives it: stdin from /dev/null and SIGPIPE at its default (the
 * agent ignores it; an ignored signal stays ignored across exec), set here
 * for the moment of the fork, which the tracer makes.  Returns 0 or -1
 * with the reason in err. */
static int spawn_traced(struct session *s, char **argv, const struct session_syscalls *sys, char **env, char *err,
                        size_t errlen)
{
	struct systrace_ops ops = sysdrain_ops(&s->feed);
	struct systrace_config cfg = sys->cfg;
	char why[sizeof(s->sys_why)], terr[600];
	int r, in_fd = -1, null_fd;
	pid_t pid = 0;

	r = systrace_check_program(argv[0]);
	if (r) {
		snprintf(err, errlen, "cannot run '%s': %s", argv[0], strerror(-r));
		return -1;
	}
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd >= 0) {
		in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		dup2(null_fd, STDIN_FILENO);
		close(null_fd);
	}
	signal(SIGPIPE, SIG_DFL);
	if (s->up) {
		cfg.held = dynamic_held_sys;
		cfg.held_ctx = s;
	}
	s->st = systrace_spawn(argv, env, &cfg, &ops, &pid, why, sizeof(why), terr, sizeof(terr));
	signal(SIGPIPE, SIG_IGN);
	if (in_fd >= 0) {
		dup2(in_fd, STDIN_FILENO);
		close(in_fd);
	}
	if (!s->st) {
		snprintf(err, errlen, "cannot trace syscalls: %s", terr);
		return -1;
	}
	s->pid = pid;
	snprintf(s->sys_why, sizeof(s->sys_why), "%s", why);
	return 0;
}

struct session *session_new(struct agent *a, enum session_kind kind)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->agent = a;
	s->id = ++a->next_session;
	s->kind = kind;
	s->status = -1;
	s->dirfd = -1;
	return s;
}

void session_link(struct session *s)
{
	s->next = s->agent->sessions;
	s->agent->sessions = s;
}

/* The META chunk a trace file starts with (common/meta.h), for the host's
 * saved trace. */
void session_send_meta(struct session *s, int argc, char *const *argv)
{
	struct conn *c = s->agent->conn;
	struct meta m;
	char text[META_MAX];
	size_t n;

	if (!c || !conn_ready(c))
		return;
	meta_init(&m);
	m.clock = s->agent->cfg.clock;
	m.has_session = true;
	m.session = s->id;
	m.pid = (int)s->pid;
	m.syscalls = s->st != NULL;
	if (s->kt) {
		struct ktrace_stats kst;

		ktrace_get_stats(s->kt, &kst);
		m.kernel_events = kst.events;
		m.kernel_system = s->ksystem;
	}
	m.attached = s->kind != SESSION_STARTED;
	/* as record --memory writes it; an attached program's options are
	 * its own, unknown here */
	if (s->mem == SESSION_MEM_PRELOADED && s->kind == SESSION_STARTED) {
		m.mem = META_MEM_OPTIONS;
		m.mem_depth = memopts_depth(&s->mem_opts);
		m.mem_keep_alive = s->mem_opts.keep_alive;
		m.mem_fold_ns = s->mem_opts.fold_ns;
	} else if (s->mem == SESSION_MEM_PRELOADED) {
		m.mem = META_MEM_ON;
	}
	m.argc = argc;
	m.argv = argv;
	n = meta_format(&m, text, sizeof(text));
	conn_queue_chunk(c, s->id, LP_CHUNK_META, (const uint8_t *)text, n, 0);
}

struct session *session_start(struct agent *a, char **argv, int argc, const struct session_syscalls *sys,
                              const struct memopts *mem, char *err, size_t errlen)
{
	struct drain_ops ops;
	struct drain_config cfg;
	struct session *s = session_new(a, SESSION_STARTED);
	struct launch_cmd cmd = { .argv = argv, .stdin_null = true };
	enum launch_step step;
	char **env = NULL, path[PATH_MAX];
	pid_t pid;
	int r;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (mem && mem->on) {
		s->mem = SESSION_MEM_PRELOADED;
		s->mem_opts = *mem;
	}
	if (sessiondir_name(&a->private, "agent", s->dir, sizeof(s->dir))) {
		snprintf(err, errlen, "cannot name a session in '%s'", a->private.path);
		free(s);
		return NULL;
	}
	ops = session_drain_ops(s, sys);
	cfg = a->cfg;
	if (mem && mem->on)
		cfg.mem_fold_ns = mem->fold_ns;
	cfg.kernel_waits_for_syscalls = sys && sys->on && sys->kernel;
	if (session_kernel_open(s, sys, err, errlen)) {
		free(s);
		return NULL;
	}
	if (dynamic_open(s, sys, argv[0], err, errlen)) {
		ktrace_free(s->kt);
		free(s);
		return NULL;
	}
	s->drain = drain_new(s->dir, &cfg, &ops);
	if (!s->drain) {
		snprintf(err, errlen, "cannot create session '%s': %s", s->dir, strerror(errno));
		ktrace_free(s->kt);
		uprobes_free(s->up);
		dynamic_free(s);
		free(s);
		return NULL;
	}
	s->feed.drain = s->drain;
	if (s->up)
		drain_set_eager(s->drain);
	if (dynamic_plan(s, err, errlen))
		goto fail;
	drain_set_enabled(s->drain, a->tracing);
	drain_set_hold(s->drain, a->hold);
	a->hold = false; /* one program per request */
	if (session_apply_filters(s)) {
		snprintf(err, errlen, "cannot set filters in session '%s'", s->dir);
		goto fail;
	}
	env = program_env(s, mem);
	if (!env) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (sys && sys->on) {
		s->feed.on = a->tracing;
		if (spawn_traced(s, argv, sys, env, err, errlen))
			goto fail;
		pid = s->pid;
		goto started;
	}
	/* found here, as execvp would */
	r = progpath_find(argv[0], path, sizeof(path));
	if (r) {
		snprintf(err, errlen, "cannot run '%s': %s", argv[0], strerror(-r));
		goto fail;
	}
	cmd.path = path;
	cmd.envp = env;
	if (s->up) {
		cmd.held = dynamic_held;
		cmd.held_ctx = s;
	}
	/* the agent ignores SIGPIPE; an ignored signal stays so across exec */
	sigemptyset(&cmd.reset);
	sigaddset(&cmd.reset, SIGPIPE);
	pid = launch_spawn(&cmd, &step);
	if (pid < 0) {
		if (step == LAUNCH_HELD)
			snprintf(err, errlen, "dynamic: %s", s->up_err);
		else if (step == LAUNCH_EXEC)
			snprintf(err, errlen, "cannot run '%s': %s", argv[0], strerror(-pid));
		else
			snprintf(err, errlen, "cannot %s: %s", step == LAUNCH_PIPE ? "create pipe" : "fork",
			         strerror(-pid));
		goto fail;
	}
	s->pid = pid;
started:
	free(env);
	if (s->kt || s->up)
		s->feed.on = a->tracing;
	if (s->kt)
		ktrace_follow(s->kt, pid, true);
	session_link(s);
	session_send_meta(s, argc, argv);
	session_send_kformats(s);
	if (s->st)
		agent_log("session %u: started '%s' as pid %d, syscalls by %s%s", s->id, argv[0], (int)pid, s->sys_why,
		          s->mem ? ", heap operations too" : "");
	else
		agent_log("session %u: started '%s' as pid %d%s", s->id, argv[0], (int)pid,
		          s->mem ? ", heap operations too" : "");
	return s;
fail:
	free(env);
	drain_free(s->drain);
	ktrace_free(s->kt);
	uprobes_free(s->up);
	dynamic_free(s);
	free(s);
	return NULL;
}

const char *session_mem_name(enum session_mem_state m)
{
	return m == SESSION_MEM_PRELOADED ? "preloaded" : "none";
}

/* Whether process pid has the heap interposers mapped: it was started
 * with them preloaded (an attached program's heap stream depends on it).
 * Reads /proc/<pid>/maps a line at a time. */
static bool has_memlib(pid_t pid)
{
	char path[64], line[PATH_MAX + 128];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *slash = strrchr(line, '/');

		found = slash && !strncmp(slash + 1, AGENT_MEM_LIB, sizeof(AGENT_MEM_LIB) - 1);
	}
	fclose(f);
	return found;
}

struct session *session_attach(struct agent *a, pid_t pid, const struct session_syscalls *sys, char *err, size_t errlen)
{
	struct drain_ops ops;
	struct session *s;
	uid_t owner, puid;
	char cmd[64], *cmd_argv[] = { cmd, NULL };
	int fd;

	for (s = a->sessions; s; s = s->next) {
		if (s->pid == pid && !s->exited) {
			snprintf(err, errlen, "process %d is already traced (session %u)", (int)pid, s->id);
			return NULL;
		}
	}
	if (kill(pid, 0) && errno == ESRCH) {
		snprintf(err, errlen, "no process %d", (int)pid);
		return NULL;
	}
	s = session_new(a, SESSION_ATTACHED);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fd = attachdir_find(a, pid, s->entry, sizeof(s->entry), &owner, &puid);
	if (fd < 0) {
		if (fd == -EPERM)
			snprintf(err, errlen,
			         "process %d is not attachable: its entry in %s is not a directory of its user "
			         "(uid %u) alone",
			         (int)pid, attachdir_path(a), (unsigned)puid);
		else if (fd == -ESRCH)
			snprintf(err, errlen, "no process %d", (int)pid);
		else if (fd == -ENOENT)
			snprintf(err, errlen,
			         "process %d is not attachable (not built with -finstrument-functions and linked "
			         "with -llayerprof, or started before %s existed)",
			         (int)pid, attachdir_path(a));
		else
			snprintf(err, errlen, "cannot attach to process %d: %s", (int)pid, strerror(-fd));
		free(s);
		return NULL;
	}
	s->dirfd = fd;
	snprintf(s->dir, sizeof(s->dir), "%s/%s", attachdir_path(a), s->entry);
	ops = session_drain_ops(s, sys);
	if (session_kernel_open(s, sys, err, errlen)) {
		close(s->dirfd);
		free(s);
		return NULL;
	}
	s->drain = drain_attach(fd, s->dir, owner, &ops);
	s->feed.drain = s->drain;
	if (s->drain)
		drain_set_chunk_bytes(s->drain, AGENT_CHUNK_BYTES);
	if (!s->drain) {
		if (errno == ENOENT)
			snprintf(err, errlen,
			         "process %d is not attachable (not built with -finstrument-functions and linked "
			         "with -llayerprof, or started before %s existed)",
			         (int)pid, attachdir_path(a));
		else if (errno == EPERM)
			snprintf(err, errlen,
			         "process %d is not attachable: its control file in '%s' is not its user's", (int)pid,
			         s->dir);
		else
			snprintf(err, errlen, "cannot attach to process %d: %s", (int)pid, strerror(errno));
		ktrace_free(s->kt);
		close(s->dirfd);
		free(s);
		return NULL;
	}
	s->pid = pid;
	if (s->kt) {
		s->feed.on = a->tracing;
		ktrace_follow(s->kt, pid, false);
	}
	s->mem = has_memlib(pid) ? SESSION_MEM_PRELOADED : SESSION_MEM_NONE;
	if (session_syscalls_attach(s, pid, sys, err, errlen)) {
		drain_free(s->drain);
		ktrace_free(s->kt);
		close(s->dirfd);
		free(s);
		return NULL;
	}
	session_link(s);
	snprintf(cmd, sizeof(cmd), "attach %d", (int)pid);
	session_send_meta(s, 1, cmd_argv);
	session_send_kformats(s);
	session_apply_filters(s);
	drain_set_enabled(s->drain, a->tracing);
	if (s->st)
		agent_log("session %u: attached to pid %d, syscalls by %s, heap interposers %s", s->id, (int)pid,
		          s->sys_why, session_mem_name(s->mem));
	else
		agent_log("session %u: attached to pid %d, heap interposers %s", s->id, (int)pid,
		          session_mem_name(s->mem));
	return s;
}

int session_syscalls_attach(struct session *s, pid_t pid, const struct session_syscalls *sys, char *err, size_t errlen)
{
	struct systrace_ops sops = sysdrain_ops(&s->feed);
	struct systrace_config cfg;
	char terr[600];

	if (!sys || !sys->on)
		return 0;
	cfg = sys->cfg;
	/* ptrace: detach at the end, leaving the program running */
	cfg.keep_running = true;
	s->feed.on = s->agent->tracing;
	s->st = systrace_attach(pid, &cfg, &sops, s->sys_why, sizeof(s->sys_why), terr, sizeof(terr));
	if (!s->st) {
		snprintf(err, errlen, "cannot trace the syscalls of process %d: %s", (int)pid, terr);
		return -1;
	}
	return 0;
}

int session_apply_filters(struct session *s)
{
	struct agent *a = s->agent;

	if (s->exited)
		return 0;
	if (!a->filtered) {
		drain_clear_filters(s->drain);
		return 0;
	}
	return drain_set_filters(s->drain, a->filter_addrs, a->n_only, a->filter_addrs + a->n_only, a->n_exclude,
	                         a->max_depth, a->min_ns);
}

void session_set_tracing(struct session *s, bool on)
{
	if (!s->exited) {
		drain_set_enabled(s->drain, on);
		s->feed.on = on;
	}
}

bool session_reaped(struct session *s, int *status)
{
	return s->st && systrace_exited(s->st, status);
}

static void tell_lost(struct session *s)
{
	struct drain_stats st;
	struct conn *c = s->agent->conn;
	char msg[160];
	int n;

	uint64_t lost;

	drain_get_stats(s->drain, &st);
	lost = st.lost + s->queue_lost;
	if (lost <= s->lost_told || !c || !conn_ready(c))
		return;
	n = snprintf(msg, sizeof(msg), "session=%u\nevent=lost\nlost=%llu\ntime_ns=%llu\n", s->id,
	             (unsigned long long)(lost - s->lost_told), (unsigned long long)clocksync_monotonic_ns());
	if (!conn_queue(c, LP_FRAME_STATUS, msg, (size_t)n))
		s->lost_told = lost;
}

long session_poll(struct session *s)
{
	long r = drain_poll(s->drain);

	tell_lost(s);
	return r;
}

void session_exited(struct session *s, int status)
{
	s->exited = true;
	s->status = status;
	drain_process_exited(s->drain, s->pid, status);
}

void session_send_maps(struct session *s)
{
	struct conn *c = s->agent->conn;
	struct encoder *e;
	const uint8_t *payload;
	size_t i, len;

	if (!s->nmaps || !c)
		return;
	e = malloc(sizeof(*e));
	if (!e)
		return;
	for (i = 0; i < s->nmaps; i++) {
		const struct agent_map *m = &s->maps[i];

		if (!i || m->image != e->image) {
			if (i && (len = encoder_take(e, &payload)))
				conn_queue_chunk(c, s->id, LP_CHUNK_EVENTS, payload, len, 0);
			encoder_init(e, m->image, m->pid, m->pid);
		}
		encoder_map(e, clocksync_monotonic_ns(), m->base, m->start, m->end, m->offset, m->build_id,
		            m->build_id_len, m->path, strlen(m->path));
		if (encoder_full(e) && (len = encoder_take(e, &payload)))
			conn_queue_chunk(c, s->id, LP_CHUNK_EVENTS, payload, len, 0);
	}
	if ((len = encoder_take(e, &payload)))
		conn_queue_chunk(c, s->id, LP_CHUNK_EVENTS, payload, len, 0);
	free(e);
}

void session_finish(struct session *s)
{
	if (s->finished)
		return;
	s->finished = true;
	/* the kernel's last records go in before the streams end */
	ktrace_finish(s->kt);
	uprobes_finish(s->up);
	drain_finish(s->drain);
	tell_lost(s);
}

void session_close(struct session *s)
{
	struct agent *a = s->agent;
	struct session **p;
	size_t i;

	if (s->st) {
		struct systrace_stats sst;

		systrace_get_stats(s->st, &sst);
		if (sst.lost)
			agent_log("session %u: %llu syscall records lost (kernel buffers full)", s->id,
			          (unsigned long long)sst.lost);
		/* what is left has nowhere to go: the drain has finished */
		systrace_free(s->st);
		s->st = NULL;
	}
	if (s->kt) {
		struct ktrace_stats kst;

		ktrace_get_stats(s->kt, &kst);
		if (kst.lost)
			agent_log("session %u: %llu kernel records lost (kernel buffers full)", s->id,
			          (unsigned long long)kst.lost);
		if (kst.cut)
			agent_log("session %u: %llu kernel records longer than %u bytes stored cut", s->id,
			          (unsigned long long)kst.cut, KERNEVENT_RAW_MAX);
		ktrace_free(s->kt);
		s->kt = NULL;
	}
	if (s->up) {
		struct uprobes_stats ust;

		uprobes_get_stats(s->up, &ust);
		if (ust.lost)
			agent_log("session %u: %llu function records lost (uprobe buffers full)", s->id,
			          (unsigned long long)ust.lost);
		uprobes_free(s->up);
		s->up = NULL;
	}
	if (s->dp) {
		dynamic_plan_log(s);
		dynamic_free(s);
	}
	drain_free(s->drain);
	/* an attached program that is gone: its session directory can go too */
	if (s->kind == SESSION_ATTACHED && s->exited)
		attachdir_remove(a, s->dirfd, s->entry);
	if (s->dirfd >= 0)
		close(s->dirfd);
	for (p = &a->sessions; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	if (s->queue_lost)
		agent_log("session %u: %llu events in chunks refused by the full queue to the host", s->id,
		          (unsigned long long)s->queue_lost);
	agent_log("session %u: closed (pid %d)", s->id, (int)s->pid);
	for (i = 0; i < s->nmaps; i++)
		free(s->maps[i].path);
	free(s->maps);
	free(s);
}
