/* layerprofd's listeners and the peers that have not authenticated yet
 * (docs/protocol.md, "Access"): a TCP socket, where a peer proves it knows
 * the token; a UNIX socket, where the kernel tells the peer's uid
 * (SO_PEERCRED) and the agent's own user and root need nothing more; and a
 * small table of pending peers with absolute deadlines, apart from the one
 * host, so that no unauthenticated peer holds what a host needs. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/agent.h"
#include "lp_arch.h"
#include "lp_version.h"

/* At most this many peers accepted in one round of the poll loop: a flood
 * of connections cannot keep the loop from the host and the rings. */
#define ACCEPT_PER_ROUND 32

int listen_tcp(struct agent *a, const char *arg)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	char host[256], port[32];
	int fd = -1, one = 1, r;

	if (wire_split_address(arg, host, sizeof(host), port, sizeof(port), NULL, true)) {
		fprintf(stderr, "layerprofd: invalid --listen '%s': expected ADDR:PORT\n", arg);
		return -EINVAL;
	}
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (r) {
		fprintf(stderr, "layerprofd: cannot resolve '%s': %s\n", arg, gai_strerror(r));
		return -EINVAL;
	}
	r = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, AGENT_LISTEN_BACKLOG))
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "layerprofd: cannot listen on '%s': %s\n", arg, strerror(-r));
		return r;
	}
	a->tcp_fd = fd;
	return 0;
}

/* The default socket's directory: made 0700, or, when it exists, taken only
 * if it is a real directory (not a link) of the agent's user that nobody
 * else may enter.  Anyone may make a name in /tmp first; such a name is
 * refused, never used. */
static int private_dir(const struct agent *a, const char *dir)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "layerprofd: cannot make '%s': %s\n", dir, strerror(errno));
		return -errno;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		int r = -errno;

		fprintf(stderr, "layerprofd: '%s' is not a directory the agent can use: %s\n", dir, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	close(fd);
	if (st.st_uid != a->uid || (st.st_mode & 077)) {
		fprintf(stderr,
		        "layerprofd: '%s' belongs to uid %u with mode %03o: the agent's socket needs a directory "
		        "of uid %u that only it may enter (remove it, or give --unix PATH)\n",
		        dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), a->uid);
		return -EPERM;
	}
	return 0;
}

/* A socket file left by an agent that died: one of ours, of the agent's
 * user, that nobody answers on.  Anything else at the path is not ours to
 * remove. */
static bool stale_socket(const struct agent *a, const struct sockaddr_un *sun)
{
	struct stat st;
	bool stale = false;
	int fd;

	if (lstat(sun->sun_path, &st) || !S_ISSOCK(st.st_mode) || st.st_uid != a->uid)
		return false;
	/* non-blocking: a live agent with a full backlog says EAGAIN, not stale */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	stale = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) && errno == ECONNREFUSED;
	close(fd);
	return stale;
}

int listen_unix(struct agent *a, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)];
	struct stat st;
	mode_t old;
	int fd, r;

	if (!path) {
		if (wire_unix_default(dir, sizeof(dir), a->uid, NULL) ||
		    wire_unix_default(sun.sun_path, sizeof(sun.sun_path), a->uid, LP_WIRE_UNIX_NAME))
			return -ENAMETOOLONG;
		r = private_dir(a, dir);
		if (r)
			return r;
	} else if (!path[0] || strlen(path) > LP_WIRE_UNIX_PATH_MAX) {
		fprintf(stderr, "layerprofd: invalid --unix '%s': a path of 1 to %u bytes\n", path,
		        LP_WIRE_UNIX_PATH_MAX);
		return -EINVAL;
	} else {
		memcpy(sun.sun_path, path, strlen(path) + 1);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* the socket file is made by bind, 0600 under this umask: only the
	 * agent's user (and root) may even connect; SO_PEERCRED checks anyway */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	if (r && errno == EADDRINUSE && stale_socket(a, &sun) && !unlink(sun.sun_path))
		r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (r || listen(fd, AGENT_LISTEN_BACKLOG) || lstat(sun.sun_path, &st)) {
		r = -errno;
		fprintf(stderr, "layerprofd: cannot listen on unix:%s: %s\n", sun.sun_path,
		        r == -EADDRINUSE ? "something is there already (another agent?)" : strerror(-r));
		close(fd);
		return r;
	}
	a->unix_fd = fd;
	a->unix_dev = (uint64_t)st.st_dev;
	a->unix_ino = (uint64_t)st.st_ino;
	snprintf(a->unix_path, sizeof(a->unix_path), "%s", sun.sun_path);
	return 0;
}

static void pending_close(struct pending *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->len = 0;
}

void listen_close(struct agent *a)
{
	struct stat st;
	size_t i;

	for (i = 0; i < AGENT_PENDING_MAX; i++)
		pending_close(&a->pending[i]);
	if (a->tcp_fd >= 0)
		close(a->tcp_fd);
	a->tcp_fd = -1;
	if (a->unix_fd < 0)
		return;
	close(a->unix_fd);
	a->unix_fd = -1;
	/* only the file this agent made: another may have taken the name */
	if (!lstat(a->unix_path, &st) && S_ISSOCK(st.st_mode) && (uint64_t)st.st_dev == a->unix_dev &&
	    (uint64_t)st.st_ino == a->unix_ino)
		unlink(a->unix_path);
}

