/* The host end of a live connection (see netclient.h). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "host/lib/live/netclient.h"

#define NONCE_HEX_SIZE (2 * AUTH_NONCE_SIZE + 1)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int netclient_split_address(const char *addr, char *host, size_t hsize, char *port, size_t psize)
{
	return wire_split_address(addr, host, hsize, port, psize, NETCLIENT_DEFAULT_PORT, false);
}

int netclient_check_address(const char *addr)
{
	char host[256], port[16];
	const char *path;

	if (!addr)
		return -EINVAL;
	path = wire_unix_path(addr);
	if (path)
		return path[0] && strlen(path) <= LP_WIRE_UNIX_PATH_MAX ? 0 : -EINVAL;
	return netclient_split_address(addr, host, sizeof(host), port, sizeof(port));
}

int netclient_default_address(char *out, size_t size)
{
	char path[LP_WIRE_UNIX_PATH_MAX + 1];
	int n;

	if (wire_unix_default(path, sizeof(path), (unsigned)geteuid(), LP_WIRE_UNIX_NAME))
		return -ENAMETOOLONG;
	n = snprintf(out, size, LP_WIRE_UNIX_PREFIX "%s", path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

void netclient_init(struct netclient *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void netclient_release(struct netclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	wire_reader_release(&c->rd);
	free(c->welcome);
	netclient_init(c);
}

/* Connects fd to ai within NETCLIENT_TIMEOUT_MS.  Returns 0 or -errno. */
static int connect_one(int fd, const struct addrinfo *ai)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0, r;

	if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	do
		r = poll(&pfd, 1, NETCLIENT_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

/* The agent's UNIX socket: connected, then the kernel says whose it is.
 * Only an agent of our own user or root is spoken to: a socket someone
 * else made would learn what we start and feed us what it likes. */
static int connect_unix(struct netclient *c, const char *addr, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = NETCLIENT_TIMEOUT_MS / 1000 };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, r;

	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* the timeout bounds a connect that waits for room in the backlog */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		r = -errno;
		snprintf(c->error, sizeof(c->error), "cannot connect to %s: %s%s", addr, strerror(-r),
		         r == -ENOENT ? " (is layerprofd running as this user? another user's agent is reached "
		                        "over TCP with its token)"
		                      : "");
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		snprintf(c->error, sizeof(c->error),
		         "refusing the agent at %s: its socket is held by uid %u, neither this user nor root", addr,
		         (unsigned)cred.uid);
		close(fd);
		return -EPERM;
	}
	return fd;
}

int netclient_connect(struct netclient *c, const char *addr)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	struct timeval tv = { .tv_sec = NETCLIENT_TIMEOUT_MS / 1000 };
	char host[256], port[16];
	int r, fd = -1, one = 1;

	snprintf(c->peer, sizeof(c->peer), "%s", addr);
	if (netclient_check_address(addr) ||
	    (!wire_unix_path(addr) && netclient_split_address(addr, host, sizeof(host), port, sizeof(port)))) {
		snprintf(c->error, sizeof(c->error),
		         "invalid agent address '%s': expected HOST:PORT, [IPV6]:PORT or unix:PATH", addr);
		return -EINVAL;
	}
	if (!c->rd.buf && wire_reader_init(&c->rd)) {
		snprintf(c->error, sizeof(c->error), "cannot connect to %s: out of memory", addr);
		return -ENOMEM;
	}
	if (wire_unix_path(addr)) {
		fd = connect_unix(c, addr, wire_unix_path(addr));
		if (fd < 0)
			return fd;
		goto connected;
	}
	r = getaddrinfo(host, port, &hints, &res);
	if (r) {
		snprintf(c->error, sizeof(c->error), "cannot resolve '%s': %s", host, gai_strerror(r));
		return r == EAI_MEMORY ? -ENOMEM : -EHOSTUNREACH;
	}
	r = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		r = connect_one(fd, ai);
		if (!r)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(c->error, sizeof(c->error), "cannot connect to %s: %s", addr, strerror(-r));
		return r;
	}
connected:
	/* blocking from here on, but a send never waits forever */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		r = -errno;
		close(fd);
		snprintf(c->error, sizeof(c->error), "cannot connect to %s: %s", addr, strerror(-r));
		return r;
	}
	/* control frames are small and should not wait for more */
	if (!wire_unix_path(addr))
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	return 0;
}

