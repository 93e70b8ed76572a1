/* What every answer of the web UI's server shares: the query string as a
 * handler reads it, the HTTP statuses answers return, and the error
 * answer.  Below the answering modules (api, heap, live), so that none of
 * them needs another. */
#ifndef LP_SERVE_QUERY_H
#define LP_SERVE_QUERY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define HTTP_OK 200
#define HTTP_BAD_REQUEST 400
#define HTTP_NOT_FOUND 404
#define HTTP_CONFLICT 409
#define HTTP_SERVER_ERROR 500

/* How a handler reads the query string: the value of key, or NULL. */
struct serve_query {
	const char *(*get)(void *ctx, const char *key);
	void *ctx;
};

/* Writes {"error": msg} to out and returns status. */
int servequery_error(FILE *out, int status, const char *msg);

/* A decimal number from the query into *out: def when the key is absent
 * or empty; false when it is malformed or above max. */
bool servequery_u64(const struct serve_query *q, const char *key, uint64_t def, uint64_t max, uint64_t *out);

#endif