/* A one-line ERROR to a peer that goes now; it may not read it.  seq: 1
 * after HELLO, 0 before. */
static void send_refusal(int fd, uint32_t seq, const char *msg)
{
	uint8_t frame[LP_WIRE_HEADER_SIZE + 128];
	size_t len = strlen(msg) < 128 ? strlen(msg) : 128;

	wire_header_put(frame, LP_FRAME_ERROR, seq, msg, (uint32_t)len);
	memcpy(frame + LP_WIRE_HEADER_SIZE, msg, len);
	if (send(fd, frame, LP_WIRE_HEADER_SIZE + len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the peer learns of the close only */
	}
}

static void pending_refuse(struct pending *p, const char *msg, const char *why_logged)
{
	agent_log("refused %s: %s", p->peer, why_logged);
	if (msg)
		send_refusal(p->fd, 1, msg);
	pending_close(p);
}

/* The peer's name for the log and the key its pending places are counted
 * by: the address without the port (one machine, whatever ports it uses). */
static void peer_names(const struct sockaddr_storage *ss, char *peer, size_t psize, char *key, size_t ksize)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		port = ntohs(s4->sin_port);
		snprintf(peer, psize, "%s:%d", host, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		port = ntohs(s6->sin6_port);
		snprintf(peer, psize, "[%s]:%d", host, port);
	} else {
		snprintf(peer, psize, "?");
	}
	snprintf(key, ksize, "%s", host);
}

/* Whether pending p should go before q: one that has sent part of a
 * frame and stopped (a real host sends its AUTH whole, as soon as HELLO
 * comes) before one that has sent nothing yet, then the one that has
 * waited longest, the most likely to be stalling. */
static bool goes_before(const struct pending *p, const struct pending *q)
{
	if (!q)
		return true;
	if ((p->len > 0) != (q->len > 0))
		return p->len > 0;
	return p->since_ns < q->since_ns;
}

/* A place for a new peer with this key: a free one, unless the key has
 * AGENT_PENDING_PER_PEER already (one of its own goes) or none is free
 * (one of all goes), chosen by goes_before: a peer that trickles its
 * frame cannot push out a real host waiting for its own HELLO answer by
 * opening new connections. */
static struct pending *pending_place(struct agent *a, const char *key)
{
	struct pending *free_place = NULL, *victim = NULL, *victim_same = NULL;
	unsigned same = 0;
	size_t i;

	for (i = 0; i < AGENT_PENDING_MAX; i++) {
		struct pending *p = &a->pending[i];

		if (p->fd < 0) {
			if (!free_place)
				free_place = p;
			continue;
		}
		if (goes_before(p, victim))
			victim = p;
		if (!strcmp(p->key, key)) {
			same++;
			if (goes_before(p, victim_same))
				victim_same = p;
		}
	}
	if (same >= AGENT_PENDING_PER_PEER) {
		pending_refuse(victim_same, "timeout: no AUTH in time",
		               "pushed out by a newer peer from the same place");
		return victim_same;
	}
	if (free_place)
		return free_place;
	pending_refuse(victim, "timeout: no AUTH in time", "pushed out: every pending place is taken");
	return victim;
}

/* HELLO with a fresh nonce; no datagram channel by the UNIX socket. */
static int send_hello(const struct agent *a, struct pending *p)
{
	uint8_t frame[LP_WIRE_HEADER_SIZE + 512];
	char nonce_hex[2 * AUTH_NONCE_SIZE + 1], *hello = (char *)frame + LP_WIRE_HEADER_SIZE;
	int n;

	if (auth_random(p->nonce, sizeof(p->nonce)))
		return -EIO;
	auth_hex(p->nonce, sizeof(p->nonce), nonce_hex);
	n = snprintf(
	    hello, sizeof(frame) - LP_WIRE_HEADER_SIZE,
	    "protocol=%d\nagent=layerprofd " LP_VERSION "\narch=" LP_ARCH_NAME
	    "\ncaps=startstop,attach,filters%s,syscalls,kernel,kernel_system,dynamic,attach_dynamic%s%s%s\nnonce=%s\n",
	    LP_WIRE_PROTOCOL, p->unix_sock ? "" : ",udp", dpatch_supported() ? ",libcalls" : "",
	    a->memlib[0] ? ",memory,mem_fold" : "", oscal_available(a) ? ",oscal" : "", nonce_hex);
	if (n < 0 || (size_t)n >= sizeof(frame) - LP_WIRE_HEADER_SIZE)
		return -EOVERFLOW;
	wire_header_put(frame, LP_FRAME_HELLO, 0, hello, (uint32_t)n);
	/* a new socket's buffer takes it whole, or the peer is not worth it */
	if (send(p->fd, frame, LP_WIRE_HEADER_SIZE + (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)(LP_WIRE_HEADER_SIZE + (size_t)n))
		return -EIO;
	return 0;
}

/* Who is at the other end of a UNIX socket, from the kernel. */
static int unix_peer(int fd, const struct agent *a, bool *local, char *peer, size_t psize, char *key, size_t ksize)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred))
		return -errno;
	*local = cred.uid == a->uid || cred.uid == 0;
	snprintf(peer, psize, "unix:uid %u pid %d", (unsigned)cred.uid, (int)cred.pid);
	snprintf(key, ksize, "uid %u", (unsigned)cred.uid);
	return 0;
}

