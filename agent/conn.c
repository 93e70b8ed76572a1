/* The agent's connection to its one authenticated host (listen.c lets it
 * in): the frames the host sends, and a bounded queue of frames to send
 * without blocking. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/chunk.h"
#include "layerprof/format.h"

#define START_ARGS_MAX 256

struct conn *conn_new(struct agent *a, int fd, const char *peer, bool unix_sock, const uint8_t *rest, size_t rest_len)
{
	struct conn *c = calloc(1, sizeof(*c));
	size_t avail;
	uint8_t *space;

	if (!c)
		return NULL;
	c->fd = fd;
	c->udp_fd = -1;
	c->unix_sock = unix_sock;
	c->state = CONN_READY;
	c->out_max = a->out_max ? a->out_max : AGENT_OUT_MAX;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->last_rx_ns = c->last_tx_ns = agent_now_ns();
	if (wire_reader_init(&c->rd)) {
		free(c);
		return NULL;
	}
	/* HELLO and AUTH were the first frame each way */
	c->tx_seq = 1;
	c->rd.next_seq = 1;
	space = wire_reader_space(&c->rd, &avail);
	if (rest_len > avail)
		rest_len = avail; /* cannot be: rest is smaller than a pending buffer */
	memcpy(space, rest, rest_len);
	wire_reader_commit(&c->rd, rest_len);
	return c;
}

void conn_free(struct conn *c)
{
	if (!c)
		return;
	close(c->fd);
	if (c->udp_fd >= 0)
		close(c->udp_fd);
	wire_reader_release(&c->rd);
	free(c->out);
	free(c);
}

bool conn_ready(const struct conn *c)
{
	return c->state == CONN_READY;
}

size_t conn_pending(const struct conn *c)
{
	return c->out_len - c->out_off;
}

/* Makes room for n more bytes in the queue, within c->out_max. */
static int reserve(struct conn *c, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (c->out_off && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + n <= c->out_cap)
		return 0;
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
		if (c->out_len + n <= c->out_cap)
			return 0;
	}
	if (c->out_len + n > c->out_max)
		return -ENOBUFS;
	cap = c->out_cap ? c->out_cap : 65536;
	while (cap < c->out_len + n)
		cap *= 2;
	if (cap > c->out_max)
		cap = c->out_max;
	p = realloc(c->out, cap);
	if (!p)
		return -ENOBUFS;
	c->out = p;
	c->out_cap = cap;
	return 0;
}

int conn_queue(struct conn *c, uint8_t type, const void *payload, size_t len)
{
	if (len > LP_WIRE_MAX_PAYLOAD || reserve(c, LP_WIRE_HEADER_SIZE + len))
		return -ENOBUFS;
	wire_header_put(c->out + c->out_len, type, c->tx_seq++, payload, (uint32_t)len);
	if (len)
		memcpy(c->out + c->out_len + LP_WIRE_HEADER_SIZE, payload, len);
	c->out_len += LP_WIRE_HEADER_SIZE + len;
	return 0;
}

/* EVENTS chunks over UDP: one frame per datagram, numbered by udp_seq.  A
 * datagram the socket will not take now is dropped here, but its number is
 * used, so the host counts it as lost like one lost on the way. */
/* A CHUNK frame's body at p: the session id (little-endian), then the chunk
 * (header and payload), 4 + LP_CHUNK_HEADER_SIZE + len bytes. */
static void put_chunk_body(uint8_t *p, uint32_t session, uint8_t type, const uint8_t *payload, size_t len)
{
	p[0] = (uint8_t)session;
	p[1] = (uint8_t)(session >> 8);
	p[2] = (uint8_t)(session >> 16);
	p[3] = (uint8_t)(session >> 24);
	chunk_header_put(p + 4, type, payload, (uint32_t)len);
	memcpy(p + 4 + LP_CHUNK_HEADER_SIZE, payload, len);
}

