/* Host side of bench/live: connects to layerprofd, starts one program and
 * takes its whole stream, by TCP or with EVENTS by UDP.  Counts events,
 * lost events and bytes, and times every function entry from its birth on
 * the target to its arrival here: agent and host share the machine, so both
 * times are the same CLOCK_MONOTONIC.  Prints key=value lines on stdout.
 *
 * Built by bench/live against build/common/liblpcommon.a; single-threaded. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/chunk.h"
#include "common/decoder.h"
#include "common/wire.h"

#define NS_PER_S 1000000000ull
#define HEARTBEAT_NS NS_PER_S /* the agent drops a host silent for 5 s */
#define POLL_MS 100
#define UDP_QUIET_MS 200 /* after the exit report: datagrams still on the way */
#define UDP_RCVBUF_DEFAULT (16 << 20)
#define UDP_RCVBUF_MAX (1 << 30)
#define DATAGRAM_MAX 65536
#define START_MAX 65536 /* START payload bound (docs/protocol.md) */
#define KV_MAX 64

/* Latencies go into a log-linear histogram: 2^HIST_SUB buckets per power of
 * two, so a quantile is within 1/2^HIST_SUB (1.6%) of the true value; values
 * up to 2^HIST_EXP_MAX ns (18 minutes). */
#define HIST_SUB 6
#define HIST_EXP_MAX 40
#define HIST_BUCKETS ((HIST_EXP_MAX - HIST_SUB + 2) << HIST_SUB)

struct hist {
	uint64_t n;
	uint64_t max;
	uint64_t negative; /* events stamped after their arrival: clock error */
	uint64_t bucket[HIST_BUCKETS];
};

struct options {
	const char *connect;
	const char *token_file; /* the agent's token (TCP needs one) */
	bool udp;
	int rcvbuf; /* bytes asked for the UDP socket; 0: the system's default */
	const char *save;
	double timeout_s;
	long flush_ms; /* CONTROL flush_ms to send; 0: none */
	char **argv;   /* the program to start, NULL-terminated */
	int argc;
};

/* What arrived.  "Function events" are ENTRY and EXIT; "events" are all
 * events, as the agent counts them in its STATUS and END reports. */
struct tally {
	uint64_t entries, exits, other_events, lost_events;
	uint64_t tcp_bytes, tcp_chunks, tcp_events;
	uint64_t chunk_bytes[LP_CHUNK_END + 1]; /* by chunk type, headers included */
	uint64_t udp_bytes, udp_datagrams, udp_bad, udp_late, udp_events;
	uint32_t udp_max_seq;
	bool udp_any;
	uint64_t first_event_ns, last_event_ns; /* target times of function events */
	uint64_t first_arrival_ns, last_arrival_ns;
	uint64_t start_ns, session_ns, exit_ns;
	/* the agent's reports */
	uint64_t status_lost;
	bool have_udp_status, have_end, have_exit;
	uint64_t udp_sent_datagrams, udp_sent_events;
	uint64_t end_events, end_lost;
	long exit_status;
	long pid;
	struct hist lat;
};

struct host {
	int fd, udp_fd;
	struct wire_reader rd;
	uint32_t tx_seq;
	uint64_t last_tx_ns;
	FILE *save; /* NULL, or the trace file being written */
	struct tally t;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static unsigned hist_index(uint64_t v)
{
	unsigned e;

	if (v < (1u << HIST_SUB))
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	if (e > HIST_EXP_MAX)
		return HIST_BUCKETS - 1;
	return ((e - HIST_SUB + 1) << HIST_SUB) + (unsigned)((v >> (e - HIST_SUB)) & ((1u << HIST_SUB) - 1));
}

/* The middle of a bucket's range, in ns. */
static double hist_value(unsigned i)
{
	unsigned e, m;

	if (i < (1u << HIST_SUB))
		return i;
	e = (i >> HIST_SUB) + HIST_SUB - 1;
	m = i & ((1u << HIST_SUB) - 1);
	return ((double)((1u << HIST_SUB) + m) + 0.5) * (double)(1ull << (e - HIST_SUB));
}

static void hist_add(struct hist *h, uint64_t event_ns, uint64_t arrival_ns)
{
	uint64_t v = 0;

	if (event_ns > arrival_ns)
		h->negative++;
	else
		v = arrival_ns - event_ns;
	h->bucket[hist_index(v)]++;
	h->n++;
	if (v > h->max)
		h->max = v;
}

/* The q-quantile (0 < q <= 1) in ns; 0 without samples. */
static double hist_quantile(const struct hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->n + 0.5), seen = 0;
	unsigned i;