int netclient_send(struct netclient *c, uint8_t type, const void *payload, size_t len)
{
	int r;

	if (len > LP_WIRE_MAX_PAYLOAD) {
		snprintf(c->error, sizeof(c->error), "%s frame too long for the protocol (%zu bytes)",
		         wire_frame_name(type), len);
		return -EMSGSIZE;
	}
	r = wire_send(c->fd, type, &c->tx_seq, payload, (uint32_t)len);
	if (r)
		snprintf(c->error, sizeof(c->error), "cannot send to the agent at %s: %s", c->peer,
		         r == -EAGAIN ? "it does not take data" : strerror(-r));
	return r;
}

int netclient_receive(struct netclient *c)
{
	size_t avail;
	uint8_t *space = wire_reader_space(&c->rd, &avail);
	ssize_t n;

	if (!avail)
		return 0; /* a whole frame waits to be taken */
	do
		n = recv(c->fd, space, avail, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n < 0) {
		snprintf(c->error, sizeof(c->error), "cannot read from the agent at %s: %s", c->peer, strerror(errno));
		return errno == ECONNRESET ? -ECONNRESET : -errno;
	}
	if (n == 0) {
		snprintf(c->error, sizeof(c->error), "the agent at %s closed the connection", c->peer);
		return -ECONNRESET;
	}
	wire_reader_commit(&c->rd, (size_t)n);
	return (int)n;
}

int netclient_next(struct netclient *c, struct wire_frame *f)
{
	int r = wire_reader_next(&c->rd, f);

	if (r < 0)
		snprintf(c->error, sizeof(c->error), "bad frame from the agent at %s: %s", c->peer, c->rd.error);
	return r;
}

int netclient_wait(struct netclient *c, struct wire_frame *f, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int r;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		uint64_t now;

		r = netclient_next(c, f);
		if (r)
			return r;
		now = now_ms();
		if (now >= deadline) {
			snprintf(c->error, sizeof(c->error), "the agent at %s did not answer within %d s", c->peer,
			         timeout_ms / 1000);
			return -ETIMEDOUT;
		}
		r = poll(&pfd, 1, (int)(deadline - now));
		if (r < 0 && errno != EINTR) {
			snprintf(c->error, sizeof(c->error), "cannot wait for the agent at %s: %s", c->peer,
			         strerror(errno));
			return -errno;
		}
		if (r > 0) {
			r = netclient_receive(c);
			if (r < 0)
				return r;
		}
	}
}

/* Copies a reason from the wire for printing: printable ASCII only. */
static void copy_printable(char *out, size_t size, const uint8_t *p, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 1 < size; i++) {
		if (p[i] == '\n' && i + 1 == len)
			break;
		out[n++] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '?';
	}
	out[n] = '\0';
}

/* The agent's ERROR frame f, in place of the one the handshake waits for:
 * its reason is the connection's error. */
static int refused(struct netclient *c, const struct wire_frame *f)
{
	char reason[256];

	copy_printable(reason, sizeof(reason), f->payload, f->len);
	snprintf(c->error, sizeof(c->error), "%s", reason);
	return -EACCES;
}

/* Reads the HELLO frame into c and the nonce. */
static int handshake_hello(struct netclient *c, uint8_t nonce[AUTH_NONCE_SIZE])
{
	char val[NONCE_HEX_SIZE + 1];
	struct wire_frame f;
	int r = netclient_wait(c, &f, NETCLIENT_TIMEOUT_MS);

	if (r < 0)
		return r;
	if (f.type == LP_FRAME_ERROR)
		return refused(c, &f);
	if (f.type != LP_FRAME_HELLO) {
		snprintf(c->error, sizeof(c->error), "the agent at %s sent %s instead of HELLO: is it layerprofd?",
		         c->peer, wire_frame_name(f.type));
		return -EPROTO;
	}
	if (wire_kv_get(f.payload, f.len, "protocol", val, sizeof(val)) || strcmp(val, "1")) {
		snprintf(c->error, sizeof(c->error), "the agent at %s speaks protocol %s; this layerprof speaks 1",
		         c->peer, val[0] ? val : "(none)");
		return -EPROTO;
	}
	if (wire_kv_get(f.payload, f.len, "nonce", val, sizeof(val)) || strlen(val) != 2 * AUTH_NONCE_SIZE ||
	    auth_unhex(val, nonce, AUTH_NONCE_SIZE)) {
		snprintf(c->error, sizeof(c->error), "the agent at %s sent a HELLO without a valid nonce", c->peer);
		return -EPROTO;
	}
	if (wire_kv_get(f.payload, f.len, "agent", c->agent, sizeof(c->agent)))
		c->agent[0] = '\0';
	if (wire_kv_get(f.payload, f.len, "arch", c->arch, sizeof(c->arch)))
		c->arch[0] = '\0';
	if (wire_kv_get(f.payload, f.len, "caps", c->caps, sizeof(c->caps)))
		c->caps[0] = '\0';
	return 0;
}

