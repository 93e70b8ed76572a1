/* layerprofd, the target agent: shared state of the daemon, its sessions
 * (traced programs) and its one host connection.  Single-threaded: every
 * function here runs on the daemon's poll loop. */
#ifndef LP_AGENT_H
#define LP_AGENT_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/auth.h"
#include "common/drain.h"
#include "common/memopts.h"
#include "common/sessiondir.h"
#include "common/wire.h"
#include "systrace/sysdrain.h"
#include "dyntrace/dpatch.h"
#include "dyntrace/uprobes.h"
#include "ktrace/ktrace.h"
#include "systrace/systrace.h"

#define AGENT_MEM_LIB "liblayerprof-mem.so" /* the heap interposers, beside the runtime */
#define AGENT_MAPS_MAX 4096u
#define AGENT_OUT_MAX (64u << 20)            /* queued bytes to the host, at most */
#define AGENT_OUT_MIN (256u << 10)           /* the smallest LAYERPROFD_TEST_OUT_MAX taken */
#define AGENT_OUT_HIGH (4u << 20)            /* above this, rings are not drained */
#define AGENT_HEARTBEAT_NS 1000000000ull     /* send one after a second of silence */
#define AGENT_ATTACH_SWEEP_NS 60000000000ull /* ended programs' attach sessions go this often */
#define AGENT_PEER_TIMEOUT_NS 5000000000ull
#define AGENT_FLUSH_NS 100000000ull /* partial chunks go out at least this often, unless the host says */
#define AGENT_FLUSH_MIN_MS 5u       /* bounds of the host's CONTROL flush_ms */
#define AGENT_FLUSH_MAX_MS 1000u
/* EVENTS chunks from the agent are small: one fits a UDP datagram, and a
 * live host sees events sooner */
#define AGENT_CHUNK_BYTES 8192u
#define AGENT_DATAGRAM_MAX 65000u
/* Peers not yet authenticated (docs/protocol.md, "Access"): a table of their
 * own, apart from the one host; each has an absolute deadline, and one
 * address (or one uid on the UNIX socket) holds only a few of the places.
 * A new peer pushes out the oldest one rather than be refused. */
#define AGENT_PENDING_MAX 16u
#define AGENT_PENDING_PER_PEER 4u
#define AGENT_AUTH_DEADLINE_NS 5000000000ull /* from accept to a good AUTH, whatever arrives */
#define AGENT_AUTH_FRAME_MAX 256u            /* the longest AUTH payload taken */
#define AGENT_LISTEN_BACKLOG 64

/* The OS-call timing suite (agent/oscal.c): the program, found beside the
 * agent or named by the agent's environment (never by a host). */
#define OSCAL_PROGRAM "layerprof-oscal"
#define OSCAL_ENV "LAYERPROF_OSCAL"
#define OSCAL_REQUEST_MAX 65536u          /* an OSCAL frame's options, at most */
#define OSCAL_BLOCK_MAX 65536u            /* the suite's output per OSCALDATA frame, at most */
#define OSCAL_ERRLINE_MAX 300u            /* the suite's stderr line kept for the host */
#define OSCAL_STOP_GRACE_NS 2000000000ull /* SIGTERM to SIGKILL, when the host left */
#define OSCAL_EOF_GRACE_NS 2000000000ull  /* after the exit, the wait for the pipes' end */

struct agent;

/* A code mapping seen in a session, kept to tell a reconnecting host. */
struct agent_map {
	uint32_t image, pid;
	uint64_t base, start, end, offset;
	uint8_t build_id[64];
	uint16_t build_id_len;
	char *path; /* owned */
};

enum session_kind {
	SESSION_STARTED,  /* a program the agent started */
	SESSION_ATTACHED, /* a running program with the runtime, by its attach directory */
	/* a running program traced from outside by uprobes (ATTACH's
	 * `dynamic`): a session directory of the agent's own, no ring in the
	 * program; it ends when the host leaves, its probes taken out */
	SESSION_PROBED,
};

/* What a START or ATTACH asked of the syscall tracer (keys `syscalls` and
 * `syscall_filter`, docs/protocol.md). */