	if (!h->n)
		return 0;
	if (want < 1)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= want)
			return hist_value(i);
	}
	return (double)h->max;
}

static int host_send(struct host *h, uint8_t type, const void *payload, size_t len)
{
	int r = wire_send(h->fd, type, &h->tx_seq, payload, (uint32_t)len);

	if (!r)
		h->last_tx_ns = now_ns();
	return r;
}

/* Reads what the socket has (blocking).  0, or -EPIPE when the agent closed. */
static int host_read(struct host *h)
{
	size_t avail;
	uint8_t *space = wire_reader_space(&h->rd, &avail);
	ssize_t n;

	n = recv(h->fd, space, avail, 0);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	wire_reader_commit(&h->rd, (size_t)n);
	h->t.tcp_bytes += (uint64_t)n;
	return 0;
}

/* Blocks until one whole frame is there (handshake only). */
static int host_next_frame(struct host *h, struct wire_frame *f)
{
	int r;

	while ((r = wire_reader_next(&h->rd, f)) == 0) {
		r = host_read(h);
		if (r)
			return r;
	}
	if (r < 0) {
		fprintf(stderr, "netlat: bad frame from the agent: %s\n", h->rd.error);
		return r;
	}
	return 0;
}

/* A number from a STATUS or END payload; `fallback` when absent. */
static uint64_t kv_u64(const uint8_t *p, size_t len, const char *key, uint64_t fallback)
{
	char val[KV_MAX];

	if (wire_kv_get(p, len, key, val, sizeof(val)))
		return fallback;
	return strtoull(val, NULL, 10);
}

/* One EVENTS payload: counts its events and times its function entries
 * against `arrival`.  Returns the events in it, or -EBADMSG. */
static long take_events(struct host *h, const uint8_t *payload, size_t len, uint64_t arrival)
{
	struct tally *t = &h->t;
	struct decoder d;
	struct lp_event ev;
	long n = 0;
	int r;
	bool function_events = false;

	if (decoder_begin(&d, payload, len))
		return -EBADMSG;
	while ((r = decoder_next(&d, &ev)) > 0) {
		n++;
		switch (ev.type) {
		case LP_EV_ENTRY:
			t->entries++;
			hist_add(&t->lat, ev.time, arrival);
			break;
		case LP_EV_EXIT:
			t->exits++;
			break;
		case LP_EV_LOST:
			t->lost_events += ev.value;
			t->other_events++;
			continue;
		default:
			t->other_events++;
			continue;
		}
		function_events = true;
		if (!t->first_event_ns || ev.time < t->first_event_ns)
			t->first_event_ns = ev.time;
		if (ev.time > t->last_event_ns)
			t->last_event_ns = ev.time;
	}
	if (r < 0)
		return -EBADMSG;
	if (function_events) {
		if (!t->first_arrival_ns)
			t->first_arrival_ns = arrival;
		t->last_arrival_ns = arrival;
	}
	return n;
}

/* A CHUNK frame's payload: u32 session id, chunk header, chunk payload.
 * Returns the events it held, or -EBADMSG. */
static long take_chunk(struct host *h, const uint8_t *p, size_t len, uint64_t arrival, bool by_udp)
{
	struct chunk_info ci;
	long n = 0;

	if (len < 4 + LP_CHUNK_HEADER_SIZE || chunk_header_get(p + 4, &ci) || ci.len != len - 4 - LP_CHUNK_HEADER_SIZE)
		return -EBADMSG;
	/* the frame's checksum has covered these bytes already */
	h->t.chunk_bytes[ci.type <= LP_CHUNK_END ? ci.type : 0] += len - 4;
	if (ci.type == LP_CHUNK_EVENTS) {
		n = take_events(h, p + 4 + LP_CHUNK_HEADER_SIZE, ci.len, arrival);
		if (n < 0)
			return n;
	} else if (ci.type == LP_CHUNK_END) {
		h->t.have_end = true;
		h->t.end_events = kv_u64(p + 4 + LP_CHUNK_HEADER_SIZE, ci.len, "events", 0);
		h->t.end_lost = kv_u64(p + 4 + LP_CHUNK_HEADER_SIZE, ci.len, "lost", 0);
	}
	if (h->save && !by_udp && fwrite(p + 4, 1, len - 4, h->save) != len - 4)
		return -EIO;
	return n;
}

