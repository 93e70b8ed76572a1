/* The Sync tab of `layerprof serve` (GET /api/sync): how long the threads
 * of a trace recorded with --sync waited for each other, as `report --sync
 * --format json` writes it (export/syncreport.h): per lock with its
 * threads, per condition variable, semaphore, barrier and futex of other
 * code with who waits and who signals, per thread, the joins, the
 * producer/consumer balance and the longest waits with who ended them.
 * The model's index keeps none of it, and the report's pass (by time,
 * with the heap to name objects inside heap blocks) is its own: made on
 * the first request outside the model's lock, and the document kept
 * (the page sorts its tables itself).  Thread-safe: a lock of its own,
 * held while the document is made (later requests wait for it). */
#ifndef LP_SERVE_SYNCTAB_H
#define LP_SERVE_SYNCTAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct servesync {
	pthread_mutex_t lock;
	bool done;  /* doc holds the answer */
	int status; /* its HTTP status */
	char *doc;  /* owned */
	size_t len;
};

void servesync_init(struct servesync *sc);
/* Frees the answer kept.  Call when no request uses sc any more. */
void servesync_release(struct servesync *sc);

/* Answers GET /api/sync for the trace in dir (NULL: a live session, whose
 * sync events are not kept) into out.  Returns the HTTP status: 200 with
 * {"has_sync": false, "reason": ...} for a trace without sync events or a
 * live session, else the document of `report --sync --format json` with
 * "has_sync": true and, for a damaged trace, "damage" (the figures cover
 * its readable part); 500 when the trace cannot be read or memory ran
 * out.  Every answer but running out of memory is kept and given again. */
int servesync_answer(struct servesync *sc, const char *dir, FILE *out);

#endif