struct session_syscalls {
	bool on;
	struct systrace_config cfg;
	/* kernel events (START/ATTACH option `kernel`, ktrace/): the strings
	 * of kcfg are borrowed from the request for the call */
	bool kernel;
	struct ktrace_config kcfg;
	/* functions of a program built without instrumentation (START and
	 * ATTACH option `dynamic`, dyntrace/): the patterns point into the
	 * request */
	bool dynamic;
	bool functions; /* `dynamic` given (`libcalls` alone traces only those) */
	struct uprobes_config ucfg;
};

/* Where a session's heap operations come from, for the host (SESSION
 * `memory=`). */
enum session_mem_state {
	SESSION_MEM_NONE,      /* no interposer preloaded: no heap stream (unless linked with --wrap) */
	SESSION_MEM_PRELOADED, /* liblayerprof-mem.so is in the program */
};

struct session {
	struct session *next;
	struct agent *agent;
	uint32_t id;
	enum session_kind kind;
	pid_t pid;
	bool exited;   /* the program is gone; drained, then closed */
	bool finished; /* session_finish done: the END chunk is out */
	int status;    /* wait status with `exited`, -1 when unknown */
	struct drain *drain;
	char dir[PATH_MAX];
	int dirfd;          /* attached: the program's session directory (-1: none) */
	char entry[32];     /* attached: its name in the attach directory */
	uint64_t lost_told; /* lost events already reported to the host */
	uint64_t chunks_dropped;
	uint64_t queue_lost; /* events in chunks the host's full queue refused */
	struct agent_map *maps;
	size_t nmaps;
	/* the syscall tracer, or NULL.  With the ptrace backend its thread
	 * reaps the program: the agent must not wait for it, and learns of
	 * its end from systrace_exited */
	struct systrace *st;
	struct ktrace *kt;       /* kernel events, or NULL */
	struct uprobes *up;      /* the dynamic tracer (`dynamic`), or NULL */
	struct dpatch *dp;       /* or its patch plan, in-process patching */
	uint32_t plans_answered; /* requests for plans answered (drain_plan_wants) */
	/* with dp: its patterns (strings in dyn_strings, the session's), for
	 * the programs the traced one execs, and the plans in the session */
	struct uprobes_config dyn_cfg;
	char *dyn_strings;
	unsigned nplans;
	char up_err[600];      /* why its probes could not be opened on the program */
	bool ksystem;          /* with kt: other processes' too (kernel_system) */
	char kernel_warn[300]; /* events left out of the default set, for the host */
	struct sysdrain feed;  /* the tracer's records into the drain (feed.on: tracing on) */
	char sys_why[300];     /* the backend chosen and why, for the host */
	enum session_mem_state mem;
	struct memopts mem_opts; /* started ones: what START asked */
};

enum conn_state {
	CONN_READY,   /* authenticated */
	CONN_CLOSING, /* flush what is queued, then close */
};

/* A peer that has not authenticated yet (listen.c): HELLO sent, its AUTH
 * frame read into a small buffer of its own.  It holds nothing of the
 * host's: no session, no queue, no reader of full-sized frames. */
struct pending {
	int fd;         /* -1: a free place */
	bool unix_sock; /* came by the UNIX socket */
	bool local;     /* of the agent's uid or root (SO_PEERCRED): no MAC needed */
	char peer[80];  /* for the log */
	char key[64];   /* what the per-peer bound counts: the address, or "uid N" */
	uint64_t since_ns, deadline_ns;
	uint8_t nonce[AUTH_NONCE_SIZE];
	uint8_t buf[LP_WIRE_HEADER_SIZE + AGENT_AUTH_FRAME_MAX];
	size_t len;
};

struct conn {
	int fd;
	enum conn_state state;
	bool unix_sock; /* by the UNIX socket: no datagram channel */
	char peer[80];
	struct wire_reader rd;
	uint32_t tx_seq;
	uint8_t *out; /* queued frames: [out_off, out_len) still to send */
	size_t out_len, out_off, out_cap;
	size_t out_max; /* the queue's bound: the agent's out_max */
	uint64_t last_rx_ns, last_tx_ns;
	int udp_fd;       /* -1, or the datagram channel for EVENTS chunks */
	uint32_t udp_seq; /* datagrams numbered apart from the TCP frames */
	uint64_t udp_sent, udp_dropped;
	uint64_t udp_events; /* events in the datagrams numbered so far */
	uint64_t udp_events_told;
};