static void take_status(struct host *h, const uint8_t *p, size_t len, uint64_t arrival)
{
	char event[KV_MAX];
	struct tally *t = &h->t;

	if (wire_kv_get(p, len, "event", event, sizeof(event)))
		return;
	if (!strcmp(event, "lost")) {
		t->status_lost += kv_u64(p, len, "lost", 0);
	} else if (!strcmp(event, "udp") && !wire_kv_get(p, len, "next_seq", event, sizeof(event))) {
		t->have_udp_status = true;
		t->udp_sent_datagrams = strtoull(event, NULL, 10);
		t->udp_sent_events = kv_u64(p, len, "events", 0);
	} else if (!strcmp(event, "exit")) {
		t->have_exit = true;
		t->exit_ns = arrival;
		t->exit_status = (long)kv_u64(p, len, "status", (uint64_t)-1);
	}
}

static int take_frame(struct host *h, const struct wire_frame *f, uint64_t arrival)
{
	long n;

	switch (f->type) {
	case LP_FRAME_CHUNK:
		n = take_chunk(h, f->payload, f->len, arrival, false);
		if (n < 0) {
			fprintf(stderr, "netlat: %s\n",
			        n == -EIO ? "cannot write the saved trace" : "undecodable CHUNK frame");
			return (int)n;
		}
		h->t.tcp_chunks++;
		h->t.tcp_events += (uint64_t)n;
		return 0;
	case LP_FRAME_STATUS:
		take_status(h, f->payload, f->len, arrival);
		return 0;
	case LP_FRAME_SESSION:
		h->t.session_ns = arrival;
		h->t.pid = (long)kv_u64(f->payload, f->len, "pid", 0);
		return 0;
	case LP_FRAME_ERROR:
		fprintf(stderr, "netlat: the agent refused: %.*s\n", (int)f->len, (const char *)f->payload);
		return -EPROTO;
	case LP_FRAME_HEARTBEAT:
	case LP_FRAME_BYE:
		return 0;
	default:
		fprintf(stderr, "netlat: unexpected %s frame\n", wire_frame_name(f->type));
		return -EPROTO;
	}
}

