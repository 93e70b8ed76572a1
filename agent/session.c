/* Sessions of the agent: programs it started or attached to, each with its
 * drain, and the code mappings it has seen. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/chunk.h"
#include "common/clocksync.h"
#include "common/encoder.h"
#include "common/sysevent.h"
#include "lp_arch.h"
#include "lp_version.h"
#include "runtime/memtrace.h"

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

/* Syscall records from the tracer go into the drain, which merges them
 * into the threads' streams.  Runs inside drain_poll (ops.collect).  While
 * the host has tracing off they are dropped, as the runtime drops function
 * events: a call cut by the switch is then unfinished or has no entry. */
static void on_sysrec(void *ctx, const struct sysrec *r)
{
	struct session *s = ctx;
	struct sysevent ev;

	if (!s->sys_tracing)
		return;
	sysrec_to_event(r, &ev);
	drain_syscall(s->drain, r->pid, r->tid, r->ns, &ev);
}

static void on_syslost(void *ctx, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct session *s = ctx;

	drain_syscalls_lost(s->drain, pid, tid, count);
}

static void on_collect(void *ctx)
{
	struct session *s = ctx;

	if (s->st)
		systrace_poll(s->st);
}

/* What a started program's environment gets: the session, the runtime
 * (and the heap interposers) preloaded, and with memory tracing its
 * options.  "KEY=VALUE" strings; set[] ends with NULL. */
struct prog_env {
	char session[PATH_MAX + 32];
	char preload[2 * PATH_MAX + 32];
	char depth[48], keep[48];
	char *set[5];
};

static void prog_env_fill(struct prog_env *pe, const struct session *s, const struct session_memory *mem)
{
	const struct agent *a = s->agent;
	int n = 0;

	snprintf(pe->session, sizeof(pe->session), "%s=%s", LP_ENV_SESSION, s->dir);
	pe->set[n++] = pe->session;
	if (mem && mem->on)
		snprintf(pe->preload, sizeof(pe->preload), "LD_PRELOAD=%s:%s", a->lib, a->memlib);
	else
		snprintf(pe->preload, sizeof(pe->preload), "LD_PRELOAD=%s", a->lib);
	pe->set[n++] = pe->preload;
	if (mem && mem->on) {
		if (mem->depth)
			snprintf(pe->depth, sizeof(pe->depth), "%s=%u", LP_MEM_ENV_DEPTH, mem->depth);
		else
			snprintf(pe->depth, sizeof(pe->depth), "%s=%u", LP_MEM_ENV_DEPTH, LP_MEM_DEPTH_DEFAULT);
		snprintf(pe->keep, sizeof(pe->keep), "%s=%d", LP_MEM_ENV_KEEPALIVE, mem->keep_alive ? 1 : 0);
		pe->set[n++] = pe->depth;
		pe->set[n++] = pe->keep;
	}
	pe->set[n] = NULL;
}

/* Whether environ entry e sets a key that set[] sets too. */
static bool env_overridden(const char *e, char *const *set)
{
	for (; *set; set++) {
		size_t k = (size_t)(strchr(*set, '=') - *set) + 1;

		if (!strncmp(e, *set, k))
			return true;
	}
	return false;
}

/* The environment of a program started under the syscall tracer: the
 * agent's, with pe's entries instead of its own (as a plain start sets
 * them).  A malloc'd array of borrowed strings; the caller frees it. */
