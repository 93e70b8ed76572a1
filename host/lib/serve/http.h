/* The HTTP side of `layerprof serve` (libmicrohttpd): the page's assets,
 * compiled into the binary, and the JSON API, nothing else.  Guards: a
 * token (header, or a cookie set by /auth?token=) on any address but
 * loopback, the Host header on loopback (no DNS rebinding), exact paths
 * only (no file is ever opened for a request), bounded URLs, headers,
 * bodies and connections, connections not yet authorised bounded per
 * address and in time (serve/guard.h) and closed after a refusal, and POST
 * only with a header a cross-site page cannot send.  One thread per connection; every use of the model is
 * under h->lock. */
#ifndef LP_SERVE_HTTP_H
#define LP_SERVE_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host/lib/serve/counters.h"
#include "host/lib/serve/coverage.h"
#include "host/lib/serve/flow.h"
#include "host/lib/serve/guard.h"
#include "host/lib/serve/model.h"
#include "host/lib/serve/synctab.h"

#define SERVEHTTP_DEFAULT_BIND "127.0.0.1"
#define SERVEHTTP_DEFAULT_PORT 8642
#define SERVEHTTP_CONNECTIONS_MAX 64u
#define SERVEHTTP_PER_IP_MAX 32u
#define SERVEHTTP_MEMORY_MAX (64u << 10) /* request line and headers, per connection */
#define SERVEHTTP_URL_MAX 4096u          /* path and query */
#define SERVEHTTP_BODY_MAX (16u << 10)   /* a POST body */
#define SERVEHTTP_TIMEOUT_S 120u         /* an idle connection */
#define SERVEHTTP_HEARTBEAT_S 10u        /* a comment on an idle event stream */
#define SERVEHTTP_EVENT_MAX 4096u        /* one pushed update */
#define SERVEHTTP_TOKEN_HEADER "X-Layerprof-Token"
#define SERVEHTTP_COOKIE "lp_token"
#define SERVEHTTP_POST_HEADER "X-Layerprof" /* a custom header: forces a CORS preflight we never allow */

struct serve_query;

/* What a live session adds to the API; NULL members are absent. */
struct serve_control {
	void *ctx;
	/* GET /api/live: the session's state as a JSON object (lock held) */
	void (*state)(void *ctx, FILE *out);
	/* POST /api/live/<cmd> with its body (NUL-terminated, len bytes):
	 * writes a JSON answer, returns the HTTP status (lock held) */
	int (*command)(void *ctx, const char *cmd, const char *body, size_t len, FILE *out);
	/* GET /api/heap, /api/heap/growth (what: "heap", "heap/growth"):
	 * writes the answer, returns the HTTP status (lock held) */
	int (*heap)(void *ctx, const char *what, const struct serve_query *q, FILE *out);
	/* GET /api/export: names the trace directory that keeps the session
	 * in dir (size bytes) and holds it still until export_resume; 0, or
	 * -errno with the reason in dir (lock held) */
	int (*export_hold)(void *ctx, char *dir, size_t size);
	/* the export is read: lets the trace grow again; false when it
	 * changed meanwhile (lock held) */
	bool (*export_resume)(void *ctx);
	/* the heap snapshot (docs/snapshot.md) written to f, its file name to
	 * name (size bytes); 0, or -errno with the reason in name: -ENOENT no
	 * heap state (lock held) */
	int (*snapshot)(void *ctx, FILE *f, char *name, size_t size);
};

struct servehttp {
	struct servemodel *m;
	const struct serve_control *control; /* NULL: a trace file */
	pthread_mutex_t lock;                /* around every use of m and control */
	char *token;                         /* owned; NULL: none asked */
	size_t token_len;
	bool loopback; /* bound to a loopback address: the Host header is checked */
	char url[320]; /* the page's address, for people */
	unsigned port; /* the one bound */
	int listen_fd;
	void *daemon; /* struct MHD_Daemon */
	/* pushed updates: the latest, its number, and who waits for it */
	pthread_mutex_t ev_lock;
	pthread_cond_t ev_cond;
	char event[SERVEHTTP_EVENT_MAX];
	uint64_t ev_gen;
	bool stopping;
	uint64_t requests, refused;  /* counts, for the log */
	struct serveguard guard;     /* the connections not yet authorised */
	pthread_mutex_t export_lock; /* one export (GET /api/export) or flow (GET /api/flow) at a time */
	struct serveflow flow;       /* the flows answered (under export_lock) */
	struct servecov cov;         /* GET /api/coverage's answer, made once (its own lock) */
	struct servectr ctr;         /* GET /api/counters' passes, made once (their own lock) */
	struct servesync sync;       /* GET /api/sync's answer, made once (its own lock) */
};

/* Listens on bind_addr:port (port 0: any free one) and starts serving m.
 * token (copied; NULL for none) is required of every request when given;
 * binding to an address other than loopback without one is refused
 * (-EPERM).  Returns 0, or -errno with err saying why (-EINVAL: bind_addr
 * is not a numeric address). */
int servehttp_start(struct servehttp *h, struct servemodel *m, const struct serve_control *control,
                    const char *bind_addr, unsigned port, const char *token, char *err, size_t errlen);
/* Stops serving, closes every connection and frees what start made. */
void servehttp_stop(struct servehttp *h);

/* Pushes a new update (a JSON object, one line) to every event stream. */
void servehttp_notify(struct servehttp *h, const char *json);

/* True for a numeric loopback address (127.0.0.0/8, ::1). */
bool servehttp_is_loopback(const char *addr);

#endif