void listen_accept(struct agent *a, int lfd, bool unix_sock)
{
	int i;

	for (i = 0; i < ACCEPT_PER_ROUND; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char peer[80], key[64];
		struct pending *p;
		bool local = false;
		int fd, one = 1;

		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN: no one else waits */
		if (unix_sock) {
			if (unix_peer(fd, a, &local, peer, sizeof(peer), key, sizeof(key))) {
				close(fd);
				continue;
			}
			/* no token: only the agent's user and root may come this way */
			if (!local && !a->has_token) {
				agent_log("refused %s: not the agent's user (uid %u) nor root", peer, a->uid);
				send_refusal(fd, 0, "refused");
				close(fd);
				continue;
			}
		} else {
			peer_names(&ss, peer, sizeof(peer), key, sizeof(key));
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		p = pending_place(a, key);
		p->fd = fd;
		p->unix_sock = unix_sock;
		p->local = local;
		p->len = 0;
		p->since_ns = agent_now_ns();
		p->deadline_ns = p->since_ns + AGENT_AUTH_DEADLINE_NS;
		snprintf(p->peer, sizeof(p->peer), "%s", peer);
		snprintf(p->key, sizeof(p->key), "%s", key);
		if (send_hello(a, p))
			pending_refuse(p, NULL, "cannot send HELLO");
	}
}

/* The AUTH is good: the peer is the host, unless one is connected. */
static void pending_admit(struct agent *a, struct pending *p, size_t used)
{
	struct conn *c;

	if (a->conn) {
		agent_log("refused %s: busy with %s", p->peer, a->conn->peer);
		send_refusal(p->fd, 1, "busy: another host is connected");
		pending_close(p);
		return;
	}
	c = conn_new(a, p->fd, p->peer, p->unix_sock, p->buf + used, p->len - used);
	if (!c) {
		pending_refuse(p, NULL, "out of memory");
		return;
	}
	/* the fd is the connection's now */
	p->fd = -1;
	p->len = 0;
	a->conn = c;
	if (conn_welcome(a, c)) {
		agent_log("host %s: dropped after AUTH", c->peer);
		conn_free(c);
		a->conn = NULL;
	}
}

void pending_input(struct agent *a, struct pending *p)
{
	char mac[2 * AUTH_MAC_SIZE + 8], want[2 * AUTH_MAC_SIZE + 1];
	struct wire_frame f;
	uint32_t plen;
	ssize_t n;

	n = recv(p->fd, p->buf + p->len, sizeof(p->buf) - p->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		agent_log("peer %s left before AUTH", p->peer);
		pending_close(p);
		return;
	}
	p->len += (size_t)n;
	if (p->len < LP_WIRE_HEADER_SIZE)
		return;
	plen = wire_header_len(p->buf);
	if (plen > AGENT_AUTH_FRAME_MAX) {
		pending_refuse(p, NULL, "a first frame too long for AUTH");
		return;
	}
	if (p->len < LP_WIRE_HEADER_SIZE + plen)
		return;
	if (wire_parse_datagram(p->buf, LP_WIRE_HEADER_SIZE + plen, &f) || f.seq != 0) {
		pending_refuse(p, NULL, "bad frame before AUTH");
		return;
	}
	if (f.type != LP_FRAME_AUTH) {
		pending_refuse(p, "refused", "no AUTH frame");
		return;
	}
	if (wire_kv_get(f.payload, f.len, "mac", mac, sizeof(mac)))
		mac[0] = '\0';
	/* the agent's own user on the UNIX socket is proved by the kernel;
	 * anyone else proves the token (a TCP listener always has one) */
	if (!p->local) {
		if (!a->has_token) {
			pending_refuse(p, "refused", "no token to check");
			return;
		}
		auth_mac_hex(a->token, a->token_len, p->nonce, want);
		if (strlen(mac) != 2 * AUTH_MAC_SIZE || !auth_equal(mac, want, 2 * AUTH_MAC_SIZE)) {
			pending_refuse(p, "refused", mac[0] ? "wrong token" : "no token");
			return;
		}
	}
	pending_admit(a, p, LP_WIRE_HEADER_SIZE + plen);
}

void pending_expire(struct agent *a, uint64_t now)
{
	size_t i;

	for (i = 0; i < AGENT_PENDING_MAX; i++) {
		struct pending *p = &a->pending[i];

		if (p->fd >= 0 && now >= p->deadline_ns)
			pending_refuse(p, "timeout: no AUTH in time", "no AUTH within the handshake deadline");
	}
}
