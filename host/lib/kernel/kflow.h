/* The flow of one call across the layers (`layerprof flow`): every call of
 * a function numbered in time order over the trace (or within one
 * thread), each with its time per layer, and for the chosen call the whole
 * sequence inside it: the functions it called, their system calls, the
 * kernel events they caused (page faults, switches with the off-CPU time
 * and who woke the thread, block requests, irqs), heap operations and
 * synchronisation waits with the thread that released them
 * (trace/syncwake.h). */
#ifndef LP_KFLOW_H
#define LP_KFLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "host/lib/kernel/klayer.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

enum kflow_type {
	KFLOW_CALL,    /* a function call (text: its name); dur: its time */
	KFLOW_SYSCALL, /* text: "name(args) = ret"; dur: its time */
	KFLOW_KERNEL,  /* text: the record as libtraceevent prints it */
	KFLOW_OFFCPU,  /* text: "off CPU (S), woken by ..."; dur: the time off */
	KFLOW_MEM,     /* text: "malloc(48) = 0x..." */
	KFLOW_LOST,    /* text: "N events lost" */
	KFLOW_SYNC,    /* text: "mutex-lock 0x..., released by thread N (comm)"; dur: the wait */
};

/* One step of the chosen call, depth 0 being the call itself. */
struct kflow_node {
	uint8_t type; /* enum kflow_type */
	uint32_t depth;
	uint64_t ns, dur_ns; /* dur_ns 0: a point */
	char *text;          /* owned */
	char *event;         /* KERNEL: "group:event"; owned, else NULL */
	/* SYNC: the thread that released the wait (0: not known) and when
	 * (0: not known) */
	uint32_t waker_tid;
	uint64_t release_ns;
};

struct kflow_call {
	uint64_t n; /* 1 for the first call */
	uint32_t pid, tid;
	uint64_t start_ns, end_ns;
	bool unfinished;           /* the trace ends inside it */
	struct klayer_parts parts; /* of the call (inclusive) */
	bool has_parts;
};

#define KFLOW_NODES_MAX (1u << 20) /* steps of the chosen call kept; more are counted */
#define KFLOW_CALLS_MAX (4u << 20)

struct kflow;

/* The flow of `func` (a function name as report prints it) in walk w
 * (opened, not yet walked): its calls numbered by entry time over all
 * threads (tid 0) or within thread tid, the nth (1-based; 0: none) chosen
 * for the whole sequence.  NULL when out of memory. */
struct kflow *kflow_new(struct walk *w, const char *func, uint64_t nth, uint32_t tid);
void kflow_free(struct kflow *kf);
/* Reads the trace twice: the calls with their layers, then the chosen
 * call's steps.  Returns 0, -ENOMEM, or what walk_run returned. */
int kflow_run(struct kflow *kf);

/* Every call of the function, in order. */
const struct kflow_call *kflow_calls(const struct kflow *kf, size_t *n);
/* The chosen call (NULL when there are fewer calls) and its steps. */
const struct kflow_call *kflow_chosen(const struct kflow *kf);
const struct kflow_node *kflow_nodes(const struct kflow *kf, size_t *n, uint64_t *dropped);

/* `layerprof flow --format json`, as a new object in j: the chosen call
 * with its layers and at most limit steps, or (kflow_json_calls) every
 * call, at most limit; with `counts`, the server's own members too
 * (ncalls and steps_more, or ncalls and more).  The chosen call must exist. */
void kflow_json_call(struct json *j, const char *func, const struct kflow *kf, uint64_t limit, bool counts);
void kflow_json_calls(struct json *j, const char *func, const struct kflow *kf, uint64_t limit, bool counts);

#endif
