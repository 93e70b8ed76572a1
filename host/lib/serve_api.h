/* The JSON API of the web UI's server: each GET /api/<what> answered from
 * the model, never from the event stream (docs in the README, "Web UI").
 * Not thread-safe: the caller holds the server's lock. */
#ifndef LP_SERVE_API_H
#define LP_SERVE_API_H

#include <stdio.h>

#include "host/lib/serve_model.h"

#define SERVEAPI_ROWS_MAX 100000u /* rows of one profile answer */
#define SERVEAPI_SEARCH_MAX 1000u /* tree nodes one search finds */
#define SERVEAPI_FLAME_NODES_MAX 50000u
#define SERVEAPI_CHILDREN_MAX 10000u /* children of one tree node in an answer (the largest) */

/* How a handler reads the query string: the value of key, or NULL. */
struct serve_query {
	const char *(*get)(void *ctx, const char *key);
	void *ctx;
};

/* Answers GET /api/<what> (what without the prefix, e.g. "summary") into
 * out.  Returns the HTTP status: 200 with a JSON document; 400, 404 or 500
 * with a JSON object {"error": "..."}. */
int serveapi_get(struct servemodel *m, const char *what, const struct serve_query *q, FILE *out);

/* Writes {"error": msg} to out and returns status. */
int serveapi_error(FILE *out, int status, const char *msg);

#endif