static bool send_datagram(struct conn *c, uint32_t session, const uint8_t *payload, size_t len, uint64_t events)
{
	static uint8_t dgram[AGENT_DATAGRAM_MAX];
	size_t body = 4 + LP_CHUNK_HEADER_SIZE + len;
	uint8_t *p = dgram + LP_WIRE_HEADER_SIZE;

	if (LP_WIRE_HEADER_SIZE + body > sizeof(dgram))
		return false; /* too big for a datagram: goes by TCP */
	put_chunk_body(p, session, LP_CHUNK_EVENTS, payload, len);
	wire_header_put(dgram, LP_FRAME_CHUNK, c->udp_seq++, p, (uint32_t)body);
	if (send(c->udp_fd, dgram, LP_WIRE_HEADER_SIZE + body, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		c->udp_dropped++;
	else
		c->udp_sent++;
	c->udp_events += events;
	return true;
}

int conn_queue_chunk(struct conn *c, uint32_t session, uint8_t chunk_type, const uint8_t *payload, size_t len,
                     uint64_t events)
{
	size_t body = 4 + LP_CHUNK_HEADER_SIZE + len;
	uint8_t *p;

	if (c->udp_fd >= 0 && chunk_type == LP_CHUNK_EVENTS && send_datagram(c, session, payload, len, events))
		return 0;
	if (body > LP_WIRE_MAX_PAYLOAD || reserve(c, LP_WIRE_HEADER_SIZE + body))
		return -ENOBUFS;
	p = c->out + c->out_len + LP_WIRE_HEADER_SIZE;
	put_chunk_body(p, session, chunk_type, payload, len);
	wire_header_put(c->out + c->out_len, LP_FRAME_CHUNK, c->tx_seq++, p, (uint32_t)body);
	c->out_len += LP_WIRE_HEADER_SIZE + body;
	return 0;
}

int conn_flush(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		c->out_off += (size_t)n;
		c->last_tx_ns = agent_now_ns();
	}
	if (c->state == CONN_CLOSING)
		return -EPIPE;
	return 0;
}

static void send_error(struct conn *c, const char *msg)
{
	conn_queue(c, LP_FRAME_ERROR, msg, strlen(msg));
}

static int conn_frames(struct agent *a, struct conn *c);

int conn_welcome(struct agent *a, struct conn *c)
{
	char welcome[8192];
	struct session *s;
	size_t n = 0;

	for (s = a->sessions; s; s = s->next)
		n++;
	n = (size_t)snprintf(welcome, sizeof(welcome), "session_count=%zu\n", n);
	for (s = a->sessions; s && n < sizeof(welcome) - 100; s = s->next)
		n += (size_t)snprintf(welcome + n, sizeof(welcome) - n, "session=%u pid=%d state=%s memory=%s\n", s->id,
		                      (int)s->pid, s->exited ? "exited" : "running", session_mem_name(s->mem));
	conn_queue(c, LP_FRAME_WELCOME, welcome, n);
	agent_log("host %s connected", c->peer);
	/* a host that comes back sees its sessions again: names first, then
	 * tracing resumes */
	a->tracing = true;
	for (s = a->sessions; s; s = s->next) {
		session_send_maps(s);
		session_set_tracing(s, true);
	}
	return conn_frames(a, c);
}

static void send_session(struct conn *c, const struct session *s)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "session=%u\npid=%d\n", s->id, (int)s->pid);

	if (s->st)
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, "syscalls=%s\nsyscalls_why=%s\n",
		              systrace_backend_name(systrace_backend(s->st)), s->sys_why);
	if ((size_t)n < sizeof(msg))
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, "memory=%s\n", session_mem_name(s->mem));
	if (s->kt && (size_t)n < sizeof(msg)) {
		struct ktrace_stats kst;

		ktrace_get_stats(s->kt, &kst);
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, "kernel=%u\n", kst.events);
		if (s->kernel_warn[0] && (size_t)n < sizeof(msg))
			n += snprintf(msg + n, sizeof(msg) - (size_t)n, "kernel_warn=%s\n", s->kernel_warn);
	}
	if ((size_t)n < sizeof(msg) && s->kind == SESSION_PROBED && s->up) {
		struct uprobes_stats ust;

		uprobes_get_stats(s->up, &ust);
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, "dynamic=uprobes\nfunctions=%u\n", ust.functions);
	}
	if ((size_t)n < sizeof(msg) && s->kind == SESSION_STARTED && s->mem_opts.fold_ns)
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, "mem_fold_ns=%llu\n",
		              (unsigned long long)s->mem_opts.fold_ns);
	conn_queue(c, LP_FRAME_SESSION, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* One option of START or ATTACH (docs/protocol.md): `syscalls` and
 * `syscall_filter`.  Returns 0, or -EINVAL with the reason in err. */
static int syscall_option(struct session_syscalls *sys, const char *key, const char *val, const char **filter,
                          char *err, size_t errlen)
{
	if (!strcmp(key, "syscalls")) {
		sys->on = true;
		if (systrace_backend_parse(val, &sys->cfg.backend)) {
			snprintf(err, errlen, "invalid syscalls '%.64s': auto, bpf, tracepoint or ptrace", val);
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(key, "syscall_filter")) {
		*filter = val;
		return 0;
	}
	if (!strcmp(key, "kernel")) {
		sys->kernel = true;
		sys->kcfg.events = strcmp(val, "default") ? val : NULL;
		if (!*val) {
			snprintf(err, errlen, "kernel needs 'default' or a list of tracepoints");
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(key, "kernel_functions")) {
		sys->kcfg.functions = val;
		return 0;
	}
	if (!strcmp(key, "kernel_system")) {
		if (strcmp(val, "1") && strcmp(val, "0")) {
			snprintf(err, errlen, "invalid kernel_system '%.64s': 1 or 0", val);
			return -EINVAL;
		}
		sys->kcfg.system = !strcmp(val, "1");
		return 0;
	}
	if (!strcmp(key, "kernel_filter")) {
		if (sys->kcfg.nfilters == KTRACE_FILTERS_MAX) {
			snprintf(err, errlen, "more than %u kernel_filter options", KTRACE_FILTERS_MAX);
			return -EINVAL;
		}
		sys->kcfg.filters[sys->kcfg.nfilters++] = val;
		return 0;
	}
	snprintf(err, errlen, "unknown option '%.64s'", key);
	return -EINVAL;
}

/* START's and ATTACH's `dynamic`: "all", or function globs split in
 * place (the patterns point into the request). */
static int dynamic_option(struct session_syscalls *sys, char *val, char *err, size_t errlen)
{
	char why[300];

	sys->dynamic = true;
	if (!strcmp(val, "all"))
		return 0;
	if (uprobes_patterns(&sys->ucfg, val, why, sizeof(why))) {
		snprintf(err, errlen, "dynamic: %s", why);
		return -EINVAL;
	}
	return 0;
}

/* The memory options, once every option is known. */
static int memory_check(const struct agent *a, const struct memopts *mem, char *err, size_t errlen)
{
	int r = memopts_check(mem, MEMOPTS_START, err, errlen);

	if (r)
		return r;
	if (mem->on && !a->memlib[0]) {
		snprintf(err, errlen, "no memory tracing: " AGENT_MEM_LIB " is not beside '%.300s'", a->lib);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The syscall filter, once every option is known. */
static int syscall_filter(struct session_syscalls *sys, const char *filter, char *err, size_t errlen)
{
	char why[256];

	if ((sys->kcfg.nfilters || sys->kcfg.functions || sys->kcfg.system) && !sys->kernel) {
		snprintf(err, errlen, "kernel_filter, kernel_functions and kernel_system need kernel");
		return -EINVAL;
	}
	if (filter && !sys->on) {
		snprintf(err, errlen, "syscall_filter needs syscalls");
		return -EINVAL;
	}
	if (sys->on && sys_set_parse(&sys->cfg.filter, sys_arch_native(), filter, why, sizeof(why))) {
		snprintf(err, errlen, "invalid syscall_filter: %s", why);
		return -EINVAL;
	}
	return 0;
}

static int on_start(struct agent *a, struct conn *c, const struct wire_frame *f)
{
	char *argv[START_ARGS_MAX + 1], *buf, err[512], msg[600];
	struct session_syscalls sys = { 0 };
	struct memopts mem = { 0 };
	const char *filter = NULL;
	struct session *s;
	size_t i, start = 0;
	int argc = 0, first = 0, r;

	if (!f->len || f->len > 65536 || f->payload[f->len - 1] != '\0') {
		send_error(c, "START: the arguments must be NUL-terminated strings, at most 64 KiB");
		return 0;
	}
	buf = malloc(f->len);
	if (!buf) {
		send_error(c, "START: out of memory");
		return 0;
	}
	memcpy(buf, f->payload, f->len);
	for (i = 0; i < f->len; i++) {
		if (buf[i])
			continue;
		if (argc == START_ARGS_MAX) {
			free(buf);
			send_error(c, "START: too many arguments");
			return 0;
		}
		argv[argc++] = buf + start;
		start = i + 1;
	}
	argv[argc] = NULL;
	/* an empty first string opens the options, up to the next empty one */
	if (argc > 1 && !argv[0][0]) {
		for (first = 1; first < argc && argv[first][0]; first++) {
			char *eq = strchr(argv[first], '=');

			if (!eq) {
				snprintf(err, sizeof(err), "option '%.64s' is not key=value", argv[first]);
				goto bad;
			}
			*eq = '\0';
			if (!strcmp(argv[first], "dynamic")) {
				r = dynamic_option(&sys, eq + 1, err, sizeof(err));
				if (r)
					goto bad;
				sys.functions = true;
				continue;
			}
			if (!strcmp(argv[first], "libcalls") && dpatch_supported()) {
				sys.dynamic = true;
				sys.ucfg.libcalls = !strcmp(eq + 1, "1");
				continue;
			}
			r = memopts_set_key(&mem, argv[first], eq + 1, err, sizeof(err));
			if (r == 1)
				r = syscall_option(&sys, argv[first], eq + 1, &filter, err, sizeof(err));
			if (r)
				goto bad;
		}
		first++;
		sys.ucfg.no_functions = sys.ucfg.libcalls && !sys.functions;
		if (syscall_filter(&sys, filter, err, sizeof(err)) || memory_check(a, &mem, err, sizeof(err)))
			goto bad;
	}
	if (first >= argc || !argv[first][0]) {
		free(buf);
		send_error(c, "START: empty program name");
		return 0;
	}
	s = session_start(a, argv + first, argc - first, &sys, &mem, err, sizeof(err));
	free(buf);
	if (s)
		send_session(c, s);
	else
		send_error(c, err);
	return 0;
bad:
	free(buf);
	snprintf(msg, sizeof(msg), "START: %s", err);
	send_error(c, msg);
	return 0;
}

static int on_attach(struct agent *a, struct conn *c, const struct wire_frame *f)
{
	char val[32], err[512], msg[600], opt[32], filter_buf[4096], kernel_buf[4096], kfilter_buf[1024],
	    kfunc_buf[1024], ksystem_buf[8], dynamic_buf[4096], *end;
	struct session_syscalls sys = { 0 };
	const char *filter = NULL;
	struct session *s;
	long pid;
	int r;

	if (wire_kv_get(f->payload, f->len, "pid", val, sizeof(val))) {
		send_error(c, "ATTACH: no pid");
		return 0;
	}
	errno = 0;
	pid = strtol(val, &end, 10);
	if (errno || *end || pid <= 0 || pid > 0x7fffffff) {
		send_error(c, "ATTACH: invalid pid");
		return 0;
	}
	r = wire_kv_get(f->payload, f->len, "syscalls", opt, sizeof(opt));
	if (!r)
		r = syscall_option(&sys, "syscalls", opt, &filter, err, sizeof(err));
	else if (r != -ENOENT)
		snprintf(err, sizeof(err), "syscalls: value too long or not text");
	if (r && r != -ENOENT)
		goto bad;
	r = wire_kv_get(f->payload, f->len, "syscall_filter", filter_buf, sizeof(filter_buf));
	if (!r) {
		filter = filter_buf;
	} else if (r != -ENOENT) {
		snprintf(err, sizeof(err), "syscall_filter: value too long or not text");
		goto bad;
	}
	/* kernel events: one filter by ATTACH's key=value lines */
	r = wire_kv_get(f->payload, f->len, "kernel", kernel_buf, sizeof(kernel_buf));
	if (!r)
		r = syscall_option(&sys, "kernel", kernel_buf, &filter, err, sizeof(err));
	else if (r != -ENOENT)
		snprintf(err, sizeof(err), "kernel: value too long or not text");
	if (r && r != -ENOENT)
		goto bad;
	r = wire_kv_get(f->payload, f->len, "kernel_functions", kfunc_buf, sizeof(kfunc_buf));
	if (!r)
		r = syscall_option(&sys, "kernel_functions", kfunc_buf, &filter, err, sizeof(err));
	else if (r != -ENOENT)
		snprintf(err, sizeof(err), "kernel_functions: value too long or not text");
	if (r && r != -ENOENT)
		goto bad;
	r = wire_kv_get(f->payload, f->len, "kernel_system", ksystem_buf, sizeof(ksystem_buf));
	if (!r)
		r = syscall_option(&sys, "kernel_system", ksystem_buf, &filter, err, sizeof(err));
	else if (r != -ENOENT)
		snprintf(err, sizeof(err), "kernel_system: value too long or not text");
	if (r && r != -ENOENT)
		goto bad;
	r = wire_kv_get(f->payload, f->len, "kernel_filter", kfilter_buf, sizeof(kfilter_buf));
	if (!r)
		r = syscall_option(&sys, "kernel_filter", kfilter_buf, &filter, err, sizeof(err));
	else if (r != -ENOENT)
		snprintf(err, sizeof(err), "kernel_filter: value too long or not text");
	if (r && r != -ENOENT)
		goto bad;
	/* functions by probes from outside; calls through the PLT need the
	 * patch backend, which a program sets up as it starts */
	if (wire_kv_get(f->payload, f->len, "libcalls", opt, sizeof(opt)) != -ENOENT) {
		snprintf(err, sizeof(err),
		         "libcalls needs the patch backend, which is set up in a program the agent starts: not when "
		         "attaching");
		goto bad;
	}
	r = wire_kv_get(f->payload, f->len, "dynamic", dynamic_buf, sizeof(dynamic_buf));
	if (!r)
		r = dynamic_option(&sys, dynamic_buf, err, sizeof(err));
	else if (r != -ENOENT)
		snprintf(err, sizeof(err), "dynamic: value too long or not text");
	if (r && r != -ENOENT)
		goto bad;
	if (syscall_filter(&sys, filter, err, sizeof(err)))
		goto bad;
	if (sys.dynamic)
		s = session_probe(a, (pid_t)pid, &sys, err, sizeof(err));
	else
		s = session_attach(a, (pid_t)pid, &sys, err, sizeof(err));
	if (s)
		send_session(c, s);
	else
		send_error(c, err);
	return 0;
bad:
	snprintf(msg, sizeof(msg), "ATTACH: %s", err);
	send_error(c, msg);
	return 0;
}

/* "image:hexaddr,image:hexaddr,..." into addrs (images are not kept: a
 * session's processes share one filter set).  Returns the count or -1. */
static long parse_addrs(const char *list, uint64_t *addrs, size_t max)
{
	const char *p = list;
	size_t n = 0;

	while (*p) {
		char *end;
		unsigned long long v;

		errno = 0;
		strtoul(p, &end, 10);
		if (end == p || *end != ':' || errno)
			return -1;
		p = end + 1;
		v = strtoull(p, &end, 16);
		if (end == p || errno || (*end && *end != ','))
			return -1;
		if (n == max)
			return -1;
		addrs[n++] = v;
		p = *end ? end + 1 : end;
	}
	return (long)n;
}

static void control_filters(struct agent *a, struct conn *c, const struct wire_frame *f)
{
	size_t vsize = f->len + 1;
	char *val = malloc(vsize), num[32];
	uint64_t *addrs = malloc(2 * LP_FILTER_ADDRS_MAX * sizeof(*addrs));
	unsigned long long depth = 0, min_ns = 0;
	long n_only = 0, n_exclude = 0;
	struct session *s;

	if (!val || !addrs) {
		send_error(c, "CONTROL: out of memory");
		goto out;
	}
	if (!wire_kv_get(f->payload, f->len, "depth", num, sizeof(num)))
		depth = strtoull(num, NULL, 10);
	if (!wire_kv_get(f->payload, f->len, "min_ns", num, sizeof(num)))
		min_ns = strtoull(num, NULL, 10);
	if (!wire_kv_get(f->payload, f->len, "only", val, vsize))
		n_only = parse_addrs(val, addrs, LP_FILTER_ADDRS_MAX);
	if (!wire_kv_get(f->payload, f->len, "exclude", val, vsize) && n_only >= 0)
		n_exclude = parse_addrs(val, addrs + n_only, LP_FILTER_ADDRS_MAX - (size_t)n_only);
	if (n_only < 0 || n_exclude < 0 || depth > 1000000) {
		send_error(c, "CONTROL: invalid filter (only/exclude: image:hexaddr,...; at most 8192 functions)");
		goto out;
	}
	free(a->filter_addrs);
	a->filter_addrs = addrs;
	addrs = NULL;
	a->n_only = (size_t)n_only;
	a->n_exclude = (size_t)n_exclude;
	a->max_depth = (uint32_t)depth;
	a->min_ns = min_ns;
	a->filtered = n_only || n_exclude || depth || min_ns;
	for (s = a->sessions; s; s = s->next) {
		if (session_apply_filters(s)) {
			send_error(c, "CONTROL: cannot set filters");
			goto out;
		}
	}
	agent_log("filters: %ld only, %ld excluded, depth %llu, min %llu ns", n_only, n_exclude, depth, min_ns);
out:
	free(val);
	free(addrs);
}

static int on_control(struct agent *a, struct conn *c, const struct wire_frame *f)
{
	struct session *s;
	char val[16];

	if (!wire_kv_get(f->payload, f->len, "hold", val, sizeof(val)))
		a->hold = !strcmp(val, "on");
	if (!wire_kv_get(f->payload, f->len, "filters", val, sizeof(val)) && !strcmp(val, "clear")) {
		a->filtered = false;
		for (s = a->sessions; s; s = s->next)
			session_apply_filters(s);
		agent_log("filters cleared");
	} else if (!wire_kv_get(f->payload, f->len, "depth", val, sizeof(val)) ||
	           !wire_kv_get(f->payload, f->len, "min_ns", val, sizeof(val)) ||
	           wire_kv_get(f->payload, f->len, "only", val, 1) != -ENOENT ||
	           wire_kv_get(f->payload, f->len, "exclude", val, 1) != -ENOENT) {
		control_filters(a, c, f);
	}

	if (!wire_kv_get(f->payload, f->len, "flush_ms", val, sizeof(val))) {
		char *end;
		unsigned long ms = strtoul(val, &end, 10);

		if (*end || end == val || ms < AGENT_FLUSH_MIN_MS || ms > AGENT_FLUSH_MAX_MS) {
			send_error(c, "CONTROL: flush_ms must be 5 to 1000");
			return 0;
		}
		a->flush_ns = (uint64_t)ms * 1000000u;
		agent_log("partial chunks flushed every %lu ms", ms);
	}
	if (!wire_kv_get(f->payload, f->len, "tracing", val, sizeof(val))) {
		if (strcmp(val, "on") && strcmp(val, "off")) {
			send_error(c, "CONTROL: tracing must be on or off");
			return 0;
		}
		a->tracing = !strcmp(val, "on");
		for (s = a->sessions; s; s = s->next)
			session_set_tracing(s, a->tracing);
		agent_log("tracing %s", a->tracing ? "on" : "off");
	}
	/* last: a held program starts with everything above in place */
	if (!wire_kv_get(f->payload, f->len, "release", val, sizeof(val))) {
		for (s = a->sessions; s; s = s->next)
			if (!s->exited)
				drain_set_hold(s->drain, false);
	}
	/* the host may wait for this before it lets the program go on */
	{
		static const char applied[] = "event=control\napplied=1\n";

		conn_queue(c, LP_FRAME_STATUS, applied, sizeof(applied) - 1);
	}
	return 0;
}

/* UDPINFO: EVENTS chunks go by datagram to the host's address, this port. */
static int on_udpinfo(struct conn *c, const struct wire_frame *f)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char val[16], msg[64], *end;
	unsigned long port;
	int fd, n;

	if (c->unix_sock) {
		send_error(c, "UDPINFO: no datagram channel over a UNIX socket");
		return 0;
	}
	if (wire_kv_get(f->payload, f->len, "port", val, sizeof(val)) || (port = strtoul(val, &end, 10)) == 0 ||
	    port > 65535 || *end) {
		send_error(c, "UDPINFO: invalid port");
		return 0;
	}
	if (getpeername(c->fd, (struct sockaddr *)&ss, &len)) {
		send_error(c, "UDPINFO: cannot tell the host's address");
		return 0;
	}
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
		if (fd >= 0)
			close(fd);
		send_error(c, "UDPINFO: cannot open the datagram channel");
		return 0;
	}
	if (c->udp_fd >= 0)
		close(c->udp_fd);
	c->udp_fd = fd;
	c->udp_seq = 0;
	n = snprintf(msg, sizeof(msg), "event=udp\nport=%lu\n", port);
	conn_queue(c, LP_FRAME_STATUS, msg, (size_t)n);
	agent_log("host %s: events by UDP to port %lu", c->peer, port);
	return 0;
}

static int on_frame(struct agent *a, struct conn *c, const struct wire_frame *f)
{
	switch (f->type) {
	case LP_FRAME_START:
		return on_start(a, c, f);
	case LP_FRAME_ATTACH:
		return on_attach(a, c, f);
	case LP_FRAME_CONTROL:
		return on_control(a, c, f);
	case LP_FRAME_UDPINFO:
		return on_udpinfo(c, f);
	case LP_FRAME_OSCAL:
		return oscal_request(a, c, f);
	case LP_FRAME_HEARTBEAT:
		return 0;
	case LP_FRAME_BYE:
		agent_log("host %s said goodbye", c->peer);
		/* their last chunks, then their probes out, before our BYE */
		agent_end_probed(a);
		conn_queue(c, LP_FRAME_BYE, NULL, 0);
		c->state = CONN_CLOSING;
		return 0;
	default:
		agent_log("host %s sent an unexpected %s frame: closing", c->peer, wire_frame_name(f->type));
		return -EPROTO;
	}
}

/* Handles the whole frames received so far. */
static int conn_frames(struct agent *a, struct conn *c)
{
	struct wire_frame f;
	int r;

	while ((r = wire_reader_next(&c->rd, &f)) > 0) {
		if (c->state == CONN_CLOSING)
			continue;
		r = on_frame(a, c, &f);
		if (r)
			return r;
	}
	if (r < 0) {
		agent_log("host %s: bad frame: %s: closing", c->peer, c->rd.error);
		return -EPROTO;
	}
	return 0;
}

int conn_input(struct agent *a, struct conn *c)
{
	size_t avail;
	uint8_t *space;
	ssize_t n;

	space = wire_reader_space(&c->rd, &avail);
	n = recv(c->fd, space, avail, MSG_DONTWAIT);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	wire_reader_commit(&c->rd, (size_t)n);
	c->last_rx_ns = agent_now_ns();
	return conn_frames(a, c);
}
