/* A live session with an agent: connection, frames, trace, filters (see
 * live/session.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/chunk.h"
#include "common/varint.h"
#include "host/lib/kernel/klayer.h"
#include "host/lib/live/session.h"
#include "host/lib/trace/symbolizer.h"
#include "host/lib/util/error.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define HEARTBEAT_NS NS_PER_S          /* send one after this long without sending */
#define PEER_TIMEOUT_NS (5 * NS_PER_S) /* an agent silent this long is gone */
#define END_GRACE_NS (2 * NS_PER_S)    /* after the exit STATUS, wait this long for END */
#define BYE_WAIT_NS NS_PER_S           /* after our BYE, take in what is still coming */
/* A session attached by probes: the agent answers our BYE once the kernel
 * has taken them out, which takes it tens of ms per probe event (two per
 * function per CPU), silent meanwhile; waited for this long at most */
#define PROBES_OUT_NS (10 * NS_PER_S)
#define PROBES_OUT_PER_FUNCTION_NS (NS_PER_S / 2)
#define SESSION_WAIT_NS (10 * NS_PER_S) /* START or ATTACH to SESSION */

uint64_t livesession_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void say(struct livesession *ls, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct livesession *ls, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ls->say)
		ls->say(ls->say_ctx, msg);
}

/* A failure that ends the session: said at once, to ls->complain. */
static void fail(struct livesession *ls, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct livesession *ls, const char *fmt, ...)
{
	char msg[LP_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_warn(&ls->complain, "%s", msg);
	ls->state = LIVESESSION_FAILED;
}

/* ------------------------------------------------------------ the trace */

static void on_lost(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t count)
{
	struct livesession *ls = ctx;

	if (ns > ls->lost_at_ns)
		ls->lost_at_ns = ns;
	if (ls->mem.on)
		livemem_lost(&ls->mem, s, ns, count);
}

static void on_mem(void *ctx, struct walk_stream *s, const struct walk_mem *m)
{
	struct livesession *ls = ctx;

	if (ls->mem.on)
		livemem_mem(&ls->mem, s, m);
}

static void on_task(void *ctx, struct walk_stream *s, uint64_t ns, unsigned kind, uint64_t value)
{
	struct livesession *ls = ctx;

	if (ls->mem.on)
		livemem_task(&ls->mem, s, ns, kind, value);
}

/* After each chunk fed: the heap state learns when its events came. */
static int on_chunk_end(void *ctx, const struct walk_chunk *c)
{
	struct livesession *ls = ctx;

	if (ls->mem.on)
		livemem_fed(&ls->mem, livesession_now());
	return 0;
}

/* The live view of call paths as a consumer of the walk (ctx: the
 * struct livepaths). */
static void paths_entry(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, unsigned flags)
{
	livepaths_entry(ctx, s, depth, addr, flags);
}

static void paths_exit(void *ctx, struct walk_stream *s, uint64_t ns, uint64_t addr, uint32_t depth, uint64_t entry_ns,
                       unsigned flags)
{
	livepaths_exit(ctx, s, depth, ns - entry_ns, flags);
}

int livesession_init(struct livesession *ls)
{
	char err[256];

	netclient_init(&ls->nc);
	livesave_init(&ls->save);
	livefilter_init(&ls->filter);
	ls->udp.fd = -1;
	profile_init(&ls->prof);
	livepaths_init(&ls->paths, 0);
	/* the runtime filters; the host shows what arrives */
	if (walk_open(&ls->w, NULL, NULL, err, sizeof(err)))
		return -ENOMEM;
	sysstats_init(&ls->sys, &ls->w, 0);
	/* the session's consumers: its own (lost events, the heap state),
	 * the profile, the call paths, the syscall statistics */
	ls->ops = (struct walk_ops){ .ctx = ls,
		                     .lost = on_lost,
		                     .mem = on_mem,
		                     .task = on_task,
		                     .chunk_end = on_chunk_end,
		                     .next = &ls->prof_ops };
	profile_walk_ops(&ls->prof, &ls->prof_ops);
	ls->prof_ops.next = &ls->paths_ops;
	ls->paths_ops =
	    (struct walk_ops){ .ctx = &ls->paths, .entry = paths_entry, .exit = paths_exit, .next = &ls->sys_ops };
	sysstats_walk_ops(&ls->sys, &ls->sys_ops);
	walk_begin(&ls->w, &ls->ops);
	return 0;
}

void livesession_release(struct livesession *ls)
{
	netclient_release(&ls->nc);
	profile_release(&ls->prof);
	sysstats_release(&ls->sys);
	klayer_free(ls->kl);
	ls->kl = NULL;
	livemem_release(&ls->mem);
	livepaths_release(&ls->paths);
	walk_release(&ls->w);
	livesave_release(&ls->save);
	livefilter_release(&ls->filter);
	liveudp_release(&ls->udp);
	free(ls->pending);
	ls->pending = NULL;
}

static void add_exit(struct livesession *ls, uint32_t pid, int status)
{
	size_t i;

	for (i = 0; i < ls->nexits; i++) {
		if (ls->exits[i].pid == pid) {
			ls->exits[i].status = status;
			return;
		}
	}
	if (ls->nexits < LIVESESSION_EXITS_MAX) {
		ls->exits[ls->nexits].pid = pid;
		ls->exits[ls->nexits].status = status;
		ls->nexits++;
	}
}

uint64_t livesession_lost(const struct livesession *ls)
{
	uint64_t lost = ls->w.lost > ls->status_lost ? ls->w.lost : ls->status_lost;

	return ls->udp.fd >= 0 ? lost + liveudp_lost_events(&ls->udp) : lost;
}

bool livesession_filtered(const struct livesession *ls)
{
	return ls->filtered_ever || ls->w.filtered_at_record;
}

/* Processes that ended: the agent's word for the program, the trace's for
 * its children. */
void livesession_collect_exits(struct livesession *ls)
{
	uint32_t i;

	for (i = 0; i < ls->w.nstreams; i++) {
		const struct walk_stream *s = ls->w.streams[i];
		size_t k;

		if (!s->exited || s->tid != s->pid)
			continue;
		for (k = 0; k < ls->nexits && ls->exits[k].pid != s->pid; k++)
			;
		if (k == ls->nexits)
			add_exit(ls, s->pid, (int)s->status);
	}
}

void livesession_view_info(struct livesession *ls, struct liveview_info *in, char *desc, size_t desc_size)
{
	livefilter_describe(&ls->filter, desc, desc_size);
	in->peer = ls->nc.peer;
	in->agent = ls->nc.agent;
	in->caps = ls->nc.caps;
	in->session = ls->session;
	in->pid = ls->pid;
	in->elapsed_ns = livesession_now() - ls->t0;
	in->tracing = ls->tracing;
	in->filtered = livesession_filtered(ls);
	in->events = ls->w.events;
	in->chunks = ls->chunks;
	in->lost = livesession_lost(ls);
	in->lost_at_ns = ls->lost_at_ns;
	in->bad_chunks = ls->bad_chunks;
	in->filters = ls->filter.active ? desc : "";
	in->saving = ls->save.dir;
	in->saving_now = livesave_active(&ls->save);
	in->saved_bytes = ls->save.bytes;
	in->exits = ls->exits;
	in->nexits = ls->nexits;
	in->paths = &ls->paths;
	in->sys = &ls->sys;
	in->sys_backend = ls->sys_backend;
	in->kl = ls->kl;
	in->udp = ls->udp.fd >= 0 ? &ls->udp : NULL;
}

/* ------------------------------------------------------------ sending */

int livesession_send(struct livesession *ls, uint8_t type, const void *payload, size_t len)
{
	int r = netclient_send(&ls->nc, type, payload, len);

	if (r) {
		error_warn(&ls->complain, "%s", ls->nc.error);
		ls->state = LIVESESSION_FAILED;
		return r;
	}
	ls->last_tx = livesession_now();
	return 0;
}

int livesession_set_tracing(struct livesession *ls, bool on)
{
	char msg[32];
	int n = snprintf(msg, sizeof(msg), "tracing=%s\n", on ? "on" : "off");
	int r = livesession_send(ls, LP_FRAME_CONTROL, msg, (size_t)n);

	if (!r && on && !ls->tracing && ls->session) {
		/* blocks allocated while tracing was off are unknown, and a
		 * block released before may have been handed out again */
		livemem_partial(&ls->mem, 0);
		livemem_resumed(&ls->mem, livesession_now());
	}
	if (!r)
		ls->tracing = on;
	return r;
}

/* Sends the filters in force as one CONTROL frame; with `patterns_only`,
 * only when new code changed what the patterns match. */
static int send_filters(struct livesession *ls, bool patterns_only)
{
	char *msg;
	size_t len;
	int r = livefilter_control(&ls->filter, &ls->w, patterns_only, &msg, &len);

	if (r == 1)
		return 0;
	if (r == -E2BIG) {
		say(ls, "the patterns match more than %d functions: give narrower ones", LIVEFILTER_ADDRS_MAX);
		return r;
	}
	if (r) {
		say(ls, "out of memory resolving the filters");
		return r;
	}
	r = livesession_send(ls, LP_FRAME_CONTROL, msg, len);
	free(msg);
	return r;
}

void livesession_set_filters(struct livesession *ls, const struct filter_opts *opts, char *words)
{
	char desc[512];

	livefilter_set(&ls->filter, opts, words);
	if (ls->filter.active)
		ls->filtered_ever = true;
	if (ls->state == LIVESESSION_CONNECTING || ls->state == LIVESESSION_RUNNING)
		send_filters(ls, false);
	livefilter_describe(&ls->filter, desc, sizeof(desc));
	if (ls->filter.active)
		say(ls, "filters: %s", desc);
	else
		say(ls, "filters cleared");
}

static int send_start_frame(struct livesession *ls)
{
	char opts[LIVESESSION_SYSCALL_OPTS_MAX];
	size_t len = 0, off = 0, olen = 0;
	char *args;
	int i, r;

	if (ls->syscalls) {
		if (!netclient_has_cap(&ls->nc, "syscalls")) {
			fail(ls, "the agent at %s does not trace system calls (caps %s)", ls->nc.peer, ls->nc.caps);
			return -EOPNOTSUPP;
		}
		/* key=value, one per line for ATTACH, one per string for START */
		olen =
		    (size_t)snprintf(opts, sizeof(opts), "syscalls=%s%c", ls->syscalls, ls->attach_pid ? '\n' : '\0');
		if (ls->syscall_filter && olen < sizeof(opts))
			olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "syscall_filter=%s%c",
			                         ls->syscall_filter, ls->attach_pid ? '\n' : '\0');
		if (olen >= sizeof(opts)) {
			fail(ls, "the syscall filter is too long (at most %u bytes)",
			     LIVESESSION_SYSCALL_OPTS_MAX - 64);
			return -E2BIG;
		}
	}
	if (ls->kernel && !ls->kl) {
		/* its consumer sees the events from the next chunk on */
		ls->kl = klayer_new(&ls->w);
		if (ls->kl) {
			klayer_walk_ops(ls->kl, &ls->kl_ops);
			walk_chain(&ls->ops, &ls->kl_ops);
		}
	}
	if (ls->kernel) {
		if (!netclient_has_cap(&ls->nc, "kernel")) {
			fail(ls, "the agent at %s does not record kernel events (caps %s)", ls->nc.peer, ls->nc.caps);
			return -EOPNOTSUPP;
		}
		olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "kernel=%s%c", ls->kernel,
		                         ls->attach_pid ? '\n' : '\0');
		if (ls->kernel_filter && olen < sizeof(opts))
			olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "kernel_filter=%s%c",
			                         ls->kernel_filter, ls->attach_pid ? '\n' : '\0');
		if (ls->kernel_functions && olen < sizeof(opts))
			olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "kernel_functions=%s%c",
			                         ls->kernel_functions, ls->attach_pid ? '\n' : '\0');
		if (ls->kernel_system && !netclient_has_cap(&ls->nc, "kernel_system")) {
			fail(ls, "the agent at %s does not record other processes' kernel events (caps %s)",
			     ls->nc.peer, ls->nc.caps);
			return -EOPNOTSUPP;
		}
		if (ls->kernel_system && olen < sizeof(opts))
			olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "kernel_system=1%c",
			                         ls->attach_pid ? '\n' : '\0');
		if (olen >= sizeof(opts)) {
			fail(ls, "the kernel options are too long (at most %u bytes)",
			     LIVESESSION_SYSCALL_OPTS_MAX - 64);
			return -E2BIG;
		}
	}
	if (ls->dynamic && ls->attach_pid && !netclient_has_cap(&ls->nc, "attach_dynamic")) {
		fail(ls, "the agent at %s does not attach to running programs by probes (caps %s)", ls->nc.peer,
		     ls->nc.caps);
		return -EOPNOTSUPP;
	}
	if (ls->libcalls && ls->attach_pid) {
		fail(ls, "--libcalls needs the patch backend, which is set up in a program the agent starts: not when "
		         "attaching");
		return -EINVAL;
	}
	if (ls->dynamic) {
		if (!netclient_has_cap(&ls->nc, "dynamic")) {
			fail(ls, "the agent at %s does not trace programs built without instrumentation (caps %s)",
			     ls->nc.peer, ls->nc.caps);
			return -EOPNOTSUPP;
		}
		olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "dynamic=%s%c", ls->dynamic,
		                         ls->attach_pid ? '\n' : '\0');
		if (olen >= sizeof(opts)) {
			fail(ls, "the --dynamic patterns are too long (at most %u bytes)",
			     LIVESESSION_SYSCALL_OPTS_MAX - 64);
			return -E2BIG;
		}
	}
	if (ls->libcalls && !ls->attach_pid) {
		if (!netclient_has_cap(&ls->nc, "libcalls")) {
			fail(ls, "the agent at %s does not trace library calls (caps %s)", ls->nc.peer, ls->nc.caps);
			return -EOPNOTSUPP;
		}
		olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "libcalls=1%c", '\0');
		if (olen >= sizeof(opts))
			return -E2BIG;
	}
	if (ls->memory && !ls->attach_pid) {
		if (!netclient_has_cap(&ls->nc, "memory")) {
			fail(ls, "the agent at %s does not trace heap operations (caps %s)", ls->nc.peer, ls->nc.caps);
			return -EOPNOTSUPP;
		}
		olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "memory=1%c", '\0');
		if (ls->mem_depth)
			olen +=
			    (size_t)snprintf(opts + olen, sizeof(opts) - olen, "mem_depth=%u%c", ls->mem_depth, '\0');
		if (ls->keep_alive)
			olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "keep_alive=1%c", '\0');
		if (ls->mem_fold_ns && !netclient_has_cap(&ls->nc, "mem_fold")) {
			fail(ls, "the agent at %s does not fold heap blocks (caps %s)", ls->nc.peer, ls->nc.caps);
			return -EOPNOTSUPP;
		}
		if (ls->mem_fold_ns)
			olen += (size_t)snprintf(opts + olen, sizeof(opts) - olen, "mem_fold=%llu%c",
			                         (unsigned long long)ls->mem_fold_ns, '\0');
	}
	if (ls->attach_pid) {
		char msg[LIVESESSION_SYSCALL_OPTS_MAX + 32];
		int n = snprintf(msg, sizeof(msg), "pid=%ld\n%.*s", ls->attach_pid, (int)olen, opts);

		return livesession_send(ls, LP_FRAME_ATTACH, msg, (size_t)n);
	}
	/* NUL-terminated strings back to back; options first, between two
	 * empty strings */
	if (olen)
		len = olen + 2;
	for (i = 0; i < ls->argc; i++) {
		len += strlen(ls->argv[i]) + 1;
		if (len > LIVESESSION_START_BYTES_MAX) {
			fail(ls, "the command line is too long for the agent (at most %u bytes)",
			     LIVESESSION_START_BYTES_MAX);
			return -E2BIG;
		}
	}
	args = malloc(len ? len : 1);
	if (!args) {
		fail(ls, "out of memory");
		return -ENOMEM;
	}
	if (olen) {
		args[off++] = '\0';
		memcpy(args + off, opts, olen);
		off += olen;
		args[off++] = '\0';
	}
	for (i = 0; i < ls->argc; i++) {
		size_t n = strlen(ls->argv[i]) + 1;

		memcpy(args + off, ls->argv[i], n);
		off += n;
	}
	r = livesession_send(ls, LP_FRAME_START, args, len);
	free(args);
	return r;
}

