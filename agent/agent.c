/* layerprofd: the target agent.  Serves one host at a time (listen.c lets
 * it in), starts or attaches to programs, drains their rings and streams
 * the chunks.  C11 and libc only; one thread, one poll loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/auth.h"
#include "common/clocksync.h"
#include "common/exepath.h"
#include "lp_arch.h"

#define POLL_BUSY_MS 1
#define POLL_IDLE_MS 5
#define POLL_NOSESSION_MS 200

static const char usage[] =
    "usage: layerprofd [options]\n"
    "\n"
    "The layerprof agent: runs on the device, starts or attaches to programs\n"
    "for a host running 'layerprof live', and streams their traces to it.\n"
    "\n"
    "  -u, --unix PATH         listen on a UNIX socket at PATH; its peers of the agent's\n"
    "                          user and root need no token (default, when no --listen:\n"
    "                          " LP_WIRE_UNIX_DIR_FMT "/" LP_WIRE_UNIX_NAME ", %u the agent's uid)\n"
    "  -l, --listen ADDR:PORT  listen on TCP too ([::1]:PORT for IPv6); needs --token-file,\n"
    "                          on loopback as anywhere: any local user can connect\n"
    "  -t, --token-file FILE   shared secret: hosts must prove they know it (at least\n"
    "                          16 characters, not repetitive)\n"
    "      --gen-token FILE    write a new random token to FILE (a new file, mode\n"
    "                          0600) and exit\n"
    "      --lib PATH          liblayerprof.so to preload into started programs\n"
    "                          (" AGENT_MEM_LIB " beside it: memory tracing)\n"
    "      --attach-dir DIR    where attachable programs register (default\n"
    "                          " LP_ATTACH_DIR_DEFAULT ")\n"
    "  -b, --buffer-size SZ    ring per thread of started programs (default 8M)\n"
    "  -v, --verbose           log every connection and session\n"
    "  -h, --help              this text\n"
    "\n"
    "For 'layerprof oscal run --connect' the agent runs its OS-call timing suite:\n"
    "layerprof-oscal beside it, or $LAYERPROF_OSCAL (a file only the agent's user\n"
    "or root may change).\n";

static struct agent agent;
static bool log_verbose = true;

void agent_log(const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;

	if (!log_verbose)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "layerprofd[%d] %lld.%03ld: ", (int)getpid(), (long long)ts.tv_sec, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t agent_now_ns(void)
{
	return clocksync_monotonic_ns();
}

static void on_signal(int sig)
{
	(void)sig;
	agent.stop = 1;
}

/* The host is gone: tracing stops until one comes back; programs go on. */
static void drop_host(struct agent *a, const char *why)
{
	struct session *s;

	agent_log("host %s %s", a->conn->peer, why);
	if (a->conn->udp_fd >= 0)
		agent_log("host %s: %u datagrams numbered holding %llu events, %llu refused by the socket",
		          a->conn->peer, a->conn->udp_seq, (unsigned long long)a->conn->udp_events,
		          (unsigned long long)a->conn->udp_dropped);
	conn_free(a->conn);
	a->conn = NULL;
	/* what a host set lasts for its connection */
	a->tracing = false;
	a->hold = false;
	a->filtered = false;
	a->flush_ns = AGENT_FLUSH_NS;
	for (s = a->sessions; s; s = s->next) {
		session_set_tracing(s, false);
		session_apply_filters(s);
	}
	agent_end_probed(a);
	/* a suite run lasts as long as the host that asked for it */
	oscal_host_gone(a);
}

static struct session *session_of(struct agent *a, pid_t pid)
{
	struct session *s;

	for (s = a->sessions; s; s = s->next)
		if (s->pid == pid)
			return s;
	return NULL;
}

/* Over UDP the host counts lost datagrams by their numbers; this tells it
 * how many events the numbered datagrams held, so it can count events. */