static char **program_env(struct prog_env *pe)
{
	size_t n = 0, i, j = 0;
	char **env;

	for (i = 0; environ[i]; i++)
		n++;
	env = malloc((n + sizeof(pe->set) / sizeof(pe->set[0])) * sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (!env_overridden(environ[i], pe->set))
			env[j++] = environ[i];
	for (i = 0; pe->set[i]; i++)
		env[j++] = pe->set[i];
	env[j] = NULL;
	return env;
}

/* Starts argv under the syscall tracer.  The program gets what a plain
 * start gives it: stdin from /dev/null and SIGPIPE at its default (the
 * agent ignores it; an ignored signal stays ignored across exec), set here
 * for the moment of the fork, which the tracer makes.  Returns 0 or -1
 * with the reason in err. */
static int spawn_traced(struct session *s, char **argv, const struct session_syscalls *sys, struct prog_env *pe,
                        char *err, size_t errlen)
{
	struct systrace_ops ops = { .ctx = s, .sys = on_sysrec, .lost = on_syslost };
	char **env, why[sizeof(s->sys_why)], terr[600];
	int r, in_fd = -1, null_fd;
	pid_t pid = 0;

	r = systrace_check_program(argv[0]);
	if (r) {
		snprintf(err, errlen, "cannot run '%s': %s", argv[0], strerror(-r));
		return -1;
	}
	env = program_env(pe);
	if (!env) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd >= 0) {
		in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		dup2(null_fd, STDIN_FILENO);
		close(null_fd);
	}
	signal(SIGPIPE, SIG_DFL);
	s->st = systrace_spawn(argv, env, &sys->cfg, &ops, &pid, why, sizeof(why), terr, sizeof(terr));
	signal(SIGPIPE, SIG_IGN);
	if (in_fd >= 0) {
		dup2(in_fd, STDIN_FILENO);
		close(in_fd);
	}
	free(env);
	if (!s->st) {
		snprintf(err, errlen, "cannot trace syscalls: %s", terr);
		return -1;
	}
	s->pid = pid;
	snprintf(s->sys_why, sizeof(s->sys_why), "%s", why);
	return 0;
}

static struct session *session_new(struct agent *a, enum session_kind kind)
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

static void session_link(struct session *s)
{
	s->next = s->agent->sessions;
	s->agent->sessions = s;
}

/* The META chunk a trace file starts with, for the host's saved trace. */
static void send_meta(struct session *s, const char *command)
{
	struct conn *c = s->agent->conn;
	struct utsname u;
	char meta[2048];
	int n;

	if (!c || !conn_ready(c))
		return;
	char mem[128] = "";

	uname(&u);
	/* as record --memory writes it; an attached program's options are
	 * its own, unknown here */
	if (s->mem == SESSION_MEM_PRELOADED && s->kind == SESSION_STARTED)
		snprintf(mem, sizeof(mem), "memory=1\nmem_depth=%u\nmem_keep_alive=%d\nmem_fold_ns=%llu\n",
		         s->mem_opts.depth ? s->mem_opts.depth : LP_MEM_DEPTH_DEFAULT, s->mem_opts.keep_alive ? 1 : 0,
		         (unsigned long long)s->mem_opts.fold_ns);
	else if (s->mem == SESSION_MEM_PRELOADED)
		snprintf(mem, sizeof(mem), "memory=1\n");
	n = snprintf(meta, sizeof(meta),
	             "layerprof=" LP_VERSION "\nhost=%s\nkernel=%s\narch=%s\nclock=%s\nsession=%u\npid=%d\n"
	             "ring_full=discard\nstart_monotonic_ns=%llu\nfiltered=0\n%s%s%s%s%scommand=%s\n",
	             u.nodename, u.release, LP_ARCH_NAME,
	             s->agent->cfg.clock == LP_CLOCK_MONOTONIC ? "monotonic" : "counter", s->id, (int)s->pid,
	             (unsigned long long)clocksync_monotonic_ns(), s->st ? "syscall_arch=" : "",
	             s->st ? sys_arch_name(sys_arch_native()) : "", s->st ? "\n" : "",
	             s->kind == SESSION_STARTED ? "" : "attached=1\n", mem, command);
	if (n > 0)
		conn_queue_chunk(c, s->id, LP_CHUNK_META, (const uint8_t *)meta,
		                 (size_t)n < sizeof(meta) ? (size_t)n : sizeof(meta) - 1, 0);
}