/* Opens the UDP channel and tells the agent its port. */
static int open_udp(struct livesession *ls)
{
	char msg[32];
	unsigned port = 0;
	int n, r;

	if (!netclient_has_cap(&ls->nc, "udp")) {
		fail(ls, "the agent at %s offers no UDP channel (caps %s)", ls->nc.peer, ls->nc.caps);
		return -EOPNOTSUPP;
	}
	r = liveudp_open(&ls->udp, ls->nc.fd, &port);
	if (r) {
		fail(ls, "cannot open the UDP channel: %s", strerror(-r));
		return r;
	}
	if (ls->udp.rcvbuf < (int)LIVEUDP_RCVBUF)
		say(ls,
		    "UDP receive buffer is %d KiB, not the %u KiB asked for: datagrams may be dropped here "
		    "(raise net.core.rmem_max)",
		    ls->udp.rcvbuf >> 10, LIVEUDP_RCVBUF >> 10);
	n = snprintf(msg, sizeof(msg), "port=%u\n", port);
	return livesession_send(ls, LP_FRAME_UDPINFO, msg, (size_t)n);
}

/* The session the agent still has for the pid we attach to (a host
 * before us attached and left; the agent keeps such sessions and refuses
 * a second ATTACH): its id, and the agent's word on its interposers in
 * mem (at most memsize bytes).  0 when there is none. */