static void tell_udp(struct agent *a)
{
	struct conn *c = a->conn;
	char msg[160];
	int n;

	if (!c || c->udp_fd < 0 || c->udp_events == c->udp_events_told)
		return;
	n = snprintf(msg, sizeof(msg), "event=udp\nnext_seq=%u\nevents=%llu\ntime_ns=%llu\n", c->udp_seq,
	             (unsigned long long)c->udp_events, (unsigned long long)agent_now_ns());
	if (!conn_queue(c, LP_FRAME_STATUS, msg, (size_t)n))
		c->udp_events_told = c->udp_events;
}

static void tell_exit(struct agent *a, struct session *s)
{
	char msg[128];
	int n;

	if (!a->conn || !conn_ready(a->conn))
		return;
	n = snprintf(msg, sizeof(msg), "session=%u\nevent=exit\npid=%d\nstatus=%d\ntime_ns=%llu\n", s->id, (int)s->pid,
	             s->status, (unsigned long long)agent_now_ns());
	conn_queue(a->conn, LP_FRAME_STATUS, msg, (size_t)n);
}

void agent_end_probed(struct agent *a)
{
	struct session *s, *next;

	for (s = a->sessions; s; s = next) {
		uint64_t t0 = agent_now_ns();
		uint32_t id = s->id;
		pid_t pid = s->pid;
		bool exited = s->exited;

		next = s->next;
		if (s->kind != SESSION_PROBED)
			continue;
		session_finish(s);
		if (exited) {
			tell_udp(a);
			tell_exit(a, s);
		}
		/* what the host can take now goes before the slow close */
		if (a->conn)
			conn_flush(a->conn);
		session_close(s);
		if (!exited)
			agent_log("session %u: probes taken out of pid %d, which runs on (%.2f s to close them)", id,
			          (int)pid, (double)(agent_now_ns() - t0) / 1e9);
	}
}

/* An attached program is not our child: it is gone when no such process
 * exists or when it is a zombie its parent has not reaped yet. */
