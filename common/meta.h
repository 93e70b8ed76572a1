/* The META chunk a trace starts with (docs/format.md): the text written
 * by the recorder and sent by the agent, built from one struct. */
#ifndef LP_COMMON_META_H
#define LP_COMMON_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/utsname.h>

/* The largest META text meta_format writes (the command is cut to fit). */
#define META_MAX 8192

/* What the trace says about heap tracing. */
enum meta_mem {
	META_MEM_NONE,    /* nothing written */
	META_MEM_ON,      /* memory=1 only: the options are not known (attached) */
	META_MEM_OPTIONS, /* memory=1 with mem_depth, mem_keep_alive, mem_fold_ns */
};

struct meta {
	const char *version;  /* layerprof= */
	struct utsname uts;   /* host= (nodename) and kernel= (release) */
	const char *arch;     /* arch= */
	uint32_t clock;       /* clock=: LP_CLOCK_MONOTONIC or the counter */
	uint64_t buffer_size; /* buffer_size=; 0: not written */
	bool has_session;     /* session= and pid= (the agent's sessions) */
	unsigned session;
	int pid;
	bool ring_wait; /* ring_full=wait, else discard */
	uint64_t start_monotonic_ns;
	bool has_realtime; /* start_realtime= */
	long long start_realtime;
	bool filtered;
	bool syscalls;          /* syscall_arch= this machine's */
	unsigned kernel_events; /* kernel=1, kernel_events=N: tracepoints recorded (KFORMAT) */
	bool kernel_system;     /* kernel_system=1: other processes' kernel events too */
	bool attached;          /* attached=1 */
	enum meta_mem mem;
	unsigned mem_depth;
	bool mem_keep_alive;
	uint64_t mem_fold_ns;
	const char *sync; /* sync=: how sync operations were taken (preload,
	                   * wrap); NULL: not recorded */
	/* record --counters: counters= (perf names in value order),
	 * counters.unavailable= (asked for, not recorded: "name: reason; ..."),
	 * counters.read= (rdpmc, read, none), counters.scope= (user: kernel
	 * and hypervisor excluded, all); NULL or "": not written */
	const char *counters;
	const char *counters_unavailable;
	const char *counters_read;
	const char *counters_scope;
	/* record --power: power.sources= (the sources' names, comma-separated,
	 * in the order of the POWER chunks' source index) and
	 * power.interval_ms=; NULL or "": not written */
	const char *power_sources;
	unsigned power_interval_ms;
	int argc;          /* command=: the arguments joined by spaces */
	char *const *argv; /* borrowed */
};

/* Fills m with this machine and moment: version, uname, arch, the
 * monotonic clock now; everything else zero (the caller sets it). */
void meta_init(struct meta *m);

/* Writes m's text into buf (bounded by size, at least 64 bytes) and
 * returns its length; the command comes last and runs to the end of its
 * line (a newline inside an argument becomes a space), cut to fit. */
size_t meta_format(const struct meta *m, char *buf, size_t size);

#endif
