/* The sync tracer's entry into liblayerprof: what the interposers of the
 * synchronisation functions (liblayerprof-sync.so, preloaded, and
 * liblayerprof-syncwrap.a, linked with ld --wrap) call for each operation.
 * Exported under the private version node LAYERPROF_PRIVATE: not an API,
 * both sides ship together. */
#ifndef LP_SYNCTRACE_H
#define LP_SYNCTRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "layerprof/format.h" /* enum lp_sync_op, enum lp_sync_flags */

/* What the interposers record, from the environment of the program
 * (`record --sync` sets it): "1" every operation, "threads" only the
 * starts of threads (LP_SYNC_THREAD, LP_SYNC_CREATE), which the counters
 * capture needs; anything else: nothing; unset: nothing for the preloaded
 * library, everything for a program linked with the --wrap interposers. */
#define LP_SYNC_ENV "LAYERPROF_SYNC"

/* The interposers' per-thread state, shared by both builds, so that a
 * program linked with --wrap and also given the preloaded library records
 * each operation once.  guard: nonzero while a --wrap interposer calls
 * the real function (which is the preloaded interposer when both are
 * there): that one passes the call on unrecorded. */
struct lp_synchook_state {
	uint8_t guard;
};

extern __thread struct lp_synchook_state lp_synchook __attribute__((tls_model("initial-exec")));

/* op_flags: enum lp_sync_op | enum lp_sync_flags << 8. */
#define LP_SYNC_OPF(op, flags) ((uint32_t)(op) | (uint32_t)(flags) << 8)

/* Whether operations are recorded now (the session's tracing is on): one
 * load.  The interposers pass a call straight on when it is false. */
bool lp_sync_on(void);

/* The event clock now (the one every slot of the process uses), for the
 * start of a wait or the time of a release, read before the operation.
 * Any context. */
uint64_t lp_sync_clock(void);

/* Records one operation of the calling thread as an LP_RAW_SYNC record
 * (three slots) with the time now: obj the lock, condition, barrier,
 * semaphore or thread; begin the lp_sync_clock value when the wait began
 * (0: it did not wait); site the call site; obj2 COND_WAIT's mutex, else 0.
 *
 * Called on every traced lock and unlock of the program: while tracing is
 * off it costs one load and compare; it takes no lock, never blocks and
 * leaves errno alone.  A signal handler's operation made while the thread
 * writes a record of its own is counted lost. */
void lp_sync_record(uint32_t op_flags, uintptr_t obj, uint64_t begin, uintptr_t site, uintptr_t obj2);

/* The same with the record's time given (a release: the time was taken
 * before the call was passed on, the record is written after it returned,
 * with its outcome). */
void lp_sync_record_at(uint64_t now, uint32_t op_flags, uintptr_t obj, uintptr_t site, uintptr_t obj2);

#endif
