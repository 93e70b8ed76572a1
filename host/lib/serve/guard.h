/* The connections of `layerprof serve` that have not shown they may be
 * served (docs/serve.md, "Guards"): a peer's connection is pending from its
 * accept until its first request's headers passed the guards (the token, or
 * on loopback without one the Host check).  Pending connections get places
 * of their own, a few per address, and an absolute deadline:
 * libmicrohttpd's timeout is one of idleness, which a byte now and then
 * defeats, and its per-address bound counts served and unserved alike.
 *
 * Thread-safe: libmicrohttpd's threads call open, authorised and close; one
 * thread of the guard's own cuts the connections past their deadline. */
#ifndef LP_SERVE_GUARD_H
#define LP_SERVE_GUARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define SERVEGUARD_PENDING_MAX 32u    /* pending connections, at most */
#define SERVEGUARD_PENDING_PER_IP 8u  /* of them from one address */
#define SERVEGUARD_DEADLINE_MS 10000u /* from the accept to the first request's headers */
#define SERVEGUARD_KEY_MAX 48u        /* an address as text, with room */

/* One connection; owned by the guard from serveguard_open to
 * serveguard_close. */
struct serveguard_conn {
	struct serveguard_conn *prev, *next;
	int fd;                       /* a dup of the connection's socket: shutdown() on it cuts the connection */
	bool pending;                 /* not authorised yet (and not cut) */
	uint64_t since_ms;            /* the accept, CLOCK_MONOTONIC */
	char key[SERVEGUARD_KEY_MAX]; /* the peer's address, without the port */
};

struct serveguard {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* the watch thread's sleep: a new deadline or the stop */
	pthread_t thread;
	bool running, stopping;
	struct serveguard_conn *conns; /* every open connection, newest first */
	unsigned pending;
	uint64_t cut_deadline, cut_pushed; /* connections cut, for the log */
};

/* Starts the watch thread.  Returns 0 or -errno. */
int serveguard_start(struct serveguard *g);
/* Stops the thread; call after every connection was closed (the server
 * stopped).  Accepts a guard that never started. */
void serveguard_stop(struct serveguard *g);

/* A connection was accepted on fd from sa: makes it pending, cutting the
 * oldest pending one of its address when that address has
 * SERVEGUARD_PENDING_PER_IP, or the oldest of all when
 * SERVEGUARD_PENDING_MAX are pending.  Returns the connection's entry (for
 * serveguard_authorised and serveguard_close), or NULL when out of memory
 * or descriptors (the connection is then not watched). */
struct serveguard_conn *serveguard_open(struct serveguard *g, int fd, const struct sockaddr *sa);
/* The connection's request passed the guards: no longer pending, no
 * deadline.  Accepts NULL. */
void serveguard_authorised(struct serveguard *g, struct serveguard_conn *c);
/* The connection is closed: frees c.  Accepts NULL. */
void serveguard_close(struct serveguard *g, struct serveguard_conn *c);

#endif
