/* The HTTP side of `layerprof serve` (see serve/http.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "host/lib/serve/api.h"
#include "host/lib/serve/assets.h"
#include "host/lib/serve/export.h"
#include "host/lib/serve/flow.h"
#include "host/lib/serve/http.h"
#include "host/lib/util/error.h"

#define LISTEN_BACKLOG 64
#define HTTP_SEE_OTHER 303

/* What one request has gathered over the handler's calls. */
struct request {
	bool started;
	bool too_big; /* the body went over SERVEHTTP_BODY_MAX */
	char body[SERVEHTTP_BODY_MAX + 1];
	size_t len;
};

/* One event stream (GET /api/events). */
struct stream {
	struct servehttp *h;
	uint64_t gen; /* the last update sent */
	char out[SERVEHTTP_EVENT_MAX + 64];
	size_t len, pos;
};

static const char security_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                   "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

bool servehttp_is_loopback(const char *addr)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, addr, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, addr, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return false;
}

static void add_headers(struct MHD_Response *rs, const char *type)
{
	MHD_add_response_header(rs, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(rs, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(rs, "X-Frame-Options", "DENY");
	MHD_add_response_header(rs, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(rs, "Content-Security-Policy", security_csp);
	MHD_add_response_header(rs, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
}

/* Sends len bytes of buf (taken: freed by the response). */
static enum MHD_Result send_owned(struct MHD_Connection *c, unsigned status, const char *type, char *buf, size_t len)
{
	struct MHD_Response *rs = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result r;

	if (!rs) {
		free(buf);
		return MHD_NO;
	}
	add_headers(rs, type);
	r = MHD_queue_response(c, status, rs);
	MHD_destroy_response(rs);
	return r;
}

/* An error answer; with close, the connection ends after it (a peer the
 * guards refused keeps nothing open). */
static enum MHD_Result send_error_as(struct servehttp *h, struct MHD_Connection *c, unsigned status, const char *msg,
                                     bool close)
{
	struct MHD_Response *rs;
	enum MHD_Result r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	__atomic_add_fetch(&h->refused, 1, __ATOMIC_RELAXED);
	if (!f)
		return MHD_NO;
	servequery_error(f, (int)status, msg);
	fclose(f);
	rs = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!rs) {
		free(buf);
		return MHD_NO;
	}
	add_headers(rs, "application/json");
	if (close)
		MHD_add_response_header(rs, MHD_HTTP_HEADER_CONNECTION, "close");
	r = MHD_queue_response(c, status, rs);
	MHD_destroy_response(rs);
	return r;
}

static enum MHD_Result send_error(struct servehttp *h, struct MHD_Connection *c, unsigned status, const char *msg)
{
	return send_error_as(h, c, status, msg, false);
}

/* A request the guards refuse before it is authorised: closed after. */
static enum MHD_Result refuse(struct servehttp *h, struct MHD_Connection *c, unsigned status, const char *msg)
{
	return send_error_as(h, c, status, msg, true);
}

/* The guard's entry of the connection (serve/guard.h), or NULL. */
static struct serveguard_conn *guard_conn(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* ------------------------------------------------------------ the guards */

static bool token_matches(const struct servehttp *h, const char *given)
{
	size_t n;

	if (!given)
		return false;
	n = strlen(given);
	/* the length is no secret worth a timing channel: compare in full */
	return n == h->token_len && auth_equal(given, h->token, n);
}

/* A request carries the token: our header, a bearer token or the cookie. */
static bool authorised(const struct servehttp *h, struct MHD_Connection *c)
{
	const char *auth;

	if (!h->token)
		return true;
	if (token_matches(h, MHD_lookup_connection_value(c, MHD_HEADER_KIND, SERVEHTTP_TOKEN_HEADER)))
		return true;
	auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (auth && !strncmp(auth, "Bearer ", 7) && token_matches(h, auth + 7))
		return true;
	return token_matches(h, MHD_lookup_connection_value(c, MHD_COOKIE_KIND, SERVEHTTP_COOKIE));
}

/* On loopback the page must have been asked for by a loopback name: a
 * page elsewhere that rebinds its own name to 127.0.0.1 sends its own. */
static bool host_allowed(const struct servehttp *h, struct MHD_Connection *c)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *colon;
	char name[256];
	size_t n;

	if (!h->loopback || h->token)
		return true;
	if (!host)
		return false;
	colon = strrchr(host, ':');
	if (colon && strchr(colon, ']'))
		colon = NULL; /* "[::1]" without a port */
	n = colon ? (size_t)(colon - host) : strlen(host);
	if (n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (colon && (unsigned)atoi(colon + 1) != h->port)
		return false;
	if (!strcmp(name, "localhost"))
		return true;
	if (name[0] == '[' && n > 2 && name[n - 1] == ']') {
		name[n - 1] = '\0';
		return servehttp_is_loopback(name + 1);
	}
	return servehttp_is_loopback(name);
}

static enum MHD_Result add_length(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	size_t *n = cls;

	(void)kind;
	*n += strlen(key) + (value ? strlen(value) : 0) + 2;
	return MHD_YES;
}

/* The length of the path and query, as decoded. */
static size_t url_length(struct MHD_Connection *c, const char *url)
{
	size_t n = strlen(url);

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_length, &n);
	return n;
}

/* Paths are matched exactly against the assets and the API, so nothing
 * can reach a file; these are refused before that, to say so. */
static bool path_suspect(const char *url)
{
	return url[0] != '/' || strstr(url, "..") || strchr(url, '\\') || strstr(url, "//") || strchr(url, '%');
}

/* ------------------------------------------------------------ answers */

struct query_ctx {
	struct MHD_Connection *c;
};

static const char *query_get(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(((struct query_ctx *)ctx)->c, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result answer_api(struct servehttp *h, struct MHD_Connection *c, const char *what)
{
	struct query_ctx qc = { c };
	struct serve_query q = { query_get, &qc };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int status;

	if (!f)
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	pthread_mutex_lock(&h->lock);
	if (!strcmp(what, "live") && h->control && h->control->state) {
		h->control->state(h->control->ctx, f);
		status = MHD_HTTP_OK;
	} else if ((!strcmp(what, "heap") || !strcmp(what, "heap/growth")) && h->control && h->control->heap) {
		status = h->control->heap(h->control->ctx, what, &q, f);
	} else {
		status = serveapi_get(h->m, what, &q, f);
	}
	pthread_mutex_unlock(&h->lock);
	if (fclose(f)) {
		free(buf);
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	return send_owned(c, (unsigned)status, "application/json", buf, len);
}

static enum MHD_Result answer_command(struct servehttp *h, struct MHD_Connection *c, const char *cmd,
                                      struct request *rq)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int status;

	if (!h->control || !h->control->command)
		return send_error(h, c, MHD_HTTP_NOT_FOUND, "not a live session");
	f = open_memstream(&buf, &len);
	if (!f)
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	rq->body[rq->len] = '\0';
	pthread_mutex_lock(&h->lock);
	status = h->control->command(h->control->ctx, cmd, rq->body, rq->len, f);
	pthread_mutex_unlock(&h->lock);
	if (fclose(f)) {
		free(buf);
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	return send_owned(c, (unsigned)status, "application/json", buf, len);
}

static enum MHD_Result answer_asset(struct servehttp *h, struct MHD_Connection *c, const char *url)
{
	const struct serve_asset *a = serve_asset_find(url);
	struct MHD_Response *rs;
	enum MHD_Result r;

	if (!a)
		return send_error(h, c, MHD_HTTP_NOT_FOUND, "not found");
	rs = MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (!rs)
		return MHD_NO;
	add_headers(rs, a->type);
	r = MHD_queue_response(c, MHD_HTTP_OK, rs);
	MHD_destroy_response(rs);
	return r;
}

/* Sends the file f holds (written, flushed) as an attachment named name;
 * closes f. */
static enum MHD_Result send_attachment(struct servehttp *h, struct MHD_Connection *c, FILE *f, const char *type,
                                       const char *name)
{
	char disp[300];
	struct MHD_Response *rs;
	enum MHD_Result ret;
	struct stat st;
	int fd = dup(fileno(f));

	fclose(f);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the export back");
	}
	rs = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (!rs) {
		close(fd);
		return MHD_NO;
	}
	add_headers(rs, type);
	snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", name);
	MHD_add_response_header(rs, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	/* a download is a one-off: the browser's download manager would
	 * otherwise keep the connection, and a few dozen downloads would take
	 * every connection one address is allowed */
	MHD_add_response_header(rs, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(c, MHD_HTTP_OK, rs);
	MHD_destroy_response(rs);
	return ret;
}

/* A live session's heap snapshot (GET /api/export?format=snapshot or
 * POST /api/live/snapshot): written under the lock to a temporary file. */
static enum MHD_Result answer_snapshot(struct servehttp *h, struct MHD_Connection *c)
{
	const struct serveexport_format *fmt = serveexport_find("snapshot");
	char name[300];
	FILE *f;
	int r;

	if (!h->control || !h->control->snapshot)
		return send_error(h, c, MHD_HTTP_NOT_FOUND, "not a live session");
	f = tmpfile();
	if (!f)
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot make a temporary file");
	pthread_mutex_lock(&h->lock);
	r = h->control->snapshot(h->control->ctx, f, name, sizeof(name));
	pthread_mutex_unlock(&h->lock);
	if (r) {
		fclose(f);
		return send_error(h, c, r == -ENOENT ? MHD_HTTP_NOT_FOUND : MHD_HTTP_INTERNAL_SERVER_ERROR, name);
	}
	return send_attachment(h, c, f, fmt->type, name);
}

/* GET /api/export?format=F: the export written to a temporary file (so
 * that memory stays bounded whatever the trace's size), then sent from it
 * as an attachment.  The trace is read again by the export's own walk:
 * the model is not used, and the lock is not held meanwhile; one export
 * runs at a time.  A live session's trace directory is held still
 * meanwhile (its chunks wait in memory), so that the export reads whole
 * chunks up to one moment. */
static enum MHD_Result answer_export(struct servehttp *h, struct MHD_Connection *c)
{
	const struct serveexport_format *fmt =
	    serveexport_find(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format"));
	char err[800], file[200], live_dir[4096];
	const char *dir;
	bool live, still = true;
	FILE *f;
	int r;

	if (!fmt)
		return send_error(
		    h, c, MHD_HTTP_BAD_REQUEST,
		    "format: html, xml, json, text, syscalls-json, syscalls-text, memory-html, memory-xml, "
		    "memory-json, memory-text, chrome, folded, raw or snapshot");
	pthread_mutex_lock(&h->lock);
	dir = h->m->dir;
	live = h->m->live;
	pthread_mutex_unlock(&h->lock);
	if (live && !strcmp(fmt->name, "snapshot"))
		return answer_snapshot(h, c);
	if (live && !(h->control && h->control->export_hold))
		return send_error(h, c, MHD_HTTP_NOT_FOUND, "this live session keeps no trace to export");
	if (!live && !dir)
		return send_error(h, c, MHD_HTTP_NOT_FOUND, "no trace to export");
	if (pthread_mutex_trylock(&h->export_lock))
		return send_error(h, c, MHD_HTTP_SERVICE_UNAVAILABLE, "another export is being written: try again");
	f = tmpfile();
	if (!f) {
		pthread_mutex_unlock(&h->export_lock);
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot make a temporary file");
	}
	if (live) {
		pthread_mutex_lock(&h->lock);
		r = h->control->export_hold(h->control->ctx, live_dir, sizeof(live_dir));
		pthread_mutex_unlock(&h->lock);
		if (r) {
			fclose(f);
			pthread_mutex_unlock(&h->export_lock);
			return send_error(h, c, MHD_HTTP_NOT_FOUND, live_dir);
		}
		dir = live_dir;
	}
	r = serveexport_write(dir, fmt, f, err, sizeof(err));
	if (live) {
		pthread_mutex_lock(&h->lock);
		still = h->control->export_resume(h->control->ctx);
		pthread_mutex_unlock(&h->lock);
	}
	if (!r && fflush(f)) {
		snprintf(err, sizeof(err), "cannot write the export: %s", strerror(errno));
		r = -EIO;
	}
	pthread_mutex_unlock(&h->export_lock);
	if (!r && !still) {
		snprintf(err, sizeof(err), "the live session changed the trace while it was exported: try again");
		r = -EAGAIN;
	}
	if (r) {
		fclose(f);
		return send_error(h, c,
		                  r == -EAGAIN                ? MHD_HTTP_SERVICE_UNAVAILABLE
		                  : r == -ENOMEM || r == -EIO ? MHD_HTTP_INTERNAL_SERVER_ERROR
		                                              : MHD_HTTP_NOT_FOUND,
		                  err);
	}
	return send_attachment(h, c, f, fmt->type, serveexport_filename(dir, fmt, file, sizeof(file)));
}

/* GET /api/flow: kflow reads the trace itself (twice), so this runs
 * outside the model's lock, as an export does, and one at a time with the
 * exports (a live session's trace directory is held still meanwhile). */
static enum MHD_Result answer_flow(struct servehttp *h, struct MHD_Connection *c)
{
	struct query_ctx qc = { c };
	struct serve_query q = { query_get, &qc };
	char live_dir[4096], *buf = NULL;
	const char *dir;
	size_t len = 0;
	bool live;
	FILE *f;
	int status, r;

	pthread_mutex_lock(&h->lock);
	dir = h->m->dir;
	live = h->m->live;
	pthread_mutex_unlock(&h->lock);
	if (live && !(h->control && h->control->export_hold))
		return send_error(h, c, MHD_HTTP_NOT_FOUND, "this live session keeps no trace to read");
	if (pthread_mutex_trylock(&h->export_lock))
		return send_error(h, c, MHD_HTTP_SERVICE_UNAVAILABLE,
		                  "the trace is being read for an export or a flow: "
		                  "try again");
	if (live) {
		pthread_mutex_lock(&h->lock);
		r = h->control->export_hold(h->control->ctx, live_dir, sizeof(live_dir));
		pthread_mutex_unlock(&h->lock);
		if (r) {
			pthread_mutex_unlock(&h->export_lock);
			return send_error(h, c, MHD_HTTP_NOT_FOUND, live_dir);
		}
		dir = live_dir;
	}
	f = open_memstream(&buf, &len);
	status = f ? serveflow_answer(&h->flow, dir, !live, &q, f) : MHD_HTTP_INTERNAL_SERVER_ERROR;
	if (live) {
		pthread_mutex_lock(&h->lock);
		h->control->export_resume(h->control->ctx);
		pthread_mutex_unlock(&h->lock);
	}
	pthread_mutex_unlock(&h->export_lock);
	if (!f || fclose(f)) {
		free(buf);
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	return send_owned(c, (unsigned)status, "application/json", buf, len);
}

/* The tabs whose answer is a pass of its own over the saved trace. */
enum kept_tab { KEPT_COVERAGE, KEPT_COUNTERS, KEPT_SYNC };

/* GET /api/coverage, /api/counters, /api/sync: each reads the trace (and
 * coverage its binaries) itself, so this runs outside the model's lock;
 * the answer is made once and kept (serve/coverage.h, counters.h,
 * synctab.h).  A live session has no saved trace to read. */
static enum MHD_Result answer_kept(struct servehttp *h, struct MHD_Connection *c, enum kept_tab tab)
{
	struct query_ctx qc = { c };
	struct serve_query q = { query_get, &qc };
	char *buf = NULL;
	const char *dir;
	size_t len = 0;
	FILE *f;
	int status;

	pthread_mutex_lock(&h->lock);
	dir = h->m->live ? NULL : h->m->dir;
	pthread_mutex_unlock(&h->lock);
	f = open_memstream(&buf, &len);
	if (!f)
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	switch (tab) {
	case KEPT_COVERAGE:
		status = servecov_answer(&h->cov, dir, f);
		break;
	case KEPT_COUNTERS:
		status = servectr_answer(&h->ctr, dir, &q, f);
		break;
	default:
		status = servesync_answer(&h->sync, dir, f);
		break;
	}
	if (fclose(f)) {
		free(buf);
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	return send_owned(c, (unsigned)status, "application/json", buf, len);
}

/* /auth?token=T: sets the cookie and goes to the page. */
static enum MHD_Result answer_auth(struct servehttp *h, struct MHD_Connection *c)
{
	const char *given = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	struct MHD_Response *rs;
	char cookie[AUTH_TOKEN_MAX + 128];
	enum MHD_Result r;

	if (!h->token) {
		serveguard_authorised(&h->guard, guard_conn(c));
		return answer_asset(h, c, "/");
	}
	if (!token_matches(h, given))
		return refuse(h, c, MHD_HTTP_FORBIDDEN, "wrong token");
	serveguard_authorised(&h->guard, guard_conn(c));
	snprintf(cookie, sizeof(cookie), "%s=%s; Path=/; HttpOnly; SameSite=Strict", SERVEHTTP_COOKIE, h->token);
	rs = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!rs)
		return MHD_NO;
	add_headers(rs, "text/plain");
	MHD_add_response_header(rs, MHD_HTTP_HEADER_SET_COOKIE, cookie);
	MHD_add_response_header(rs, MHD_HTTP_HEADER_LOCATION, "/");
	r = MHD_queue_response(c, HTTP_SEE_OTHER, rs);
	MHD_destroy_response(rs);
	explicit_bzero(cookie, sizeof(cookie));
	return r;
}

/* ------------------------------------------------------------ event streams */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	struct servehttp *h = s->h;
	size_t n;

	(void)pos;
	if (s->pos == s->len) {
		struct timespec until;
		int r = 0;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += SERVEHTTP_HEARTBEAT_S;
		pthread_mutex_lock(&h->ev_lock);
		while (!h->stopping && h->ev_gen == s->gen && r != ETIMEDOUT)
			r = pthread_cond_timedwait(&h->ev_cond, &h->ev_lock, &until);
		if (h->stopping) {
			pthread_mutex_unlock(&h->ev_lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (h->ev_gen != s->gen) {
			s->gen = h->ev_gen;
			s->len = (size_t)snprintf(s->out, sizeof(s->out), "event: update\ndata: %s\n\n", h->event);
		} else {
			s->len = (size_t)snprintf(s->out, sizeof(s->out), ": keep-alive\n\n");
		}
		pthread_mutex_unlock(&h->ev_lock);
		if (s->len >= sizeof(s->out))
			s->len = sizeof(s->out) - 1;
		s->pos = 0;
	}
	n = s->len - s->pos < max ? s->len - s->pos : max;
	memcpy(buf, s->out + s->pos, n);
	s->pos += n;
	return (ssize_t)n;
}

static enum MHD_Result answer_events(struct servehttp *h, struct MHD_Connection *c)
{
	struct stream *s = calloc(1, sizeof(*s));
	struct MHD_Response *rs;
	enum MHD_Result r;

	if (!s)
		return send_error(h, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	s->h = h;
	/* the first read sends the latest update at once */
	pthread_mutex_lock(&h->ev_lock);
	s->len = (size_t)snprintf(s->out, sizeof(s->out), "retry: 2000\nevent: update\ndata: %s\n\n",
	                          h->event[0] ? h->event : "{}");
	s->gen = h->ev_gen;
	pthread_mutex_unlock(&h->ev_lock);
	if (s->len >= sizeof(s->out))
		s->len = sizeof(s->out) - 1;
	rs = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stream_read, s, free);
	if (!rs) {
		free(s);
		return MHD_NO;
	}
	add_headers(rs, "text/event-stream");
	r = MHD_queue_response(c, MHD_HTTP_OK, rs);
	MHD_destroy_response(rs);
	return r;
}

void servehttp_notify(struct servehttp *h, const char *json)
{
	pthread_mutex_lock(&h->ev_lock);
	snprintf(h->event, sizeof(h->event), "%s", json);
	h->ev_gen++;
	pthread_cond_broadcast(&h->ev_cond);
	pthread_mutex_unlock(&h->ev_lock);
}

/* ------------------------------------------------------------ the handler */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct servehttp *h = cls;
	struct request *rq = *state;
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
	const char *len_hdr;

	(void)version;
	if (!rq) {
		/* the first call: headers only */
		rq = malloc(sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->started = false;
		rq->too_big = false;
		rq->len = 0;
		*state = rq;
		__atomic_add_fetch(&h->requests, 1, __ATOMIC_RELAXED);
		/* the token first, at the first moment libmicrohttpd shows the
		 * request (its headers are in): a peer without it is told so and
		 * the connection closed, whatever else its request holds */
		if (!host_allowed(h, c))
			return refuse(h, c, MHD_HTTP_FORBIDDEN, "this server answers to loopback names only");
		if (!strcmp(url, "/auth") && get)
			return answer_auth(h, c);
		if (!authorised(h, c))
			return refuse(h, c, MHD_HTTP_UNAUTHORIZED, "token required: open /auth?token=...");
		serveguard_authorised(&h->guard, guard_conn(c));
		if (url_length(c, url) > SERVEHTTP_URL_MAX)
			return send_error(h, c, MHD_HTTP_CONTENT_TOO_LARGE, "request too large");
		len_hdr = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (len_hdr && strtoull(len_hdr, NULL, 10) > SERVEHTTP_BODY_MAX)
			return send_error(h, c, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
		if (!get && !post)
			return send_error(h, c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
		if (path_suspect(url))
			return send_error(h, c, MHD_HTTP_BAD_REQUEST, "bad path");
		if (post && (strncmp(url, "/api/live/", 10) ||
		             !MHD_lookup_connection_value(c, MHD_HEADER_KIND, SERVEHTTP_POST_HEADER)))
			return send_error(h, c, MHD_HTTP_FORBIDDEN,
			                  "POST only to /api/live/ with the X-Layerprof header");
		rq->started = true;
		if (get)
			return MHD_YES; /* answered on the next call */
		return MHD_YES;
	}
	if (*upload_size) {
		/* a POST body, in pieces */
		if (rq->len + *upload_size > SERVEHTTP_BODY_MAX)
			rq->too_big = true;
		else
			memcpy(rq->body + rq->len, upload, *upload_size);
		if (!rq->too_big)
			rq->len += *upload_size;
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->too_big)
		return send_error(h, c, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
	if (post && !strcmp(url, "/api/live/snapshot"))
		return answer_snapshot(h, c);
	if (post)
		return answer_command(h, c, url + 10, rq);
	if (!strcmp(url, "/api/events"))
		return answer_events(h, c);
	if (!strcmp(url, "/api/export"))
		return answer_export(h, c);
	if (!strcmp(url, "/api/flow"))
		return answer_flow(h, c);
	if (!strcmp(url, "/api/coverage"))
		return answer_kept(h, c, KEPT_COVERAGE);
	if (!strcmp(url, "/api/counters"))
		return answer_kept(h, c, KEPT_COUNTERS);
	if (!strcmp(url, "/api/sync"))
		return answer_kept(h, c, KEPT_SYNC);
	if (!strncmp(url, "/api/", 5))
		return answer_api(h, c, url + 5);
	return answer_asset(h, c, url);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode why)
{
	(void)cls;
	(void)c;
	(void)why;
	free(*state);
	*state = NULL;
}

/* Every connection is pending in the guard from its accept to its first
 * authorised request; the guard cuts it past the deadline. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	struct servehttp *h = cls;
	const union MHD_ConnectionInfo *fd, *addr;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		serveguard_close(&h->guard, *socket_context);
		*socket_context = NULL;
		return;
	}
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	*socket_context = fd ? serveguard_open(&h->guard, fd->connect_fd, addr ? addr->client_addr : NULL) : NULL;
}

/* ------------------------------------------------------------ start and stop */

static int listen_on(struct servehttp *h, const char *addr, unsigned port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_PASSIVE, .ai_socktype = SOCK_STREAM };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai;
	char service[16];
	int fd, one = 1, r;

	snprintf(service, sizeof(service), "%u", port);
	r = getaddrinfo(addr, service, &hints, &ai);
	if (r)
		return error_set(err, errlen, -EINVAL, "invalid --bind '%s': expected a numeric IPv4 or IPv6 address",
		                 addr);
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, LISTEN_BACKLOG) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		r = -errno;
		error_set(err, errlen, r, "cannot listen on %s port %u: %s", addr, port, strerror(-r));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return r;
	}
	h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                         : ((struct sockaddr_in *)&ss)->sin_port);
	snprintf(h->url, sizeof(h->url), ai->ai_family == AF_INET6 ? "http://[%s]:%u/" : "http://%s:%u/", addr,
	         h->port);
	freeaddrinfo(ai);
	h->listen_fd = fd;
	return 0;
}

int servehttp_start(struct servehttp *h, struct servemodel *m, const struct serve_control *control,
                    const char *bind_addr, unsigned port, const char *token, char *err, size_t errlen)
{
	int r;

	memset(h, 0, sizeof(*h));
	h->m = m;
	h->control = control;
	h->listen_fd = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->ev_lock, NULL);
	pthread_mutex_init(&h->export_lock, NULL);
	pthread_cond_init(&h->ev_cond, NULL);
	serveflow_init(&h->flow);
	servecov_init(&h->cov);
	servectr_init(&h->ctr);
	servesync_init(&h->sync);
	h->loopback = servehttp_is_loopback(bind_addr);
	if (!h->loopback && !token)
		return error_set(err, errlen, -EPERM,
		                 "refusing to listen on %s without a token: anyone who reaches it could read the trace "
		                 "(and drive a live session); give --token-file F",
		                 bind_addr);
	if (token) {
		h->token = strdup(token);
		if (!h->token)
			return error_set(err, errlen, -ENOMEM, "out of memory");
		h->token_len = strlen(token);
	}
	r = listen_on(h, bind_addr, port, err, errlen);
	if (r)
		return r;
	r = serveguard_start(&h->guard);
	if (r)
		return error_set(err, errlen, r, "cannot start the connection guard: %s", strerror(-r));
	h->daemon = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, 0, NULL,
	    NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, h->listen_fd, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)SERVEHTTP_CONNECTIONS_MAX, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)SERVEHTTP_PER_IP_MAX,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVEHTTP_MEMORY_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)SERVEHTTP_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_NOTIFY_CONNECTION,
	    on_connection, h, MHD_OPTION_END);
	if (!h->daemon)
		return error_set(err, errlen, -EIO, "cannot start the HTTP server on %s", h->url);
	h->listen_fd = -1; /* the daemon's now: it closes it */
	return 0;
}

void servehttp_stop(struct servehttp *h)
{
	pthread_mutex_lock(&h->ev_lock);
	h->stopping = true;
	pthread_cond_broadcast(&h->ev_cond);
	pthread_mutex_unlock(&h->ev_lock);
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	h->daemon = NULL;
	serveguard_stop(&h->guard);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	h->listen_fd = -1;
	if (h->token) {
		explicit_bzero(h->token, h->token_len);
		free(h->token);
	}
	h->token = NULL;
	pthread_cond_destroy(&h->ev_cond);
	pthread_mutex_destroy(&h->ev_lock);
	pthread_mutex_destroy(&h->export_lock);
	pthread_mutex_destroy(&h->lock);
	serveflow_release(&h->flow);
	servecov_release(&h->cov);
	servectr_release(&h->ctr);
	servesync_release(&h->sync);
}
