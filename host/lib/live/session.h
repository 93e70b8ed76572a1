/* One live session of `layerprof live` with an agent (docs/protocol.md):
 * the connection and handshake, START or ATTACH, the frames that come back
 * (chunks fed to the walk and to the saved trace, STATUS of exits and
 * losses), the source filters sent, and the closing.  The command around it
 * owns the terminal, the commands and the refresh.  Not thread-safe. */
#ifndef LP_LIVESESSION_H
#define LP_LIVESESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/lib/analysis/profile.h"
#include "host/lib/analysis/sysstats.h"
#include "host/lib/live/filter.h"
#include "host/lib/live/mem.h"
#include "host/lib/live/netclient.h"
#include "host/lib/live/paths.h"
#include "host/lib/live/save.h"
#include "host/lib/live/udp.h"
#include "host/lib/live/view.h"
#include "host/lib/trace/walk.h"
#include "host/lib/util/error.h"

#define LIVESESSION_EXITS_MAX 64
#define LIVESESSION_PENDING_MAX (8u << 20) /* CHUNK payloads held until SESSION names ours */
#define LIVESESSION_START_ARGS_MAX 256
#define LIVESESSION_START_BYTES_MAX 65536u
#define LIVESESSION_FLUSH_MIN_MS 5u /* the agent's bounds of CONTROL flush_ms */
#define LIVESESSION_FLUSH_MAX_MS 1000u
#define LIVESESSION_SYSCALL_OPTS_MAX 4096u /* the syscall options of START or ATTACH */

enum livesession_state {
	LIVESESSION_IDLE,       /* not connected yet */
	LIVESESSION_CONNECTING, /* START or ATTACH sent: waiting for SESSION */
	LIVESESSION_RUNNING,
	LIVESESSION_CLOSING, /* BYE sent: taking in what is still coming */
	LIVESESSION_DONE,    /* the session ended normally */
	LIVESESSION_FAILED,  /* the agent or the connection failed */
};

struct livesession {
	/* set by the caller before livesession_connect */
	const char *addr, *token_file;
	long attach_pid; /* attach to this process, or start argv */
	char **argv;     /* borrowed */
	int argc;
	bool udp_wanted; /* EVENTS chunks by the UDP channel */
	/* trace the program's system calls: the backend asked for ("auto",
	 * "bpf", "tracepoint" or "ptrace"), or NULL; and the syscalls to trace (a
	 * list for the agent's architecture), or NULL for all.  Borrowed. */
	const char *syscalls, *syscall_filter;
	/* kernel events: "default" or a list of tracepoints, or NULL; and an
	 * in-kernel filter, or NULL.  Borrowed. */
	const char *kernel, *kernel_filter, *kernel_functions;
	bool kernel_system;  /* with kernel: other processes' kernel events too */
	const char *dynamic; /* `dynamic` of START (or ATTACH: probes): "all" or function globs; NULL: none */
	bool libcalls;       /* START's `libcalls=1` */
	uint32_t flush_ms;   /* the agent's flush period of partial chunks; 0: its own */
	/* trace heap operations (START memory=1, with mem_depth when nonzero
	 * and keep_alive); an attached program sends them when it was started
	 * with the interposers */
	bool memory, keep_alive;
	unsigned mem_depth;
	uint64_t mem_fold_ns; /* START mem_fold (agent capability mem_fold); 0: none */
	/* messages about the session for people: the command shows them
	 * (say NULL: they are dropped) */
	void (*say)(void *ctx, const char *msg);
	void *say_ctx;
	/* failures (one that ends the session, a connection refused) and
	 * warnings about the connection, each given at once: the command
	 * prints them on stderr */
	struct lp_warner complain;

	struct netclient nc;
	enum livesession_state state;
	uint32_t session, pid;
	bool tracing;
	bool program_ended; /* the exit STATUS of the session's program came */
	bool end_seen;      /* the END chunk came: nothing more for the session */
	bool end_asked;     /* it came after our BYE (a session attached by probes ends with us) */
	/* attached by probes (SESSION `dynamic=uprobes`): how many functions */
	bool probed;
	uint32_t probed_functions;
	bool probes_told; /* said that the agent is taking them out (after our BYE) */
	uint64_t t0, ended_ns, closing_ns, session_wait_ns;
	uint64_t last_rx, last_tx;
	struct liveview_exit exits[LIVESESSION_EXITS_MAX];
	size_t nexits;

