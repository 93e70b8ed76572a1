/* The flow of one call across the layers in the web UI's server (GET
 * /api/flow): the document `layerprof flow --format json` prints (the
 * call's time per layer and its steps: calls, system calls, kernel events,
 * time off the CPU with who woke it), or with all=1 that of `flow --all
 * --format json` (every call of the function with its time per layer).
 * kflow (kernel/kflow.h) reads the trace itself, twice: the server runs it
 * outside the model's lock, one at a time (serve/http.c), and keeps the
 * last answers of a trace file, which does not change.  Answers are
 * bounded: at most `limit` steps or calls, the rest counted. */
#ifndef LP_SERVE_FLOW_H
#define LP_SERVE_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SERVEFLOW_STEPS_DEFAULT 20000u /* steps in one answer, unless limit= says */
#define SERVEFLOW_CALLS_DEFAULT 1000u  /* calls listed by all=1, unless limit= says */
#define SERVEFLOW_LIMIT_MAX 200000u    /* limit= at most */
#define SERVEFLOW_FUNC_MAX 1024u       /* bytes of func= */
#define SERVEFLOW_CACHE 8u             /* answers kept */
#define SERVEFLOW_CACHE_BYTES (32u << 20)

struct serve_query;

struct serveflow_entry {
	char *key; /* the query, canonical; owned */
	char *doc; /* the answer; owned */
	size_t len;
	int status;
};

/* The answers kept, newest first.  Not thread-safe: serve/http.c holds
 * the lock that runs one flow at a time around every use. */
struct serveflow {
	struct serveflow_entry kept[SERVEFLOW_CACHE];
	unsigned n;
	size_t bytes;
};

void serveflow_init(struct serveflow *sf);
void serveflow_release(struct serveflow *sf);

/* Answers GET /api/flow (func=NAME, n=N (1), tid=TID (0: calls numbered
 * over all threads), all=1, limit=L) for the trace in dir into out: from
 * the answers kept, or by reading the trace; keep: the trace does not
 * change (a trace file), so the answer may be kept.  Returns the HTTP
 * status: 200; 400 for a bad parameter; 404 for no such call (the error
 * says how many calls the function has); 500 when the trace cannot be
 * read or memory ran out. */
int serveflow_answer(struct serveflow *sf, const char *dir, bool keep, const struct serve_query *q, FILE *out);

#endif
