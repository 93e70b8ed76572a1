/* The JSON API of the web UI's server: each GET /api/<what> answered from
 * the model, never from the event stream (docs in the README, "Web UI").
 * Not thread-safe: the caller holds the server's lock. */
#ifndef LP_SERVE_API_H
#define LP_SERVE_API_H

#include <stdio.h>

#include "host/lib/serve/model.h"
#include "host/lib/serve/query.h"

#define SERVEAPI_ROWS_MAX 100000u /* rows of one profile answer */
#define SERVEAPI_SEARCH_MAX 1000u /* tree nodes one search finds */
#define SERVEAPI_FLAME_NODES_MAX 50000u
#define SERVEAPI_CHILDREN_MAX 10000u /* children of one tree node in an answer (the largest) */

/* Answers GET /api/<what> (what without the prefix, e.g. "summary") into
 * out.  Returns the HTTP status: 200 with a JSON document; 400, 404 or 500
 * with a JSON object {"error": "..."}. */
int serveapi_get(struct servemodel *m, const char *what, const struct serve_query *q, FILE *out);

#endif