static bool process_gone(pid_t pid)
{
	char path[64], buf[512], *close_paren;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

static void reap(struct agent *a)
{
	struct session *s, *next;
	static uint64_t last_check, last_sweep;
	uint64_t now = agent_now_ns();
	pid_t pid;
	int status;

	/* __WNOTHREAD: the agent's own children only.  A program started
	 * under the ptrace backend is the child of the tracer's thread, which
	 * reaps it and every stop of its tracees: waiting here would take
	 * them from it */
	oscal_check(a);
	while ((pid = waitpid(-1, &status, WNOHANG | __WNOTHREAD)) > 0) {
		if (oscal_reaped(a, pid, status))
			continue;
		s = session_of(a, pid);
		if (s && !s->exited)
			session_exited(s, status);
		else if (s) {
			/* a descendant that came to us as subreaper */
		} else {
			for (s = a->sessions; s; s = s->next)
				drain_process_exited(s->drain, pid, status);
		}
	}
	for (s = a->sessions; s; s = s->next)
		if (!s->exited && session_reaped(s, &status))
			session_exited(s, status);
	/* attached programs are not our children: look for them now and then */
	if (now - last_check > 200000000ull) {
		last_check = now;
		for (s = a->sessions; s; s = s->next)
			if (s->kind != SESSION_STARTED && !s->exited && process_gone(s->pid))
				session_exited(s, -1);
	}
	/* and the sessions attachable programs left when they ended unattached */
	if (now - last_sweep > AGENT_ATTACH_SWEEP_NS) {
		last_sweep = now;
		attachdir_sweep(a);
	}
	for (s = a->sessions; s; s = next) {
		next = s->next;
		if (s->exited) {
			session_finish(s);
			tell_udp(a);
			tell_exit(a, s);
			/* closing probes is slow: the host has the end first */
			if (s->kind == SESSION_PROBED && a->conn)
				conn_flush(a->conn);
			session_close(s);
		}
	}
}

static int run(struct agent *a)
{
	uint64_t last_flush = 0;
	long consumed = 0;
	bool pressure = false;

	while (!a->stop) {
		/* the listeners, the host, the pending peers (fd -1: ignored),
		 * then the suite's stdout and stderr */
		struct pollfd pfd[3 + AGENT_PENDING_MAX + 2], *suite = pfd + 3 + AGENT_PENDING_MAX;
		struct session *s;
		int timeout;
		size_t i;
		uint64_t now;

		/* busy rings: come back at once; idle: a wake-up every few ms */
		if (consumed > 4096 || pressure)
			timeout = 0;
		else if (consumed > 0)
			timeout = POLL_BUSY_MS;
		else
			timeout = a->sessions ? POLL_IDLE_MS : POLL_NOSESSION_MS;
		consumed = 0;

		pfd[0].fd = a->tcp_fd;
		pfd[1].fd = a->unix_fd;
		pfd[2].fd = a->conn ? a->conn->fd : -1;
		pfd[0].events = pfd[1].events = POLLIN;
		pfd[2].events = POLLIN | (a->conn && conn_pending(a->conn) ? POLLOUT : 0);
		for (i = 0; i < AGENT_PENDING_MAX; i++) {
			pfd[3 + i].fd = a->pending[i].fd;
			pfd[3 + i].events = POLLIN;
		}
		oscal_poll_fds(a, suite);
		for (i = 0; i < sizeof(pfd) / sizeof(pfd[0]); i++)
			pfd[i].revents = 0;
		if (poll(pfd, sizeof(pfd) / sizeof(pfd[0]), timeout) < 0 && errno != EINTR)
			return -errno;
		/* the current host first: a BYE in this round frees the place
		 * for a pending peer whose AUTH is good */
		if (a->conn) {
			int r = 0;

			if (pfd[2].revents & (POLLIN | POLLHUP | POLLERR))
				r = conn_input(a, a->conn);
			if (!r)
				r = conn_flush(a->conn);
			if (r)
				drop_host(a, r == -EPIPE ? "closed the connection" : "connection failed");
		}
		for (i = 0; i < AGENT_PENDING_MAX; i++)
			if (a->pending[i].fd >= 0 && pfd[3 + i].fd == a->pending[i].fd &&
			    (pfd[3 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				pending_input(a, &a->pending[i]);
		if (pfd[0].revents & POLLIN)
			listen_accept(a, a->tcp_fd, false);
		if (pfd[1].revents & POLLIN)
			listen_accept(a, a->unix_fd, true);
		pending_expire(a, agent_now_ns());
		oscal_input(a, suite);
		/* drain only what the host can take: a slow link fills the
		 * rings, and the runtime drops (and counts) whole chunks */
		pressure = false;
		if (!a->conn || conn_pending(a->conn) < AGENT_OUT_HIGH) {
			for (s = a->sessions; s; s = s->next) {
				long r = session_poll(s);

				if (r > 0)
					consumed += r;
				pressure |= drain_pressure(s->drain);
			}
		}
		reap(a);
		now = agent_now_ns();
		if (a->conn && conn_ready(a->conn) && now - last_flush >= a->flush_ns) {
			last_flush = now;
			for (s = a->sessions; s; s = s->next)
				drain_flush(s->drain);
			tell_udp(a);
		}
		if (a->conn) {
			if (conn_ready(a->conn) && now - a->conn->last_tx_ns > AGENT_HEARTBEAT_NS &&
			    !conn_pending(a->conn))
				conn_queue(a->conn, LP_FRAME_HEARTBEAT, NULL, 0);
			if (now - a->conn->last_rx_ns > AGENT_PEER_TIMEOUT_NS) {
				drop_host(a, "stopped responding");
				continue;
			}
			if (conn_flush(a->conn)) {
				drop_host(a, "connection failed");
				continue;
			}
		}
	}
	return 0;
}

/* The runtime library: --lib, next to an installed agent (../lib), or in
 * the build tree (../runtime). */
static int find_lib(struct agent *a, const char *opt)
{
	char dir[PATH_MAX];

	if (opt) {
		if (!realpath(opt, a->lib))
			return -errno;
		return 0;
	}
	if (exepath_dir(dir, sizeof(dir)))
		return -ENOENT;
	return exepath_runtime(dir, a->lib);
}

/* The heap interposers beside the runtime library (the install and the
 * build tree both keep them together); without them the agent offers no
 * memory tracing. */
static void find_memlib(struct agent *a)
{
	const char *slash = strrchr(a->lib, '/');
	char path[PATH_MAX + 32];

	a->memlib[0] = '\0';
	if (!slash)
		return;
	snprintf(path, sizeof(path), "%.*s/" AGENT_MEM_LIB, (int)(slash - a->lib), a->lib);
	if (!access(path, R_OK) && strlen(path) < sizeof(a->memlib))
		memcpy(a->memlib, path, strlen(path) + 1);
}

static int parse_buffer(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s || *s == '-')
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v < (128u << 10) || v > (256u << 20))
		return -EINVAL;
	*out = v;
	return 0;
}

/* --gen-token FILE: a new token, then exit. */
static int gen_token_file(const char *path)
{
	int r = auth_token_generate(path);

	if (r) {
		fprintf(stderr, "layerprofd: cannot write a token to '%s': %s\n", path,
		        r == -EEXIST ? "something is there already (a new file is made, never overwritten)"
		                     : strerror(-r));
		return 1;
	}
	printf("layerprofd: a new token is in '%s' (mode 0600); give the same file to the hosts\n", path);
	return 0;
}

/* TCP when --listen is given; the UNIX socket when --unix is, or when
 * nothing is. */
static int open_listeners(struct agent *a, const char *listen_arg, const char *unix_arg)
{
	size_t i;

	a->tcp_fd = a->unix_fd = -1;
	for (i = 0; i < AGENT_PENDING_MAX; i++)
		a->pending[i].fd = -1;
	if ((listen_arg && listen_tcp(a, listen_arg)) || ((unix_arg || !listen_arg) && listen_unix(a, unix_arg))) {
		listen_close(a);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "unix", required_argument, NULL, 'u' },
		{ "token-file", required_argument, NULL, 't' },
		{ "gen-token", required_argument, NULL, 'G' },
		{ "lib", required_argument, NULL, 'L' },
		{ "attach-dir", required_argument, NULL, 'A' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen_arg = NULL, *unix_arg = NULL, *token_file = NULL, *gen_token = NULL, *lib = NULL;
	struct agent *a = &agent;
	uint64_t buffer = 8u << 20;
	bool warn = false;
	int c, r;

	snprintf(a->attach_dir, sizeof(a->attach_dir), "%s", LP_ATTACH_DIR_DEFAULT);
	a->attach.fd = a->private.fd = -1;
	while ((c = getopt_long(argc, argv, "l:u:t:b:vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			listen_arg = optarg;
			break;
		case 'u':
			unix_arg = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'G':
			gen_token = optarg;
			break;
		case 'L':
			lib = optarg;
			break;
		case 'A':
			snprintf(a->attach_dir, sizeof(a->attach_dir), "%s", optarg);
			break;
		case 'b':
			if (parse_buffer(optarg, &buffer)) {
				fprintf(stderr, "layerprofd: invalid --buffer-size '%s': expected 128K to 256M\n",
				        optarg);
				return 2;
			}
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'q':
			log_verbose = false;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "layerprofd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (gen_token)
		return gen_token_file(gen_token);
	if (token_file) {
		r = auth_token_load(token_file, a->token, sizeof(a->token), &warn);
		if (r < 0) {
			fprintf(stderr, "layerprofd: cannot use token file '%s': %s\n", token_file,
			        r == -EINVAL ? "empty or too long" : strerror(-r));
			return 1;
		}
		a->token_len = (size_t)r;
		a->has_token = true;
		if (auth_token_weak(a->token, a->token_len)) {
			fprintf(stderr,
			        "layerprofd: the token in '%s' is too weak (%zu characters, about %u bits; at least "
			        "%u characters and %u bits): make one with layerprofd --gen-token FILE\n",
			        token_file, a->token_len, auth_token_bits(a->token, a->token_len), AUTH_TOKEN_MIN_LEN,
			        AUTH_TOKEN_MIN_BITS);
			return 1;
		}
		if (warn)
			fprintf(stderr, "layerprofd: warning: token file '%s' is readable by other users\n",
			        token_file);
	}
	a->uid = (unsigned)geteuid();
	if (listen_arg && !a->has_token) {
		fprintf(stderr,
		        "layerprofd: listening on TCP '%s' needs --token-file: any user who can connect, on this "
		        "machine too, could run programs as uid %u (make a token with --gen-token FILE, or leave "
		        "out --listen: the UNIX socket lets in the agent's user only)\n",
		        listen_arg, a->uid);
		return 2;
	}
	if (find_lib(a, lib)) {
		fprintf(stderr, "layerprofd: cannot find liblayerprof.so (use --lib)\n");
		return 1;
	}
	find_memlib(a);
	oscal_init(a);
	a->cfg.chunk_slots = 4096;
	a->cfg.ring_chunks = 2;
	while ((uint64_t)a->cfg.ring_chunks * 2 * a->cfg.chunk_slots * 16 <= buffer && a->cfg.ring_chunks < 4096)
		a->cfg.ring_chunks *= 2;
	a->cfg.chunk_bytes = AGENT_CHUNK_BYTES;
	/* a device never stalls for its host: full rings drop and count */
	a->cfg.ring_full = LP_RING_FULL_DISCARD;
	a->cfg.clock = LP_ARCH_COUNTER;
	if (LP_ARCH_COUNTER == LP_CLOCK_TSC) {
		FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
		char cs[32] = "";

		if (!f || !fgets(cs, sizeof(cs), f) || strncmp(cs, "tsc", 3))
			a->cfg.clock = LP_CLOCK_MONOTONIC;
		if (f)
			fclose(f);
	}
	a->tracing = true;
	a->flush_ns = AGENT_FLUSH_NS;
	a->out_max = AGENT_OUT_MAX;
	/* for tests only: a small queue to the host, so that it fills */
	if (getenv("LAYERPROFD_TEST_OUT_MAX")) {
		unsigned long long v = strtoull(getenv("LAYERPROFD_TEST_OUT_MAX"), NULL, 10);

		a->out_max = v < AGENT_OUT_MIN ? AGENT_OUT_MIN : v > AGENT_OUT_MAX ? AGENT_OUT_MAX : (size_t)v;
		agent_log("test setting: the queue to the host holds at most %zu bytes", a->out_max);
	}
	if (open_listeners(a, listen_arg, unix_arg))
		return 1;
	/* started programs' sessions: unpredictable names in our private
	 * directory, where those of a killed agent that nobody maps go */
	r = sessiondir_open_private(&a->private);
	if (r) {
		fprintf(stderr, "layerprofd: cannot make a private directory for sessions: %s\n", strerror(-r));
		listen_close(a);
		return 1;
	}
	if (a->private.fallback) {
		char why[3 * SESSIONDIR_PATH_MAX];

		fprintf(stderr, "layerprofd: warning: %s\n", sessiondir_fallback_why(&a->private, why, sizeof(why)));
	}
	sessiondir_sweep(&a->private);
	attachdir_open(a);
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (a->tcp_fd >= 0)
		agent_log("listening on %s (token required)", listen_arg);
	if (a->unix_fd >= 0)
		agent_log("listening on unix:%s (uid %u and root; others %s)", a->unix_path, a->uid,
		          a->has_token ? "need the token" : "refused");
	r = run(a);
	oscal_release(a);
	/* the programs go on, untraced */
	while (a->sessions) {
		struct session *s = a->sessions;

		session_set_tracing(s, false);
		if (s->kind != SESSION_PROBED)
			session_exited(s, -1);
		session_finish(s);
		session_close(s);
	}
	if (a->conn) {
		conn_queue(a->conn, LP_FRAME_BYE, NULL, 0);
		conn_flush(a->conn);
		conn_free(a->conn);
	}
	listen_close(a);
	sessiondir_release(&a->private);
	sessiondir_release(&a->attach);
	agent_log("stopped");
	return r ? 1 : 0;
}