static uint32_t known_session(const struct livesession *ls, char *mem, size_t memsize)
{
	const char *p = ls->nc.welcome;

	while (p && *p) {
		unsigned long id = 0;
		long pid = 0;
		int used = 0;

		if (sscanf(p, "session=%lu pid=%ld state=running%n", &id, &pid, &used) == 2 && used &&
		    pid == ls->attach_pid && id && id <= UINT32_MAX) {
			const char *m = strstr(p, " memory=");
			const char *nl = strchr(p, '\n');

			if (m && (!nl || m < nl))
				snprintf(mem, memsize, "%.*s", (int)strcspn(m + 8, " \n"), m + 8);
			return (uint32_t)id;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

int livesession_start(struct livesession *ls, bool tracing)
{
	if (ls->memory && livemem_init(&ls->mem, &ls->w, (uint64_t)(ls->flush_ms ? ls->flush_ms : 100) * NS_PER_MS)) {
		fail(ls, "out of memory");
		return -ENOMEM;
	}
	ls->t0 = livesession_now();
	ls->tracing = true;
	ls->state = LIVESESSION_CONNECTING;
	ls->session_wait_ns = ls->t0 + SESSION_WAIT_NS;
	ls->filter.active = options_filter_any(&ls->filter.opts);
	ls->filtered_ever = ls->filter.active;
	/* settings first, so that the new session starts with them */
	if (ls->flush_ms) {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "flush_ms=%" PRIu32 "\n", ls->flush_ms);

		if (livesession_send(ls, LP_FRAME_CONTROL, msg, (size_t)n))
			return -EIO;
	}
	if (!tracing && livesession_set_tracing(ls, false))
		return -EIO;
	if (ls->filter.active && send_filters(ls, false))
		return -EIO;
	if (ls->udp_wanted && open_udp(ls))
		return -EIO;
	if (ls->attach_pid) {
		uint32_t id = known_session(ls, ls->mem.agent_mem, sizeof(ls->mem.agent_mem));

		if (id) {
			/* the agent turned its tracing on again when we came */
			ls->session = id;
			ls->pid = (uint32_t)ls->attach_pid;
			ls->state = LIVESESSION_RUNNING;
			livemem_partial(&ls->mem, 0);
			say(ls,
			    "process %ld is traced already in session %" PRIu32 " (attached before): taking it over "
			    "with the options it has",
			    ls->attach_pid, id);
			return 0;
		}
	}
	return send_start_frame(ls);
}

int livesession_connect(struct livesession *ls)
{
	int r = netclient_open(&ls->nc, ls->addr, ls->token_file, &ls->complain);

	if (r) {
		error_warn(&ls->complain, "%s", ls->nc.error);
		return r;
	}
	ls->last_rx = ls->last_tx = livesession_now();
	return 0;
}

void livesession_close(struct livesession *ls)
{
	if (ls->state != LIVESESSION_RUNNING && ls->state != LIVESESSION_CONNECTING)
		return;
	if (livesession_send(ls, LP_FRAME_BYE, NULL, 0))
		return;
	ls->state = LIVESESSION_CLOSING;
	ls->closing_ns = livesession_now();
}

/* ------------------------------------------------------------ receiving */

/* A held chunk's length word: its bit 31 says it came by UDP (a length is
 * at most LP_WIRE_MAX_PAYLOAD). */
#define HELD_UDP 0x80000000u

/* Holds a CHUNK frame's payload until SESSION says whose it is. */
static void hold_chunk(struct livesession *ls, const struct wire_frame *f, bool udp)
{
	size_t need = ls->pending_len + 4 + f->len;

	if (need > LIVESESSION_PENDING_MAX) {
		ls->other_chunks++;
		return;
	}
	if (need > ls->pending_cap) {
		size_t cap = ls->pending_cap ? ls->pending_cap : 65536;
		uint8_t *p;

		while (cap < need)
			cap *= 2;
		p = realloc(ls->pending, cap);
		if (!p) {
			ls->other_chunks++;
			return;
		}
		ls->pending = p;
		ls->pending_cap = cap;
	}
	le32_put(ls->pending + ls->pending_len, f->len | (udp ? HELD_UDP : 0));
	memcpy(ls->pending + ls->pending_len + 4, f->payload, f->len);
	ls->pending_len = need;
}

static void on_chunk(struct livesession *ls, const struct wire_frame *f, bool udp);

/* Handles the held chunks once the session is known (they were checked
 * when held; on_chunk checks them again). */
static void release_held(struct livesession *ls)
{
	size_t off = 0;

	while (off + 4 <= ls->pending_len && ls->state == LIVESESSION_RUNNING) {
		struct wire_frame f = { .type = LP_FRAME_CHUNK };
		uint32_t word = le32_get(ls->pending + off);

		f.len = word & ~HELD_UDP;
		f.payload = ls->pending + off + 4;
		if (f.len > ls->pending_len - off - 4)
			break;
		on_chunk(ls, &f, word & HELD_UDP);
		off += 4 + f.len;
	}
	free(ls->pending);
	ls->pending = NULL;
	ls->pending_len = ls->pending_cap = 0;
}

/* A CHUNK frame (by TCP, or a datagram with udp): session id, chunk
 * header, payload.  Every size is checked against the frame before use. */
static void on_chunk(struct livesession *ls, const struct wire_frame *f, bool udp)
{
	struct chunk_info ci;
	uint64_t events;
	uint32_t session;
	int r;

	if (f->len < 4 + LP_CHUNK_HEADER_SIZE) {
		fail(ls, "bad CHUNK frame from the agent at %s: %" PRIu32 " bytes", ls->nc.peer, f->len);
		return;
	}
	session = le32_get(f->payload);
	if (chunk_header_get(f->payload + 4, &ci) || ci.len != f->len - 4 - LP_CHUNK_HEADER_SIZE ||
	    chunk_verify(&ci, f->payload + 4 + LP_CHUNK_HEADER_SIZE)) {
		fail(ls, "bad chunk from the agent at %s (header, length or checksum)", ls->nc.peer);
		return;
	}
	if (!ls->session && ls->state == LIVESESSION_CONNECTING) {
		hold_chunk(ls, f, udp);
		return;
	}
	if (session != ls->session) {
		ls->other_chunks++; /* another host's session, still known to the agent */
		return;
	}
	ls->chunks++;
	ls->bytes += f->len - 4;
	if (livesave_chunk(&ls->save, f->payload + 4, f->len - 4))
		say(ls, "%s; saving stopped", ls->save.error);
	if (ci.type == LP_CHUNK_END) {
		/* nothing more comes for the session; the exit STATUS, if the
		 * program exited, comes before our BYE is answered */
		ls->end_seen = true;
		ls->end_asked = ls->state == LIVESESSION_CLOSING;
		livesession_close(ls);
		return;
	}
	if (ls->walk_ended)
		return;
	events = ls->w.events;
	r = walk_feed(&ls->w, ci.type, f->payload + 4 + LP_CHUNK_HEADER_SIZE, ci.len);
	if (udp)
		ls->udp.events += ls->w.events - events; /* against the agent's count */
	if (r == -ENOMEM) {
		fail(ls, "out of memory");
		return;
	}
	if (r)
		ls->bad_chunks++; /* its readable events are in; the rest is skipped */
	if (livefilter_stale(&ls->filter, &ls->w) && ls->state == LIVESESSION_RUNNING)
		send_filters(ls, true);
}

static void on_status(struct livesession *ls, const struct wire_frame *f)
{
	char val[64], what[160];
	unsigned long long v;
	uint32_t pid = ls->pid;
	int status = -1;

	if (!wire_kv_get(f->payload, f->len, "session", val, sizeof(val)) && strtoul(val, NULL, 10) != ls->session)
		return;
	if (wire_kv_get(f->payload, f->len, "event", val, sizeof(val)))
		return;
	if (!strcmp(val, "exit")) {
		if (!wire_kv_get(f->payload, f->len, "pid", val, sizeof(val)))
			pid = (uint32_t)strtoul(val, NULL, 10);
		if (!wire_kv_get(f->payload, f->len, "status", val, sizeof(val)))
			status = (int)strtol(val, NULL, 10);
		add_exit(ls, pid, status);
		say(ls, "process %" PRIu32 " %s", pid, liveview_describe_status(status, what, sizeof(what)));
		if (pid == ls->pid && !ls->program_ended) {
			ls->program_ended = true;
			ls->ended_ns = livesession_now();
			if (ls->end_seen)
				livesession_close(ls);
		}
	} else if (!strcmp(val, "lost")) {
		if (!wire_kv_get(f->payload, f->len, "lost", val, sizeof(val))) {
			v = strtoull(val, NULL, 10);
			ls->status_lost += v;
		}
		if (!wire_kv_get(f->payload, f->len, "time_ns", val, sizeof(val))) {
			v = strtoull(val, NULL, 10);
			if (v > ls->lost_at_ns)
				ls->lost_at_ns = v;
		}
	} else if (!strcmp(val, "udp") && !wire_kv_get(f->payload, f->len, "next_seq", val, sizeof(val))) {
		uint64_t before = liveudp_lost_events(&ls->udp), seq = strtoull(val, NULL, 10), ev = 0;

		if (!wire_kv_get(f->payload, f->len, "events", val, sizeof(val)))
			ev = strtoull(val, NULL, 10);
		liveudp_status(&ls->udp, seq, ev);
		if (liveudp_lost_events(&ls->udp) > before &&
		    !wire_kv_get(f->payload, f->len, "time_ns", val, sizeof(val)))
			ls->lost_at_ns =
			    strtoull(val, NULL, 10) > ls->lost_at_ns ? strtoull(val, NULL, 10) : ls->lost_at_ns;
	} else if (!strcmp(val, "tracing")) {
		if (!wire_kv_get(f->payload, f->len, "tracing", val, sizeof(val)))
			ls->tracing = !strcmp(val, "on");
	}
}

static void on_session(struct livesession *ls, const struct wire_frame *f)
{
	char val[32], kv[320];

	if (ls->state != LIVESESSION_CONNECTING) {
		fail(ls, "the agent at %s sent an unexpected SESSION frame", ls->nc.peer);
		return;
	}
	if (wire_kv_get(f->payload, f->len, "session", val, sizeof(val)) || !(ls->session = strtoul(val, NULL, 10))) {
		fail(ls, "the agent at %s sent a SESSION frame without a session id", ls->nc.peer);
		return;
	}
	if (!wire_kv_get(f->payload, f->len, "pid", val, sizeof(val)))
		ls->pid = (uint32_t)strtoul(val, NULL, 10);
	if (wire_kv_get(f->payload, f->len, "syscalls", ls->sys_backend, sizeof(ls->sys_backend)))
		ls->sys_backend[0] = '\0';
	if (wire_kv_get(f->payload, f->len, "syscalls_why", ls->sys_why, sizeof(ls->sys_why)))
		snprintf(ls->sys_why, sizeof(ls->sys_why), "%s", ls->sys_backend);
	if (wire_kv_get(f->payload, f->len, "memory", ls->mem.agent_mem, sizeof(ls->mem.agent_mem)))
		ls->mem.agent_mem[0] = '\0';
	/* an attached program has run before: its older blocks are unknown */
	if (ls->attach_pid)
		livemem_partial(&ls->mem, 0);
	ls->state = LIVESESSION_RUNNING;
	if (livesave_active(&ls->save))
		say(ls, "saving to '%s'", ls->save.dir);
	if (!wire_kv_get(f->payload, f->len, "dynamic", kv, sizeof(kv)) && !strcmp(kv, "uprobes")) {
		ls->probed = true;
		if (!wire_kv_get(f->payload, f->len, "functions", val, sizeof(val)))
			ls->probed_functions = (uint32_t)strtoul(val, NULL, 10);
	}
	if (ls->attach_pid && ls->probed)
		say(ls,
		    "attached to process %" PRIu32 " by uprobes on %" PRIu32 " functions (session %" PRIu32
		    "): calls under way now are not seen; the probes go when the session ends",
		    ls->pid, ls->probed_functions, ls->session);
	else if (ls->attach_pid)
		say(ls, "attached to process %" PRIu32 " (session %" PRIu32 ")", ls->pid, ls->session);
	else
		say(ls, "started '%s' as process %" PRIu32 " (session %" PRIu32 ")", ls->argv[0], ls->pid, ls->session);
	if (ls->kernel && !wire_kv_get(f->payload, f->len, "kernel", kv, sizeof(kv)))
		say(ls, "kernel: %s tracepoints", kv);
	else if (ls->kernel)
		say(ls, "the agent records no kernel events in this session");
	if (ls->kernel && !wire_kv_get(f->payload, f->len, "kernel_warn", kv, sizeof(kv)))
		say(ls, "kernel events %s", kv);
	if (ls->sys_backend[0])
		say(ls, "syscalls: %s", ls->sys_why);
	else if (ls->syscalls)
		say(ls, "the agent traces no system calls in this session");
	if (ls->mem.on && !strcmp(ls->mem.agent_mem, "none"))
		say(ls,
		    "process %" PRIu32 " was not started with liblayerprof-mem.so preloaded: no heap operations will "
		    "come (unless it was linked with the --wrap interposers)",
		    ls->pid);
	else if (ls->mem.on && ls->attach_pid)
		say(ls, "heap: the program lists the blocks it holds from before the attach when tracing begins, if it "
		        "keeps a live-block table; without one they are unknown and their releases are counted apart");
	release_held(ls);
}

static void on_frame(struct livesession *ls, const struct wire_frame *f)
{
	char reason[256];
	size_t i, n = f->len < sizeof(reason) - 1 ? f->len : sizeof(reason) - 1;

	switch (f->type) {
	case LP_FRAME_CHUNK:
		on_chunk(ls, f, false);
		break;
	case LP_FRAME_STATUS:
		on_status(ls, f);
		break;
	case LP_FRAME_SESSION:
		on_session(ls, f);
		break;
	case LP_FRAME_HEARTBEAT:
		break;
	case LP_FRAME_BYE:
		if (ls->state == LIVESESSION_CLOSING)
			ls->state = LIVESESSION_DONE;
		else
			fail(ls, "the agent at %s ended the connection", ls->nc.peer);
		break;
	case LP_FRAME_ERROR:
		for (i = 0; i < n; i++)
			reason[i] = f->payload[i] >= 0x20 && f->payload[i] < 0x7f ? (char)f->payload[i] : ' ';
		reason[n] = '\0';
		if (ls->state != LIVESESSION_CONNECTING)
			fail(ls, "the agent at %s reported an error: %s", ls->nc.peer, reason);
		else if (ls->attach_pid)
			fail(ls, "cannot attach to process %ld: %s", ls->attach_pid, reason);
		else
			fail(ls, "cannot start '%s': %s", ls->argv[0], reason);
		break;
	default:
		fail(ls, "the agent at %s sent an unexpected %s frame", ls->nc.peer, wire_frame_name(f->type));
		break;
	}
}

void livesession_receive(struct livesession *ls)
{
	struct wire_frame f;
	int r = netclient_receive(&ls->nc);

	if (r == -ECONNRESET) {
		if (ls->state == LIVESESSION_CLOSING) {
			ls->state = LIVESESSION_DONE; /* closed after our BYE: fine */
			return;
		}
		fail(ls, "connection to the agent lost (%s)", ls->nc.peer);
		return;
	}
	if (r < 0) {
		fail(ls, "%s", ls->nc.error);
		return;
	}
	if (r > 0)
		ls->last_rx = livesession_now();
	while (ls->state < LIVESESSION_DONE && (r = netclient_next(&ls->nc, &f)) > 0)
		on_frame(ls, &f);
	if (r < 0 && ls->state < LIVESESSION_DONE)
		fail(ls, "%s", ls->nc.error);
}

int livesession_receive_udp(struct livesession *ls)
{
	struct wire_frame f;
	int i, r = 0;

	for (i = 0; i < LIVEUDP_BATCH && ls->state != LIVESESSION_FAILED && (r = liveudp_next(&ls->udp, &f)) > 0; i++)
		on_chunk(ls, &f, true);
	if (r < 0 && ls->state < LIVESESSION_DONE)
		fail(ls, "the UDP channel failed: %s", strerror(-r));
	return i;
}

/* ------------------------------------------------------------ timers */

/* Whether the agent, silent, is taking a session's probes out after our
 * BYE: then it is given time, not taken for gone. */
static bool probes_going(const struct livesession *ls)
{
	return ls->state == LIVESESSION_CLOSING && ls->probed;
}

/* How long to wait for the answer to our BYE. */
static uint64_t bye_wait(const struct livesession *ls)
{
	return probes_going(ls) ? PROBES_OUT_NS + ls->probed_functions * PROBES_OUT_PER_FUNCTION_NS : BYE_WAIT_NS;
}

uint64_t livesession_next_tick(const struct livesession *ls)
{
	uint64_t next = ls->last_tx + HEARTBEAT_NS;

	if (!probes_going(ls) && ls->last_rx + PEER_TIMEOUT_NS < next)
		next = ls->last_rx + PEER_TIMEOUT_NS;
	if (ls->program_ended && ls->ended_ns + END_GRACE_NS < next)
		next = ls->ended_ns + END_GRACE_NS;
	if (probes_going(ls) && !ls->probes_told && ls->closing_ns + BYE_WAIT_NS < next)
		next = ls->closing_ns + BYE_WAIT_NS;
	if (ls->state == LIVESESSION_CLOSING && ls->closing_ns + bye_wait(ls) < next)
		next = ls->closing_ns + bye_wait(ls);
	if (ls->state == LIVESESSION_CONNECTING && ls->session_wait_ns < next)
		next = ls->session_wait_ns;
	return next;
}

void livesession_tick(struct livesession *ls, uint64_t now)
{
	if (now - ls->last_rx >= PEER_TIMEOUT_NS && !probes_going(ls)) {
		fail(ls, "agent at %s stopped responding", ls->nc.peer);
		return;
	}
	if (probes_going(ls) && !ls->probes_told && now - ls->closing_ns >= BYE_WAIT_NS) {
		ls->probes_told = true;
		say(ls, "the agent is taking the probes out of process %" PRIu32 " (%" PRIu32 " functions)", ls->pid,
		    ls->probed_functions);
	}
	if (probes_going(ls) && now - ls->closing_ns >= bye_wait(ls)) {
		fail(ls, "the agent at %s did not say in time that it took the probes out of process %" PRIu32,
		     ls->nc.peer, ls->pid);
		return;
	}
	if (ls->state == LIVESESSION_CONNECTING && now >= ls->session_wait_ns) {
		fail(ls, "the agent at %s did not answer %s", ls->nc.peer, ls->attach_pid ? "ATTACH" : "START");
		return;
	}
	if (ls->state == LIVESESSION_CLOSING && now - ls->closing_ns >= bye_wait(ls)) {
		ls->state = LIVESESSION_DONE; /* no BYE back: fine, we are done */
		return;
	}
	if (now - ls->last_tx >= HEARTBEAT_NS && livesession_send(ls, LP_FRAME_HEARTBEAT, NULL, 0))
		return;
	if (ls->state == LIVESESSION_RUNNING && ls->program_ended && now - ls->ended_ns >= END_GRACE_NS)
		livesession_close(ls); /* the agent sent no END: end anyway */
}
