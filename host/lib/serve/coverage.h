/* The Coverage tab of `layerprof serve` (GET /api/coverage): the served
 * trace set beside the static call graph of the binaries it ran, as
 * `layerprof coverage --paths --format json` writes it
 * (callgraph/coverage.h, docs/coverage.md), with the warnings the reading
 * gave.  coverage_build reads the trace and every binary itself, so the
 * answer is made outside the model's lock, on the first request, and kept:
 * a trace file does not change.  Thread-safe: a lock of its own, held
 * while the answer is made (later requests wait for it, then share it). */
#ifndef LP_SERVE_COVERAGE_H
#define LP_SERVE_COVERAGE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SERVECOV_WARNINGS_MAX 16u /* warnings kept with the answer; the rest counted */

struct servecov {
	pthread_mutex_t lock;
	bool done;  /* doc holds the answer */
	int status; /* its HTTP status */
	char *doc;  /* owned */
	size_t len;
};

void servecov_init(struct servecov *sc);
/* Frees the answer kept.  Call when no request uses sc any more. */
void servecov_release(struct servecov *sc);

/* Answers GET /api/coverage for the trace in dir into out; dir NULL: a
 * live session, which coverage cannot read (it needs a saved trace).
 * Returns the HTTP status: 200 with the document of `coverage --paths
 * --format json` plus "warnings" (the reading's warnings, an object that
 * could not be read among them: its functions then count as unmatched)
 * and, for a damaged trace, "damage"; 404 with {"error": ...} for a
 * layerprof built without capstone, a live session, or a program that
 * could not be read (no binary, hence no path tree); 500 when the trace
 * cannot be read or memory ran out.  Every answer but running out of
 * memory is kept and given again. */
int servecov_answer(struct servecov *sc, const char *dir, FILE *out);

#endif
