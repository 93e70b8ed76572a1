/* The view of `layerprof live`: the flat profile, the hot call paths
 * (live/paths.h), the system calls (sysstats.h) or the heap (live/mem.h), with a header of what the session knows
 * (tracing, events, losses, exits, filters, saving), drawn in place on a terminal, as plain snapshots elsewhere, or as
 * one JSON object per refresh.  Knows nothing of the connection: the command fills a liveview_info before each draw. */
#ifndef LP_LIVEVIEW_H
#define LP_LIVEVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/analysis/sysstats.h"
#include "host/lib/live/mem.h"
#include "host/lib/live/paths.h"
#include "host/lib/live/udp.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/json.h"

#define LIVEVIEW_ROWS_PLAIN 20 /* functions in a snapshot when not on a terminal */

/* What the table of the view shows. */
enum liveview_mode {
	LIVEVIEW_FLAT,     /* the flat profile */
	LIVEVIEW_PATHS,    /* the hot call paths */
	LIVEVIEW_SYSCALLS, /* per syscall, then the functions making them */
	LIVEVIEW_MEMORY,   /* the heap: live objects per call site, growth, illegal releases */
	LIVEVIEW_LAYERS,   /* time per layer per function (kernel events) */
};

/* A process that ended: its wait status, -1 when unknown. */
struct liveview_exit {
	uint32_t pid;
	int status;
};

/* Everything the view shows besides the profile.  Strings are borrowed for
 * the draw; NULL or "" means none. */
struct liveview_info {
	const char *peer, *agent, *caps; /* the agent */
	uint32_t session, pid;
	uint64_t elapsed_ns; /* since the session began */
	bool final;          /* the last draw: every row, no terminal control */
	bool tracing;
	bool filtered; /* filters were set in this session: no tree, no self */
	uint64_t events, chunks;
	uint64_t lost, lost_at_ns; /* events lost so far, and when the last were (0: unknown) */
	uint64_t bad_chunks;
	const char *filters;  /* the filters in force, as options */
	const char *saving;   /* the trace directory being written */
	bool saving_now;      /* still writing it (else it was written) */
	uint64_t saved_bytes; /* written to it */
	const struct liveview_exit *exits;
	size_t nexits;
	const char *prompt; /* on a terminal: "filter> " while a line is typed */
	const char *line;   /* the line typed so far (line_len bytes) */
	size_t line_len;
	const char *note; /* the last message, shown on the key line */
	/* the table shown (JSON: the paths beside the flat profile with
	 * LIVEVIEW_PATHS; the syscalls always) */
	enum liveview_mode mode;
	const struct livepaths *paths;
	/* the syscall statistics (collected at each draw), and the backend
	 * the agent chose ("" or NULL: syscalls not traced) */
	struct sysstats *sys;
	const char *sys_backend;
	const struct liveudp *udp; /* the UDP channel's counts; NULL over TCP only */
	/* the heap state (settled), or NULL without memory tracing: shown by
	 * LIVEVIEW_MEMORY, and in every plain snapshot and JSON object */
	struct livemem *mem;
	/* the kernel layer, or NULL without kernel events: LIVEVIEW_LAYERS,
	 * and "layers" in every JSON object */
	struct klayer *kl;
};

/* Why a filtered session shows neither tree nor paths. */
#define LIVEVIEW_FILTERED_WHY "filtered profiling leaves gaps in the call paths"

struct liveview {
	bool json; /* one JSON object per draw */
	bool tty;  /* stdout is a terminal: redraw in place */
	struct json j;
};

/* A view writing to stdout.  Nothing to release. */
void liveview_init(struct liveview *v, bool json, bool tty);

/* Draws the profile w's consumers built (profile.h), in->paths or
 * in->sys, under the header in *in.  Returns 0 or -ENOMEM (nothing drawn). */
int liveview_draw(struct liveview *v, struct walk *w, const struct liveview_info *in);

/* "flat", "paths", "syscalls" or "memory"; liveview_mode_parse is its
 * inverse, and takes "mem" too (returns 0, or -EINVAL for another name). */
const char *liveview_mode_name(enum liveview_mode mode);
int liveview_mode_parse(const char *name, enum liveview_mode *mode);

/* Clears the terminal before the first draw (on a terminal, in text). */
void liveview_clear(const struct liveview *v);

/* "exited with status 3", "was killed by signal 9 (Killed)": a process's
 * end for people; status is a wait status, -1 when unknown. */
const char *liveview_describe_status(int status, char *buf, size_t size);

/* A trace time relative to the first event ("+1.234 s"). */
const char *liveview_when(uint64_t first_ns, uint64_t ns, char *buf, size_t size);

#endif