	/* the syscall backend the agent chose (SESSION) and why; "" when none */
	char sys_backend[16];
	char sys_why[300];

	/* the trace */
	struct walk w;
	struct profile prof;
	struct sysstats sys;    /* syscall statistics, fed by the walk */
	struct livemem mem;     /* the heap state, with `memory` (mem.on) */
	struct livepaths paths; /* the command may livepaths_init it again before the start */
	/* the walk's consumers, in this order: the session's own (the list's
	 * head), prof, paths, sys; a serve model adds its after them */
	struct walk_ops ops, prof_ops, paths_ops, sys_ops;
	/* the kernel layer (with kernel events): chained when the session
	 * starts; NULL without */
	struct klayer *kl;
	struct walk_ops kl_ops;
	bool walk_ended;
	uint64_t chunks, bytes, other_chunks, bad_chunks;
	uint64_t status_lost, lost_at_ns;
	bool filtered_ever;
	/* CHUNK payloads ([u32 length][payload]...) that came before SESSION:
	 * the agent may send a new session's first chunks before naming it */
	uint8_t *pending;
	size_t pending_len, pending_cap;

	struct livesave save;
	struct livefilter filter;
	struct liveudp udp; /* udp.fd -1 without the UDP channel */
};

/* A session with nothing connected: sets up the walk and the profile.
 * Returns 0 or -ENOMEM.  Release with livesession_release (also after a
 * failed init). */
int livesession_init(struct livesession *ls);
void livesession_release(struct livesession *ls);

/* Connects and authenticates (token from ls->token_file).  Returns 0, or
 * -errno after saying why to ls->complain: -EINVAL when ls->addr is not an
 * address (a usage error); -EACCES when the token file or the agent
 * refused; other codes when the connection failed. */
int livesession_connect(struct livesession *ls);

/* Sends the settings given so far (the flush period, tracing off when
 * !tracing, the filters, the UDP channel with udp_wanted), then START or
 * ATTACH (with the syscall options).  Returns 0 or -errno (state FAILED). */
int livesession_start(struct livesession *ls, bool tracing);

/* Sends one frame; on failure says why and the state becomes FAILED. */
int livesession_send(struct livesession *ls, uint8_t type, const void *payload, size_t len);
int livesession_set_tracing(struct livesession *ls, bool on);
/* Makes opts (strings in words, now owned) the filters and sends them. */
void livesession_set_filters(struct livesession *ls, const struct filter_opts *opts, char *words);

/* Reads what the socket holds and handles every whole frame. */
void livesession_receive(struct livesession *ls);
/* Takes the datagrams waiting on the UDP channel, at most LIVEUDP_BATCH
 * (also after the session ended: the last ones).  Returns how many. */
int livesession_receive_udp(struct livesession *ls);
/* Sends BYE and takes in, for a moment, what the agent still sends. */
void livesession_close(struct livesession *ls);
/* The session's timers at time now: heartbeat, silence, the wait for
 * SESSION, for BYE and for END. */
void livesession_tick(struct livesession *ls, uint64_t now);
/* When livesession_tick has something to do next (CLOCK_MONOTONIC ns). */
uint64_t livesession_next_tick(const struct livesession *ls);

/* Events lost so far: the trace's LOST events or the agent's STATUS
 * event=lost, whichever says more, plus those of datagrams lost on the UDP
 * channel. */
uint64_t livesession_lost(const struct livesession *ls);
/* Filters were set: the call paths have gaps. */
bool livesession_filtered(const struct livesession *ls);
/* Adds the processes the trace saw end to ls->exits. */
void livesession_collect_exits(struct livesession *ls);
/* Fills the session's part of a view's header (strings borrowed from ls;
 * `desc` holds the filter description and must outlive the draw). */
void livesession_view_info(struct livesession *ls, struct liveview_info *in, char *desc, size_t desc_size);

/* CLOCK_MONOTONIC in ns. */
uint64_t livesession_now(void);

#endif
