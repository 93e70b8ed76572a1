/* The host end of a live connection to the agent layerprofd
 * (docs/protocol.md): connecting by host:port over IPv4 or IPv6 or to a
 * UNIX socket, the
 * HELLO/AUTH/WELCOME handshake, and frames in and out through the wire
 * codec.  Knows nothing of traces: the caller reads the frames.
 *
 * Not thread-safe: one thread owns a client. */
#ifndef LP_NETCLIENT_H
#define LP_NETCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "host/lib/util/error.h"

#define NETCLIENT_DEFAULT_PORT "7878"
/* How long connecting and each step of the handshake may take. */
#define NETCLIENT_TIMEOUT_MS 5000
/* The longest WELCOME kept (its session list). */
#define NETCLIENT_WELCOME_MAX 65536u

struct netclient {
	int fd;          /* -1 when not connected */
	char peer[300];  /* "host:port" as given: names the agent in messages */
	uint32_t tx_seq; /* frames sent so far */
	struct wire_reader rd;
	char agent[128]; /* from HELLO: "layerprofd <version>" */
	char arch[32];   /* from HELLO */
	char caps[256];  /* from HELLO: comma-separated capabilities */
	char *welcome;   /* owned: the WELCOME payload, NUL-terminated */
	size_t welcome_len;
	char error[512]; /* after a failed call: what went wrong, for people */
};

/* Splits "host:port", "[v6addr]:port", "host" or "[v6addr]" (the port then
 * defaults to NETCLIENT_DEFAULT_PORT) into host[hsize] and port[psize].
 * Returns 0 or -EINVAL (empty host, bad brackets, port not 1..65535, too
 * long). */
int netclient_split_address(const char *addr, char *host, size_t hsize, char *port, size_t psize);

/* 0 when addr is an agent address a client can connect to: HOST:PORT,
 * [V6ADDR]:PORT, HOST or [V6ADDR] (see netclient_split_address), or
 * "unix:PATH" (a UNIX socket; PATH at most LP_WIRE_UNIX_PATH_MAX bytes);
 * -EINVAL otherwise. */
int netclient_check_address(const char *addr);
/* Writes "unix:" and the default socket of an agent run by this user
 * (LP_WIRE_UNIX_DIR_FMT, common/wire.h) into out[size].  Returns 0 or
 * -ENAMETOOLONG. */
int netclient_default_address(char *out, size_t size);

/* A client with no connection; netclient_release frees it. */
void netclient_init(struct netclient *c);
/* Closes the connection and frees the buffers.  Accepts a client that
 * never connected. */
void netclient_release(struct netclient *c);

/* Connects to addr (see netclient_check_address): over TCP trying every
 * address getaddrinfo gives, each within NETCLIENT_TIMEOUT_MS; to a UNIX
 * socket only when the kernel says it is held by this user or root
 * (SO_PEERCRED; else -EPERM).  Returns 0, or -errno with c->error set. */
int netclient_connect(struct netclient *c, const char *addr);

/* The handshake: reads HELLO, answers AUTH with the MAC of the nonce keyed
 * with token[token_len] (token NULL: an empty mac) and waits for WELCOME.
 * Returns 0; -EACCES when the agent answered ERROR (c->error holds its
 * reason as sent, cut to printable characters); -EPROTO for anything
 * else unexpected, -ETIMEDOUT, -ECONNRESET when the agent closed, or
 * -errno; c->error says what. */
int netclient_handshake(struct netclient *c, const char *token, size_t token_len);

/* Connects to addr and passes the handshake, with the token in the first
 * line of token_file (NULL: none), as every host command that speaks to
 * an agent does.  A token file readable by other users is warned about
 * through warn (may be NULL).  Returns 0, or -errno with c->error set
 * (a whole line for people): -EINVAL when addr is not an agent address;
 * -EACCES when the token file cannot be used or the agent refused ("agent
 * refused the connection: <its reason>"); other codes when connecting
 * failed. */
int netclient_open(struct netclient *c, const char *addr, const char *token_file, const struct lp_warner *warn);

/* True when HELLO listed capability cap. */
bool netclient_has_cap(const struct netclient *c, const char *cap);

/* Sends one frame (blocking, at most NETCLIENT_TIMEOUT_MS while the socket
 * is full).  Returns 0 or -errno with c->error set. */
int netclient_send(struct netclient *c, uint8_t type, const void *payload, size_t len);

/* Reads what the socket holds now without blocking.  Returns the number of
 * bytes read (> 0), 0 when none were waiting, -ECONNRESET when the agent
 * closed the connection, or -errno; c->error set on failure. */
int netclient_receive(struct netclient *c);

/* Takes the next whole frame out of what was received.  Returns 1 with *f
 * set (its payload stays valid until the next netclient_next,
 * netclient_receive or netclient_wait), 0 when more bytes are needed, or
 * -EBADMSG with c->error set (the stream is broken: close it). */
int netclient_next(struct netclient *c, struct wire_frame *f);

/* Blocks up to timeout_ms for the next frame.  Returns 1 with *f set, or
 * -ETIMEDOUT, -ECONNRESET, -EBADMSG, -errno with c->error set. */
int netclient_wait(struct netclient *c, struct wire_frame *f, int timeout_ms);

#endif