/* The one run of the suite (OSCAL).  pid 0: none; the place is taken
 * from the start until the suite is reaped and its pipes are read to
 * the end (or OSCAL_EOF_GRACE_NS after its exit). */
struct oscal_run {
	pid_t pid;          /* the suite, leader of its own process group */
	int out_fd, err_fd; /* our ends of its stdout and stderr; -1 once at their end */
	bool exited;        /* reaped: status is its wait status */
	int status;
	bool orphaned;                /* its host left: stopped, its output dropped */
	uint64_t kill_ns;             /* orphaned: SIGKILL to the group from then */
	uint64_t exit_ns;             /* exited: stop waiting for the pipes' end then */
	uint8_t out[OSCAL_BLOCK_MAX]; /* stdout read but not queued to the host yet */
	size_t out_len;
	char err[OSCAL_ERRLINE_MAX]; /* the stderr line being read */
	size_t err_len;
	char last_err[OSCAL_ERRLINE_MAX]; /* its last whole line */
};

struct agent {
	int tcp_fd;  /* -1, or the TCP listener (--listen; a token required) */
	int unix_fd; /* -1, or the UNIX socket listener */
	char unix_path[LP_WIRE_UNIX_PATH_MAX + 1];
	uint64_t unix_dev, unix_ino; /* the socket file made, removed at exit if still ours */
	unsigned uid;                /* the agent's effective uid: its UNIX peers may be it or root */
	struct pending pending[AGENT_PENDING_MAX];
	struct conn *conn;
	struct session *sessions;
	uint32_t next_session;
	bool tracing;      /* what the host asked for */
	bool hold;         /* hold the next started program until the host releases it */
	uint64_t flush_ns; /* period of the flush of partial chunks (CONTROL flush_ms) */
	/* source filters the host set, applied to every session */
	bool filtered;
	uint64_t *filter_addrs; /* only, then exclude; owned */
	size_t n_only, n_exclude;
	uint32_t max_depth;
	uint64_t min_ns;
	bool has_token;
	char token[1100];
	size_t token_len;
	char lib[PATH_MAX];
	char memlib[PATH_MAX]; /* liblayerprof-mem.so next to lib; "" when absent */
	char attach_dir[PATH_MAX - 64];
	/* the attach directory in use (attach_dir, or another when another
	 * user holds that name; fd -1: none), and the private directory of
	 * the started programs' sessions */
	struct sessiondir attach;
	struct sessiondir private;
	struct drain_config cfg;
	/* bound of the queue to the host: AGENT_OUT_MAX, or smaller for tests
	 * (environment LAYERPROFD_TEST_OUT_MAX, bytes) */
	size_t out_max;
	bool verbose;
	char oscal_path[PATH_MAX]; /* the suite to run for OSCAL; "" when there is none */
	struct oscal_run oscal;
	volatile int stop;
};

/* agent.c */
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t agent_now_ns(void);
/* The host leaves (its BYE, or its connection failed): the sessions
 * attached by probes end with it, their last chunks and END sent (as the
 * socket takes them), then their probes taken out of the programs, which
 * run on.  That waits for the kernel, which is slow to close uprobe events
 * (tens of ms each, two per function per CPU): the BYE answered after it
 * tells the host that the programs are clean. */
void agent_end_probed(struct agent *a);

/* attachdir.c */
/* Opens (making it) the attach directory a->attach_dir into a->attach, or
 * another when that name is taken, saying so on stderr. */
void attachdir_open(struct agent *a);
/* The attach directory's path, for messages. */
const char *attachdir_path(const struct agent *a);
/* The session directory that process pid registered in the attach
 * directory, opened without following links and used only when it is a
 * directory of the process's effective user (or of root's) that no one
 * else may enter: <pid> when it is the process's user's, else the newest
 * <pid>.XXXXXX (the runtime's name when <pid> was someone else's), else a
 * <pid> of root's (the program registered before it changed its user).  Returns the directory's descriptor (the caller
 * closes it), its name in `name`, its owner and the process's effective uid; or -ENOENT (no session), -EPERM (only
 * entries the process's user does not own, or links), -ESRCH (no such process). */
