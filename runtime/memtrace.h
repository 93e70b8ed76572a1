/* The memory tracer's entry into liblayerprof: what the heap interposers
 * (liblayerprof-mem.so, preloaded, and liblayerprof-memwrap.a, linked with
 * ld --wrap) call for every heap operation.  Exported under the private
 * version node LAYERPROF_PRIVATE: not an API, both sides ship together. */
#ifndef LP_MEMTRACE_H
#define LP_MEMTRACE_H

#include <stddef.h>
#include <stdint.h>
#include "layerprof/format.h" /* LP_MEM_ENV_DEPTH, LP_MEM_DEPTH_MAX, ... */

/* The interposers' per-thread state, shared by both (so that a program
 * linked with --wrap and also given the preloaded library records each
 * operation once).
 *
 * guard: nonzero while the thread is inside an interposer or inside the
 * runtime itself.  Heap operations made then (by the real allocator, by
 * the runtime setting up a thread, by a signal handler that interrupted an
 * interposer) go straight to the real functions, unrecorded.
 *
 * new_lo, new_hi: while operator new runs (hi nonzero), the allocation of
 * between lo and hi bytes it makes is its own, not recorded: the NEW is.
 * operator new is not called under the guard, so that what else happens
 * inside it (the exception object of std::bad_alloc, a new-handler's own
 * work) is recorded as usual.
 *
 * reaping: nonzero while a --wrap wait interposer (memreap.c) calls the
 * real function: the preloaded library's interposer, which that call
 * reaches when both are in the process, leaves the child's end to it. */
struct lp_memhook_state {
	uint8_t guard;
	uint8_t reaping;
	size_t new_lo, new_hi;
};

extern __thread struct lp_memhook_state lp_memhook __attribute__((tls_model("initial-exec")));

/* op_flags: enum lp_mem_op | enum lp_mem_flags << 8. */
#define LP_MEM_OPF(op, flags) ((uint32_t)(op) | (uint32_t)(flags) << 8)

/* Records one heap operation of the calling thread: ptr (the block returned
 * or released), size (bytes asked for; 0 for releases), old (REALLOC: the
 * block passed in).  ret is the interposer's return address (the exact call
 * site), frame its frame address, where the frame-pointer walk for the
 * rest of the stack begins.  The caller holds lp_memhook.guard.
 *
 * Called on every heap operation: while tracing is off it costs one load
 * and compare; it takes no lock, never blocks and leaves errno alone.  A
 * thread whose heap tracing fails (no memory for its stack table) stops
 * recording heap operations and counts each one it drops as lost. */
void lp_mem_record(uint32_t op_flags, uintptr_t ptr, uintptr_t size, uintptr_t old, const void *ret, const void *frame);

/* A release made inside a hook (not recorded): the live-block table, when
 * the process keeps one, lets go of p.  Takes no lock. */
void lp_mem_forget(uintptr_t p);

/* The calling thread reaped a child process (pid, wait status as waitpid
 * gives it): written into its ring so that the recorder, which is not the
 * child's parent, learns how the child ended.  Called by the preloaded
 * library's wait interposers after the real call returned; leaves errno
 * alone, takes no lock. */
void lp_mem_reaped(uint32_t pid, uint32_t status);

#endif
