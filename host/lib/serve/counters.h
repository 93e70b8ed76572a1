/* The Counters tab of `layerprof serve` (GET /api/counters): the counter
 * values of a trace recorded with --counters at the three levels of
 * `report --counters` (the program with its per-CPU totals, each thread,
 * each function with inclusive and self counts and the derived metrics),
 * as `report --counters --format json` writes them (export/ctrreport.h).
 * The pass over the trace is its own (the model's index keeps no counter
 * values), made on the first request outside the model's lock and kept
 * with its walk, so that another order of the function rows is only a new
 * sort (ctrstats_collect), not a new pass.  Thread-safe: a lock of its
 * own, held while a pass is made or an answer written (later requests
 * wait for it). */
#ifndef LP_SERVE_COUNTERS_H
#define LP_SERVE_COUNTERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "host/lib/analysis/ctrstats.h"
#include "host/lib/serve/query.h"
#include "host/lib/trace/walk.h"

#define SERVECTR_ROWS_MAX 100000u /* function rows of one answer (limit=) */
#define SERVECTR_ROWS_DEFAULT 2000u
#define SERVECTR_TEXT_MAX 256u /* q= and sort= */

/* One pass: functions merged over threads, or one row per function and
 * thread. */
struct servectr_pass {
	bool done;  /* the pass ran: what follows holds its outcome */
	int status; /* not 0: the pass failed, err holds why (an HTTP status) */
	bool has;   /* the trace has counter records */
	char err[512];
	char damage[512]; /* the trace's damage, or "" */
	struct walk w;    /* kept open: the rows' names and files are its */
	struct ctrstats st;
	/* the rows in the order last asked for (sort= as given) */
	bool collected;
	char sort[SERVECTR_TEXT_MAX];
	struct ctrstats_result res;
};

struct servectr {
	pthread_mutex_t lock;
	struct servectr_pass pass[2]; /* [0] merged over threads, [1] per thread */
};

void servectr_init(struct servectr *sc);
/* Frees the passes kept.  Call when no request uses sc any more. */
void servectr_release(struct servectr *sc);

/* Whether the trace in dir has counter values, for the summary: from the
 * model's walk after its pass (model_w; its counter records), else (the
 * model was read from its index) from the trace's META, where record
 * --counters names the counters.  Cheap: reads no events. */
bool servectr_present(const char *dir, const struct walk *model_w);

/* Answers GET /api/counters for the trace in dir (NULL: a live session,
 * whose counters are not kept) into out.  Query: sort (the keys of
 * `report --counters -s`: incl:COUNTER, self:COUNTER, COUNTER, a derived
 * metric's name, calls, name; default the inclusive count of the first
 * counter), dir (asc or desc; by default the sort's own order: names
 * alphabetical, numbers largest first; the other reverses it), per_thread
 * (0 or 1: one function row per function and thread), q (the functions
 * whose name holds it, any case), offset and limit (of the function rows,
 * at most SERVECTR_ROWS_MAX).  Returns the HTTP status: 200 with
 * {"has_counters": false, "reason": ...} for a trace without counter
 * values or a live session, else "has_counters": true, the members of
 * `report --counters --format json` ("trace" and what follows it), and
 * "sort", "dir", "per_thread", "q", "total_functions" (rows that q
 * matched), "offset" and, for a damaged trace, "damage"; 400 {"error": ...} for a bad parameter (a sort key naming no
 * counter or metric of the trace among them); 500 when the trace cannot
 * be read or memory ran out. */
int servectr_answer(struct servectr *sc, const char *dir, const struct serve_query *q, FILE *out);

#endif