/* Takes every datagram waiting on the UDP socket. */
static int take_datagrams(struct host *h)
{
	static uint8_t buf[DATAGRAM_MAX];
	struct tally *t = &h->t;
	struct wire_frame f;
	ssize_t n;
	long events;

	while ((n = recv(h->udp_fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
		uint64_t arrival = now_ns();

		t->udp_bytes += (uint64_t)n;
		if (wire_parse_datagram(buf, (size_t)n, &f) || f.type != LP_FRAME_CHUNK ||
		    (events = take_chunk(h, f.payload, f.len, arrival, true)) < 0) {
			t->udp_bad++;
			continue;
		}
		t->udp_datagrams++;
		t->udp_events += (uint64_t)events;
		if (t->udp_any && f.seq < t->udp_max_seq)
			t->udp_late++;
		else
			t->udp_max_seq = f.seq;
		t->udp_any = true;
	}
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
}

static int open_tcp(const char *arg)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	char host[256], port[16];
	int fd = -1, one = 1, r;

	if (wire_split_address(arg, host, sizeof(host), port, sizeof(port), NULL, false)) {
		fprintf(stderr, "netlat: invalid --connect '%s': expected ADDR:PORT or [IPV6]:PORT\n", arg);
		return -EINVAL;
	}
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	r = getaddrinfo(host, port, &hints, &res);
	if (r) {
		fprintf(stderr, "netlat: cannot resolve '%s': %s\n", arg, gai_strerror(r));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		r = -errno;
		fprintf(stderr, "netlat: cannot connect to '%s': %s\n", arg, strerror(errno));
		return r;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* A datagram socket on the TCP connection's local address, any port, with
 * a receive buffer of `size` bytes (SO_RCVBUFFORCE where allowed, so that
 * the benchmark measures the agent and not this socket) or the system's
 * default (size 0).  The buffer the kernel granted goes to *rcvbuf. */
static int open_udp(int tcp_fd, int size, int *rcvbuf)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd;

	if (getsockname(tcp_fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (size && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	len = sizeof(*rcvbuf);
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf, &len);
	len = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	if (bind(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -errno;
	}
	return fd;
}

static int udp_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* HELLO, AUTH with the token's MAC of the nonce, WELCOME. */
static int handshake(struct host *h, const char *token, size_t token_len)
{
	char auth[32 + 2 * AUTH_MAC_SIZE], mac[2 * AUTH_MAC_SIZE + 1], nonce_hex[2 * AUTH_NONCE_SIZE + 1];
	uint8_t nonce[AUTH_NONCE_SIZE];
	struct wire_frame f;
	int r, n;

	r = host_next_frame(h, &f);
	if (r)
		return r;
	if (f.type != LP_FRAME_HELLO) {
		fprintf(stderr, "netlat: the agent did not say HELLO (got %s)\n", wire_frame_name(f.type));
		return -EPROTO;
	}
	if (wire_kv_get(f.payload, f.len, "nonce", nonce_hex, sizeof(nonce_hex)) ||
	    auth_unhex(nonce_hex, nonce, sizeof(nonce))) {
		fprintf(stderr, "netlat: the agent's HELLO has no valid nonce\n");
		return -EPROTO;
	}
	auth_mac_hex(token, token_len, nonce, mac);
	n = snprintf(auth, sizeof(auth), "protocol=1\nmac=%s\n", mac);
	r = host_send(h, LP_FRAME_AUTH, auth, (size_t)n);
	if (!r)
		r = host_next_frame(h, &f);
	if (r)
		return r;
	if (f.type != LP_FRAME_WELCOME) {
		fprintf(stderr, "netlat: the agent refused the connection (%s: %.*s)\n", wire_frame_name(f.type),
		        (int)f.len, (const char *)f.payload);
		return -EPROTO;
	}
	return 0;
}

/* UDPINFO, then wait for the agent's "event=udp port=" answer. */
static int ask_udp(struct host *h, int port)
{
	char msg[32];
	struct wire_frame f;
	int n = snprintf(msg, sizeof(msg), "port=%d\n", port), r;

	r = host_send(h, LP_FRAME_UDPINFO, msg, (size_t)n);
	while (!r) {
		r = host_next_frame(h, &f);
		if (r)
			break;
		if (f.type == LP_FRAME_STATUS && !wire_kv_get(f.payload, f.len, "port", msg, sizeof(msg)))
			return 0;
		r = take_frame(h, &f, now_ns());
	}
	return r;
}

static int send_start(struct host *h, char **argv, int argc)
{
	char *buf;
	size_t len = 0, n;
	int i, r;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (len > START_MAX) {
		fprintf(stderr, "netlat: the program's arguments are over %d bytes\n", START_MAX);
		return -E2BIG;
	}
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	for (len = 0, i = 0; i < argc; i++) {
		n = strlen(argv[i]) + 1;
		memcpy(buf + len, argv[i], n);
		len += n;
	}
	h->t.start_ns = now_ns();
	r = host_send(h, LP_FRAME_START, buf, len);
	free(buf);
	return r;
}

/* Receives until the program's exit report and, with UDP, until the
 * datagrams stop; sends a HEARTBEAT every second meanwhile. */
static int stream(struct host *h, double timeout_s)
{
	uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
	struct pollfd pfd[2] = { { .fd = h->fd, .events = POLLIN }, { .fd = h->udp_fd, .events = POLLIN } };
	nfds_t nfds = h->udp_fd >= 0 ? 2 : 1;
	struct wire_frame f;
	int r;

	for (;;) {
		uint64_t now = now_ns();

		if (now > deadline) {
			fprintf(stderr, "netlat: no exit report within %.0f s\n", timeout_s);
			return -ETIMEDOUT;
		}
		if (now - h->last_tx_ns > HEARTBEAT_NS && (r = host_send(h, LP_FRAME_HEARTBEAT, NULL, 0)))
			return r;
		if (h->t.have_exit && nfds == 1)
			return 0;
		r = poll(pfd, nfds, h->t.have_exit ? UDP_QUIET_MS : POLL_MS);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (h->t.have_exit && r == 0)
			return 0; /* no datagram for UDP_QUIET_MS after the exit */
		if (nfds == 2 && (pfd[1].revents & POLLIN)) {
			r = take_datagrams(h);
			if (r)
				return r;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = host_read(h);
			if (r == -EPIPE && h->t.have_exit)
				return 0;
			if (r) {
				fprintf(stderr, "netlat: the agent went away: %s\n", strerror(-r));
				return r;
			}
			now = now_ns();
			while ((r = wire_reader_next(&h->rd, &f)) > 0)
				if ((r = take_frame(h, &f, now)))
					return r;
			if (r < 0) {
				fprintf(stderr, "netlat: bad frame from the agent: %s\n", h->rd.error);
				return r;
			}
			if (h->t.have_exit)
				pfd[0].events = 0; /* only datagrams from now on */
		}
	}
}

static void print_results(const struct host *h, int rcvbuf)
{
	const struct tally *t = &h->t;
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("pid=%ld\nexit_status=%ld\n", t->pid, t->exit_status);
	printf("entries=%llu\nexits=%llu\nother_events=%llu\nlost_events=%llu\nstatus_lost=%llu\n",
	       (unsigned long long)t->entries, (unsigned long long)t->exits, (unsigned long long)t->other_events,
	       (unsigned long long)t->lost_events, (unsigned long long)t->status_lost);
	printf("have_end=%d\nend_events=%llu\nend_lost=%llu\n", t->have_end, (unsigned long long)t->end_events,
	       (unsigned long long)t->end_lost);
	printf("tcp_bytes=%llu\ntcp_chunks=%llu\ntcp_events=%llu\n", (unsigned long long)t->tcp_bytes,
	       (unsigned long long)t->tcp_chunks, (unsigned long long)t->tcp_events);
	printf("meta_bytes=%llu\nevents_bytes=%llu\nclock_bytes=%llu\nend_bytes=%llu\n",
	       (unsigned long long)t->chunk_bytes[LP_CHUNK_META], (unsigned long long)t->chunk_bytes[LP_CHUNK_EVENTS],
	       (unsigned long long)t->chunk_bytes[LP_CHUNK_CLOCK], (unsigned long long)t->chunk_bytes[LP_CHUNK_END]);
	if (h->udp_fd >= 0) {
		printf("udp_rcvbuf=%d\nudp_bytes=%llu\nudp_datagrams=%llu\nudp_bad=%llu\nudp_late=%llu\n", rcvbuf,
		       (unsigned long long)t->udp_bytes, (unsigned long long)t->udp_datagrams,
		       (unsigned long long)t->udp_bad, (unsigned long long)t->udp_late);
		printf("udp_events=%llu\nhave_udp_status=%d\nudp_sent_datagrams=%llu\nudp_sent_events=%llu\n",
		       (unsigned long long)t->udp_events, t->have_udp_status, (unsigned long long)t->udp_sent_datagrams,
		       (unsigned long long)t->udp_sent_events);
	}
	printf("start_ns=%llu\nsession_ns=%llu\nexit_ns=%llu\n", (unsigned long long)t->start_ns,
	       (unsigned long long)t->session_ns, (unsigned long long)t->exit_ns);
	printf("first_event_ns=%llu\nlast_event_ns=%llu\nfirst_arrival_ns=%llu\nlast_arrival_ns=%llu\n",
	       (unsigned long long)t->first_event_ns, (unsigned long long)t->last_event_ns,
	       (unsigned long long)t->first_arrival_ns, (unsigned long long)t->last_arrival_ns);
	printf("lat_n=%llu\nlat_negative=%llu\nlat_p50_ns=%.0f\nlat_p90_ns=%.0f\nlat_p99_ns=%.0f\nlat_max_ns=%llu\n",
	       (unsigned long long)t->lat.n, (unsigned long long)t->lat.negative, hist_quantile(&t->lat, 0.50),
	       hist_quantile(&t->lat, 0.90), hist_quantile(&t->lat, 0.99), (unsigned long long)t->lat.max);
	printf("host_cpu_ns=%llu\n",
	       (unsigned long long)((uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * NS_PER_S +
	                            (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u));
}

static const char usage[] = "usage: netlat [options] -- PROGRAM [ARGS...]\n"
                            "\n"
                            "Starts PROGRAM through a layerprofd agent over TCP, takes its whole\n"
                            "stream and prints counts, bytes and latencies as key=value lines.\n"
                            "\n"
                            "  -c, --connect ADDR:PORT  the agent (default 127.0.0.1:7878)\n"
                            "  -T, --token-file FILE    the agent's token (required)\n"
                            "  -u, --udp                ask for EVENTS chunks by UDP\n"
                            "  -r, --rcvbuf BYTES       the UDP socket's receive buffer (default 16 MiB;\n"
                            "                           0: the system's default)\n"
                            "  -s, --save FILE          write the chunks received by TCP as a trace file\n"
                            "                           (the data file of a trace directory; not with --udp)\n"
                            "  -t, --timeout S          give up after S seconds (default 120)\n"
                            "  -f, --flush-ms MS        ask the agent to flush partial chunks every MS ms\n"
                            "                           (CONTROL flush_ms; default: the agent's 100 ms)\n"
                            "  -h, --help               this text\n";

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "udp", no_argument, NULL, 'u' },
		{ "rcvbuf", required_argument, NULL, 'r' },
		{ "save", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "flush-ms", required_argument, NULL, 'f' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long rcvbuf;
	int c;

	o->connect = "127.0.0.1:7878";
	o->timeout_s = 120;
	o->rcvbuf = UDP_RCVBUF_DEFAULT;
	while ((c = getopt_long(argc, argv, "+c:T:ur:s:t:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->connect = optarg;
			break;
		case 'T':
			o->token_file = optarg;
			break;
		case 'u':
			o->udp = true;
			break;
		case 'r':
			errno = 0;
			rcvbuf = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || rcvbuf < 0 || rcvbuf > UDP_RCVBUF_MAX) {
				fprintf(stderr, "netlat: invalid --rcvbuf '%s': expected 0 to %d bytes\n", optarg,
				        UDP_RCVBUF_MAX);
				return -EINVAL;
			}
			o->rcvbuf = (int)rcvbuf;
			break;
		case 's':
			o->save = optarg;
			break;
		case 't':
			o->timeout_s = strtod(optarg, &end);
			if (*end || !(o->timeout_s > 0)) {
				fprintf(stderr, "netlat: invalid --timeout '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			o->flush_ms = strtol(optarg, &end, 10);
			if (*end || end == optarg || o->flush_ms < 5 || o->flush_ms > 1000) {
				fprintf(stderr, "netlat: invalid --flush-ms '%s': expected 5 to 1000\n", optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return -EINVAL;
		}
	}
	if (optind >= argc || (o->udp && o->save) || !o->token_file) {
		fputs(usage, stderr);
		return -EINVAL;
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	return 0;
}

int main(int argc, char **argv)
{
	static struct host h; /* the histogram is large: not on the stack */
	struct options o = { 0 };
	uint8_t hdr[LP_FILE_HEADER_SIZE];
	char token[AUTH_TOKEN_MAX + 2];
	int r, rcvbuf = 0, token_len;
	bool warn;

	if (parse_options(argc, argv, &o))
		return 2;
	token_len = auth_token_load(o.token_file, token, sizeof(token), &warn);
	if (token_len < 0) {
		fprintf(stderr, "netlat: cannot use token file '%s': %s\n", o.token_file, strerror(-token_len));
		return 1;
	}
	h.fd = h.udp_fd = -1;
	h.t.exit_status = -1;
	if ((r = wire_reader_init(&h.rd))) {
		fprintf(stderr, "netlat: out of memory\n");
		goto out;
	}
	if (o.save) {
		h.save = fopen(o.save, "wb");
		trace_header_put(hdr);
		if (!h.save || fwrite(hdr, 1, sizeof(hdr), h.save) != sizeof(hdr)) {
			fprintf(stderr, "netlat: cannot write trace '%s': %s\n", o.save, strerror(errno));
			r = -EIO;
			goto out;
		}
	}
	h.fd = open_tcp(o.connect);
	if (h.fd < 0) {
		r = h.fd;
		goto out;
	}
	h.last_tx_ns = now_ns();
	r = handshake(&h, token, (size_t)token_len);
	if (r)
		goto out;
	if (o.udp) {
		h.udp_fd = open_udp(h.fd, o.rcvbuf, &rcvbuf);
		if (h.udp_fd < 0) {
			r = h.udp_fd;
			fprintf(stderr, "netlat: cannot open a UDP socket: %s\n", strerror(-r));
			goto out;
		}
		r = ask_udp(&h, udp_port(h.udp_fd));
		if (r)
			goto out;
	}
	if (o.flush_ms) {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "flush_ms=%ld\n", o.flush_ms);

		r = host_send(&h, LP_FRAME_CONTROL, msg, (size_t)n);
		if (r)
			goto out;
	}
	r = send_start(&h, o.argv, o.argc);
	if (!r)
		r = stream(&h, o.timeout_s);
	if (r)
		goto out;
	host_send(&h, LP_FRAME_BYE, NULL, 0);
	print_results(&h, rcvbuf);
out:
	if (h.save && fclose(h.save) && !r) {
		fprintf(stderr, "netlat: cannot write trace '%s': %s\n", o.save, strerror(errno));
		r = -EIO;
	}
	if (h.fd >= 0)
		close(h.fd);
	if (h.udp_fd >= 0)
		close(h.udp_fd);
	wire_reader_release(&h.rd);
	return r ? 1 : 0;
}