int attachdir_find(struct agent *a, pid_t pid, char *name, size_t size, uid_t *owner, uid_t *puid);
/* Removes the session of an attached program that is gone: its control
 * and filter files through dirfd, then its name when that still is the
 * same, empty directory. */
void attachdir_remove(struct agent *a, int dirfd, const char *name);
/* Removes the sessions of attachable programs that ended without an
 * agent attached (they would hold their rings in shared memory for good):
 * entries "<pid>" or "<pid>.XXXXXX" whose process is gone and whose files
 * no process maps, emptied through descriptors without following links.
 * Returns how many went. */
int attachdir_sweep(struct agent *a);

/* session.c */
/* Starts argv[0..argc) under tracing, under the syscall tracer when
 * sys->on and with the heap interposers when mem->on (sys and mem may be
 * NULL).  Returns the session, or NULL with a reason in err (a backend the
 * kernel refuses: the tracer's message). */
struct session *session_start(struct agent *a, char **argv, int argc, const struct session_syscalls *sys,
                              const struct memopts *mem, char *err, size_t errlen);
/* Attaches to a running program that made itself attachable; its syscalls
 * are traced too when sys->on (the ptrace backend then detaches at the end,
 * leaving the program running). */
struct session *session_attach(struct agent *a, pid_t pid, const struct session_syscalls *sys, char *err,
                               size_t errlen);
/* Traces running process pid from outside by uprobes on the functions of
 * its executable (sys->dynamic, sys->ucfg's patterns), whether or not it
 * has the runtime: a session directory of the agent's own, the probes on
 * the file the process runs, its syscalls and kernel events too when sys
 * asks.  Needs root and the kernel's uprobe PMU.  Returns the session, or
 * NULL with the reason in err: no such process, another user's (an agent
 * not root), no root or no uprobe PMU, its file deleted or replaced
 * (probes are defined by path), what the tracers refused. */
struct session *session_probe(struct agent *a, pid_t pid, const struct session_syscalls *sys, char *err, size_t errlen);
/* The program's wait status when the syscall tracer reaped it (ptrace
 * backend); false otherwise. */
bool session_reaped(struct session *s, int *status);
/* "preloaded" or "none": SESSION's `memory=`. */
const char *session_mem_name(enum session_mem_state m);
/* Polls the session's rings; returns slots consumed or -errno. */
long session_poll(struct session *s);
/* The program exited (or, for attached ones, vanished). */
void session_exited(struct session *s, int status);
/* Sends the session's known code mappings (for a reconnecting host). */
void session_send_maps(struct session *s);
/* Final drain: every event left, then the END chunk.  Once: later calls
 * do nothing. */
void session_finish(struct session *s);
/* Teardown after session_finish; unlinks it from the agent.  Frees s. */
void session_close(struct session *s);
void session_set_tracing(struct session *s, bool on);
/* Applies the agent's current source filters (or none) to the session. */
int session_apply_filters(struct session *s);
/* For probes.c, the steps its sessions share with the others: a new
 * session (not linked yet; NULL when out of memory), linking it to the
 * agent, the drain's callbacks, the kernel tracer opened (0, or -1 with
 * err set), the syscall tracer attached to running process pid (0, or -1
 * with err set; the program is left running at the end), the META chunk
 * (a one-word-per-argument command line) and the tracepoint formats. */
struct session *session_new(struct agent *a, enum session_kind kind);
void session_link(struct session *s);
struct drain_ops session_drain_ops(struct session *s, const struct session_syscalls *sys);
int session_kernel_open(struct session *s, const struct session_syscalls *sys, char *err, size_t errlen);
int session_syscalls_attach(struct session *s, pid_t pid, const struct session_syscalls *sys, char *err, size_t errlen);
void session_send_meta(struct session *s, int argc, char *const *argv);
void session_send_kformats(struct session *s);

/* listen.c */
/* Listens on ADDR:PORT over TCP; the agent must have a token.  Returns 0,
 * or -errno after saying why on stderr. */
