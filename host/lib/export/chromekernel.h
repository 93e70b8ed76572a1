/* The kernel tracks of the Chrome trace (export/chrome.c), for a trace
 * recorded with --kernel:
 * - on each traced thread's own track, its off-CPU intervals as "X" slices
 *   named "off-CPU (S)" (R, S, D, or the other state's letter), with the
 *   state, the system call it was in and who woke it in args; its irq and
 *   softirq handlers as "X" slices; its page faults as instant events;
 * - a process "CPUs" (pid EXPORT_CHROME_CPU_PID) with one thread per CPU
 *   (tid EXPORT_CHROME_CPU_PID + cpu, named "CPU n"), holding the traced
 *   threads' scheduling slices: switch-in to switch-out on that CPU, named
 *   by thread ("comm tid"), and with record --kernel-system other
 *   processes' too, named by process ("comm pid", args.other_process);
 * - flow events ("s" on the waker's track at its wake-up, "f" with bp "e"
 *   on the wakee's track at its switch-in, one id each pair) for every
 *   wake-up of a traced thread by a traced thread.
 * Each thread's view comes from its own stream (a switch sits in the
 * streams of both threads; a wake-up in the waker's and the wakee's), the
 * CPU slices from each thread's switch-in and switch-out pairs.  Off-CPU
 * slices woken by a thread and the wake-ups traced threads gave are kept
 * until the end of the pass (the waker's stream may come later in the
 * file), up to EXPORT_CHROME_KERNEL_KEPT_MAX each; the other events are
 * written as they are read. */
#ifndef LP_EXPORT_CHROMEKERNEL_H
#define LP_EXPORT_CHROMEKERNEL_H

#include <stdint.h>
#include <stdio.h>

#include "host/lib/trace/walk.h"

/* The "CPUs" process: above any Linux pid (PID_MAX_LIMIT is 4194304), so
 * that it and its per-CPU threads name no task of the trace. */
#define EXPORT_CHROME_CPU_PID 0x40000000u
/* CPU ids given a track; records of higher ids get none. */
#define EXPORT_CHROME_CPUS_MAX 8192u
/* Off-CPU slices woken by a thread, and wake-ups given by traced threads,
 * kept for the end of the pass.  Past that, an off-CPU slice is written at
 * once naming its waker by tid, without a flow; a wake-up given is not
 * kept (no flow from it).  Both are counted (chromekernel_unjoined). */
#define EXPORT_CHROME_KERNEL_KEPT_MAX (1u << 20)

/* How chrome.c lets the kernel tracks write.  begin starts one event (the
 * separator before it) and returns the file it goes to: of stream s, whose
 * events must stay in time order (a thread's instants), or with s NULL of
 * no stream (slices, flows and names, in any order); NULL when the event
 * cannot be written (the stream has no state).  zero_ns is the time of ts 0. */
struct chromekernel_out {
	void *ctx;
	FILE *(*begin)(void *ctx, const struct walk_stream *s);
	uint64_t zero_ns;
};

struct chromekernel;

/* The kernel tracks of walk w (which must outlive it), written through
 * out (copied).  NULL when out of memory.  Free with chromekernel_free. */
struct chromekernel *chromekernel_new(struct walk *w, const struct chromekernel_out *out);
/* Appends its consumers (its own and the kernel layer's, klayer.h, which
 * names the wakers) at the end of the list `list` (walk_chain); they stay
 * owned by ck, which must outlive the pass. */
void chromekernel_chain(struct chromekernel *ck, struct walk_ops *list);
/* After the pass: writes the kept off-CPU slices, the flows and the names
 * of the CPU tracks.  Returns 0, or -ENOMEM when memory ran out during the
 * pass or now (what could be written is). */
int chromekernel_finish(struct chromekernel *ck);
/* Off-CPU slices written without their waker's flow, and wake-ups given
 * not kept, over EXPORT_CHROME_KERNEL_KEPT_MAX. */
uint64_t chromekernel_unjoined(const struct chromekernel *ck);
/* NULL is fine. */
void chromekernel_free(struct chromekernel *ck);

#endif