struct session *session_start(struct agent *a, char **argv, int argc, const struct session_syscalls *sys,
                              const struct session_memory *mem, char *err, size_t errlen)
{
	struct drain_ops ops = { 0 };
	struct drain_config cfg;
	struct session *s = session_new(a, SESSION_STARTED);
	struct prog_env pe;
	char cmd[1024] = "";
	int pipefd[2], child_errno = 0, i;
	size_t n = 0;
	pid_t pid;

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
	ops.ctx = s;
	ops.chunk = on_chunk;
	ops.map = on_map;
	ops.unmap = on_unmap;
	if (sys && sys->on)
		ops.collect = on_collect;
	cfg = a->cfg;
	if (mem && mem->on)
		cfg.mem_fold_ns = mem->fold_ns;
	s->drain = drain_new(s->dir, &cfg, &ops);
	if (!s->drain) {
		snprintf(err, errlen, "cannot create session '%s': %s", s->dir, strerror(errno));
		free(s);
		return NULL;
	}
	drain_set_enabled(s->drain, a->tracing);
	drain_set_hold(s->drain, a->hold);
	a->hold = false; /* one program per request */
	if (session_apply_filters(s)) {
		snprintf(err, errlen, "cannot set filters in session '%s'", s->dir);
		goto fail;
	}
	prog_env_fill(&pe, s, mem);
	if (sys && sys->on) {
		s->sys_tracing = a->tracing;
		if (spawn_traced(s, argv, sys, &pe, err, errlen))
			goto fail;
		pid = s->pid;
		goto started;
	}
	if (pipe2(pipefd, O_CLOEXEC)) {
		snprintf(err, errlen, "cannot create pipe: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		goto fail;
	}
	if (pid == 0) {
		int e, fd = open("/dev/null", O_RDONLY);

		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
		for (i = 0; pe.set[i]; i++)
			putenv(pe.set[i]);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &child_errno, sizeof(child_errno)) == (ssize_t)sizeof(child_errno)) {
		close(pipefd[0]);
		snprintf(err, errlen, "cannot run '%s': %s", argv[0], strerror(child_errno));
		kill(pid, SIGKILL);
		goto fail_reap;
	}
	close(pipefd[0]);
	s->pid = pid;
started:
	for (i = 0; i < argc && n < sizeof(cmd) - 2; i++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", i ? " " : "", argv[i]);
	session_link(s);
	send_meta(s, cmd);
	if (s->st)
		agent_log("session %u: started '%s' as pid %d, syscalls by %s%s", s->id, argv[0], (int)pid, s->sys_why,
		          s->mem ? ", heap operations too" : "");
	else
		agent_log("session %u: started '%s' as pid %d%s", s->id, argv[0], (int)pid,
		          s->mem ? ", heap operations too" : "");
	return s;
fail_reap:
	/* the agent's waitpid loop reaps it; the session is gone already */
fail:
	drain_free(s->drain);
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
	struct drain_ops ops = { 0 };
	struct session *s;
	uid_t owner, puid;
	char cmd[64];
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
	ops.ctx = s;
	ops.chunk = on_chunk;
	ops.map = on_map;
	ops.unmap = on_unmap;
	if (sys && sys->on)
		ops.collect = on_collect;
	s->drain = drain_attach(fd, s->dir, owner, &ops);
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
		close(s->dirfd);
		free(s);
		return NULL;
	}
	s->pid = pid;
	s->mem = has_memlib(pid) ? SESSION_MEM_PRELOADED : SESSION_MEM_NONE;
	if (sys && sys->on) {
		struct systrace_ops sops = { .ctx = s, .sys = on_sysrec, .lost = on_syslost };
		struct systrace_config cfg = sys->cfg;
		char terr[600];

		/* ptrace: detach at the end, leaving the program running */
		cfg.keep_running = true;
		s->sys_tracing = a->tracing;
		s->st = systrace_attach(pid, &cfg, &sops, s->sys_why, sizeof(s->sys_why), terr, sizeof(terr));
		if (!s->st) {
			snprintf(err, errlen, "cannot trace the syscalls of process %d: %s", (int)pid, terr);
			drain_free(s->drain);
			close(s->dirfd);
			free(s);
			return NULL;
		}
	}
	session_link(s);
	snprintf(cmd, sizeof(cmd), "attach %d", (int)pid);
	send_meta(s, cmd);
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
		s->sys_tracing = on;
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