int listen_tcp(struct agent *a, const char *arg);
/* Listens on a UNIX socket at path (NULL: the default one, in a private
 * directory of the agent's user it makes or checks).  Returns 0, or -errno
 * after saying why on stderr. */
int listen_unix(struct agent *a, const char *path);
/* Closes the listeners and every pending peer; removes the socket file. */
void listen_close(struct agent *a);
/* Accepts what waits on listener fd: checks each peer, gives it a pending
 * place (pushing out the oldest of its address when it has too many, or the
 * oldest of all when none is free) and sends it HELLO. */
void listen_accept(struct agent *a, int fd, bool unix_sock);
/* Reads what a pending peer sent; a good AUTH makes it the host (or gets it
 * ERROR busy when one is connected), anything else closes it. */
void pending_input(struct agent *a, struct pending *p);
/* Closes the pending peers whose deadline has passed. */
void pending_expire(struct agent *a, uint64_t now);

/* oscal.c */
/* Finds the suite: $LAYERPROF_OSCAL, else layerprof-oscal beside the
 * agent (installed) or in the build tree's oscal/.  No run yet. */
void oscal_init(struct agent *a);
/* A suite was found: HELLO lists capability `oscal`. */
bool oscal_available(const struct agent *a);
/* OSCAL from the authenticated host c: the options checked (known keys,
 * values of a fixed form), the suite started with them, or ERROR with
 * the reason (busy while a run holds the place).  Returns 0: a refusal
 * does not end the connection. */
int oscal_request(struct agent *a, struct conn *c, const struct wire_frame *f);
/* The suite's pipes for the poll loop: pfd[0] its stdout (fd -1 while
 * the host's queue is too full to take more), pfd[1] its stderr. */
void oscal_poll_fds(struct agent *a, struct pollfd *pfd);
/* Reads what the pipes of pfd[0..1] hold: stdout goes to the host as
 * OSCALDATA frames of whole lines, stderr to the log. */
void oscal_input(struct agent *a, const struct pollfd *pfd);
/* Looks at the suite without reaping anything else: once it exited (and
 * its output is read), STATUS event=oscal_exit to its host and the place
 * freed; a stopped suite that dawdles is killed. */
void oscal_check(struct agent *a);
/* For the agent's wait loop: true when pid was the suite (taken then). */
bool oscal_reaped(struct agent *a, pid_t pid, int status);
/* Its host left: the suite's process group gets SIGTERM (SIGKILL after
 * OSCAL_STOP_GRACE_NS); it is reaped in the loop. */
void oscal_host_gone(struct agent *a);
/* The agent stops: the suite stopped and reaped now (blocks at most
 * OSCAL_STOP_GRACE_NS, then kills it). */
void oscal_release(struct agent *a);

/* conn.c */
/* The host's connection, authenticated on fd: HELLO was seq 0 and AUTH
 * the host's seq 0; rest[rest_len] are bytes it sent after AUTH.  Returns
 * NULL when out of memory (fd is then the caller's). */
struct conn *conn_new(struct agent *a, int fd, const char *peer, bool unix_sock, const uint8_t *rest, size_t rest_len);
/* Sends WELCOME and, for a host that comes back, its sessions' mappings;
 * turns tracing on.  Then handles the frames that came with the AUTH. */
int conn_welcome(struct agent *a, struct conn *c);
void conn_free(struct conn *c);
/* Queues one frame; -ENOBUFS when the queue is full (nothing queued). */
int conn_queue(struct conn *c, uint8_t type, const void *payload, size_t len);
/* Queues a CHUNK frame: session id, chunk header, payload. */
int conn_queue_chunk(struct conn *c, uint32_t session, uint8_t chunk_type, const uint8_t *payload, size_t len,
                     uint64_t events);
/* Sends what the socket takes now.  -errno when the connection broke. */
int conn_flush(struct conn *c);
/* Reads and handles what arrived.  -errno (or -EPIPE on close) when the
 * connection should go. */
int conn_input(struct agent *a, struct conn *c);
size_t conn_pending(const struct conn *c);
bool conn_ready(const struct conn *c);

#endif