int netclient_handshake(struct netclient *c, const char *token, size_t token_len)
{
	char auth[64 + 2 * AUTH_MAC_SIZE], mac[2 * AUTH_MAC_SIZE + 1] = "";
	uint8_t nonce[AUTH_NONCE_SIZE];
	struct wire_frame f;
	int r, n;

	r = handshake_hello(c, nonce);
	if (r)
		return r;
	if (token)
		auth_mac_hex(token, token_len, nonce, mac);
	n = snprintf(auth, sizeof(auth), "protocol=%d\nmac=%s\n", LP_WIRE_PROTOCOL, mac);
	r = netclient_send(c, LP_FRAME_AUTH, auth, (size_t)n);
	if (r)
		return r;
	r = netclient_wait(c, &f, NETCLIENT_TIMEOUT_MS);
	if (r == -ECONNRESET) {
		snprintf(c->error, sizeof(c->error), "the agent at %s closed the connection after AUTH", c->peer);
		return r;
	}
	if (r < 0)
		return r;
	if (f.type == LP_FRAME_ERROR)
		return refused(c, &f);
	if (f.type != LP_FRAME_WELCOME) {
		snprintf(c->error, sizeof(c->error), "the agent at %s sent %s instead of WELCOME", c->peer,
		         wire_frame_name(f.type));
		return -EPROTO;
	}
	n = f.len < NETCLIENT_WELCOME_MAX ? (int)f.len : (int)NETCLIENT_WELCOME_MAX;
	free(c->welcome);
	c->welcome = malloc((size_t)n + 1);
	if (!c->welcome) {
		snprintf(c->error, sizeof(c->error), "out of memory");
		return -ENOMEM;
	}
	memcpy(c->welcome, f.payload, (size_t)n);
	c->welcome[n] = '\0';
	c->welcome_len = (size_t)n;
	return 0;
}

/* The token in the first line of path into token[size]: its length, or
 * -EACCES with c->error set. */
static int load_token(struct netclient *c, const char *path, char *token, size_t size, const struct lp_warner *warn)
{
	bool readable = false;
	int r = auth_token_load(path, token, size, &readable);

	if (r == -EINVAL) {
		snprintf(c->error, sizeof(c->error),
		         "token file '%s' holds no usable token (one line of 1 to %u bytes)", path, AUTH_TOKEN_MAX);
		return -EACCES;
	}
	if (r < 0) {
		snprintf(c->error, sizeof(c->error), "cannot read token file '%s': %s", path, strerror(-r));
		return -EACCES;
	}
	if (readable)
		error_warn(warn, "warning: token file '%s' is readable by other users", path);
	return r;
}

int netclient_open(struct netclient *c, const char *addr, const char *token_file, const struct lp_warner *warn)
{
	char token[AUTH_TOKEN_MAX + 2], reason[sizeof(c->error)];
	int len = 0, r;

	if (token_file) {
		len = load_token(c, token_file, token, sizeof(token), warn);
		if (len < 0)
			return len; /* the token file's fault, not the command line's */
	}
	r = netclient_connect(c, addr);
	if (!r)
		r = netclient_handshake(c, token_file ? token : NULL, (size_t)len);
	explicit_bzero(token, sizeof(token));
	if (r == -EACCES) {
		memcpy(reason, c->error, sizeof(reason));
		snprintf(c->error, sizeof(c->error), "agent refused the connection: %.400s", reason);
	}
	return r;
}

bool netclient_has_cap(const struct netclient *c, const char *cap)
{
	size_t len = strlen(cap);
	const char *p = c->caps;

	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n == len && !strncmp(p, cap, len))
			return true;
		p += n + (comma ? 1 : 0);
	}
	return false;
}
